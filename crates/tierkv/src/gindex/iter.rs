//! The single level's iterator: the global index's keys in order (the tree's leaves, merged
//! with the versions held for snapshots), each at the version a read at the iterator's
//! sequence sees, its value read from its one data block when the iterator reaches it.
//!
//! The tree is read one leaf at a time, continuing after the last key returned (an update
//! between two leaves is seen or not, per leaf), and the held versions of the same key range
//! are read after the leaf: a version moved from the tree into the held map in between is seen
//! in one of the two places (module docs of `gindex`: the held version is inserted before the
//! tree changes). A user read also feeds rule R3 of selective compaction: per sub-range of
//! `range_sub_keys` keys returned, the tables they live in.

use super::{BlockReader, GlobalIndex, Held, Location};
use crate::format::{compare_internal, make_internal_key, user_key, ValueType};
use crate::iterator::InternalIterator;
use crate::runs::TableCache;
use crate::stats::{IoPurpose, Part};
use crate::{Error, Result};
use std::ops::Bound;
use std::sync::Arc;

/// The version a read at `seq` sees, given the tree's `current` place and the key's `held`
/// versions (newest first); `pinned`: `seq` is a live snapshot (see the `gindex` docs).
pub(crate) fn visible(
    current: Option<Location>,
    held: &[Held],
    seq: u64,
    pinned: bool,
) -> Option<Location> {
    if let Some(l) = current.filter(|l| l.seq <= seq) {
        return Some(l);
    }
    if let Some(h) = held.iter().find(|h| h.seq <= seq) {
        return (seq < h.next).then_some(h.loc);
    }
    if pinned {
        None
    } else {
        current
    }
}

/// An iterator over the single level through the global index.
pub(crate) struct IndexIterator {
    index: Arc<GlobalIndex>,
    tables: Arc<TableCache>,
    part: Part,
    purpose: IoPurpose,
    fill_cache: bool,
    sequence: u64,
    pinned: bool,
    /// The entries of the current leaf: internal key and place.
    buf: Vec<(Vec<u8>, Location)>,
    pos: usize,
    /// The value of `buf[pos]`.
    value: Vec<u8>,
    /// The last user key read from the tree (`None`: the tree is exhausted).
    resume: Option<Vec<u8>>,
    error: Option<Error>,
    /// R3: the tables of the keys of the current sub-range.
    window: Vec<u64>,
}

impl IndexIterator {
    pub(crate) fn new(
        index: Arc<GlobalIndex>,
        tables: Arc<TableCache>,
        part: Part,
        purpose: IoPurpose,
        fill_cache: bool,
        sequence: u64,
        pinned: bool,
    ) -> IndexIterator {
        IndexIterator {
            index,
            tables,
            part,
            purpose,
            fill_cache,
            sequence,
            pinned,
            buf: Vec::new(),
            pos: 0,
            value: Vec::new(),
            resume: None,
            error: None,
            window: Vec::new(),
        }
    }

    /// Fills `buf` with the visible entries of the first leaf after `from` that has any.
    fn fill(&mut self, mut from: Bound<Vec<u8>>) -> Result<()> {
        self.buf.clear();
        self.pos = 0;
        let tree = Arc::clone(self.index.tree()?);
        loop {
            let batch = tree.entries_after(from.as_ref().map(Vec::as_slice))?;
            let upto = batch.last().map(|(k, _)| k.clone());
            let held = self
                .index
                .held_range(from.as_ref().map(Vec::as_slice), upto.as_deref());
            let mut held = held.into_iter().peekable();
            for (k, p) in batch {
                let current = Location::decode(&p, &k)?;
                // Keys only held (removed from the tree) that sort before this one.
                while let Some((hk, _)) = held.peek() {
                    if hk.as_slice() >= k.as_slice() {
                        break;
                    }
                    let (hk, hv) = held.next().expect("peeked");
                    self.push(hk, None, &hv);
                }
                let hv = match held.peek() {
                    Some((hk, _)) if *hk == k => held.next().expect("peeked").1,
                    _ => Vec::new(),
                };
                self.push(k, Some(current), &hv);
            }
            for (hk, hv) in held {
                self.push(hk, None, &hv);
            }
            match upto {
                Some(last) => {
                    self.resume = Some(last.clone());
                    if !self.buf.is_empty() {
                        return Ok(());
                    }
                    from = Bound::Excluded(last);
                }
                None => {
                    self.resume = None;
                    return Ok(());
                }
            }
        }
    }

    fn push(&mut self, key: Vec<u8>, current: Option<Location>, held: &[Held]) {
        if let Some(l) = visible(current, held, self.sequence, self.pinned) {
            let ikey = make_internal_key(&key, l.seq, ValueType::Value);
            self.buf.push((ikey, l));
        }
    }

    /// Reads the value of the entry under the cursor, moving to the next leaf when the
    /// current one is used up. An entry whose version is gone (replaced by a version this
    /// read also sees, and compacted away) is looked up again, or skipped if the key has no
    /// version for this read any more.
    fn settle(&mut self) {
        let r = (|| loop {
            if self.pos >= self.buf.len() {
                match self.resume.take() {
                    Some(last) => self.fill(Bound::Excluded(last))?,
                    None => {
                        self.buf.clear();
                        return Ok(());
                    }
                }
                if self.buf.is_empty() {
                    return Ok(());
                }
            }
            let (ikey, loc) = &self.buf[self.pos];
            let key = user_key(ikey).to_vec();
            let loc = *loc;
            let reader = BlockReader {
                tables: &self.tables,
                part: self.part,
                purpose: self.purpose,
                fill_cache: self.fill_cache,
            };
            let found = self.index.read_version(&reader, &key, loc)?;
            if let Some(v) = found {
                self.value = v;
                self.note(loc.file);
                return Ok(());
            }
            match self.index.get(&reader, &key, self.sequence, self.pinned)? {
                Some((l, v)) => {
                    self.buf[self.pos] = (make_internal_key(&key, l.seq, ValueType::Value), l);
                    self.value = v;
                    self.note(l.file);
                    return Ok(());
                }
                None => self.pos += 1,
            }
        })();
        if let Err(e) = r {
            self.fail(e);
        }
    }

    fn note(&mut self, file: u64) {
        if self.purpose != IoPurpose::UserRead {
            return;
        }
        self.window.push(file);
        if self.window.len() >= self.index.options().range_sub_keys {
            self.index.note_range(&self.window);
            self.window.clear();
        }
    }

    fn fail(&mut self, e: Error) {
        self.error = Some(e);
        self.buf.clear();
        self.pos = 0;
        self.resume = None;
    }

    fn start(&mut self, from: Bound<Vec<u8>>) {
        self.error = None;
        self.window.clear();
        if let Err(e) = self.fill(from) {
            self.fail(e);
        }
    }
}

impl InternalIterator for IndexIterator {
    fn valid(&self) -> bool {
        self.error.is_none() && self.pos < self.buf.len()
    }

    fn seek_to_first(&mut self) {
        self.start(Bound::Unbounded);
        self.settle();
    }

    fn seek(&mut self, target: &[u8]) {
        self.start(Bound::Included(user_key(target).to_vec()));
        // The target's own user key may carry a version newer than the target's sequence:
        // it sorts before the target.
        while self.error.is_none()
            && self.pos < self.buf.len()
            && compare_internal(&self.buf[self.pos].0, target).is_lt()
        {
            self.pos += 1;
        }
        self.settle();
    }

    fn next(&mut self) {
        self.pos += 1;
        self.settle();
    }

    fn key(&self) -> &[u8] {
        &self.buf[self.pos].0
    }

    fn value(&self) -> &[u8] {
        &self.value
    }

    fn status(&self) -> Result<()> {
        match &self.error {
            Some(e) => Err(e.duplicate()),
            None => Ok(()),
        }
    }
}

impl Drop for IndexIterator {
    fn drop(&mut self) {
        if self.window.len() > 1 {
            self.index.note_range(&self.window);
        }
    }
}
