//! Iterators over the whole database: the merging iterator over every source (the front end's
//! buffers and each stage's iterators), and [`DbIterator`], which turns internal entries into
//! the user's view at one sequence number.
//!
//! Thread-safety: iterators have one owner. A `DbIterator` pins its [`SuperVersion`] (memtables
//! and table files), so flushes and compactions that finish while it is open never pull data
//! from under it.

use super::inner::SuperVersion;
use super::DbInner;
use crate::format::{parse_internal_key, user_key, SequenceNumber, ValueType};
use crate::iterator::{InternalIterator, MergingIterator};
use crate::pipeline::ReadContext;
use crate::stats::{IoPurpose, Part};
use crate::{Error, Result};
use std::ops::Bound;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

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
    _pin: Option<crate::snapshot::Snapshot>,
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
        pin: Option<crate::snapshot::Snapshot>,
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
