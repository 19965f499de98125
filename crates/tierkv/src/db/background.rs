//! Background work: the flush thread, the compaction threads, and deletion of obsolete files.
//!
//! File protocol (DESIGN.md section 4): a new table is written and synced, the directory is
//! synced, then a manifest record names it; files that no live version names any more are
//! deleted only after the manifest record that dropped them is durable.
//!
//! Any failure here poisons the database (`State::bg_error`): writes fail from then on, reads
//! keep working, and reopening recovers from the last durable state.

use super::DbInner;
use crate::compaction::{self, CompactionPlan, Reason};
use crate::fs::FileSystem;
use crate::memtable::MemTable;
use crate::sst::TableBuilder;
use crate::stats::{IoPurpose, Part};
use crate::tier::Tier;
use crate::version::{parse_file_name, table_file_name, FileKind, FileMetaData, VersionEdit};
use crate::{Error, Result};
use std::collections::HashSet;
use std::path::PathBuf;

/// A file found obsolete.
pub(crate) struct ObsoleteFile {
    tier: Tier,
    path: PathBuf,
    table: Option<u64>,
}
use std::sync::atomic::Ordering::{Acquire, Relaxed};
use std::sync::Arc;

impl DbInner {
    /// The flush thread: turns immutable memtables into L0 tables, oldest first.
    pub(crate) fn flush_loop(&self) {
        let mut state = self.state.lock();
        loop {
            if state.shutting_down {
                return;
            }
            let imm = match state.imm.front() {
                Some(m) if state.bg_error.is_none() => Arc::clone(m),
                _ => {
                    self.bg_cv.wait(&mut state);
                    continue;
                }
            };
            let number = state.versions.new_file_number();
            state.pending_outputs.insert(number);
            drop(state);
            let built = self.write_table_from_memtable(&imm, number);
            state = self.state.lock();
            state.pending_outputs.remove(&number);
            let result = built.and_then(|meta| {
                let mut edit = VersionEdit::default();
                if let Some(meta) = meta {
                    edit.new_files.push((0, meta));
                }
                // WALs older than the next memtable's are no longer needed.
                let next_log = state
                    .imm
                    .get(1)
                    .map_or(state.mem.log_number(), |m| m.log_number());
                edit.log_number = Some(next_log);
                state.versions.last_sequence = self.last_sequence.load(Acquire);
                state.versions.log_and_apply(edit)
            });
            match result {
                Ok(_) => {
                    state.imm.pop_front();
                    state.install_super_version();
                    self.counters.flushes.fetch_add(1, Relaxed);
                    let obsolete = self.collect_obsolete_files(&mut state);
                    self.bg_cv.notify_all();
                    drop(state);
                    self.delete_files(obsolete);
                    state = self.state.lock();
                    // Writers waiting for PM space freed by the deleted WAL.
                    self.bg_cv.notify_all();
                }
                Err(e) => {
                    state.poison("flush failed", e);
                    self.bg_cv.notify_all();
                }
            }
        }
    }

    /// Writes the entries of `mem` to table `number` on the design's flush tier and syncs it
    /// and its directory; counts the bytes as flush writes. `None` for an empty memtable. When
    /// the PM pool is full the table goes to SSD instead (counted in `pm_flush_fallbacks`).
    pub(crate) fn write_table_from_memtable(
        &self,
        mem: &Arc<MemTable>,
        number: u64,
    ) -> Result<Option<FileMetaData>> {
        if mem.is_empty() {
            return Ok(None);
        }
        let tier = self.options.design.flush_tier();
        let meta = match self.build_table(mem, number, tier) {
            Err(Error::NoSpace(_)) if tier == Tier::Pm => {
                let _ = self
                    .fs_for(Tier::Pm)
                    .remove(&table_file_name(&self.dir, number));
                self.counters.pm_flush_fallbacks.fetch_add(1, Relaxed);
                self.build_table(mem, number, Tier::Ssd)?
            }
            other => other?,
        };
        self.counters
            .add_written(meta.tier, Part::Stage(0), IoPurpose::Flush, meta.file_size);
        Ok(Some(meta))
    }

    fn build_table(&self, mem: &Arc<MemTable>, number: u64, tier: Tier) -> Result<FileMetaData> {
        use crate::iterator::InternalIterator;
        let fs = self.fs_for(tier);
        let path = table_file_name(&self.dir, number);
        let mut builder = TableBuilder::new(&self.options.table, fs.create(&path)?, path);
        let mut it = mem.iter();
        it.seek_to_first();
        while it.valid() {
            builder.add(it.key(), it.value())?;
            it.next();
        }
        let summary = builder.finish()?;
        fs.sync_dir(&self.dir)?;
        Ok(FileMetaData {
            number,
            file_size: summary.file_size,
            num_entries: summary.num_entries,
            smallest: summary.smallest,
            largest: summary.largest,
            tier,
        })
    }

    /// A compaction thread: repeatedly asks the picker for a plan and runs it.
    pub(crate) fn compaction_loop(&self) {
        let mut state = self.state.lock();
        loop {
            if state.shutting_down {
                return;
            }
            let plan = if state.bg_error.is_none() && state.manual_compactions == 0 {
                compaction::pick(
                    &state.versions.current(),
                    &self.options.compaction,
                    &state.busy_levels,
                    &state.versions.compact_pointers,
                )
            } else {
                None
            };
            let Some(plan) = plan else {
                self.bg_cv.wait(&mut state);
                continue;
            };
            state.busy_levels[plan.level] = true;
            state.busy_levels[plan.level + 1] = true;
            drop(state);
            let _ = self.run_plan(plan);
            state = self.state.lock();
        }
    }

    /// Runs a plan whose two levels the caller marked busy; frees them when done. Errors poison
    /// the database.
    pub(crate) fn run_plan(&self, plan: CompactionPlan) -> Result<()> {
        let level = plan.level;
        let result = self.execute_plan(&plan);
        let mut state = self.state.lock();
        state.busy_levels[level] = false;
        state.busy_levels[level + 1] = false;
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

    fn execute_plan(&self, plan: &CompactionPlan) -> Result<()> {
        let mut edit = VersionEdit::default();
        for f in &plan.inputs {
            edit.deleted_files.push((plan.level, f.number));
        }
        let mut outputs = Vec::new();
        if plan.trivial_move {
            edit.new_files
                .push((plan.output_level(), (*plan.inputs[0]).clone()));
        } else {
            for f in &plan.next_inputs {
                edit.deleted_files.push((plan.output_level(), f.number));
            }
            // Output numbers stay in `pending_outputs` until the manifest names them.
            let merged = self.merge_inputs(plan, &mut outputs);
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
                    Part::Stage(0),
                    IoPurpose::Compaction,
                    meta.file_size,
                );
                edit.new_files.push((plan.output_level(), meta.clone()));
            }
        }
        if plan.reason == Reason::LevelSize {
            let last = plan
                .inputs
                .iter()
                .map(|f| &f.largest)
                .max_by(|a, b| crate::format::compare_internal(a, b));
            if let Some(last) = last {
                edit.compact_pointers.push((plan.level, last.clone()));
            }
        }
        let mut state = self.state.lock();
        state.versions.last_sequence = self.last_sequence.load(Acquire);
        let applied = state.versions.log_and_apply(edit);
        for m in &outputs {
            state.pending_outputs.remove(&m.number);
        }
        applied?;
        state.install_super_version();
        Ok(())
    }

    /// Under the state lock: the files no live version, pending output or live WAL needs, on
    /// every tier.
    pub(crate) fn collect_obsolete_files(&self, state: &mut super::State) -> Vec<ObsoleteFile> {
        let mut live: HashSet<u64> = state.pending_outputs.clone();
        state.live_versions.retain(|w| w.strong_count() > 0);
        for v in state.live_versions.iter().filter_map(|w| w.upgrade()) {
            live.extend(v.file_numbers());
        }
        live.extend(state.versions.current().file_numbers());
        let log_number = state.versions.log_number;
        let manifest = state.versions.manifest_number();
        let mut out = Vec::new();
        let tiers: &[Tier] = if self.pm.is_some() {
            &[Tier::Ssd, Tier::Pm]
        } else {
            &[Tier::Ssd]
        };
        for &tier in tiers {
            let Ok(names) = self.fs_for(tier).list(&self.dir) else {
                continue;
            };
            for name in names {
                let Some((kind, n)) = parse_file_name(&name) else {
                    continue;
                };
                let keep = match kind {
                    FileKind::Log => n >= log_number,
                    FileKind::Table => live.contains(&n),
                    FileKind::Manifest => Some(n) == manifest,
                    FileKind::Temp => false,
                };
                if !keep {
                    out.push(ObsoleteFile {
                        tier,
                        path: self.dir.join(&name),
                        table: (kind == FileKind::Table).then_some(n),
                    });
                }
            }
        }
        out
    }

    /// Deletes files found obsolete; failures are ignored (the next pass retries).
    pub(crate) fn delete_files(&self, files: Vec<ObsoleteFile>) {
        for f in files {
            if let Some(n) = f.table {
                self.table_cache.evict(n);
            }
            let _ = self.fs_for(f.tier).remove(&f.path);
        }
    }

    /// The file system of `tier`. REQUIRES: the database has a PM pool if `tier` is PM.
    pub(crate) fn fs_for(&self, tier: Tier) -> &Arc<dyn FileSystem> {
        match tier {
            Tier::Ssd => &self.fs,
            Tier::Pm => &self.pm.as_ref().expect("design uses PM").fs,
        }
    }

    /// The smallest sequence number any reader may still need.
    pub(crate) fn smallest_snapshot(&self) -> u64 {
        self.snapshots.smallest(&self.last_sequence)
    }
}
