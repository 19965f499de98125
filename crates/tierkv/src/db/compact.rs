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
//! them; any failure poisons the database.

use super::DbInner;
use crate::compaction::{CompactionTask, PolicyView};
use crate::format::{parse_internal_key, ValueType};
use crate::iterator::InternalIterator;
use crate::pipeline::RunTarget;
use crate::sst::TableBuilder;
use crate::stats::{IoPurpose, Part};
use crate::version::{table_file_name, FileMetaData, RunKind, Version};
use crate::{Error, Result};
use std::sync::atomic::Ordering::{Acquire, Relaxed};
use std::time::Duration;

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

    /// The first stage's task whose groups are free, in pipeline order.
    fn choose_task(&self, state: &super::State) -> Option<CompactionTask> {
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
    pub(crate) fn run_task(&self, task: CompactionTask) -> Result<()> {
        let result = self.execute(&task);
        let mut state = self.state.lock();
        set_busy(&mut state, &task, false);
        let result = match result {
            Ok(()) => {
                self.counters.compactions.fetch_add(1, Relaxed);
                let obsolete = self.collect_obsolete_files(&mut state);
                self.bg_cv.notify_all();
                drop(state);
                self.delete_files(obsolete);
                return Ok(());
            }
            Err(e) => Err(state.poison("compaction failed", e)),
        };
        self.bg_cv.notify_all();
        result
    }

    fn execute(&self, task: &CompactionTask) -> Result<()> {
        let stage = &self.stages[task.stage];
        let policy = stage.policy();
        let mut outputs = Vec::new();
        if !task.trivial_move {
            // Output numbers stay in `pending_outputs` until the manifest names them.
            let merged = self.merge(task, policy.output(task), &mut outputs);
            if let Err(e) = merged {
                let mut state = self.state.lock();
                for m in &outputs {
                    state.pending_outputs.remove(&m.number);
                }
                return Err(e);
            }
            for meta in &outputs {
                self.counters.add_written(
                    meta.tier,
                    Part::Stage(task.stage),
                    IoPurpose::Compaction,
                    meta.file_size,
                );
            }
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
            outputs.clone(),
        );
        state.versions.last_sequence = self.last_sequence.load(Acquire);
        let applied = state.versions.log_and_apply(edit);
        for m in &outputs {
            state.pending_outputs.remove(&m.number);
        }
        applied?;
        state.install_super_version(&*self.front);
        Ok(())
    }

    /// Merges the task's input runs into new runs written as `target` says, appending each
    /// finished output's metadata to `outputs` (whose numbers are registered as pending
    /// outputs).
    fn merge(
        &self,
        task: &CompactionTask,
        target: RunTarget,
        outputs: &mut Vec<FileMetaData>,
    ) -> Result<()> {
        let version = self.state.lock().versions.current();
        let smallest_snapshot = self.smallest_snapshot();
        let part = Part::Stage(task.stage);
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
        for f in task.input_runs() {
            let t = self.table_cache.get(f, part)?;
            children.push(Box::new(t.iter(IoPurpose::Compaction, false)));
        }
        let mut input = super::MergingIterator::new(children);
        input.seek_to_first();
        let mut builder: Option<(TableBuilder, u64)> = None;
        let mut current_key: Option<Vec<u8>> = None;
        let mut last_seq_for_key = u64::MAX;
        let cut = self.stages[task.stage].policy().target_run_bytes();
        while input.valid() {
            let ikey = input.key();
            let p = parse_internal_key(ikey)
                .ok_or_else(|| Error::corruption("compaction input", "malformed internal key"))?;
            let new_user_key = current_key.as_deref() != Some(p.user_key);
            if new_user_key {
                current_key = Some(p.user_key.to_vec());
                last_seq_for_key = u64::MAX;
            }
            let drop = if last_seq_for_key <= smallest_snapshot {
                true
            } else {
                p.value_type == ValueType::Deletion
                    && p.sequence <= smallest_snapshot
                    && !self.may_hold_below(&version, task, p.user_key)
            };
            last_seq_for_key = p.sequence;
            if !drop {
                if new_user_key {
                    if let Some((b, _)) = &builder {
                        if b.file_size_estimate() >= cut {
                            let (b, number) = builder.take().expect("open builder");
                            outputs.push(finish(b, number, target)?);
                        }
                    }
                }
                if builder.is_none() {
                    builder = Some(self.new_output(target)?);
                }
                let (b, _) = builder.as_mut().expect("open builder");
                b.add(ikey, input.value())?;
            }
            input.next();
        }
        input.status()?;
        if let Some((b, number)) = builder.take() {
            outputs.push(finish(b, number, target)?);
        }
        self.fs_for(target.tier).sync_dir(&self.dir)?;
        Ok(())
    }

    /// A new output run's builder and number (registered as a pending output).
    fn new_output(&self, target: RunTarget) -> Result<(TableBuilder, u64)> {
        let number = {
            let mut state = self.state.lock();
            let n = state.versions.new_file_number();
            state.pending_outputs.insert(n);
            n
        };
        match target.kind {
            RunKind::Sst => {
                let path = table_file_name(&self.dir, number);
                let file = self.fs_for(target.tier).create(&path).inspect_err(|_| {
                    self.state.lock().pending_outputs.remove(&number);
                })?;
                Ok((TableBuilder::new(&self.options.table, file, path), number))
            }
        }
    }

    /// True if a run below the task's output may hold `user_key`: a deeper group of the task's
    /// stage, or any group of a later stage.
    fn may_hold_below(&self, version: &Version, task: &CompactionTask, user_key: &[u8]) -> bool {
        let s = task.stage;
        self.stages[s].may_hold_from(version.stage(s), task.output_group + 1, user_key)
            || (s + 1..self.stages.len())
                .any(|later| self.stages[later].may_hold_from(version.stage(later), 0, user_key))
    }

    /// Compacts `[begin, end]` through every stage in pipeline order, each stage's policy
    /// saying which groups a manual compaction walks (the leveled policy: level by level, down
    /// to the deepest level holding keys of the range, as LevelDB's `CompactRange`).
    pub(crate) fn compact_range(&self, begin: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        let mut state = self.state.lock();
        state.manual_compactions += 1;
        let mut result = Ok(());
        'stages: for (i, stage) in self.stages.iter().enumerate() {
            let current = state.versions.current();
            let groups = stage.policy().manual_groups(
                &PolicyView {
                    stage: i,
                    state: current.stage(i),
                    busy: &state.busy[i],
                    pointers: &state.versions.pointers[i],
                },
                begin,
                end,
            );
            for group in groups {
                // Wait until the task's groups are free, then take them.
                let task = loop {
                    if let Some(e) = &state.bg_error {
                        result = Err(e.duplicate());
                        break 'stages;
                    }
                    let current = state.versions.current();
                    let view = PolicyView {
                        stage: i,
                        state: current.stage(i),
                        busy: &state.busy[i],
                        pointers: &state.versions.pointers[i],
                    };
                    let task = stage.policy().manual(&view, group, begin, end);
                    match &task {
                        Some(t) if t.groups().iter().any(|&g| state.busy[i][g]) => {}
                        _ => break task,
                    }
                    self.bg_cv.wait_for(&mut state, Duration::from_millis(50));
                };
                if let Some(task) = task {
                    set_busy(&mut state, &task, true);
                    drop(state);
                    let r = self.run_task(task);
                    state = self.state.lock();
                    if let Err(e) = r {
                        result = Err(e);
                        break 'stages;
                    }
                }
            }
        }
        state.manual_compactions -= 1;
        self.bg_cv.notify_all();
        result
    }
}

fn set_busy(state: &mut super::State, task: &CompactionTask, busy: bool) {
    for g in task.groups() {
        debug_assert!(state.busy[task.stage][g] != busy, "group {g} busy twice");
        state.busy[task.stage][g] = busy;
    }
}

fn finish(builder: TableBuilder, number: u64, target: RunTarget) -> Result<FileMetaData> {
    let s = builder.finish()?;
    Ok(FileMetaData {
        number,
        file_size: s.file_size,
        num_entries: s.num_entries,
        smallest: s.smallest,
        largest: s.largest,
        tier: target.tier,
        kind: target.kind,
    })
}
