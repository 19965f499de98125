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

use super::pm_open::{open_pm_structures, PmFsOpen, PmOwner};
use super::{FileLock, FileSystem, RandomAccessFile, WritableFile};
use crate::{Error, Result};
use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use tierkv_pm::PmPool;

/// The named root (in the pool's root directory) that holds the directory chunk's offset.
pub const PMFS_ROOT_NAME: &str = "pmfs";
const DIR_MAGIC: u64 = u64::from_le_bytes(*b"TKVPMFS4");
/// The directory magics of older formats: the first had no identity and unchecked size fields,
/// the second kept the identity in the directory and was found through raw root slot 0, the
/// third had a directory of one chunk (a build of that format would not see the files of a
/// grown directory, so this one does not share its magic).
const DIR_MAGIC_OLD: [(u64, &str); 3] = [
    (u64::from_le_bytes(*b"TKVPMFS1"), "TKVPMFS1"),
    (u64::from_le_bytes(*b"TKVPMFS2"), "TKVPMFS2"),
    (u64::from_le_bytes(*b"TKVPMFS3"), "TKVPMFS3"),
];
const CHUNK_MAGIC: u64 = u64::from_le_bytes(*b"TKVCHUNK");
const DIR_HEADER_BYTES: u64 = 64;
const DIR_CRC_OFFSET: usize = 16;
/// Where a directory chunk keeps the link to the next directory chunk.
const DIR_NEXT_OFFSET: u64 = 24;
const ENTRY_BYTES: u64 = 128;
const ENTRY_NAME_OFFSET: usize = 32;
const CHUNK_HEADER_BYTES: u64 = 64;
const NAME_MAX: usize = 80;
const LIVE_TAG: u64 = 0x4556_494c;
const FLAG_LOG: u32 = 1;
/// Entry flag: the file's chunks carry position words (module doc).
const FLAG_POSITIONED: u32 = 2;
/// Where a chunk keeps its position word.
const CHUNK_POSITION_OFFSET: u64 = 16;
/// Sizes live in the low 48 bits of the size word.
const SIZE_MAX: u64 = (1 << 48) - 1;
/// Chunk offsets are multiples of the chunk size, so their low 16 bits hold a link check.
pub const PMFS_MIN_CHUNK_BYTES: u64 = 1 << 16;
/// Appended pieces at least this large are copied with non-temporal stores (durable at the next
/// fence, no write-back loop, no cache pollution); smaller ones are stored and written back.
const NT_MIN_BYTES: usize = 1024;

/// A 16-bit check of two words (entry sizes, chunk links).
pub(crate) fn check16(a: u64, b: u64) -> u64 {
    let mut buf = [0u8; 16];
    buf[..8].copy_from_slice(&a.to_le_bytes());
    buf[8..].copy_from_slice(&b.to_le_bytes());
    let c = crate::util::crc::crc32c(&buf);
    u64::from((c >> 16) ^ (c & 0xffff))
}

/// A checked word: the 48-bit `value` (a size, an offset) with `check16(at, value)` above it,
/// `at` naming where it is stored, so that a flipped bit or a word of another place fails
/// [`decode_checked`]. Stored and loaded as one 8-byte atomic word.
pub(crate) fn encode_checked(at: u64, value: u64) -> u64 {
    debug_assert!(value <= SIZE_MAX);
    value | check16(at, value) << 48
}

/// The value of the checked word `word` stored at `at`, or `None` if its check fails.
pub(crate) fn decode_checked(at: u64, word: u64) -> Option<u64> {
    let value = word & SIZE_MAX;
    (word >> 48 == check16(at, value)).then_some(value)
}

fn encode_link(from: u64, to: u64) -> u64 {
    if to == 0 {
        0
    } else {
        to | check16(from, to)
    }
}

fn decode_link(from: u64, word: u64) -> Option<u64> {
    if word == 0 {
        return Some(0);
    }
    let to = word & !0xffff;
    (word & 0xffff == check16(from, to)).then_some(to)
}

/// The live state word of an entry: the tag and the checksum of its fixed fields.
fn live_state(entry: u64, first_chunk: u64, flags: u32, name: &[u8]) -> u64 {
    let mut b = Vec::with_capacity(24 + name.len());
    b.extend_from_slice(&entry.to_le_bytes());
    b.extend_from_slice(&first_chunk.to_le_bytes());
    b.extend_from_slice(&(name.len() as u32).to_le_bytes());
    b.extend_from_slice(&flags.to_le_bytes());
    b.extend_from_slice(name);
    u64::from(crate::util::crc::crc32c(&b)) << 32 | LIVE_TAG
}

/// How chunks are shared between logs and tables (see the module docs). Both counts are in
/// chunks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PmSpacePolicy {
    /// Chunks kept free in steady state: only a log created with
    /// [`PmFs::create_log_using_spare`] may take them.
    pub spare_chunks: u64,
    /// Chunks the logs together may hold; tables leave the part of it the logs do not hold
    /// free.
    pub log_quota_chunks: u64,
    /// The part of `spare_chunks` a manifest (`MANIFEST-NNNNNN`, a record log whose chunks
    /// are not log space) may take: with the manifest in the pool, tables and logs keep room
    /// for it to grow and for the next one an open or a rollover starts, so a commit never
    /// finds a pool the tables filled.
    pub manifest_chunks: u64,
    /// Chunks the pool's structures that are not files (a tree's leaves) leave free besides
    /// what a log must leave: the next log's worth, so that a tree filling the pool never
    /// takes the chunk the log that records its writes needs next.
    pub structure_keep_chunks: u64,
}

/// What a chunk is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ChunkClass {
    Table,
    Log,
    LogUsingSpare,
    /// A persistent memtable: log space (it is the design's log), chunks not zeroed (nothing
    /// reads it as a record log).
    Buffer,
    /// A manifest: zeroed as a log's (it is read as a record log), not log space; may take the
    /// spare chunks set aside for manifests.
    Manifest,
}

/// True for a manifest's file name: its chunks are [`ChunkClass::Manifest`], also when the
/// file system is opened again (the entry's flags say "log"; the name says which).
fn is_manifest_name(name: &str) -> bool {
    matches!(
        crate::version::parse_file_name(name),
        Some((crate::version::FileKind::Manifest, _))
    )
}

impl ChunkClass {
    /// Counted in the logs' share of the pool ([`PmSpacePolicy::log_quota_chunks`]).
    fn is_log_space(self) -> bool {
        matches!(
            self,
            ChunkClass::Log | ChunkClass::LogUsingSpare | ChunkClass::Buffer
        )
    }
}

/// A snapshot of the pool's space as `PmFs` accounts it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PmSpace {
    /// Chunks free in the pool.
    pub free_chunks: u64,
    /// Chunks held by log files.
    pub log_chunks: u64,
    /// Chunks held by manifests.
    pub manifest_chunks: u64,
    /// The policy in force.
    pub policy: PmSpacePolicy,
}

impl PmSpace {
    /// Chunks a log may still take (all free chunks but the spare).
    pub fn chunks_for_logs(&self) -> u64 {
        self.free_chunks
            .saturating_sub(log_reserve(&self.policy, self.manifest_chunks))
    }
}

struct SpaceState {
    policy: PmSpacePolicy,
    /// Chunks held by log files (live or removed but still read).
    log_chunks: Arc<AtomicU64>,
    /// Chunks held by manifests (live or removed but still read).
    manifest_chunks: Arc<AtomicU64>,
}

/// Chunks a manifest must leave free: the spare that is not the manifests' (recovery's WAL's).
fn manifest_keep(policy: &PmSpacePolicy) -> u64 {
    policy.spare_chunks.saturating_sub(policy.manifest_chunks)
}

/// Chunks a log must leave free: the WAL's spare plus the part of the manifests' chunks they
/// do not hold yet.
fn log_reserve(policy: &PmSpacePolicy, manifest_held: u64) -> u64 {
    manifest_keep(policy) + policy.manifest_chunks.saturating_sub(manifest_held)
}

/// Chunks a table (or the directory) must leave free: what a log must, plus what the logs may
/// yet grow into.
fn table_reserve(space: &SpaceState) -> u64 {
    let logs = space.log_chunks.load(Ordering::Acquire);
    let manifests = space.manifest_chunks.load(Ordering::Acquire);
    log_reserve(&space.policy, manifests) + space.policy.log_quota_chunks.saturating_sub(logs)
}

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
    /// [`PmFsOpen`]): runs the pool's open protocol with every structure the engine keeps in a
    /// pool ([`super::open_pm_structures`]), which rebuilds the pool's allocator, and returns
    /// the file system. `location` names the pool in errors.
    pub fn open(pool: Arc<PmPool>, location: impl Into<String>, how: PmFsOpen) -> Result<PmFs> {
        Ok(open_pm_structures(&pool, &location.into(), how, Default::default())?.pmfs)
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

/// [`PmFs`] as an owner of a pool's chunks, for the open protocol
/// ([`super::open_pm_owners`]): its root is [`PMFS_ROOT_NAME`]; opening reads the directory and
/// every file's chunk chain (no write), creating writes an empty directory. After the protocol,
/// [`PmFsOwner::into_fs`] gives the file system.
pub struct PmFsOwner {
    fs: PmFs,
    /// Files found by `open` that hold data (not manifests or temporary files).
    files: usize,
}

impl PmFsOwner {
    /// The file system of `pool` for the database `identity`, not opened yet. A chunk size
    /// below [`PMFS_MIN_CHUNK_BYTES`] is `InvalidArgument`. `location` names the pool in
    /// errors.
    pub fn new(
        pool: Arc<PmPool>,
        location: impl Into<String>,
        identity: u128,
    ) -> Result<PmFsOwner> {
        Ok(PmFsOwner {
            fs: PmFs::unopened(pool, location.into(), identity)?,
            files: 0,
        })
    }

    /// The file system, once the protocol opened or created it.
    pub fn into_fs(self) -> PmFs {
        self.fs
    }
}

impl PmOwner for PmFsOwner {
    fn root_name(&self) -> &str {
        PMFS_ROOT_NAME
    }

    fn open(&mut self, root: u64) -> Result<Vec<u64>> {
        let dir = self.fs.read_directory(root)?;
        let files = self.fs.scan_entries(&dir)?;
        use crate::version::FileKind;
        let names: Vec<String> = files.iter().map(|f| f.name.clone()).collect();
        let chunks = self.fs.install(dir, files);
        // Temporary files, and manifests that name no file and no WAL, hold no data: a pool
        // with nothing else is what a creation that stopped before `CURRENT` existed leaves
        // (its manifest in the pool). Read only: the allocator is not rebuilt yet.
        self.files = names
            .iter()
            .filter(|name| match crate::version::parse_file_name(name) {
                Some((FileKind::Temp, _)) => false,
                Some((FileKind::Manifest, _)) => {
                    !crate::db::describes_empty_database(&self.fs, Path::new(name.as_str()))
                }
                _ => true,
            })
            .count();
        Ok(chunks)
    }

    fn holdings(&self) -> Option<String> {
        match self.files {
            0 => None,
            1 => Some("1 file".to_string()),
            n => Some(format!("{n} files")),
        }
    }

    fn missing(&mut self, how: PmFsOpen) -> Result<()> {
        match how {
            PmFsOpen::Create(_) => Ok(()),
            PmFsOpen::Existing(_) => Err(self.fs.bad(
                "the PM pool holds no TierKV file system (this database's pool was replaced \
                 or never written)"
                    .to_string(),
            )),
        }
    }

    fn create(&mut self) -> Result<u64> {
        self.files = 0;
        self.fs.format()
    }
}

struct PmWritable {
    fs: PmFs,
    file: Arc<PmFile>,
    path: PathBuf,
    /// The class of the file's later chunks (`Log` or `Table`).
    class: ChunkClass,
    /// Chunks of the file, and the offset of the last one (only this writer adds chunks).
    chunk_count: u64,
    last_chunk: u64,
    /// The chunk that receives the next appended byte: (index in the file, offset).
    write_chunk: (u64, u64),
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

    /// Links one more chunk at the end of the file.
    fn add_chunk(&mut self) -> Result<()> {
        let c = self.fs.new_chunk(self.class)?;
        let linked = self
            .fs
            .pool
            .store_u64_persist(self.last_chunk, encode_link(self.last_chunk, c));
        if let Err(e) = linked {
            self.fs.release_chunk(c, self.class);
            return Err(with_path(e.into(), "append", &self.path));
        }
        self.file.chunks.write().push(c);
        self.chunk_count += 1;
        self.last_chunk = c;
        Ok(())
    }
}

impl WritableFile for PmWritable {
    fn append(&mut self, mut data: &[u8]) -> Result<()> {
        let dpc = self.fs.data_per_chunk;
        if self.written + data.len() as u64 > SIZE_MAX {
            return Err(Error::InvalidArgument(format!(
                "{}: a PM file is limited to {SIZE_MAX} bytes",
                self.path.display()
            )));
        }
        while !data.is_empty() {
            let (idx, within) = (self.written / dpc, self.written % dpc);
            if idx == self.chunk_count {
                self.add_chunk()?;
            }
            if self.write_chunk.0 != idx {
                // Chunks linked ahead by `reserve` are looked up once each.
                self.write_chunk = (idx, self.file.chunks.read()[idx as usize]);
            }
            let n = (data.len() as u64).min(dpc - within) as usize;
            let at = self.write_chunk.1 + CHUNK_HEADER_BYTES + within;
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

    fn reserve(&mut self, additional: u64) -> Result<()> {
        let need = (self.written + additional).div_ceil(self.fs.data_per_chunk);
        while self.chunk_count < need {
            self.add_chunk()?;
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
        let entry = self.file.entry;
        pool.store_u64(entry + 8, encode_checked(entry, self.written))?;
        self.to_write_back.push((entry + 8, 8));
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

/// Reads `buf.len()` bytes at `offset` of `file`, whose content is its first `size` bytes.
fn read_file(
    fs: &PmFs,
    file: &PmFile,
    path: &Path,
    size: u64,
    offset: u64,
    buf: &mut [u8],
) -> Result<()> {
    let end = offset.checked_add(buf.len() as u64);
    if end.is_none_or(|e| e > size) {
        return Err(Error::io(
            "read",
            path,
            std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "read past the end of a PM file",
            ),
        ));
    }
    let chunks = file.chunks.read();
    let dpc = fs.data_per_chunk;
    let mut pos = offset;
    let mut out = &mut buf[..];
    while !out.is_empty() {
        let (idx, within) = (pos / dpc, pos % dpc);
        let n = (out.len() as u64).min(dpc - within) as usize;
        let at = chunk_at(&chunks, idx, path, pos)? + CHUNK_HEADER_BYTES + within;
        fs.pool.read(at, &mut out[..n])?;
        out = &mut out[n..];
        pos += n as u64;
    }
    Ok(())
}

/// Chunk `idx` of a file (`Corruption` naming `path` and file offset `pos` for a hole).
fn chunk_at(chunks: &[u64], idx: u64, path: &Path, pos: u64) -> Result<u64> {
    match chunks.get(idx as usize) {
        Some(&c) if c != 0 => Ok(c),
        _ => Err(Error::corruption(
            format!("{} at offset {pos}", path.display()),
            "read of a range whose chunks were freed",
        )),
    }
}

impl RandomAccessFile for PmReadable {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        read_file(&self.fs, &self.file, &self.path, self.size, offset, buf)
    }

    fn size(&self) -> u64 {
        self.size
    }
}

/// A handle on a PM file for a structure linked inside it (the persistent skiplist memtable):
/// reads up to the file's current persisted size, and 8-byte loads and persisted stores at
/// 8-aligned offsets inside it. The file's appends still go through its [`WritableFile`];
/// a store here changes bytes the file already holds, in place.
pub(crate) struct PmWords {
    fs: PmFs,
    file: Arc<PmFile>,
    path: PathBuf,
}

impl PmWords {
    /// The file's persisted size.
    pub(crate) fn size(&self) -> u64 {
        self.file.size.load(Ordering::Acquire)
    }

    /// Reads `buf.len()` bytes at `offset` (inside the persisted size).
    pub(crate) fn read(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        read_file(&self.fs, &self.file, &self.path, self.size(), offset, buf)
    }

    /// The pool offset of the word at file offset `offset`.
    fn word(&self, offset: u64) -> Result<u64> {
        if !offset.is_multiple_of(8) || offset + 8 > self.size() {
            return Err(Error::InvalidArgument(format!(
                "{}: word offset {offset} not 8-aligned inside the file",
                self.path.display()
            )));
        }
        let dpc = self.fs.data_per_chunk;
        let chunks = self.file.chunks.read();
        Ok(
            chunk_at(&chunks, offset / dpc, &self.path, offset)?
                + CHUNK_HEADER_BYTES
                + offset % dpc,
        )
    }

    /// The 8-byte word at `offset` (atomic, Acquire).
    pub(crate) fn load_u64(&self, offset: u64) -> Result<u64> {
        Ok(self.fs.pool.load_u64(self.word(offset)?)?)
    }

    /// Stores the 8-byte word at `offset` (atomic, Release) and persists it.
    pub(crate) fn store_u64_persist(&self, offset: u64, value: u64) -> Result<()> {
        Ok(self.fs.pool.store_u64_persist(self.word(offset)?, value)?)
    }

    /// Writes `data` at `offset` (inside the persisted size) in place and persists it: every
    /// line written back, then one fence per chunk the range touches (`msync` too in the
    /// pool's `Msync` mode). A crash before it returns leaves any mix of old and new bytes.
    pub(crate) fn write_persist(&self, offset: u64, data: &[u8]) -> Result<()> {
        let end = offset.checked_add(data.len() as u64);
        if end.is_none_or(|e| e > self.size()) {
            return Err(Error::InvalidArgument(format!(
                "{}: write of {} bytes at {offset} past the file's {} bytes",
                self.path.display(),
                data.len(),
                self.size()
            )));
        }
        let dpc = self.fs.data_per_chunk;
        let chunks = self.file.chunks.read();
        let mut pos = 0usize;
        while pos < data.len() {
            let at = offset + pos as u64;
            let (idx, within) = (at / dpc, at % dpc);
            let n = ((data.len() - pos) as u64).min(dpc - within) as usize;
            let pool_at = chunk_at(&chunks, idx, &self.path, at)? + CHUNK_HEADER_BYTES + within;
            self.fs.pool.write(pool_at, &data[pos..pos + n])?;
            self.fs.pool.persist(pool_at, n as u64)?;
            pos += n;
        }
        Ok(())
    }

    /// `msync`s the range `[offset, offset + len)` of the file (a sync write), whatever the
    /// pool's mode.
    pub(crate) fn msync(&self, offset: u64, len: u64) -> Result<()> {
        let dpc = self.fs.data_per_chunk;
        let chunks = self.file.chunks.read();
        let (mut pos, end) = (offset, (offset + len).min(self.size()));
        while pos < end {
            let (idx, within) = (pos / dpc, pos % dpc);
            let n = (end - pos).min(dpc - within);
            let c = chunk_at(&chunks, idx, &self.path, pos)?;
            self.fs.pool.msync(c + CHUNK_HEADER_BYTES + within, n)?;
            pos += n;
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use tierkv_pm::{PmPool, PoolOptions};

    /// The identity of the database the test file systems belong to.
    const ID: u128 = 0x1d;

    fn pool() -> Arc<PmPool> {
        let o = PoolOptions {
            size: 1 << 20,
            chunk_size: 64 << 10,
            ..PoolOptions::default()
        };
        PmPool::create_crash_sim(&o, true).unwrap()
    }

    /// Entries a 64 KiB directory chunk holds.
    const PER_CHUNK: u64 = ((64 << 10) - DIR_HEADER_BYTES) / ENTRY_BYTES;

    fn growth_pool_options(size: u64) -> PoolOptions {
        PoolOptions {
            size,
            chunk_size: 64 << 10,
            ..PoolOptions::default()
        }
    }

    /// Chunks in use: all but the free ones and the pool's header chunk.
    fn used_chunks(p: &PmPool) -> u64 {
        p.chunk_count() - p.free_chunks() - 1
    }

    /// The directory grows a chunk at a time past what one chunk holds; the files of every
    /// directory chunk survive a reopen; removed entries are reused before the directory grows
    /// again; a pool with no chunk left to grow into says so.
    #[test]
    fn the_directory_grows_past_one_chunk_and_survives_reopen() {
        let o = growth_pool_options(80 << 20);
        let p = PmPool::create_crash_sim(&o, false).unwrap();
        let fs = PmFs::open(Arc::clone(&p), "test", PmFsOpen::Create(ID)).unwrap();
        let per_chunk = PER_CHUNK;
        let n = per_chunk * 2 + 7;
        for i in 0..n {
            let mut w = fs.create(Path::new(&format!("/db/{i:06}.arr"))).unwrap();
            w.append(&i.to_le_bytes()).unwrap();
            w.flush().unwrap();
        }
        // Three directory chunks and one chunk per file.
        assert_eq!(fs.dir.lock().chunks.len(), 3);
        assert_eq!(used_chunks(&p), 3 + n);
        let img = p.crash_image(tierkv_pm::CrashImage::Strict).unwrap();
        let p2 = PmPool::open_crash_image(img, &o).unwrap();
        let fs2 = PmFs::open(Arc::clone(&p2), "test2", PmFsOpen::Existing(ID)).unwrap();
        assert_eq!(fs2.file_names().len() as u64, n);
        for i in [0, per_chunk - 1, per_chunk, 2 * per_chunk, n - 1] {
            let data = fs2.read_all(Path::new(&format!("/db/{i:06}.arr"))).unwrap();
            assert_eq!(data, i.to_le_bytes());
        }
        assert_eq!(used_chunks(&p2), 3 + n);
        // A removed entry is reused: no fourth directory chunk.
        for i in 0..10 {
            fs2.remove(Path::new(&format!("/db/{i:06}.arr"))).unwrap();
        }
        for i in 0..10 {
            fs2.create(Path::new(&format!("/db/new{i}.arr"))).unwrap();
        }
        assert_eq!(fs2.dir.lock().chunks.len(), 3);
        // Fill the pool: the create that needs a directory chunk and finds none is NoSpace
        // naming the directory.
        let small = growth_pool_options(1 << 20);
        let p3 = PmPool::create_crash_sim(&small, false).unwrap();
        let fs3 = PmFs::open(Arc::clone(&p3), "small", PmFsOpen::Create(ID)).unwrap();
        let mut created = 0;
        let err = loop {
            match fs3.create(Path::new(&format!("/db/{created:06}.arr"))) {
                Ok(_) => created += 1,
                Err(e) => break e,
            }
        };
        assert!(matches!(err, Error::NoSpace(_)), "{err}");
        assert_eq!(used_chunks(&p3), p3.chunk_count() - 1, "{created} files");
    }

    /// A crash at any fence while the directory grows loses no file created before and leaks
    /// no chunk: the new directory chunk is either linked (and reported) or free at the next
    /// open.
    #[test]
    fn a_crash_while_the_directory_grows_leaks_nothing() {
        use tierkv_pm::CrashImage;
        let o = growth_pool_options(40 << 20);
        let p = PmPool::create_crash_sim(&o, true).unwrap();
        let fs = PmFs::open(Arc::clone(&p), "test", PmFsOpen::Create(ID)).unwrap();
        let per_chunk = PER_CHUNK;
        // Tables of 0 bytes take one chunk each: fill the first directory chunk but for one
        // entry, then walk the fences of the last two creates (the second grows the directory).
        for i in 0..per_chunk - 1 {
            fs.create(Path::new(&format!("/db/{i:06}.arr"))).unwrap();
        }
        let done = Arc::new(AtomicU64::new(per_chunk - 1));
        let checked = Arc::new(AtomicU64::new(0));
        {
            let (done, checked) = (Arc::clone(&done), Arc::clone(&checked));
            let weak = Arc::downgrade(&p);
            let o = o.clone();
            p.set_fence_hook(Some(Box::new(move |fence| {
                let Some(p) = weak.upgrade() else { return };
                let done = done.load(Ordering::SeqCst);
                let kinds = [CrashImage::Strict, CrashImage::AllPending]
                    .into_iter()
                    .chain((0..4).map(|t| CrashImage::Torn(fence * 10 + t)));
                for kind in kinds {
                    let img = p.crash_image(kind).unwrap();
                    let p2 = PmPool::open_crash_image(img, &o).unwrap();
                    let fs2 = PmFs::open(Arc::clone(&p2), "img", PmFsOpen::Existing(ID))
                        .unwrap_or_else(|e| panic!("fence {fence} {kind:?}: {e}"));
                    let files = fs2.file_names().len() as u64;
                    assert!(
                        files == done || files == done + 1,
                        "fence {fence} {kind:?}: {files} files, {done} created"
                    );
                    let dir_chunks = fs2.dir.lock().chunks.len() as u64;
                    assert_eq!(
                        used_chunks(&p2),
                        dir_chunks + files,
                        "fence {fence} {kind:?}: a chunk leaked"
                    );
                    checked.fetch_add(1, Ordering::SeqCst);
                }
            })));
        }
        for i in per_chunk - 1..per_chunk + 1 {
            fs.create(Path::new(&format!("/db/{i:06}.arr"))).unwrap();
            done.fetch_add(1, Ordering::SeqCst);
        }
        p.set_fence_hook(None);
        assert_eq!(fs.dir.lock().chunks.len(), 2);
        assert!(
            checked.load(Ordering::SeqCst) >= 6 * 4,
            "too few fences walked"
        );
    }

    /// A file of `chunks` full chunks plus 100 bytes, each byte a function of its offset.
    fn spanning_file(fs: &PmFs, path: &Path, chunks: u64) -> Vec<u8> {
        let n = fs.data_per_chunk() * chunks + 100;
        let data: Vec<u8> = (0..n).map(|i| (i * 13 % 251) as u8).collect();
        let mut w = fs.create(path).unwrap();
        w.append(&data).unwrap();
        w.sync().unwrap();
        data
    }

    /// Reads `len` bytes at `at` of `path`.
    fn read_at(fs: &PmFs, path: &Path, at: u64, len: u64) -> Result<Vec<u8>> {
        let f = fs.open_readable(path)?;
        let mut b = vec![0u8; len as usize];
        f.read_exact_at(at, &mut b)?;
        Ok(b)
    }

    /// Chunk `i` of `data` (file offsets `[i * dpc, (i + 1) * dpc)`, cut at the end).
    fn chunk_of(data: &[u8], dpc: u64, i: u64) -> (u64, &[u8]) {
        let (a, b) = (i * dpc, ((i + 1) * dpc).min(data.len() as u64));
        (a, &data[a as usize..b as usize])
    }

    /// Punching frees the chunks wholly inside the range (never the first or the last), keeps
    /// every other byte where it was, makes a read of a hole corruption naming the file, grows
    /// holes, survives reopening, and a removal then frees each remaining chunk once.
    #[test]
    fn punched_chunks_are_freed_and_the_rest_survives_reopen() {
        let o = growth_pool_options(4 << 20);
        let p = PmPool::create_crash_sim(&o, false).unwrap();
        let fs = PmFs::open(Arc::clone(&p), "test", PmFsOpen::Create(ID)).unwrap();
        let path = Path::new("/db/000007.arr");
        let dpc = fs.data_per_chunk();
        let data = spanning_file(&fs, path, 8); // chunks 0..=8
        let used = used_chunks(&p);
        assert_eq!(used, 1 + 9);
        // Chunks 2, 3 and 4 lie wholly inside; 1 and 5 only partly.
        let freed = fs.punch(path, dpc + 10, 5 * dpc + 3).unwrap();
        assert_eq!(freed, 3 * p.chunk_size());
        assert_eq!(used_chunks(&p), used - 3);
        let check = |fs: &PmFs, holes: &[u64]| {
            for i in 0..9 {
                let (at, want) = chunk_of(&data, dpc, i);
                let got = read_at(fs, path, at, want.len() as u64);
                if holes.contains(&i) {
                    let e = got.unwrap_err();
                    assert!(e.is_corruption() && e.to_string().contains("000007"), "{e}");
                } else {
                    assert_eq!(got.unwrap(), want, "chunk {i}");
                }
            }
            assert_eq!(fs.file_size(path).unwrap(), data.len() as u64);
        };
        check(&fs, &[2, 3, 4]);
        // A read across a hole's edge fails too; punching again frees nothing.
        assert!(read_at(&fs, path, 2 * dpc - 5, 10).is_err());
        assert_eq!(fs.punch(path, dpc + 10, 5 * dpc + 3).unwrap(), 0);
        // The whole file: every chunk but the first and the last.
        let freed = fs.punch(path, 0, data.len() as u64).unwrap();
        assert_eq!(freed, 4 * p.chunk_size(), "chunks 1, 5, 6, 7");
        check(&fs, &[1, 2, 3, 4, 5, 6, 7]);
        let img = p.crash_image(tierkv_pm::CrashImage::Strict).unwrap();
        let p2 = PmPool::open_crash_image(img, &o).unwrap();
        let fs2 = PmFs::open(Arc::clone(&p2), "test2", PmFsOpen::Existing(ID)).unwrap();
        check(&fs2, &[1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(used_chunks(&p2), 1 + 2);
        fs2.remove(path).unwrap();
        assert_eq!(used_chunks(&p2), 1);
        // A file of the format before position words (its entry without the flag; a stale
        // position word in a chunk means nothing there) is read as a plain chain and never
        // punched.
        let data = spanning_file(&fs2, path, 3);
        let file = fs2.get(path).unwrap();
        let (entry, first) = (file.entry, file.chunks.read()[0]);
        let second = file.chunks.read()[1];
        drop(file);
        p2.store_u64_persist(second + CHUNK_POSITION_OFFSET, 0xdead_beef)
            .unwrap();
        let name = b"000007.arr";
        p2.write(entry + 28, &0u32.to_le_bytes()).unwrap();
        p2.persist(entry + 28, 4).unwrap();
        p2.store_u64_persist(entry, live_state(entry, first, 0, name))
            .unwrap();
        let fs3 = PmFs::open(Arc::clone(&p2), "test3", PmFsOpen::Existing(ID)).unwrap();
        assert_eq!(fs3.read_all(path).unwrap(), data);
        assert_eq!(fs3.punch(path, 0, data.len() as u64).unwrap(), 0);
        assert_eq!(fs3.read_all(path).unwrap(), data);
    }

    /// A crash at any fence of a punch leaves the file whole or with its hole, every byte
    /// outside the hole as written, and no chunk leaked.
    #[test]
    fn a_crash_while_punching_loses_nothing_and_leaks_nothing() {
        use tierkv_pm::CrashImage;
        let o = growth_pool_options(4 << 20);
        let p = PmPool::create_crash_sim(&o, true).unwrap();
        let fs = PmFs::open(Arc::clone(&p), "test", PmFsOpen::Create(ID)).unwrap();
        let path = Path::new("/db/000009.arr");
        let dpc = fs.data_per_chunk();
        let data = spanning_file(&fs, path, 6);
        // Punched once already, so that the second punch extends a hole.
        fs.punch(path, dpc, 2 * dpc).unwrap();
        let checked = Arc::new(AtomicU64::new(0));
        {
            let checked = Arc::clone(&checked);
            let weak = Arc::downgrade(&p);
            let (o, data) = (o.clone(), data.clone());
            p.set_fence_hook(Some(Box::new(move |fence| {
                let Some(p) = weak.upgrade() else { return };
                let kinds = [CrashImage::Strict, CrashImage::AllPending]
                    .into_iter()
                    .chain((0..4).map(|t| CrashImage::Torn(fence * 10 + t)));
                for kind in kinds {
                    let img = p.crash_image(kind).unwrap();
                    let p2 = PmPool::open_crash_image(img, &o).unwrap();
                    let fs2 = PmFs::open(Arc::clone(&p2), "img", PmFsOpen::Existing(ID))
                        .unwrap_or_else(|e| panic!("fence {fence} {kind:?}: {e}"));
                    let chunks = fs2.get(path).unwrap().chunks.read().clone();
                    let held = chunks.iter().filter(|&&c| c != 0).count() as u64;
                    assert_eq!(
                        used_chunks(&p2),
                        1 + held,
                        "fence {fence} {kind:?}: a chunk leaked"
                    );
                    assert!(held == 6 || held == 4, "fence {fence} {kind:?}: {chunks:?}");
                    for (i, &c) in chunks.iter().enumerate() {
                        let (at, want) = chunk_of(&data, dpc, i as u64);
                        let got = read_at(&fs2, path, at, want.len() as u64);
                        if c == 0 {
                            assert!(got.is_err(), "fence {fence} {kind:?}: hole {i} read");
                        } else {
                            assert_eq!(got.unwrap(), want, "fence {fence} {kind:?}: chunk {i}");
                        }
                    }
                    checked.fetch_add(1, Ordering::SeqCst);
                }
            })));
        }
        assert_eq!(fs.punch(path, dpc, 4 * dpc).unwrap(), 2 * p.chunk_size());
        p.set_fence_hook(None);
        assert!(
            checked.load(Ordering::SeqCst) >= 2 * 6,
            "too few fences walked"
        );
    }

    /// A damaged link between directory chunks is corruption, never a shorter directory.
    #[test]
    fn a_damaged_directory_link_is_corruption() {
        let o = growth_pool_options(48 << 20);
        let p = PmPool::create_crash_sim(&o, false).unwrap();
        let fs = PmFs::open(Arc::clone(&p), "test", PmFsOpen::Create(ID)).unwrap();
        let per_chunk = PER_CHUNK;
        for i in 0..per_chunk + 1 {
            fs.create(Path::new(&format!("/db/{i:06}.arr"))).unwrap();
        }
        let root = p.named_root(PMFS_ROOT_NAME).unwrap().unwrap();
        let link = p.load_u64(root + DIR_NEXT_OFFSET).unwrap();
        assert_ne!(link, 0);
        for bit in 0..64 {
            p.store_u64_persist(root + DIR_NEXT_OFFSET, link ^ (1 << bit))
                .unwrap();
            let err = PmFs::open(Arc::clone(&p), "pool.pm", PmFsOpen::Existing(ID))
                .err()
                .unwrap_or_else(|| panic!("bit {bit} of the directory link flipped unnoticed"));
            assert!(err.is_corruption(), "bit {bit}: {err}");
        }
        p.store_u64_persist(root + DIR_NEXT_OFFSET, link).unwrap();
        let fs2 = PmFs::open(Arc::clone(&p), "pool.pm", PmFsOpen::Existing(ID)).unwrap();
        assert_eq!(fs2.file_names().len() as u64, per_chunk + 1);
    }

    #[test]
    fn files_span_chunks_survive_reopen_and_free_their_chunks() {
        let p = pool();
        let fs = PmFs::open(Arc::clone(&p), "test", PmFsOpen::Create(ID)).unwrap();
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
        let fs2 = PmFs::open(Arc::clone(&p2), "test2", PmFsOpen::Existing(ID)).unwrap();
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
        let fs = PmFs::open(Arc::clone(&p), "test", PmFsOpen::Create(ID)).unwrap();
        let mut w = fs.create(Path::new("/db/000002.log")).unwrap();
        w.append(&[7u8; 1000]).unwrap();
        // Not flushed: after a crash the file exists (published at create) but holds nothing.
        let img = p.crash_image(tierkv_pm::CrashImage::Strict).unwrap();
        let o = PoolOptions {
            chunk_size: 64 << 10,
            ..PoolOptions::default()
        };
        let p2 = PmPool::open_crash_image(img, &o).unwrap();
        let fs2 = PmFs::open(Arc::clone(&p2), "t", PmFsOpen::Existing(ID)).unwrap();
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
            let fs = PmFs::open(Arc::clone(&p), "test", PmFsOpen::Create(ID)).unwrap();
            let mut w = fs.create(Path::new("/db/000007.sst")).unwrap();
            w.append(&vec![1u8; 100_000]).unwrap();
            w.sync().unwrap();
            let dir = p.named_root(PMFS_ROOT_NAME).unwrap().unwrap();
            let entry = dir + DIR_HEADER_BYTES; // the first entry: the file above
            (p, entry)
        };
        // A flipped name byte fails the entry checksum.
        let (p, entry) = setup();
        let mut b = [0u8; 1];
        p.read(entry + 33, &mut b).unwrap();
        p.write(entry + 33, &[b[0] ^ 0x20]).unwrap();
        let err = PmFs::open(Arc::clone(&p), "pool.pm", PmFsOpen::Existing(ID))
            .err()
            .unwrap();
        assert!(
            err.is_corruption() && err.to_string().contains("checksum"),
            "{err}"
        );
        // A chunk pointer into the middle of a chunk is reported, not followed.
        let (p, entry) = setup();
        let first = p.load_u64(entry + 16).unwrap();
        p.store_u64_persist(first, first + 100).unwrap();
        let err = PmFs::open(Arc::clone(&p), "pool.pm", PmFsOpen::Existing(ID))
            .err()
            .unwrap();
        assert!(
            err.is_corruption() && err.to_string().contains("chunk"),
            "{err}"
        );
        // A size beyond the file's chunks is reported, and so is a size word that fails its
        // check.
        for word in [encode_checked(entry_of_first_file(), 10 << 20), 10 << 20] {
            let (p, entry) = setup();
            assert_eq!(entry, entry_of_first_file());
            p.store_u64_persist(entry + 8, word).unwrap();
            let err = PmFs::open(Arc::clone(&p), "pool.pm", PmFsOpen::Existing(ID))
                .err()
                .unwrap();
            assert!(
                err.is_corruption() && err.to_string().contains("size"),
                "{err}"
            );
        }
        // Every single-bit flip of the state, size, chunk, length, flags and name fields is
        // corruption: never a free entry (a vanished file), a shorter file or another file.
        let (p, entry) = setup();
        let mut raw = [0u8; 40];
        p.read(entry, &mut raw).unwrap();
        for bit in 0..40 * 8 {
            let mut damaged = raw;
            damaged[bit / 8] ^= 1 << (bit % 8);
            p.write(entry, &damaged).unwrap();
            let err = PmFs::open(Arc::clone(&p), "pool.pm", PmFsOpen::Existing(ID))
                .err()
                .unwrap_or_else(|| panic!("bit {bit} of the entry flipped unnoticed"));
            assert!(err.is_corruption(), "bit {bit}: {err}");
        }
        p.write(entry, &raw).unwrap();
        assert!(PmFs::open(Arc::clone(&p), "pool.pm", PmFsOpen::Existing(ID)).is_ok());
        // A pool without a file system is refused when not creating.
        let empty = PmPool::create_crash_sim(&o, false).unwrap();
        assert!(PmFs::open(empty, "empty.pm", PmFsOpen::Existing(ID)).is_err());
    }

    /// The offset of the first directory entry of a pool formatted by `setup`-like code: the
    /// directory is the first chunk handed out.
    fn entry_of_first_file() -> u64 {
        (64 << 10) + DIR_HEADER_BYTES
    }

    /// A pool belongs to the database that formatted it: another identity is refused, unless
    /// it is creating a database and the pool holds no file (a creation that stopped early);
    /// a pool of the first format is refused with an error naming it.
    #[test]
    fn a_pool_is_bound_to_its_database() {
        let p = pool();
        let fs = PmFs::open(Arc::clone(&p), "a.pool", PmFsOpen::Create(ID)).unwrap();
        assert_eq!(fs.identity(), ID);
        let mut w = fs.create_log(Path::new("/db/000003.log")).unwrap();
        w.append(b"acknowledged").unwrap();
        w.flush().unwrap();
        drop((w, fs));
        for how in [PmFsOpen::Existing(ID + 1), PmFsOpen::Create(ID + 1)] {
            let err = PmFs::open(Arc::clone(&p), "a.pool", how).err().unwrap();
            assert!(
                matches!(err, Error::InvalidArgument(_))
                    && err.to_string().contains("another database"),
                "{how:?}: {err}"
            );
        }
        let fs = PmFs::open(Arc::clone(&p), "a.pool", PmFsOpen::Existing(ID)).unwrap();
        assert_eq!(
            fs.read_all(Path::new("/db/000003.log")).unwrap(),
            b"acknowledged"
        );
        // Emptied, the pool may be taken over by a new database, and is then bound to it.
        fs.remove(Path::new("/db/000003.log")).unwrap();
        drop(fs);
        let fs = PmFs::open(Arc::clone(&p), "a.pool", PmFsOpen::Create(ID + 1)).unwrap();
        assert_eq!(fs.identity(), ID + 1);
        drop(fs);
        assert!(PmFs::open(Arc::clone(&p), "a.pool", PmFsOpen::Existing(ID)).is_err());
        // A flipped bit in the directory header is corruption (damage to the identity, in the
        // pool's root directory, is tested in `pm_open.rs`).
        let root = p.named_root(PMFS_ROOT_NAME).unwrap().unwrap();
        let mut header = [0u8; 20];
        p.read(root, &mut header).unwrap();
        for at in [3u64, 9, 17] {
            let mut b = header;
            b[at as usize] ^= 4;
            p.write(root, &b).unwrap();
            let err = PmFs::open(Arc::clone(&p), "a.pool", PmFsOpen::Existing(ID + 1))
                .err()
                .unwrap();
            assert!(err.is_corruption(), "byte {at}: {err}");
        }
        // Older formats are refused by name.
        for (magic, name) in DIR_MAGIC_OLD {
            p.write(root, &magic.to_le_bytes()).unwrap();
            let err = PmFs::open(Arc::clone(&p), "a.pool", PmFsOpen::Existing(ID + 1))
                .err()
                .unwrap();
            assert!(
                matches!(err, Error::InvalidArgument(_)) && err.to_string().contains(name),
                "{err}"
            );
        }
    }

    /// Tables leave the spare chunk and the part of the log quota the logs do not hold free;
    /// logs leave the spare; only `create_log_using_spare` takes the spare; `reserve` links a
    /// log's chunks ahead, and a failed reservation appends nothing.
    #[test]
    fn tables_and_logs_share_the_pool_by_the_space_policy() {
        let p = pool(); // 16 chunks: the header, the directory, 14 free
        let fs = PmFs::open(Arc::clone(&p), "s.pool", PmFsOpen::Create(ID)).unwrap();
        fs.set_space_policy(PmSpacePolicy {
            structure_keep_chunks: 0,
            spare_chunks: 1,
            log_quota_chunks: 4,
            manifest_chunks: 0,
        });
        assert_eq!(fs.space().free_chunks, 14);
        let mut log = fs.create_log(Path::new("/db/000001.log")).unwrap();
        assert_eq!(fs.space().log_chunks, 1);
        // Tables may take 14 - 1 (log) - 1 (spare) - 3 (rest of the log quota) = 9 chunks.
        let dpc = fs.data_per_chunk() as usize;
        let mut table = fs.create(Path::new("/db/000002.sst")).unwrap();
        table.append(&vec![7u8; 9 * dpc]).unwrap();
        let err = table.append(&[7u8]).unwrap_err();
        assert!(matches!(err, Error::NoSpace(_)), "{err}");
        assert_eq!(fs.space().free_chunks, 4);
        // The log may grow into the 3 chunks of the quota, not into the spare.
        log.reserve(4 * dpc as u64).unwrap();
        assert_eq!((fs.space().free_chunks, fs.space().log_chunks), (1, 4));
        let err = log.reserve(4 * dpc as u64 + 1).unwrap_err();
        assert!(matches!(err, Error::NoSpace(_)), "{err}");
        assert_eq!(log.size(), 0, "a failed reservation appends nothing");
        log.append(&vec![1u8; 4 * dpc]).unwrap();
        log.flush().unwrap();
        assert_eq!(fs.space().free_chunks, 1, "the reserved chunks were used");
        let err = fs.create_log(Path::new("/db/000003.log")).err().unwrap();
        assert!(matches!(err, Error::NoSpace(_)), "{err}");
        let spare = fs
            .create_log_using_spare(Path::new("/db/000003.log"))
            .unwrap();
        assert_eq!(fs.space().free_chunks, 0);
        drop((spare, log, table));
        // Removing files gives their chunks back, and the log count follows.
        fs.remove(Path::new("/db/000001.log")).unwrap();
        fs.remove(Path::new("/db/000002.sst")).unwrap();
        assert_eq!(fs.space().log_chunks, 1);
        assert_eq!(fs.space().free_chunks, 13);
        // Log chunks are recognised again after a reopen (the flag is in the entry).
        let img = p.crash_image(tierkv_pm::CrashImage::Strict).unwrap();
        let p2 = PmPool::open_crash_image(img, &log_pool_options()).unwrap();
        let fs2 = PmFs::open(p2, "s2", PmFsOpen::Existing(ID)).unwrap();
        assert_eq!(fs2.space().log_chunks, 1);
    }

    /// A manifest's chunks are zeroed like a log's but are not log space, also after a reopen
    /// (the name says so); tables and logs leave the manifest's chunks free, and a manifest
    /// may take them (not the WAL's spare).
    #[test]
    fn manifests_take_the_chunks_set_aside_for_them() {
        let p = pool(); // 16 chunks: the header, the directory, 14 free
        let fs = PmFs::open(Arc::clone(&p), "m.pool", PmFsOpen::Create(ID)).unwrap();
        fs.set_space_policy(PmSpacePolicy {
            structure_keep_chunks: 0,
            spare_chunks: 3,
            log_quota_chunks: 0,
            manifest_chunks: 2,
        });
        let dpc = fs.data_per_chunk() as usize;
        let mut table = fs.create(Path::new("/db/000002.sst")).unwrap();
        table.append(&vec![7u8; 11 * dpc]).unwrap();
        assert!(matches!(table.append(&[7u8]), Err(Error::NoSpace(_))));
        let err = fs.create_log(Path::new("/db/000003.log")).err().unwrap();
        assert!(matches!(err, Error::NoSpace(_)), "{err}");
        let mut manifest = fs.create_log(Path::new("/db/MANIFEST-000004")).unwrap();
        manifest.append(&vec![1u8; 2 * dpc]).unwrap();
        manifest.flush().unwrap();
        assert_eq!(fs.space().log_chunks, 0, "a manifest is not log space");
        assert_eq!(fs.space().manifest_chunks, 2);
        assert_eq!(fs.space().free_chunks, 1, "the WAL's spare is left");
        assert_eq!(fs.space().chunks_for_logs(), 0);
        let err = manifest.append(&vec![1u8; dpc]).unwrap_err();
        assert!(
            matches!(&err, Error::NoSpace(m) if m.contains("manifest")),
            "{err}"
        );
        drop((manifest, table));
        let img = p.crash_image(tierkv_pm::CrashImage::Strict).unwrap();
        let p2 = PmPool::open_crash_image(img, &log_pool_options()).unwrap();
        let fs2 = PmFs::open(p2, "m2", PmFsOpen::Existing(ID)).unwrap();
        assert_eq!(fs2.space().log_chunks, 0);
        assert_eq!(
            fs2.space().manifest_chunks,
            2,
            "recognised by its name after a reopen"
        );
        let data = fs2.read_all(Path::new("/db/MANIFEST-000004")).unwrap();
        assert_eq!(data, vec![1u8; 2 * dpc]);
        fs2.remove(Path::new("/db/MANIFEST-000004")).unwrap();
        assert_eq!(fs2.space().log_chunks, 0);
        assert_eq!(fs2.space().manifest_chunks, 0);
        // While the manifests hold their chunks, logs keep only the WAL's spare: the chunks the
        // manifests took do not come out of the logs' room a second time.
        let fs = PmFs::open(pool(), "m3.pool", PmFsOpen::Create(ID)).unwrap();
        fs.set_space_policy(PmSpacePolicy {
            structure_keep_chunks: 0,
            spare_chunks: 3,
            log_quota_chunks: 4,
            manifest_chunks: 2,
        });
        let mut manifest = fs.create_log(Path::new("/db/MANIFEST-000005")).unwrap();
        manifest.append(&vec![1u8; dpc + 1]).unwrap();
        manifest.flush().unwrap();
        assert_eq!(fs.space().manifest_chunks, 2);
        // 14 - 2 (manifest) = 12 free; tables leave the WAL's spare and the log quota: 7.
        let mut table = fs.create(Path::new("/db/000006.sst")).unwrap();
        table.append(&vec![7u8; 7 * dpc]).unwrap();
        assert!(matches!(table.append(&[7u8]), Err(Error::NoSpace(_))));
        let mut log = fs.create_log(Path::new("/db/000007.log")).unwrap();
        log.reserve(4 * dpc as u64).unwrap();
        assert_eq!(fs.space().log_chunks, 4, "the whole log quota");
        assert_eq!(fs.space().free_chunks, 1);
    }

    /// One fence per flushed PM log append (data and size together), whatever the record
    /// size and whether its pieces are stored non-temporally: the design's write path depends
    /// on it.
    #[test]
    fn a_flushed_log_append_takes_one_fence() {
        use crate::log::LogWriter;
        let p = pool();
        let fs = PmFs::open(Arc::clone(&p), "f.pool", PmFsOpen::Create(ID)).unwrap();
        let mut log = LogWriter::new(fs.create_log(Path::new("/db/000001.log")).unwrap());
        log.reserve_record(0).unwrap();
        for len in [0usize, 1, 100, 144, 1023, 1024, 5000, 40_000] {
            let before = p.fence_count();
            log.add_record(&vec![3u8; len]).unwrap();
            assert_eq!(p.fence_count() - before, 1, "a {len}-byte record");
        }
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
                        PmFsOpen::Existing(ID),
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
        let fs = PmFs::open(Arc::clone(&p), "test", PmFsOpen::Create(ID)).unwrap();
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
        let fs = PmFs::open(Arc::clone(&p), "test", PmFsOpen::Create(ID)).unwrap();
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
        let fs = PmFs::open(Arc::clone(&p), "test", PmFsOpen::Create(ID)).unwrap();
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
        let fs = PmFs::open(Arc::clone(&p), "test", PmFsOpen::Create(ID)).unwrap();
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
        let fs = PmFs::open(Arc::clone(&p), "bench", PmFsOpen::Create(ID)).unwrap();
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
