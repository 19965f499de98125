//! The tree's cursor: entries in key order from a start bound, leaf by leaf.

use super::*;

/// An iterator over a [`PbTree`] in key order (module docs: concurrency).
pub(crate) struct PbIter {
    pub(super) tree: Arc<PbTree>,
    pub(super) buf: Vec<Entry>,
    pub(super) pos: usize,
    pub(super) done: bool,
}

impl PbIter {
    /// Positions at the first key `>= key`.
    #[cfg(test)]
    pub(crate) fn seek(&mut self, key: &[u8]) -> Result<()> {
        self.fill(Bound::Included(key))
    }

    /// Positions at the first key.
    pub(crate) fn seek_to_first(&mut self) -> Result<()> {
        self.fill(Bound::Unbounded)
    }

    pub(super) fn fill(&mut self, from: Bound<&[u8]>) -> Result<()> {
        self.buf = self.tree.entries_after(from)?;
        self.pos = 0;
        self.done = self.buf.is_empty();
        Ok(())
    }

    /// The current entry, if positioned.
    pub(crate) fn current(&self) -> Option<&Entry> {
        if self.done {
            None
        } else {
            self.buf.get(self.pos)
        }
    }

    /// Moves to the next key.
    pub(crate) fn next(&mut self) -> Result<()> {
        if self.done {
            return Ok(());
        }
        self.pos += 1;
        if self.pos == self.buf.len() {
            let last = self.buf.pop().expect("a positioned iterator").0;
            self.fill(Bound::Excluded(&last))?;
        }
        Ok(())
    }
}
