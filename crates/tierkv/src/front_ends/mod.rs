//! The front ends designs are assembled from (see [`crate::pipeline::FrontEnd`]).
//!
//! * [`WalMemtable`] (`wal_memtable/`, its recovery in `recovery.rs` there): a write-ahead log
//!   on SSD or PM and a DRAM memtable, LevelDB's write path with group commit; or, with no WAL,
//!   a persistent skiplist memtable in PM (SLM-DB's); or, for LAB-DB, its log in place of the
//!   WAL (`wal_memtable/lab_log.rs`: a PM WAL buffer draining into key and value arrays on
//!   SSD).
//! * [`fast_store::FastStore`] (`fast_store.rs`, with `pm.thread_logs`): FluidKV's concurrent
//!   DRAM index over thread-exclusive PM logs, writers without a leader.
//! * [`list_front::ListFront`] (`list_front.rs`): ListDB's shared PM log whose entries become
//!   the nodes of its persistent skiplists (`crate::plist`).

mod buffer;
mod fast_store;
mod list_front;
mod log_check;
mod replay;
mod wal_memtable;

pub(crate) use fast_store::links_past_start;
pub(crate) use fast_store::parse_header as thread_log_start;
pub(crate) use log_check::check_logs;
pub(crate) use replay::{holds_synced_record, WalLink};
pub(crate) use wal_memtable::{
    buffer_chunks as log_buffer_chunks, lab_log_enabled, scan_lab_log, WalMemtable, MAX_GROUP_BYTES,
};

use crate::options::Options;
use crate::pipeline::{FrontEnd, FrontEndKind};

/// The front end of `kind` for `options`.
pub(crate) fn build(kind: FrontEndKind, options: &Options) -> Box<dyn FrontEnd> {
    match kind {
        FrontEndKind::WalMemtable if options.pm.thread_logs => {
            Box::new(fast_store::FastStore::new(options))
        }
        FrontEndKind::WalMemtable | FrontEndKind::PmMemtable | FrontEndKind::LabLog => {
            Box::new(WalMemtable::new(options))
        }
        FrontEndKind::Lists => Box::new(list_front::ListFront::new(options)),
    }
}
