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
    BreakCursor, CompactionTask, Holes, OutputPlan, PolicyView, SetRouter, SetTarget,
};
use crate::format::{parse_internal_key, ValueType};
use crate::gindex::{with_handles, IndexedEntry};
use crate::iterator::InternalIterator;
use crate::parray::live::{dead_entries, lower_bound_live};
use crate::pipeline::RunTarget;
use crate::runs::{create_writer, run_file_name, FloorSpec, RunWriter, SkipHoles};
use crate::sst::value_log::value_log_file_name;
use crate::stages::rows::RowCursor;
use crate::stats::{IoPurpose, LevelCompactionStats, Part};
use crate::tier::Tier;
use crate::version::{FileMetaData, RunKind, Version};
use crate::{Error, Result};
use std::collections::HashSet;
use std::sync::atomic::Ordering::{Acquire, Relaxed};
use std::sync::Arc;
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
        let result = self
            .resolve_row_entries(&mut task)
            .and_then(|()| self.reuse_untouched_runs(&mut task))
            .and_then(|moved| self.execute(&task, &moved));
        let mut state = self.state.lock();
        set_busy(&mut state, &task, false);
        // The task's hold on its input runs ends here, so that they can be deleted now.
        drop(task);
        let result = match result {
            Ok(()) => {
                self.counters.compactions.fetch_add(1, Relaxed);
                let obsolete = self.collect_obsolete_after_compaction(&mut state);
                self.bg_cv.notify_all();
                drop(state);
                self.delete_files(obsolete);
                if let Err(e) = self.scan_index_leaves() {
                    let mut state = self.state.lock();
                    let e = state.poison("global index leaf scan failed", e);
                    self.bg_cv.notify_all();
                    return Err(e);
                }
                if let Err(e) = self.free_dead_row_pages() {
                    let mut state = self.state.lock();
                    let e = state.poison("freeing dead row pages failed", e);
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

    /// For a row container's task: each input row's dead entry intervals and the entries of
    /// the task's range in it ([`CompactionTask::row_entries`]), found without reading a dead
    /// entry.
    fn resolve_row_entries(&self, task: &mut CompactionTask) -> Result<()> {
        let Some(range) = &task.range else {
            return Ok(());
        };
        let part = Part::Stage(task.stage);
        let purpose = IoPurpose::Compaction;
        let mut resolved = Vec::new();
        for f in task.inputs.first().map_or(&[][..], |(_, rows)| rows) {
            let Some(row) = &f.row else {
                return Err(Error::InvalidArgument(format!(
                    "run {} of a row task is not a row",
                    f.number
                )));
            };
            let array = self.table_cache.array_for(f, part, purpose)?;
            let dead = dead_entries(row, &array, purpose)?.into_owned();
            let bound =
                |key: Option<&[u8]>| lower_bound_live(&array, &row.dead, &dead, key, purpose);
            let first = bound(Some(&range.start))?;
            let end = bound(range.end.as_deref())?.max(first);
            resolved.push((dead, (first, end)));
        }
        task.row_entries = resolved;
        Ok(())
    }

    /// With `compaction.reuse_untouched_runs`, for a task of the first group into the next cut
    /// by size: the output group's input runs whose key range holds no key of a source run
    /// leave the task (they stay where they are, FluidKV's reuse of untouched tables), and the
    /// source runs whose range overlaps no other input run's are moved to the output group
    /// unchanged (returned; they stay inputs, so that the edit deletes them from the source
    /// group, and the merge skips them). Each run kept or moved gets a break in the task's
    /// plan at its smallest key, so that no output spans it.
    fn reuse_untouched_runs(&self, task: &mut CompactionTask) -> Result<Vec<Arc<FileMetaData>>> {
        let breaks = match &mut task.plan {
            OutputPlan::BySize { breaks } => breaks,
            OutputPlan::IntoSets { .. } => return Ok(Vec::new()),
        };
        if !self.options.compaction.reuse_untouched_runs
            || task.trivial_move
            || task.range.is_some()
            || task.lab_chunk.is_some()
            || self.stages[task.stage].index().is_some()
            || task.inputs.len() != 2
            || task.inputs[1].0 != task.output_group
        {
            return Ok(Vec::new());
        }
        let part = Part::Stage(task.stage);
        let sources = task.inputs[0].1.clone();
        let mut untouched = Vec::new();
        for f in &task.inputs[1].1 {
            let (lo, hi) = (f.smallest_user_key(), f.largest_user_key());
            let mut touched = false;
            for s in sources.iter().filter(|s| s.overlaps(Some(lo), Some(hi))) {
                // Keys only: a separated table's values stay unread.
                let mut it = self
                    .table_cache
                    .open_for(s, part, IoPurpose::Compaction)?
                    .iter_stored(IoPurpose::Compaction);
                it.seek(&crate::format::lookup_key(lo, crate::format::MAX_SEQUENCE));
                it.status()?;
                if it.valid() && crate::format::user_key(it.key()) <= hi {
                    touched = true;
                    break;
                }
            }
            if !touched {
                untouched.push(f.number);
            }
        }
        // Per logical sorted table: the untouched stretches of the touched runs stay, as runs
        // reading part of the old file; the merge reads the rest.
        let mut parts: Vec<Arc<FileMetaData>> = Vec::new();
        let version = self.state.lock().versions.current();
        // Parts take new (larger) numbers: only a group of disjoint runs, which numbers do not
        // order, may hold them.
        let disjoint = version.layouts()[task.stage].groups.get(task.output_group)
            == Some(&crate::version::GroupOrder::Disjoint);
        if disjoint {
            let touched: Vec<Arc<FileMetaData>> = task.inputs[1]
                .1
                .iter()
                .filter(|f| !untouched.contains(&f.number))
                .cloned()
                .collect();
            let mut plans = Vec::new();
            if self.options.compaction.reuse_untouched_tables {
                // The bytes merged since the last break of the output (a run left whole),
                // carried from run to run in key order.
                let mut pending = 0;
                for f in &task.inputs[1].1 {
                    if untouched.contains(&f.number) {
                        pending = 0;
                        continue;
                    }
                    plans.extend(self.plan_untouched_tables(f, &sources, part, &mut pending)?);
                }
            }
            // A file is freed only whole, so it stays only while at least half of it is in use
            // (the stretches kept, and the output group's runs reading it that this task
            // leaves): a file this task merges some of and that would keep less than that is
            // merged whole. Its runs are not split, and the runs reading it that no source key
            // falls into are merged too (also those outside the task's key range), so that no
            // file stays for a small part of it: unless a run of another group reads it, which
            // this task cannot merge.
            let group = &version.stage(task.stage).groups[task.output_group];
            let in_use = |file: u64| -> u64 {
                let left: u64 = group
                    .iter()
                    .filter(|r| r.file_number() == file)
                    .filter(|r| !touched.iter().any(|t| t.number == r.number))
                    .map(|r| r.file_size)
                    .sum();
                let kept: u64 = plans
                    .iter()
                    .filter(|p| p.backing.number == file)
                    .map(TablePlan::kept_bytes)
                    .sum();
                left + kept
            };
            let short: HashSet<u64> = touched
                .iter()
                .map(|f| (f.file_number(), f.file_bytes()))
                .filter(|&(file, bytes)| 2 * in_use(file) < bytes)
                .map(|(file, _)| file)
                .collect();
            plans.retain(|p| !short.contains(&p.backing.number));
            // The files only this group's runs read.
            let elsewhere: HashSet<u64> = version
                .runs()
                .filter(|(stage, g, _)| (*stage, *g) != (task.stage, task.output_group))
                .map(|(_, _, f)| f.file_number())
                .collect();
            let reclaimed: Vec<Arc<FileMetaData>> = group
                .iter()
                .filter(|r| short.contains(&r.file_number()))
                .filter(|r| !elsewhere.contains(&r.file_number()))
                .filter(|r| !touched.iter().any(|t| t.number == r.number))
                .cloned()
                .collect();
            if !reclaimed.is_empty() {
                untouched.retain(|n| !reclaimed.iter().any(|r| r.number == *n));
                let inputs = &mut task.inputs[1].1;
                for r in &reclaimed {
                    if !inputs.iter().any(|f| f.number == r.number) {
                        inputs.push(Arc::clone(r));
                    }
                }
                inputs.sort_by(|a, b| a.smallest_user_key().cmp(b.smallest_user_key()));
                // A run taken from outside the task's key range: no output may span the
                // group's runs between it and the rest, which are not inputs.
                breaks.extend(
                    group
                        .iter()
                        .filter(|r| !inputs.iter().any(|f| f.number == r.number))
                        .map(|r| r.smallest_user_key().to_vec()),
                );
                self.counters
                    .reclaimed_runs
                    .fetch_add(reclaimed.len() as u64, Relaxed);
            }
            for plan in &plans {
                if let Some((kept, holes)) = self.keep_planned_tables(plan)? {
                    task.holes.push((plan.f.number, holes));
                    parts.extend(kept.into_iter().map(Arc::new));
                }
            }
        }
        let all_outputs = task.inputs[1].1.clone();
        let moved: Vec<Arc<FileMetaData>> = sources
            .iter()
            .filter(|s| {
                let (lo, hi) = (Some(s.smallest_user_key()), Some(s.largest_user_key()));
                !sources
                    .iter()
                    .chain(&all_outputs)
                    .any(|o| o.number != s.number && o.overlaps(lo, hi))
            })
            .cloned()
            .collect();
        task.inputs[1].1.retain(|f| !untouched.contains(&f.number));
        let kept = all_outputs.iter().filter(|f| untouched.contains(&f.number));
        breaks.extend(
            kept.chain(&moved)
                .chain(&parts)
                .map(|f| f.smallest_user_key().to_vec()),
        );
        breaks.sort_unstable();
        breaks.dedup();
        self.counters.reused_runs.fetch_add(
            (untouched.len() + moved.len() + parts.len()) as u64,
            Relaxed,
        );
        self.counters
            .reused_table_bytes
            .fetch_add(parts.iter().map(|p| p.file_size).sum(), Relaxed);
        let mut moved = moved;
        moved.extend(parts);
        Ok(moved)
    }

    /// For run `f` of the output group, which some source key falls into: its stretches of
    /// at least `compaction.reuse_min_tables` consecutive logical sorted tables (index
    /// partitions) that no key of `sources` falls into. `None` when `f` is not a partitioned
    /// SSTable or no stretch is long enough.
    ///
    /// A table's keys are taken as the user keys after the previous table's top-level index
    /// key up to its own (the last table's up to `f`'s largest), so the stretches and the rest
    /// of the file split its keys exactly, every version of a key on one side. Finding them
    /// reads the top-level index (in DRAM) and a block per source per touched table.
    fn plan_untouched_tables(
        &self,
        f: &Arc<FileMetaData>,
        sources: &[Arc<FileMetaData>],
        part: Part,
        pending: &mut u64,
    ) -> Result<Option<TablePlan>> {
        use crate::format::user_key;
        let purpose = IoPurpose::Compaction;
        if f.kind != RunKind::Sst || f.row.is_some() {
            *pending += f.file_size;
            return Ok(None);
        }
        let run = self.table_cache.open_for(f, part, purpose)?;
        let Some(table) = run.table().filter(|t| t.is_partitioned()) else {
            *pending += f.file_size;
            return Ok(None);
        };
        let (lo, hi) = (f.smallest_user_key(), f.largest_user_key());
        let mut cuts: Vec<Vec<u8>> = table
            .partition_keys()
            .into_iter()
            .map(user_key)
            .filter(|k| *k >= lo && *k < hi)
            .map(|k| k.to_vec())
            .collect();
        cuts.dedup();
        let mut plan = TablePlan {
            backing: f.backing.unwrap_or(crate::version::Backing {
                number: f.number,
                file_size: f.file_size,
            }),
            file_tables: table.partition_keys().len().max(1) as u64,
            f: Arc::clone(f),
            run,
            cuts,
            stretches: Vec::new(),
        };
        let tables = plan.cuts.len() + 1;
        let min = self.options.compaction.reuse_min_tables;
        if tables < min {
            *pending += f.file_size;
            return Ok(None);
        }
        let mut touched = vec![false; tables];
        // Per table, the source bytes the merge will write there: each source's DRAM index
        // entries (LSTs, or data blocks) whose keys fall into it, at the source's bytes per
        // entry.
        let mut source_bytes = vec![0u64; tables];
        for s in sources.iter().filter(|s| s.overlaps(Some(lo), Some(hi))) {
            let run = self.table_cache.open_for(s, part, purpose)?;
            if let Some(t) = run.table() {
                // An index key ends its block: the first one past `hi` ends a block that may
                // start inside the run. (A source made of part of a file: its own keys.)
                let (s_lo, s_hi) = (s.smallest_user_key(), s.largest_user_key());
                let keys: Vec<Vec<u8>> = t
                    .index_user_keys()
                    .into_iter()
                    .filter(|k| {
                        s.backing.is_none() || (s_lo <= k.as_slice() && k.as_slice() <= s_hi)
                    })
                    .collect();
                let per = s.file_size / keys.len().max(1) as u64;
                for k in keys.iter().filter(|k| lo <= k.as_slice()) {
                    let i = plan.cuts.partition_point(|c| c.as_slice() < k.as_slice());
                    source_bytes[i] += per;
                    if k.as_slice() > hi {
                        break;
                    }
                }
            }
            let mut it = run.iter_stored(purpose);
            let mut positioned = false;
            for (i, t) in touched.iter_mut().enumerate() {
                if !positioned || (it.valid() && !plan.lower(i).passed(user_key(it.key()))) {
                    plan.lower(i).seek(&mut *it);
                    positioned = true;
                }
                it.status()?;
                if !it.valid() {
                    break;
                }
                *t |= user_key(it.key()) <= plan.upper(i);
            }
        }
        // Stretches of untouched tables, `[first, end)`. Each kept stretch cuts the merge's
        // output, so the merged piece before it (touched tables and the sources' bytes there,
        // since the last kept stretch or run left whole: `pending`, carried across runs)
        // becomes files of its own: a stretch is kept only if that piece is empty or at least
        // `min_gap` (a piece smaller than a pool chunk would take a chunk of its own);
        // otherwise it is merged with it. (The piece after the last kept stretch is not
        // checked: it joins what the merge writes next.)
        let min_gap = self
            .options
            .compaction
            .reuse_min_gap_bytes
            .unwrap_or(self.options.pm.chunk_bytes);
        let table_bytes = plan.bytes_of(1);
        let mut i = 0;
        while i < tables {
            if touched[i] {
                *pending += table_bytes + source_bytes[i];
                i += 1;
                continue;
            }
            let start = i;
            while i < tables && !touched[i] {
                i += 1;
            }
            if i - start >= min && (*pending == 0 || *pending >= min_gap) {
                plan.stretches.push((start, i));
                *pending = 0;
            } else {
                *pending += plan.bytes_of(i - start) + source_bytes[start..i].iter().sum::<u64>();
            }
        }
        Ok((!plan.stretches.is_empty()).then_some(plan))
    }

    /// The runs a [`TablePlan`]'s stretches become (new numbers, exact first and last keys
    /// and entry counts, read from the stretch's keys once), with their user-key ranges (the
    /// holes the merge skips in the planned run); `None` if every stretch is empty.
    fn keep_planned_tables(&self, plan: &TablePlan) -> Result<Option<(Vec<FileMetaData>, Holes)>> {
        use crate::format::user_key;
        let f = &plan.f;
        let mut kept = Vec::new();
        let mut holes = Vec::new();
        let mut it = plan.run.iter_stored(IoPurpose::Compaction);
        for &(a, b) in &plan.stretches {
            plan.lower(a).seek(&mut *it);
            let (mut first, mut last, mut entries) = (Vec::new(), Vec::new(), 0u64);
            while it.valid() && user_key(it.key()) <= plan.upper(b - 1) {
                if entries == 0 {
                    first = it.key().to_vec();
                }
                last.clear();
                last.extend_from_slice(it.key());
                entries += 1;
                it.next();
            }
            it.status()?;
            if entries == 0 {
                continue;
            }
            let file_size = plan.bytes_of(b - a).max(1);
            // The run's share of the value-log bytes `f` names (at least 1: still named).
            let share = |bytes: u64| {
                let s = u128::from(bytes) * u128::from(file_size) / u128::from(f.file_size.max(1));
                u64::try_from(s).unwrap_or(u64::MAX).max(1)
            };
            holes.push((user_key(&first).to_vec(), user_key(&last).to_vec()));
            kept.push(FileMetaData {
                number: self.state.lock().versions.new_file_number(),
                file_size,
                num_entries: entries,
                smallest: first,
                largest: last,
                tier: f.tier,
                kind: f.kind,
                set: 0,
                row: None,
                value_refs: f.value_refs.iter().map(|&(n, b)| (n, share(b))).collect(),
                backing: Some(plan.backing),
            });
        }
        Ok((!kept.is_empty()).then(|| (kept, Arc::new(holes))))
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

    fn execute(&self, task: &CompactionTask, moved: &[Arc<FileMetaData>]) -> Result<()> {
        let started = std::time::Instant::now();
        let stage = &self.stages[task.stage];
        let policy = stage.policy();
        let mut outputs = Vec::new();
        let mut indexed = Vec::new();
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
                        target,
                        job,
                        &mut outputs,
                        &mut indexed,
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
                indexed.clear();
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
            // A global index moves its pointers to the outputs before the manifest record: a
            // crash from here on leaves outputs the index names, which recovery adopts, so
            // they are never removed on failure (the database is poisoned instead).
            if let Some(index) = stage.index() {
                let inputs: HashSet<u64> = task.input_runs().map(|f| f.number).collect();
                for (meta, entries) in outputs.iter().zip(&indexed) {
                    let stale =
                        index.index_compaction(&inputs, &Arc::new(meta.clone()), entries)?;
                    self.counters.index_stale_copies.fetch_add(stale, Relaxed);
                }
                index_bytes = index.take_pm_bytes();
                self.counters.add_written(
                    Tier::Pm,
                    Part::Stage(task.stage),
                    IoPurpose::Compaction,
                    index_bytes,
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
        if let Some(index) = stage.index() {
            let gone: Vec<u64> = task
                .input_runs()
                .map(|f| f.number)
                .filter(|n| !kept.contains(n))
                .collect();
            index.remove_files(&gone);
        }
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
        // LAB-DB: the chunk's entries leave the tree once no reader of an older version is
        // left (they are in L1 for every newer one).
        if let (Some(chunk), Some(l0)) = (&task.lab_chunk, stage.lab()) {
            l0.chunk_done(chunk, state.live_versions.clone());
        }
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

    /// Merges the task's input runs as [`DbInner::merge`] does, split into
    /// `compaction.subcompactions` key ranges merged in parallel (one thread each) where the
    /// task allows it; the outputs come back in key order, as one merge's would.
    #[allow(clippy::too_many_arguments)]
    fn merge_partitions(
        &self,
        task: &CompactionTask,
        target: RunTarget,
        job: Option<u64>,
        outputs: &mut Vec<FileMetaData>,
        indexed: &mut Vec<Vec<IndexedEntry>>,
        created: &mut Vec<u64>,
        tally: &mut MergeTally,
    ) -> Result<()> {
        let parts = self.options.compaction.subcompactions;
        let splittable = parts > 1
            && matches!(task.plan, OutputPlan::BySize { .. })
            && task.range.is_none()
            && task.lab_chunk.is_none()
            && self.stages[task.stage].index().is_none();
        let cuts = if splittable {
            self.partition_cuts(task, parts)?
        } else {
            Vec::new()
        };
        if cuts.is_empty() {
            return self.merge(
                task,
                target,
                job,
                (None, None),
                outputs,
                indexed,
                created,
                tally,
            );
        }
        self.counters
            .subcompactions
            .fetch_add(cuts.len() as u64 + 1, Relaxed);
        let ranges: Vec<KeyRange<'_>> = (0..=cuts.len())
            .map(|i| {
                (
                    i.checked_sub(1).map(|j| cuts[j].as_slice()),
                    cuts.get(i).map(|c| c.as_slice()),
                )
            })
            .collect();
        type Outcome = (
            Vec<FileMetaData>,
            Vec<Vec<IndexedEntry>>,
            Vec<u64>,
            MergeTally,
        );
        let results: Vec<(Result<()>, Outcome)> = std::thread::scope(|scope| {
            let handles: Vec<_> = ranges
                .iter()
                .map(|&range| {
                    scope.spawn(move || {
                        let mut p: Outcome = Default::default();
                        let r = self.merge(
                            task, target, job, range, &mut p.0, &mut p.1, &mut p.2, &mut p.3,
                        );
                        (r, p)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        (
                            Err(Error::InvalidArgument(
                                "a compaction partition panicked".into(),
                            )),
                            Default::default(),
                        )
                    })
                })
                .collect()
        });
        let mut first_err = None;
        for (r, (o, i, c, t)) in results {
            outputs.extend(o);
            indexed.extend(i);
            created.extend(c);
            tally.read_input_bytes += t.read_input_bytes;
            tally.read_output_bytes += t.read_output_bytes;
            tally.entries += t.entries;
            tally.dropped += t.dropped;
            if let (Err(e), None) = (r, &first_err) {
                first_err = Some(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// Up to `parts - 1` user keys, strictly increasing, cutting the task's input into key
    /// ranges of about equal numbers of index entries (data blocks, or index partitions) over
    /// all input runs; empty when the inputs give too few distinct keys.
    fn partition_cuts(&self, task: &CompactionTask, parts: usize) -> Result<Vec<Vec<u8>>> {
        let mut keys: Vec<Vec<u8>> = Vec::new();
        for f in task.input_runs() {
            // The stretches the merge skips in `f` (kept in place) hold none of its keys.
            let holes = task.holes.iter().find(|(n, _)| *n == f.number);
            let merged = |k: &Vec<u8>| {
                holes.is_none_or(|(_, h)| {
                    !h.iter()
                        .any(|(lo, hi)| lo.as_slice() <= k.as_slice() && k.as_slice() <= hi)
                })
            };
            match self
                .table_cache
                .open_for(f, Part::Stage(task.stage), IoPurpose::Compaction)?
            {
                crate::runs::OpenRun::Sst(t) => {
                    keys.extend(t.index_user_keys().into_iter().filter(merged))
                }
                crate::runs::OpenRun::Slice(t, clip) => keys.extend(
                    t.index_user_keys()
                        .into_iter()
                        .filter(|k| clip.contains(k) && merged(k)),
                ),
                crate::runs::OpenRun::Array(_) => {
                    keys.push(f.smallest_user_key().to_vec());
                    keys.push(f.largest_user_key().to_vec());
                }
            }
        }
        keys.sort_unstable();
        keys.dedup();
        if keys.len() < parts {
            return Ok(Vec::new());
        }
        let mut cuts: Vec<Vec<u8>> = (1..parts)
            .map(|i| keys[i * keys.len() / parts].clone())
            .collect();
        cuts.dedup();
        Ok(cuts)
    }

    /// Merges the task's input runs into new runs written as `target` says and cut as the
    /// task's plan says, appending each finished output's metadata to `outputs` (whose numbers
    /// are registered as pending outputs). Only user keys in `range` (from its first key, up
    /// to but not including its second; `None`: unbounded) are merged.
    /// `created` receives every output number as it is allocated (finished or not), `job` is
    /// the task's compaction-log job.
    #[allow(clippy::too_many_arguments)]
    fn merge(
        &self,
        task: &CompactionTask,
        target: RunTarget,
        job: Option<u64>,
        range: KeyRange<'_>,
        outputs: &mut Vec<FileMetaData>,
        indexed: &mut Vec<Vec<IndexedEntry>>,
        created: &mut Vec<u64>,
        tally: &mut MergeTally,
    ) -> Result<()> {
        let version = self.state.lock().versions.current();
        // A stage with a global index keeps exactly the entries it points at (SLM-DB's
        // selective compaction): each entry is checked against the index with its input run.
        let index = self.stages[task.stage].index();
        let input_numbers: Vec<u64> = task.input_runs().map(|f| f.number).collect();
        let smallest_snapshot = self.smallest_snapshot();
        let part = Part::Stage(task.stage);
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
        let stored = self.stored_merge(task, target, &version, part)?;
        // Per child (one per input run, in `input_runs` order): read from the output group.
        let mut from_output_group: Vec<bool> = task
            .inputs
            .iter()
            .flat_map(|(g, runs)| runs.iter().map(move |_| *g == task.output_group))
            .collect();
        // LAB-DB: the immutable tree's chunk, the newest input, first. An empty chunk (only
        // ends the tree) reads nothing: entries of compacted chunks may still be in the tree
        // until their deferred removal, and must not be compacted again.
        if let Some(chunk) = task.lab_chunk.as_ref().filter(|c| c.entries > 0) {
            let l0 = self.stages[task.stage].lab().ok_or_else(|| {
                Error::InvalidArgument("a tree chunk task for a stage without L0 trees".into())
            })?;
            let charge = crate::labdb::l0::Charge {
                counters: Arc::clone(&self.counters),
                part,
                purpose: IoPurpose::Compaction,
            };
            children.push(l0.chunk_iter(chunk, charge)?);
            from_output_group.insert(0, false);
        }
        for f in task.input_runs() {
            // A row gives up only its live entries in the task's range.
            if let (Some(_), Some(row)) = (&task.range, &f.row) {
                let array = self.table_cache.array_for(f, part, IoPurpose::Compaction)?;
                let i = task.inputs[0].1.iter().position(|r| Arc::ptr_eq(r, f));
                let Some((dead, keep)) = i.and_then(|i| task.row_entries.get(i)) else {
                    return Err(Error::InvalidArgument(format!(
                        "row {} of a row task without its entries",
                        f.number
                    )));
                };
                children.push(Box::new(RowCursor::new(
                    &array,
                    (row.dead.clone(), dead.clone()),
                    Some(*keep),
                    IoPurpose::Compaction,
                )));
                continue;
            }
            let run = self.table_cache.open_for(f, part, IoPurpose::Compaction)?;
            let child = match stored {
                Some(_) => run.iter_stored(IoPurpose::Compaction),
                None => run.iter(IoPurpose::Compaction, false),
            };
            children.push(match task.holes.iter().find(|(n, _)| *n == f.number) {
                Some((_, holes)) => Box::new(SkipHoles::new(child, Arc::clone(holes))),
                None => child,
            });
        }
        // Key-value separation: when every input is a separated table on the output's tier,
        // the merge copies stored values (pointers, not the values), except from the logs it
        // collects (`rewrite`).
        let rewrite = stored;
        let mut input = crate::iterator::MergingIterator::new(children);
        match range.0 {
            Some(lo) => input.seek(&crate::format::lookup_key(lo, crate::format::MAX_SEQUENCE)),
            None => input.seek_to_first(),
        }
        let mut output: Option<Output> = None;
        let mut current_key: Option<Vec<u8>> = None;
        let mut last_seq_for_key = u64::MAX;
        // The sequence of the last entry written out for the current user key.
        let mut last_kept_seq: Option<u64> = None;
        let cut = self.stages[task.stage].policy().target_run_bytes();
        // A file in the PM pool takes whole chunks, and a table cut at `cut` bytes of entries
        // would spill its index and footer into one chunk more: a table in the pool is also
        // cut before its finished file would pass the chunks `cut` takes (at least one).
        let separation = self.options.table.value_separation;
        let fit = match (&self.pm, target.tier, target.kind) {
            (Some(pm), Tier::Pm, RunKind::Sst) => {
                Some((cut / pm.pool.chunk_size()).max(1) * pm.pmfs.data_per_chunk())
            }
            _ => None,
        };
        let (sets, cascade, breaks) = match &task.plan {
            OutputPlan::BySize { breaks } => (&[][..], false, breaks.as_slice()),
            OutputPlan::IntoSets { sets, cascade } => (sets.as_slice(), *cascade, &[][..]),
        };
        let mut router = (!sets.is_empty()).then(|| SetRouter::new(sets));
        let mut breaks = BreakCursor::new(breaks);
        let mut slot = None;
        while input.valid() {
            let ikey = input.key();
            if range
                .1
                .is_some_and(|hi| crate::format::user_key(ikey) >= hi)
            {
                break;
            }
            let read = (ikey.len() + input.value().len()) as u64;
            if input
                .current_child()
                .is_some_and(|c| from_output_group.get(c) == Some(&true))
            {
                tally.read_output_bytes += read;
            } else {
                tally.read_input_bytes += read;
            }
            tally.entries += 1;
            let p = parse_internal_key(ikey)
                .ok_or_else(|| Error::corruption("compaction input", "malformed internal key"))?;
            let new_user_key = current_key.as_deref() != Some(p.user_key);
            if new_user_key {
                current_key = Some(p.user_key.to_vec());
                last_seq_for_key = u64::MAX;
                last_kept_seq = None;
            }
            // The same version twice, and the first copy was written out: a tree chunk whose
            // entries a crash left in the tree after they were compacted into L1
            // (`crate::labdb::l0`). (When the first copy was dropped, the second is judged on
            // its own: SLM-DB's index may point at either of two tables holding one version.)
            let duplicate = !new_user_key && last_kept_seq == Some(p.sequence);
            let drop = if duplicate {
                true
            } else if let Some(index) = index {
                let child = input.current_child().unwrap_or(0);
                !index.is_live(input_numbers[child], p.user_key, p.sequence)?
            } else if last_seq_for_key <= smallest_snapshot {
                true
            } else {
                p.value_type == ValueType::Deletion
                    && p.sequence <= smallest_snapshot
                    && !self.may_hold_below(&version, task, p.user_key)
            };
            last_seq_for_key = p.sequence;
            if drop {
                tally.dropped += 1;
            }
            if !drop {
                last_kept_seq = Some(p.sequence);
                if new_user_key {
                    // Cut: at a set boundary (a plan into sets), or by size between user keys
                    // and at the plan's breaks.
                    let finished = match &mut router {
                        Some(r) => {
                            let s = r.route(p.user_key);
                            let changed = slot != Some(s);
                            slot = Some(s);
                            changed
                        }
                        None => {
                            let passed = breaks.passes(p.user_key);
                            // The next entry (a value the table would separate as a
                            // pointer), with room for the index entry of its block.
                            let value = match input.value().len() {
                                n if separation > 0 && n >= separation => 32,
                                n => n,
                            };
                            let next = 2 * (ikey.len() + value) as u64 + 64;
                            passed
                                || output.as_ref().is_some_and(|o| {
                                    o.writer.size_estimate() >= cut
                                        || fit.is_some_and(|f| o.writer.file_estimate() + next > f)
                                })
                        }
                    };
                    if finished {
                        if let Some(o) = output.take() {
                            finish_output(o, target, &self.dir, outputs, indexed)?;
                        }
                    }
                }
                if output.is_none() {
                    let set = slot.map(|s| &sets[s]);
                    let mut o = self.new_output(
                        target,
                        set,
                        cascade,
                        part,
                        job,
                        created,
                        (index.is_none(), rewrite.as_ref()),
                    )?;
                    if index.is_some() {
                        o.blocks = Some(Vec::new());
                    }
                    output = Some(o);
                }
                let o = output.as_mut().expect("open output");
                if let Some(b) = &mut o.blocks {
                    b.push((ikey.to_vec(), o.writer.next_block().unwrap_or(0)));
                }
                if rewrite.is_some() {
                    o.writer.add_stored(ikey, input.value())?;
                } else {
                    o.writer.add(ikey, input.value())?;
                }
            }
            input.next();
        }
        input.status()?;
        if let Some(o) = output.take() {
            finish_output(o, target, &self.dir, outputs, indexed)?;
        }
        self.fs_for(target.tier).sync_dir(&self.dir)?;
        Ok(())
    }

    /// A new output run's writer and number (registered as a pending output); `set` is the
    /// set it becomes the new top floor of, with cascade pointers into its floors if `cascade`.
    #[allow(clippy::too_many_arguments)] // where the output goes, and how its values are kept
    fn new_output(
        &self,
        target: RunTarget,
        set: Option<&SetTarget>,
        cascade: bool,
        part: Part,
        job: Option<u64>,
        created: &mut Vec<u64>,
        (separate, rewrite): (bool, Option<&HashSet<u64>>),
    ) -> Result<Output> {
        let number = {
            let mut state = self.state.lock();
            let n = state.versions.new_file_number();
            state.pending_outputs.insert(n);
            n
        };
        created.push(number);
        let writer = (|| {
            self.clog_output(job, number)?;
            let floor = match set {
                Some(s) => Some(FloorSpec {
                    slot: u8::try_from(s.floors.len()).map_err(|_| {
                        Error::InvalidArgument(format!("set {} has too many floors", s.id))
                    })?,
                    below: if cascade {
                        Some(
                            s.floors
                                .iter()
                                .map(|f| self.table_cache.array_for(f, part, IoPurpose::Compaction))
                                .collect::<Result<Vec<_>>>()?,
                        )
                    } else {
                        None
                    },
                }),
                None => None,
            };
            let path = run_file_name(&self.dir, number, target.kind);
            let separate = if separate {
                self.separate_values(target, number, rewrite.map(|r| (r.clone(), part)))
            } else {
                None
            };
            create_writer(
                &**self.fs_for(target.tier),
                path,
                target.kind,
                &self.options.table,
                floor,
                separate,
            )
        })();
        Ok(Output {
            writer: writer?,
            number,
            set: set.map_or(0, |s| s.id),
            blocks: None,
        })
    }

    /// Key-value separation in a merge: `Some(logs)` when the merge copies values as stored
    /// (every input a separated SSTable on the output's tier, the output a separated
    /// SSTable), `logs` being the value logs it collects instead: those the inputs name whose
    /// bytes named by the current version are less than half their size. `None`: values are
    /// read and separated again as the output's options say.
    fn stored_merge(
        &self,
        task: &CompactionTask,
        target: RunTarget,
        version: &Version,
        part: Part,
    ) -> Result<Option<HashSet<u64>>> {
        if self.options.table.value_separation == 0
            || target.kind != RunKind::Sst
            || self.stages[task.stage].index().is_some()
            || task.lab_chunk.is_some()
        {
            return Ok(None);
        }
        for f in task.input_runs() {
            if f.tier != target.tier || f.kind != RunKind::Sst || f.row.is_some() {
                return Ok(None);
            }
            let run = self.table_cache.open_for(f, part, IoPurpose::Compaction)?;
            if !run.table().is_some_and(|t| t.is_separated()) {
                return Ok(None);
            }
        }
        let live = version.value_log_refs();
        let fs = self.fs_for(target.tier);
        let mut rewrite = HashSet::new();
        for (n, _) in task.input_runs().flat_map(|f| &f.value_refs) {
            if rewrite.contains(n) {
                continue;
            }
            let size = fs
                .file_size(&value_log_file_name(&self.dir, *n))
                .unwrap_or(0);
            if live.get(n).copied().unwrap_or(0).saturating_mul(2) < size {
                rewrite.insert(*n);
            }
        }
        Ok(Some(rewrite))
    }

    /// True if a run below the task's output may hold `user_key`: a deeper group of the task's
    /// stage, or any group of a later stage; for outputs that join older runs of their group
    /// (floors added to a set), the output group too.
    fn may_hold_below(&self, version: &Version, task: &CompactionTask, user_key: &[u8]) -> bool {
        let s = task.stage;
        let from = if task.plan.joins_older_runs() {
            task.output_group
        } else {
            task.output_group + 1
        };
        self.stages[s].may_hold_from(version.stage(s), from, user_key)
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
            // LAB-DB's L0 trees: the immutable tree compacted whole, then the mutable tree
            // made immutable (by the flush thread, the only one that switches) and compacted
            // whole too; then the levels below as for any stage.
            if let Some(l0) = stage.lab() {
                for round in 0..2 {
                    loop {
                        if let Some(e) = &state.bg_error {
                            result = Err(e.duplicate());
                            break 'stages;
                        }
                        let current = state.versions.current();
                        if crate::labdb::l0::roles_of(current.stage(i).trees).immutable == 0 {
                            break;
                        }
                        let view = PolicyView {
                            stage: i,
                            state: current.stage(i),
                            busy: &state.busy[i],
                            pointers: &state.versions.pointers[i],
                        };
                        match stage.policy().manual(&view, 0, None, None) {
                            Some(task) if !task.groups().iter().any(|&g| state.busy[i][g]) => {
                                set_busy(&mut state, &task, true);
                                drop(state);
                                let r = self.run_task(task);
                                state = self.state.lock();
                                if let Err(e) = r {
                                    result = Err(e);
                                    break 'stages;
                                }
                            }
                            _ => {
                                self.bg_cv.wait_for(&mut state, Duration::from_millis(50));
                            }
                        }
                    }
                    let roles = crate::labdb::l0::roles_of(state.versions.current().stage(i).trees);
                    if round == 1 || l0.mutable_is_empty(roles) {
                        break;
                    }
                    l0.request_switch();
                    loop {
                        self.bg_cv.notify_all();
                        self.bg_cv.wait_for(&mut state, Duration::from_millis(20));
                        if let Some(e) = &state.bg_error {
                            result = Err(e.duplicate());
                            break 'stages;
                        }
                        let now =
                            crate::labdb::l0::roles_of(state.versions.current().stage(i).trees);
                        if now.mutable != roles.mutable {
                            break;
                        }
                    }
                }
            }
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

/// What a merge read and dropped.
/// A range of user keys: from the first (included) to the second (excluded); `None`:
/// unbounded.
type KeyRange<'a> = (Option<&'a [u8]>, Option<&'a [u8]>);

#[derive(Debug, Default)]
struct MergeTally {
    /// Internal key and value bytes read from the input groups (every group but the output).
    read_input_bytes: u64,
    /// The same, read from the output group.
    read_output_bytes: u64,
    /// Entries read.
    entries: u64,
    /// Entries dropped.
    dropped: u64,
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

/// An output run being written.
struct Output {
    writer: Box<dyn RunWriter>,
    number: u64,
    /// The set it joins (0: none yet; the policy's `apply` decides).
    set: u64,
    /// For a stage with a global index: each entry's internal key and data-block ordinal.
    blocks: Option<Vec<(Vec<u8>, usize)>>,
}

/// Finishes `o`: its metadata to `outputs`, its entries with their blocks to `indexed` (for a
/// stage with a global index).
fn finish_output(
    mut o: Output,
    target: RunTarget,
    dir: &std::path::Path,
    outputs: &mut Vec<FileMetaData>,
    indexed: &mut Vec<Vec<IndexedEntry>>,
) -> Result<()> {
    let blocks = o.blocks.take();
    let (meta, data_blocks) = o.finish(target)?;
    if let Some(b) = blocks {
        let path = run_file_name(dir, meta.number, target.kind);
        indexed.push(with_handles(b, &data_blocks, &path.display().to_string())?);
    }
    outputs.push(meta);
    Ok(())
}

impl Output {
    fn finish(
        self,
        target: RunTarget,
    ) -> Result<(FileMetaData, Vec<crate::sst::format::BlockHandle>)> {
        let s = self.writer.finish()?;
        let meta = FileMetaData {
            number: self.number,
            file_size: s.file_size,
            num_entries: s.num_entries,
            smallest: s.smallest,
            largest: s.largest,
            tier: target.tier,
            kind: target.kind,
            set: self.set,
            row: None,
            value_refs: s.value_refs,
            backing: None,
        };
        Ok((meta, s.data_blocks))
    }
}

/// The untouched stretches of logical sorted tables of one output-group run of a compaction
/// (`DbInner::plan_untouched_tables`).
struct TablePlan {
    /// The run.
    f: Arc<FileMetaData>,
    /// Its reader.
    run: crate::runs::OpenRun,
    /// The file the run reads (its own, or its backing file).
    backing: crate::version::Backing,
    /// The tables (index partitions) of that whole file.
    file_tables: u64,
    /// The user keys table `i` of the run ends at (the last table ends at the run's largest):
    /// table `i` holds the keys in `(cuts[i - 1], cuts[i]]`, the first from the run's
    /// smallest.
    cuts: Vec<Vec<u8>>,
    /// Stretches of untouched tables, `[first, end)`, in order.
    stretches: Vec<(usize, usize)>,
}

impl TablePlan {
    fn lower(&self, i: usize) -> Lower<'_> {
        match i {
            0 => Lower::From(self.f.smallest_user_key()),
            _ => Lower::After(&self.cuts[i - 1]),
        }
    }

    fn upper(&self, i: usize) -> &[u8] {
        self.cuts
            .get(i)
            .map_or(self.f.largest_user_key(), |c| c.as_slice())
    }

    /// The bytes of `tables` tables of the file, as their share of it.
    fn bytes_of(&self, tables: usize) -> u64 {
        let share = u128::from(self.backing.file_size) * tables as u128;
        u64::try_from(share / u128::from(self.file_tables)).unwrap_or(u64::MAX)
    }

    /// The bytes of every stretch.
    fn kept_bytes(&self) -> u64 {
        self.stretches
            .iter()
            .map(|(a, b)| self.bytes_of(b - a))
            .sum()
    }
}

/// The lower bound of a logical sorted table's user keys.
#[derive(Clone, Copy)]
enum Lower<'a> {
    /// From this key on.
    From(&'a [u8]),
    /// After this key.
    After(&'a [u8]),
}

impl Lower<'_> {
    /// True if `user_key` is at or past the bound.
    fn passed(self, user_key: &[u8]) -> bool {
        match self {
            Lower::From(k) => user_key >= k,
            Lower::After(k) => user_key > k,
        }
    }

    /// Positions `it` on its first entry at or past the bound.
    fn seek(self, it: &mut dyn InternalIterator) {
        use crate::format::{lookup_key, make_internal_key, user_key, ValueType, MAX_SEQUENCE};
        match self {
            Lower::From(k) => it.seek(&lookup_key(k, MAX_SEQUENCE)),
            Lower::After(k) => {
                it.seek(&make_internal_key(k, 0, ValueType::Deletion));
                while it.valid() && user_key(it.key()) == k {
                    it.next();
                }
            }
        }
    }
}
