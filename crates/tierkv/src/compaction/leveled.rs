//! The leveled compaction policy (LevelDB/RocksDB leveled) over a stage whose groups are levels.
//!
//! * L0's score is its run count over `level0_compaction_trigger`; level `n >= 1` scores its
//!   bytes over its target `max_bytes_for_level_base * multiplier^(n-1)`. The last level is
//!   never a source. The highest score `>= 1` whose source and output levels are both free wins.
//! * An L0 compaction takes every L0 run (they overlap one another under random writes) plus
//!   the overlapping L1 runs. A level-`n` compaction takes the first run after the level's
//!   compaction pointer (wrapping around) plus the overlapping runs of level `n+1`.
//! * A single input run with nothing overlapping below is moved, not rewritten.
//! * Outputs are runs of the stage's kind and tier (SSTables on SSD for `leveled`; see
//!   `LeveledPolicy::with_output`), cut at `target_file_size` between user keys.
//!
//! The golden cases of `testdata/leveled_picks.txt` pin the picker down.

use super::RunTarget;
use super::{CompactionPolicy, CompactionTask, OutputPlan, PolicyView, Reason};
use crate::format::compare_internal;
use crate::options::CompactionOptions;
use crate::tier::Tier;
use crate::version::{FileMetaData, RunKind, StageVersion, VersionEdit};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

/// The target size of `level` (>= 1).
pub fn max_bytes_for_level(options: &CompactionOptions, level: usize) -> u64 {
    debug_assert!(level >= 1);
    let mut bytes = options.max_bytes_for_level_base;
    for _ in 1..level {
        bytes = bytes.saturating_mul(options.level_size_multiplier);
    }
    bytes
}

/// The leveled policy with its options.
#[derive(Clone, Debug)]
pub(crate) struct LeveledPolicy {
    options: CompactionOptions,
    /// Where compaction outputs go and what they are made of.
    output_tier: Tier,
    output_kind: RunKind,
    /// L0's compaction trigger as a load detector sets it (`compaction.load_aware`); `None`:
    /// `level0_compaction_trigger`.
    trigger: Option<Arc<AtomicUsize>>,
}

impl LeveledPolicy {
    /// A policy with `options` writing SSTables to SSD.
    pub fn new(options: &CompactionOptions) -> Self {
        Self::with_output(options, Tier::Ssd, RunKind::Sst)
    }

    /// A policy with `options` writing runs of `kind` to `tier` (NVLSM-L: PM sorted arrays).
    pub fn with_output(options: &CompactionOptions, tier: Tier, kind: RunKind) -> Self {
        LeveledPolicy {
            options: options.clone(),
            output_tier: tier,
            output_kind: kind,
            trigger: None,
        }
    }

    /// The policy with L0's compaction trigger read from `trigger` (a load detector's).
    pub fn with_trigger(mut self, trigger: Arc<AtomicUsize>) -> Self {
        self.trigger = Some(trigger);
        self
    }

    /// The compaction score of every level but the last (`>= 1` means it needs compaction).
    pub fn level_scores(&self, state: &StageVersion) -> Vec<f64> {
        let last = state.groups.len() - 1;
        (0..last)
            .map(|level| {
                if level == 0 {
                    let trigger = self
                        .trigger
                        .as_ref()
                        .map_or(self.options.level0_compaction_trigger, |t| {
                            t.load(Relaxed).max(1)
                        });
                    state.groups[0].len() as f64 / trigger as f64
                } else {
                    state.group_bytes(level) as f64
                        / max_bytes_for_level(&self.options, level) as f64
                }
            })
            .collect()
    }

    fn task_for(
        &self,
        view: &PolicyView<'_>,
        level: usize,
        inputs: Vec<Arc<FileMetaData>>,
        reason: Reason,
    ) -> CompactionTask {
        let smallest = inputs.iter().map(|f| f.smallest_user_key()).min();
        let largest = inputs.iter().map(|f| f.largest_user_key()).max();
        let next_inputs = view.state.overlapping(level + 1, smallest, largest);
        let trivial_move = inputs.len() == 1 && next_inputs.is_empty();
        CompactionTask {
            reason,
            stage: view.stage,
            inputs: vec![(level, inputs), (level + 1, next_inputs)],
            output_group: level + 1,
            trivial_move,
            plan: OutputPlan::by_size(),
            payload: None,
            holes: Vec::new(),
        }
    }
}

impl CompactionPolicy for LeveledPolicy {
    fn choose(&self, view: &PolicyView<'_>) -> Option<CompactionTask> {
        let scores = self.level_scores(view.state);
        let mut order: Vec<usize> = (0..scores.len()).filter(|&l| scores[l] >= 1.0).collect();
        order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
        let busy = view.busy;
        let level = order.into_iter().find(|&l| !busy[l] && !busy[l + 1])?;
        let inputs = if level == 0 {
            view.state.groups[0].to_vec()
        } else {
            let runs = &view.state.groups[level];
            let ptr = &view.pointers[level];
            let f = runs
                .iter()
                .find(|f| ptr.is_empty() || compare_internal(&f.largest, ptr).is_gt())
                .unwrap_or(&runs[0]);
            vec![Arc::clone(f)]
        };
        let reason = if level == 0 {
            Reason::Level0Files
        } else {
            Reason::LevelSize
        };
        Some(self.task_for(view, level, inputs, reason))
    }

    /// Every level down to the deepest one holding keys of the range (at least L1), as
    /// LevelDB's `CompactRange` does.
    fn manual_groups(
        &self,
        view: &PolicyView<'_>,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Vec<usize> {
        let groups = view.state.groups.len();
        let max_level = (1..groups)
            .filter(|&l| !view.state.overlapping(l, begin, end).is_empty())
            .max()
            .unwrap_or(1);
        (0..max_level).collect()
    }

    /// From L0 it takes every run: moving only some L0 runs down would let an older,
    /// overlapping L0 entry that stays behind shadow a newer one moved below it.
    fn manual(
        &self,
        view: &PolicyView<'_>,
        level: usize,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Option<CompactionTask> {
        let mut inputs = view.state.overlapping(level, begin, end);
        if inputs.is_empty() {
            return None;
        }
        if level == 0 {
            inputs = view.state.groups[0].to_vec();
        }
        let mut task = self.task_for(view, level, inputs, Reason::Manual);
        task.trivial_move = false;
        Some(task)
    }

    fn output(&self, task: &CompactionTask) -> RunTarget {
        RunTarget {
            group: task.output_group,
            tier: self.output_tier,
            kind: self.output_kind,
            row: false,
        }
    }

    fn target_run_bytes(&self) -> u64 {
        self.options.target_file_size
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
        if task.trivial_move {
            let moved = &task.inputs[0].1[0];
            s.added.push((task.output_group, (**moved).clone()));
        } else {
            s.added
                .extend(outputs.into_iter().map(|m| (task.output_group, m)));
        }
        if task.reason == Reason::LevelSize {
            let (level, runs) = &task.inputs[0];
            if let Some(last) = runs
                .iter()
                .map(|f| &f.largest)
                .max_by(|a, b| compare_internal(a, b))
            {
                s.pointers.push((*level, last.clone()));
            }
        }
        edit
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version::GroupOrder;

    /// Builds a 4-level stage from lines `level: number:first-last:size_kib ...`.
    fn stage(spec: &str) -> StageVersion {
        let groups = vec![
            GroupOrder::Overlapping,
            GroupOrder::Disjoint,
            GroupOrder::Disjoint,
            GroupOrder::Disjoint,
        ];
        crate::compaction::spec::stage(spec, "levels", groups, false, Tier::Ssd, RunKind::Sst)
    }

    fn policy() -> LeveledPolicy {
        LeveledPolicy::new(&CompactionOptions {
            num_levels: 4,
            level0_compaction_trigger: 2,
            max_bytes_for_level_base: 100 << 10,
            level_size_multiplier: 10,
            ..CompactionOptions::default()
        })
    }

    fn view<'a>(s: &'a StageVersion, busy: &'a [bool], ptrs: &'a [Vec<u8>]) -> PolicyView<'a> {
        PolicyView {
            stage: 0,
            state: s,
            busy,
            pointers: ptrs,
        }
    }

    /// One golden case of `testdata/leveled_picks.txt`.
    struct Golden {
        name: String,
        state: String,
        busy: [bool; 4],
        expect: String,
    }

    /// Parses the golden file: blocks of `case:`, `state:` (indented lines), `busy:` (the busy
    /// levels, or `-`) and `expect:` lines; `#` starts a comment.
    fn golden_cases(text: &str) -> Vec<Golden> {
        let mut cases = Vec::new();
        let mut cur: Option<Golden> = None;
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("");
            if line.trim().is_empty() {
                continue;
            }
            if let Some(name) = line.strip_prefix("case:") {
                cases.extend(cur.take());
                cur = Some(Golden {
                    name: name.trim().to_string(),
                    state: String::new(),
                    busy: [false; 4],
                    expect: String::new(),
                });
                continue;
            }
            let c = cur.as_mut().expect("a line before the first case");
            if let Some(b) = line.strip_prefix("busy:") {
                for l in b.split_whitespace().filter(|w| *w != "-") {
                    c.busy[l.parse::<usize>().unwrap()] = true;
                }
            } else if let Some(e) = line.strip_prefix("expect:") {
                c.expect = e.trim().to_string();
            } else if line.trim() != "state:" {
                c.state.push_str(line.trim());
                c.state.push('\n');
            }
        }
        cases.extend(cur);
        cases
    }

    #[test]
    fn golden_picks() {
        let cases = golden_cases(include_str!("testdata/leveled_picks.txt"));
        assert!(cases.len() >= 7, "{} golden cases", cases.len());
        let none = vec![Vec::new(); 4];
        for c in cases {
            let s = stage(&c.state);
            let got = policy()
                .choose(&view(&s, &c.busy, &none))
                .map_or("none".into(), |t| t.summary());
            assert_eq!(got, c.expect, "case {:?}:\n{}", c.name, c.state);
        }
    }

    #[test]
    fn compaction_pointer_round_robin() {
        let s = stage("1: 2:a-c:60 3:d-f:60 4:g-i:60");
        let busy = [false; 4];
        let mut ptrs = vec![Vec::new(); 4];
        let p = policy().choose(&view(&s, &busy, &ptrs)).unwrap();
        assert_eq!(p.inputs[0].1[0].number, 2);
        // `apply` records the pointer the next pick starts from.
        let edit = policy().apply(&view(&s, &busy, &ptrs), &p, Vec::new());
        ptrs[1] = edit.stages[0].pointers[0].1.clone();
        let p = policy().choose(&view(&s, &busy, &ptrs)).unwrap();
        assert_eq!(p.inputs[0].1[0].number, 3);
        ptrs[1] = s.groups[1][2].largest.clone();
        let p = policy().choose(&view(&s, &busy, &ptrs)).unwrap();
        assert_eq!(p.inputs[0].1[0].number, 2, "wraps around");
    }

    #[test]
    fn manual_tasks_targets_and_apply() {
        let s = stage("1: 2:a-c:60 3:d-f:60\n2: 4:b-e:10");
        let busy = [false; 4];
        let ptrs = vec![Vec::new(); 4];
        let v = view(&s, &busy, &ptrs);
        let p = policy().manual(&v, 1, Some(b"e"), None).unwrap();
        assert_eq!(p.summary(), "L1->L2 [3]+[4] merge");
        assert_eq!(p.groups(), vec![1, 2]);
        assert!(policy().manual(&v, 1, Some(b"x"), None).is_none());
        assert_eq!(policy().manual_groups(&v, None, None), vec![0, 1]);
        // From L0, a range that touches one run still takes every L0 run.
        let s0 = stage("0: 5:a-c:1 6:m-p:1 7:b-n:1\n1: 2:a-b:1");
        let v0 = view(&s0, &busy, &ptrs);
        let p = policy().manual(&v0, 0, Some(b"o"), Some(b"p")).unwrap();
        assert_eq!(p.summary(), "L0->L1 [5,6,7]+[2] merge");
        assert!(policy().manual(&v0, 0, Some(b"x"), None).is_none());
        // Apply deletes every input and adds the outputs to the output level.
        let out = (*s.groups[1][0]).clone();
        let e = policy().apply(&v0, &p, vec![FileMetaData { number: 9, ..out }]);
        let st = &e.stages[0];
        assert_eq!(st.deleted, vec![(0, 5), (0, 6), (0, 7), (1, 2)]);
        assert_eq!(
            st.added
                .iter()
                .map(|(g, f)| (*g, f.number))
                .collect::<Vec<_>>(),
            vec![(1, 9)]
        );
        let o = CompactionOptions {
            max_bytes_for_level_base: 100 << 10,
            level_size_multiplier: 10,
            ..CompactionOptions::default()
        };
        assert_eq!(max_bytes_for_level(&o, 3), 10_000 << 10);
        let scores = policy().level_scores(&s);
        assert_eq!(scores.len(), 3);
        assert!((scores[1] - 1.2).abs() < 1e-9);
    }
}
