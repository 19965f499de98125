//! Direct reads: POSIX files opened with `O_DIRECT`, so reads bypass the operating system's page
//! cache and go to the device (the SSD model's `direct_reads`, see `ssd_model.rs`).
//!
//! `O_DIRECT` needs the buffer address, the file offset and the length aligned to the device's
//! logical block size. Every read here is aligned to [`DIRECT_IO_ALIGN`] (4096 bytes, a multiple
//! of every common logical block size, 512 and 4096): the aligned range that covers the request
//! is read into the 4096-aligned part of an over-allocated `Vec<u8>` and the requested bytes are
//! copied out. No `unsafe`: the aligned part is found with `<*const u8>::align_offset`.
//!
//! A file system that refuses `O_DIRECT` (the open fails with `EINVAL`), and a RAM-backed one
//! (tmpfs, ramfs: since Linux 6.6 tmpfs accepts `O_DIRECT`, but its "device" is the page cache
//! itself), is refused with an [`Error::InvalidArgument`] that says so: there is no device to
//! model there, and falling back to buffered reads would silently measure something else.
//!
//! Writes stay buffered: direct writes would need every append aligned.

use super::RandomAccessFile;
use crate::{Error, Result};
use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Alignment of direct reads: buffer address, file offset and length.
pub const DIRECT_IO_ALIGN: usize = 4096;

/// `f_type` of tmpfs (`TMPFS_MAGIC` in `linux/magic.h`).
const TMPFS_MAGIC: u64 = 0x0102_1994;
/// `f_type` of ramfs (`RAMFS_MAGIC`).
const RAMFS_MAGIC: u64 = 0x8584_58f6;

/// True if `f_type` (from `statfs`) names a RAM-backed file system. `f_type` is a signed or
/// unsigned word depending on the platform; the magic numbers fit in 32 bits.
fn is_in_ram(f_type: u64) -> bool {
    let magic = f_type & 0xffff_ffff;
    magic == TMPFS_MAGIC || magic == RAMFS_MAGIC
}

/// The aligned range `(offset, length)` that covers `len` bytes at `offset`.
pub(crate) fn aligned_span(offset: u64, len: usize) -> (u64, usize) {
    let align = DIRECT_IO_ALIGN as u64;
    let start = offset - offset % align;
    let end = (offset + len as u64).next_multiple_of(align);
    (start, (end - start) as usize)
}

fn refused(path: &Path, why: &str) -> Error {
    Error::InvalidArgument(format!(
        "direct reads (ssd.direct_reads, --use_direct_reads) are not supported for {}: {why}. \
         Put the database on a disk-backed file system, or turn direct reads off",
        path.display()
    ))
}

/// Opens `path` for direct reads; refuses a file system without `O_DIRECT` or in RAM.
pub(crate) fn open(path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::DIRECT.bits() as i32)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(rustix::io::Errno::INVAL.raw_os_error()) {
                refused(path, "its file system refuses O_DIRECT (EINVAL)")
            } else {
                Error::io("open (O_DIRECT)", path, e)
            }
        })?;
    let fs = rustix::fs::fstatfs(&file)
        .map_err(|e| Error::io("statfs", path, std::io::Error::from(e)))?;
    if is_in_ram(fs.f_type as u64) {
        return Err(refused(
            path,
            "it is on tmpfs or ramfs (e.g. /dev/shm), where O_DIRECT reads the page cache \
             itself: there is no device",
        ));
    }
    let size = file
        .metadata()
        .map_err(|e| Error::io("stat", path, e))?
        .len();
    Ok(Arc::new(DirectReadable {
        file,
        path: path.to_path_buf(),
        size,
    }))
}

struct DirectReadable {
    file: File,
    path: PathBuf,
    size: u64,
}

impl RandomAccessFile for DirectReadable {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        read_exact_direct(&self.file, offset, buf).map_err(|e| Error::io("read", &self.path, e))
    }
    fn size(&self) -> u64 {
        self.size
    }
}

/// Fills `buf` with the bytes of `file` at `offset` with aligned reads only (`file` may be
/// opened with `O_DIRECT`). A read past the end of the file is an `UnexpectedEof` error.
pub(crate) fn read_exact_direct(file: &File, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
    if buf.is_empty() {
        return Ok(());
    }
    let (start, len) = aligned_span(offset, buf.len());
    let mut space = vec![0u8; len + DIRECT_IO_ALIGN];
    let pad = space.as_ptr().align_offset(DIRECT_IO_ALIGN);
    let aligned = &mut space[pad..pad + len];
    // Bytes of the aligned range needed to cover the request.
    let skip = (offset - start) as usize;
    let need = skip + buf.len();
    // Bytes read so far; always a multiple of the alignment before a read, so that every read
    // starts at an aligned address and offset and asks for an aligned length.
    let mut done = 0usize;
    while done < need {
        let n = match file.read_at(&mut aligned[done..], start + done as u64) {
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let got = done + n;
        if got >= need {
            break;
        }
        // A short read: the end of the file (or a partial transfer). Continue from the last
        // aligned position reached; no progress by a whole block means the file ends first.
        let next = got - got % DIRECT_IO_ALIGN;
        if n == 0 || next == done {
            return Err(std::io::Error::new(
                ErrorKind::UnexpectedEof,
                format!(
                    "read of {} bytes at {offset} past the end of the file ({} bytes)",
                    buf.len(),
                    start + got as u64
                ),
            ));
        }
        done = next;
    }
    buf.copy_from_slice(&aligned[skip..need]);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngCore, SeedableRng};
    use std::io::Write;

    #[test]
    fn aligned_span_covers_the_request() {
        assert_eq!(aligned_span(0, 0), (0, 0));
        assert_eq!(aligned_span(0, 1), (0, 4096));
        assert_eq!(aligned_span(4095, 2), (0, 8192));
        assert_eq!(aligned_span(4096, 4096), (4096, 4096));
        assert_eq!(aligned_span(5000, 10_000), (4096, 12_288));
    }

    /// A file in a new directory of the default temporary location (on the disk on the
    /// development machine). If that file system refuses direct reads the test fails, naming
    /// the reason: a silent pass would test nothing.
    fn direct_file(data: &[u8]) -> (tempfile::TempDir, PathBuf, Arc<dyn RandomAccessFile>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data");
        let mut f = File::create(&path).unwrap();
        f.write_all(data).unwrap();
        f.sync_all().unwrap();
        drop(f);
        let r = open(&path).unwrap_or_else(|e| {
            panic!(
                "direct reads are refused in {} ({e}); run the tests with TMPDIR on a \
                 disk-backed file system that supports O_DIRECT",
                dir.path().display()
            )
        });
        (dir, path, r)
    }

    #[test]
    fn direct_reads_return_exactly_the_bytes_at_any_offset_and_length() {
        // Three blocks and a partial fourth: reads meet the file end at every alignment.
        let mut data = vec![0u8; 3 * DIRECT_IO_ALIGN + 1237];
        rand::rngs::SmallRng::seed_from_u64(7).fill_bytes(&mut data);
        let (_dir, _path, r) = direct_file(&data);
        assert_eq!(r.size(), data.len() as u64);
        let size = data.len();
        let mut checked = 0;
        // Every misalignment 0..4096 in steps of 13 (a prime) in the first block, and in steps
        // of 61 in the second, with lengths across 0..3*4096 in steps of 509 (a prime) plus
        // the lengths that end exactly at the file end and one byte before it.
        for (base, step) in [(0, 13), (DIRECT_IO_ALIGN, 61)] {
            for mis in (0..DIRECT_IO_ALIGN).step_by(step) {
                let off = base + mis;
                let mut lens: Vec<usize> = (0..3 * DIRECT_IO_ALIGN).step_by(509).collect();
                lens.extend([1, DIRECT_IO_ALIGN - mis, size - off, size - off - 1]);
                for len in lens {
                    let mut buf = vec![0xa5u8; len];
                    if off + len <= size {
                        r.read_exact_at(off as u64, &mut buf).unwrap();
                        assert_eq!(buf, &data[off..off + len], "offset {off} length {len}");
                        checked += 1;
                    } else {
                        let e = r.read_exact_at(off as u64, &mut buf).unwrap_err();
                        assert!(e.to_string().contains("past the end"), "{e}");
                    }
                }
            }
        }
        assert!(checked > 5_000, "{checked}");
        // Reads that end at the file's last byte from every offset of the last two blocks.
        for off in (size - 2 * DIRECT_IO_ALIGN..size).step_by(3) {
            let mut buf = vec![0u8; size - off];
            r.read_exact_at(off as u64, &mut buf).unwrap();
            assert_eq!(buf, &data[off..], "offset {off} to the end");
        }
        // Past the end, and a zero-length read at the end.
        let mut one = [0u8; 1];
        assert!(r.read_exact_at(size as u64, &mut one).is_err());
        assert!(r.read_exact_at(size as u64 + 9000, &mut one).is_err());
        r.read_exact_at(size as u64, &mut []).unwrap();
    }

    #[test]
    fn direct_reads_of_a_block_multiple_file_and_an_empty_file() {
        let mut data = vec![0u8; 2 * DIRECT_IO_ALIGN];
        rand::rngs::SmallRng::seed_from_u64(8).fill_bytes(&mut data);
        let (_dir, _path, r) = direct_file(&data);
        let mut all = vec![0u8; data.len()];
        r.read_exact_at(0, &mut all).unwrap();
        assert_eq!(all, data);
        let mut tail = vec![0u8; 100];
        r.read_exact_at(data.len() as u64 - 100, &mut tail).unwrap();
        assert_eq!(tail, &data[data.len() - 100..]);
        assert!(r.read_exact_at(data.len() as u64 - 99, &mut tail).is_err());
        let (_dir, _path, empty) = direct_file(&[]);
        assert_eq!(empty.size(), 0);
        empty.read_exact_at(0, &mut []).unwrap();
        assert!(empty.read_exact_at(0, &mut [0u8; 1]).is_err());
    }

    #[test]
    fn tmpfs_is_refused() {
        let shm = Path::new("/dev/shm");
        let on_tmpfs = rustix::fs::statfs(shm).is_ok_and(|s| is_in_ram(s.f_type as u64));
        if !on_tmpfs {
            eprintln!("/dev/shm is missing or not tmpfs here: the tmpfs refusal is not exercised");
            return;
        }
        let dir = tempfile::tempdir_in(shm).unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"x").unwrap();
        let e = open(&path).err().expect("tmpfs must be refused");
        let msg = e.to_string();
        assert!(
            msg.contains("direct reads") && msg.contains("not supported"),
            "{msg}"
        );
    }
}
