//! Chunk compaction: the next chunk of the immutable tree, its iterator (values read from
//! the value arrays), and the removal of its entries once L1 holds them.

use super::*;

/// One leaf's entries left to compact, as the file scan sees them.
pub(super) struct LeafSummary {
    pub(super) first: Vec<u8>,
    pub(super) last: Vec<u8>,
    pub(super) entries: u64,
    /// Entries whose value is in the oldest value array.
    pub(super) oldest: u64,
    /// A committed file-scan chunk lies between this leaf and the one before it: no chunk
    /// spans both (it would compact that chunk's entries again).
    pub(super) after_gap: bool,
}

impl LabL0 {
    /// The next chunk of the immutable tree of `roles`, about `chunk_bytes` of values
    /// (estimated from the value arrays' average record), whole leaves at a time: the leftmost
    /// leaves left (leaf scan) until `file_scan_after` of the tree's entries are compacted,
    /// then the run of leaves holding the most values of the oldest value array (file scan).
    /// `None` without an immutable tree.
    pub(crate) fn next_chunk(&self, roles: TreeRoles) -> Result<Option<LabChunk>> {
        let Some(tree) = self.tree(roles.immutable)? else {
            return Ok(None);
        };
        let a = self.att()?;
        let mut chunking = self.chunking.lock();
        if chunking.as_ref().is_none_or(|c| c.tree != roles.immutable) {
            *chunking = Some(ChunkState::new(roles.immutable, tree.len()));
        }
        let state = chunking.as_mut().expect("set above");
        if let Some(c) = &state.next {
            return Ok(Some(c.clone()));
        }
        let stats = a.values.stats();
        let avg = stats
            .bytes
            .checked_div(stats.entries)
            .map_or(1024, |a| a.max(1));
        let want = (self.options.chunk_bytes / avg).max(1);
        let file_scan = self.options.file_scan_after < 1.0
            && state.compacted as f64 >= self.options.file_scan_after * state.total as f64;
        let chunk = if file_scan {
            file_scan_chunk(&tree, state, want)?
        } else {
            leaf_scan_chunk(&tree, state, want)?
        };
        state.next = Some(chunk.clone());
        Ok(Some(chunk))
    }

    /// An iterator over the chunk's entries (tree versions and held versions). The caller
    /// reads no iterator for an empty chunk (`entries == 0`: this one would cover the whole
    /// tree).
    pub(crate) fn chunk_iter(
        self: &Arc<Self>,
        chunk: &LabChunk,
        charge: Charge,
    ) -> Result<Box<dyn InternalIterator>> {
        let tree = self
            .tree(chunk.tree)?
            .ok_or_else(|| Error::InvalidArgument(format!("LAB-DB tree {} is gone", chunk.tree)))?;
        let range = (chunk.entries > 0).then(|| (chunk.lo.clone(), chunk.hi.clone()));
        Ok(Box::new(TreeIter::new(
            Arc::clone(self),
            chunk.tree,
            tree,
            range,
            charge,
        )))
    }

    /// After the manifest record that installed the chunk's outputs (`waits`: the versions
    /// live before it): the chunk is marked compacted (a leaf-scan chunk moves the cursor past
    /// it, a file-scan one is skipped from then on), and its entries' removal is deferred
    /// until those versions are released. (After the last chunk the tree is left as it is
    /// until the next switch retires it.)
    pub(crate) fn chunk_done(&self, chunk: &LabChunk, waits: Vec<Weak<Version>>) {
        {
            let mut chunking = self.chunking.lock();
            if chunking.as_ref().is_none_or(|c| c.tree != chunk.tree) {
                *chunking = Some(ChunkState::new(chunk.tree, chunk.entries));
            }
            let state = chunking.as_mut().expect("set above");
            state.next = None;
            state.compacted += chunk.entries;
            if chunk.file_scan {
                state.done.push((chunk.lo.clone(), chunk.hi.clone()));
            } else {
                state.cursor = Some(chunk.hi.clone());
            }
        }
        let mut c = self.counts.lock();
        c.chunks += 1;
        if chunk.file_scan {
            c.file_scan_chunks += 1;
        }
        drop(c);
        if chunk.entries > 0 {
            self.defer(
                waits,
                Deferred::RemoveRange {
                    tree: chunk.tree,
                    lo: chunk.lo.clone(),
                    hi: chunk.hi.clone(),
                },
            );
        }
    }
}
