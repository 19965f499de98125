//! A row container in PM as L0, over leveled SSTables on SSD: TriangleKV's triangle and
//! MatrixKV's matrix (Ding et al., "TriangleKV: Reducing Write Stalls and Write Amplification
//! in LSM-Tree Based KV Stores With Triangle Container in NVM", IEEE TPDS 2022; MatrixKV is the
//! paper's baseline, Yao et al., USENIX ATC 2020).
//!
//! Group 0 holds the rows ([`GroupOrder::Rows`]): one per flushed memtable, a PM sorted array
//! (the paper's RowTable: its data area is the row's data pages, its fixed-size index entries
//! the sorted metadata array) whose entries carry the cross-row hint `fwd` into the row that
//! was the newest when it was flushed (`parray`, "Row chains"). Compaction never rewrites a
//! row: it moves a key range out of rows into L1 and records the range as dead in each row's
//! [`RowInfo`]; a row whose every key is dead is deleted. Groups 1.. are L1..Ln, SSTables on
//! SSD, sorted and disjoint as in `leveled`, L1 as large as the PM L0 (the flattened levels
//! of section 3.3).
//!
//! * **Lookup** (section 3.4, Fig. 12): rows newest first, as chains of rows linked by their
//!   hints: the newest row of a chain is binary-searched, each older one only in the window
//!   the hints of the bracketing entries give (`parray::chain_get`). A key dead in a row is
//!   dead in every older row (the version checks it), so the lookup goes on to L1 at the
//!   first row where the key is dead. Rows have no Bloom filters (the paper rejects them for
//!   L0, section 3.4). Then at most one SSTable per level.
//! * **Iterators**: one per chain of rows, merging the rows' cursors; a seek positions every
//!   row of the chain in one hint-guided descent (`parray::chain_seek`); each cursor skips its
//!   row's dead ranges. One concatenating iterator per level.
//! * **Write pressure** on the rows' live bytes (estimated from each row's size sketch and
//!   dead ranges) against `rows.l0_bytes`: writes slow down at `rows.slowdown` of it and stop
//!   at all of it.
//! * **Flush target**: a memtable whose keys overlap no live row and no L1 table goes straight
//!   to L1 as an SSTable when `rows.sequential_bypass` is on (the paper's sequential load).
//! * **Compaction**: `compaction::RowPolicy` (right-angle side for the triangle, column
//!   compaction for the matrix; leveled below L1).

use super::levels::level_iterator;
use super::row_pages::FreedPages;
pub(crate) use crate::compaction::{live_row_bytes, row_info, Container};
use crate::compaction::{
    CompactionPolicy, CompactionTask, RowEntries, RowPolicy, RowTask, TaskPayload,
};
use crate::format::{compare_internal, user_key};
use crate::iterator::InternalIterator;
use crate::iterator::MergingIterator;
use crate::options::{CompactionOptions, Options, RowOptions};
use crate::parray::live::{
    dead_entries, first_live, lower_bound_live, merge_intervals, window, RowDead, Window,
};
use crate::parray::{chain_get, chain_seek, ArrayIterator, KeyValue, PmArray};
use crate::pipeline::{
    add_kept, run_meta, CheckContext, CheckReport, CompactionRule, Entry, FlushSource, PlainRule,
    ReadContext, RuleContext, RunTarget, Stage, StageHost, WritePressure,
};
use crate::runs::{run_file_name, RowWriter, TableCache};
use crate::stats::{IoPurpose, Part};
use crate::tier::Tier;
use crate::version::{FileMetaData, GroupOrder, RowInfo, RunKind, StageLayout, StageVersion};
use crate::{Error, Result};
use std::sync::Arc;

/// The row-container stage of `trianglekv` and `matrixkv`.
pub(crate) struct RowStage {
    options: CompactionOptions,
    rows: RowOptions,
    policy: RowPolicy,
    /// What the passes freeing dead rows' pages freed so far.
    pages: FreedPages,
}

impl RowStage {
    /// A row container of kind `container` over `compaction.num_levels - 1` SSD levels, shaped
    /// by `options` (its `rows.l0_bytes` resolved: [`RowOptions::l0_capacity`]).
    pub fn new(options: &Options, container: Container) -> Self {
        let rows = RowOptions {
            l0_bytes: options.rows.l0_capacity(options),
            ..options.rows.clone()
        };
        RowStage {
            options: options.compaction.clone(),
            policy: RowPolicy::new(&options.compaction, &rows, container),
            rows,
            pages: FreedPages::default(),
        }
    }
}

/// True if row `f` holds a live key in `[lo, hi]` by its metadata: its key range meets it and
/// no single dead range covers the meeting part.
pub(crate) fn row_may_hold(f: &FileMetaData, lo: &[u8], hi: &[u8]) -> bool {
    let (a, b) = (lo.max(f.smallest_user_key()), hi.min(f.largest_user_key()));
    if a > b {
        return false;
    }
    let info = row_info(f);
    !info
        .dead
        .iter()
        .any(|d| d.contains(a) && d.end.as_deref().is_none_or(|e| b < e))
}

/// The rows of `rows` (older first) in chains: maximal runs of consecutive rows in which each
/// row's hints point into the row before it; oldest chain first.
fn chains(rows: &[Arc<FileMetaData>]) -> Vec<&[Arc<FileMetaData>]> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=rows.len() {
        if i == rows.len() || row_info(&rows[i]).hints_into != rows[i - 1].number {
            out.push(&rows[start..i]);
            start = i;
        }
    }
    out
}

fn open_rows(
    tables: &TableCache,
    part: Part,
    rows: &[Arc<FileMetaData>],
) -> Result<Vec<Arc<PmArray>>> {
    rows.iter().map(|f| tables.array(f, part)).collect()
}

impl Stage for RowStage {
    /// A row (a row target): a sorted array with hints into `over` and a size sketch.
    fn write_flush_run(
        &self,
        host: &dyn StageHost,
        source: &dyn FlushSource,
        number: u64,
        target: RunTarget,
        over: Option<&FileMetaData>,
    ) -> Result<Option<(FileMetaData, u64)>> {
        if !target.row {
            return Ok(None);
        }
        let fs = host.fs_for(target.tier);
        let path = run_file_name(host.dir(), number, target.kind);
        let over_array = over
            .map(|f| {
                let array = host
                    .tables()
                    .array_for(f, Part::Stage(0), IoPurpose::Flush)?;
                let info = row_info(f);
                let entries = dead_entries(info, &array, IoPurpose::Flush)?;
                let dead = (info.dead.clone(), entries.into_owned());
                Ok::<_, crate::Error>((array, dead))
            })
            .transpose()?;
        let mut writer = RowWriter::create(&**fs, path, over_array, IoPurpose::Flush)?;
        let dropped = add_kept(source, host.smallest_snapshot(), |k, v| writer.add(k, v))?;
        host.counters()
            .flush_dropped_versions
            .fetch_add(dropped, std::sync::atomic::Ordering::Relaxed);
        let (summary, sketch) = writer.finish()?;
        let row = RowInfo {
            hints_into: over.map_or(0, |f| f.number),
            dead: Vec::new(),
            dead_entries: Vec::new(),
            sketch,
        };
        fs.sync_dir(host.dir())?;
        Ok(Some((
            run_meta(number, summary, target, Some(Box::new(row))),
            0,
        )))
    }

    /// The hints of every row whose hinted row is still there, against that row.
    fn check(&self, cx: &CheckContext<'_>, stage: usize, report: &mut CheckReport) -> Result<()> {
        let version = cx.versions.current();
        let state = version.stage(stage);
        for (group, order) in version.layouts()[stage].groups.iter().enumerate() {
            if *order != GroupOrder::Rows {
                continue;
            }
            for w in state.groups[group].windows(2) {
                let into = w[1].row.as_ref().map_or(0, |r| r.hints_into);
                if into != w[0].number {
                    continue;
                }
                let part = Part::Stage(stage);
                let older = cx.tables.array_for(&w[0], part, IoPurpose::Recovery)?;
                let newer = cx.tables.array_for(&w[1], part, IoPurpose::Recovery)?;
                let (older_info, newer_info) = (row_info(&w[0]), row_info(&w[1]));
                let older_dead = (
                    older_info.dead.clone(),
                    dead_entries(older_info, &older, IoPurpose::Recovery)?.into_owned(),
                );
                let newer_dead = dead_entries(newer_info, &newer, IoPurpose::Recovery)?;
                report.pointers_checked += crate::parray::verify_row_hints(
                    &older,
                    &older_dead,
                    &newer,
                    &newer_dead,
                    IoPurpose::Recovery,
                )?;
            }
        }
        Ok(())
    }

    fn layout(&self) -> StageLayout {
        let mut groups = vec![GroupOrder::Disjoint; self.options.num_levels];
        groups[0] = GroupOrder::Rows;
        StageLayout {
            name: "rows+levels",
            groups,
        }
    }

    fn ingest_target(&self) -> RunTarget {
        RunTarget {
            group: 0,
            tier: Tier::Pm,
            kind: RunKind::PmArray,
            row: true,
        }
    }

    fn flush_target(
        &self,
        state: &StageVersion,
        busy: &[bool],
        smallest: &[u8],
        largest: &[u8],
    ) -> RunTarget {
        let bypass = self.rows.sequential_bypass
            && !busy[1]
            && !state.groups[0]
                .iter()
                .any(|f| row_may_hold(f, smallest, largest))
            && state
                .overlapping(1, Some(smallest), Some(largest))
                .is_empty();
        if bypass {
            RunTarget {
                group: 1,
                tier: Tier::Ssd,
                kind: RunKind::Sst,
                row: false,
            }
        } else {
            self.ingest_target()
        }
    }

    fn get(
        &self,
        cx: &ReadContext<'_>,
        state: &StageVersion,
        user_key: &[u8],
        lookup: &[u8],
    ) -> Result<Option<Entry>> {
        let rows = &state.groups[0];
        // The rows where the key is live: the newest ones, down to the first where it is dead.
        let dead_from = rows
            .iter()
            .rposition(|f| row_info(f).is_dead(user_key))
            .map_or(0, |i| i + 1);
        let mut found = None;
        for chain in chains(&rows[dead_from..]).into_iter().rev() {
            let arrays = open_rows(cx.tables, cx.part, chain)?;
            let windows = chain
                .iter()
                .zip(&arrays)
                .map(|(f, a)| {
                    let info = row_info(f);
                    let entries = dead_entries(info, a, cx.purpose)?;
                    Ok(window(&info.dead, &entries, a.len(), user_key))
                })
                .collect::<Result<Vec<Window>>>()?;
            found = chain_get(&arrays, &windows, user_key, lookup, cx.purpose)?;
            if found.is_some() {
                break;
            }
        }
        if found.is_none() {
            for level in 1..state.groups.len() {
                if let Some(f) = state.run_for_key(level, user_key) {
                    let run = cx.tables.open(f, cx.part)?;
                    found = run.get(lookup, cx.purpose, cx.fill_cache)?;
                    if found.is_some() {
                        break;
                    }
                }
            }
        }
        super::found_entry("rows", user_key, found)
    }

    fn iterators(
        &self,
        cx: &ReadContext<'_>,
        state: &StageVersion,
        out: &mut Vec<Box<dyn InternalIterator>>,
    ) -> Result<()> {
        for chain in chains(&state.groups[0]).into_iter().rev() {
            let arrays = open_rows(cx.tables, cx.part, chain)?;
            let dead = chain
                .iter()
                .zip(&arrays)
                .map(|(f, a)| {
                    let info = row_info(f);
                    let entries = dead_entries(info, a, cx.purpose)?.into_owned();
                    Ok((info.dead.clone(), entries))
                })
                .collect::<Result<Vec<_>>>()?;
            out.push(Box::new(RowsIterator::new(arrays, dead, cx.purpose)));
        }
        for runs in state.groups.iter().skip(1) {
            if !runs.is_empty() {
                out.push(Box::new(level_iterator(cx, Arc::clone(runs))));
            }
        }
        Ok(())
    }

    fn may_hold_from(&self, state: &StageVersion, group: usize, user_key: &[u8]) -> bool {
        (group..state.groups.len()).any(|g| {
            if g == 0 {
                state.groups[0]
                    .iter()
                    .any(|f| row_may_hold(f, user_key, user_key))
            } else {
                state.run_for_key(g, user_key).is_some()
            }
        })
    }

    fn write_pressure(&self, state: &StageVersion) -> WritePressure {
        let live = live_row_bytes(&state.groups[0]) as f64;
        let capacity = self.rows.l0_bytes as f64;
        if live >= capacity {
            WritePressure::Stop
        } else if live >= capacity * self.rows.slowdown {
            WritePressure::Slowdown
        } else {
            WritePressure::None
        }
    }

    fn policy(&self) -> &dyn CompactionPolicy {
        &self.policy
    }

    /// Frees the PM pages of rows wholly in their dead ranges (`stages/row_pages.rs`).
    fn reclaim(&self, host: &dyn StageHost, stage: usize) -> Result<()> {
        self.pages.free(host, stage).map(drop)
    }

    fn check_run(
        &self,
        tables: &TableCache,
        stage: usize,
        run: &FileMetaData,
    ) -> Option<Result<u64>> {
        run.row
            .as_ref()
            .map(|info| check_row(tables, stage, run, info))
    }

    /// A task moving a key range out of the rows (a [`RowTask`]) reads each input row's live
    /// entries in the range only, found without reading a dead entry; their entry intervals are
    /// filled in here ([`RowTask::entries`]) for the policy to record.
    fn compaction_rule(
        &self,
        cx: &RuleContext<'_>,
        task: &mut CompactionTask,
    ) -> Result<Box<dyn CompactionRule>> {
        let Some(RowTask { range, .. }) = task.payload::<RowTask>() else {
            return Ok(Box::new(PlainRule));
        };
        let purpose = IoPurpose::Compaction;
        let mut rows = Vec::new();
        for f in task.inputs.first().map_or(&[][..], |(_, rows)| rows) {
            let Some(row) = &f.row else {
                return Err(Error::InvalidArgument(format!(
                    "run {} of a row task is not a row",
                    f.number
                )));
            };
            let array = cx.tables.array_for(f, cx.part, purpose)?;
            let dead = dead_entries(row, &array, purpose)?.into_owned();
            let bound =
                |key: Option<&[u8]>| lower_bound_live(&array, &row.dead, &dead, key, purpose);
            let first = bound(Some(&range.start))?;
            let end = bound(range.end.as_deref())?.max(first);
            rows.push((f.number, (dead, (first, end))));
        }
        task.payload = Some(TaskPayload::new(RowTask {
            range: range.clone(),
            entries: rows.iter().map(|(_, e)| e.clone()).collect(),
        }));
        Ok(Box::new(RowRangeRule { rows }))
    }
}

/// A row task's part in the merge: each input row read through a [`RowCursor`] over its live
/// entries in the task's range.
struct RowRangeRule {
    /// Per input row (by number): its dead entry intervals and the interval of the range.
    rows: Vec<(u64, RowEntries)>,
}

impl CompactionRule for RowRangeRule {
    fn plain(&self) -> bool {
        false
    }

    fn input(
        &self,
        cx: &RuleContext<'_>,
        run: &Arc<FileMetaData>,
    ) -> Result<Option<Box<dyn InternalIterator>>> {
        let Some(row) = &run.row else {
            return Ok(None);
        };
        let Some((_, (dead, keep))) = self.rows.iter().find(|(n, _)| *n == run.number) else {
            return Err(Error::InvalidArgument(format!(
                "row {} of a row task without its entries",
                run.number
            )));
        };
        let array = cx.tables.array_for(run, cx.part, IoPurpose::Compaction)?;
        Ok(Some(Box::new(RowCursor::new(
            &array,
            (row.dead.clone(), dead.clone()),
            Some(*keep),
            IoPurpose::Compaction,
        ))))
    }
}

/// A cursor over one row's live entries: it skips the row's dead entries by index, never
/// reading their key or value bytes (their data pages may be freed: `parray::live`), and, for
/// a compaction, every entry outside the entry interval it moves.
pub(crate) struct RowCursor {
    inner: ArrayIterator,
    array: Arc<PmArray>,
    /// The dead key ranges and their entry intervals.
    dead: RowDead,
    /// Entry intervals skipped: the dead ones and those outside `keep`; sorted, disjoint.
    skip: Vec<(u32, u32)>,
    purpose: IoPurpose,
}

impl RowCursor {
    /// A cursor over the live entries of `array` (whose dead ranges are `dead`) inside the
    /// entry interval `keep` (`None`: all).
    pub(crate) fn new(
        array: &Arc<PmArray>,
        dead: RowDead,
        keep: Option<(u32, u32)>,
        purpose: IoPurpose,
    ) -> Self {
        let mut skip = dead.1.clone();
        if let Some((first, end)) = keep {
            skip.push((0, first));
            skip.push((end, array.len()));
        }
        RowCursor {
            inner: array.iter(purpose),
            array: Arc::clone(array),
            skip: merge_intervals(skip),
            dead,
            purpose,
        }
    }

    /// Positions on the first live entry at or after entry `i` (whose key and value are `kv`
    /// when already read and `i` is live).
    fn position(&mut self, i: u32, kv: Option<KeyValue>) {
        let live = first_live(&self.skip, i);
        let kv = if live == i { kv } else { None };
        self.inner.seek_to_index(live.min(self.array.len()), kv);
    }
}

impl InternalIterator for RowCursor {
    fn valid(&self) -> bool {
        self.inner.valid()
    }
    fn seek_to_first(&mut self) {
        self.position(0, None);
    }
    fn seek(&mut self, target: &[u8]) {
        let (ranges, entries) = &self.dead;
        let p = match window(ranges, entries, self.array.len(), user_key(target)) {
            Window::Dead { end, .. } => Ok(end),
            Window::Live { lo, hi, .. } => self.array.lower_bound(target, lo, hi, self.purpose),
        };
        match p {
            Ok(p) => self.position(p, None),
            Err(e) => self.inner.fail_with(e),
        }
    }
    fn next(&mut self) {
        let next = self.inner.index().saturating_add(1);
        self.position(next, None);
    }
    fn key(&self) -> &[u8] {
        self.inner.key()
    }
    fn value(&self) -> &[u8] {
        self.inner.value()
    }
    fn status(&self) -> Result<()> {
        self.inner.status()
    }
}

/// Merges the rows of one chain (oldest first), each cursor skipping its row's dead ranges; a
/// seek positions every row in one hint-guided descent.
pub(crate) struct RowsIterator {
    rows: Vec<Arc<PmArray>>,
    /// Per row, its dead ranges and their entry intervals (for the seek's windows).
    dead: Vec<RowDead>,
    merge: MergingIterator<RowCursor>,
    purpose: IoPurpose,
}

impl RowsIterator {
    /// An unpositioned iterator over `rows` (a chain, oldest first) with their dead ranges.
    pub(crate) fn new(rows: Vec<Arc<PmArray>>, dead: Vec<RowDead>, purpose: IoPurpose) -> Self {
        let cursors = rows
            .iter()
            .zip(&dead)
            .map(|(a, d)| RowCursor::new(a, d.clone(), None, purpose))
            .collect();
        RowsIterator {
            rows,
            dead,
            merge: MergingIterator::new(cursors),
            purpose,
        }
    }
}

impl InternalIterator for RowsIterator {
    fn valid(&self) -> bool {
        self.merge.valid()
    }
    fn seek_to_first(&mut self) {
        self.merge.seek_to_first();
    }
    fn seek(&mut self, target: &[u8]) {
        let (rows, purpose) = (&self.rows, self.purpose);
        let uk = user_key(target);
        let windows: Vec<Window> = rows
            .iter()
            .zip(&self.dead)
            .map(|(a, (ranges, entries))| window(ranges, entries, a.len(), uk))
            .collect();
        self.merge.reposition(|cursors| {
            let positions = chain_seek(rows, &windows, target, purpose)?;
            for (c, (p, kv)) in cursors.iter_mut().zip(positions) {
                c.position(p, kv);
            }
            Ok(())
        });
    }
    fn next(&mut self) {
        self.merge.next();
    }
    fn key(&self) -> &[u8] {
        self.merge.key()
    }
    fn value(&self) -> &[u8] {
        self.merge.value()
    }
    fn status(&self) -> Result<()> {
        self.merge.status()
    }
}

/// Checks a row of a row container for `tierkv check`: its live entries are read and checked (every
/// one outside the row's dead ranges, the first and last against the manifest when live), its
/// dead ones only by their index entries (their data pages may be freed).
fn check_row(cache: &TableCache, stage: usize, f: &FileMetaData, info: &RowInfo) -> Result<u64> {
    let array = cache.array_for(f, crate::stats::Part::Stage(stage), IoPurpose::Recovery)?;
    let dead = dead_entries(info, &array, IoPurpose::Recovery)?;
    let last = array.len().saturating_sub(1);
    let location = array.path().display().to_string();
    let bad = |why: String| Error::corruption(location.clone(), why);
    let entries = array.verify_live(
        &dead,
        &mut |i, key| {
            if info.is_dead(user_key(key)) {
                return Err(bad(format!("live entry {i} has a key in a dead range")));
            }
            if (i == 0 && compare_internal(key, &f.smallest).is_ne())
                || (i == last && compare_internal(key, &f.largest).is_ne())
            {
                return Err(bad(format!(
                    "entry {i} differs from the manifest's smallest or largest key"
                )));
            }
            Ok(())
        },
        IoPurpose::Recovery,
    )?;
    if entries != f.num_entries {
        return Err(bad(format!(
            "{entries} entries, the manifest recorded {}",
            f.num_entries
        )));
    }
    Ok(entries)
}
