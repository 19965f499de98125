//! NVLSM's accumulative compaction (Zhang & Du, "NVLSM: A Persistent Memory Key-Value Store Using
//! Log-Structured Merge Tree with Accumulative Compaction", ACM TOS 2021, section 4.1), and the
//! fragmented (guard) compaction of its NVLSM-F baseline: the same policy, the runs of a set being
//! a Skip-Array Tree's floors (with cascade pointers) or a guard's runs (without).
//!
//! The stage's groups are the components: group 0 is C1 (overlapping flushed runs), groups
//! 1.. are C2..Cn, each a [`GroupOrder::Sets`](crate::version::GroupOrder::Sets) group of sets
//! with disjoint key ranges.
//!
//! * **C1 full** (`level0_compaction_trigger` runs): every C1 run is merged; if C2 has sets,
//!   the merged run is cut at their key ranges and each piece becomes the new top floor of its
//!   set (a key below every set goes to the first set, one between two sets to the lower one,
//!   widening its range); existing floors are never rewritten. If C2 is empty the merged run
//!   is cut into `target_file_size` runs, each a new set.
//! * **A set reaches `max_floor` floors**: its floors are merged into one run, which is
//!   partitioned onto the sets of the next component the same way (added as floors), or, if
//!   this component is the last that holds data and is within its capacity (or the last the
//!   stage has), written back: cut into `target_file_size` runs, each a new set of this
//!   component, replacing the old one. A component's capacity is C1's
//!   (`level0_compaction_trigger x target_file_size`) times `level_size_multiplier^i` for the
//!   i-th component after C1; it only decides when the last component spills into a new one.
//! * Order: a full set in a deeper component goes first (so a push never adds a floor to a
//!   set that is already full), then C1. A task waits while a group it touches is busy.
//! * `max_floor` is at least 2: with 1, a fresh one-floor set would be full forever. NVLSM-L
//!   (leveled) is the leveled policy over the same runs (`nvlsm-leveled`), not this one.
//!
//! Tombstones: outputs added as floors join the set's older floors, so the executor keeps a
//! tombstone whenever the output group itself may hold the key
//! ([`OutputPlan::joins_older_runs`]).

use super::RunTarget;
use super::{CompactionPolicy, CompactionTask, OutputPlan, PolicyView, Reason, SetTarget};
use crate::options::CompactionOptions;
use crate::tier::Tier;
use crate::version::{FileMetaData, RunKind, RunSet, StageVersion, VersionEdit};
use std::sync::Arc;

/// How much one write-back task may read, in target-size runs: it takes full sets of one
/// component until their floors would exceed this (and always at least one set).
const WRITE_BACK_BATCH_RUNS: u64 = 64;

/// The accumulative (or fragmented) policy with its options.
#[derive(Clone, Debug)]
pub(crate) struct AccumulativePolicy {
    options: CompactionOptions,
    max_floor: usize,
    /// New floors get cascade pointers (Skip-Array Trees) or not (guards).
    cascade: bool,
    tier: Tier,
    kind: RunKind,
}

impl AccumulativePolicy {
    /// A policy over components shaped by `options` (`num_levels` components, C1 included),
    /// sets of at most `max_floor` floors (>= 2), new floors with cascade pointers if
    /// `cascade`, writing runs of `kind` to `tier`.
    pub fn new(
        options: &CompactionOptions,
        max_floor: usize,
        cascade: bool,
        tier: Tier,
        kind: RunKind,
    ) -> Self {
        debug_assert!(max_floor >= 2, "validated");
        AccumulativePolicy {
            options: options.clone(),
            max_floor,
            cascade,
            tier,
            kind,
        }
    }

    /// The capacity of component `group` (>= 1) in bytes.
    pub fn capacity(&self, group: usize) -> u64 {
        let mut bytes = (self.options.level0_compaction_trigger as u64)
            .saturating_mul(self.options.target_file_size);
        for _ in 0..group {
            bytes = bytes.saturating_mul(self.options.level_size_multiplier);
        }
        bytes
    }

    fn is_full(&self, set: &RunSet) -> bool {
        set.floors.len() >= self.max_floor
    }

    fn has_full_set(&self, state: &StageVersion, group: usize) -> bool {
        state.sets[group].iter().any(|s| self.is_full(s))
    }

    /// Where the merged floors of sets in `group` go: `group` itself (a write-back) or the next
    /// group, and how they are cut.
    fn destination(&self, state: &StageVersion, group: usize) -> (usize, OutputPlan) {
        let last = state.groups.len() - 1;
        let deepest = (1..=last)
            .rev()
            .find(|&g| !state.groups[g].is_empty())
            .unwrap_or(1);
        let write_back =
            group == last || (group >= deepest && state.group_bytes(group) <= self.capacity(group));
        if write_back {
            (group, OutputPlan::by_size())
        } else {
            (group + 1, self.plan_into(state, group + 1))
        }
    }

    /// The plan that adds floors to the sets of `group`, or cuts new sets by size if it has
    /// none.
    fn plan_into(&self, state: &StageVersion, group: usize) -> OutputPlan {
        let sets = &state.sets[group];
        if sets.is_empty() {
            return OutputPlan::by_size();
        }
        OutputPlan::IntoSets {
            sets: sets
                .iter()
                .map(|s| SetTarget {
                    id: s.id,
                    lo: s.lo.clone(),
                    floors: s.floors.clone(),
                })
                .collect(),
            cascade: self.cascade,
        }
    }

    /// One write-back of the full sets of `group`, in key order from the first, as many as
    /// fit in [`WRITE_BACK_BATCH_RUNS`] target-size runs of input (at least one set). Each set's
    /// floors are merged and cut by size as if it were written back alone (a run starts at
    /// every set's `lo`), so the outputs are those of one task per set, installed by one
    /// manifest record: after a push into the last component, most of the sets it reached are
    /// full, and one task each made the bookkeeping of a push grow with the component.
    fn write_back_full_sets(&self, view: &PolicyView<'_>, group: usize) -> CompactionTask {
        let budget = self
            .options
            .target_file_size
            .saturating_mul(WRITE_BACK_BATCH_RUNS);
        let mut runs = Vec::new();
        let mut breaks = Vec::new();
        let mut bytes = 0u64;
        for set in view.state.sets[group].iter().filter(|s| self.is_full(s)) {
            let size: u64 = set.floors.iter().map(|f| f.file_size).sum();
            if !runs.is_empty() {
                if bytes.saturating_add(size) > budget {
                    break;
                }
                breaks.push(set.lo.clone());
            }
            bytes = bytes.saturating_add(size);
            runs.extend(set.floors.iter().cloned());
        }
        self.task(
            view,
            Reason::SetFull,
            vec![(group, runs)],
            group,
            OutputPlan::BySize { breaks },
        )
    }

    fn task(
        &self,
        view: &PolicyView<'_>,
        reason: Reason,
        inputs: Vec<(usize, Vec<Arc<FileMetaData>>)>,
        output_group: usize,
        plan: OutputPlan,
    ) -> CompactionTask {
        CompactionTask {
            reason,
            stage: view.stage,
            inputs,
            output_group,
            trivial_move: false,
            plan,
            payload: None,
            holes: Vec::new(),
        }
    }
}

impl CompactionPolicy for AccumulativePolicy {
    fn choose(&self, view: &PolicyView<'_>) -> Option<CompactionTask> {
        let state = view.state;
        let busy = view.busy;
        for group in (1..state.groups.len()).rev() {
            let Some(set) = state.sets[group].iter().find(|s| self.is_full(s)) else {
                continue;
            };
            let (output, plan) = self.destination(state, group);
            if busy[group] || busy[output] || (output != group && self.has_full_set(state, output))
            {
                continue;
            }
            if output == group {
                return Some(self.write_back_full_sets(view, group));
            }
            let inputs = vec![(group, set.floors.clone())];
            return Some(self.task(view, Reason::SetFull, inputs, output, plan));
        }
        let c1 = &state.groups[0];
        if c1.len() >= self.options.level0_compaction_trigger
            && !busy[0]
            && !busy[1]
            && !self.has_full_set(state, 1)
        {
            let inputs = vec![(0, c1.to_vec())];
            return Some(self.task(
                view,
                Reason::Level0Files,
                inputs,
                1,
                self.plan_into(state, 1),
            ));
        }
        None
    }

    /// C1, then every component down to the deepest one holding keys of the range (the
    /// deepest is written back, so each of its sets ends as one floor).
    fn manual_groups(
        &self,
        view: &PolicyView<'_>,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Vec<usize> {
        let deepest = (1..view.state.groups.len())
            .filter(|&g| !view.state.overlapping(g, begin, end).is_empty())
            .max()
            .unwrap_or(0);
        (0..=deepest).collect()
    }

    /// C1: every run (an older C1 run left behind could shadow a newer entry pushed down).
    /// A component: every set whose range meets `[begin, end]`, all its floors.
    fn manual(
        &self,
        view: &PolicyView<'_>,
        group: usize,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Option<CompactionTask> {
        let state = view.state;
        if group == 0 {
            if state.groups[0].is_empty() {
                return None;
            }
            let inputs = vec![(0, state.groups[0].to_vec())];
            return Some(self.task(view, Reason::Manual, inputs, 1, self.plan_into(state, 1)));
        }
        let runs: Vec<Arc<FileMetaData>> = state.sets[group]
            .iter()
            .filter(|s| {
                !(begin.is_some_and(|b| s.hi.as_slice() < b)
                    || end.is_some_and(|e| s.lo.as_slice() > e))
            })
            .flat_map(|s| s.floors.iter().cloned())
            .collect();
        if runs.is_empty() {
            return None;
        }
        let (output, plan) = self.destination(state, group);
        Some(self.task(view, Reason::Manual, vec![(group, runs)], output, plan))
    }

    fn output(&self, task: &CompactionTask) -> RunTarget {
        RunTarget {
            group: task.output_group,
            tier: self.tier,
            kind: self.kind,
            row: false,
        }
    }

    fn target_run_bytes(&self) -> u64 {
        self.options.target_file_size
    }

    /// Deletes the inputs and adds the outputs: a floor added to a set carries the set's id
    /// (the executor set it); an output cut by size starts a new set whose id is its own
    /// number.
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
        for mut f in outputs {
            if f.set == 0 {
                f.set = f.number;
            }
            s.added.push((task.output_group, f));
        }
        edit
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{make_internal_key, ValueType};
    use crate::version::{GroupOrder, StageLayout, Version};

    /// A 4-component stage from lines `group: number:set:first-last:size_kib ...` (set 0 in
    /// C1).
    fn stage(spec: &str) -> StageVersion {
        let mut groups = vec![GroupOrder::Sets; 4];
        groups[0] = GroupOrder::Overlapping;
        crate::compaction::spec::stage(spec, "components", groups, true, Tier::Pm, RunKind::PmArray)
    }

    /// C1 trigger 2 runs of 10 KiB: capacities C2 200 KiB, C3 2 MiB; 3 floors at most.
    fn policy() -> AccumulativePolicy {
        let o = CompactionOptions {
            num_levels: 4,
            level0_compaction_trigger: 2,
            target_file_size: 10 << 10,
            level_size_multiplier: 10,
            ..CompactionOptions::default()
        };
        AccumulativePolicy::new(&o, 3, true, Tier::Pm, RunKind::PmArray)
    }

    fn choose(s: &StageVersion, busy: [bool; 4]) -> Option<CompactionTask> {
        let ptrs = vec![Vec::new(); 4];
        policy().choose(&PolicyView {
            stage: 0,
            state: s,
            busy: &busy,
            pointers: &ptrs,
        })
    }

    fn numbers(runs: &[Arc<FileMetaData>]) -> Vec<u64> {
        runs.iter().map(|f| f.number).collect()
    }

    fn set_ids(plan: &OutputPlan) -> Vec<u64> {
        match plan {
            OutputPlan::BySize { .. } => Vec::new(),
            OutputPlan::IntoSets { sets, .. } => sets.iter().map(|s| s.id).collect(),
        }
    }

    #[test]
    fn c1_below_its_trigger_waits_and_at_it_goes_by_size_into_an_empty_c2() {
        assert!(choose(&stage("0: 1:0:a-z:10"), [false; 4]).is_none());
        let t = choose(&stage("0: 1:0:a-z:10 2:0:b-y:10"), [false; 4]).unwrap();
        assert_eq!(t.reason, Reason::Level0Files);
        assert_eq!(numbers(&t.inputs[0].1), vec![1, 2]);
        assert_eq!(t.output_group, 1);
        assert!(matches!(t.plan, OutputPlan::BySize { .. }));
        assert!(choose(
            &stage("0: 1:0:a-z:10 2:0:b-y:10"),
            [false, true, false, false]
        )
        .is_none());
    }

    #[test]
    fn c1_adds_floors_to_the_sets_of_c2() {
        let s = stage(
            "0: 7:0:a-z:10 8:0:b-y:10
             1: 3:3:a-f:10 4:3:b-e:10 5:5:k-p:10",
        );
        let t = choose(&s, [false; 4]).unwrap();
        assert_eq!(t.output_group, 1);
        assert_eq!(set_ids(&t.plan), vec![3, 5]);
        let OutputPlan::IntoSets { sets, cascade } = &t.plan else {
            unreachable!()
        };
        assert_eq!(numbers(&sets[0].floors), vec![3, 4], "bottom floor first");
        assert_eq!(sets[1].lo, b"k");
        assert!(cascade);
        assert!(t.plan.joins_older_runs());
    }

    #[test]
    fn a_full_set_goes_first_deepest_first_and_blocks_c1() {
        // Set 3 of C2 is full (3 floors); C3 holds data, so it is pushed into C3's sets.
        let s = stage(
            "0: 7:0:a-z:10 8:0:b-y:10
             1: 3:3:a-f:10 4:3:b-e:10 6:3:c-d:10 5:5:k-p:10
             2: 9:9:a-z:100",
        );
        let t = choose(&s, [false; 4]).unwrap();
        assert_eq!(t.reason, Reason::SetFull);
        assert_eq!(numbers(&t.inputs[0].1), vec![3, 4, 6]);
        assert_eq!((t.inputs[0].0, t.output_group), (1, 2));
        assert_eq!(set_ids(&t.plan), vec![9]);
        // While the push cannot run (C3 busy), C1 does not add a fourth floor to set 3.
        assert!(choose(&s, [false, false, true, false]).is_none());
        // A full set in C3 goes before the one in C2 (which would add to it).
        let s = stage(
            "1: 3:3:a-f:10 4:3:b-e:10 6:3:c-d:10
             2: 9:9:a-z:100 10:9:a-z:10 11:9:a-z:10
             3: 12:12:a-z:100",
        );
        let t = choose(&s, [false; 4]).unwrap();
        assert_eq!((t.inputs[0].0, t.output_group), (2, 3));
        // With C3's set busy-blocked the C2 push must wait too (its target is full).
        assert!(choose(&s, [false, false, false, true]).is_none());
    }

    #[test]
    fn the_last_component_writes_back_until_it_is_over_capacity() {
        // C2 is the deepest non-empty component, 30 KiB <= 200 KiB: written back.
        let s = stage("1: 3:3:a-f:10 4:3:b-e:10 6:3:c-d:10");
        let t = choose(&s, [false; 4]).unwrap();
        assert_eq!((t.inputs[0].0, t.output_group), (1, 1));
        assert!(matches!(t.plan, OutputPlan::BySize { .. }));
        assert!(!t.plan.joins_older_runs());
        // Over capacity (300 KiB > 200 KiB): pushed into the empty C3, cut by size.
        let s = stage("1: 3:3:a-f:100 4:3:b-e:100 6:3:c-d:100");
        let t = choose(&s, [false; 4]).unwrap();
        assert_eq!((t.inputs[0].0, t.output_group), (1, 2));
        assert!(matches!(t.plan, OutputPlan::BySize { .. }));
        // The stage's last component always writes back.
        let s = stage("3: 3:3:a-f:9000 4:3:b-e:9000 6:3:c-d:9000");
        let t = choose(&s, [false; 4]).unwrap();
        assert_eq!((t.inputs[0].0, t.output_group), (3, 3));
    }

    #[test]
    fn a_write_back_takes_every_full_set_of_its_component_cut_at_each_set() {
        // C3 (the last) has full sets 3 and 9 with a one-floor set 6 between them, and full
        // set 12 after: one task writes back 3, 9 and 12, breaking at 9's and 12's `lo`.
        let s = stage(
            "3: 3:3:a-c:10 4:3:b-c:10 5:3:a-b:10 6:6:d-f:10 9:9:g-h:10 10:9:g-i:10 \
                11:9:h-i:10 12:12:m-p:10 13:12:n-o:10 14:12:m-n:10",
        );
        let t = choose(&s, [false; 4]).unwrap();
        assert_eq!((t.inputs.len(), t.inputs[0].0, t.output_group), (1, 3, 3));
        assert_eq!(t.reason, Reason::SetFull);
        assert_eq!(
            numbers(&t.inputs[0].1),
            vec![3, 4, 5, 9, 10, 11, 12, 13, 14],
            "every full set's floors, none of set 6's"
        );
        let OutputPlan::BySize { breaks } = &t.plan else {
            panic!("a write-back is cut by size");
        };
        assert_eq!(breaks, &vec![b"g".to_vec(), b"m".to_vec()]);
        // The batch stops before a set that would take it past 64 target-size runs (of
        // 10 KiB): set 9's 3 x 300 KiB floors do not join set 3; alone, a set always goes.
        let s = stage("3: 3:3:a-c:10 4:3:b-c:10 5:3:a-b:10 9:9:g-h:300 10:9:g-i:300 11:9:h-i:300");
        let t = choose(&s, [false; 4]).unwrap();
        assert_eq!(numbers(&t.inputs[0].1), vec![3, 4, 5]);
        let s = stage("3: 9:9:g-h:300 10:9:g-i:300 11:9:h-i:300");
        let t = choose(&s, [false; 4]).unwrap();
        assert_eq!(numbers(&t.inputs[0].1), vec![9, 10, 11]);
        assert!(matches!(&t.plan, OutputPlan::BySize { breaks } if breaks.is_empty()));
        // A push (not a write-back) still takes one set: C2's full sets go one at a time.
        let s = stage(
            "1: 3:3:a-c:100 4:3:b-c:100 5:3:a-b:100 9:9:g-h:100 10:9:g-i:100 11:9:h-i:100
             2: 20:20:a-z:10",
        );
        let t = choose(&s, [false; 4]).unwrap();
        assert_eq!((t.inputs[0].0, t.output_group), (1, 2));
        assert_eq!(numbers(&t.inputs[0].1), vec![3, 4, 5]);
    }

    #[test]
    fn apply_gives_new_sets_their_own_number_and_keeps_floor_sets() {
        let s = stage("1: 3:3:a-f:10 4:3:b-e:10 6:3:c-d:10");
        let ptrs = vec![Vec::new(); 4];
        let busy = [false; 4];
        let view = PolicyView {
            stage: 0,
            state: &s,
            busy: &busy,
            pointers: &ptrs,
        };
        let t = policy().choose(&view).unwrap();
        let out = |number: u64, set: u64, a: &str, b: &str| FileMetaData {
            number,
            set,
            file_size: 1,
            num_entries: 1,
            smallest: make_internal_key(a.as_bytes(), 1, ValueType::Value),
            largest: make_internal_key(b.as_bytes(), 1, ValueType::Value),
            tier: Tier::Pm,
            kind: RunKind::PmArray,
            row: None,
            value_refs: Vec::new(),
            backing: None,
        };
        let edit = policy().apply(&view, &t, vec![out(20, 0, "a", "c"), out(21, 0, "d", "f")]);
        let v = Version::new(
            vec![StageLayout {
                name: "components",
                groups: {
                    let mut g = vec![GroupOrder::Sets; 4];
                    g[0] = GroupOrder::Overlapping;
                    g
                },
            }]
            .into(),
        );
        // Rebuild the same state in a version and apply the edit to it.
        let mut e = VersionEdit::default();
        for f in s.runs() {
            e.stage_mut(0).added.push((1, (**f).clone()));
        }
        let v = v.apply(&e).unwrap().apply(&edit).unwrap();
        let sets = &v.stage(0).sets[1];
        assert_eq!(sets.iter().map(|s| s.id).collect::<Vec<_>>(), vec![20, 21]);
        // A floor added to an existing set keeps that set's id.
        let edit = policy().apply(&view, &t, vec![out(30, 3, "a", "b")]);
        assert_eq!(edit.stages[0].added[0].1.set, 3);
    }

    #[test]
    fn manual_walks_c1_and_every_component_down_to_the_deepest() {
        let s = stage(
            "0: 7:0:a-z:10
             1: 3:3:a-f:10 5:5:k-p:10
             2: 9:9:a-z:100",
        );
        let ptrs = vec![Vec::new(); 4];
        let busy = [false; 4];
        let view = PolicyView {
            stage: 0,
            state: &s,
            busy: &busy,
            pointers: &ptrs,
        };
        let p = policy();
        assert_eq!(p.manual_groups(&view, None, None), vec![0, 1, 2]);
        assert_eq!(
            p.manual_groups(&view, Some(b"g"), Some(b"h")),
            vec![0, 1, 2]
        );
        let t = p.manual(&view, 1, Some(b"l"), Some(b"m")).unwrap();
        assert_eq!(numbers(&t.inputs[0].1), vec![5]);
        assert_eq!(t.output_group, 2, "C3 holds data: pushed");
        let t = p.manual(&view, 2, None, None).unwrap();
        assert_eq!(t.output_group, 2, "the deepest is written back");
        assert!(p.manual(&view, 3, None, None).is_none());
    }
}
