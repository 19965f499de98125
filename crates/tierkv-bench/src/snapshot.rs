//! Copies of a benchmark's databases, so that several workloads can start from one load: a
//! directory tree copied file by file, and PM pool files copied hole by hole.
//!
//! A pool file is sparse (a 16 GiB pool of which a few hundred MiB are written): a plain copy
//! would write every hole out as zeros, which on `/dev/shm` takes that much memory. The copy
//! asks the file system where the data is (`lseek` with `SEEK_DATA` / `SEEK_HOLE`, through
//! `rustix`, since the standard library has no such seek) and copies only those extents, so
//! the copy is as sparse as the original.

use rustix::fs::SeekFrom;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Copies `from` into a new file `to` (replacing it), keeping its holes; returns the bytes of
/// data copied.
pub fn copy_sparse(from: &Path, to: &Path) -> io::Result<u64> {
    let src = File::open(from)?;
    let len = src.metadata()?.len();
    let dst = File::create(to)?;
    dst.set_len(len)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut copied = 0u64;
    let mut at = 0u64;
    while at < len {
        let start = match rustix::fs::seek(&src, SeekFrom::Data(at)) {
            Ok(s) => s,
            // No data at or after `at`: the rest is a hole.
            Err(rustix::io::Errno::NXIO) => break,
            Err(e) => return Err(e.into()),
        };
        let end = rustix::fs::seek(&src, SeekFrom::Hole(start))?.min(len);
        let mut pos = start;
        while pos < end {
            let n = ((end - pos) as usize).min(buf.len());
            src.read_exact_at(&mut buf[..n], pos)?;
            dst.write_all_at(&buf[..n], pos)?;
            pos += n as u64;
        }
        copied += end - start;
        at = end;
    }
    Ok(copied)
}

/// Copies the directory tree `from` into `to` (created; files in it replaced), following no
/// symbolic links.
pub fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            copy_sparse(&entry.path(), &target)?;
        } else {
            return Err(io::Error::other(format!(
                "{}: not a file or directory",
                entry.path().display()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn a_sparse_copy_keeps_the_data_and_the_holes() {
        let dir = tempfile::tempdir().unwrap();
        let from = dir.path().join("pool");
        let f = File::create(&from).unwrap();
        let len = 256u64 << 20;
        f.set_len(len).unwrap();
        // Data at the start, in the middle (crossing a 1 MiB copy buffer) and at the end.
        let pieces: [(u64, usize); 3] = [(0, 4096), ((100 << 20) - 10, 3 << 20), (len - 5, 5)];
        for (i, &(at, n)) in pieces.iter().enumerate() {
            let bytes: Vec<u8> = (0..n)
                .map(|j| (j as u8).wrapping_add(i as u8 + 1))
                .collect();
            f.write_all_at(&bytes, at).unwrap();
        }
        f.sync_all().unwrap();
        let to = dir.path().join("copy");
        std::fs::write(&to, b"old contents").unwrap();
        let copied = copy_sparse(&from, &to).unwrap();
        assert!(copied >= 4096 + (3 << 20) + 5, "{copied}");
        assert_eq!(std::fs::read(&from).unwrap(), std::fs::read(&to).unwrap());
        // Where the file system reports holes (a file system without SEEK_HOLE reports the
        // whole file as data, and the copy is then dense but equal), they stayed holes.
        let first_hole = rustix::fs::seek(&f, SeekFrom::Hole(0)).unwrap();
        if first_hole < len {
            let written = std::fs::metadata(&to).unwrap().blocks() * 512;
            let source = std::fs::metadata(&from).unwrap().blocks() * 512;
            assert!(written <= source + (1 << 20), "{written} > {source}");
            assert!(copied < len / 2, "{copied}");
        }
    }

    #[test]
    fn a_tree_copy_copies_every_file_and_directory() {
        let dir = tempfile::tempdir().unwrap();
        let from = dir.path().join("db");
        std::fs::create_dir_all(from.join("sub/deeper")).unwrap();
        std::fs::write(from.join("CURRENT"), b"MANIFEST-000001\n").unwrap();
        std::fs::write(from.join("sub/deeper/000007.sst"), vec![7u8; 10_000]).unwrap();
        std::fs::write(from.join("empty"), b"").unwrap();
        let to = dir.path().join("copy");
        copy_tree(&from, &to).unwrap();
        assert_eq!(
            std::fs::read(to.join("CURRENT")).unwrap(),
            b"MANIFEST-000001\n"
        );
        assert_eq!(
            std::fs::read(to.join("sub/deeper/000007.sst")).unwrap(),
            vec![7u8; 10_000]
        );
        assert!(std::fs::read(to.join("empty")).unwrap().is_empty());
        assert!(copy_tree(&dir.path().join("missing"), &to).is_err());
    }
}
