//! FluidKV's reuse of untouched tables (Lu et al., PVLDB 17(6), section 4.4): the runs of a
//! compaction's output group that no source key falls into stay where they are, source runs
//! that overlap nothing move down unchanged, and the untouched stretches of logical sorted
//! tables inside a touched run stay as runs reading part of the old file.
//!
//! Unlike the policies, the reuse reads: a source run's keys where an output-group run lies,
//! and the top-level indexes of the runs it may keep in part. The executor (`db/compact/`)
//! runs it once per task, before the merge, given what it reads and counts
//! ([`ReuseContext`]).

use super::{CompactionTask, Holes, OutputPlan};
use crate::iterator::InternalIterator;
use crate::options::Options;
use crate::runs::TableCache;
use crate::stats::{Counters, IoPurpose, Part};
use crate::version::{FileMetaData, RunKind, Version};
use crate::Result;
use std::collections::HashSet;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// What the reuse of one task reads and counts: the engine's, given by the executor.
pub(crate) struct ReuseContext<'a> {
    /// The database's options (`compaction.reuse_*`, the pool's chunk size).
    pub options: &'a Options,
    /// Opens the runs (keys and indexes only).
    pub tables: &'a TableCache,
    /// The counters of reused and reclaimed runs.
    pub counters: &'a Counters,
    /// The current version (read under the state lock).
    pub current: &'a dyn Fn() -> Arc<Version>,
    /// A new file number (taken under the state lock), for a run kept in part.
    pub new_file_number: &'a dyn Fn() -> u64,
}

impl ReuseContext<'_> {
    /// With `compaction.reuse_untouched_runs`, for a task of the first group into the next cut
    /// by size: the output group's input runs whose key range holds no key of a source run
    /// leave the task (they stay where they are, FluidKV's reuse of untouched tables), and the
    /// source runs whose range overlaps no other input run's are moved to the output group
    /// unchanged (returned; they stay inputs, so that the edit deletes them from the source
    /// group, and the merge skips them). Each run kept or moved gets a break in the task's
    /// plan at its smallest key, so that no output spans it.
    /// `plain`: the stage's compaction rule merges plainly (no stage reads or decides in the
    /// merge); a task of any other rule reuses nothing.
    pub(crate) fn reuse_untouched_runs(
        &self,
        task: &mut CompactionTask,
        plain: bool,
    ) -> Result<Vec<Arc<FileMetaData>>> {
        let breaks = match &mut task.plan {
            OutputPlan::BySize { breaks } => breaks,
            OutputPlan::IntoSets { .. } => return Ok(Vec::new()),
        };
        if !self.options.compaction.reuse_untouched_runs
            || task.trivial_move
            || !plain
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
                    .tables
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
        let version = (self.current)();
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
        let run = self.tables.open_for(f, part, purpose)?;
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
            let run = self.tables.open_for(s, part, purpose)?;
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
                number: (self.new_file_number)(),
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
}

/// The untouched stretches of logical sorted tables of one output-group run of a compaction
/// (`ReuseContext::plan_untouched_tables`).
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
