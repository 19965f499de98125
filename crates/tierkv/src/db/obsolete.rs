//! Deletion of obsolete files: runs no live version or running compaction names, logs the
//! front end no longer needs, old manifests and temporary files.

use super::DbInner;
use crate::sst::value_log::value_log_file_name;
use crate::tier::Tier;
use crate::version::{parse_file_name, run_file_name, FileKind};
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

/// A file found obsolete.
pub(crate) struct ObsoleteFile {
    tier: Tier,
    path: PathBuf,
    table: Option<u64>,
    /// A value log's number (its reader is dropped).
    value_log: Option<u64>,
}

impl DbInner {
    /// Under the state lock, after a compaction: the runs compactions removed that nothing
    /// holds any more, found without listing a directory; or, when the compaction rotated the
    /// manifest or the compaction log (or no full scan ran yet), everything
    /// [`DbInner::collect_obsolete_files`] finds. A database of tens of thousands of runs
    /// (NVLSM's floors) would otherwise list and match every file after every compaction.
    pub(crate) fn collect_obsolete_after_compaction(
        &self,
        state: &mut super::State,
    ) -> Vec<ObsoleteFile> {
        if !self.removed_runs_tracked(state) {
            return self.collect_obsolete_files(state);
        }
        self.released_runs(state)
    }

    /// Under the state lock, after a flush: the files the front end retired with the flushed
    /// buffer (its log) and the removed runs nothing holds, found as after a compaction,
    /// without listing a directory (with tens of thousands of floors in the pool, listing it
    /// after every flush took a third of the flush thread's time). Falls back to the full scan
    /// as [`DbInner::collect_obsolete_after_compaction`] does; a file the front end did not
    /// name (a log left by an older process) is found by the next full scan.
    pub(crate) fn collect_obsolete_after_flush(
        &self,
        state: &mut super::State,
        retired: Vec<(Tier, PathBuf)>,
    ) -> Vec<ObsoleteFile> {
        if !self.removed_runs_tracked(state) {
            return self.collect_obsolete_files(state);
        }
        let mut out = self.released_runs(state);
        out.extend(retired.into_iter().map(|(tier, path)| ObsoleteFile {
            tier,
            path,
            table: None,
            value_log: None,
        }));
        out
    }

    /// True if every run a compaction removed is in `removed_runs` (holding the only `Arc`
    /// the database keeps once nothing reads it) and the manifest and compaction log are the
    /// ones the last full scan saw.
    fn removed_runs_tracked(&self, state: &super::State) -> bool {
        state.scanned_numbers == Some(self.obsolete_scan_numbers(state))
    }

    /// The removed runs that only `removed_runs` holds (no version, reader or task names
    /// them, nor any superseded metadata of the same run), taken out of it.
    pub(crate) fn released_runs(&self, state: &mut super::State) -> Vec<ObsoleteFile> {
        let mut out = Vec::new();
        state
            .superseded_runs
            .retain(|meta| Arc::strong_count(meta) > 1);
        let held: HashSet<u64> = state.superseded_runs.iter().map(|m| m.number).collect();
        // Value logs the released runs named: each goes once no run of a live version names it.
        let mut logs: Vec<(u64, Tier)> = Vec::new();
        let mut released = Vec::new();
        state.removed_runs.retain(|meta| {
            if Arc::strong_count(meta) > 1 || held.contains(&meta.number) {
                return true;
            }
            logs.extend(meta.value_refs.iter().map(|(n, _)| (*n, meta.tier)));
            released.push(Arc::clone(meta));
            false
        });
        // A file that backs runs made of parts of it stays while any run that reads it does.
        // (A file backing such a run is named by the run, in a live version or the removed
        // runs still held; a released run whose file backs nothing frees it.)
        let backed = released.iter().any(|m| m.backing.is_some())
            || (!released.is_empty() && self.backs_some_run(state));
        let shared = backed.then(|| self.files_in_use(state));
        let mut deleted = HashSet::new();
        for meta in released {
            let n = meta.file_number();
            if shared.as_ref().is_some_and(|s| s.contains(&n)) || !deleted.insert(n) {
                continue;
            }
            out.push(ObsoleteFile {
                tier: meta.tier,
                path: run_file_name(&self.dir, n, meta.kind),
                table: Some(n),
                value_log: None,
            });
        }
        if !logs.is_empty() {
            let named = self.named_value_logs(state);
            logs.sort_unstable_by_key(|(n, _)| *n);
            logs.dedup_by_key(|(n, _)| *n);
            for (n, tier) in logs {
                if !named.contains(&(n, tier)) {
                    out.push(ObsoleteFile {
                        tier,
                        path: value_log_file_name(&self.dir, n),
                        table: None,
                        value_log: Some(n),
                    });
                }
            }
        }
        out
    }

    /// True if a run of a live version, or a removed run still held, is made of part of
    /// another run's file.
    fn backs_some_run(&self, state: &super::State) -> bool {
        let backed = |v: &crate::version::Version| v.runs().any(|(_, _, r)| r.backing.is_some());
        backed(&state.versions.current())
            || state
                .live_versions
                .iter()
                .filter_map(|w| w.upgrade())
                .any(|v| backed(&v))
            || state.removed_runs.iter().any(|m| m.backing.is_some())
    }

    /// The files the runs of every live version read, and those of the removed runs still
    /// held (a run made of part of a file reads that file).
    fn files_in_use(&self, state: &mut super::State) -> HashSet<u64> {
        let mut used: HashSet<u64> = state.versions.current().file_numbers().collect();
        state.live_versions.retain(|w| w.strong_count() > 0);
        for v in state.live_versions.iter().filter_map(|w| w.upgrade()) {
            used.extend(v.file_numbers());
        }
        used.extend(state.removed_runs.iter().map(|m| m.file_number()));
        used.extend(state.superseded_runs.iter().map(|m| m.file_number()));
        used
    }

    /// The value logs a run of a live version names, on the tier of that run, and those of
    /// pending outputs on either tier (a table being written writes its own). A log of the
    /// same number on another tier (a flush that fell back from a full pool to the SSD left
    /// its PM log behind) is not named.
    fn named_value_logs(&self, state: &mut super::State) -> HashSet<(u64, Tier)> {
        let mut named: HashSet<(u64, Tier)> = state
            .pending_outputs
            .iter()
            .flat_map(|&n| [(n, Tier::Ssd), (n, Tier::Pm)])
            .collect();
        state.live_versions.retain(|w| w.strong_count() > 0);
        for v in state.live_versions.iter().filter_map(|w| w.upgrade()) {
            named.extend(v.value_logs_on_tiers());
        }
        named.extend(state.versions.current().value_logs_on_tiers());
        named
    }

    /// The manifest and compaction-log numbers in use.
    fn obsolete_scan_numbers(&self, state: &super::State) -> (Option<u64>, Option<u64>) {
        let clog = self.clog.as_ref().map(|c| c.lock().number());
        (state.versions.manifest_number(), clog)
    }

    /// Under the state lock: the files no live version, pending output or live log needs, on
    /// every tier (a full scan of every tier's directory).
    pub(crate) fn collect_obsolete_files(&self, state: &mut super::State) -> Vec<ObsoleteFile> {
        state.scanned_numbers = Some(self.obsolete_scan_numbers(state));
        // The scan deletes every removed run no version names; those a version still names
        // stay candidates.
        state
            .removed_runs
            .retain(|meta| Arc::strong_count(meta) > 1);
        let mut live: HashSet<u64> = state.pending_outputs.clone();
        state.live_versions.retain(|w| w.strong_count() > 0);
        for v in state.live_versions.iter().filter_map(|w| w.upgrade()) {
            live.extend(v.file_numbers());
        }
        live.extend(state.versions.current().file_numbers());
        let logs = self.named_value_logs(state);
        self.scan(state, &live, &logs)
    }

    /// Lists every tier's directory: the logs, manifests, compaction logs and temporary files
    /// no longer needed, the runs not among the `live` run numbers and the value logs not
    /// among the `value_logs` named.
    fn scan(
        &self,
        state: &super::State,
        live: &HashSet<u64>,
        value_logs: &HashSet<(u64, Tier)>,
    ) -> Vec<ObsoleteFile> {
        let (manifest, clog) = self.obsolete_scan_numbers(state);
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
                let obsolete = match kind {
                    FileKind::Run(_) => !live.contains(&n),
                    FileKind::ValueLog => !value_logs.contains(&(n, tier)),
                    FileKind::Manifest => Some(n) != manifest,
                    FileKind::Temp => true,
                    FileKind::CompactionLog => Some(n) != clog,
                    // The front end owns its logs; LAB-DB's value arrays and WAL-buffer halves
                    // are kept unless their owner says otherwise.
                    FileKind::Log | FileKind::ValueArray | FileKind::WalBuffer => self
                        .front
                        .is_obsolete(kind, n, &state.versions)
                        .unwrap_or(false),
                };
                if obsolete {
                    out.push(ObsoleteFile {
                        tier,
                        path: self.dir.join(&name),
                        table: matches!(kind, FileKind::Run(_)).then_some(n),
                        value_log: (kind == FileKind::ValueLog).then_some(n),
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
            if let Some(n) = f.value_log {
                self.table_cache.value_logs().evict(n);
            }
            let _ = self.fs_for(f.tier).remove(&f.path);
        }
    }
}
