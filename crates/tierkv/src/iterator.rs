//! The internal iterator protocol shared by memtables, tables, and merging iterators.
//!
//! Internal iterators walk internal keys (see [`crate::format`]) in [`compare_internal`] order,
//! forward only. They are not thread-safe; each reader builds its own.
//!
//! [`compare_internal`]: crate::format::compare_internal

use crate::Result;

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
