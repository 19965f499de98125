//! The two trees' roles (mutable, immutable) and their roots, the switch that makes the full
//! mutable tree immutable, and the release of a wholly compacted tree.

use super::*;

/// The named roots of the two tree slots: tree `n` is under `TREE_ROOTS[n & 1]`.
pub(crate) const TREE_ROOTS: [&str; 2] = ["labdb-tree-0", "labdb-tree-1"];

/// The roles before any record set them: tree 1 mutable, no immutable tree.
pub(crate) const INITIAL_ROLES: TreeRoles = TreeRoles {
    mutable: 1,
    immutable: 0,
};

/// The roles a stage's state records (the initial ones when none are recorded).
pub(crate) fn roles_of(trees: Option<TreeRoles>) -> TreeRoles {
    trees.unwrap_or(INITIAL_ROLES)
}

impl LabL0 {
    /// PM bytes of the trees numbered in `roles`: (mutable, immutable).
    pub(crate) fn usage(&self, roles: TreeRoles) -> (u64, u64) {
        let bytes = |n: u64| self.tree(n).ok().flatten().map_or(0, |t| t.pm_bytes());
        (bytes(roles.mutable), bytes(roles.immutable))
    }

    /// True if the mutable tree reached `immutable_at` of the leaf region (or a manual
    /// compaction asked for it) and there is no immutable tree: it can become the immutable
    /// one now.
    pub(crate) fn wants_switch(&self, roles: TreeRoles) -> bool {
        if roles.immutable != 0 || self.att.get().is_none() || self.mutable_is_empty(roles) {
            // An empty tree (its head leaf alone) never switches, however small the region.
            return false;
        }
        if self
            .switch_requested
            .load(std::sync::atomic::Ordering::Acquire)
        {
            return true;
        }
        let (m, _) = self.usage(roles);
        let limit = (self.options.leaf_region_bytes as f64 * self.options.immutable_at) as u64;
        m >= limit.max(1)
    }

    /// Counts a drain of a full WAL-buffer half (LAB-DB's log).
    pub(crate) fn count_log_drain(&self) {
        self.counts.lock().log_drains += 1;
    }

    /// True if the mutable tree of `roles` holds no key.
    pub(crate) fn mutable_is_empty(&self, roles: TreeRoles) -> bool {
        self.tree(roles.mutable)
            .ok()
            .flatten()
            .is_none_or(|t| t.len() == 0)
    }

    /// Asks the flush thread to make the mutable tree immutable at its next upkeep, whatever
    /// its size (a manual compaction).
    pub(crate) fn request_switch(&self) {
        self.switch_requested
            .store(true, std::sync::atomic::Ordering::Release);
    }

    /// Resets the root of tree `roles.mutable + 1` to a new empty tree and returns the roles
    /// the switch record must name (module docs: switch). The tree the root held (wholly
    /// compacted, or empty) is retired: its entries' references are released, and readers of
    /// versions live now (`waits`) still find it, and its held versions, until they are gone.
    pub(crate) fn switch(&self, roles: TreeRoles, waits: &[Weak<Version>]) -> Result<TreeRoles> {
        let a = self.att()?;
        let next = roles.mutable + 1;
        let i = (next & 1) as usize;
        let fresh = PbTree::create_empty(
            Arc::clone(&a.pool),
            &a.location,
            TREE_ROOTS[i],
            Layout::Inline,
            InnerKind::Dram,
        )?;
        let (old_number, old) = {
            let mut slots = a.slots.write();
            std::mem::replace(&mut slots[i], (next, Arc::new(fresh)))
        };
        self.switch_requested
            .store(false, std::sync::atomic::Ordering::Release);
        old.retire();
        self.release_tree(a, &old, waits)?;
        if old_number != 0 {
            a.retired.write().push((old_number, old));
            self.defer(waits.to_vec(), Deferred::ForgetRetired { tree: old_number });
        }
        let mut chunking = self.chunking.lock();
        if chunking.as_ref().is_some_and(|c| c.tree == old_number) {
            *chunking = None;
        }
        drop(chunking);
        self.counts.lock().switches += 1;
        Ok(TreeRoles {
            mutable: next,
            immutable: roles.mutable,
        })
    }

    /// Drops the references of every entry left in `tree` (retired; its held versions are
    /// forgotten later, see [`Self::forget_tree_held`]): value-array references now (an array
    /// is deleted only after its readers anyway), hot-slot halves once the readers of versions
    /// live now (`waits`, which may still read the tree) are gone.
    pub(super) fn release_tree(
        &self,
        a: &Attached,
        tree: &Arc<PbTree>,
        waits: &[Weak<Version>],
    ) -> Result<()> {
        let mut hot = Vec::new();
        let mut it = tree.iter();
        it.seek_to_first()?;
        while let Some((_, p)) = it.current() {
            let w = word_of(p)?;
            if matches!(Vaddr::decode(w, &a.location)?, Vaddr::Hot { .. }) {
                hot.push(w);
            } else {
                a.drop_ref(w)?;
            }
            it.next()?;
        }
        if !hot.is_empty() {
            self.defer(waits.to_vec(), Deferred::DropRefs { words: hot });
        }
        Ok(())
    }

    /// Forgets the held versions of the retired tree `number` and drops their references:
    /// only once no reader that may still read that tree is left (a reader of an older version
    /// pinned by a snapshot finds its versions there).
    pub(super) fn forget_tree_held(&self, a: &Attached, number: u64) -> Result<()> {
        let mut dropped = Vec::new();
        self.held.lock().retain(|_, v| {
            v.retain(|h| {
                let keep = h.tree != number;
                if !keep {
                    dropped.push(h.word);
                }
                keep
            });
            !v.is_empty()
        });
        for w in dropped {
            a.drop_ref(w)?;
        }
        Ok(())
    }
}
