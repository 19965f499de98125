//! What a flush is given: where it writes ([`FlushPlan`]), and the versions of its source
//! that a reader can still see ([`add_kept`]).

use super::{FlushSource, RunTarget, ShadowFilter};
use crate::sst::table_builder::TableSummary;
use crate::version::{FileMetaData, RowInfo, StageVersion, Version};
use crate::Result;
use std::sync::Arc;

/// Where a flush writes its run: the target, the row its hints point into (a row target), and
/// whether the flush holds the target group busy while it writes (a group a compaction may
/// also write: the sequential bypass into L1).
pub(crate) struct FlushPlan {
    pub target: RunTarget,
    pub over: Option<Arc<FileMetaData>>,
    pub holds_group: bool,
    /// Stage 0's state in the version the flush starts from, without its runs (a stage that
    /// takes the flush itself reads its own state there: LAB-DB's mutable tree; only the
    /// flush thread changes that). Neither the version nor its runs: a plan that held them
    /// would keep them live, and work that waits until readers drop a version (deferred
    /// reclamation) or a run (the freeing of a row's dead pages) would wait for the flush.
    pub base: StageVersion,
    /// The versions live when the flush was planned (readers may hold them; none during
    /// recovery): LAB-DB reuses the hot-slot halves a flush stops naming only after them.
    pub readers: Vec<std::sync::Weak<Version>>,
    /// Whether the flush runs without the state lock held (a background flush), so that it
    /// can take the versions live once its tree changes are made, instead of `readers`: a
    /// version installed after the plan (a chunk compaction's) may be pinned by a reader that
    /// read an entry the flush then replaced. False during recovery (the lock is held).
    pub live_after: bool,
}

/// Feeds the entries of `source`, in order, to `add`, but the versions no reader can see: an
/// entry is dropped when a newer entry of its user key is visible to every live snapshot
/// (its sequence is at most `smallest_snapshot`), as a compaction drops it (RocksDB's flush;
/// LevelDB's keeps every version). Tombstones are kept: older data below may need hiding.
/// Returns how many entries were dropped.
pub(crate) fn add_kept(
    source: &dyn FlushSource,
    smallest_snapshot: u64,
    mut add: impl FnMut(&[u8], &[u8]) -> Result<()>,
) -> Result<u64> {
    let mut it = source.iter();
    it.seek_to_first();
    let mut filter = ShadowFilter::new(smallest_snapshot);
    let mut dropped = 0;
    while it.valid() {
        if filter.shadowed(it.key())? {
            dropped += 1;
        } else {
            add(it.key(), it.value())?;
        }
        it.next();
    }
    it.status()?;
    Ok(dropped)
}

/// The metadata of run `number` written as `target` says.
pub(crate) fn run_meta(
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
