//! Snapshots: sequence numbers that compactions must keep readable.
//!
//! A [`Snapshot`] registers its sequence number in the database's [`SnapshotList`] and removes
//! it when the last clone drops. Compactions keep, for every live snapshot, the newest version of
//! each key at or below it (see `smallest`). Thread-safe.

use crate::format::SequenceNumber;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The sequence numbers of live snapshots, with reference counts.
#[derive(Debug, Default)]
pub struct SnapshotList {
    live: Mutex<BTreeMap<SequenceNumber, usize>>,
}

impl SnapshotList {
    /// Registers a snapshot at `seq`.
    #[cfg(test)]
    pub fn acquire(self: &Arc<Self>, seq: SequenceNumber) -> Snapshot {
        let mut live = self.live.lock();
        self.register(&mut live, seq)
    }

    /// Registers a snapshot at the current value of `last_sequence`, read under the list's lock:
    /// a concurrent [`SnapshotList::smallest`] either sees the snapshot or read a
    /// `last_sequence` no larger than it, so no compaction can drop a version it needs.
    pub fn acquire_latest(self: &Arc<Self>, last_sequence: &AtomicU64) -> Snapshot {
        let mut live = self.live.lock();
        let seq = last_sequence.load(Ordering::Acquire);
        self.register(&mut live, seq)
    }

    fn register(
        self: &Arc<Self>,
        live: &mut BTreeMap<SequenceNumber, usize>,
        seq: SequenceNumber,
    ) -> Snapshot {
        *live.entry(seq).or_insert(0) += 1;
        Snapshot {
            handle: Arc::new(Handle {
                seq,
                list: Arc::clone(self),
            }),
        }
    }

    /// The oldest live snapshot, if any.
    #[cfg(test)]
    pub fn oldest(&self) -> Option<SequenceNumber> {
        self.live.lock().keys().next().copied()
    }

    /// The sequence numbers of the live snapshots, ascending.
    pub fn live(&self) -> Vec<SequenceNumber> {
        self.live.lock().keys().copied().collect()
    }

    /// The smallest sequence number any reader may still need: the oldest live snapshot, or
    /// `last_sequence` (read under the list's lock, see [`SnapshotList::acquire_latest`]).
    pub fn smallest(&self, last_sequence: &AtomicU64) -> SequenceNumber {
        let live = self.live.lock();
        let last = last_sequence.load(Ordering::Acquire);
        live.keys().next().map_or(last, |&s| s.min(last))
    }
}

#[derive(Debug)]
struct Handle {
    seq: SequenceNumber,
    list: Arc<SnapshotList>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        let mut live = self.list.live.lock();
        if let Some(n) = live.get_mut(&self.seq) {
            *n -= 1;
            if *n == 0 {
                live.remove(&self.seq);
            }
        }
    }
}

/// A consistent read view: reads through it see the database as of its creation, whatever is
/// written, flushed or compacted afterwards. Cheap to clone; released when the last clone drops.
#[derive(Clone, Debug)]
pub struct Snapshot {
    handle: Arc<Handle>,
}

impl Snapshot {
    /// The sequence number the snapshot reads at.
    pub fn sequence(&self) -> SequenceNumber {
        self.handle.seq
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oldest_tracks_live_snapshots() {
        let list = Arc::new(SnapshotList::default());
        assert_eq!(list.oldest(), None);
        let a = list.acquire(5);
        let b = list.acquire(9);
        let a2 = a.clone();
        let c = list.acquire(5);
        assert_eq!(list.oldest(), Some(5));
        drop(a);
        drop(a2);
        assert_eq!(list.oldest(), Some(5), "c still holds 5");
        drop(c);
        assert_eq!(list.oldest(), Some(9));
        assert_eq!(b.sequence(), 9);
        drop(b);
        assert_eq!(list.oldest(), None);
    }

    #[test]
    fn smallest_is_the_oldest_snapshot_or_the_last_sequence() {
        let list = Arc::new(SnapshotList::default());
        let last = AtomicU64::new(40);
        assert_eq!(list.smallest(&last), 40);
        let s = list.acquire_latest(&last);
        assert_eq!(s.sequence(), 40);
        last.store(90, Ordering::Release);
        assert_eq!(list.smallest(&last), 40, "the snapshot holds 40");
        drop(s);
        assert_eq!(list.smallest(&last), 90);
    }
}
