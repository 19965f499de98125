//! Compactions: the compaction threads ask each stage's policy for a task and run it; the
//! executor merges any task's input runs into new runs; `compact_range` walks the stages' manual
//! compactions.
//!
//! Rules for dropping entries (LevelDB's): an entry is dropped when a newer entry of the same
//! user key exists that every live snapshot can see (it is shadowed for every reader), and a
//! tombstone is dropped when every snapshot can see it and no run below the output (deeper
//! groups of the stage, later stages) may hold the key (nothing is left for it to hide).
//! Output runs are cut at the policy's target size, only between different user keys, so each
//! user key lives in one run per disjoint group.
//!
//! Outputs are synced and their directory is synced before the manifest record that installs
//! them; any failure poisons the database and removes the unfinished outputs. Designs with a
//! compaction log announce each step there first (`clog`).

use super::DbInner;
use crate::compaction::{
    BreakCursor, CompactionTask, OutputPlan, PolicyView, ReuseContext, SetRouter, SetTarget,
};
use crate::format::{parse_internal_key, ValueType};
use crate::iterator::InternalIterator;
use crate::pipeline::{CompactionRule, ManualProgress, ManualStep, RuleContext, RunTarget};
use crate::runs::{create_writer, run_file_name, FloorSpec, RunWriter, SkipHoles};
use crate::sst::value_log::value_log_file_name;
use crate::stats::{IoPurpose, LevelCompactionStats, Part};
use crate::tier::Tier;
use crate::version::{FileMetaData, RunKind, Version};
use crate::{Error, Result};
use std::collections::HashSet;
use std::sync::atomic::Ordering::{Acquire, Relaxed};
use std::sync::Arc;
use std::time::Duration;

mod manual;
mod merge;

use merge::MergeTally;

impl DbInner {
    /// A compaction thread: repeatedly asks the stages' policies for a task and runs it.
    pub(crate) fn compaction_loop(&self) {
        let mut state = self.state.lock();
        loop {
            if state.shutting_down {
                return;
            }
            let task = if state.bg_error.is_none() && state.manual_compactions == 0 {
                self.choose_task(&state)
            } else {
                None
            };
            let Some(task) = task else {
                self.bg_cv.wait(&mut state);
                continue;
            };
            set_busy(&mut state, &task, true);
            drop(state);
            let _ = self.run_task(task);
            state = self.state.lock();
        }
    }

    /// True while background work is pending: an immutable buffer to flush, a running
    /// compaction, or a task a policy would start now.
    pub(crate) fn background_pending(&self) -> bool {
        let state = self.state.lock();
        self.front.pending_flushes() > 0
            || self.front.background_busy()
            || state.busy.iter().flatten().any(|&b| b)
            || self.choose_task(&state).is_some()
    }

    /// Waits until [`DbInner::background_pending`] is false, or the database is poisoned.
    pub(crate) fn wait_for_background_work(&self) -> Result<()> {
        loop {
            if let Some(e) = &self.state.lock().bg_error {
                return Err(e.duplicate());
            }
            if !self.background_pending() {
                return Ok(());
            }
            self.bg_cv.notify_all();
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The first stage's task whose groups are free, in pipeline order; none while automatic
    /// compactions are disabled (so that `wait_for_background_work` waits for flushes and
    /// running compactions only).
    fn choose_task(&self, state: &super::State) -> Option<CompactionTask> {
        if self.options.compaction.disable_auto_compactions {
            return None;
        }
        let version = state.versions.current();
        self.stages.iter().enumerate().find_map(|(i, stage)| {
            stage.policy().choose(&PolicyView {
                stage: i,
                state: version.stage(i),
                busy: &state.busy[i],
                pointers: &state.versions.pointers[i],
            })
        })
    }

    /// Runs a task whose groups the caller marked busy; frees them when done. Errors poison the
    /// database.
    pub(crate) fn run_task(&self, mut task: CompactionTask) -> Result<()> {
        // The stage's part in the task, asked once before the merge.
        let mut rule = None;
        let result = (|| {
            let cx = self.rule_context(task.stage);
            let rule = &**rule.insert(self.stages[task.stage].compaction_rule(&cx, &mut task)?);
            let current = || self.state.lock().versions.current();
            let new_file_number = || self.state.lock().versions.new_file_number();
            let reuse = ReuseContext {
                options: &self.options,
                tables: &self.table_cache,
                counters: &self.counters,
                current: &current,
                new_file_number: &new_file_number,
            };
            let moved = reuse.reuse_untouched_runs(&mut task, rule.plain())?;
            self.execute(&task, &moved, rule)
        })();
        let mut state = self.state.lock();
        set_busy(&mut state, &task, false);
        // The task's hold on its input runs ends here, so that they can be deleted now.
        drop(task);
        drop(rule);
        let result = match result {
            Ok(()) => {
                self.counters.compactions.fetch_add(1, Relaxed);
                let obsolete = self.collect_obsolete_after_compaction(&mut state);
                self.bg_cv.notify_all();
                drop(state);
                self.delete_files(obsolete);
                if let Err(e) = self.after_install() {
                    let mut state = self.state.lock();
                    let e = state.poison("a stage's step after the compaction failed", e);
                    self.bg_cv.notify_all();
                    return Err(e);
                }
                if let Err(e) = self.reclaim() {
                    let mut state = self.state.lock();
                    let e = state.poison("a stage's reclamation after the compaction failed", e);
                    self.bg_cv.notify_all();
                    return Err(e);
                }
                self.bg_cv.notify_all();
                return Ok(());
            }
            Err(e) => Err(state.poison("compaction failed", e)),
        };
        self.bg_cv.notify_all();
        result
    }

    /// What a stage's compaction rule is given of the engine for a task of `stage`.
    fn rule_context(&self, stage: usize) -> RuleContext<'_> {
        RuleContext {
            tables: &self.table_cache,
            counters: &self.counters,
            part: Part::Stage(stage),
        }
    }

    /// False when the pool's free chunks (less those held back for logs and manifests) could
    /// not hold `task`'s outputs, estimated as its inputs' bytes (tables and their own value
    /// logs) in whole chunks, plus a partly filled chunk per output file: one output per
    /// target size, one more per key-range partition, and a value log beside each with
    /// separation on. True without a pool. An estimate: outputs cut around kept runs and
    /// stretches may take more chunks (the job then fills the pool and runs again on the SSD),
    /// and entries the merge drops or values it does not copy may leave them smaller.
    fn pool_may_hold(&self, task: &CompactionTask) -> bool {
        let Some(pm) = &self.pm else {
            return true;
        };
        let bytes: u64 = task
            .input_runs()
            .map(|f| f.file_size.saturating_add(f.value_log_bytes()))
            .fold(0, u64::saturating_add);
        let per_chunk = pm.pmfs.data_per_chunk().max(1);
        let target = self.stages[task.stage]
            .policy()
            .target_run_bytes()
            .max(per_chunk);
        let outputs = bytes / target + self.options.compaction.subcompactions.max(1) as u64;
        let files = match self.options.table.value_separation {
            0 => outputs,
            _ => 2 * outputs,
        };
        bytes.div_ceil(per_chunk) + files <= pm.pmfs.chunks_for_tables()
    }

    fn execute(
        &self,
        task: &CompactionTask,
        moved: &[Arc<FileMetaData>],
        rule: &dyn CompactionRule,
    ) -> Result<()> {
        let started = std::time::Instant::now();
        let policy = self.stages[task.stage].policy();
        let mut outputs = Vec::new();
        let mut job = None;
        let mut tally = MergeTally::default();
        let mut index_bytes = 0;
        // The task the merge runs: without the source runs moved unchanged.
        let merged_task;
        let merge_task = if moved.is_empty() {
            task
        } else {
            let mut t = task.clone();
            for (_, runs) in &mut t.inputs {
                runs.retain(|f| !moved.iter().any(|m| m.number == f.number));
            }
            merged_task = t;
            &merged_task
        };
        if !task.trivial_move {
            let mut target = policy.output(task);
            if target.tier == Tier::Pm
                && self.options.pm.compaction_space_check
                && !self.pool_may_hold(merge_task)
            {
                // Its outputs could not fit: straight to the SSD, rather than filling the
                // pool first and running again.
                self.counters.pm_compaction_fallbacks.fetch_add(1, Relaxed);
                target = RunTarget {
                    tier: Tier::Ssd,
                    ..target
                };
            }
            loop {
                // Inputs by run number, and the file a run made of part of a file reads (it
                // may be garbage once the job commits).
                let mut inputs: Vec<u64> = merge_task
                    .input_runs()
                    .flat_map(|f| [f.number, f.file_number()])
                    .collect();
                inputs.sort_unstable();
                inputs.dedup();
                job = self.clog_start(inputs)?;
                // Output numbers stay in `pending_outputs` until the manifest names them.
                let mut created = Vec::new();
                let merged = self
                    .merge_partitions(
                        merge_task,
                        rule,
                        target,
                        job,
                        &mut outputs,
                        &mut created,
                        &mut tally,
                    )
                    .and_then(|()| self.clog_merged(job));
                let Err(e) = merged else { break };
                // The outputs are garbage: unregistered, removed (best effort: recovery
                // removes what is left, as the log says).
                let mut state = self.state.lock();
                let mut discarded = 0;
                for n in &created {
                    state.pending_outputs.remove(n);
                    let fs = self.fs_for(target.tier);
                    for path in [
                        run_file_name(&self.dir, *n, target.kind),
                        value_log_file_name(&self.dir, *n),
                    ] {
                        discarded += fs.file_size(&path).unwrap_or(0);
                        let _ = fs.remove(&path);
                    }
                }
                let _ = self.clog_finish(&mut state, job, false);
                drop(state);
                // What the attempt wrote counts, although nothing names it.
                self.counters.add_written(
                    target.tier,
                    Part::Stage(task.stage),
                    IoPurpose::Compaction,
                    discarded,
                );
                if !(matches!(e, Error::NoSpace(_)) && target.tier == Tier::Pm) {
                    return Err(e);
                }
                // A full pool: the job runs again with its outputs on the SSD, as a flush that
                // finds no room writes its run there. Its inputs in the pool are freed when it
                // commits (but for the files parts of which it keeps), so the next job finds
                // room again.
                self.counters.pm_compaction_fallbacks.fetch_add(1, Relaxed);
                self.counters.pm_compaction_retries.fetch_add(1, Relaxed);
                outputs.clear();
                rule.discard_outputs();
                tally = MergeTally::default();
                target = RunTarget {
                    tier: Tier::Ssd,
                    ..target
                };
            }
            for meta in &outputs {
                self.counters.add_written(
                    meta.tier,
                    Part::Stage(task.stage),
                    IoPurpose::Compaction,
                    meta.written_bytes(),
                );
            }
            // The stage records the outputs before the manifest record (a global index moves
            // its pointers to them: from here on a failure poisons the database and leaves
            // the outputs, which recovery adopts).
            let inputs: HashSet<u64> = task.input_runs().map(|f| f.number).collect();
            index_bytes = rule.before_install(&self.rule_context(task.stage), &inputs)?;
        }
        let mut state = self.state.lock();
        let version = state.versions.current();
        let edit = policy.apply(
            &PolicyView {
                stage: task.stage,
                state: version.stage(task.stage),
                busy: &state.busy[task.stage],
                pointers: &state.versions.pointers[task.stage],
            },
            task,
            outputs
                .iter()
                .cloned()
                .chain(moved.iter().map(|m| (**m).clone()))
                .collect(),
        );
        state.versions.last_sequence = self.last_sequence.load(Acquire);
        // A trivial move deletes a run and adds it back elsewhere: only runs the edit does not
        // add back are removed.
        let kept: HashSet<u64> = edit
            .stages
            .iter()
            .flat_map(|e| e.added.iter().map(|(_, f)| f.number))
            .collect();
        let applied = state.versions.log_and_apply(edit);
        for m in &outputs {
            state.pending_outputs.remove(&m.number);
        }
        let current = applied?;
        let removed = task.input_runs().filter(|f| !kept.contains(&f.number));
        state.removed_runs.extend(removed.cloned());
        // A run re-added with other metadata has two `Arc`s for one file: the old one is kept
        // in `superseded_runs`, and the file is deleted only once neither is held.
        if !kept.is_empty() {
            let superseded: Vec<Arc<FileMetaData>> = task
                .input_runs()
                .filter(|f| kept.contains(&f.number))
                .filter(|f| !current.runs().any(|(_, _, r)| Arc::ptr_eq(r, f)))
                .cloned()
                .collect();
            state.superseded_runs.extend(superseded);
        }
        // The stage learns which inputs are gone, while the versions before this one are
        // still the live ones.
        let gone: Vec<u64> = task
            .input_runs()
            .map(|f| f.number)
            .filter(|n| !kept.contains(n))
            .collect();
        rule.installed(&gone, &state.live_versions);
        state.install_super_version(&*self.front);
        self.clog_finish(&mut state, job, true)?;
        let micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        let output_bytes: u64 = outputs.iter().map(|m| m.written_bytes()).sum();
        self.counters.jobs.lock().push(crate::stats::CompactionJob {
            stage: task.stage,
            from_group: task.inputs.first().map_or(0, |(g, _)| *g),
            to_group: task.output_group,
            reason: format!("{:?}", task.reason),
            trivial_move: task.trivial_move,
            input_runs: task.input_runs().count(),
            input_bytes: tally.read_input_bytes + tally.read_output_bytes,
            output_bytes,
            micros,
            end_micros: 0,
        });
        self.counters.add_compaction(&level_stats(
            task,
            &tally,
            micros,
            output_bytes + index_bytes,
            outputs.len(),
        ));
        Ok(())
    }
}

/// The figures a finished `task` adds to its output group's cumulative compaction figures.
fn level_stats(
    task: &CompactionTask,
    tally: &MergeTally,
    micros: u64,
    written_bytes: u64,
    written_runs: usize,
) -> LevelCompactionStats {
    let runs_from = |output: bool| -> u64 {
        task.inputs
            .iter()
            .filter(|(g, _)| (*g == task.output_group) == output)
            .map(|(_, runs)| runs.len() as u64)
            .sum()
    };
    let mut c = LevelCompactionStats {
        stage: task.stage,
        group: task.output_group,
        compactions: 1,
        micros,
        ..LevelCompactionStats::default()
    };
    if task.trivial_move {
        c.trivial_moves = 1;
        c.moved_bytes = task.input_runs().map(|f| f.file_size).sum();
    } else {
        c.read_input_bytes = tally.read_input_bytes;
        c.read_output_bytes = tally.read_output_bytes;
        c.written_bytes = written_bytes;
        c.read_input_runs = runs_from(false);
        c.read_output_runs = runs_from(true);
        c.written_runs = written_runs as u64;
        c.input_entries = tally.entries;
        c.dropped_entries = tally.dropped;
    }
    c
}

fn set_busy(state: &mut super::State, task: &CompactionTask, busy: bool) {
    for g in task.groups() {
        debug_assert!(state.busy[task.stage][g] != busy, "group {g} busy twice");
        state.busy[task.stage][g] = busy;
    }
}
