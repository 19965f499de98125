//! LAB-DB (`labdb`): an L0 of two persistent B+ trees whose leaves hold 8-byte value addresses
//! into value arrays on the SSD tier, in front of leveled SST levels.
//!
//! This module holds the parts of the design that stand on their own: the codecs and the value
//! files. Nothing here is wired into a design yet; the L0 trees, the front end and recovery build
//! on it.
//!
//! * [`vaddr`]: the 8-byte value address (`Vaddr`) a tree leaf and a memtable entry hold, and
//!   the value record it points at, whose checksum covers its own file number, offset and user
//!   key, so a stale or damaged address reads as corruption, never as another key's value.
//! * [`vlog`]: `ValueFiles`, the value-array files (`NNNNNN.vla`): writer, reader cache,
//!   reference and live-byte accounting, and the rule that frees a file.
//! * [`record`]: the LAB batch record (the payload of a key-array `NNNNNN.log` record and of a
//!   WAL-buffer `NNNNNN.wbuf` record) and the WAL-buffer half's first record.
//!
//! Formats: `docs/FORMATS.md`, "LAB-DB value address and value array" and the sections after it.

// The codecs and `ValueFiles` are used only by their tests until the L0 trees and the LAB front
// end call them; the allowance goes once they do.
#![allow(dead_code)]

pub(crate) mod record;
pub(crate) mod vaddr;
pub(crate) mod vlog;
