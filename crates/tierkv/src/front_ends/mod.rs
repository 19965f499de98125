//! The front ends designs are assembled from (see [`crate::pipeline::FrontEnd`]).
//!
//! * [`WalMemtable`] (`wal_memtable.rs`, recovery in `wal_recovery.rs`): a write-ahead log on
//!   SSD or PM and a DRAM memtable, LevelDB's write path with group commit.

mod wal_memtable;
mod wal_recovery;

pub(crate) use wal_memtable::{WalMemtable, MAX_GROUP_BYTES};
pub(crate) use wal_recovery::holds_synced_record;

use crate::options::Options;
use crate::pipeline::{FrontEnd, FrontEndKind};

/// The front end of `kind` for `options`.
pub(crate) fn build(kind: FrontEndKind, options: &Options) -> Box<dyn FrontEnd> {
    match kind {
        FrontEndKind::WalMemtable => Box::new(WalMemtable::new(options)),
    }
}
