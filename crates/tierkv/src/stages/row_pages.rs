//! Freeing the PM pages of rows that lie wholly in their dead ranges (TriangleKV: Ding et al.,
//! "TriangleKV: Reducing Write Stalls and Write Amplification in LSM-Tree Based KV Stores With
//! Triangle Container in NVM", IEEE TPDS 2022, section 3.1).
//!
//! A compaction of a row container moves a key range out of every row and records it dead
//! in each row, with the entries it covers. The key and value bytes of those entries are
//! then garbage, but readers of older versions may still read them (their row metadata does
//! not have the range dead yet). So a row's pages are freed for the entries dead in *every*
//! metadata of the row that anything still holds: the current version's, and each older one
//! an older version, a reader or a flush building hints over the row keeps alive
//! (`LockedVersions::held_metadata`). Each pass frees what became freeable; passes run after every
//! compaction and flush and at open (where no reader exists, so a crash between a manifest
//! record and the freeing loses nothing: the next open frees it). The data area of dead entries
//! `[first, end)` is the file range from entry `first`'s data offset to entry `end`'s (the
//! index entries, after the data area, are never freed); `PmFs::punch` frees the chunks wholly
//! inside it, never a row's first or last chunk.
//!
//! The pass is the row stage's [`crate::pipeline::Stage::reclaim`]; what it freed per row is
//! kept here, so that a pass frees only what became freeable since.

use crate::parray::live::merge_intervals;
use crate::pipeline::StageHost;
use crate::stats::{IoPurpose, Part};
use crate::tier::Tier;
use crate::version::{run_file_name, FileMetaData, GroupOrder};
use crate::Result;
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// A row's metadata and the entry intervals whose pages may be freed.
type Freeable = (Arc<FileMetaData>, Vec<(u32, u32)>);

/// The entries in both `a` and `b` (each sorted and disjoint).
fn intersect(a: &[(u32, u32)], b: &[(u32, u32)]) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let (lo, hi) = (a[i].0.max(b[j].0), a[i].1.min(b[j].1));
        if lo < hi {
            out.push((lo, hi));
        }
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

/// What the passes freed: per row, the dead entry intervals whose pages were last freed.
#[derive(Default)]
pub(super) struct FreedPages {
    freed: Mutex<HashMap<u64, Vec<(u32, u32)>>>,
}

impl FreedPages {
    /// Frees the pages of every row of stage `stage` wholly in entries dead for every holder
    /// of the row's metadata (module doc); returns the bytes freed. Does nothing without a
    /// pool or with `rows.free_dead_pages` off.
    pub(super) fn free(&self, host: &dyn StageHost, stage: usize) -> Result<u64> {
        if !host.has_pool() || !host.options().rows.free_dead_pages {
            return Ok(0);
        }
        // The version is held until the pass ends: its rows' files are not deleted meanwhile
        // (a concurrent compaction may retire a row this pass frees pages of).
        let mut version = None;
        let mut work: Vec<Freeable> = Vec::new();
        host.with_versions(&mut |v| {
            let current = v.current();
            let rows: HashSet<u64> = current.runs().map(|(_, _, f)| f.number).collect();
            let mut freed = self.freed.lock();
            freed.retain(|n, _| rows.contains(n));
            let layout = &current.layouts()[stage];
            for (group, order) in layout.groups.iter().enumerate() {
                if *order != GroupOrder::Rows {
                    continue;
                }
                for f in current.stage(stage).groups[group].iter() {
                    // A row a full pool sent to the SSD tier is an ordinary file there.
                    let Some(info) = f.row.as_ref().filter(|_| f.tier == Tier::Pm) else {
                        continue;
                    };
                    if info.dead_entries.len() != info.dead.len() {
                        continue;
                    }
                    let mut freeable = merge_intervals(info.dead_entries.clone());
                    for old in v.held_metadata(f.number) {
                        freeable = match &old.row {
                            Some(o) if o.dead_entries.len() == o.dead.len() => {
                                intersect(&freeable, &merge_intervals(o.dead_entries.clone()))
                            }
                            _ => Vec::new(),
                        };
                    }
                    let done = freed.get(&f.number);
                    if freeable.is_empty() || done == Some(&freeable) {
                        continue;
                    }
                    work.push((Arc::clone(f), freeable));
                }
            }
            version = Some(current);
        });
        let mut freed = 0;
        let part = Part::Stage(stage);
        for (f, freeable) in work {
            let array = host.tables().array_for(&f, part, IoPurpose::Compaction)?;
            let path = run_file_name(host.dir(), f.number, f.kind);
            for &(first, end) in &freeable {
                let start = u64::from(array.entry(first, IoPurpose::Compaction)?.data_offset);
                let stop = if end < array.len() {
                    u64::from(array.entry(end, IoPurpose::Compaction)?.data_offset)
                } else {
                    array.data_len()
                };
                freed += host.punch_pool_file(&path, start, stop)?;
            }
            self.freed.lock().insert(f.number, freeable);
        }
        drop(version);
        host.counters()
            .row_pages_freed_bytes
            .fetch_add(freed, Relaxed);
        Ok(freed)
    }
}

#[cfg(test)]
mod tests {
    use super::intersect;

    #[test]
    fn intervals_intersect() {
        assert_eq!(
            intersect(&[(0, 5), (8, 12), (20, 30)], &[(3, 9), (11, 25)]),
            vec![(3, 5), (8, 9), (11, 12), (20, 25)]
        );
        assert_eq!(intersect(&[(0, 5)], &[]), vec![]);
        assert_eq!(intersect(&[(0, 5)], &[(5, 9)]), vec![]);
    }
}
