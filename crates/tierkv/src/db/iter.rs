//! Iterators over the whole database: the merging iterator over every source (the front end's
//! buffers and each stage's iterators), and [`DbIterator`], which turns internal entries into
//! the user's view at one sequence number.
//!
//! Thread-safety: iterators have one owner. A `DbIterator` pins its [`SuperVersion`] (memtables
//! and table files), so flushes and compactions that finish while it is open never pull data
//! from under it.

use super::inner::SuperVersion;
use super::DbInner;
use crate::format::{compare_internal, parse_internal_key, user_key, SequenceNumber, ValueType};
use crate::iterator::InternalIterator;
use crate::pipeline::ReadContext;
use crate::stats::{IoPurpose, Part};
use crate::{Error, Result};
use std::ops::Bound;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

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

/// Builds the merging iterator over every source of a super version.
pub(crate) fn merged_sources(
    db: &Arc<DbInner>,
    sv: &SuperVersion,
    purpose: IoPurpose,
    fill_cache: bool,
    sequence: SequenceNumber,
    pinned: bool,
) -> Result<MergingIterator> {
    let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
    sv.front.iterators(&mut children);
    for (i, stage) in db.stages.iter().enumerate() {
        let cx = ReadContext {
            tables: &db.table_cache,
            part: Part::Stage(i),
            purpose,
            fill_cache,
            sequence,
            pinned,
        };
        stage.iterators(&cx, sv.version.stage(i), &mut children)?;
    }
    Ok(MergingIterator::new(children))
}

/// A forward iterator over the user's keys and values as of one sequence number, optionally
/// limited to a key range.
///
/// Two ways to use it: as a cursor (`seek`/`seek_to_first`, `valid`, `key`, `value`, `next`,
/// `status`), or as a std [`Iterator`] of `Result<(key, value)>` that yields the entry under the
/// cursor and then advances (a freshly made [`crate::Db::scan`] iterator is already positioned,
/// so `collect()` returns the whole range). After an error the cursor is invalid, `status`
/// returns the error, and the std iterator yields it once and then ends.
pub struct DbIterator {
    inner: MergingIterator,
    _sv: Arc<SuperVersion>,
    /// The iterator's sequence held as a snapshot (designs with a global index, and LAB-DB).
    _pin: Option<super::Snapshot>,
    db: Arc<DbInner>,
    snapshot: SequenceNumber,
    lower: Bound<Vec<u8>>,
    upper: Bound<Vec<u8>>,
    valid: bool,
    error: Option<Error>,
    error_reported: bool,
    count_bytes: bool,
    /// The user key whose older versions are being skipped (reused across steps).
    skip_key: Vec<u8>,
}

impl DbIterator {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        db: Arc<DbInner>,
        sv: Arc<SuperVersion>,
        inner: MergingIterator,
        pin: Option<super::Snapshot>,
        snapshot: SequenceNumber,
        lower: Bound<Vec<u8>>,
        upper: Bound<Vec<u8>>,
        count_bytes: bool,
    ) -> Self {
        DbIterator {
            inner,
            _sv: sv,
            _pin: pin,
            db,
            snapshot,
            lower,
            upper,
            valid: false,
            error: None,
            error_reported: false,
            count_bytes,
            skip_key: Vec::new(),
        }
    }

    /// True when positioned on an entry.
    pub fn valid(&self) -> bool {
        self.valid
    }

    /// Positions on the first key of the iterator's range.
    pub fn seek_to_first(&mut self) {
        match self.lower.clone() {
            Bound::Unbounded => {
                self.inner.seek_to_first();
                self.find_next_visible(false);
            }
            Bound::Included(k) => self.seek(&k),
            Bound::Excluded(k) => {
                self.seek(&k);
                if self.valid && self.key() == k.as_slice() {
                    self.next();
                }
            }
        }
    }

    /// Positions on the first key `>= key` (and inside the iterator's range).
    pub fn seek(&mut self, key: &[u8]) {
        let below_lower = match &self.lower {
            Bound::Included(l) | Bound::Excluded(l) => key < l.as_slice(),
            Bound::Unbounded => false,
        };
        if below_lower {
            return self.seek_to_first();
        }
        let target = crate::format::lookup_key(key, self.snapshot);
        self.inner.seek(&target);
        self.find_next_visible(false);
    }

    /// Advances to the next key. REQUIRES: `valid()`.
    pub fn next(&mut self) {
        assert!(self.valid, "next on an invalid iterator");
        self.skip_key.clear();
        self.skip_key.extend_from_slice(user_key(self.inner.key()));
        self.inner.next();
        self.find_next_visible(true);
    }

    /// The current key. REQUIRES: `valid()`.
    pub fn key(&self) -> &[u8] {
        assert!(self.valid, "key on an invalid iterator");
        user_key(self.inner.key())
    }

    /// The current value. REQUIRES: `valid()`.
    pub fn value(&self) -> &[u8] {
        assert!(self.valid, "value on an invalid iterator");
        self.inner.value()
    }

    /// The first error the iterator met, if any.
    pub fn status(&self) -> Result<()> {
        match &self.error {
            Some(e) => Err(e.duplicate()),
            None => self.inner.status(),
        }
    }

    /// Moves the inner iterator to the newest visible version of the next live user key, skipping
    /// versions newer than the snapshot, older versions of `skip_key` (when `skipping`) and of
    /// deleted keys.
    fn find_next_visible(&mut self, mut skipping: bool) {
        self.valid = false;
        while self.inner.valid() {
            let Some(p) = parse_internal_key(self.inner.key()) else {
                self.error = Some(Error::corruption("iterator", "malformed internal key"));
                return;
            };
            if p.sequence > self.snapshot || (skipping && self.skip_key == p.user_key) {
                self.inner.next();
                continue;
            }
            let past_upper = match &self.upper {
                Bound::Included(u) => p.user_key > u.as_slice(),
                Bound::Excluded(u) => p.user_key >= u.as_slice(),
                Bound::Unbounded => false,
            };
            if past_upper {
                return;
            }
            match p.value_type {
                ValueType::Deletion => {
                    self.skip_key.clear();
                    self.skip_key.extend_from_slice(p.user_key);
                    skipping = true;
                    self.inner.next();
                }
                ValueType::Value => {
                    self.valid = true;
                    if self.count_bytes {
                        let n = (p.user_key.len() + self.inner.value().len()) as u64;
                        self.db.counters.user_bytes_read.fetch_add(n, Relaxed);
                    }
                    return;
                }
            }
        }
        if let Err(e) = self.inner.status() {
            self.error = Some(e);
        }
    }
}

impl Iterator for DbIterator {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.valid {
            let item = (self.key().to_vec(), self.value().to_vec());
            DbIterator::next(self);
            return Some(Ok(item));
        }
        if !self.error_reported {
            if let Err(e) = self.status() {
                self.error_reported = true;
                return Some(Err(e));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::make_internal_key;
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
