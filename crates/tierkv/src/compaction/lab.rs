//! LAB-DB's compaction policy (Kim et al., "LAB-DB", ACM TOS 2024, section 3.3): while there is
//! an immutable L0 tree, its next chunk (the leftmost keys not compacted yet, about
//! `labdb.chunk_bytes` of values; `crate::labdb::l0::LabL0::next_chunk`) is merged with the
//! overlapping L1 tables into L1, unless a level scores higher than the trees
//! ([`LabPolicy::choose`]); the record of the last chunk clears the immutable role. L1 and
//! deeper are leveled ([`LeveledPolicy`]; the stage's group 0 stays empty: the trees are L0).
//!
//! The chunk is read from the trees' current state, not from the version: the policy holds the
//! L0 (as SLM-DB's holds its global index).

use super::RunTarget;
use super::{
    CompactionPolicy, CompactionTask, LeveledPolicy, OutputPlan, PolicyView, Reason, TaskPayload,
};
use crate::labdb::l0::{roles_of, LabChunk, LabL0};
use crate::options::CompactionOptions;
use crate::version::{FileMetaData, TreeRoles, VersionEdit};
use std::sync::Arc;

/// The policy of LAB-DB's stage.
pub(crate) struct LabPolicy {
    l0: Arc<LabL0>,
    leveled: LeveledPolicy,
}

impl LabPolicy {
    /// The policy over `l0` and leveled levels shaped by `options`.
    pub(crate) fn new(l0: Arc<LabL0>, options: &CompactionOptions) -> Self {
        LabPolicy {
            l0,
            leveled: LeveledPolicy::new(options),
        }
    }

    /// The task that compacts the immutable tree's next chunk, if there is one.
    fn chunk_task(&self, view: &PolicyView<'_>, reason: Reason) -> Option<CompactionTask> {
        let roles = roles_of(view.state.trees);
        if roles.immutable == 0 || view.busy[0] || view.busy[1] {
            return None;
        }
        // A failed read of the tree shows again when the task runs; here it only means no task.
        let chunk = self.l0.next_chunk(roles).ok().flatten()?;
        let l1 = if chunk.entries > 0 {
            view.state
                .overlapping(1, Some(chunk.lo.as_slice()), Some(chunk.hi.as_slice()))
        } else {
            Vec::new()
        };
        Some(CompactionTask {
            reason,
            stage: view.stage,
            inputs: vec![(0, Vec::new()), (1, l1)],
            output_group: 1,
            trivial_move: false,
            plan: OutputPlan::by_size(),
            payload: Some(TaskPayload::new(chunk)),
            holes: Vec::new(),
        })
    }
}

impl CompactionPolicy for LabPolicy {
    /// The immutable tree's next chunk, unless a level scores higher than the trees: the trees'
    /// score is their leaves over the switch point (`immutable_at` of the region: about 1 just
    /// after a switch, 1.33 when the region is full and writes stop), a level's is the leveled
    /// one (its bytes over its target). So the chunks take priority as the region fills (the
    /// paper's scheduler), and a level the chunks keep filling is drained before it grows far
    /// past its target (each chunk merges with the L1 tables under its key range: an L1 left
    /// to grow makes every chunk read more of it).
    fn choose(&self, view: &PolicyView<'_>) -> Option<CompactionTask> {
        let roles = roles_of(view.state.trees);
        if roles.immutable != 0 {
            let (m, i) = self.l0.usage(roles);
            let o = self.l0.options();
            let switch_at = (o.leaf_region_bytes as f64 * o.immutable_at).max(1.0);
            let trees = (m + i) as f64 / switch_at;
            let level = self
                .leveled
                .level_scores(view.state)
                .into_iter()
                .skip(1)
                .fold(0.0f64, f64::max);
            if level > trees {
                if let Some(t) = self.leveled.choose(view) {
                    return Some(t);
                }
            }
        }
        self.chunk_task(view, Reason::TreeChunk)
            .or_else(|| self.leveled.choose(view))
    }

    fn manual_groups(
        &self,
        view: &PolicyView<'_>,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Vec<usize> {
        self.leveled.manual_groups(view, begin, end)
    }

    /// From group 0: the immutable tree's next chunk (`Db::compact_range` runs these until
    /// the tree is compacted whole, has the mutable tree switched, and compacts that one too).
    fn manual(
        &self,
        view: &PolicyView<'_>,
        group: usize,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Option<CompactionTask> {
        if group == 0 {
            return self.chunk_task(view, Reason::Manual);
        }
        self.leveled.manual(view, group, begin, end)
    }

    fn output(&self, task: &CompactionTask) -> RunTarget {
        self.leveled.output(task)
    }

    fn target_run_bytes(&self) -> u64 {
        self.leveled.target_run_bytes()
    }

    fn apply(
        &self,
        view: &PolicyView<'_>,
        task: &CompactionTask,
        outputs: Vec<FileMetaData>,
    ) -> VersionEdit {
        let mut edit = self.leveled.apply(view, task, outputs);
        if let Some(chunk) = task.payload::<LabChunk>() {
            if chunk.last {
                let roles = roles_of(view.state.trees);
                edit.stage_mut(view.stage).trees = Some(TreeRoles {
                    mutable: roles.mutable,
                    immutable: 0,
                });
            }
        }
        edit
    }
}
