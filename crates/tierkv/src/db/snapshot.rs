//! Snapshots: sequence numbers that compactions must keep readable.
//!
//! A [`Snapshot`] registers its sequence number in the database's [`SnapshotList`] and removes
//! it when the last clone drops. Compactions keep, for every live snapshot, the newest version of
//! each key at or below it (see `smallest`). Thread-safe.

use crate::format::SequenceNumber;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The sequence numbers of live snapshots, with reference counts.
#[derive(Debug, Default)]
pub struct SnapshotList {
    live: Mutex<BTreeMap<SequenceNumber, usize>>,
}

impl SnapshotList {
    /// Registers a snapshot at `seq`.
    pub fn acquire(self: &Arc<Self>, seq: SequenceNumber) -> Snapshot {
        *self.live.lock().entry(seq).or_insert(0) += 1;
        Snapshot {
            handle: Arc::new(Handle {
                seq,
                list: Arc::clone(self),
            }),
        }
    }

    /// The oldest live snapshot, if any.
    pub fn oldest(&self) -> Option<SequenceNumber> {
        self.live.lock().keys().next().copied()
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
}
