//! The internal iterator protocol shared by memtables, tables, and merging iterators.
//!
//! Internal iterators walk internal keys (see [`crate::format`]) in [`compare_internal`] order,
//! forward only. They are not thread-safe; each reader builds its own.
//!
//! [`compare_internal`]: crate::format::compare_internal

use crate::Result;

mod merging;

pub(crate) use merging::MergingIterator;

/// A forward iterator over `(internal key, value)` pairs in internal-key order.
///
/// Protocol: after `seek_to_first` or `seek`, `valid()` says whether the iterator is positioned on
/// an entry; `key`/`value` may only be called while valid; `next` requires valid. When an
/// iterator hits an error (I/O, corruption) it becomes invalid and `status()` returns the error.
pub trait InternalIterator: Send {
    /// True when positioned on an entry.
    fn valid(&self) -> bool;
    /// Positions on the first entry.
    fn seek_to_first(&mut self);
    /// Positions on the first entry whose internal key is `>= target`.
    fn seek(&mut self, target: &[u8]);
    /// Advances to the next entry. REQUIRES: `valid()`.
    fn next(&mut self);
    /// The current internal key. REQUIRES: `valid()`.
    fn key(&self) -> &[u8];
    /// The current value. REQUIRES: `valid()`.
    fn value(&self) -> &[u8];
    /// The first error the iterator met, if any.
    fn status(&self) -> Result<()>;
}

impl<I: InternalIterator + ?Sized> InternalIterator for Box<I> {
    fn valid(&self) -> bool {
        (**self).valid()
    }
    fn seek_to_first(&mut self) {
        (**self).seek_to_first()
    }
    fn seek(&mut self, target: &[u8]) {
        (**self).seek(target)
    }
    fn next(&mut self) {
        (**self).next()
    }
    fn key(&self) -> &[u8] {
        (**self).key()
    }
    fn value(&self) -> &[u8] {
        (**self).value()
    }
    fn status(&self) -> Result<()> {
        (**self).status()
    }
}

/// Iterators for tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::InternalIterator;
    use crate::format::compare_internal;
    use crate::{Error, Result};

    /// A child over sorted entries that may stop on an error after `fail_after` steps.
    pub struct VecIter {
        entries: Vec<(Vec<u8>, Vec<u8>)>,
        pos: usize,
        fail_after: Option<usize>,
        failed: bool,
    }

    impl VecIter {
        pub fn new(mut entries: Vec<(Vec<u8>, Vec<u8>)>, fail_after: Option<usize>) -> Self {
            entries.sort_by(|a, b| compare_internal(&a.0, &b.0));
            VecIter {
                entries,
                pos: 0,
                fail_after,
                failed: false,
            }
        }
    }

    impl InternalIterator for VecIter {
        fn valid(&self) -> bool {
            !self.failed && self.pos < self.entries.len()
        }
        fn seek_to_first(&mut self) {
            self.pos = 0;
            self.failed = self.fail_after == Some(0);
        }
        fn seek(&mut self, target: &[u8]) {
            self.pos = self
                .entries
                .partition_point(|e| compare_internal(&e.0, target).is_lt());
            self.failed = self.fail_after.is_some_and(|f| self.pos >= f);
        }
        fn next(&mut self) {
            self.pos += 1;
            self.failed = self.fail_after.is_some_and(|f| self.pos >= f);
        }
        fn key(&self) -> &[u8] {
            &self.entries[self.pos].0
        }
        fn value(&self) -> &[u8] {
            &self.entries[self.pos].1
        }
        fn status(&self) -> Result<()> {
            if self.failed {
                Err(Error::corruption("test child", "stopped"))
            } else {
                Ok(())
            }
        }
    }
}
