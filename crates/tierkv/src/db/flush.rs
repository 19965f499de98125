//! Flushes: the flush thread writes the front end's oldest immutable buffer into stage 0, and
//! the user-facing `flush` waits for every buffer to be flushed.
//!
//! File protocol (DESIGN.md section 4): a new run is written and synced, the directory is
//! synced, then a manifest record names it (and retires the buffer's log); files that no live
//! version names any more are deleted only after the manifest record that dropped them is
//! durable. Any failure poisons the database (`State::bg_error`): writes fail from then on,
//! reads keep working, and reopening recovers from the last durable state.

use super::DbInner;
use crate::pipeline::{FlushSource, RunTarget};
use crate::runs::{create_writer, run_file_name};
use crate::stats::{IoPurpose, Part};
use crate::tier::Tier;
use crate::version::{FileMetaData, VersionEdit};
use crate::{Error, Result};
use std::sync::atomic::Ordering::{Acquire, Relaxed};
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
                    self.bg_cv.wait(&mut state);
                    continue;
                }
            };
            let number = state.versions.new_file_number();
            state.pending_outputs.insert(number);
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
                .and_then(|()| write_flush_run(self, &*source, number));
            state = self.state.lock();
            state.pending_outputs.remove(&number);
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
                    state = self.state.lock();
                    // Writers waiting for PM space freed by the deleted log.
                    self.bg_cv.notify_all();
                }
                Err(e) => {
                    state.poison("flush failed", e);
                    self.bg_cv.notify_all();
                }
            }
        }
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

/// Writes the entries of `source` as run `number` where stage 0 ingests flushes, syncs it and
/// its directory, and counts the bytes as stage 0's flush writes; returns the run's group and
/// metadata (`None` for an empty source). When the PM pool has no room for the run it goes to
/// SSD instead (counted in `pm_flush_fallbacks`).
pub(crate) fn write_flush_run(
    db: &DbInner,
    source: &dyn FlushSource,
    number: u64,
) -> Result<Option<(usize, FileMetaData)>> {
    if source.is_empty() {
        return Ok(None);
    }
    let target = db.stages[0].ingest_target();
    let meta = match build_run(db, source, number, target) {
        Err(Error::NoSpace(_)) if target.tier == Tier::Pm => {
            let _ = db
                .fs_for(Tier::Pm)
                .remove(&run_file_name(&db.dir, number, target.kind));
            db.counters.pm_flush_fallbacks.fetch_add(1, Relaxed);
            build_run(
                db,
                source,
                number,
                RunTarget {
                    tier: Tier::Ssd,
                    ..target
                },
            )?
        }
        other => other?,
    };
    db.counters
        .add_written(meta.tier, Part::Stage(0), IoPurpose::Flush, meta.file_size);
    Ok(Some((target.group, meta)))
}

fn build_run(
    db: &DbInner,
    source: &dyn FlushSource,
    number: u64,
    target: RunTarget,
) -> Result<FileMetaData> {
    let fs = db.fs_for(target.tier);
    let path = run_file_name(&db.dir, number, target.kind);
    let mut writer = create_writer(&**fs, path, target.kind, &db.options.table, None)?;
    let mut it = source.iter();
    it.seek_to_first();
    while it.valid() {
        writer.add(it.key(), it.value())?;
        it.next();
    }
    it.status()?;
    let summary = writer.finish()?;
    fs.sync_dir(&db.dir)?;
    Ok(FileMetaData {
        number,
        file_size: summary.file_size,
        num_entries: summary.num_entries,
        smallest: summary.smallest,
        largest: summary.largest,
        tier: target.tier,
        kind: target.kind,
        set: 0,
    })
}
