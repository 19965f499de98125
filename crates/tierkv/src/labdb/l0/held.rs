//! Held versions: the versions a tree no longer holds that a live snapshot may still see,
//! kept in DRAM until no snapshot older than their replacement is left.

use super::*;

/// A version a tree no longer holds that a snapshot may still see.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Held {
    /// The tree it was replaced in.
    pub(super) tree: u64,
    /// Its value address.
    pub(super) word: u64,
    /// The sequence number of the version that replaced it.
    pub(super) replaced_at: u64,
}

impl HeldRange for BTreeMap<Vec<u8>, Vec<Held>> {
    /// The held versions of `tree` for the keys in `[lo, hi]`.
    fn clone_range(&self, lo: &[u8], hi: &[u8], tree: u64) -> HashMap<Vec<u8>, Vec<u64>> {
        self.range::<[u8], _>((Bound::Included(lo), Bound::Included(hi)))
            .filter_map(|(k, v)| {
                let words: Vec<u64> = v
                    .iter()
                    .filter(|h| h.tree == tree)
                    .map(|h| h.word)
                    .collect();
                (!words.is_empty()).then(|| (k.clone(), words))
            })
            .collect()
    }
}

impl LabL0 {
    /// Keeps `word` (of `key`, in tree `tree`) for snapshots, replaced at `replaced_at`.
    pub(super) fn hold(
        &self,
        a: &Attached,
        key: &[u8],
        tree: u64,
        word: u64,
        replaced_at: u64,
    ) -> Result<()> {
        a.add_ref(word)?;
        self.held
            .lock()
            .entry(key.to_vec())
            .or_default()
            .push(Held {
                tree,
                word,
                replaced_at,
            });
        Ok(())
    }

    /// Forgets the held versions no live snapshot can see any more: those replaced at or
    /// before the oldest snapshot (`smallest`: the oldest live snapshot, or the last sequence).
    /// Value-array references are dropped now (an array is deleted only after its readers
    /// anyway); the hot-slot addresses are returned, for [`Self::drop_after`] with the versions
    /// live once they are forgotten: an iterator reads every held version of a key it copied
    /// (those its snapshot cannot see too), so a half is not rewritten under it.
    pub(crate) fn forget_held(&self, smallest: u64) -> Result<Vec<u64>> {
        let Some(a) = self.att.get() else {
            return Ok(Vec::new());
        };
        let mut dropped = Vec::new();
        {
            let mut held = self.held.lock();
            held.retain(|_, v| {
                v.retain(|h| {
                    let keep = h.replaced_at > smallest;
                    if !keep {
                        dropped.push(h.word);
                    }
                    keep
                });
                !v.is_empty()
            });
        }
        let mut hot = Vec::new();
        for w in dropped {
            if matches!(Vaddr::decode(w, &a.location)?, Vaddr::Hot { .. }) {
                hot.push(w);
            } else {
                a.drop_ref(w)?;
            }
        }
        Ok(hot)
    }
}
