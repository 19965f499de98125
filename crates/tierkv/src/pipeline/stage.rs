//! The stage seam: one step of the pipeline, its state kept in the version.

use crate::compaction::{CompactionPolicy, CompactionTask, RunTarget};
use crate::format::ValueType;
use crate::iterator::InternalIterator;
use crate::runs::TableCache;
use crate::stats::{IoPurpose, Part};
use crate::version::{StageLayout, StageVersion};
use crate::Result;
use std::sync::Arc;

/// What a read needs to open a stage's runs.
#[derive(Clone)]
pub(crate) struct ReadContext<'a> {
    /// Opens SST runs (and caches their blocks).
    pub tables: &'a Arc<TableCache>,
    /// The stage being read: its index, for the byte counters.
    pub part: Part,
    /// Why the bytes are read.
    pub purpose: IoPurpose,
    /// Whether blocks read go into the block cache.
    pub fill_cache: bool,
    /// The sequence number the read sees.
    pub sequence: u64,
    /// True if `sequence` is a live snapshot (an explicit snapshot, or an iterator's pin):
    /// versions it sees are kept for it. A read without one may be answered with a version
    /// written after it began (a stage whose index holds only the newest versions).
    pub pinned: bool,
}

/// A version of a key found in a stage: its type and value.
pub(crate) type Entry = (ValueType, Vec<u8>);

/// How much a stage holds back writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum WritePressure {
    /// Writes go at full speed.
    None,
    /// Each write group is delayed once (counted as a slowdown stall).
    Slowdown,
    /// Writes wait until background work catches up (counted as a stop stall).
    Stop,
}

/// Where a manual compaction stands in a stage before its groups ([`Stage::manual_step`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ManualStep {
    /// Run the policy's manual task for the first group over every key, then ask again.
    Compact,
    /// Wait for the background threads (a step the stage asked of them), then ask again.
    Wait,
    /// Walk the groups the policy names.
    Groups,
}

/// A manual compaction's progress through a stage's own steps ([`Stage::manual_step`]): the
/// stage's to keep, zero at the start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ManualProgress {
    /// Rounds the stage finished.
    pub round: u32,
    /// What the stage waits to see change, if it waits.
    pub waiting_on: Option<u64>,
}

/// One step of the pipeline. The stage object holds its options and what it keeps outside the
/// version (a global index, L0 trees, the pages it freed); its state is the [`StageVersion`]
/// the caller passes (the one of the version the caller pinned).
pub(crate) trait Stage: Send + Sync {
    /// The shape of the stage's state: its name and groups (fixed at creation).
    fn layout(&self) -> StageLayout;

    /// Where a flush from the front end is written (stage 0), or a previous stage's compaction
    /// output that moves into this stage.
    fn ingest_target(&self) -> RunTarget;

    /// Where a flushed buffer whose user keys span `[smallest, largest]` is written, given the
    /// stage's state and which of its groups a compaction holds (`busy`); a target group other
    /// than the ingest group is held busy by the flush while it writes. Default: the ingest
    /// target.
    fn flush_target(
        &self,
        state: &StageVersion,
        busy: &[bool],
        smallest: &[u8],
        largest: &[u8],
    ) -> RunTarget {
        let _ = (state, busy, smallest, largest);
        self.ingest_target()
    }

    /// The newest version of `user_key` visible at the sequence in `lookup` (an internal lookup
    /// key), if this stage holds one (a tombstone included).
    fn get(
        &self,
        cx: &ReadContext<'_>,
        state: &StageVersion,
        user_key: &[u8],
        lookup: &[u8],
    ) -> Result<Option<Entry>>;

    /// Adds iterators over every entry of the stage, in internal-key order each, to `out`.
    fn iterators(
        &self,
        cx: &ReadContext<'_>,
        state: &StageVersion,
        out: &mut Vec<Box<dyn InternalIterator>>,
    ) -> Result<()>;

    /// True if a run of `state` in `group` or a later group may hold `user_key` (a compaction
    /// into `group - 1` may drop a tombstone only when nothing below can hold the key).
    fn may_hold_from(&self, state: &StageVersion, group: usize, user_key: &[u8]) -> bool;

    /// How much this stage's state holds back writes (L0 triggers).
    fn write_pressure(&self, state: &StageVersion) -> WritePressure;

    /// The stage's compaction policy.
    fn policy(&self) -> &dyn CompactionPolicy;

    /// True if the stage keeps an older version only while a live snapshot may read it (a
    /// global index points at one version per key; trees updated in place overwrite): an
    /// iterator opened without a snapshot then pins its sequence as one for its lifetime.
    fn keeps_versions_for_snapshots_only(&self) -> bool {
        false
    }

    /// Adds the stage's own figures to `stats` (SLM-DB's global index, LAB-DB's L0 trees),
    /// `state` being the stage's state in the version the statistics describe.
    fn add_stats(&self, state: &StageVersion, stats: &mut crate::stats::DbStats) {
        let _ = (state, stats);
    }

    /// Takes the flush of `source` (stage 0, planned as `plan`) itself instead of a run being
    /// written (LAB-DB: into its mutable tree, no run); true if it did. `number` is the file
    /// number taken for the flush. Default: false (the engine writes the run).
    fn take_flush(
        &self,
        host: &dyn super::StageHost,
        source: &dyn super::FlushSource,
        number: u64,
        plan: &super::FlushPlan,
    ) -> Result<bool> {
        let _ = (host, source, number, plan);
        Ok(false)
    }

    /// Writes the flush of `source` as run `number` at `target` itself (stage 0), for a stage
    /// whose runs are written differently from the engine's writers (SLM-DB's: each entry's
    /// data block recorded, and its global index told of the table once it is durable, before
    /// the manifest names it; a row: a sorted array with hints into `over`, the newest row of
    /// the target group), synced with its directory; returns the run's metadata and the bytes
    /// written besides the run (counted as the flush's), or `None` for the engine's writer
    /// (the default).
    fn write_flush_run(
        &self,
        host: &dyn super::StageHost,
        source: &dyn super::FlushSource,
        number: u64,
        target: RunTarget,
        over: Option<&crate::version::FileMetaData>,
    ) -> Result<Option<(crate::version::FileMetaData, u64)>> {
        let _ = (host, source, number, target, over);
        Ok(None)
    }

    /// Stage 0's upkeep, run on the flush thread after each flush and when it has no flush to
    /// do (LAB-DB's tree switch and deferred reclamation; a failure poisons the database
    /// through the host); returns how long the idle flush thread may wait before running it
    /// again, `None` when the stage has no upkeep. Default: none.
    fn flush_upkeep(&self, host: &dyn super::StageHost) -> Option<std::time::Duration> {
        let _ = host;
        None
    }

    /// Runs after a flush's or a compaction's version is installed, off the state lock,
    /// given the stage's state in the version readers see now (SLM-DB's leaf scan for
    /// compaction candidates, rule R2). A failure poisons the database. Default: nothing.
    fn after_install(&self, state: &StageVersion) -> Result<()> {
        let _ = state;
        Ok(())
    }

    /// Frees what the stage's versions no longer need once nothing holds it (a row container:
    /// the PM pages of rows wholly in their dead ranges), run after each flush's and
    /// compaction's install and at open, given the engine and the stage's index. A failure
    /// poisons the database. Default: nothing.
    fn reclaim(&self, host: &dyn super::StageHost, stage: usize) -> Result<()> {
        let _ = (host, stage);
        Ok(())
    }

    /// The structure the stage keeps in the PM pool besides files (opened with the pool), if
    /// any.
    fn pool_structure(&self) -> Option<super::PoolStructure> {
        None
    }

    /// Attaches the stage at open to what it keeps in the pool, rebuilding its DRAM state
    /// (see [`super::AttachContext`]). Default: nothing to attach.
    fn attach(&self, cx: &mut super::AttachContext<'_>) -> Result<()> {
        let _ = cx;
        Ok(())
    }

    /// Verifies, for `tierkv check`, what stage `stage` holds beyond its runs' blocks (which
    /// the check reads for every stage): pointers between runs, the structures it keeps in
    /// the pool; adds what it verified to `report`. Default: nothing more to verify.
    fn check(
        &self,
        cx: &super::CheckContext<'_>,
        stage: usize,
        report: &mut super::CheckReport,
    ) -> Result<()> {
        let _ = (cx, stage, report);
        Ok(())
    }

    /// Verifies run `run` of stage `stage` for `tierkv check` when the stage reads it
    /// otherwise than as a whole file (a row: only its live entries are read, its dead ones'
    /// pages may be freed); returns its entry count. `None`: the engine reads and verifies
    /// every block (the default).
    fn check_run(
        &self,
        tables: &TableCache,
        stage: usize,
        run: &crate::version::FileMetaData,
    ) -> Option<Result<u64>> {
        let _ = (tables, stage, run);
        None
    }

    /// The stage's part in `task`, a compaction of its runs ([`super::CompactionRule`]), asked
    /// once per task before the merge; it may fill in what the policy left to the executor (a
    /// row task's entry intervals). Default: [`super::PlainRule`].
    fn compaction_rule(
        &self,
        cx: &super::RuleContext<'_>,
        task: &mut CompactionTask,
    ) -> Result<Box<dyn super::CompactionRule>> {
        let _ = (cx, task);
        Ok(Box::new(super::PlainRule))
    }

    /// What a manual compaction (`Db::compact_range`) does in this stage before it walks the
    /// groups the policy names, given the stage's state and the walk's `progress` so far (the
    /// stage's own, zero at the start): LAB-DB compacts its immutable tree whole, has the
    /// flush thread make the mutable tree immutable, and compacts that one too. Default: the
    /// groups at once.
    fn manual_step(&self, state: &StageVersion, progress: &mut ManualProgress) -> ManualStep {
        let _ = (state, progress);
        ManualStep::Groups
    }

    /// What the stage shares with its design's front end, if anything, of a type only the two
    /// know (LAB-DB's L0 trees, whose value files LAB-DB's log writes the values into); the
    /// front end downcasts it. Default: nothing.
    fn shared_with_front_end(&self) -> Option<Arc<dyn std::any::Any + Send + Sync>> {
        None
    }

    /// True if the stage's own structure may name a flushed run before the manifest does (a
    /// global index learns a table once it is durable, before its manifest record): such a run
    /// is never removed when the step that wrote it fails, and the next open adopts it or
    /// sweeps it.
    fn names_runs_before_manifest(&self) -> bool {
        false
    }

    /// The work the stage runs on threads of its own for the life of the database (FluidKV's
    /// load detector, with `compaction.load_aware`), given a [`super::StageHost`].
    fn background_tasks(&self) -> Vec<super::BackgroundTask> {
        Vec::new()
    }
}
