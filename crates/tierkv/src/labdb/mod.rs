//! LAB-DB (`labdb`): an L0 of two persistent B+ trees whose leaves hold 8-byte value addresses
//! into value arrays on the SSD tier, in front of leveled SST levels.
//!
//! This module holds LAB-DB's own parts; its log (the PM WAL buffer, key and value arrays) is
//! the memtable front end's `front_ends/wal_memtable/lab_log.rs`, and its stage `stages/lab.rs`.
//!
//! * [`vaddr`]: the 8-byte value address (`Vaddr`) a tree leaf and a memtable entry hold, and
//!   the value record it points at, whose checksum covers its own file number, offset and user
//!   key, so a stale or damaged address reads as corruption, never as another key's value.
//! * [`vlog`]: `ValueFiles`, the value-array files (`NNNNNN.vla`): writer, reader cache,
//!   reference and live-byte accounting, and the rule that frees a file.
//! * [`l0`]: the L0 trees (`LabL0`): roles, flush into the mutable tree, held versions for
//!   snapshots, chunks of the immutable tree, deferred removals, attach at open.
//! * [`hot`]: the hot-key buffer (`HotBuffer`): PM slots holding the values of keys updated
//!   often, written in place at each flush (two halves, so the version a tree names never
//!   tears).
//! * [`record`]: the LAB batch record (the payload of a key-array `NNNNNN.log` record and of a
//!   WAL-buffer `NNNNNN.wbuf` record) and the WAL-buffer half's first record.
//!
//! Formats: `docs/FORMATS.md`, "LAB-DB value address and value array" and the sections after it.

pub(crate) mod hot;
pub(crate) mod l0;
pub(crate) mod record;
pub(crate) mod vaddr;
pub(crate) mod vlog;
