//! Flushes: the flush thread writes the front end's oldest immutable buffer into stage 0, and
//! the user-facing `flush` waits for every buffer to be flushed.
//!
//! File protocol (DESIGN.md section 4): a new run is written and synced, the directory is
//! synced, then a manifest record names it (and retires the buffer's log); files that no live
//! version names any more are deleted only after the manifest record that dropped them is
//! durable. Any failure poisons the database (`State::bg_error`): writes fail from then on,
//! reads keep working, and reopening recovers from the last durable state.

use super::DbInner;
use crate::gindex::with_handles;
use crate::pipeline::{add_kept, FlushPlan, FlushSource, RunTarget, StageHost};
use crate::runs::{create_writer, run_file_name, RowWriter};
use crate::sst::table_builder::TableSummary;
use crate::sst::value_log::value_log_file_name;
use crate::sst::TableBuilder;
use crate::stats::{IoPurpose, Part};
use crate::tier::Tier;
use crate::version::{FileMetaData, RowInfo, Version, VersionEdit};
use crate::{Error, Result};
use std::sync::atomic::Ordering::{Acquire, Relaxed};
use std::sync::Arc;
use std::time::Duration;

impl DbInner {
    /// The flush thread: writes immutable write buffers into stage 0, oldest first.
    pub(crate) fn flush_loop(&self) {
        let mut state = self.state.lock();
        loop {
            if state.shutting_down {
                return;
            }
            let source = match self.front.next_flush() {
                Some(s) if state.bg_error.is_none() => s,
                _ => {
                    if state.bg_error.is_none() {
                        // Stage 0's upkeep runs on this thread (LAB-DB's tree switch and
                        // deferred work: this is the only thread that inserts into its
                        // mutable tree). It runs without the lock, so a wake-up may have come
                        // meanwhile: look again before waiting, and wait no longer than the
                        // stage asks (what is deferred waits for readers, who do not signal).
                        drop(state);
                        let again = self.stages[0].flush_upkeep(self);
                        state = self.state.lock();
                        if state.shutting_down || self.front.next_flush().is_some() {
                            continue;
                        }
                        match again {
                            Some(wait) => {
                                self.bg_cv.wait_for(&mut state, wait);
                            }
                            None => self.bg_cv.wait(&mut state),
                        }
                        continue;
                    }
                    self.bg_cv.wait(&mut state);
                    continue;
                }
            };
            let number = state.versions.new_file_number();
            state.pending_outputs.insert(number);
            let plan = self.flush_plan(state, &*source);
            state = plan.1;
            let plan = plan.0;
            if plan.holds_group {
                state.busy[0][plan.target.group] = true;
            }
            drop(state);
            // Closed logs are synced off the write path, here; the log the flush edit will name
            // as the oldest live one was created before this buffer was handed over, so its
            // directory entry is durable before the manifest names it.
            let mut job = None;
            let built = self
                .front
                .sync_closed_logs(self)
                .and_then(|()| {
                    job = self.clog_start(Vec::new())?;
                    self.clog_output(job, number)
                })
                .and_then(|()| write_flush_run(self, &*source, number, &plan));
            state = self.state.lock();
            state.pending_outputs.remove(&number);
            if plan.holds_group {
                state.busy[0][plan.target.group] = false;
            }
            let result = built.and_then(|run| {
                let mut edit = VersionEdit::default();
                if let Some((group, meta)) = run {
                    edit.stage_mut(0).added.push((group, meta));
                }
                self.front.retire_flushed(&mut edit);
                state.versions.last_sequence = self.last_sequence.load(Acquire);
                state.versions.log_and_apply(edit)?;
                self.clog_finish(&mut state, job, true)
            });
            match result {
                Ok(_) => {
                    let retired = self.front.flushed(&self.dir);
                    state.install_super_version(&*self.front);
                    self.counters.flushes.fetch_add(1, Relaxed);
                    let obsolete = self.collect_obsolete_after_flush(&mut state, retired);
                    self.bg_cv.notify_all();
                    drop(state);
                    self.delete_files(obsolete);
                    let scanned = self.scan_index_leaves();
                    let freed = self.free_dead_row_pages();
                    state = self.state.lock();
                    if let Err(e) = scanned {
                        state.poison("global index leaf scan failed", e);
                    }
                    if let Err(e) = freed {
                        state.poison("freeing dead row pages failed", e);
                    }
                    if state.bg_error.is_none() {
                        drop(state);
                        self.stages[0].flush_upkeep(self);
                        state = self.state.lock();
                    }
                    // Writers waiting for PM space freed by the deleted log (and compactions
                    // the leaf scan listed tables for).
                    self.bg_cv.notify_all();
                }
                Err(e) => {
                    state.poison("flush failed", e);
                    self.bg_cv.notify_all();
                }
            }
        }
    }

    /// SLM-DB's rule R2 after a flush or a compaction: the next leaf-scan window of each
    /// global index.
    pub(crate) fn scan_index_leaves(&self) -> Result<()> {
        for (i, stage) in self.stages.iter().enumerate() {
            if let Some(index) = stage.index() {
                let tables = self.super_version().version.stage(i).groups[0].len();
                index.leaf_scan(tables)?;
            }
        }
        Ok(())
    }

    /// Rotates the front end's buffer (if it holds anything) and waits until every immutable
    /// buffer is flushed.
    pub(crate) fn flush(&self) -> Result<()> {
        self.front.rotate(self)?;
        let mut state = self.state.lock();
        while self.front.pending_flushes() > 0 {
            if let Some(e) = &state.bg_error {
                return Err(e.duplicate());
            }
            self.bg_cv.notify_all();
            self.bg_cv.wait_for(&mut state, Duration::from_millis(50));
        }
        match &state.bg_error {
            Some(e) => Err(e.duplicate()),
            None => Ok(()),
        }
    }
}

/// Stage 0's ingest target over the version `current` (no bypass: recovery).
pub(crate) fn ingest_plan(db: &DbInner, current: &Version) -> FlushPlan {
    let target = db.stages[0].ingest_target();
    FlushPlan {
        target,
        over: newest_row(current, target),
        holds_group: false,
        base: current.stage(0).without_runs(),
        readers: Vec::new(),
        live_after: false,
    }
}

/// The newest run of the target group when the target is a row (its hints point into it).
fn newest_row(current: &Version, target: RunTarget) -> Option<Arc<FileMetaData>> {
    target
        .row
        .then(|| current.stage(0).groups[target.group].last().cloned())
        .flatten()
}

/// The user keys `source` spans.
fn key_span(source: &dyn FlushSource) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
    let mut it = source.iter();
    it.seek_to_first();
    let mut span: Option<(Vec<u8>, Vec<u8>)> = None;
    while it.valid() {
        let uk = crate::format::user_key(it.key());
        match &mut span {
            None => span = Some((uk.to_vec(), uk.to_vec())),
            Some((_, hi)) => {
                if hi.as_slice() != uk {
                    *hi = uk.to_vec();
                }
            }
        }
        it.next();
    }
    it.status()?;
    Ok(span)
}

impl DbInner {
    /// The plan of the flush of `source`, decided under the state lock (`state`, handed back:
    /// a stage with a flush-time choice needs the source's key span, read without the lock).
    fn flush_plan<'a>(
        &'a self,
        state: parking_lot::MutexGuard<'a, super::State>,
        source: &dyn FlushSource,
    ) -> (FlushPlan, parking_lot::MutexGuard<'a, super::State>) {
        let ingest = self.stages[0].ingest_target();
        if !ingest.row {
            let mut plan = ingest_plan(self, &state.versions.current());
            plan.readers = state.live_versions.clone();
            plan.live_after = true;
            return (plan, state);
        }
        drop(state);
        // A failed read of the buffer shows again when the flush writes it.
        let span = key_span(source).ok().flatten();
        let state = self.state.lock();
        let current = state.versions.current();
        let target = match &span {
            Some((lo, hi)) => self.stages[0].flush_target(current.stage(0), &state.busy[0], lo, hi),
            None => ingest,
        };
        let plan = FlushPlan {
            target,
            over: newest_row(&current, target),
            holds_group: target.group != ingest.group,
            base: current.stage(0).without_runs(),
            readers: state.live_versions.clone(),
            live_after: true,
        };
        (plan, state)
    }
}

/// Writes the entries of `source` as run `number` where `plan` says, syncs it and its
/// directory, and counts the bytes as stage 0's flush writes; returns the run's group and
/// metadata (`None` for an empty source). When the PM pool has no room for the run it goes to
/// SSD instead (counted in `pm_flush_fallbacks`; a row stays a row, in a file on SSD).
pub(crate) fn write_flush_run(
    db: &DbInner,
    source: &dyn FlushSource,
    number: u64,
    plan: &FlushPlan,
) -> Result<Option<(usize, FileMetaData)>> {
    if source.is_empty() || source.absorb(db as &dyn StageHost)? {
        return Ok(None);
    }
    if db.stages[0].take_flush(db, source, number, plan)? {
        return Ok(None);
    }
    let started = std::time::Instant::now();
    let target = plan.target;
    let (meta, index_bytes) = match build_run(db, source, number, target, plan.over.as_deref()) {
        Err(Error::NoSpace(_)) if target.tier == Tier::Pm => {
            let _ = db
                .fs_for(Tier::Pm)
                .remove(&run_file_name(&db.dir, number, target.kind));
            let _ = db
                .fs_for(Tier::Pm)
                .remove(&value_log_file_name(&db.dir, number));
            db.counters.pm_flush_fallbacks.fetch_add(1, Relaxed);
            build_run(
                db,
                source,
                number,
                RunTarget {
                    tier: Tier::Ssd,
                    ..target
                },
                plan.over.as_deref(),
            )?
        }
        other => other?,
    };
    db.counters.add_written(
        meta.tier,
        Part::Stage(0),
        IoPurpose::Flush,
        meta.written_bytes(),
    );
    db.counters.add_flush(
        target.group,
        meta.tier,
        meta.written_bytes() + index_bytes,
        u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
    );
    Ok(Some((target.group, meta)))
}

fn build_run(
    db: &DbInner,
    source: &dyn FlushSource,
    number: u64,
    target: RunTarget,
    over: Option<&FileMetaData>,
) -> Result<(FileMetaData, u64)> {
    let fs = db.fs_for(target.tier);
    let path = run_file_name(&db.dir, number, target.kind);
    let (summary, row) = if target.row {
        // A row: a sorted array with hints into `over` and a size sketch.
        let over_array = over
            .map(|f| {
                let array = db
                    .table_cache
                    .array_for(f, Part::Stage(0), IoPurpose::Flush)?;
                let info = crate::stages::rows::row_info(f);
                let entries = crate::parray::live::dead_entries(info, &array, IoPurpose::Flush)?;
                let dead = (info.dead.clone(), entries.into_owned());
                Ok::<_, crate::Error>((array, dead))
            })
            .transpose()?;
        let mut writer = RowWriter::create(&**fs, path, over_array, IoPurpose::Flush)?;
        count_dropped(
            db,
            add_kept(source, db.smallest_snapshot(), |k, v| writer.add(k, v))?,
        );
        let (summary, sketch) = writer.finish()?;
        let row = RowInfo {
            hints_into: over.map_or(0, |f| f.number),
            dead: Vec::new(),
            dead_entries: Vec::new(),
            sketch,
        };
        (summary, Some(Box::new(row)))
    } else if let Some(index) = db.stages[0].index() {
        // A table the global index maps keys into: each entry's data block is recorded, and
        // the index learns the table once it is durable, before the manifest names it.
        let file = fs.create(&path)?;
        let mut builder = TableBuilder::new(&db.options.table, file, path.clone());
        let mut blocks = Vec::new();
        count_dropped(
            db,
            add_kept(source, db.smallest_snapshot(), |k, v| {
                blocks.push((k.to_vec(), builder.next_block()));
                builder.add(k, v)
            })?,
        );
        let summary = builder.finish()?;
        fs.sync_dir(&db.dir)?;
        let entries = with_handles(blocks, &summary.data_blocks, &path.display().to_string())?;
        let meta = run_meta(number, summary, target, None);
        index.index_flush(&Arc::new(meta.clone()), &entries, &db.snapshots.live())?;
        let index_bytes = index.take_pm_bytes();
        db.counters
            .add_written(Tier::Pm, Part::Stage(0), IoPurpose::Flush, index_bytes);
        return Ok((meta, index_bytes));
    } else {
        let separate = db.separate_values(target, number, None);
        let mut writer =
            create_writer(&**fs, path, target.kind, &db.options.table, None, separate)?;
        count_dropped(
            db,
            add_kept(source, db.smallest_snapshot(), |k, v| writer.add(k, v))?,
        );
        (writer.finish()?, None)
    };
    fs.sync_dir(&db.dir)?;
    Ok((run_meta(number, summary, target, row), 0))
}

/// The metadata of run `number` written as `target` says.
fn run_meta(
    number: u64,
    summary: TableSummary,
    target: RunTarget,
    row: Option<Box<RowInfo>>,
) -> FileMetaData {
    FileMetaData {
        number,
        file_size: summary.file_size,
        num_entries: summary.num_entries,
        smallest: summary.smallest,
        largest: summary.largest,
        tier: target.tier,
        kind: target.kind,
        set: 0,
        row,
        value_refs: summary.value_refs,
        backing: None,
    }
}

fn count_dropped(db: &DbInner, n: u64) {
    db.counters.flush_dropped_versions.fetch_add(n, Relaxed);
}
