//! `PmFs`: the engine's files (WALs, L0 tables) stored in a persistent-memory pool.
//!
//! The engine reaches PM through the same [`FileSystem`] seam as SSD, so the record log, the
//! table builder and the table reader run unchanged on either tier. Files are made of pool
//! chunks (`PmPool::chunk_size`, 4 MiB by default, at least 64 KiB) chained by a next pointer;
//! the directory, a chain of directory chunks whose first is found through the pool's named
//! root [`PMFS_ROOT_NAME`] ("pmfs"), holds one 128-byte entry per file and grows by a chunk
//! whenever every entry is taken. Layout (little-endian, format `TKVPMFS4`):
//!
//! ```text
//! directory chunk: magic u64 "TKVPMFS4" | entry_count u64 | crc32c(bytes 0..16) u32 |
//!                  4 reserved | next u64 | 32 reserved | entries...
//!   next:          0 = the last directory chunk; else the next directory chunk's offset plus
//!                  check16(this chunk, next chunk), as a file chunk's link
//! entry (128 B):   state u64 | size word u64 | first_chunk u64 | name_len u32 | flags u32 |
//!                  name (<= 80 B) | zero padding
//!   state:         0 = free; live = "LIVE" (0x4556494c) in the low 32 bits and, in the high
//!                  32 bits, crc32c(entry offset u64, first_chunk u64, name_len u32, flags u32,
//!                  name); any other value is damage
//!   size word:     the file's size in the low 48 bits, check16(entry offset, size) above
//!   flags:         bit 0 = log space: a log file (its chunks are zeroed before use) or a
//!                  persistent memtable (not zeroed: never read as a record log); a
//!                  manifest (`MANIFEST-NNNNNN`) has it too (zeroed chunks), but its chunks
//!                  are counted apart from the logs' share (`PmSpacePolicy::manifest_chunks`);
//!                  bit 1 = positioned: the file's chunks carry position words (files created
//!                  by builds before it have no position words, and no holes)
//! chunk:           next u64 (0 = last; else the next chunk's offset, whose low 16 bits are
//!                  zero, plus check16(this chunk, next chunk)) | magic u64 "TKVCHUNK" |
//!                  position u64 | 40 reserved | data...
//!   position:      in a positioned file, 0 = the chunk directly follows the chunk linking to
//!                  it; else its index in the file (low 48 bits) and check16(position word's
//!                  offset, index) above: the chunks before it back to the linking chunk are
//!                  holes ([`PmFs::punch`])
//! ```
//!
//! `check16(a, b)` is the upper and lower halves of `crc32c(a u64 ++ b u64)` XORed: every field
//! of an entry and every chunk link is covered by a checksum, so a flipped bit is reported as
//! corruption naming the entry or chunk, never read as another file, a shorter file or a free
//! entry.
//!
//! Persist points and the invariant at each (every store below is followed by flush + fence):
//! * format (creation of the file system, by the pool's open protocol, after the allocator was
//!   rebuilt): the directory chunk's header is persisted, then its offset is published as the
//!   named root "pmfs" (one failure-atomic root-directory update). Before that publish the
//!   chunk is referenced by nothing (free at the next open) and the pool has no file system.
//! * directory growth (a create finds no free entry): a zeroed chunk gets its header
//!   persisted, then the last directory chunk's `next` is set to it (8-byte atomic, persisted).
//!   Before that store the new chunk is referenced by nothing (free at the next open); after
//!   it the directory has one more chunk of free entries. Directory chunks are never unlinked:
//!   a directory keeps the size its busiest moment needed.
//! * file create: chunk header persisted -> entry fields persisted -> `state = live` (8-byte
//!   atomic publish). Before the publish the entry is free and its chunk unreferenced.
//! * append: a new chunk's header is persisted and the chunk linked (8-byte atomic `next`,
//!   persisted) before any data lands in it; the chunks of a log (`create_log`) are first zeroed
//!   with non-temporal stores, durable with the header. [`WritableFile::reserve`] links chunks
//!   ahead of the appends that will fill them (the file's content is still its `size`).
//! * `flush`: ONE fence for the data and the size. The data lines are written back (pieces of at
//!   least 1 KiB were stored non-temporally, smaller ones are stored and written back), the new
//!   size word (8-byte atomic) is stored and written back, then one fence. After the fence the
//!   file is exactly its first `size` bytes. A crash before the fence completes leaves either the
//!   old size (the file is its old content) or the new size over a possibly torn tail: each line
//!   of the flushed range holds the new bytes or what the pool held before. For a log that is
//!   the new bytes or zeros (its chunks were zeroed), which the record log reader recovers as a
//!   torn tail; a table is only referenced (by the manifest) after its final flush returned, so
//!   a torn table is never read. This saves the second fence per WAL append of a
//!   "persist data, fence, persist size, fence" order.
//! * remove: `state = 0` persisted, then the chunks return to the allocator once no reader
//!   holds the file (like an unlinked POSIX file).
//! * punch (a finished file's chunks whose data lies wholly in a range, never its first or
//!   last chunk): the first chunk kept after the hole gets its position word (8-byte atomic,
//!   persisted; until the next store it still directly follows its linking chunk, so the word
//!   names the position it has), then the last chunk kept before the hole links past it
//!   (8-byte atomic, persisted), then the chunks of the hole return to the allocator. A crash
//!   between the stores leaves the file whole; after the link, the hole's chunks are
//!   unreferenced (free at the next open). A read of a hole is `Corruption`: the caller
//!   promised never to read there again.
//!
//! **Ownership.** `PmFs` is one owner of the pool's chunks ([`PmFsOwner`], a
//! [`super::PmOwner`]): at open it reports the directory chunk and every chunk reachable from a
//! live entry, and the open protocol ([`super::open_pm_owners`]) rebuilds the volatile
//! allocator once from the chunks of every owner of the pool; so a crash never leaks a chunk
//! that was allocated but not yet published, and the chunks of the pool's other structures are
//! never handed out to files.
//!
//! **Identity.** A pool belongs to one database: the pool's root directory records the
//! database's identity (also kept in its manifest), and every open names the identity it
//! expects ([`PmFsOpen`]). A pool of another database is refused before any of its files is
//! read or written (see [`super::open_pm_owners`]).
//!
//! **Space.** Chunks are taken in three classes ([`PmSpacePolicy`]): a table may only take a
//! chunk while the free chunks after it still cover the spare chunk plus what the logs may yet
//! grow into (their quota minus the chunks they hold); a log may take any chunk but the spare;
//! only a log created with [`PmFs::create_log_using_spare`] (recovery's new WAL, made after the
//! replayed WALs were freed) may take the spare. So a full pool never leaves a database without
//! room for its next WAL.
//!
//! `flush` makes appended data durable in the pool's mode (a process crash in `emulated`, a power
//! failure in `dax`/`msync`); `sync` additionally `msync`s the touched pages in every mode, so
//! `WriteOptions::sync` never means less than it does on SSD.
//!
//! Thread-safety: the directory is under a mutex, chunk allocation under another; a file has one
//! writer; readers copy out of the pool through bounds-checked reads.

use super::pm_open::{open_pm_owners, PmFsOpen, PmOwner};
use super::{FileLock, FileSystem, RandomAccessFile, WritableFile};
use crate::{Error, Result};
use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use tierkv_pm::PmPool;

mod files;
mod format;
mod owner;
mod space;
#[cfg(test)]
mod tests;

pub(crate) use files::*;
pub use format::*;
pub use owner::*;
pub use space::*;

struct PmFile {
    pool: Arc<PmPool>,
    entry: u64,
    /// The file's chunks by index; 0 for a hole ([`PmFs::punch`]).
    chunks: RwLock<Vec<u64>>,
    /// The chunks carry position words, so the file may have holes.
    positioned: bool,
    /// Persisted size: the file's content.
    size: AtomicU64,
    removed: AtomicBool,
    /// The log-chunk counter of the file system, for log files.
    log_chunks: Option<Arc<AtomicU64>>,
    /// The manifest-chunk counter of the file system, for manifests.
    manifest_chunks: Option<Arc<AtomicU64>>,
}

impl Drop for PmFile {
    fn drop(&mut self) {
        if self.removed.load(Ordering::Acquire) {
            let chunks = self.chunks.get_mut();
            chunks.retain(|&c| c != 0);
            for &c in chunks.iter() {
                self.pool.free_chunk(c);
            }
            for counter in [&self.log_chunks, &self.manifest_chunks]
                .into_iter()
                .flatten()
            {
                counter.fetch_sub(chunks.len() as u64, Ordering::AcqRel);
            }
        }
    }
}

struct Directory {
    files: HashMap<String, Arc<PmFile>>,
    free_entries: Vec<u64>,
    /// The directory's chunks, in chain order (the first is the named root's).
    chunks: Vec<u64>,
}

/// A file system inside a PM pool. Cheap to clone.
#[derive(Clone)]
pub struct PmFs {
    pool: Arc<PmPool>,
    location: String,
    data_per_chunk: u64,
    identity: u128,
    dir: Arc<Mutex<Directory>>,
    space: Arc<Mutex<SpaceState>>,
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

fn not_found(op: &'static str, path: &Path) -> Error {
    Error::io(
        op,
        path,
        std::io::Error::new(std::io::ErrorKind::NotFound, "no such PM file"),
    )
}

/// A file found in the directory at open.
struct FoundFile {
    name: String,
    entry: u64,
    size: u64,
    /// By index, 0 for a hole.
    chunks: Vec<u64>,
    log: bool,
    positioned: bool,
}

impl PmFs {
    /// Opens the file system in `pool` for the database whose identity `how` names (see
    /// [`PmFsOpen`]): runs the pool's open protocol ([`super::open_pm_owners`]) with the file
    /// system as the pool's one owner, which rebuilds the pool's allocator, and returns the
    /// file system. A pool that also holds another structure (a root the file system does not
    /// own) is refused: the engine opens such pools with all their owners at once. `location`
    /// names the pool in errors.
    pub fn open(pool: Arc<PmPool>, location: impl Into<String>, how: PmFsOpen) -> Result<PmFs> {
        let location = location.into();
        let mut owner = PmFsOwner::new(Arc::clone(&pool), &location, how.identity())?;
        open_pm_owners(&pool, &location, how, &mut [&mut owner])?;
        Ok(owner.into_fs())
    }

    /// A file system not opened yet (no directory), for [`PmFsOwner`].
    fn unopened(pool: Arc<PmPool>, location: String, identity: u128) -> Result<PmFs> {
        let chunk = pool.chunk_size();
        if chunk < PMFS_MIN_CHUNK_BYTES {
            return Err(Error::InvalidArgument(format!(
                "{location}: chunk size {chunk} is below PmFs's minimum of \
                 {PMFS_MIN_CHUNK_BYTES} bytes"
            )));
        }
        Ok(PmFs {
            data_per_chunk: chunk - CHUNK_HEADER_BYTES,
            pool,
            location,
            identity,
            dir: Arc::new(Mutex::new(Directory {
                files: HashMap::new(),
                free_entries: Vec::new(),
                chunks: Vec::new(),
            })),
            space: Arc::new(Mutex::new(SpaceState {
                policy: PmSpacePolicy::default(),
                log_chunks: Arc::new(AtomicU64::new(0)),
                manifest_chunks: Arc::new(AtomicU64::new(0)),
            })),
        })
    }

    /// Entries a directory chunk holds.
    fn entries_per_chunk(&self) -> u64 {
        (self.pool.chunk_size() - DIR_HEADER_BYTES) / ENTRY_BYTES
    }

    /// Allocates a zeroed chunk and persists a directory header (no next chunk) in it; the chunk
    /// is referenced by nothing yet. Returns its offset.
    fn new_directory_chunk(&self) -> Result<u64> {
        let pool = &self.pool;
        let dir = pool.allocate_zeroed_chunk(0)?;
        pool.fence();
        let mut header = [0u8; DIR_CRC_OFFSET + 4];
        header[0..8].copy_from_slice(&DIR_MAGIC.to_le_bytes());
        header[8..16].copy_from_slice(&self.entries_per_chunk().to_le_bytes());
        let crc = crate::util::crc::crc32c(&header[..DIR_CRC_OFFSET]);
        header[DIR_CRC_OFFSET..].copy_from_slice(&crc.to_le_bytes());
        let written = pool
            .write(dir, &header)
            .and_then(|()| pool.persist(dir, header.len() as u64));
        if let Err(e) = written {
            pool.free_chunk(dir);
            return Err(e.into());
        }
        Ok(dir)
    }

    /// The free entries of directory chunk `dir`, all of them, in the order `pop` takes them
    /// (lowest offset first).
    fn entries_of(&self, dir: u64) -> impl Iterator<Item = u64> + '_ {
        (0..self.entries_per_chunk())
            .rev()
            .map(move |i| self.entry_offset(dir, i))
    }

    /// Writes an empty directory in a new chunk and persists it; returns its offset (to be
    /// published as the named root). Called after the allocator was rebuilt.
    fn format(&self) -> Result<u64> {
        let dir = self.new_directory_chunk()?;
        let mut d = self.dir.lock();
        d.files.clear();
        d.free_entries = self.entries_of(dir).collect();
        d.chunks = vec![dir];
        let space = self.space.lock();
        space.log_chunks.store(0, Ordering::Release);
        space.manifest_chunks.store(0, Ordering::Release);
        drop(space);
        Ok(dir)
    }

    /// Adds a chunk of free entries at the end of the directory (see the module docs for the
    /// persist order). A directory chunk is metadata: it is taken only where a table's chunk
    /// could be, so growth never eats the logs' reserve.
    fn grow_directory(&self, dir: &mut Directory) -> Result<()> {
        {
            let space = self.space.lock();
            let keep = table_reserve(&space);
            let free = self.pool.free_chunks();
            if free <= keep {
                return Err(Error::NoSpace(format!(
                    "{}: no PM chunk to grow the directory beyond its {} files ({free} of {} \
                     chunks free, {keep} held back for logs)",
                    self.location,
                    dir.files.len(),
                    self.pool.chunk_count() - 1
                )));
            }
        }
        let new = self.new_directory_chunk()?;
        let last = *dir.chunks.last().expect("an opened directory has a chunk");
        if let Err(e) = self
            .pool
            .store_u64_persist(last + DIR_NEXT_OFFSET, encode_link(last, new))
        {
            self.pool.free_chunk(new);
            return Err(e.into());
        }
        dir.chunks.push(new);
        dir.free_entries.extend(self.entries_of(new));
        Ok(())
    }

    fn bad(&self, why: String) -> Error {
        Error::corruption(self.location.clone(), why)
    }

    /// Validates the directory's chunks from `root` on, following their links; returns them in
    /// chain order.
    fn read_directory(&self, root: u64) -> Result<Vec<u64>> {
        let max_chunks = self.pool.size() / self.pool.chunk_size();
        let mut chunks = Vec::new();
        let mut c = root;
        while c != 0 {
            if chunks.contains(&c) || chunks.len() as u64 > max_chunks {
                return Err(self.bad(format!("the PM directory's chunks loop at offset {c}")));
            }
            self.check_directory_header(c)?;
            chunks.push(c);
            let word = self.pool.load_u64(c + DIR_NEXT_OFFSET)?;
            c = decode_link(c, word).ok_or_else(|| {
                self.bad(format!(
                    "the next-chunk link of PM directory chunk {c} fails its checksum"
                ))
            })?;
        }
        Ok(chunks)
    }

    /// Validates the directory header at `at`.
    fn check_directory_header(&self, at: u64) -> Result<()> {
        let pool = &self.pool;
        let chunk = pool.chunk_size();
        if !at.is_multiple_of(chunk) || at == 0 || at >= pool.size() {
            return Err(self.bad(format!("directory chunk {at} is not a chunk of the pool")));
        }
        let mut header = [0u8; DIR_CRC_OFFSET + 4];
        pool.read(at, &mut header)?;
        let word = |o: usize| u64::from_le_bytes(header[o..o + 8].try_into().expect("8 bytes"));
        match word(0) {
            DIR_MAGIC => {}
            other => {
                if let Some((_, name)) = DIR_MAGIC_OLD.iter().find(|m| m.0 == other) {
                    return Err(Error::InvalidArgument(format!(
                        "{}: the pool holds a file system of an older TierKV format ({name}); \
                         this build reads TKVPMFS4",
                        self.location
                    )));
                }
                return Err(self.bad(format!(
                    "no PM directory magic at offset {at} (found {other:#018x})"
                )));
            }
        }
        let stored = u32::from_le_bytes(header[DIR_CRC_OFFSET..].try_into().expect("4 bytes"));
        if stored != crate::util::crc::crc32c(&header[..DIR_CRC_OFFSET]) {
            return Err(self.bad(format!(
                "PM directory header at offset {at} fails its checksum"
            )));
        }
        if word(8) != self.entries_per_chunk() {
            return Err(self.bad(format!(
                "directory entry count {} does not fit the chunk size",
                word(8)
            )));
        }
        Ok(())
    }

    /// Reads and checks every live entry of the directory chunks `dir` and its chunk chain.
    fn scan_entries(&self, dir: &[u64]) -> Result<Vec<FoundFile>> {
        let pool = &self.pool;
        let per_chunk = self.entries_per_chunk();
        let mut seen: std::collections::HashSet<u64> = dir.iter().copied().collect();
        let mut out = Vec::new();
        let all = dir
            .iter()
            .flat_map(|&d| (0..per_chunk).map(move |i| (d, i)))
            .enumerate();
        for (i, (d, within)) in all {
            let e = self.entry_offset(d, within);
            let state = pool.load_u64(e)?;
            if state == 0 {
                continue;
            }
            let mut raw = [0u8; ENTRY_BYTES as usize];
            pool.read(e, &mut raw)?;
            let field = |o: usize| u64::from_le_bytes(raw[o..o + 8].try_into().expect("8 bytes"));
            let half = |o: usize| u32::from_le_bytes(raw[o..o + 4].try_into().expect("4 bytes"));
            let (first, name_len, flags) = (field(16), half(24) as usize, half(28));
            let damaged = |what: &str| {
                self.bad(format!(
                    "PM directory entry {i} (offset {e}): {what} fails its checksum"
                ))
            };
            if name_len > NAME_MAX {
                return Err(damaged("the name length"));
            }
            let name = &raw[ENTRY_NAME_OFFSET..ENTRY_NAME_OFFSET + name_len];
            if state != live_state(e, first, flags, name) {
                return Err(damaged("the entry (state, chunk, flags or name)"));
            }
            let size = decode_checked(e, field(8)).ok_or_else(|| damaged("the size"))?;
            let name = String::from_utf8(name.to_vec())
                .map_err(|_| self.bad(format!("PM directory entry {i} has a bad name")))?;
            let positioned = flags & FLAG_POSITIONED != 0;
            let chunks = self.chain(&name, first, positioned, &mut seen)?;
            if size > chunks.len() as u64 * self.data_per_chunk {
                return Err(self.bad(format!(
                    "PM file {name}: size {size} exceeds its {} chunks",
                    chunks.len()
                )));
            }
            out.push(FoundFile {
                name,
                entry: e,
                size,
                chunks,
                log: flags & FLAG_LOG != 0,
                positioned,
            });
        }
        Ok(out)
    }

    /// The chunk chain of a file starting at `first`, by index (0 for a hole); every chunk is
    /// checked (alignment, bounds, magic, link check, position word of a `positioned` file) and
    /// may belong to one file only.
    fn chain(
        &self,
        name: &str,
        first: u64,
        positioned: bool,
        seen: &mut std::collections::HashSet<u64>,
    ) -> Result<Vec<u64>> {
        let pool = &self.pool;
        let chunk = pool.chunk_size();
        let max_chunks = pool.size() / chunk;
        let mut chunks = Vec::new();
        let mut c = first;
        while c != 0 {
            if !c.is_multiple_of(chunk)
                || c >= pool.size()
                || !seen.insert(c)
                || chunks.len() as u64 > max_chunks
            {
                return Err(self.bad(format!("PM file {name}: bad chunk pointer {c}")));
            }
            if pool.load_u64(c + 8)? != CHUNK_MAGIC {
                return Err(self.bad(format!("PM file {name}: chunk {c} has no chunk magic")));
            }
            let at = c + CHUNK_POSITION_OFFSET;
            let word = if positioned { pool.load_u64(at)? } else { 0 };
            if word != 0 {
                let index = decode_checked(at, word).ok_or_else(|| {
                    self.bad(format!(
                        "PM file {name}: the position word of chunk {c} fails its checksum"
                    ))
                })?;
                if chunks.is_empty() || index < chunks.len() as u64 || index > max_chunks {
                    return Err(self.bad(format!(
                        "PM file {name}: chunk {c} claims position {index} after {} chunks",
                        chunks.len()
                    )));
                }
                chunks.resize(index as usize, 0);
            }
            chunks.push(c);
            let word = pool.load_u64(c)?;
            c = decode_link(c, word).ok_or_else(|| {
                self.bad(format!(
                    "PM file {name}: the next-chunk link of chunk {c} fails its checksum"
                ))
            })?;
        }
        if chunks.is_empty() {
            return Err(self.bad(format!("PM file {name}: no first chunk")));
        }
        Ok(chunks)
    }

    /// Takes the files found at open into the directory (no pool write); returns every chunk
    /// the file system references: the directory's and the files'.
    fn install(&self, dir_chunks: Vec<u64>, files: Vec<FoundFile>) -> Vec<u64> {
        let mut live = dir_chunks.clone();
        let mut dir = self.dir.lock();
        let used: std::collections::HashSet<u64> = files.iter().map(|f| f.entry).collect();
        // Later chunks first, so that `pop` hands out the lowest free entry.
        dir.free_entries = dir_chunks
            .iter()
            .rev()
            .flat_map(|&d| self.entries_of(d))
            .filter(|e| !used.contains(e))
            .collect();
        dir.chunks = dir_chunks;
        let (log_chunks, manifest_chunks) = {
            let space = self.space.lock();
            (
                Arc::clone(&space.log_chunks),
                Arc::clone(&space.manifest_chunks),
            )
        };
        for f in files {
            let held = f.chunks.iter().filter(|&&c| c != 0);
            live.extend(held.clone());
            let manifest = f.log && is_manifest_name(&f.name);
            let log_space = f.log && !manifest;
            let counter = if manifest {
                Some(&manifest_chunks)
            } else {
                log_space.then_some(&log_chunks)
            };
            if let Some(counter) = counter {
                counter.fetch_add(held.count() as u64, Ordering::AcqRel);
            }
            dir.files.insert(
                f.name,
                Arc::new(PmFile {
                    pool: Arc::clone(&self.pool),
                    entry: f.entry,
                    chunks: RwLock::new(f.chunks),
                    positioned: f.positioned,
                    size: AtomicU64::new(f.size),
                    removed: AtomicBool::new(false),
                    log_chunks: log_space.then(|| Arc::clone(&log_chunks)),
                    manifest_chunks: manifest.then(|| Arc::clone(&manifest_chunks)),
                }),
            );
        }
        live
    }

    fn entry_offset(&self, dir: u64, i: u64) -> u64 {
        dir + DIR_HEADER_BYTES + i * ENTRY_BYTES
    }

    /// The pool.
    pub fn pool(&self) -> &Arc<PmPool> {
        &self.pool
    }

    /// The identity of the database this file system belongs to.
    pub fn identity(&self) -> u128 {
        self.identity
    }

    /// Data bytes a chunk holds (the chunk size less its header).
    pub fn data_per_chunk(&self) -> u64 {
        self.data_per_chunk
    }

    /// Names of the files in the pool.
    pub fn file_names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.dir.lock().files.keys().cloned().collect();
        v.sort();
        v
    }

    /// Sets how chunks are shared between logs and tables.
    pub fn set_space_policy(&self, policy: PmSpacePolicy) {
        let mut s = self.space.lock();
        s.policy = policy;
        // The pool's other structures (trees' leaves) leave what a log must leave, and the
        // next log's worth.
        let manifests = Arc::clone(&s.manifest_chunks);
        self.pool.set_held_back(Some(Box::new(move || {
            log_reserve(&policy, manifests.load(Ordering::Acquire)) + policy.structure_keep_chunks
        })));
    }

    /// The pool's space as this file system accounts it.
    pub fn space(&self) -> PmSpace {
        let s = self.space.lock();
        PmSpace {
            free_chunks: self.pool.free_chunks(),
            log_chunks: s.log_chunks.load(Ordering::Acquire),
            manifest_chunks: s.manifest_chunks.load(Ordering::Acquire),
            policy: s.policy,
        }
    }

    /// Chunks a table may still take: the free chunks but those held back for logs and
    /// manifests.
    pub fn chunks_for_tables(&self) -> u64 {
        let s = self.space.lock();
        self.pool.free_chunks().saturating_sub(table_reserve(&s))
    }

    /// Log files in the pool (a database's WALs: the active one and those not yet retired).
    pub fn log_file_count(&self) -> usize {
        self.dir
            .lock()
            .files
            .values()
            .filter(|f| f.log_chunks.is_some())
            .count()
    }

    /// Creates a log that may take the spare chunk (see [`PmSpacePolicy`]): recovery's new WAL.
    pub fn create_log_using_spare(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.create_file(path, ChunkClass::LogUsingSpare)
    }

    /// Creates a persistent memtable's file: counted as log space (the design's log), its
    /// chunks not zeroed.
    pub(crate) fn create_buffer(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.create_file(path, ChunkClass::Buffer)
    }

    fn get(&self, path: &Path) -> Result<Arc<PmFile>> {
        let name = name_of(path)?;
        self.dir
            .lock()
            .files
            .get(&name)
            .cloned()
            .ok_or_else(|| not_found("open", path))
    }

    /// Allocates a chunk of `class` with a persisted, unlinked header; a log's chunk has its
    /// data area zeroed (non-temporal stores), durable with the header.
    fn new_chunk(&self, class: ChunkClass) -> Result<u64> {
        let space = self.space.lock();
        let free = self.pool.free_chunks();
        let policy = space.policy;
        let manifests = space.manifest_chunks.load(Ordering::Acquire);
        let keep = match class {
            ChunkClass::Table => table_reserve(&space),
            ChunkClass::Log | ChunkClass::Buffer => log_reserve(&policy, manifests),
            ChunkClass::Manifest => manifest_keep(&policy),
            ChunkClass::LogUsingSpare => 0,
        };
        if free <= keep {
            return Err(Error::NoSpace(format!(
                "{}: no PM chunk for a {} ({free} of {} chunks free, {keep} held back for logs \
                 and manifests)",
                self.location,
                match class {
                    ChunkClass::Table => "table",
                    ChunkClass::Manifest => "manifest",
                    _ => "log",
                },
                self.pool.chunk_count() - 1
            )));
        }
        let c = if class == ChunkClass::Table {
            self.pool.allocate_chunk()?
        } else if class == ChunkClass::Manifest {
            let c = self.pool.allocate_zeroed_chunk(CHUNK_HEADER_BYTES)?;
            space.manifest_chunks.fetch_add(1, Ordering::AcqRel);
            c
        } else if class == ChunkClass::Buffer {
            let c = self.pool.allocate_chunk()?;
            space.log_chunks.fetch_add(1, Ordering::AcqRel);
            c
        } else {
            let c = self.pool.allocate_zeroed_chunk(CHUNK_HEADER_BYTES)?;
            space.log_chunks.fetch_add(1, Ordering::AcqRel);
            c
        };
        drop(space);
        // Next link 0, the magic, position word 0 (a reused chunk may hold an old one).
        let mut h = [0u8; 24];
        h[8..16].copy_from_slice(&CHUNK_MAGIC.to_le_bytes());
        let written = self
            .pool
            .write(c, &h)
            .and_then(|()| self.pool.persist(c, 24));
        if let Err(e) = written {
            self.release_chunk(c, class);
            return Err(e.into());
        }
        Ok(c)
    }

    /// Gives back a chunk of `class` that was never linked.
    fn release_chunk(&self, c: u64, class: ChunkClass) {
        self.pool.free_chunk(c);
        if class.is_log_space() {
            self.space.lock().log_chunks.fetch_sub(1, Ordering::AcqRel);
        } else if class == ChunkClass::Manifest {
            self.space
                .lock()
                .manifest_chunks
                .fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// Creates a file whose chunks are of `class` (a log's are zeroed before they are linked).
    fn create_file(&self, path: &Path, class: ChunkClass) -> Result<Box<dyn WritableFile>> {
        let name = name_of(path)?;
        if self.dir.lock().files.contains_key(&name) {
            self.remove_name(&name, path)?;
        }
        let entry = {
            let mut dir = self.dir.lock();
            if dir.free_entries.is_empty() {
                self.grow_directory(&mut dir)?;
            }
            dir.free_entries
                .pop()
                .expect("the directory has a free entry")
        };
        let chunk = match self.new_chunk(class) {
            Ok(c) => c,
            Err(e) => {
                self.dir.lock().free_entries.push(entry);
                return Err(e);
            }
        };
        let log = class != ChunkClass::Table;
        let flags = FLAG_POSITIONED | if log { FLAG_LOG } else { 0 };
        let mut raw = vec![0u8; ENTRY_NAME_OFFSET + name.len()];
        raw[8..16].copy_from_slice(&encode_checked(entry, 0).to_le_bytes());
        raw[16..24].copy_from_slice(&chunk.to_le_bytes());
        raw[24..28].copy_from_slice(&(name.len() as u32).to_le_bytes());
        raw[28..32].copy_from_slice(&flags.to_le_bytes());
        raw[ENTRY_NAME_OFFSET..].copy_from_slice(name.as_bytes());
        let published = self
            .pool
            .write(entry + 8, &raw[8..])
            .and_then(|()| self.pool.persist(entry + 8, raw.len() as u64 - 8))
            .and_then(|()| {
                self.pool
                    .store_u64_persist(entry, live_state(entry, chunk, flags, name.as_bytes()))
            });
        if let Err(e) = published {
            self.release_chunk(chunk, class);
            self.dir.lock().free_entries.push(entry);
            return Err(with_path(e.into(), "create", path));
        }
        let file = Arc::new(PmFile {
            pool: Arc::clone(&self.pool),
            entry,
            chunks: RwLock::new(vec![chunk]),
            positioned: true,
            size: AtomicU64::new(0),
            removed: AtomicBool::new(false),
            log_chunks: class
                .is_log_space()
                .then(|| Arc::clone(&self.space.lock().log_chunks)),
            manifest_chunks: (class == ChunkClass::Manifest)
                .then(|| Arc::clone(&self.space.lock().manifest_chunks)),
        });
        self.dir.lock().files.insert(name, Arc::clone(&file));
        Ok(Box::new(PmWritable {
            fs: self.clone(),
            file,
            path: path.to_path_buf(),
            class: if class == ChunkClass::LogUsingSpare {
                ChunkClass::Log
            } else {
                class
            },
            chunk_count: 1,
            last_chunk: chunk,
            write_chunk: (0, chunk),
            written: 0,
            persisted: 0,
            msynced: 0,
            to_write_back: Vec::new(),
        }))
    }

    fn remove_name(&self, name: &str, path: &Path) -> Result<()> {
        let mut dir = self.dir.lock();
        let Some(f) = dir.files.remove(name) else {
            return Err(not_found("remove", path));
        };
        self.pool.store_u64_persist(f.entry, 0)?;
        dir.free_entries.push(f.entry);
        f.removed.store(true, Ordering::Release);
        Ok(())
    }
}

impl PmFs {
    /// A [`PmWords`] handle on the file at `path`.
    pub(crate) fn words(&self, path: &Path) -> Result<PmWords> {
        Ok(PmWords {
            fs: self.clone(),
            file: self.get(path)?,
            path: path.to_path_buf(),
        })
    }

    /// Frees the chunks of the finished file at `path` whose data lies wholly inside the file
    /// offsets `[start, end)`, except its first and last chunk (module doc, "punch"); returns
    /// the bytes of pool freed. The file keeps its size; a later read of a freed range is
    /// `Corruption`. A file of the format before position words (not `positioned`) is left
    /// whole. REQUIRES: no writer appends to the file, and no reader will read the range again
    /// (readers holding the file may still be reading elsewhere in it).
    pub(crate) fn punch(&self, path: &Path, start: u64, end: u64) -> Result<u64> {
        let file = self.get(path)?;
        if !file.positioned {
            return Ok(0);
        }
        let dpc = self.data_per_chunk;
        let mut chunks = file.chunks.write();
        let len = chunks.len() as u64;
        let first = start.div_ceil(dpc).max(1);
        let last = (end / dpc).min(len.saturating_sub(1));
        let hole: Vec<u64> = (first..last).filter(|&i| chunks[i as usize] != 0).collect();
        if hole.is_empty() {
            return Ok(0);
        }
        // The chunks kept around the hole: chunk 0 and the last chunk are never holes.
        let before = (0..first)
            .rev()
            .find(|&i| chunks[i as usize] != 0)
            .unwrap_or(0);
        let after = (last..len)
            .find(|&i| chunks[i as usize] != 0)
            .unwrap_or(len - 1);
        let (pred, succ) = (chunks[before as usize], chunks[after as usize]);
        let at = succ + CHUNK_POSITION_OFFSET;
        self.pool
            .store_u64_persist(at, encode_checked(at, after))
            .and_then(|()| self.pool.store_u64_persist(pred, encode_link(pred, succ)))
            .map_err(|e| with_path(e.into(), "punch", path))?;
        for &i in &hole {
            self.pool.free_chunk(chunks[i as usize]);
            chunks[i as usize] = 0;
        }
        Ok(hole.len() as u64 * self.pool.chunk_size())
    }

    /// The pool offset of byte `offset` of the file at `path` (damage tests).
    #[cfg(test)]
    pub(crate) fn pool_offset_of(&self, path: &Path, offset: u64) -> Result<u64> {
        let file = self.get(path)?;
        let chunks = file.chunks.read();
        let dpc = self.data_per_chunk;
        Ok(chunks[(offset / dpc) as usize] + CHUNK_HEADER_BYTES + offset % dpc)
    }
}

struct NoLock;

impl FileLock for NoLock {}

impl FileSystem for PmFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.create_file(path, ChunkClass::Table)
    }

    fn create_log(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let manifest = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(is_manifest_name);
        let class = if manifest {
            ChunkClass::Manifest
        } else {
            ChunkClass::Log
        };
        self.create_file(path, class)
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
