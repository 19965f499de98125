//! Compaction: the policy seam and the policies.
//!
//! A policy is pure (mini-lsm's controllers, fjall's `choose`): [`CompactionPolicy::choose`]
//! takes a view of one stage's state and returns a task (which runs of which groups to merge,
//! where the outputs go), and [`CompactionPolicy::apply`] turns a finished task and its output
//! runs into the version edit that installs them. Neither does I/O or takes a lock. One
//! executor (`db/compact/`) runs any task over any run kind, and the compaction simulator
//! ([`simulate`]) runs a policy over a key stream without I/O to report its write
//! amplification in milliseconds.

mod accumulative;
mod lab;
mod leveled;
mod reuse;
mod rows;
pub(crate) mod selective;
mod universal;

pub(crate) use accumulative::AccumulativePolicy;
pub(crate) use lab::LabPolicy;
pub use leveled::max_bytes_for_level;
pub(crate) use leveled::LeveledPolicy;
pub(crate) use reuse::ReuseContext;
pub(crate) use rows::{live_row_bytes, row_info, Container, RowPolicy, RowTask};
pub(crate) use selective::SelectivePolicy;
pub(crate) use universal::{sorted_run_count, UniversalPolicy};

use crate::tier::Tier;
use crate::version::{FileMetaData, RunKind, StageVersion, VersionEdit};
use std::sync::Arc;

/// Where a flush (or a compaction's output) is written: the group of the stage, the tier, the
/// run kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RunTarget {
    /// The group the runs go to.
    pub group: usize,
    /// The tier they are written to.
    pub tier: Tier,
    /// What they are made of.
    pub kind: RunKind,
    /// A row of a row container: a sorted array with cross-row hints into the group's newest
    /// row, a size sketch and no Bloom filter.
    pub row: bool,
}

/// Why a compaction was planned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// The first group reached its run-count trigger (L0 files).
    Level0Files,
    /// A group exceeded its target size.
    LevelSize,
    /// `compact_range` asked for it.
    Manual,
    /// A set (a Skip-Array Tree, a guard) reached its floor limit.
    SetFull,
    /// A row container's rows reached their trigger, or its compactor is being drained: a
    /// key range moves out of rows into L1.
    Rows,
    /// SLM-DB's selective compaction: tables of the single level its candidate rules listed.
    Selective,
    /// LAB-DB: a chunk of the immutable L0 tree moves into L1.
    TreeChunk,
    /// Size-tiered compaction: sorted runs of similar size, or more runs than the trigger.
    SortedRuns,
    /// Size-tiered compaction: the newer runs outgrew the oldest; every run is merged.
    SizeAmplification,
}

/// What a policy sees of one stage.
#[derive(Clone, Copy, Debug)]
pub struct PolicyView<'a> {
    /// The stage's index in the design.
    pub stage: usize,
    /// The stage's runs.
    pub state: &'a StageVersion,
    /// Per group of the stage: true while a running compaction reads or writes it.
    pub busy: &'a [bool],
    /// Per group: where the next size-triggered compaction starts (round-robin); empty = start.
    pub pointers: &'a [Vec<u8>],
}

/// One set of the output group a task adds floors to ([`OutputPlan::IntoSets`]).
#[derive(Clone, Debug)]
pub struct SetTarget {
    /// The set's id.
    pub id: u64,
    /// The smallest user key the set takes: keys from here up to the next set's `lo` go to
    /// this set (keys below the first set's `lo` go to the first set).
    pub lo: Vec<u8>,
    /// The set's floors now, bottom first: the new floor's cascade pointers point into them.
    pub floors: Vec<Arc<FileMetaData>>,
}

/// How a task's merged output is cut into runs.
#[derive(Clone, Debug)]
pub enum OutputPlan {
    /// Runs of about [`CompactionPolicy::target_run_bytes`], cut between user keys; the output
    /// group's runs that overlap them are all inputs (leveled compaction, a write-back).
    BySize {
        /// User keys, sorted, at which a new run starts whatever the size of the open one: the
        /// `lo` of every input set after the first when one task writes back several sets, so
        /// that no output spans the gap between two of them (where a set that is not an input
        /// may lie). Empty for leveled compaction.
        breaks: Vec<Vec<u8>>,
    },
    /// One run per set of the output group (sorted by `lo`), which becomes the set's new top
    /// floor; the set's older floors stay (NVLSM's accumulative compaction, a guard's new
    /// run). Sets no key falls into get no run. With `cascade`, each new floor carries cascade
    /// pointers into the floors below it (a Skip-Array Tree); without, it is a plain run.
    IntoSets {
        /// The output group's sets.
        sets: Vec<SetTarget>,
        /// Whether new floors get cascade pointers.
        cascade: bool,
    },
}

impl OutputPlan {
    /// Runs cut by size only.
    pub fn by_size() -> Self {
        OutputPlan::BySize { breaks: Vec::new() }
    }

    /// True if the outputs join older runs of the output group that are not inputs: a
    /// tombstone written there still hides them and must be kept.
    pub fn joins_older_runs(&self) -> bool {
        matches!(self, OutputPlan::IntoSets { .. })
    }
}

/// Walks the `breaks` of an [`OutputPlan::BySize`] plan along the user keys of a merge.
#[derive(Debug)]
pub struct BreakCursor<'a> {
    breaks: &'a [Vec<u8>],
    next: usize,
}

impl<'a> BreakCursor<'a> {
    /// A cursor before the first of `breaks` (sorted).
    pub fn new(breaks: &'a [Vec<u8>]) -> Self {
        BreakCursor { breaks, next: 0 }
    }

    /// True if `user_key` is at or past a break that no earlier key passed: the run open
    /// before it must end. Keys must come in non-decreasing order.
    pub fn passes(&mut self, user_key: &[u8]) -> bool {
        let from = self.next;
        while self.next < self.breaks.len() && self.breaks[self.next].as_slice() <= user_key {
            self.next += 1;
        }
        self.next > from
    }
}

/// Routes the user keys of a merge, in increasing order, to the sets of an
/// [`OutputPlan::IntoSets`] plan: the index of the set each key goes to.
#[derive(Debug)]
pub struct SetRouter<'a> {
    sets: &'a [SetTarget],
    current: usize,
}

impl<'a> SetRouter<'a> {
    /// A router over `sets` (sorted by `lo`, not empty).
    pub fn new(sets: &'a [SetTarget]) -> Self {
        debug_assert!(!sets.is_empty());
        SetRouter { sets, current: 0 }
    }

    /// The set of `user_key`; keys must come in non-decreasing order.
    pub fn route(&mut self, user_key: &[u8]) -> usize {
        while self.current + 1 < self.sets.len()
            && self.sets[self.current + 1].lo.as_slice() <= user_key
        {
            self.current += 1;
        }
        self.current
    }
}

/// What a compaction will do: merge `inputs` (runs of the stage's groups) into new runs of
/// `output_group`, or move the single input run there unchanged.
#[derive(Clone, Debug)]
pub struct CompactionTask {
    /// Why.
    pub reason: Reason,
    /// The stage compacted.
    pub stage: usize,
    /// Input runs by group, the source group first.
    pub inputs: Vec<(usize, Vec<Arc<FileMetaData>>)>,
    /// The group the outputs go to.
    pub output_group: usize,
    /// Move the single input run down without rewriting it.
    pub trivial_move: bool,
    /// How the merged output is cut into runs.
    pub plan: OutputPlan,
    /// The policy's own part of the task, of a type only the policy and its stage know: the
    /// stage's compaction rule and the policy's `apply` read it, the executor never does (a
    /// row task's key range and entries, [`RowTask`]; a tree chunk of LAB-DB's L0). `None`: a
    /// task of runs only.
    pub payload: Option<TaskPayload>,
    /// Filled by the executor before the merge: per input run (by number), the user-key
    /// ranges of it that stay in place as runs of their own (FluidKV's reuse of untouched
    /// logical sorted tables, `compaction.reuse_untouched_tables`), sorted and disjoint; the
    /// merge reads the run without them.
    pub holes: Vec<(u64, Holes)>,
}

/// Sorted, disjoint, inclusive user-key ranges (`(first, last)`) a merge skips in one input.
pub type Holes = Arc<Vec<(Vec<u8>, Vec<u8>)>>;

/// A row's dead entry intervals and the entries of a compaction's range in it
/// ([`RowTask::entries`]).
pub type RowEntries = (Vec<(u32, u32)>, (u32, u32));

/// A policy's own part of a task ([`CompactionTask::payload`]).
#[derive(Clone)]
pub struct TaskPayload(Arc<dyn std::any::Any + Send + Sync>);

impl TaskPayload {
    /// A payload holding `value`.
    pub fn new<T: std::any::Any + Send + Sync>(value: T) -> Self {
        TaskPayload(Arc::new(value))
    }

    /// The value, if it is a `T`.
    pub fn get<T: std::any::Any>(&self) -> Option<&T> {
        self.0.downcast_ref()
    }
}

impl std::fmt::Debug for TaskPayload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TaskPayload(..)")
    }
}

impl CompactionTask {
    /// The task's payload, if it is a `T`.
    pub fn payload<T: std::any::Any>(&self) -> Option<&T> {
        self.payload.as_ref().and_then(|p| p.get())
    }

    /// The source group.
    #[cfg(test)]
    pub fn source_group(&self) -> usize {
        self.inputs[0].0
    }

    /// Every group the task reads or writes (busy while it runs).
    pub fn groups(&self) -> Vec<usize> {
        let mut g: Vec<usize> = self.inputs.iter().map(|(g, _)| *g).collect();
        g.push(self.output_group);
        g.sort_unstable();
        g.dedup();
        g
    }

    /// Every input run.
    pub fn input_runs(&self) -> impl Iterator<Item = &Arc<FileMetaData>> + '_ {
        self.inputs.iter().flat_map(|(_, runs)| runs.iter())
    }

    /// A one-line summary used by golden tests: `L0->L1 [1,2]+[3] merge`.
    #[cfg(test)]
    pub fn summary(&self) -> String {
        let nums = |v: &[Arc<FileMetaData>]| {
            v.iter()
                .map(|f| f.number.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        let parts: Vec<String> = self
            .inputs
            .iter()
            .map(|(_, runs)| format!("[{}]", nums(runs)))
            .collect();
        let parts = if self.inputs.len() == 1 {
            format!("{}+[]", parts[0])
        } else {
            parts.join("+")
        };
        format!(
            "L{}->L{} {parts} {}",
            self.source_group(),
            self.output_group,
            if self.trivial_move { "move" } else { "merge" }
        )
    }
}

/// A stage's compaction policy: pure functions from the stage's state to a task, and from a
/// finished task to the edit that installs it.
pub trait CompactionPolicy: Send + Sync {
    /// The most urgent compaction whose groups are all free, if any group needs one.
    fn choose(&self, view: &PolicyView<'_>) -> Option<CompactionTask>;

    /// The source groups a manual compaction of `[begin, end]` (unbounded when `None`) walks,
    /// in order.
    fn manual_groups(
        &self,
        view: &PolicyView<'_>,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Vec<usize>;

    /// The manual compaction of `group`'s runs overlapping `[begin, end]`, if it has any.
    fn manual(
        &self,
        view: &PolicyView<'_>,
        group: usize,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Option<CompactionTask>;

    /// The tier and run kind of the task's outputs, and the size at which outputs are cut.
    fn output(&self, task: &CompactionTask) -> RunTarget;

    /// The size at which a compaction output run is cut (only between user keys).
    fn target_run_bytes(&self) -> u64;

    /// The edit that replaces the task's inputs by `outputs` (for a move: the input, in the
    /// output group), with the policy's own bookkeeping (round-robin pointers).
    fn apply(
        &self,
        view: &PolicyView<'_>,
        task: &CompactionTask,
        outputs: Vec<FileMetaData>,
    ) -> VersionEdit;
}

/// Stages written as text, for the policies' tests.
#[cfg(test)]
pub(crate) mod spec {
    use crate::format::{make_internal_key, ValueType};
    use crate::tier::Tier;
    use crate::version::{
        FileMetaData, GroupOrder, RunKind, StageLayout, StageVersion, Version, VersionEdit,
    };

    /// A one-stage version laid out as `groups`, from lines `group: run run ...` where a run is
    /// `number[:set]:first-last:size_kib` (`with_set`: the set field is there), each run
    /// `kind` on `tier`, its keys `first` (sequence 9) to `last` (sequence 1).
    pub(crate) fn stage(
        spec: &str,
        name: &'static str,
        groups: Vec<GroupOrder>,
        with_set: bool,
        tier: Tier,
        kind: RunKind,
    ) -> StageVersion {
        let mut e = VersionEdit::default();
        for line in spec.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let (group, runs) = line.split_once(':').unwrap();
            for f in runs.split_whitespace() {
                let mut p: Vec<&str> = f.split(':').collect();
                let set = if with_set {
                    p.remove(1).parse().unwrap()
                } else {
                    0
                };
                let (a, b) = p[1].split_once('-').unwrap();
                e.stage_mut(0).added.push((
                    group.trim().parse().unwrap(),
                    FileMetaData {
                        number: p[0].parse().unwrap(),
                        set,
                        file_size: p[2].parse::<u64>().unwrap() << 10,
                        num_entries: 1,
                        smallest: make_internal_key(a.as_bytes(), 9, ValueType::Value),
                        largest: make_internal_key(b.as_bytes(), 1, ValueType::Value),
                        tier,
                        kind,
                        row: None,
                        value_refs: Vec::new(),
                        backing: None,
                    },
                ));
            }
        }
        let layout = StageLayout { name, groups };
        Version::new(vec![layout].into())
            .apply(&e)
            .unwrap()
            .stages
            .remove(0)
    }
}
