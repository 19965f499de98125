//! The replay of logged operations into DRAM memtables flushed into the first stage, shared
//! by the WAL's recovery and LAB-DB's log.

use super::{insert_ops, MemtableFlush, WalMemtable};
use crate::db::{DbInner, State};
use crate::front_ends::buffer::Buffer;
use crate::front_ends::replay::flush_replayed;
use crate::tier::Tier;
use crate::version::VersionEdit;
use crate::{Error, Result};
use std::sync::Arc;

/// Replayed operations into memtables: each memtable that reaches the write buffer size is
/// flushed into the first stage, and the last one at [`Replayer::finish`], which also sets the
/// version set's last sequence (LAB-DB's log replays through it too).
pub(super) struct Replayer<'a> {
    front: &'a WalMemtable,
    mem: Arc<crate::memtable::MemTable>,
    max_seq: u64,
}

impl<'a> Replayer<'a> {
    pub(super) fn new(front: &'a WalMemtable, state: &State) -> Self {
        Replayer {
            front,
            mem: front.new_memtable(0),
            max_seq: state.versions.last_sequence,
        }
    }

    /// Inserts `ops`, numbered from `first` (a failure is corruption naming `location`), and
    /// flushes the memtable when full (the flush's run added to `edit`, listed in
    /// `written`). Returns how many operations there were.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn apply<'b>(
        &mut self,
        db: &DbInner,
        state: &mut State,
        ops: impl IntoIterator<Item = Result<crate::write_batch::BatchOp<'b>>>,
        first: u64,
        location: &str,
        edit: &mut VersionEdit,
        written: &mut Vec<(u64, Tier)>,
    ) -> Result<u64> {
        let n = insert_ops(&self.mem, ops, first)
            .map_err(|e| Error::corruption(location, e.to_string()))?;
        if n > 0 {
            self.max_seq = self.max_seq.max(first + n - 1);
        }
        if self.mem.approximate_bytes() >= db.options.write_buffer_size as u64 {
            let full = std::mem::replace(&mut self.mem, self.front.new_memtable(0));
            flush_replayed(
                db,
                state,
                &MemtableFlush::new(Buffer::Dram(full)),
                edit,
                written,
            )?;
        }
        Ok(n)
    }

    /// Flushes the last memtable and sets the version set's last sequence.
    pub(super) fn finish(
        self,
        db: &DbInner,
        state: &mut State,
        edit: &mut VersionEdit,
        written: &mut Vec<(u64, Tier)>,
    ) -> Result<()> {
        flush_replayed(
            db,
            state,
            &MemtableFlush::new(Buffer::Dram(self.mem)),
            edit,
            written,
        )?;
        state.versions.last_sequence = self.max_seq;
        Ok(())
    }
}
