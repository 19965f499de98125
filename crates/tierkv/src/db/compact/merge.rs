//! The merge a compaction runs: its input runs merged (in key-range partitions when it has
//! subcompactions), entries dropped by the snapshot rules in the module docs of
//! `db/compact`, the output cut into runs at the policy's target size.

use super::*;

impl DbInner {
    /// Merges the task's input runs as [`DbInner::merge`] does, split into
    /// `compaction.subcompactions` key ranges merged in parallel (one thread each) where the
    /// task allows it; the outputs come back in key order, as one merge's would.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn merge_partitions(
        &self,
        task: &CompactionTask,
        rule: &dyn CompactionRule,
        target: RunTarget,
        job: Option<u64>,
        outputs: &mut Vec<FileMetaData>,
        created: &mut Vec<u64>,
        tally: &mut MergeTally,
    ) -> Result<()> {
        let parts = self.options.compaction.subcompactions;
        let splittable =
            parts > 1 && matches!(task.plan, OutputPlan::BySize { .. }) && rule.plain();
        let cuts = if splittable {
            self.partition_cuts(task, parts)?
        } else {
            Vec::new()
        };
        if cuts.is_empty() {
            return self.merge(
                task,
                rule,
                target,
                job,
                (None, None),
                outputs,
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
        type Outcome = (Vec<FileMetaData>, Vec<u64>, MergeTally);
        let results: Vec<(Result<()>, Outcome)> = std::thread::scope(|scope| {
            let handles: Vec<_> = ranges
                .iter()
                .map(|&range| {
                    scope.spawn(move || {
                        let mut p: Outcome = Default::default();
                        let r = self
                            .merge(task, rule, target, job, range, &mut p.0, &mut p.1, &mut p.2);
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
        for (r, (o, c, t)) in results {
            outputs.extend(o);
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
    pub(super) fn partition_cuts(
        &self,
        task: &CompactionTask,
        parts: usize,
    ) -> Result<Vec<Vec<u8>>> {
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
    pub(super) fn merge(
        &self,
        task: &CompactionTask,
        rule: &dyn CompactionRule,
        target: RunTarget,
        job: Option<u64>,
        range: KeyRange<'_>,
        outputs: &mut Vec<FileMetaData>,
        created: &mut Vec<u64>,
        tally: &mut MergeTally,
    ) -> Result<()> {
        let version = self.state.lock().versions.current();
        let smallest_snapshot = self.smallest_snapshot();
        let part = Part::Stage(task.stage);
        let cx = self.rule_context(task.stage);
        let stored = self.stored_merge(task, rule, target, &version, part)?;
        // The stage's own inputs first (newer versions), then one child per input run in
        // `input_runs` order; per child: the run it reads (the stage's own: none), and
        // whether it reads from the output group.
        let mut children = rule.extra_inputs(&cx)?;
        let mut child_runs: Vec<Option<u64>> = vec![None; children.len()];
        let mut from_output_group: Vec<bool> = vec![false; children.len()];
        for (g, runs) in &task.inputs {
            for f in runs {
                child_runs.push(Some(f.number));
                from_output_group.push(*g == task.output_group);
            }
        }
        for f in task.input_runs() {
            // A run the stage reads partly (a row: its live entries in the task's range).
            if let Some(child) = rule.input(&cx, f)? {
                children.push(child);
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
            // The same version twice, and the first copy was written out: a stage's own input
            // whose entries a crash left in place after they were compacted into the output
            // group. (When the first copy was dropped, the second is judged on its own: a
            // global index may point at either of two tables holding one version.)
            let duplicate = !new_user_key && last_kept_seq == Some(p.sequence);
            let run = input
                .current_child()
                .and_then(|c| child_runs.get(c).copied().flatten());
            let drop = if duplicate {
                true
            } else if let Some(survives) = match run {
                Some(run) => rule.survives(run, p.user_key, p.sequence)?,
                None => None,
            } {
                !survives
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
                            finish_output(o, target, &self.dir, outputs, rule)?;
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
                        (!rule.records_blocks(), rewrite.as_ref()),
                    )?;
                    if rule.records_blocks() {
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
            finish_output(o, target, &self.dir, outputs, rule)?;
        }
        self.fs_for(target.tier).sync_dir(&self.dir)?;
        Ok(())
    }

    /// A new output run's writer and number (registered as a pending output); `set` is the
    /// set it becomes the new top floor of, with cascade pointers into its floors if `cascade`.
    #[allow(clippy::too_many_arguments)] // where the output goes, and how its values are kept
    pub(super) fn new_output(
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
    pub(super) fn stored_merge(
        &self,
        task: &CompactionTask,
        rule: &dyn CompactionRule,
        target: RunTarget,
        version: &Version,
        part: Part,
    ) -> Result<Option<HashSet<u64>>> {
        if self.options.table.value_separation == 0 || target.kind != RunKind::Sst || !rule.plain()
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
    pub(super) fn may_hold_below(
        &self,
        version: &Version,
        task: &CompactionTask,
        user_key: &[u8],
    ) -> bool {
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
}

/// A range of user keys: from the first (included) to the second (excluded); `None`:
/// unbounded.
pub(super) type KeyRange<'a> = (Option<&'a [u8]>, Option<&'a [u8]>);

/// What a merge read and dropped.
#[derive(Debug, Default)]
pub(super) struct MergeTally {
    /// Internal key and value bytes read from the input groups (every group but the output).
    pub(super) read_input_bytes: u64,
    /// The same, read from the output group.
    pub(super) read_output_bytes: u64,
    /// Entries read.
    pub(super) entries: u64,
    /// Entries dropped.
    pub(super) dropped: u64,
}

/// An output run being written.
pub(super) struct Output {
    writer: Box<dyn RunWriter>,
    number: u64,
    /// The set it joins (0: none yet; the policy's `apply` decides).
    set: u64,
    /// When the stage's rule records blocks: each entry's internal key and data-block ordinal.
    blocks: Option<Vec<(Vec<u8>, usize)>>,
}

/// Finishes `o`: its metadata to `outputs`, told to the stage's rule with its entries' blocks
/// where the rule records them.
pub(super) fn finish_output(
    mut o: Output,
    target: RunTarget,
    dir: &std::path::Path,
    outputs: &mut Vec<FileMetaData>,
    rule: &dyn CompactionRule,
) -> Result<()> {
    let blocks = o.blocks.take();
    let (meta, data_blocks) = o.finish(target)?;
    let path = run_file_name(dir, meta.number, target.kind);
    rule.output_finished(&meta, &path, blocks.map(|b| (b, data_blocks.as_slice())))?;
    outputs.push(meta);
    Ok(())
}

impl Output {
    pub(super) fn finish(
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
