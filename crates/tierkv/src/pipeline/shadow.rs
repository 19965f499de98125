//! Which versions of a write buffer a flush leaves out: those no reader can see. Shared by
//! every flush, into a run or into a front end's own structures (ListDB's L0 lists).

use crate::format::parse_internal_key;
use crate::{Error, Result};

/// Tells, entry by entry in internal-key order, the versions no reader can see: an entry is
/// shadowed when a newer entry of its user key is visible to every live snapshot (its sequence
/// is at most the smallest snapshot's). The newest version of a key is never shadowed, a
/// tombstone included (older data below may need hiding).
pub(crate) struct ShadowFilter {
    smallest_snapshot: u64,
    /// The last user key seen and the sequence of its last entry.
    last: Option<(Vec<u8>, u64)>,
}

impl ShadowFilter {
    pub(crate) fn new(smallest_snapshot: u64) -> Self {
        ShadowFilter {
            smallest_snapshot,
            last: None,
        }
    }

    /// True if `ikey`, the next entry in internal-key order, is shadowed.
    pub(crate) fn shadowed(&mut self, ikey: &[u8]) -> Result<bool> {
        let p = parse_internal_key(ikey)
            .ok_or_else(|| Error::corruption("flush input", "malformed internal key"))?;
        let shadowed = self
            .last
            .as_ref()
            .is_some_and(|(k, seq)| k.as_slice() == p.user_key && *seq <= self.smallest_snapshot);
        match &mut self.last {
            Some((k, seq)) if k.as_slice() == p.user_key => *seq = p.sequence,
            _ => self.last = Some((p.user_key.to_vec(), p.sequence)),
        }
        Ok(shadowed)
    }
}
