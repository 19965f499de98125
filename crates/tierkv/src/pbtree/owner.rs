//! The tree as one owner of its pool's chunks: its open (the leaf chain walked and checked,
//! the inner nodes rebuilt or adopted, a torn split repaired) and the chunks it claims.

use super::*;

/// A leaf of the chain: where, and its lowest and highest keys (`None`: empty).
pub(super) struct ChainLeaf {
    pub(super) at: u64,
    pub(super) keys: Option<(Vec<u8>, Vec<u8>)>,
}

/// Whether inner separators `seps` route every key of the leaf chain `chain` (the head first)
/// to its leaf: the head's separator is the empty key; every other non-empty leaf is named, in
/// chain order, by a separator above every key before it and at or below its own lowest key;
/// an empty leaf may be named or not (it holds nothing to route); nothing else is named.
pub(super) fn seps_match(seps: &[Sep], chain: &[ChainLeaf]) -> bool {
    let mut j = 0;
    let mut prev_sep: Option<&Vec<u8>> = None;
    let mut prev_max: Option<&Vec<u8>> = None;
    for (i, leaf) in chain.iter().enumerate() {
        if seps.get(j).is_none_or(|s| s.1 != leaf.at) {
            if i == 0 || leaf.keys.is_some() {
                return false;
            }
            continue;
        }
        let sep = &seps[j].0;
        j += 1;
        let ok = if i == 0 {
            sep.is_empty()
        } else {
            prev_sep.is_some_and(|p| p < sep)
                && prev_max.is_none_or(|m| m < sep)
                && leaf.keys.as_ref().is_none_or(|(min, _)| sep <= min)
        };
        if !ok {
            return false;
        }
        prev_sep = Some(sep);
        if let Some((_, max)) = &leaf.keys {
            prev_max = Some(max);
        }
    }
    j == seps.len()
}

/// The tree as one owner of its pool's chunks ([`PmOwner`]): open it through
/// [`crate::fs::open_pm_owners`] with the pool's other owners, then [`PbTreeOwner::into_tree`].
pub(crate) struct PbTreeOwner {
    pub(super) pm: Pm,
    pub(super) name: String,
    pub(super) head: u64,
    pub(super) slab: Slab,
    pub(super) scanned: Option<Scanned>,
    pub(super) inner: InnerKind,
    pub(super) fanout: usize,
}

impl PbTreeOwner {
    /// The tree rooted at `root_name` in `pool`, of the [`Layout::Objects`] layout with its
    /// inner nodes in PM (SLM-DB's global index), not opened yet.
    #[cfg(test)]
    pub(crate) fn new(pool: Arc<PmPool>, location: &str, root_name: &str) -> PbTreeOwner {
        PbTreeOwner::with_layout(pool, location, root_name, Layout::Objects, InnerKind::Pm)
    }

    /// The tree rooted at `root_name` in `pool`, of leaf layout `layout` and inner nodes
    /// `inner`, not opened yet. The layout must be the one the tree was created with (a leaf
    /// of the other fails its magic: corruption). The inner kind may differ from the one the
    /// tree had: PM inner nodes are built at open, or dropped (their root word cleared, then
    /// freed).
    pub(crate) fn with_layout(
        pool: Arc<PmPool>,
        location: &str,
        root_name: &str,
        layout: Layout,
        inner: InnerKind,
    ) -> PbTreeOwner {
        let location = format!("{location}: PM tree {root_name}");
        PbTreeOwner {
            slab: Slab::new(Arc::clone(&pool), location.clone()),
            pm: Pm {
                pool,
                location,
                layout,
                persisted: std::sync::atomic::AtomicU64::new(0),
            },
            name: root_name.to_string(),
            head: 0,
            scanned: None,
            inner,
            fanout: FANOUT,
        }
    }

    /// Sets the children per PM inner node (tests grow tall trees with small ones).
    #[cfg(test)]
    pub(crate) fn with_fanout(mut self, fanout: usize) -> PbTreeOwner {
        self.fanout = fanout.max(2);
        self
    }

    /// Reads the chain from `head` (no write): every leaf and object checked, a torn split's
    /// duplicates found, the slab's slots marked.
    pub(super) fn scan(&mut self, head: u64) -> Result<Vec<u64>> {
        let pm = &self.pm;
        let max_leaves = pm.pool.size() / LEAF_BYTES;
        let mut leaves: Vec<(Leaf, Vec<Found>)> = Vec::new();
        let mut at = head;
        while at != 0 {
            if leaves.len() as u64 > max_leaves {
                return Err(pm.bad("the leaf chain has a cycle".to_string()));
            }
            let leaf = pm.read_leaf(at)?;
            let mut entries = Vec::new();
            for i in leaf.valid() {
                let slot = leaf.slots[i];
                let (key, payload) = pm.entry_of(&slot)?;
                pm.check_fingerprint(at, i, &slot, &key)?;
                entries.push((key, payload, i, slot));
            }
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            if entries.windows(2).any(|w| w[0].0 == w[1].0) {
                return Err(pm.bad(format!("PM tree leaf at {at} holds a key twice")));
            }
            at = leaf.next;
            leaves.push((leaf, entries));
        }
        // A torn split: the upper half still valid in the earlier leaf.
        let mut rebits = Vec::new();
        for i in 0..leaves.len() {
            let Some(j) = (i + 1..leaves.len()).find(|&j| !leaves[j].1.is_empty()) else {
                break;
            };
            let min_next = leaves[j].1[0].0.clone();
            let cut = leaves[i].1.partition_point(|e| e.0 < min_next);
            if cut == leaves[i].1.len() {
                continue;
            }
            let dups = leaves[i].1.split_off(cut);
            let mut bits = leaves[i].0.bits;
            for (key, _, slot, found) in &dups {
                let same = leaves[j].1.iter().any(|e| &e.0 == key && e.3 == *found);
                if !same {
                    return Err(pm.bad(format!(
                        "PM tree leaves at {} and {} overlap in key order",
                        leaves[i].0.at, leaves[j].0.at
                    )));
                }
                bits &= !(1 << slot);
            }
            rebits.push((i, bits));
        }
        // Mark what the deduplicated chain references (a dropped duplicate shares its object
        // with the entry it duplicates).
        for (leaf, entries) in &leaves {
            self.slab.mark_used(leaf.at, class_of(LEAF_BYTES))?;
            for (k, p, _, slot) in entries {
                if let Some(obj) = slot.object() {
                    let payload = if matches!(slot, Slot::Long { .. }) {
                        0
                    } else {
                        p.len()
                    };
                    let class = class_of((OBJECT_HEADER + k.len() + payload) as u64);
                    self.slab.mark_used(obj, class)?;
                }
            }
        }
        // PM inner nodes, whichever kind this open wants: kept, or (DRAM) held until the
        // inner-root word is cleared, so that no chunk of theirs is reused while it names them.
        let inner = match pm.inner_root(head)? {
            None => None,
            Some(root) => {
                let (seps, nodes) = PmInner::walk(pm, root, max_leaves)?;
                for &(at, bytes) in &nodes {
                    self.slab.mark_used(at, class_of(bytes))?;
                }
                Some((root, (seps, nodes)))
            }
        };
        self.scanned = Some(Scanned {
            leaves,
            rebits,
            inner,
        });
        Ok(self.slab.finish_open())
    }

    /// The tree, once the pool's open protocol has run. `writable`: repair what a crash left
    /// (a torn split's duplicates, empty leaves still linked) and allow updates; otherwise the
    /// repairs are made in DRAM only and the pool is never written.
    pub(crate) fn into_tree(self, writable: bool) -> Result<PbTree> {
        let PbTreeOwner {
            pm,
            head,
            mut slab,
            scanned,
            inner: kind,
            fanout,
            ..
        } = self;
        let Scanned {
            mut leaves,
            rebits,
            inner: found,
        } = scanned.unwrap_or_else(|| Scanned {
            leaves: Vec::new(),
            rebits: Vec::new(),
            inner: None,
        });
        let mut dram_rebits = std::collections::HashMap::new();
        for (i, bits) in rebits {
            if writable {
                pm.store_persist(leaves[i].0.at, bits)?;
            } else {
                dram_rebits.insert(leaves[i].0.at, bits);
            }
            leaves[i].0.bits = bits;
        }
        // The chain as the inner nodes must see it: the head, then every non-empty leaf with
        // its lowest and highest key.
        let mut chain: Vec<ChainLeaf> = Vec::new();
        let mut keys = 0;
        let mut prev = head;
        // Leaves linked once the repairs are made (an empty one stays when read-only).
        let mut linked = 0;
        for (leaf, entries) in leaves {
            keys += entries.len() as u64;
            let span = entries
                .first()
                .zip(entries.last())
                .map(|(lo, hi)| (lo.0.clone(), hi.0.clone()));
            if leaf.at != head && span.is_none() {
                // Empty and still linked: a crash between a delete and the unlink.
                if writable {
                    pm.store_persist(prev + 8, leaf.next)?;
                    slab.free(leaf.at);
                } else {
                    linked += 1;
                }
                continue;
            }
            linked += 1;
            chain.push(ChainLeaf {
                at: leaf.at,
                keys: span,
            });
            prev = leaf.at;
        }
        if chain.is_empty() {
            // A tree just created: its head is not scanned.
            linked = 1;
            chain.push(ChainLeaf {
                at: head,
                keys: None,
            });
        }
        // The separators a rebuild uses: each leaf's lowest key, the head's the empty key.
        let fresh = |chain: &[ChainLeaf]| -> Vec<Sep> {
            chain
                .iter()
                .enumerate()
                .map(|(i, l)| match (&l.keys, i) {
                    (Some((min, _)), 1..) => (min.clone(), l.at),
                    _ => (Vec::new(), l.at),
                })
                .collect()
        };
        let dram = |chain: &[ChainLeaf]| Inner::Dram(fresh(chain).into_iter().collect());
        let inner = match (kind, found) {
            (InnerKind::Dram, None) => dram(&chain),
            // PM inner nodes a tree now kept in DRAM had: the root word cleared, then freed
            // (read-only: left as they are, and held).
            (InnerKind::Dram, Some((_, (_, nodes)))) => {
                if writable {
                    pm.store_raw_persist(head + inner::ROOT_WORD, 0)?;
                    for (at, _) in nodes {
                        slab.free(at);
                    }
                }
                dram(&chain)
            }
            (InnerKind::Pm, Some((root, (seps, nodes)))) if seps_match(&seps, &chain) => {
                Inner::Pm(PmInner::adopt(head, root, fanout, &nodes))
            }
            // No root yet (a new tree), or one a crash left a leaf behind (module docs of
            // `inner`): build them again from the chain, or in DRAM when nothing may be written.
            (InnerKind::Pm, _) if !writable => dram(&chain),
            (InnerKind::Pm, stale) => {
                let built = PmInner::build(&pm, &mut slab, head, fanout, fresh(&chain))?;
                for (at, _) in stale.map(|s| s.1 .1).unwrap_or_default() {
                    slab.free(at);
                }
                Inner::Pm(built)
            }
        };
        Ok(PbTree {
            pm,
            state: RwLock::new(State {
                inner,
                head,
                leaves: linked,
                slab,
                keys,
                rebits: dram_rebits,
            }),
            read_only: !writable,
            retired: std::sync::atomic::AtomicBool::new(false),
        })
    }
}

impl PmOwner for PbTreeOwner {
    fn root_name(&self) -> &str {
        &self.name
    }

    fn open(&mut self, root: u64) -> Result<Vec<u64>> {
        if self.pm.pool.size() > OFFSET_MASK {
            return Err(Error::InvalidArgument(format!(
                "{}: a PM tree needs a pool below 256 TiB",
                self.pm.location
            )));
        }
        self.head = root;
        self.scan(root)
    }

    fn holdings(&self) -> Option<String> {
        let keys: usize = self
            .scanned
            .as_ref()
            .map_or(0, |s| s.leaves.iter().map(|l| l.1.len()).sum());
        (keys > 0).then(|| format!("{keys} keys in PM tree {}", self.name))
    }

    fn missing(&mut self, how: PmFsOpen) -> Result<()> {
        let _ = how;
        Ok(())
    }

    fn create(&mut self) -> Result<u64> {
        self.slab = Slab::new(Arc::clone(&self.pm.pool), self.pm.location.clone());
        self.scanned = None;
        let at = self.slab.allocate(class_of(LEAF_BYTES))?;
        let layout = self.pm.layout;
        self.pm.pool.write(at, &leaf_image(layout, at, &[], 0))?;
        self.pm.persist(&[(at, layout.leaf_used() as u64)])?;
        self.head = at;
        Ok(at)
    }
}
