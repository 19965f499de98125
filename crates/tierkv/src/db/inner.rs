//! [`DbInner`]: what the engine's components share, and [`State`], its mutex-guarded part.

use super::SnapshotList;
use crate::error::{Error, Result};
use crate::fs::{FileLock, FileSystem};
use crate::options::Options;
use crate::pipeline::{FlushSource, FrontEnd, FrontView, Stage, WritePressure};
pub(crate) use crate::pm_structures::PmTier;
use crate::runs::TableCache;
use crate::stats::{
    Counters, DbStats, DramFootprint, LevelStats, PmDeviceStats, StageStats, StallReason,
    StallTracker,
};
use crate::tier::Tier;
use crate::version::{parse_file_name, FileKind, FileMetaData, Version, VersionSet};
use parking_lot::{Condvar, Mutex, MutexGuard};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// What a reader needs, captured at one instant: the front end's write buffers and the version
/// of every stage.
pub(crate) struct SuperVersion {
    pub front: Arc<dyn FrontView>,
    pub version: Arc<Version>,
}

/// State guarded by `DbInner::state`.
pub(crate) struct State {
    pub versions: VersionSet,
    pub super_version: Arc<SuperVersion>,
    /// Set by the first failed log, manifest or background write; writes then fail with it.
    pub bg_error: Option<Error>,
    /// Per stage and group: read or written by a running compaction.
    pub busy: Vec<Vec<bool>>,
    /// File numbers being written that no version names yet (not obsolete).
    pub pending_outputs: HashSet<u64>,
    /// Versions handed out; their files stay until every reader drops them.
    pub live_versions: Vec<Weak<Version>>,
    /// Runs a compaction removed from the current version, not deleted yet: each is deleted
    /// once nothing else holds its metadata (no older version, no reader, no task).
    pub removed_runs: Vec<Arc<FileMetaData>>,
    /// The manifest and compaction-log numbers at the last full scan for obsolete files: a
    /// compaction that rotated neither needs no scan.
    pub scanned_numbers: Option<(Option<u64>, Option<u64>)>,
    /// The old metadata of runs a compaction re-added under new metadata (a row whose dead
    /// ranges grew): older versions and readers may still hold it, so a removed run of the
    /// same number is deleted only once no one holds any of its metadata.
    pub superseded_runs: Vec<Arc<FileMetaData>>,
    pub shutting_down: bool,
    /// Number of manual compactions waiting or running (automatic ones yield to them).
    pub manual_compactions: usize,
}

impl State {
    /// The state of a database opened with `versions`, before its front end recovered.
    pub fn new(versions: VersionSet, front: &dyn FrontEnd) -> State {
        let version = versions.current();
        State {
            busy: version
                .stages
                .iter()
                .map(|s| vec![false; s.groups.len()])
                .collect(),
            super_version: Arc::new(SuperVersion {
                front: front.view(),
                version,
            }),
            versions,
            bg_error: None,
            pending_outputs: HashSet::new(),
            live_versions: Vec::new(),
            removed_runs: Vec::new(),
            scanned_numbers: None,
            superseded_runs: Vec::new(),
            shutting_down: false,
            manual_compactions: 0,
        }
    }

    /// Publishes a new super version after the front end's buffers or the version changed.
    pub fn install_super_version(&mut self, front: &dyn FrontEnd) {
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
            front: front.view(),
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

/// What every component of an open database shares.
pub(crate) struct DbInner {
    pub dir: PathBuf,
    pub options: Options,
    pub fs: Arc<dyn FileSystem>,
    pub pm: Option<PmTier>,
    pub counters: Arc<Counters>,
    pub table_cache: Arc<TableCache>,
    /// The design's front end.
    pub front: Box<dyn FrontEnd>,
    /// The design's stages, in pipeline order.
    pub stages: Vec<Box<dyn Stage>>,
    pub state: Mutex<State>,
    /// The compaction log, for designs that keep one (lock order: `state` before `clog`).
    pub clog: Option<Mutex<super::clog::CompactionLog>>,
    /// Signalled when background work is queued or finishes, and on shutdown.
    pub bg_cv: Condvar,
    /// The last sequence number visible to readers.
    pub last_sequence: AtomicU64,
    pub snapshots: Arc<SnapshotList>,
    pub _lock: Box<dyn FileLock>,
}

impl DbInner {
    /// The file system of `tier`. REQUIRES: the database has a PM pool if `tier` is PM.
    pub(crate) fn fs_for(&self, tier: Tier) -> &Arc<dyn FileSystem> {
        match tier {
            Tier::Ssd => &self.fs,
            Tier::Pm => &self.pm.as_ref().expect("design uses PM").fs,
        }
    }

    /// Key-value separation for new SSTable `number` written as `target` says, when
    /// `table.value_separation` is on (`None` otherwise, and for other run kinds); `rewrite`:
    /// the value logs a compaction collects, with the part its reads count for.
    pub(crate) fn separate_values(
        &self,
        target: crate::pipeline::RunTarget,
        number: u64,
        rewrite: Option<(std::collections::HashSet<u64>, crate::stats::Part)>,
    ) -> Option<crate::runs::SeparateValues> {
        let threshold = self.options.table.value_separation;
        if threshold == 0 || target.kind != crate::version::RunKind::Sst || target.row {
            return None;
        }
        Some(crate::runs::SeparateValues {
            fs: Arc::clone(self.fs_for(target.tier)),
            dir: self.dir.clone(),
            number,
            threshold,
            rewrite: rewrite.map(|(logs, part)| {
                (
                    logs,
                    Arc::clone(self.table_cache.value_logs()),
                    target.tier,
                    part,
                )
            }),
        })
    }

    /// The current super version.
    pub(crate) fn super_version(&self) -> Arc<SuperVersion> {
        Arc::clone(&self.state.lock().super_version)
    }

    /// The smallest sequence number any reader may still need.
    pub(crate) fn smallest_snapshot(&self) -> u64 {
        self.snapshots.smallest(&self.last_sequence)
    }

    /// How hard the stages hold writes back now: the strongest of them, and the first stage
    /// that asks for it. While automatic compactions are disabled, the stages' rules (which
    /// only compaction relieves) hold nothing back, as in RocksDB: writes would stop for good.
    pub(crate) fn write_pressure(&self, state: &State) -> (WritePressure, usize) {
        if self.options.compaction.disable_auto_compactions {
            return (WritePressure::None, 0);
        }
        let version = &state.super_version.version;
        let mut strongest = (WritePressure::None, 0);
        for (i, (stage, s)) in self.stages.iter().zip(&version.stages).enumerate() {
            let p = stage.write_pressure(s);
            if p > strongest.0 {
                strongest = (p, i);
            }
        }
        strongest
    }

    /// Waits (up to 100 ms) for background work to finish something, counted as a stop stall
    /// for `reason`.
    pub(crate) fn wait_for_background(
        &self,
        state: &mut MutexGuard<'_, State>,
        reason: StallReason,
        stalled: &mut StallTracker,
    ) {
        let t = Instant::now();
        self.bg_cv.notify_all();
        self.bg_cv.wait_for(state, Duration::from_millis(100));
        self.add_stall(t, reason, stalled);
    }

    /// Delays a write once ([`crate::pipeline::Admission::Delay`]): sleeps 1 ms, counted as a
    /// stall for `reason`.
    pub(crate) fn delay_write(&self, reason: StallReason, stalled: &mut StallTracker) {
        let t = Instant::now();
        std::thread::sleep(Duration::from_millis(1));
        self.add_stall(t, reason, stalled);
    }

    /// Counts the time since `since` as stall for `reason` (slowdown or stop time by its
    /// kind); counts the write group once overall and once per reason (`stalled` remembers
    /// what this group was counted for already).
    pub(crate) fn add_stall(
        &self,
        since: Instant,
        reason: StallReason,
        stalled: &mut StallTracker,
    ) {
        self.counters.add_stall(since, reason, stalled);
    }

    /// Writes `source` as run `number` of stage 0 (see `flush.rs`) for a front end's recovery,
    /// announced in the compaction log's recovery job first (`Self::clog_end_recovery` ends
    /// it).
    pub(crate) fn write_flush_run(
        &self,
        source: &dyn FlushSource,
        number: u64,
        current: &Version,
    ) -> Result<Option<(usize, crate::version::FileMetaData)>> {
        self.clog_recovery_output(number)?;
        let plan = super::flush::ingest_plan(self, current);
        super::flush::write_flush_run(self, source, number, &plan)
    }

    pub(crate) fn stats(&self) -> DbStats {
        let mut s = DbStats::from_counters(&self.counters);
        s.design = self.options.design.name().to_string();
        s.background_pending = self.background_pending();
        let sv = self.super_version();
        s.stages = sv
            .version
            .stages
            .iter()
            .zip(sv.version.layouts().iter())
            .map(|(state, layout)| {
                let groups = |tier: Option<Tier>| -> Vec<LevelStats> {
                    state
                        .groups
                        .iter()
                        .map(|runs| {
                            // Files, not runs: runs made of parts of one file count it once.
                            let mut l = LevelStats::default();
                            let mut seen = std::collections::HashSet::new();
                            for f in runs.iter().filter(|f| tier.is_none_or(|t| f.tier == t)) {
                                if seen.insert(f.file_number()) {
                                    l.files += 1;
                                    l.bytes += f.file_bytes();
                                }
                            }
                            l
                        })
                        .collect()
                };
                StageStats {
                    name: layout.name.to_string(),
                    groups: groups(None),
                    pm_groups: groups(Some(Tier::Pm)),
                }
            })
            .collect();
        // The front end's own figures (a front end that keeps the data itself shows it in
        // place of its empty stage's groups).
        self.front.add_stats(&mut s);
        s.levels = s.stages.iter().flat_map(|st| st.groups.clone()).collect();
        s.pm_levels = s
            .stages
            .iter()
            .flat_map(|st| st.pm_groups.clone())
            .collect();
        {
            // Value logs: sizes from their file systems (a log outlives the table that wrote
            // it while others name it).
            let mut tiers: std::collections::HashMap<u64, Tier> = std::collections::HashMap::new();
            for (_, _, f) in sv.version.runs() {
                for (n, b) in &f.value_refs {
                    tiers.insert(*n, f.tier);
                    s.value_logs.live_bytes += b;
                }
            }
            s.value_logs.files = tiers.len();
            for (n, tier) in tiers {
                let size = self
                    .fs_for(tier)
                    .file_size(&crate::sst::value_log::value_log_file_name(&self.dir, n))
                    .unwrap_or(0);
                match tier {
                    Tier::Pm => s.value_logs.pm_bytes += size,
                    Tier::Ssd => s.value_logs.ssd_bytes += size,
                }
            }
        }
        if let Some(pm) = &self.pm {
            let p = pm.pool.stats();
            s.pm = Some(PmDeviceStats {
                mode: pm.pool.mode().to_string(),
                flush_instruction: tierkv_pm::flush_instruction().to_string(),
                lines_written_back: p.lines_written_back,
                fences: p.fences,
                bytes_read: p.bytes_read,
                bytes_allocated: p.bytes_allocated,
                bytes_released: p.bytes_released,
                pool_bytes: pm.pool.size(),
            });
            s.pm_wal_bytes = log_bytes(&*pm.fs, &self.dir);
        }
        for (i, stage) in self.stages.iter().enumerate() {
            stage.add_stats(sv.version.stage(i), &mut s);
        }
        let (filter_bytes, index_bytes) = self.table_cache.resident_bytes();
        let (memtable_bytes, stale) = sv.front.dram_bytes();
        s.dram = DramFootprint {
            memtable_bytes,
            memtable_kept_bytes: self.front.kept_bytes() + stale,
            filter_bytes,
            index_bytes,
            block_cache_bytes: self.table_cache.block_cache().usage_bytes(),
            global_index_bytes: s.global_index.as_ref().map_or(0, |g| g.dram_bytes),
            l0_tree_bytes: s.labdb.as_ref().map_or(0, |l| l.dram_bytes),
            list_tower_bytes: s.listdb.as_ref().map_or(0, |l| l.dram_bytes),
        };
        s.wal_bytes = log_bytes(&*self.fs, &self.dir);
        s
    }
}

/// Bytes of the log files of `dir` in `fs`.
fn log_bytes(fs: &dyn FileSystem, dir: &Path) -> u64 {
    fs.list(dir)
        .unwrap_or_default()
        .iter()
        .filter(|n| matches!(parse_file_name(n), Some((FileKind::Log, _))))
        .filter_map(|n| fs.file_size(&dir.join(n)).ok())
        .sum()
}

impl crate::pipeline::StageHost for DbInner {
    fn wait_until(&self, deadline: Instant) -> bool {
        let mut state = self.state.lock();
        loop {
            if state.shutting_down {
                return false;
            }
            let now = Instant::now();
            if now >= deadline {
                return true;
            }
            self.bg_cv.wait_for(&mut state, deadline - now);
        }
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }

    fn wake(&self) {
        // Under the state lock: a compaction thread reads the trigger and then waits, both
        // under the lock, so a change made before this wake cannot fall between them.
        let _state = self.state.lock();
        self.bg_cv.notify_all();
    }

    fn healthy(&self) -> bool {
        self.state.lock().bg_error.is_none()
    }

    fn rotate_front(&self) -> bool {
        let before = self.front.pending_flushes();
        self.front.rotate(self).is_ok() && self.front.pending_flushes() > before
    }

    fn smallest_snapshot(&self) -> u64 {
        DbInner::smallest_snapshot(self)
    }

    fn live_snapshots(&self) -> Vec<u64> {
        self.snapshots.live()
    }

    fn dir(&self) -> &Path {
        &self.dir
    }

    fn options(&self) -> &Options {
        &self.options
    }

    fn tables(&self) -> &Arc<TableCache> {
        &self.table_cache
    }

    fn fs_for(&self, tier: Tier) -> &Arc<dyn FileSystem> {
        DbInner::fs_for(self, tier)
    }

    fn has_pool(&self) -> bool {
        self.pm.is_some()
    }

    fn punch_pool_file(&self, path: &Path, start: u64, end: u64) -> Result<u64> {
        match &self.pm {
            Some(pm) => pm.pmfs.punch(path, start, end),
            None => Ok(0),
        }
    }

    fn with_versions(&self, f: &mut dyn FnMut(&mut dyn crate::pipeline::LockedVersions)) {
        let mut state = self.state.lock();
        f(&mut Locked {
            db: self,
            state: &mut state,
        });
    }
}

/// The state under its lock, as [`crate::pipeline::StageHost::with_versions`] shows it.
struct Locked<'a> {
    db: &'a DbInner,
    state: &'a mut State,
}

impl crate::pipeline::LockedVersions for Locked<'_> {
    fn current(&self) -> Arc<Version> {
        self.state.versions.current()
    }

    fn live_versions(&mut self) -> Vec<Weak<Version>> {
        self.state.live_versions.retain(|w| w.strong_count() > 0);
        self.state.live_versions.clone()
    }

    fn log_number(&self) -> u64 {
        self.state.versions.log_number
    }

    fn held_metadata(&self, number: u64) -> Vec<Arc<FileMetaData>> {
        self.state
            .superseded_runs
            .iter()
            .filter(|m| m.number == number && Arc::strong_count(m) > 1)
            .cloned()
            .collect()
    }

    fn apply(&mut self, edit: crate::version::VersionEdit, what: &str) -> Result<()> {
        use std::sync::atomic::Ordering::Acquire;
        self.state.versions.last_sequence = self.db.last_sequence.load(Acquire);
        let applied = self.state.versions.log_and_apply(edit);
        match applied {
            Ok(_) => self.state.install_super_version(&*self.db.front),
            Err(e) => {
                self.db.bg_cv.notify_all();
                return Err(self.state.poison(what, e));
            }
        }
        self.db.bg_cv.notify_all();
        Ok(())
    }

    fn poison(&mut self, what: &str, e: Error) {
        self.state.poison(what, e);
        self.db.bg_cv.notify_all();
    }
}
