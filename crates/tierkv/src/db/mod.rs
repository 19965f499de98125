//! The database: open and recovery, the write path, reads, iterators, snapshots, and the
//! background flush and compaction threads.
//!
//! Structure (LevelDB's `db_impl`, split by concern):
//! * `write.rs`: the write queue (group commit), WAL append, memtable insert, throttling;
//! * `read.rs`: point lookups and iterator construction;
//! * `background.rs`: the flush thread, compaction threads and obsolete-file deletion;
//! * `compact.rs`: the compaction executor (merging inputs into new tables);
//! * `recovery.rs`: open, manifest + WAL replay; `check.rs`: offline verification.
//!
//! Locking: `write_queue` orders writers; the write leader alone takes `wal`; `state` guards
//! the memtables, the version set and the background bookkeeping. Lock order is
//! `wal` -> `state`; nothing takes `wal` while holding `state`. Manifest writes happen under
//! `state` (they are rare: one per flush or compaction).
//!
//! Readers take `state` only to clone the current `SuperVersion` (one `Arc`), then read
//! without locks.

mod background;
mod check;
mod compact;
mod iter;
mod read;
mod recovery;
mod snapshot;
mod table_cache;
mod write;

pub use check::CheckReport;
pub use iter::{DbIterator, MergingIterator};
pub(crate) use recovery::min_pool_chunks;
pub use recovery::RepairReport;
pub use snapshot::Snapshot;

use crate::error::{Error, Result};
use crate::fs::{FileLock, FileSystem};
use crate::log::LogWriter;
use crate::memtable::{MemTable, RegionCache};
use crate::options::{Options, ReadOptions, WriteOptions};
use crate::stats::{Counters, DbStats, DramFootprint, LevelStats, PmDeviceStats};
use crate::tier::Tier;
use crate::version::{parse_file_name, FileKind, Version, VersionSet};
use crate::WriteBatch;
use parking_lot::{Condvar, Mutex};
use snapshot::SnapshotList;
use std::collections::{HashSet, VecDeque};
use std::ops::{Bound, RangeBounds};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use table_cache::TableCache;
use write::Writer;

/// What a reader needs, captured at one instant: the memtables and the table version.
pub(crate) struct SuperVersion {
    pub mem: Arc<MemTable>,
    /// Immutable memtables, oldest first.
    pub imm: Vec<Arc<MemTable>>,
    pub version: Arc<Version>,
}

/// State guarded by `DbInner::state`.
pub(crate) struct State {
    pub mem: Arc<MemTable>,
    /// Immutable memtables waiting for flush, oldest first.
    pub imm: VecDeque<Arc<MemTable>>,
    pub versions: VersionSet,
    pub super_version: Arc<SuperVersion>,
    /// Set by the first failed WAL, manifest or background write; writes then fail with it.
    pub bg_error: Option<Error>,
    /// Levels read or written by running compactions.
    pub busy_levels: Vec<bool>,
    /// File numbers being written that no version names yet (not obsolete).
    pub pending_outputs: HashSet<u64>,
    /// Versions handed out; their files stay until every reader drops them.
    pub live_versions: Vec<Weak<Version>>,
    pub shutting_down: bool,
    /// Number of manual compactions waiting or running (automatic ones yield to them).
    pub manual_compactions: usize,
}

impl State {
    /// Publishes a new super version after `mem`, `imm` or the version changed.
    pub fn install_super_version(&mut self) {
        let version = self.versions.current();
        self.live_versions.retain(|w| w.strong_count() > 0);
        if !self
            .live_versions
            .iter()
            .any(|w| std::ptr::eq(w.as_ptr(), Arc::as_ptr(&version)))
        {
            self.live_versions.push(Arc::downgrade(&version));
        }
        self.super_version = Arc::new(SuperVersion {
            mem: Arc::clone(&self.mem),
            imm: self.imm.iter().cloned().collect(),
            version,
        });
    }

    /// Poisons the database with `e` (first error wins) and returns a copy for the caller.
    pub fn poison(&mut self, what: &str, e: Error) -> Error {
        if self.bg_error.is_none() {
            self.bg_error = Some(Error::Poisoned(format!("{what}: {e}")));
        }
        e
    }
}

/// The WAL owned by the write leader.
pub(crate) struct WalState {
    pub writer: LogWriter,
    pub number: u64,
    /// The active memtable (the same `Arc` as `State::mem`).
    pub mem: Arc<MemTable>,
}

/// The PM tier of a database whose design uses it.
pub(crate) struct PmTier {
    pub pool: Arc<tierkv_pm::PmPool>,
    /// The pool's file system, as the `FileSystem` the engine's files go through.
    pub fs: Arc<dyn FileSystem>,
    /// The same file system, for its PM-specific calls (space, the spare chunk).
    pub pmfs: crate::fs::PmFs,
    /// The most chunks one WAL may hold before its memtable is rotated (0: WAL not on PM).
    pub wal_chunk_cap: u64,
    /// Lock on the pool file, when the pool was opened from a path.
    pub _lock: Option<Box<dyn FileLock>>,
}

pub(crate) struct DbInner {
    pub dir: PathBuf,
    pub options: Options,
    pub fs: Arc<dyn FileSystem>,
    pub pm: Option<PmTier>,
    /// Where the WAL lives.
    pub wal_tier: Tier,
    pub counters: Arc<Counters>,
    pub table_cache: TableCache,
    pub state: Mutex<State>,
    /// Signalled when background work is queued or finishes, and on shutdown.
    pub bg_cv: Condvar,
    pub write_queue: Mutex<VecDeque<Arc<Writer>>>,
    pub write_cv: Condvar,
    pub wal: Mutex<WalState>,
    /// The last sequence number visible to readers.
    pub last_sequence: AtomicU64,
    pub snapshots: Arc<SnapshotList>,
    /// The reserved memory of flushed memtables, reused by the next ones.
    pub memtable_regions: Arc<RegionCache>,
    _lock: Box<dyn FileLock>,
}

/// An open database. `Send + Sync`: share it between threads with an `Arc`.
///
/// Dropping it stops the background threads; every acknowledged write is already in the WAL.
pub struct Db {
    inner: Arc<DbInner>,
    threads: Vec<JoinHandle<()>>,
}

impl Db {
    /// Opens the database in directory `path`, creating it if `options.create_if_missing`.
    /// Recovery replays the manifest, then the WALs; a torn tail of the newest WAL (a write that
    /// was never acknowledged) is dropped, any other damage is an error naming the file.
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        let inner = Arc::new(recovery::open(path.as_ref(), options)?);
        let mut threads = Vec::new();
        let spawn = |name: String, f: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new()
                .name(name)
                .spawn(f)
                .map_err(|e| Error::io("spawn thread", path.as_ref(), e))
        };
        let db = Arc::clone(&inner);
        threads.push(spawn(
            "tierkv-flush".into(),
            Box::new(move || db.flush_loop()),
        )?);
        for i in 0..inner.options.compaction.background_compactions {
            let db = Arc::clone(&inner);
            threads.push(spawn(
                format!("tierkv-compact-{i}"),
                Box::new(move || db.compaction_loop()),
            )?);
        }
        Ok(Db { inner, threads })
    }

    /// Puts `key` -> `value` (not synced; see [`WriteOptions::sync`]).
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut b = WriteBatch::with_capacity(key.len() + value.len() + 11);
        b.put(key, value);
        self.write(&WriteOptions::default(), b)
    }

    /// Deletes `key` (a no-op if absent).
    pub fn delete(&self, key: &[u8]) -> Result<()> {
        let mut b = WriteBatch::with_capacity(key.len() + 6);
        b.delete(key);
        self.write(&WriteOptions::default(), b)
    }

    /// Applies `batch` atomically: after a crash either all of its operations are present or
    /// none. With `options.sync`, the WAL is synced before this returns.
    pub fn write(&self, options: &WriteOptions, batch: WriteBatch) -> Result<()> {
        self.inner.write(options, batch)
    }

    /// The latest value of `key`.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.inner.get(&ReadOptions::default(), key)
    }

    /// The value of `key` as of `options.snapshot` (or the latest).
    pub fn get_with(&self, options: &ReadOptions, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.inner.get(options, key)
    }

    /// A snapshot of the current state.
    pub fn snapshot(&self) -> Snapshot {
        self.inner
            .snapshots
            .acquire_latest(&self.inner.last_sequence)
    }

    /// An iterator over the whole database; position it with `seek` or `seek_to_first`.
    pub fn iter(&self, options: &ReadOptions) -> Result<DbIterator> {
        self.inner
            .iterator(options, Bound::Unbounded, Bound::Unbounded, true)
    }

    /// An iterator over the keys in `range`, positioned on the first of them.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let db = tierkv::Db::open(dir.path(), tierkv::Options::default()).unwrap();
    /// for k in [b"a", b"b", b"c", b"d"] {
    ///     db.put(k, b"v").unwrap();
    /// }
    /// let keys: Vec<Vec<u8>> = db
    ///     .scan(&b"b"[..]..&b"d"[..])
    ///     .unwrap()
    ///     .map(|e| e.unwrap().0)
    ///     .collect();
    /// assert_eq!(keys, vec![b"b".to_vec(), b"c".to_vec()]);
    /// ```
    pub fn scan<'a, R: RangeBounds<&'a [u8]>>(&self, range: R) -> Result<DbIterator> {
        self.scan_with(&ReadOptions::default(), range)
    }

    /// [`Db::scan`] with read options (snapshot, cache fill).
    pub fn scan_with<'a, R: RangeBounds<&'a [u8]>>(
        &self,
        options: &ReadOptions,
        range: R,
    ) -> Result<DbIterator> {
        let own = |b: Bound<&&[u8]>| b.map(|k| k.to_vec());
        let mut it = self.inner.iterator(
            options,
            own(range.start_bound()),
            own(range.end_bound()),
            true,
        )?;
        it.seek_to_first();
        Ok(it)
    }

    /// Makes the active memtable immutable, flushes it to an L0 table and waits.
    pub fn flush(&self) -> Result<()> {
        self.inner.flush()
    }

    /// Compacts every key in `[begin, end]` (unbounded when `None`) down through the levels and
    /// waits. Flushes the memtable first.
    pub fn compact_range(&self, begin: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.inner.flush()?;
        self.inner.compact_range(begin, end)
    }

    /// Every figure of the database: bytes per tier and purpose, amplification inputs, stalls,
    /// files per level and the DRAM footprint.
    pub fn stats(&self) -> DbStats {
        self.inner.stats()
    }

    /// Key + value bytes of the live data as of now (scans the whole database; the basis of
    /// space amplification).
    pub fn logical_size(&self) -> Result<u64> {
        let ro = ReadOptions {
            skip_cache_fill: true,
            ..ReadOptions::default()
        };
        let mut it = self
            .inner
            .iterator(&ro, Bound::Unbounded, Bound::Unbounded, false)?;
        it.seek_to_first();
        let mut total = 0u64;
        while it.valid() {
            total += (it.key().len() + it.value().len()) as u64;
            it.next();
        }
        it.status()?;
        Ok(total)
    }

    /// The options the database was opened with.
    pub fn options(&self) -> &Options {
        &self.inner.options
    }

    /// Stops the background threads and closes the database, returning the first background
    /// error, if any. Dropping the database does the same, discarding the error.
    pub fn close(mut self) -> Result<()> {
        self.shutdown();
        match self.inner.state.lock().bg_error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn shutdown(&mut self) {
        self.inner.state.lock().shutting_down = true;
        self.inner.bg_cv.notify_all();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }

    /// Verifies the database at `path` without modifying it: the manifest, the version
    /// invariants, every table's blocks and checksums, and the WALs. Returns the first damage as
    /// an error naming the file.
    pub fn check(path: impl AsRef<Path>, options: Options) -> Result<CheckReport> {
        check::check(path.as_ref(), &options)
    }

    /// Points `CURRENT` at the newest manifest from which the database at `path` opens
    /// consistently (every table present with its recorded size, the oldest live WAL present,
    /// the PM pool bound to it), as LevelDB's `RepairDB` does for a lost or damaged `CURRENT`.
    /// Writes nothing else and deletes nothing; a database whose `CURRENT` is fine is left as
    /// it is. Fails with `Corruption` listing every manifest and why it was passed over when
    /// none qualifies.
    pub fn repair(path: impl AsRef<Path>, options: Options) -> Result<RepairReport> {
        recovery::repair(path.as_ref(), &options)
    }

    /// What the database at `path` was created with (design, format version, level count,
    /// WAL tier), read from its manifest through `fs` without opening it; tools use it to open
    /// a database with the options it needs.
    pub fn describe(
        path: impl AsRef<Path>,
        fs: &dyn FileSystem,
    ) -> Result<crate::version::CreationFields> {
        crate::version::read_creation_fields(fs, path.as_ref())
    }
}

/// Bytes of the WAL files of `dir` in `fs`.
fn wal_bytes(fs: &dyn FileSystem, dir: &Path) -> u64 {
    fs.list(dir)
        .unwrap_or_default()
        .iter()
        .filter(|n| matches!(parse_file_name(n), Some((FileKind::Log, _))))
        .filter_map(|n| fs.file_size(&dir.join(n)).ok())
        .sum()
}

impl Drop for Db {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl DbInner {
    fn stats(&self) -> DbStats {
        let mut s = DbStats::from_counters(&self.counters);
        s.design = self.options.design.name().to_string();
        let sv = Arc::clone(&self.state.lock().super_version);
        let level_stats = |tier: Option<Tier>| -> Vec<LevelStats> {
            sv.version
                .levels
                .iter()
                .map(|files| {
                    let mut l = LevelStats::default();
                    for f in files.iter().filter(|f| tier.is_none_or(|t| f.tier == t)) {
                        l.files += 1;
                        l.bytes += f.file_size;
                    }
                    l
                })
                .collect()
        };
        s.levels = level_stats(None);
        if let Some(pm) = &self.pm {
            s.pm_levels = level_stats(Some(Tier::Pm));
            let p = pm.pool.stats();
            s.pm = Some(PmDeviceStats {
                mode: pm.pool.mode().to_string(),
                flush_instruction: tierkv_pm::flush_instruction().to_string(),
                lines_written_back: p.lines_written_back,
                fences: p.fences,
                bytes_read: p.bytes_read,
                bytes_allocated: p.bytes_allocated,
                pool_bytes: pm.pool.size(),
            });
            s.pm_wal_bytes = wal_bytes(&*pm.fs, &self.dir);
        }
        let (filter_bytes, index_bytes) = self.table_cache.resident_bytes();
        s.dram = DramFootprint {
            memtable_bytes: sv.mem.approximate_bytes()
                + sv.imm.iter().map(|m| m.approximate_bytes()).sum::<u64>(),
            memtable_kept_bytes: self.memtable_regions.resident_bytes()
                + sv.mem.stale_resident_bytes()
                + sv.imm.iter().map(|m| m.stale_resident_bytes()).sum::<u64>(),
            filter_bytes,
            index_bytes,
            block_cache_bytes: self.table_cache.block_cache().usage_bytes(),
        };
        s.wal_bytes = wal_bytes(&*self.fs, &self.dir);
        s
    }

    /// The current super version.
    pub(crate) fn super_version(&self) -> Arc<SuperVersion> {
        Arc::clone(&self.state.lock().super_version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// Waits up to 10 s for the region cache to hold `n` regions (the flushed memtable is
    /// dropped by whichever thread lets go of it last).
    fn wait_for_kept(db: &Db, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while db.inner.memtable_regions.len() != n {
            assert!(Instant::now() < deadline, "region cache never held {n}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn flushed_memtables_lend_their_memory_to_the_next_ones() {
        let dir = tempfile::tempdir().unwrap();
        let o = Options {
            write_buffer_size: 256 << 10,
            ..Options::default()
        };
        let db = Db::open(dir.path(), o).unwrap();
        for round in 0..3u32 {
            for i in 0..500u32 {
                db.put(format!("k{round}-{i:05}").as_bytes(), &[round as u8; 100])
                    .unwrap();
            }
            db.flush().unwrap();
            // The flushed memtable's two regions are kept; the new active memtable took the
            // ones kept before (in round 0, those of the memtable that replayed the empty WAL
            // at open).
            wait_for_kept(&db, 2);
            let dram = db.stats().dram;
            assert!(dram.memtable_kept_bytes >= 500 * 100, "{dram:?}");
        }
        for round in 0..3u32 {
            for i in (0..500u32).step_by(7) {
                let got = db.get(format!("k{round}-{i:05}").as_bytes()).unwrap();
                assert_eq!(got.as_deref(), Some(&[round as u8; 100][..]));
            }
        }
    }
}
