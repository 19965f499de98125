//! The database: the public [`Db`] handle over the engine's components.
//!
//! Components (each in its own file):
//! * `inner.rs`: [`DbInner`], what every component shares (options, file systems, counters,
//!   the table cache), and `State`, the mutex-guarded part: the version set, the super version
//!   readers clone, the background bookkeeping and the first background error;
//! * the design's front end (`crate::front_ends`) takes writes (its write queue, log and write
//!   buffers live there);
//! * the design's stages (`crate::stages`) answer reads and hold their runs;
//! * `flush.rs` and `compact/`: the background scheduler's flush and compaction threads,
//!   the compaction executor, and the user-facing `flush` and `compact_range`;
//! * `obsolete.rs`: deletion of files no live version or log needs;
//! * `read.rs` and `iter.rs`: point lookups and iterators over the front end and the stages;
//! * `recovery.rs`: open (manifest, PM pool, consistency checks, the front end's recovery),
//!   `check.rs`: offline verification, `repair` of a lost `CURRENT`.
//!
//! Locking: the front end orders writers and holds its own leader lock; `state` guards the
//! version set and the background bookkeeping. Lock order is front-end leader -> `state` ->
//! front-end buffers; nothing takes the leader lock while holding `state`. Manifest writes
//! happen under `state` (they are rare: one per flush or compaction). Readers take `state`
//! only to clone the current `SuperVersion` (one `Arc`), then read without locks.

mod admission;
mod check;
mod clog;
mod compact;
mod flush;
mod inner;
mod iter;
mod obsolete;
mod owner;
mod read;
mod recovery;
mod repair;

use crate::snapshot::Snapshot;
use crate::snapshot::SnapshotList;
pub(crate) use admission::{AdmitBuffer, Step};
pub use check::CheckReport;
pub(crate) use inner::{DbInner, State};
pub use iter::DbIterator;
pub(crate) use recovery::describes_empty_database;
pub(crate) use recovery::Present;
pub use repair::RepairReport;

use crate::error::{Error, Result};
use crate::fs::FileSystem;
use crate::options::{Options, ReadOptions, WriteOptions};
use crate::stats::{DbStats, LiveTable};
use crate::WriteBatch;
use std::ops::{Bound, RangeBounds};
use std::path::Path;
use std::sync::Arc;
use std::thread::JoinHandle;

/// Whether `e` says a tier is full: the pool (`NoSpace`) or the file system (`ENOSPC`,
/// `EDQUOT`).
/// The lock file beside a PM pool file (`POOL.lock`): a writer holds it exclusively, a
/// read-only open shared. An application or tool that removes a pool it created removes this
/// file with it.
pub fn pool_lock_path(pool: &Path) -> std::path::PathBuf {
    let mut name = pool.as_os_str().to_os_string();
    name.push(".lock");
    std::path::PathBuf::from(name)
}

fn is_out_of_space(e: &Error) -> bool {
    match e {
        Error::NoSpace(_) => true,
        Error::Io { source, .. } => matches!(
            source.kind(),
            std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
        ),
        _ => false,
    }
}

/// An open database. `Send + Sync`: share it between threads with an `Arc`.
///
/// Dropping it stops the background threads; every acknowledged write is already durable in the
/// front end (the WAL, for the leveled designs), but for writes that skipped the WAL
/// ([`WriteOptions::disable_wal`]): when there were any, closing or dropping it flushes the
/// memtables first.
pub struct Db {
    inner: Arc<DbInner>,
    threads: Vec<JoinHandle<()>>,
    /// Set by the first [`Db::shutdown`] (`close`, then again `Drop`).
    shut_down: bool,
    /// Why a writable open continued read-only (see [`Db::read_only_reason`]).
    read_only_reason: Option<String>,
}

impl Db {
    /// Opens the database in directory `path`, creating it if `options.create_if_missing`.
    /// Recovery replays the manifest, then the WALs; a torn tail of the newest WAL (a write that
    /// was never acknowledged) is dropped, any other damage is an error naming the file.
    ///
    /// A recovery that runs out of space (a full PM pool whose last flush failed, a full disk)
    /// does not lock the database out: the open continues read-only, every acknowledged write
    /// readable, and says why in [`Db::read_only_reason`]; writes are then
    /// [`Error::ReadOnly`] naming the reason. Grow the pool ([`Db::grow_pool`]) or free space,
    /// and reopen to write.
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        let path = path.as_ref();
        let (inner, read_only_reason) = match recovery::open(path, options.clone()) {
            Ok(inner) => (inner, None),
            Err(e) if !options.read_only && is_out_of_space(&e) => {
                let read_only = Options {
                    read_only: true,
                    ..options
                };
                // Where even that fails (no database to read), the first error says it all.
                let inner = recovery::open(path, read_only).map_err(|_| e.duplicate())?;
                (inner, Some(e.to_string()))
            }
            Err(e) => return Err(e),
        };
        let inner = Arc::new(inner);
        let mut threads = Vec::new();
        if inner.options.read_only {
            // Nothing to flush or compact: the open is a view of the database as it was.
            return Ok(Db {
                inner,
                threads,
                shut_down: false,
                read_only_reason,
            });
        }
        let spawn = |name: String, f: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new()
                .name(name)
                .spawn(f)
                .map_err(|e| Error::io("spawn thread", path, e))
        };
        let db = Arc::clone(&inner);
        threads.push(spawn(
            "tierkv-flush".into(),
            Box::new(move || guarded(&db, "the flush thread", |db| db.flush_loop())),
        )?);
        for i in 0..inner.options.compaction.background_compactions {
            let db = Arc::clone(&inner);
            threads.push(spawn(
                format!("tierkv-compact-{i}"),
                Box::new(move || guarded(&db, "a compaction thread", |db| db.compaction_loop())),
            )?);
        }
        for task in inner.stages.iter().flat_map(|s| s.background_tasks()) {
            let db = Arc::clone(&inner);
            let what = format!("the {} thread", task.name);
            threads.push(spawn(
                format!("tierkv-{}", task.name),
                Box::new(move || guarded(&db, &what, |db| (task.run)(db))),
            )?);
        }
        Ok(Db {
            inner,
            threads,
            shut_down: false,
            read_only_reason: None,
        })
    }

    /// Why this database is open read-only although the open asked for write access: the
    /// recovery ran out of space (the error it met). `None` for a writable open, and for an
    /// open that asked for [`Options::read_only`].
    pub fn read_only_reason(&self) -> Option<&str> {
        self.read_only_reason.as_deref()
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
    /// none. With `options.sync`, the WAL is synced before this returns; with
    /// `options.disable_wal` the batch skips the WAL (durable once its memtable is flushed).
    /// `sync` with `disable_wal` is an [`Error::InvalidArgument`].
    pub fn write(&self, options: &WriteOptions, batch: WriteBatch) -> Result<()> {
        if options.sync && options.disable_wal {
            return Err(Error::InvalidArgument(
                "a write cannot both sync the WAL and skip it (sync with disable_wal)".into(),
            ));
        }
        self.writable("a write")?;
        batch.validate(
            self.inner.options.max_key_size,
            self.inner.options.max_value_size,
        )?;
        if batch.is_empty() {
            return Ok(());
        }
        self.inner.front.write(&self.inner, options, batch)
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

    /// Makes the active write buffer immutable, flushes it into the first stage (an L0 table for
    /// the leveled designs) and waits.
    pub fn flush(&self) -> Result<()> {
        self.writable("flush")?;
        self.inner.flush()
    }

    /// [`Error::ReadOnly`] naming `what` if the database was opened read-only.
    fn writable(&self, what: &str) -> Result<()> {
        if let Some(reason) = &self.read_only_reason {
            return Err(Error::ReadOnly(format!(
                "{what} is refused: the open could not recover with write access ({reason}) \
                 and continued read-only; grow the PM pool (`tierkv grow-pool`, \
                 Db::grow_pool) or free disk space, then reopen"
            )));
        }
        if self.inner.options.read_only {
            return Err(Error::ReadOnly(format!(
                "{what} is refused (Options::read_only, --read_only); reopen without it to write"
            )));
        }
        Ok(())
    }

    /// Waits until no background work is left: no immutable write buffer to flush, no
    /// compaction running, and none a policy would start now (db_bench's
    /// `waitforcompaction`; with `compaction.disable_auto_compactions`, flushes and running
    /// compactions only). Returns the background error if the database is poisoned.
    pub fn wait_for_background_work(&self) -> Result<()> {
        if self.inner.options.read_only {
            // No background thread runs, and no work would ever be started.
            return Ok(());
        }
        self.inner.wait_for_background_work()
    }

    /// Compacts every key in `[begin, end]` (unbounded when `None`) down through every stage (for
    /// the leveled designs: level by level, down to the deepest level holding keys of the range)
    /// and waits. Flushes the write buffer first.
    pub fn compact_range(&self, begin: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.writable("compact_range")?;
        self.inner.flush()?;
        self.inner.compact_range(begin, end)
    }

    /// Every figure of the database: bytes per tier and purpose, amplification inputs, stalls,
    /// files per level and the DRAM footprint.
    pub fn stats(&self) -> DbStats {
        self.inner.stats()
    }

    /// Every run of the current version (db_bench's `sstables`): stage, group, file number,
    /// tier, kind, size, entries and key range, in pipeline order, each group's runs in the
    /// order the stage keeps them (L0 by file number, deeper levels by key).
    pub fn live_tables(&self) -> Vec<LiveTable> {
        let sv = self.inner.super_version();
        let layouts = sv.version.layouts();
        sv.version
            .runs()
            .map(|(stage, group, f)| LiveTable {
                stage,
                stage_name: layouts[stage].name.to_string(),
                group,
                number: f.number,
                tier: f.tier,
                kind: match f.kind {
                    crate::version::RunKind::Sst => "sst",
                    crate::version::RunKind::PmArray => "pm-array",
                }
                .to_string(),
                row: f.row.is_some(),
                set: f.set,
                file_size: f.file_size,
                entries: f.num_entries,
                smallest_key: crate::format::user_key(&f.smallest).to_vec(),
                largest_key: crate::format::user_key(&f.largest).to_vec(),
                backing: f.backing.map(|b| b.number),
            })
            .collect()
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
    /// error, if any. Dropping the database does the same, discarding the error. When writes
    /// skipped the WAL, the memtables are flushed first, so that a clean close loses none.
    pub fn close(mut self) -> Result<()> {
        let flushed = self.flush_unlogged();
        self.shutdown();
        match self.inner.state.lock().bg_error.take() {
            Some(e) => Err(e),
            None => flushed,
        }
    }

    /// Flushes the memtables if writes that skipped the WAL may be in them (and the database
    /// is not poisoned).
    fn flush_unlogged(&self) -> Result<()> {
        if self.inner.front.holds_unlogged_writes() && self.inner.state.lock().bg_error.is_none() {
            self.inner.flush()
        } else {
            Ok(())
        }
    }

    fn shutdown(&mut self) {
        if std::mem::replace(&mut self.shut_down, true) {
            return;
        }
        self.inner.state.lock().shutting_down = true;
        self.inner.bg_cv.notify_all();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        // Runs a reader still held at the last compaction are freed now, not at the next
        // open (a version a reader still holds keeps its files). Only those: no directory is
        // listed. Not after a failure: the manifest's durable state is then unknown, and the
        // next open decides.
        let mut state = self.inner.state.lock();
        if state.bg_error.is_none() {
            let obsolete = self.inner.released_runs(&mut state);
            drop(state);
            self.inner.delete_files(obsolete);
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
        repair::repair(path.as_ref(), &options)
    }

    /// Grows the PM pool of the closed database at `path` to `new_size` bytes (a multiple of
    /// its chunk size, larger than it is); returns the size it had. The pool is found and
    /// checked as an open finds it (the database's own, of this moment); both locks are held,
    /// so the database must be closed. Failure-atomic: a crash leaves the old size or the new
    /// one, or a file longer than its header says, which every open refuses until this runs
    /// again. A full pool's database then opens writable and finishes what it could not.
    pub fn grow_pool(path: impl AsRef<Path>, options: Options, new_size: u64) -> Result<u64> {
        let dir = path.as_ref();
        let _lock = options.fs.lock(&dir.join("LOCK"))?;
        let (_, pm) = recovery::recover_versions(
            dir,
            &options,
            Arc::new(crate::stats::Counters::default()),
            recovery::PoolAccess::Inspect,
        )?;
        let pool = pm.and_then(|pm| pm.path).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "database {} (design {}) keeps no PM pool file to grow",
                dir.display(),
                options.design
            ))
        })?;
        let lock_path = pool_lock_path(&pool);
        let _pool_lock = crate::fs::PosixFs.lock(&lock_path)?;
        Ok(tierkv_pm::PmPool::grow(&pool, new_size)?)
    }

    /// What the database at `path` was created with (design, format version, level count,
    /// WAL tier, where its PM pool is when not `pm.pool` in the directory, and whether its
    /// manifest is in the pool), read from its manifest through `fs` without opening it (a
    /// manifest in the pool is read through the pool `CURRENT` names, without taking its lock
    /// or writing); tools use it to open a database with the options it needs and to show
    /// where its pool is.
    pub fn describe(
        path: impl AsRef<Path>,
        fs: &dyn FileSystem,
    ) -> Result<crate::version::CreationFields> {
        recovery::describe(path.as_ref(), fs, None)
    }

    /// [`Db::describe`] with the pool file at `pool` (a pool that moved) when the manifest is
    /// in the pool; `None` is where `CURRENT` says.
    pub fn describe_with_pool(
        path: impl AsRef<Path>,
        fs: &dyn FileSystem,
        pool: Option<&Path>,
    ) -> Result<crate::version::CreationFields> {
        recovery::describe(path.as_ref(), fs, pool)
    }
}

/// Runs a background thread's loop; if it panics (a bug), the database is poisoned and every
/// waiter woken, so that writers waiting for that thread's work get an error instead of waiting
/// forever (the panic's message goes to stderr as usual).
fn guarded(db: &Arc<DbInner>, what: &str, body: impl FnOnce(&DbInner)) {
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(db)));
    if ran.is_err() {
        let mut state = db.state.lock();
        let _ = state.poison(what, Error::Poisoned("it panicked".into()));
        db.bg_cv.notify_all();
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        // `close` has flushed and stopped the threads already.
        if !self.shut_down {
            let _ = self.flush_unlogged();
        }
        self.shutdown();
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
        while db.inner.front.kept_regions() != n {
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
