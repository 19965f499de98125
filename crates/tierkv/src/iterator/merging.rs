//! The merging iterator: children that are each sorted by internal key, merged into one
//! sorted stream (compactions, scans over several runs, the database iterator).

use super::InternalIterator;
use crate::format::compare_internal;
use crate::{Error, Result};

/// Merges children that are each sorted by internal key into one sorted stream.
///
/// The valid children sit in a binary min-heap by (current key, child index): a step costs
/// O(log children) key comparisons, which matters when a compaction merges many runs at once
/// (a write-back of many NVLSM sets, a full guard); among equal keys the child listed first
/// comes first.
///
/// The children are of one type `C` (any iterator, boxed by default), so that a caller that
/// positions them itself (one cascade descent for every row of a chain) can reach them through
/// [`MergingIterator::reposition`].
pub struct MergingIterator<C: InternalIterator = Box<dyn InternalIterator>> {
    children: Vec<C>,
    /// Indexes of the valid children, a min-heap by (key, index); the top is the current entry.
    heap: Vec<usize>,
    error: Option<Error>,
}

impl<C: InternalIterator> MergingIterator<C> {
    /// Merges `children`.
    pub fn new(children: Vec<C>) -> Self {
        MergingIterator {
            heap: Vec::with_capacity(children.len()),
            children,
            error: None,
        }
    }

    /// Positions the children with `position` instead of a seek of each, then merges them
    /// from there; an error from `position` leaves the merge invalid with that error.
    pub(crate) fn reposition(&mut self, position: impl FnOnce(&mut [C]) -> Result<()>) {
        self.error = None;
        match position(&mut self.children) {
            Ok(()) => self.rebuild(),
            Err(e) => {
                self.heap.clear();
                self.error = Some(e);
            }
        }
    }

    /// The index (in the order given to [`MergingIterator::new`]) of the child the current
    /// entry comes from.
    pub(crate) fn current_child(&self) -> Option<usize> {
        self.heap.first().copied()
    }

    /// True if child `a` comes before child `b`.
    fn before(&self, a: usize, b: usize) -> bool {
        match compare_internal(self.children[a].key(), self.children[b].key()) {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Greater => false,
            std::cmp::Ordering::Equal => a < b,
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        loop {
            let left = 2 * i + 1;
            if left >= n {
                return;
            }
            let right = left + 1;
            let child = if right < n && self.before(self.heap[right], self.heap[left]) {
                right
            } else {
                left
            };
            if !self.before(self.heap[child], self.heap[i]) {
                return;
            }
            self.heap.swap(i, child);
            i = child;
        }
    }

    /// Builds the heap from every child after they were all repositioned. A child that stopped
    /// on an error stops the whole merge: skipping it would silently drop its entries.
    fn rebuild(&mut self) {
        self.heap.clear();
        for (i, c) in self.children.iter().enumerate() {
            if c.valid() {
                self.heap.push(i);
            } else if let Err(e) = c.status() {
                self.error.get_or_insert(e);
            }
        }
        if self.error.is_some() {
            self.heap.clear();
            return;
        }
        for i in (0..self.heap.len() / 2).rev() {
            self.sift_down(i);
        }
    }
}

impl<C: InternalIterator> InternalIterator for MergingIterator<C> {
    fn valid(&self) -> bool {
        !self.heap.is_empty()
    }
    fn seek_to_first(&mut self) {
        self.error = None;
        for c in &mut self.children {
            c.seek_to_first();
        }
        self.rebuild();
    }
    fn seek(&mut self, target: &[u8]) {
        self.error = None;
        for c in &mut self.children {
            c.seek(target);
        }
        self.rebuild();
    }
    fn next(&mut self) {
        let top = *self.heap.first().expect("next on invalid iterator");
        self.children[top].next();
        if !self.children[top].valid() {
            if let Err(e) = self.children[top].status() {
                self.error = Some(e);
                self.heap.clear();
                return;
            }
            self.heap.swap_remove(0);
        }
        self.sift_down(0);
    }
    fn key(&self) -> &[u8] {
        self.children[self.heap[0]].key()
    }
    fn value(&self) -> &[u8] {
        self.children[self.heap[0]].value()
    }
    fn status(&self) -> Result<()> {
        match &self.error {
            Some(e) => Err(e.duplicate()),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{make_internal_key, ValueType};
    use crate::iterator::testing::VecIter;
    use proptest::prelude::*;

    /// Children of entries `(user key, sequence)`; each value names its child.
    fn children(spec: &[Vec<(u8, u64)>]) -> Vec<Box<dyn InternalIterator>> {
        spec.iter()
            .enumerate()
            .map(|(i, entries)| {
                let entries = entries
                    .iter()
                    .map(|&(k, seq)| {
                        (
                            make_internal_key(&[k], seq, ValueType::Value),
                            vec![i as u8],
                        )
                    })
                    .collect();
                Box::new(VecIter::new(entries, None)) as Box<dyn InternalIterator>
            })
            .collect()
    }

    fn drain(it: &mut MergingIterator) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        while it.valid() {
            out.push((it.key().to_vec(), it.value().to_vec()));
            it.next();
        }
        out
    }

    /// Every entry of every child, sorted by key, ties by child order.
    fn expected(spec: &[Vec<(u8, u64)>], from: Option<&[u8]>) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut all: Vec<(Vec<u8>, Vec<u8>)> = spec
            .iter()
            .enumerate()
            .flat_map(|(i, entries)| {
                entries.iter().map(move |&(k, seq)| {
                    (
                        make_internal_key(&[k], seq, ValueType::Value),
                        vec![i as u8],
                    )
                })
            })
            .filter(|(k, _)| from.is_none_or(|f| compare_internal(k, f).is_ge()))
            .collect();
        all.sort_by(|a, b| compare_internal(&a.0, &b.0).then(a.1.cmp(&b.1)));
        all
    }

    proptest! {
        #[test]
        fn merges_like_a_stable_sort(
            spec in prop::collection::vec(
                prop::collection::btree_set((0u8..24, 1u64..4), 0..12)
                    .prop_map(|s| s.into_iter().collect::<Vec<_>>()),
                0..12,
            ),
            seek_key in 0u8..26,
        ) {
            let mut it = MergingIterator::new(children(&spec));
            it.seek_to_first();
            prop_assert_eq!(drain(&mut it), expected(&spec, None));
            prop_assert!(it.status().is_ok());
            let target = make_internal_key(&[seek_key], u64::MAX >> 8, ValueType::Value);
            it.seek(&target);
            prop_assert_eq!(drain(&mut it), expected(&spec, Some(&target)));
        }
    }

    #[test]
    fn a_child_that_fails_stops_the_merge_with_its_error() {
        let entries = |keys: &[u8]| -> Vec<(Vec<u8>, Vec<u8>)> {
            keys.iter()
                .map(|&k| (make_internal_key(&[k], 1, ValueType::Value), vec![k]))
                .collect()
        };
        let mut it: MergingIterator = MergingIterator::new(vec![
            Box::new(VecIter::new(entries(&[1, 3, 5, 7]), None)),
            Box::new(VecIter::new(entries(&[2, 4, 6]), Some(2))),
        ]);
        it.seek_to_first();
        let got: Vec<u8> = drain(&mut it).iter().map(|(_, v)| v[0]).collect();
        // The failing child yields 2 and 4, then stops; nothing after its failure is returned.
        assert_eq!(got, vec![1, 2, 3, 4]);
        assert!(matches!(it.status(), Err(Error::Corruption { .. })));
        // Failing at the start: no entry at all.
        let mut it = MergingIterator::new(vec![
            Box::new(VecIter::new(entries(&[1]), None)),
            Box::new(VecIter::new(entries(&[2]), Some(0))),
        ]);
        it.seek_to_first();
        assert!(!it.valid());
        assert!(it.status().is_err());
    }
}
