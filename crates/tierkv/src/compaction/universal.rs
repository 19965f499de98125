//! The size-tiered policy (`tiered`): RocksDB's universal compaction over a stage laid out as
//! levels, every output an SSTable on SSD.
//!
//! A **sorted run** is one L0 table (newest first) or one whole level below L0 (newer levels
//! first); ordered newest to oldest they are the stage's history. Nothing happens until there
//! are `compaction.level0_compaction_trigger` sorted runs. Then, as RocksDB's
//! `UniversalCompactionPicker` does, in this order:
//!
//! 1. **Size amplification**: when the runs newer than the oldest hold more than
//!    `max_size_amplification_percent` of the oldest run's bytes, every run is merged into the
//!    last level.
//! 2. **Size ratio**: from the newest free run on, the next older run joins while its size is at
//!    most the picked runs' total times `(100 + size_ratio) / 100`, up to `max_merge_width`
//!    runs; the first start that gathers `min_merge_width` runs is merged.
//! 3. **Run count**: if more than the trigger's number of free runs remain, the newest
//!    `free - trigger + 1` runs are merged whatever their sizes.
//!
//! The merged runs are contiguous in age, so the output takes their place: the level just
//! above the next older run that is not merged (the last level when every run is). One
//! difference from RocksDB: RocksDB may write a merge back into L0, because it orders L0 by
//! sequence number; this engine orders L0 by file number and a flush can take its number
//! before a running compaction takes its output's, so an output in L0 could shadow newer data.
//! A merge here therefore never ends in L0: one that would (the next older run is an L0 table,
//! or L1) takes the following older runs too, until its output level is L1 or deeper.
//!
//! The golden cases of `testdata/universal_picks.txt` pin the picker down.

use super::RunTarget;
use super::{CompactionPolicy, CompactionTask, OutputPlan, PolicyView, Reason};
use crate::options::UniversalOptions;
use crate::tier::Tier;
use crate::version::{FileMetaData, RunKind, StageVersion, VersionEdit};
use std::sync::Arc;

/// The size-tiered policy with its options.
#[derive(Clone, Debug)]
pub(crate) struct UniversalPolicy {
    options: UniversalOptions,
    /// Sorted runs at which compaction starts (`level0_compaction_trigger`).
    trigger: usize,
    /// The size at which outputs are cut into tables.
    target_file_size: u64,
}

/// One sorted run: an L0 table or a whole level.
#[derive(Debug)]
struct SortedRun {
    group: usize,
    runs: Vec<Arc<FileMetaData>>,
    bytes: u64,
}

/// The stage's sorted runs, newest first.
fn sorted_runs(state: &StageVersion) -> Vec<SortedRun> {
    let l0 = state.groups[0].iter().rev().map(|f| SortedRun {
        group: 0,
        runs: vec![Arc::clone(f)],
        bytes: f.file_size,
    });
    let levels = (1..state.groups.len())
        .filter(|&g| !state.groups[g].is_empty())
        .map(|g| SortedRun {
            group: g,
            runs: state.groups[g].to_vec(),
            bytes: state.group_bytes(g),
        });
    l0.chain(levels).collect()
}

/// The number of sorted runs of `state` (the stage's write pressure counts them).
pub(crate) fn sorted_run_count(state: &StageVersion) -> usize {
    state.groups[0].len() + state.groups[1..].iter().filter(|g| !g.is_empty()).count()
}

impl UniversalPolicy {
    /// A policy with `options`, starting at `trigger` sorted runs, cutting outputs at
    /// `target_file_size`.
    pub fn new(options: &UniversalOptions, trigger: usize, target_file_size: u64) -> Self {
        UniversalPolicy {
            options: options.clone(),
            trigger: trigger.max(1),
            target_file_size,
        }
    }

    /// The task merging `runs[start..end]`, extended past the runs that would leave its
    /// output in L0; `None` if a run it needs, or its output level, is busy.
    fn task(
        &self,
        view: &PolicyView<'_>,
        runs: &[SortedRun],
        start: usize,
        mut end: usize,
        reason: Reason,
    ) -> Option<CompactionTask> {
        let busy = |g: usize| view.busy[g];
        while end < runs.len() && runs[end].group < 2 {
            if busy(runs[end].group) {
                return None;
            }
            end += 1;
        }
        let output_group = match runs.get(end) {
            Some(next) => next.group - 1,
            None => view.state.groups.len() - 1,
        };
        if busy(output_group) || runs[start..end].iter().any(|r| busy(r.group)) {
            return None;
        }
        // Inputs by group, the newest group first; L0's tables in one entry, older first.
        let mut inputs: Vec<(usize, Vec<Arc<FileMetaData>>)> = Vec::new();
        for r in runs[start..end].iter().rev() {
            match inputs.iter_mut().find(|(g, _)| *g == r.group) {
                Some((_, files)) => files.extend(r.runs.iter().cloned()),
                None => inputs.push((r.group, r.runs.clone())),
            }
        }
        inputs.sort_by_key(|(g, _)| *g);
        Some(CompactionTask {
            reason,
            stage: view.stage,
            inputs,
            output_group,
            trivial_move: false,
            plan: OutputPlan::by_size(),
            payload: None,
            holes: Vec::new(),
        })
    }

    /// Step 1: every run into the last level when the newer runs outgrow the oldest.
    fn reduce_size_amplification(
        &self,
        view: &PolicyView<'_>,
        runs: &[SortedRun],
    ) -> Option<CompactionTask> {
        let (oldest, newer) = runs.split_last()?;
        let start = newer.iter().position(|r| !view.busy[r.group])?;
        if newer[start..].iter().any(|r| view.busy[r.group]) || view.busy[oldest.group] {
            return None;
        }
        let newer_bytes: u64 = newer[start..].iter().map(|r| r.bytes).sum();
        let limit = u128::from(self.options.max_size_amplification_percent);
        if u128::from(newer_bytes) * 100 <= limit * u128::from(oldest.bytes) {
            return None;
        }
        self.task(view, runs, start, runs.len(), Reason::SizeAmplification)
    }

    /// Steps 2 and 3: the first window of similar-sized runs (`ratio` percent of slack, at most
    /// `max_count` runs) holding at least `min_merge_width` of them.
    fn reduce_sorted_runs(
        &self,
        view: &PolicyView<'_>,
        runs: &[SortedRun],
        ratio: f64,
        max_count: usize,
    ) -> Option<CompactionTask> {
        let min_width = self.options.min_merge_width.max(2);
        for start in 0..runs.len() {
            if view.busy[runs[start].group] {
                continue;
            }
            let mut size = runs[start].bytes as f64;
            let mut count = 1;
            while count < max_count && start + count < runs.len() {
                let next = &runs[start + count];
                if view.busy[next.group] || size * (100.0 + ratio) / 100.0 < next.bytes as f64 {
                    break;
                }
                size += next.bytes as f64;
                count += 1;
            }
            if count >= min_width {
                if let Some(t) = self.task(view, runs, start, start + count, Reason::SortedRuns) {
                    return Some(t);
                }
            }
        }
        None
    }
}

impl CompactionPolicy for UniversalPolicy {
    fn choose(&self, view: &PolicyView<'_>) -> Option<CompactionTask> {
        let runs = sorted_runs(view.state);
        if runs.len() < self.trigger {
            return None;
        }
        if let Some(t) = self.reduce_size_amplification(view, &runs) {
            return Some(t);
        }
        let width = self.options.max_merge_width;
        let ratio = self.options.size_ratio as f64;
        if let Some(t) = self.reduce_sorted_runs(view, &runs, ratio, width) {
            return Some(t);
        }
        let free = runs.iter().filter(|r| !view.busy[r.group]).count();
        if free > self.trigger {
            return self.reduce_sorted_runs(view, &runs, f64::INFINITY, free - self.trigger + 1);
        }
        None
    }

    /// One pass: a manual compaction merges every sorted run into the last level, whatever the
    /// range (as RocksDB's `CompactRange` under universal compaction).
    fn manual_groups(
        &self,
        _view: &PolicyView<'_>,
        _begin: Option<&[u8]>,
        _end: Option<&[u8]>,
    ) -> Vec<usize> {
        vec![0]
    }

    fn manual(
        &self,
        view: &PolicyView<'_>,
        _group: usize,
        _begin: Option<&[u8]>,
        _end: Option<&[u8]>,
    ) -> Option<CompactionTask> {
        let runs = sorted_runs(view.state);
        let last = view.state.groups.len() - 1;
        match runs.as_slice() {
            [] => None,
            [only] if only.group == last => None,
            _ => {
                // The manual loop waits for the task's groups itself.
                let free = vec![false; view.busy.len()];
                let all = PolicyView {
                    busy: &free,
                    ..*view
                };
                self.task(&all, &runs, 0, runs.len(), Reason::Manual)
            }
        }
    }

    fn output(&self, task: &CompactionTask) -> RunTarget {
        RunTarget {
            group: task.output_group,
            tier: Tier::Ssd,
            kind: RunKind::Sst,
            row: false,
        }
    }

    fn target_run_bytes(&self) -> u64 {
        self.target_file_size
    }

    fn apply(
        &self,
        view: &PolicyView<'_>,
        task: &CompactionTask,
        outputs: Vec<FileMetaData>,
    ) -> VersionEdit {
        let mut edit = VersionEdit::default();
        let s = edit.stage_mut(view.stage);
        for (group, runs) in &task.inputs {
            s.deleted.extend(runs.iter().map(|f| (*group, f.number)));
        }
        s.added
            .extend(outputs.into_iter().map(|m| (task.output_group, m)));
        edit
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version::GroupOrder;

    /// A 5-level stage from lines `level: number:first-last:size_kib ...`.
    fn stage(spec: &str) -> StageVersion {
        let mut groups = vec![GroupOrder::Disjoint; 5];
        groups[0] = GroupOrder::Overlapping;
        crate::compaction::spec::stage(spec, "tiers", groups, false, Tier::Ssd, RunKind::Sst)
    }

    /// Trigger 4, RocksDB's defaults otherwise.
    fn policy() -> UniversalPolicy {
        UniversalPolicy::new(&UniversalOptions::default(), 4, 64 << 20)
    }

    fn view<'a>(s: &'a StageVersion, busy: &'a [bool], ptrs: &'a [Vec<u8>]) -> PolicyView<'a> {
        PolicyView {
            stage: 0,
            state: s,
            busy,
            pointers: ptrs,
        }
    }

    /// The golden cases of `testdata/universal_picks.txt`: blocks of `case:`, the state's
    /// indented lines, `busy:` (the busy levels, or `-`) and `expect:`; `#` starts a comment.
    #[test]
    fn golden_picks() {
        let text = include_str!("testdata/universal_picks.txt");
        let mut cases: Vec<(String, String, Vec<usize>, String)> = Vec::new();
        for line in text.lines().map(|l| l.split('#').next().unwrap_or("")) {
            if line.trim().is_empty() || line.trim() == "state:" {
                continue;
            }
            if let Some(name) = line.strip_prefix("case:") {
                cases.push((name.trim().into(), String::new(), Vec::new(), String::new()));
                continue;
            }
            let c = cases.last_mut().expect("a line before the first case");
            if let Some(b) = line.strip_prefix("busy:") {
                c.2 = b
                    .split_whitespace()
                    .filter_map(|w| w.parse().ok())
                    .collect();
            } else if let Some(e) = line.strip_prefix("expect:") {
                c.3 = e.trim().to_string();
            } else {
                c.1.push_str(line.trim());
                c.1.push('\n');
            }
        }
        assert!(cases.len() >= 8, "{} golden cases", cases.len());
        let ptrs = vec![Vec::new(); 5];
        for (name, state, busy_levels, expect) in cases {
            let s = stage(&state);
            let mut busy = [false; 5];
            for l in busy_levels {
                busy[l] = true;
            }
            let got = policy()
                .choose(&view(&s, &busy, &ptrs))
                .map_or("none".into(), |t| t.summary());
            assert_eq!(got, expect, "case {name:?}:\n{state}");
        }
    }

    #[test]
    fn manual_merges_everything_into_the_last_level() {
        let s = stage("0: 7:a-c:1 8:b-d:1\n2: 3:a-z:10");
        let busy = [false; 5];
        let ptrs = vec![Vec::new(); 5];
        let v = view(&s, &busy, &ptrs);
        assert_eq!(policy().manual_groups(&v, None, None), vec![0]);
        let t = policy().manual(&v, 0, Some(b"x"), None).unwrap();
        assert_eq!(t.summary(), "L0->L4 [7,8]+[3] merge");
        // Apply deletes every input and adds the outputs to the last level.
        let out = (*s.groups[2][0]).clone();
        let e = policy().apply(&v, &t, vec![FileMetaData { number: 9, ..out }]);
        assert_eq!(e.stages[0].deleted, vec![(0, 7), (0, 8), (2, 3)]);
        assert_eq!(e.stages[0].added.len(), 1);
        assert_eq!(e.stages[0].added[0].0, 4);
        // One run in the last level: nothing to do.
        let done = stage("4: 3:a-z:10");
        assert!(policy()
            .manual(&view(&done, &busy, &ptrs), 0, None, None)
            .is_none());
        assert_eq!(sorted_run_count(&s), 3);
    }
}
