//! Chunk compaction's input: the next chunk of the immutable tree's keys (by a leaf scan, or
//! by a scan of the value file for values written in order) with the state that resumes it.

use super::*;

/// A key range of the immutable tree to compact into L1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabChunk {
    /// The immutable tree's number.
    pub tree: u64,
    /// The first user key of the chunk.
    pub lo: Vec<u8>,
    /// The last user key of the chunk.
    pub hi: Vec<u8>,
    /// No entry of the tree is above `hi`: after this chunk the tree is wholly compacted.
    pub last: bool,
    /// Entries of the tree in the chunk.
    pub entries: u64,
    /// Chosen by file scan (the run of leaves holding the most values of the oldest value
    /// array), not as the leftmost remaining leaves.
    pub file_scan: bool,
}

/// Where the chunk compaction of the immutable tree stands (volatile: after a restart the
/// leaf scan starts again at the leftmost entry left, and the share compacted counts from
/// there).
pub(crate) struct ChunkState {
    /// The immutable tree's number.
    pub(super) tree: u64,
    /// Entries of the tree when its first chunk was chosen.
    pub(super) total: u64,
    /// Entries of the chunks committed since.
    pub(super) compacted: u64,
    /// The last key of the last leaf-scan chunk committed: every entry up to it is compacted.
    pub(super) cursor: Option<Vec<u8>>,
    /// Key ranges of the file-scan chunks committed (all after `cursor`): their entries stay
    /// in the tree until their deferred removal, so the next choice skips them.
    pub(super) done: Vec<(Vec<u8>, Vec<u8>)>,
    /// The next chunk, once chosen (the policy asks more often than chunks commit; a
    /// file-scan choice reads every leaf left).
    pub(super) next: Option<LabChunk>,
}

impl ChunkState {
    pub(super) fn new(tree: u64, total: u64) -> Self {
        ChunkState {
            tree,
            total,
            compacted: 0,
            cursor: None,
            done: Vec::new(),
            next: None,
        }
    }

    /// True if `key` is in a committed file-scan chunk.
    pub(super) fn is_done(&self, key: &[u8]) -> bool {
        self.done
            .iter()
            .any(|(lo, hi)| lo.as_slice() <= key && key <= hi.as_slice())
    }
}

impl LabChunk {
    /// The empty chunk that only ends tree `tree` (nothing is left to compact).
    pub(super) fn ends(tree: u64, file_scan: bool) -> LabChunk {
        LabChunk {
            tree,
            lo: Vec::new(),
            hi: Vec::new(),
            last: true,
            entries: 0,
            file_scan,
        }
    }
}

/// The entries of the leaf holding the first key after `after` (from the first key without).
pub(crate) fn leaf_after(tree: &PbTree, after: Option<&[u8]>) -> Result<Vec<crate::pbtree::Entry>> {
    match after {
        Some(k) => tree.entries_after(Bound::Excluded(k)),
        None => tree.entries_after(Bound::Unbounded),
    }
}

/// The leftmost leaves after the cursor, at least `want` entries (or all that are left).
pub(crate) fn leaf_scan_chunk(tree: &PbTree, state: &ChunkState, want: u64) -> Result<LabChunk> {
    let mut lo: Option<Vec<u8>> = None;
    let mut hi: Vec<u8> = Vec::new();
    let mut entries = 0u64;
    let mut bound: Option<Vec<u8>> = state.cursor.clone();
    loop {
        let leaf = leaf_after(tree, bound.as_deref())?;
        let Some(last) = leaf.last() else {
            break;
        };
        if lo.is_none() {
            lo = Some(leaf[0].0.clone());
        }
        hi = last.0.clone();
        entries += leaf.len() as u64;
        bound = Some(hi.clone());
        if entries >= want {
            break;
        }
    }
    let Some(lo) = lo else {
        // Nothing left after the cursor: an empty chunk that only ends the tree.
        return Ok(LabChunk::ends(state.tree, false));
    };
    let last = tree.entries_after(Bound::Excluded(&hi))?.is_empty();
    Ok(LabChunk {
        tree: state.tree,
        lo,
        hi,
        last,
        entries,
        file_scan: false,
    })
}

/// The file scan: of the entries left (after the cursor, outside committed file-scan chunks),
/// the run of consecutive leaves with at least `want` entries (fewer only where a committed
/// chunk or the end cuts the run) that holds the most entries whose values sit in the oldest
/// value array any of them references (ties: the leftmost run). A chunk stays one key range,
/// as a leaf-scan chunk is, so it merges with the L1 tables under one range.
pub(crate) fn file_scan_chunk(tree: &PbTree, state: &ChunkState, want: u64) -> Result<LabChunk> {
    let mut leaves: Vec<LeafSummary> = Vec::new();
    let mut words: Vec<Vec<u64>> = Vec::new();
    let mut bound: Option<Vec<u8>> = state.cursor.clone();
    let mut gap = false;
    loop {
        let leaf = leaf_after(tree, bound.as_deref())?;
        let Some(last) = leaf.last() else {
            break;
        };
        bound = Some(last.0.clone());
        let mut run: Vec<(Vec<u8>, u64)> = Vec::new();
        for (k, p) in leaf {
            if state.is_done(&k) {
                // A committed chunk: close the leaves gathered so far in this leaf.
                if !run.is_empty() {
                    push_leaf(&mut leaves, &mut words, std::mem::take(&mut run), gap)?;
                }
                gap = true;
                continue;
            }
            run.push((k, word_of(&p)?));
        }
        if !run.is_empty() {
            push_leaf(&mut leaves, &mut words, run, gap)?;
            gap = false;
        }
    }
    let left: u64 = leaves.iter().map(|l| l.entries).sum();
    if leaves.is_empty() {
        return Ok(LabChunk::ends(state.tree, true));
    }
    let oldest = words
        .iter()
        .flatten()
        .filter_map(|&w| match Vaddr::decode(w, "LAB-DB tree") {
            Ok(Vaddr::Value { file, .. }) => Some(file),
            _ => None,
        })
        .min();
    for (l, ws) in leaves.iter_mut().zip(&words) {
        l.oldest = ws
            .iter()
            .filter(|&&w| {
                matches!(Vaddr::decode(w, "LAB-DB tree"), Ok(Vaddr::Value { file, .. }) if Some(file) == oldest)
            })
            .count() as u64;
    }
    // Two pointers: the window [i, j) grows to `want` entries (or the end of its run), then
    // is scored; the best window wins.
    let mut best: Option<(u64, usize, usize)> = None;
    let mut j = 0;
    let (mut entries, mut score) = (0u64, 0u64);
    for i in 0..leaves.len() {
        if leaves[i].after_gap || j <= i {
            j = i;
            entries = 0;
            score = 0;
        }
        while j < leaves.len() && entries < want && (j == i || !leaves[j].after_gap) {
            entries += leaves[j].entries;
            score += leaves[j].oldest;
            j += 1;
        }
        if best.is_none_or(|(s, _, _)| score > s) {
            best = Some((score, i, j));
        }
        entries -= leaves[i].entries;
        score -= leaves[i].oldest;
    }
    let (_, i, j) = best.expect("at least one leaf");
    let entries: u64 = leaves[i..j].iter().map(|l| l.entries).sum();
    Ok(LabChunk {
        tree: state.tree,
        lo: leaves[i].first.clone(),
        hi: leaves[j - 1].last.clone(),
        last: entries == left,
        entries,
        file_scan: true,
    })
}

pub(super) fn push_leaf(
    leaves: &mut Vec<LeafSummary>,
    words: &mut Vec<Vec<u64>>,
    run: Vec<(Vec<u8>, u64)>,
    after_gap: bool,
) -> Result<()> {
    let first = run.first().expect("non-empty").0.clone();
    let last = run.last().expect("non-empty").0.clone();
    leaves.push(LeafSummary {
        first,
        last,
        entries: run.len() as u64,
        oldest: 0,
        after_gap,
    });
    words.push(run.into_iter().map(|(_, w)| w).collect());
    Ok(())
}

pub(crate) fn word_of(p: &[u8]) -> Result<u64> {
    Ok(u64::from_le_bytes(p.try_into().map_err(|_| {
        Error::corruption("LAB-DB tree", "payload is not one word")
    })?))
}
