//! The global index at open: one scan of the tree rebuilds the live-entry counts, and every
//! table the tree points at that the manifest does not name (a flush or compaction that
//! crashed between its tree updates and its manifest record) is adopted into the single level
//! by one manifest record, so that no pointer is left dangling (`gindex` module docs).

use super::{GlobalIndex, Location};
use crate::fs::FileSystem;
use crate::sst::{BlockCache, Table};
use crate::stats::{Counters, IoPurpose, Part};
use crate::tier::Tier;
use crate::version::{run_file_name, FileMetaData, RunKind, VersionEdit, VersionSet};
use crate::{Error, Result};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

/// Reads every entry of the tree: the entries it points at, per table.
pub(crate) fn live_counts(index: &GlobalIndex) -> Result<HashMap<u64, u64>> {
    let mut live: HashMap<u64, u64> = HashMap::new();
    let mut it = index.tree()?.iter();
    it.seek_to_first()?;
    while let Some((k, p)) = it.current() {
        *live.entry(Location::decode(p, k)?.file).or_insert(0) += 1;
        it.next()?;
    }
    Ok(live)
}

/// Rebuilds the index's DRAM state for the database whose single level is stage 0 of
/// `versions`, adopting the tables the tree names and the version lacks (one manifest record).
pub(crate) fn recover(
    dir: &Path,
    versions: &mut VersionSet,
    fs: &dyn FileSystem,
    counters: &Arc<Counters>,
    index: &GlobalIndex,
) -> Result<()> {
    let live = live_counts(index)?;
    let named: HashSet<u64> = versions.current().file_numbers().collect();
    let mut missing: Vec<u64> = live
        .keys()
        .copied()
        .filter(|n| !named.contains(n))
        .collect();
    missing.sort_unstable();
    if !missing.is_empty() {
        counters
            .index_adopted_tables
            .fetch_add(missing.len() as u64, std::sync::atomic::Ordering::Relaxed);
        let mut edit = VersionEdit::default();
        for n in missing {
            let meta = read_back(dir, fs, counters, n)?;
            edit.stage_mut(0).added.push((0, meta));
        }
        versions.log_and_apply(edit)?;
    }
    let files = versions.current().stage(0).groups[0].clone();
    index.reset(files.to_vec(), live);
    Ok(())
}

/// The metadata of table `n`, read from the file (it was synced before the tree named it).
fn read_back(
    dir: &Path,
    fs: &dyn FileSystem,
    counters: &Arc<Counters>,
    n: u64,
) -> Result<FileMetaData> {
    let path = run_file_name(dir, n, RunKind::Sst);
    if !fs.exists(&path) {
        return Err(super::unknown_table(&path));
    }
    let file = fs.open_readable(&path)?;
    let file_size = file.size();
    let table = Table::open(
        file,
        n,
        path,
        BlockCache::new(1 << 20),
        Arc::clone(counters),
        Tier::Ssd,
        Part::Stage(0),
        IoPurpose::Recovery,
    )?;
    let mut it = table.iter(IoPurpose::Recovery, false);
    use crate::iterator::InternalIterator;
    it.seek_to_first();
    let mut smallest = None;
    let mut largest = Vec::new();
    let mut num_entries = 0;
    while it.valid() {
        if smallest.is_none() {
            smallest = Some(it.key().to_vec());
        }
        largest.clear();
        largest.extend_from_slice(it.key());
        num_entries += 1;
        it.next();
    }
    it.status()?;
    let smallest = smallest.ok_or_else(|| {
        Error::corruption(
            table.path().display().to_string(),
            "the global index points into an empty table",
        )
    })?;
    Ok(FileMetaData {
        number: n,
        file_size,
        num_entries,
        smallest,
        largest,
        tier: Tier::Ssd,
        kind: RunKind::Sst,
        set: 0,
        row: None,
        value_refs: Vec::new(),
        backing: None,
    })
}
