//! A concatenating iterator over the sorted, disjoint segments of one group (the runs of a
//! level, the sets of an NVLSM component), opening each segment only when the iteration
//! reaches it.

use crate::format::compare_internal;
use crate::iterator::InternalIterator;
use crate::{Error, Result};

/// The segments of a group, in key order, their key ranges disjoint.
pub(crate) trait Segments: Send {
    /// Number of segments.
    fn len(&self) -> usize;
    /// True if segment `i`'s entries all sort before `target` (an internal key).
    fn ends_before(&self, i: usize, target: &[u8]) -> bool;
    /// An iterator over segment `i`.
    fn open(&self, i: usize) -> Result<Box<dyn InternalIterator>>;
}

/// Iterates the segments of `S` one after the other.
pub(crate) struct ConcatIterator<S: Segments> {
    segments: S,
    index: usize,
    current: Option<Box<dyn InternalIterator>>,
    error: Option<Error>,
}

impl<S: Segments> ConcatIterator<S> {
    /// An unpositioned iterator over `segments`.
    pub(crate) fn new(segments: S) -> Self {
        let index = segments.len();
        ConcatIterator {
            segments,
            index,
            current: None,
            error: None,
        }
    }

    fn open(&mut self, index: usize) {
        self.index = index;
        self.current = None;
        if index < self.segments.len() {
            match self.segments.open(index) {
                Ok(it) => self.current = Some(it),
                Err(e) => self.error = Some(e),
            }
        }
    }

    /// Moves past exhausted segments.
    fn skip_empty(&mut self) {
        while self.error.is_none() {
            match &self.current {
                Some(it) if it.valid() || it.status().is_err() => return,
                None => return,
                Some(_) => {
                    self.open(self.index + 1);
                    if let Some(it) = &mut self.current {
                        it.seek_to_first();
                    }
                }
            }
        }
    }
}

impl<S: Segments> InternalIterator for ConcatIterator<S> {
    fn valid(&self) -> bool {
        self.error.is_none() && self.current.as_ref().is_some_and(|c| c.valid())
    }
    fn seek_to_first(&mut self) {
        self.error = None;
        self.open(0);
        if let Some(it) = &mut self.current {
            it.seek_to_first();
        }
        self.skip_empty();
    }
    fn seek(&mut self, target: &[u8]) {
        self.error = None;
        let (mut lo, mut hi) = (0, self.segments.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.segments.ends_before(mid, target) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        self.open(lo);
        if let Some(it) = &mut self.current {
            it.seek(target);
        }
        self.skip_empty();
    }
    fn next(&mut self) {
        self.current.as_mut().expect("valid").next();
        self.skip_empty();
    }
    fn key(&self) -> &[u8] {
        self.current.as_ref().expect("valid").key()
    }
    fn value(&self) -> &[u8] {
        self.current.as_ref().expect("valid").value()
    }
    fn status(&self) -> Result<()> {
        if let Some(e) = &self.error {
            return Err(e.duplicate());
        }
        self.current.as_ref().map_or(Ok(()), |c| c.status())
    }
}

/// True if an entry with internal key `largest` sorts before `target`.
pub(crate) fn before(largest: &[u8], target: &[u8]) -> bool {
    compare_internal(largest, target).is_lt()
}
