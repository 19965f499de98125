//! Flushes: the flush thread writes the front end's oldest immutable buffer into stage 0, and
//! the user-facing `flush` waits for every buffer to be flushed.
//!
//! File protocol (DESIGN.md section 4): a new run is written and synced, the directory is
//! synced, then a manifest record names it (and retires the buffer's log); files that no live
//! version names any more are deleted only after the manifest record that dropped them is
//! durable. Any failure poisons the database (`State::bg_error`): writes fail from then on,
//! reads keep working, and reopening recovers from the last durable state.

use super::DbInner;
use crate::pipeline::{add_kept, run_meta, FlushPlan, FlushSource, RunTarget, StageHost};
use crate::runs::{create_writer, run_file_name};
use crate::sst::value_log::value_log_file_name;
use crate::stats::{IoPurpose, Part};
use crate::tier::Tier;
use crate::version::{FileMetaData, Version, VersionEdit};
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
                    let scanned = self.after_install();
                    let reclaimed = self.reclaim();
                    state = self.state.lock();
                    if let Err(e) = scanned {
                        state.poison("a stage's step after the flush failed", e);
                    }
                    if let Err(e) = reclaimed {
                        state.poison("a stage's reclamation after the flush failed", e);
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

    /// Each stage's step after a flush's or a compaction's version is installed
    /// (`Stage::after_install`: SLM-DB's leaf scan, rule R2), given its state in the version
    /// readers see now.
    pub(crate) fn after_install(&self) -> Result<()> {
        let current = self.super_version().version.clone();
        for (i, stage) in self.stages.iter().enumerate() {
            stage.after_install(current.stage(i))?;
        }
        Ok(())
    }

    /// Each stage's reclamation ([`crate::pipeline::Stage::reclaim`]): after each flush's and
    /// compaction's install, and at open.
    pub(crate) fn reclaim(&self) -> Result<()> {
        for (i, stage) in self.stages.iter().enumerate() {
            stage.reclaim(self, i)?;
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
    // A stage that writes its flushed runs itself (SLM-DB's tables, for its global index;
    // TriangleKV's and MatrixKV's rows).
    if let Some(built) = db.stages[0].write_flush_run(db, source, number, target, over)? {
        return Ok(built);
    }
    let fs = db.fs_for(target.tier);
    let path = run_file_name(&db.dir, number, target.kind);
    let separate = db.separate_values(target, number, None);
    let mut writer = create_writer(&**fs, path, target.kind, &db.options.table, None, separate)?;
    count_dropped(
        db,
        add_kept(source, db.smallest_snapshot(), |k, v| writer.add(k, v))?,
    );
    let summary = writer.finish()?;
    fs.sync_dir(&db.dir)?;
    Ok((run_meta(number, summary, target, None), 0))
}

fn count_dropped(db: &DbInner, n: u64) {
    db.counters.flush_dropped_versions.fetch_add(n, Relaxed);
}
