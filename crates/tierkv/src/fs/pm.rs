//! `PmFs`: the engine's files (WALs, L0 tables) stored in a persistent-memory pool.
//!
//! The engine reaches PM through the same [`FileSystem`] seam as SSD, so the record log, the
//! table builder and the table reader run unchanged on either tier. Files are made of pool
//! chunks (`PmPool::chunk_size`, 4 MiB by default) chained by a next pointer; a directory chunk
//! (pool root slot [`PMFS_ROOT_SLOT`]) holds one 128-byte entry per file. Layout (little-endian):
//!
//! ```text
//! directory chunk: magic u64 "TKVPMFS1" | entry_count u64 | 48 reserved | entries...
//! entry (128 B):   state u64 (0 free, LIVE) | size u64 | first_chunk u64 |
//!                  name_len u32 | crc32c(first_chunk, name_len, name) u32 | name (<= 80 B)
//! chunk:           next_chunk u64 (0 = last) | magic u64 "TKVCHUNK" | 48 reserved | data...
//! ```
//!
//! Persist points and the invariant at each (every store below is followed by flush + fence):
//! * create: chunk header persisted -> entry fields persisted -> `state = LIVE` (8-byte atomic
//!   publish). Before the publish the entry is free and its chunk unreferenced.
//! * append: a new chunk's header is persisted and the chunk linked (8-byte atomic `next`,
//!   persisted) before any data lands in it; the chunks of a log (`create_log`) are first zeroed
//!   with non-temporal stores, durable with the header.
//! * `flush`: ONE fence for the data and the size. The data lines are written back (pieces of at
//!   least 1 KiB were stored non-temporally, smaller ones are stored and written back), the new
//!   `size` (8-byte atomic) is stored and written back, then one fence. After the fence the file
//!   is exactly its first `size` bytes. A crash before the fence completes leaves either the old
//!   size (the file is its old content) or the new size over a possibly torn tail: each line of
//!   the flushed range holds the new bytes or what the pool held before. For a log that is
//!   the new bytes or zeros (its chunks were zeroed), which the record log reader recovers as a
//!   torn tail; a table is only referenced (by the manifest) after its final flush returned, so
//!   a torn table is never read. This saves the second fence per WAL append of a
//!   "persist data, fence, persist size, fence" order.
//! * remove: `state = 0` persisted, then the chunks return to the allocator once no reader
//!   holds the file (like an unlinked POSIX file).
//!
//! The allocator is volatile: on open, every chunk reachable from a live entry (and the
//! directory chunk) is marked allocated and everything else is free, so a crash never leaks a
//! chunk that was allocated but not yet published.
//!
//! `flush` makes appended data durable in the pool's mode (a process crash in `emulated`, a power
//! failure in `dax`/`msync`); `sync` additionally `msync`s the touched pages in every mode, so
//! `WriteOptions::sync` never means less than it does on SSD.
//!
//! Thread-safety: the directory is under a mutex; a file has one writer; readers copy out of the
//! pool through bounds-checked reads.

use super::{FileLock, FileSystem, RandomAccessFile, WritableFile};
use crate::{Error, Result};
use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use tierkv_pm::PmPool;

/// The pool root slot that holds the directory chunk's offset.
pub const PMFS_ROOT_SLOT: usize = 0;
const DIR_MAGIC: u64 = u64::from_le_bytes(*b"TKVPMFS1");
const CHUNK_MAGIC: u64 = u64::from_le_bytes(*b"TKVCHUNK");
const DIR_HEADER_BYTES: u64 = 64;
const ENTRY_BYTES: u64 = 128;
const CHUNK_HEADER_BYTES: u64 = 64;
const NAME_MAX: usize = 80;
const ENTRY_LIVE: u64 = u64::from_le_bytes(*b"LIVEFILE");
/// Appended pieces at least this large are copied with non-temporal stores (durable at the next
/// fence, no write-back loop, no cache pollution); smaller ones are stored and written back.
const NT_MIN_BYTES: usize = 1024;

struct PmFile {
    pool: Arc<PmPool>,
    entry: u64,
    chunks: RwLock<Vec<u64>>,
    /// Persisted size: the file's content.
    size: AtomicU64,
    removed: AtomicBool,
}

impl Drop for PmFile {
    fn drop(&mut self) {
        if self.removed.load(Ordering::Acquire) {
            for &c in self.chunks.get_mut().iter() {
                self.pool.free_chunk(c);
            }
        }
    }
}

struct Directory {
    files: HashMap<String, Arc<PmFile>>,
    free_entries: Vec<u64>,
}

/// A file system inside a PM pool. Cheap to clone.
#[derive(Clone)]
pub struct PmFs {
    pool: Arc<PmPool>,
    location: String,
    data_per_chunk: u64,
    dir: Arc<Mutex<Directory>>,
}

fn name_of(path: &Path) -> Result<String> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| Error::InvalidArgument(format!("bad PM file name {}", path.display())))?;
    if name.len() > NAME_MAX {
        return Err(Error::InvalidArgument(format!(
            "PM file name {name:?} is longer than {NAME_MAX} bytes"
        )));
    }
    Ok(name.to_string())
}

fn entry_crc(first_chunk: u64, name: &[u8]) -> u32 {
    let mut b = Vec::with_capacity(12 + name.len());
    b.extend_from_slice(&first_chunk.to_le_bytes());
    b.extend_from_slice(&(name.len() as u32).to_le_bytes());
    b.extend_from_slice(name);
    crate::util::crc::crc32c(&b)
}

impl PmFs {
    /// Opens the file system in `pool`, creating an empty one if the pool has none (unless
    /// `create` is false, then a pool without one is an error). Rebuilds the pool's allocator.
    /// `location` names the pool in errors.
    pub fn open(pool: Arc<PmPool>, location: impl Into<String>, create: bool) -> Result<PmFs> {
        let location = location.into();
        let chunk = pool.chunk_size();
        let fs = PmFs {
            data_per_chunk: chunk - CHUNK_HEADER_BYTES,
            pool: Arc::clone(&pool),
            location: location.clone(),
            dir: Arc::new(Mutex::new(Directory {
                files: HashMap::new(),
                free_entries: Vec::new(),
            })),
        };
        let root = pool.root(PMFS_ROOT_SLOT);
        let bad = |why: String| Error::corruption(location.clone(), why);
        if root == 0 {
            if !create {
                return Err(bad("the PM pool holds no TierKV file system".into()));
            }
            pool.rebuild_allocator(&[])?;
            let dir = pool.allocate_zeroed_chunk(0)?;
            pool.fence();
            let entries = (chunk - DIR_HEADER_BYTES) / ENTRY_BYTES;
            let mut header = Vec::with_capacity(16);
            header.extend_from_slice(&DIR_MAGIC.to_le_bytes());
            header.extend_from_slice(&entries.to_le_bytes());
            pool.write(dir, &header)?;
            pool.persist(dir, 16)?;
            pool.set_root(PMFS_ROOT_SLOT, dir)?;
            fs.dir.lock().free_entries = (0..entries)
                .rev()
                .map(|i| fs.entry_offset(dir, i))
                .collect();
            return Ok(fs);
        }
        if !root.is_multiple_of(chunk) || root >= pool.size() {
            return Err(bad(format!(
                "directory root {root} is not a chunk of the pool"
            )));
        }
        if pool.load_u64(root)? != DIR_MAGIC {
            return Err(bad(format!("no PM directory magic at offset {root}")));
        }
        let entries = pool.load_u64(root + 8)?;
        if entries != (chunk - DIR_HEADER_BYTES) / ENTRY_BYTES {
            return Err(bad(format!(
                "directory entry count {entries} does not fit the chunk size"
            )));
        }
        let max_chunks = pool.size() / chunk;
        let mut live = vec![root];
        let mut seen = std::collections::HashSet::new();
        seen.insert(root);
        let mut dir = fs.dir.lock();
        for i in (0..entries).rev() {
            let e = fs.entry_offset(root, i);
            if pool.load_u64(e)? != ENTRY_LIVE {
                dir.free_entries.push(e);
                continue;
            }
            let mut raw = [0u8; ENTRY_BYTES as usize];
            pool.read(e, &mut raw)?;
            let field = |o: usize| u64::from_le_bytes(raw[o..o + 8].try_into().expect("8 bytes"));
            let size = field(8);
            let first = field(16);
            let name_len = u32::from_le_bytes(raw[24..28].try_into().expect("4 bytes")) as usize;
            let crc = u32::from_le_bytes(raw[28..32].try_into().expect("4 bytes"));
            if name_len > NAME_MAX || entry_crc(first, &raw[32..32 + name_len]) != crc {
                return Err(bad(format!(
                    "PM directory entry at offset {e} fails its checksum"
                )));
            }
            let name = String::from_utf8(raw[32..32 + name_len].to_vec())
                .map_err(|_| bad(format!("PM directory entry at offset {e} has a bad name")))?;
            let mut chunks = Vec::new();
            let mut c = first;
            while c != 0 {
                if !c.is_multiple_of(chunk)
                    || c >= pool.size()
                    || !seen.insert(c)
                    || chunks.len() as u64 > max_chunks
                {
                    return Err(bad(format!("PM file {name}: bad chunk pointer {c}")));
                }
                if pool.load_u64(c + 8)? != CHUNK_MAGIC {
                    return Err(bad(format!("PM file {name}: chunk {c} has no chunk magic")));
                }
                chunks.push(c);
                c = pool.load_u64(c)?;
            }
            if chunks.is_empty() || size > chunks.len() as u64 * fs.data_per_chunk {
                return Err(bad(format!(
                    "PM file {name}: size {size} exceeds its chunks"
                )));
            }
            live.extend_from_slice(&chunks);
            dir.files.insert(
                name,
                Arc::new(PmFile {
                    pool: Arc::clone(&pool),
                    entry: e,
                    chunks: RwLock::new(chunks),
                    size: AtomicU64::new(size),
                    removed: AtomicBool::new(false),
                }),
            );
        }
        drop(dir);
        pool.rebuild_allocator(&live)?;
        Ok(fs)
    }

    fn entry_offset(&self, dir: u64, i: u64) -> u64 {
        dir + DIR_HEADER_BYTES + i * ENTRY_BYTES
    }

    /// The pool.
    pub fn pool(&self) -> &Arc<PmPool> {
        &self.pool
    }

    /// Names of the files in the pool.
    pub fn file_names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.dir.lock().files.keys().cloned().collect();
        v.sort();
        v
    }

    fn get(&self, path: &Path) -> Result<Arc<PmFile>> {
        let name = name_of(path)?;
        self.dir.lock().files.get(&name).cloned().ok_or_else(|| {
            Error::io(
                "open",
                path,
                std::io::Error::new(std::io::ErrorKind::NotFound, "no such PM file"),
            )
        })
    }

    /// Allocates a chunk with a persisted, unlinked header; with `zeroed`, its data area is
    /// zeroed (non-temporal stores) and the zeroes are durable with the header.
    fn new_chunk(&self, zeroed: bool) -> Result<u64> {
        let c = if zeroed {
            self.pool.allocate_zeroed_chunk(CHUNK_HEADER_BYTES)?
        } else {
            self.pool.allocate_chunk()?
        };
        let mut h = [0u8; 16];
        h[8..].copy_from_slice(&CHUNK_MAGIC.to_le_bytes());
        self.pool.write(c, &h)?;
        self.pool.persist(c, 16)?;
        Ok(c)
    }

    /// Creates a file; `zeroed`: every chunk of it is zeroed before it is linked (logs).
    fn create_file(&self, path: &Path, zeroed: bool) -> Result<Box<dyn WritableFile>> {
        let name = name_of(path)?;
        if self.dir.lock().files.contains_key(&name) {
            self.remove_name(&name, path)?;
        }
        let entry =
            self.dir.lock().free_entries.pop().ok_or_else(|| {
                Error::NoSpace(format!("{}: PM directory is full", self.location))
            })?;
        let chunk = match self.new_chunk(zeroed) {
            Ok(c) => c,
            Err(e) => {
                self.dir.lock().free_entries.push(entry);
                return Err(e);
            }
        };
        let mut raw = vec![0u8; 32 + name.len()];
        raw[16..24].copy_from_slice(&chunk.to_le_bytes());
        raw[24..28].copy_from_slice(&(name.len() as u32).to_le_bytes());
        raw[28..32].copy_from_slice(&entry_crc(chunk, name.as_bytes()).to_le_bytes());
        raw[32..].copy_from_slice(name.as_bytes());
        self.pool.write(entry + 8, &raw[8..])?;
        self.pool.persist(entry + 8, raw.len() as u64 - 8)?;
        self.pool.store_u64_persist(entry, ENTRY_LIVE)?;
        let file = Arc::new(PmFile {
            pool: Arc::clone(&self.pool),
            entry,
            chunks: RwLock::new(vec![chunk]),
            size: AtomicU64::new(0),
            removed: AtomicBool::new(false),
        });
        self.dir.lock().files.insert(name, Arc::clone(&file));
        Ok(Box::new(PmWritable {
            fs: self.clone(),
            file,
            path: path.to_path_buf(),
            zeroed,
            chunk_count: 1,
            last_chunk: chunk,
            written: 0,
            persisted: 0,
            msynced: 0,
            to_write_back: Vec::new(),
        }))
    }

    fn remove_name(&self, name: &str, path: &Path) -> Result<()> {
        let mut dir = self.dir.lock();
        let Some(f) = dir.files.remove(name) else {
            return Err(Error::io(
                "remove",
                path,
                std::io::Error::new(std::io::ErrorKind::NotFound, "no such PM file"),
            ));
        };
        self.pool.store_u64_persist(f.entry, 0)?;
        dir.free_entries.push(f.entry);
        f.removed.store(true, Ordering::Release);
        Ok(())
    }
}

struct PmWritable {
    fs: PmFs,
    file: Arc<PmFile>,
    path: PathBuf,
    /// A log: new chunks are zeroed before they are linked.
    zeroed: bool,
    /// Chunks of the file, and the offset of the last one (only this writer adds chunks).
    chunk_count: u64,
    last_chunk: u64,
    written: u64,
    persisted: u64,
    msynced: u64,
    /// Pool ranges stored with ordinary stores since the last `flush` (to write back).
    to_write_back: Vec<(u64, u64)>,
}

impl PmWritable {
    /// `msync`s the data persisted since the last msync, and the file's entry.
    fn msync_persisted(&mut self) -> Result<()> {
        if self.msynced == self.persisted {
            return Ok(());
        }
        let pool = Arc::clone(&self.fs.pool);
        let from = self.msynced;
        self.pieces(from, self.persisted, |at, _, n| Ok(pool.msync(at, n)?))?;
        pool.msync(self.file.entry, ENTRY_BYTES)?;
        self.msynced = self.persisted;
        Ok(())
    }

    /// Calls `f(pool offset, file offset, len)` for each chunk piece of `[from, to)`.
    fn pieces(
        &self,
        from: u64,
        to: u64,
        mut f: impl FnMut(u64, u64, u64) -> Result<()>,
    ) -> Result<()> {
        let chunks = self.file.chunks.read();
        let dpc = self.fs.data_per_chunk;
        let mut pos = from;
        while pos < to {
            let (idx, within) = (pos / dpc, pos % dpc);
            let n = (to - pos).min(dpc - within);
            f(chunks[idx as usize] + CHUNK_HEADER_BYTES + within, pos, n)?;
            pos += n;
        }
        Ok(())
    }
}

impl WritableFile for PmWritable {
    fn append(&mut self, mut data: &[u8]) -> Result<()> {
        let dpc = self.fs.data_per_chunk;
        while !data.is_empty() {
            let (idx, within) = (self.written / dpc, self.written % dpc);
            if idx == self.chunk_count {
                let c = self.fs.new_chunk(self.zeroed)?;
                self.fs.pool.store_u64_persist(self.last_chunk, c)?;
                self.file.chunks.write().push(c);
                self.chunk_count += 1;
                self.last_chunk = c;
            }
            debug_assert_eq!(idx + 1, self.chunk_count, "appends fill the last chunk");
            let n = (data.len() as u64).min(dpc - within) as usize;
            let at = self.last_chunk + CHUNK_HEADER_BYTES + within;
            if n >= NT_MIN_BYTES {
                self.fs.pool.write_nt(at, &data[..n])?;
            } else {
                self.fs.pool.write(at, &data[..n])?;
                match self.to_write_back.last_mut() {
                    Some((start, len)) if *start + *len == at => *len += n as u64,
                    _ => self.to_write_back.push((at, n as u64)),
                }
            }
            data = &data[n..];
            self.written += n as u64;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if self.written == self.persisted {
            return Ok(());
        }
        let pool = &self.fs.pool;
        // One fence covers the data lines and the new size: a crash before it completes may
        // leave the size covering a torn tail (see the module docs). All lines are written back
        // by one call, so no counter update stalls between the write-backs.
        pool.store_u64(self.file.entry + 8, self.written)?;
        self.to_write_back.push((self.file.entry + 8, 8));
        let flushed = pool.flush_ranges(&self.to_write_back);
        self.to_write_back.clear();
        flushed.map_err(|e| with_path(e.into(), "flush", &self.path))?;
        pool.fence();
        self.persisted = self.written;
        self.file.size.store(self.written, Ordering::Release);
        if pool.msync_on_persist() {
            self.msync_persisted()?;
        }
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        self.flush()?;
        self.msync_persisted()
    }

    fn size(&self) -> u64 {
        self.written
    }
}

fn with_path(e: Error, op: &'static str, path: &Path) -> Error {
    match e {
        Error::InvalidArgument(m) => Error::io(op, path, std::io::Error::other(m)),
        other => other,
    }
}

struct PmReadable {
    fs: PmFs,
    file: Arc<PmFile>,
    path: PathBuf,
    size: u64,
}

impl RandomAccessFile for PmReadable {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let end = offset.checked_add(buf.len() as u64);
        if end.is_none_or(|e| e > self.size) {
            return Err(Error::io(
                "read",
                &self.path,
                std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "read past the end of a PM file",
                ),
            ));
        }
        let chunks = self.file.chunks.read();
        let dpc = self.fs.data_per_chunk;
        let mut pos = offset;
        let mut out = &mut buf[..];
        while !out.is_empty() {
            let (idx, within) = (pos / dpc, pos % dpc);
            let n = (out.len() as u64).min(dpc - within) as usize;
            let at = chunks[idx as usize] + CHUNK_HEADER_BYTES + within;
            self.fs.pool.read(at, &mut out[..n])?;
            out = &mut out[n..];
            pos += n as u64;
        }
        Ok(())
    }

    fn size(&self) -> u64 {
        self.size
    }
}

struct NoLock;
impl FileLock for NoLock {}

impl FileSystem for PmFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.create_file(path, false)
    }

    fn create_log(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.create_file(path, true)
    }

    fn open_readable(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let file = self.get(path)?;
        let size = file.size.load(Ordering::Acquire);
        Ok(Arc::new(PmReadable {
            fs: self.clone(),
            file,
            path: path.to_path_buf(),
            size,
        }))
    }

    fn remove(&self, path: &Path) -> Result<()> {
        self.remove_name(&name_of(path)?, path)
    }

    fn rename(&self, from: &Path, _to: &Path) -> Result<()> {
        Err(Error::InvalidArgument(format!(
            "PM files cannot be renamed ({})",
            from.display()
        )))
    }

    fn exists(&self, path: &Path) -> bool {
        name_of(path).is_ok_and(|n| self.dir.lock().files.contains_key(&n))
    }

    fn list(&self, _dir: &Path) -> Result<Vec<String>> {
        Ok(self.file_names())
    }

    fn create_dir_all(&self, _dir: &Path) -> Result<()> {
        Ok(())
    }

    fn sync_dir(&self, _dir: &Path) -> Result<()> {
        // Directory entries are persisted when they change.
        Ok(())
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        Ok(self.get(path)?.size.load(Ordering::Acquire))
    }

    fn lock(&self, _path: &Path) -> Result<Box<dyn FileLock>> {
        // The database's SSD lock and the pool file's lock guard the pool.
        Ok(Box::new(NoLock))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tierkv_pm::{PmPool, PoolOptions};

    fn pool() -> Arc<PmPool> {
        let o = PoolOptions {
            size: 1 << 20,
            chunk_size: 64 << 10,
            ..PoolOptions::default()
        };
        PmPool::create_crash_sim(&o, true).unwrap()
    }

    #[test]
    fn files_span_chunks_survive_reopen_and_free_their_chunks() {
        let p = pool();
        let fs = PmFs::open(Arc::clone(&p), "test", true).unwrap();
        let free0 = p.free_chunks();
        let data: Vec<u8> = (0..200_000u32).map(|i| (i * 7) as u8).collect();
        let mut w = fs.create(Path::new("/db/000001.sst")).unwrap();
        for piece in data.chunks(3000) {
            w.append(piece).unwrap();
        }
        w.sync().unwrap();
        assert_eq!(
            fs.file_size(Path::new("/db/000001.sst")).unwrap(),
            data.len() as u64
        );
        let r = fs.open_readable(Path::new("/db/000001.sst")).unwrap();
        let mut buf = vec![0u8; data.len()];
        r.read_exact_at(0, &mut buf).unwrap();
        assert_eq!(buf, data);
        assert!(r.read_exact_at(1, &mut buf).is_err(), "read past the end");
        drop((w, r));
        // Reopen from a crash image: the file is exactly what was persisted.
        let img = p.crash_image(tierkv_pm::CrashImage::Strict).unwrap();
        let p2 = PmPool::open_crash_image(
            img,
            &PoolOptions {
                chunk_size: 64 << 10,
                ..PoolOptions::default()
            },
        )
        .unwrap();
        let fs2 = PmFs::open(Arc::clone(&p2), "test2", false).unwrap();
        assert_eq!(fs2.file_names(), vec!["000001.sst".to_string()]);
        let mut buf2 = vec![0u8; data.len()];
        fs2.open_readable(Path::new("/x/000001.sst"))
            .unwrap()
            .read_exact_at(0, &mut buf2)
            .unwrap();
        assert_eq!(buf2, data);
        // Remove frees the chunks.
        fs.remove(Path::new("/db/000001.sst")).unwrap();
        assert_eq!(p.free_chunks(), free0);
        assert!(!fs.exists(Path::new("/db/000001.sst")));
        // A second create of a name replaces the first.
        let mut w = fs.create(Path::new("/db/a.log")).unwrap();
        w.append(b"one").unwrap();
        w.flush().unwrap();
        let mut w2 = fs.create(Path::new("/db/a.log")).unwrap();
        w2.append(b"twotwo").unwrap();
        w2.flush().unwrap();
        assert_eq!(fs.file_size(Path::new("/db/a.log")).unwrap(), 6);
        drop(w);
    }

    #[test]
    fn unpublished_files_vanish_and_leak_nothing() {
        let p = pool();
        let fs = PmFs::open(Arc::clone(&p), "test", true).unwrap();
        let mut w = fs.create(Path::new("/db/000002.log")).unwrap();
        w.append(&[7u8; 1000]).unwrap();
        // Not flushed: after a crash the file exists (published at create) but holds nothing.
        let img = p.crash_image(tierkv_pm::CrashImage::Strict).unwrap();
        let o = PoolOptions {
            chunk_size: 64 << 10,
            ..PoolOptions::default()
        };
        let p2 = PmPool::open_crash_image(img, &o).unwrap();
        let fs2 = PmFs::open(Arc::clone(&p2), "t", false).unwrap();
        assert_eq!(fs2.file_size(Path::new("/db/000002.log")).unwrap(), 0);
        // Only the directory chunk and the file's chunk are allocated.
        assert_eq!(p2.chunk_count() - p2.free_chunks(), 2 + 1);
        drop(w);
    }

    #[test]
    fn damaged_directory_entries_and_chunk_chains_are_corruption() {
        let o = PoolOptions {
            size: 1 << 20,
            chunk_size: 64 << 10,
            ..PoolOptions::default()
        };
        let setup = || {
            let p = PmPool::create_crash_sim(&o, false).unwrap();
            let fs = PmFs::open(Arc::clone(&p), "test", true).unwrap();
            let mut w = fs.create(Path::new("/db/000007.sst")).unwrap();
            w.append(&vec![1u8; 100_000]).unwrap();
            w.sync().unwrap();
            let dir = p.root(PMFS_ROOT_SLOT);
            let entry = dir + DIR_HEADER_BYTES; // the first entry: the file above
            (p, entry)
        };
        // A flipped name byte fails the entry checksum.
        let (p, entry) = setup();
        let mut b = [0u8; 1];
        p.read(entry + 33, &mut b).unwrap();
        p.write(entry + 33, &[b[0] ^ 0x20]).unwrap();
        let err = PmFs::open(Arc::clone(&p), "pool.pm", false).err().unwrap();
        assert!(
            err.is_corruption() && err.to_string().contains("checksum"),
            "{err}"
        );
        // A chunk pointer into the middle of a chunk is reported, not followed.
        let (p, entry) = setup();
        let first = p.load_u64(entry + 16).unwrap();
        p.store_u64_persist(first, first + 100).unwrap();
        let err = PmFs::open(Arc::clone(&p), "pool.pm", false).err().unwrap();
        assert!(
            err.is_corruption() && err.to_string().contains("chunk"),
            "{err}"
        );
        // A size beyond the file's chunks is reported.
        let (p, entry) = setup();
        p.store_u64_persist(entry + 8, 10 << 20).unwrap();
        let err = PmFs::open(Arc::clone(&p), "pool.pm", false).err().unwrap();
        assert!(
            err.is_corruption() && err.to_string().contains("size"),
            "{err}"
        );
        // A pool without a file system is refused when not creating.
        let empty = PmPool::create_crash_sim(&o, false).unwrap();
        assert!(PmFs::open(empty, "empty.pm", false).is_err());
    }

    fn log_pool_options() -> PoolOptions {
        PoolOptions {
            size: 1 << 20,
            chunk_size: 64 << 10,
            ..PoolOptions::default()
        }
    }

    /// Records of varied sizes (up to 3000 bytes, so some span log blocks as several fragments);
    /// `tag` varies the content, not the sizes.
    fn log_records(n: u32, tag: u8) -> Vec<Vec<u8>> {
        (0..n)
            .map(|i| vec![(i as u8) ^ tag; (i as usize * 37) % 3000 + 1])
            .collect()
    }

    type CreateFn = fn(&PmFs, &Path) -> Result<Box<dyn WritableFile>>;

    /// Appends `records` to a new log made by `create` and, at every fence of the run (just
    /// before it takes effect, i.e. with that persist in flight), recovers the log from the
    /// all-pending image, 4 word-torn and 8 line-torn images: each must read back, without error, as a prefix of
    /// `records` holding every acknowledged record. Returns the number of images checked.
    fn check_in_flight_log_images(
        p: &Arc<PmPool>,
        fs: &PmFs,
        create: CreateFn,
        records: Arc<Vec<Vec<u8>>>,
    ) -> u64 {
        use crate::log::{LogReader, LogWriter};
        use tierkv_pm::CrashImage;
        let acked = Arc::new(AtomicU64::new(0));
        let checked = Arc::new(AtomicU64::new(0));
        {
            let (acked, checked, records) = (
                Arc::clone(&acked),
                Arc::clone(&checked),
                Arc::clone(&records),
            );
            let weak = Arc::downgrade(p);
            p.set_fence_hook(Some(Box::new(move |fence| {
                let Some(p) = weak.upgrade() else { return };
                let acked = acked.load(Ordering::SeqCst) as usize;
                let kinds = std::iter::once(CrashImage::AllPending)
                    .chain((0..4).map(|t| CrashImage::Torn(fence * 100 + t)))
                    .chain((0..8).map(|t| CrashImage::TornLines(fence * 100 + t)));
                for kind in kinds {
                    let img = p.crash_image(kind).unwrap();
                    let fs2 = PmFs::open(
                        PmPool::open_crash_image(img, &log_pool_options()).unwrap(),
                        "img",
                        false,
                    )
                    .unwrap();
                    let path = Path::new("/db/000009.log");
                    let data = if fs2.exists(path) {
                        fs2.read_all(path).unwrap()
                    } else {
                        Vec::new()
                    };
                    let mut reader = LogReader::new(data, "000009.log");
                    let mut got = Vec::new();
                    while let Some(r) = reader
                        .next_record()
                        .unwrap_or_else(|e| panic!("fence {fence} {kind:?}: {e}"))
                    {
                        got.push(r);
                    }
                    assert!(
                        got.len() >= acked && got.len() <= acked + 1,
                        "fence {fence} {kind:?}: {} records recovered, {acked} acknowledged",
                        got.len()
                    );
                    assert!(
                        got[..] == records[..got.len()],
                        "fence {fence} {kind:?}: a recovered record is not the one written"
                    );
                    checked.fetch_add(1, Ordering::SeqCst);
                }
            })));
        }
        let mut log = LogWriter::new(create(fs, Path::new("/db/000009.log")).unwrap());
        for r in records.iter() {
            log.add_record(r).unwrap();
            acked.fetch_add(1, Ordering::SeqCst);
        }
        p.set_fence_hook(None);
        checked.load(Ordering::SeqCst)
    }

    #[test]
    fn pm_log_recovers_every_acknowledged_record_at_every_fence() {
        let p = PmPool::create_crash_sim(&log_pool_options(), true).unwrap();
        let fs = PmFs::open(Arc::clone(&p), "test", true).unwrap();
        let records = Arc::new(log_records(120, 0));
        let n = check_in_flight_log_images(&p, &fs, |fs, p| fs.create_log(p), records);
        assert!(n >= 120 * 13, "only {n} images checked");
    }

    /// A log whose chunks held another log's records: an interrupted append must never expose
    /// the old records (same sizes, hence at the same offsets) as if they were new ones.
    #[test]
    fn reused_log_chunks_never_expose_stale_records() {
        use crate::log::LogWriter;
        let p = PmPool::create_crash_sim(&log_pool_options(), true).unwrap();
        let fs = PmFs::open(Arc::clone(&p), "test", true).unwrap();
        // Fixed-size records (a fillrandom WAL), 300 of which fit in one chunk: the old log's
        // only chunk is the next one handed out, and its records sit at the offsets where the
        // new log's records go.
        let sized =
            |tag: u8| -> Vec<Vec<u8>> { (0..300u32).map(|i| vec![i as u8 ^ tag; 144]).collect() };
        let free = p.free_chunks();
        let mut w = LogWriter::new(fs.create_log(Path::new("/db/000002.log")).unwrap());
        for r in sized(0xa5) {
            w.add_record(&r).unwrap();
        }
        assert_eq!(p.free_chunks(), free - 1, "the old log fits in one chunk");
        drop(w);
        fs.remove(Path::new("/db/000002.log")).unwrap();
        assert_eq!(p.free_chunks(), free);
        let n = check_in_flight_log_images(&p, &fs, |fs, p| fs.create_log(p), Arc::new(sized(0)));
        assert!(n >= 300 * 13, "only {n} images checked");
    }

    /// In `msync` mode every flush msyncs what it persisted (data and entry), not only `sync`:
    /// the mode promises power-fail durability for every persisted append.
    #[test]
    fn msync_mode_msyncs_every_flushed_append() {
        let dir = tempfile::tempdir().unwrap();
        let o = PoolOptions {
            size: 1 << 20,
            chunk_size: 64 << 10,
            mode: tierkv_pm::DurabilityMode::Msync,
            ..PoolOptions::default()
        };
        let p = PmPool::create(&dir.path().join("m.pool"), &o).unwrap();
        let fs = PmFs::open(Arc::clone(&p), "test", true).unwrap();
        let mut w = fs.create_log(Path::new("/db/000001.log")).unwrap();
        let data = vec![7u8; 3000];
        for _ in 0..10 {
            let before = p.stats().bytes_msynced;
            w.append(&data[..150]).unwrap();
            w.append(&data).unwrap(); // non-temporal piece
            w.flush().unwrap();
            let msynced = p.stats().bytes_msynced - before;
            assert!(
                msynced >= 3150 + ENTRY_BYTES,
                "a flush msynced only {msynced} bytes"
            );
        }
        // Emulated mode: a flush does not msync, a sync does.
        let p = PmPool::create(
            &dir.path().join("e.pool"),
            &PoolOptions {
                mode: tierkv_pm::DurabilityMode::Emulated,
                ..o
            },
        )
        .unwrap();
        let fs = PmFs::open(Arc::clone(&p), "test", true).unwrap();
        let mut w = fs.create_log(Path::new("/db/000001.log")).unwrap();
        w.append(&data).unwrap();
        w.flush().unwrap();
        assert_eq!(p.stats().bytes_msynced, 0);
        w.sync().unwrap();
        assert!(p.stats().bytes_msynced >= 3000);
    }

    /// Micro-benchmark of the PM WAL append: a 144-byte record through the record log writer
    /// into a `PmFs` log on /dev/shm (emulated mode), persisted before `add_record` returns.
    /// Three logs of 1M records one after another, each deleted before the next: pass 0 uses
    /// new chunks of a new pool, passes 1 and 2 reuse the chunks freed by the one before.
    #[test]
    #[ignore = "micro benchmark: cargo test --release -p tierkv --lib -- --ignored --nocapture"]
    fn bench_pm_log_append_144_bytes() {
        use crate::log::LogWriter;
        let dir = if Path::new("/dev/shm").is_dir() {
            tempfile::tempdir_in("/dev/shm").unwrap()
        } else {
            tempfile::tempdir().unwrap()
        };
        let o = PoolOptions {
            size: 1 << 30,
            ..PoolOptions::default()
        };
        let p = PmPool::create(&dir.path().join("bench.pool"), &o).unwrap();
        let fs = PmFs::open(Arc::clone(&p), "bench", true).unwrap();
        let rec = [0x5au8; 144];
        let n = 1_000_000u64;
        for pass in 0..3 {
            let name = format!("/db/{:06}.log", pass + 1);
            let fences = p.fence_count();
            let mut log = LogWriter::new(fs.create_log(Path::new(&name)).unwrap());
            let t = std::time::Instant::now();
            for _ in 0..n {
                log.add_record(&rec).unwrap();
            }
            let ns = t.elapsed().as_nanos() as f64 / n as f64;
            println!(
                "pass {pass}: {ns:.0} ns per persisted 144-byte PM log append ({:.3} fences per append, {})",
                (p.fence_count() - fences) as f64 / n as f64,
                tierkv_pm::flush_instruction()
            );
            drop(log);
            fs.remove(Path::new(&name)).unwrap();
        }
    }
}
