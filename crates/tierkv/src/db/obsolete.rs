//! Deletion of obsolete files: runs no live version or running compaction names, logs the
//! front end no longer needs, old manifests and temporary files.

use super::DbInner;
use crate::tier::Tier;
use crate::version::{parse_file_name, FileKind};
use std::collections::HashSet;
use std::path::PathBuf;

/// A file found obsolete.
pub(crate) struct ObsoleteFile {
    tier: Tier,
    path: PathBuf,
    table: Option<u64>,
}

impl DbInner {
    /// Under the state lock: the files no live version, pending output or live log needs, on
    /// every tier.
    pub(crate) fn collect_obsolete_files(&self, state: &mut super::State) -> Vec<ObsoleteFile> {
        let mut live: HashSet<u64> = state.pending_outputs.clone();
        state.live_versions.retain(|w| w.strong_count() > 0);
        for v in state.live_versions.iter().filter_map(|w| w.upgrade()) {
            live.extend(v.file_numbers());
        }
        live.extend(state.versions.current().file_numbers());
        let manifest = state.versions.manifest_number();
        let clog = self.clog.as_ref().map(|c| c.lock().number());
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
                    FileKind::Manifest => Some(n) != manifest,
                    FileKind::Temp => true,
                    FileKind::CompactionLog => Some(n) != clog,
                    FileKind::Log => self
                        .front
                        .is_obsolete(kind, n, &state.versions)
                        .unwrap_or(false),
                };
                if obsolete {
                    out.push(ObsoleteFile {
                        tier,
                        path: self.dir.join(&name),
                        table: matches!(kind, FileKind::Run(_)).then_some(n),
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
}
