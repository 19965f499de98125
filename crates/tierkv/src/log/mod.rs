//! The record log: checksummed records fragmented across fixed 32 KiB blocks (LevelDB's format).
//! Used as the write-ahead log and as the manifest. Format in `docs/FORMATS.md`.
//!
//! Every physical record is `masked crc32c: u32 | length: u16 | type: u8 | payload`, where the
//! checksum covers the type byte and the payload. A logical record larger than the space left in
//! a block is split into FIRST, MIDDLE.. and LAST fragments; a record never straddles a block
//! boundary, and a block tail too small for a header (< 7 bytes) is zero-filled.
//!
//! Recovery semantics ([`LogReader`]): a damaged or incomplete record followed by nothing valid is
//! a *torn tail* — the log ends at the last complete record and the dropped byte count is
//! reported. A damaged record followed by a valid record later in the file is *corruption* in
//! the middle of the log and is reported as [`crate::Error::Corruption`] naming the file and
//! offset, because silently skipping it would lose acknowledged data or punch a hole in history.
//!
//! Thread-safety: a writer or reader has a single owner.

mod reader;
mod writer;

pub use reader::LogReader;
#[cfg(test)]
pub use reader::TailStatus;
pub use writer::LogWriter;

/// Size of a log block.
pub const BLOCK_SIZE: usize = 32 * 1024;
/// Size of a physical record header.
pub const HEADER_SIZE: usize = 7;

/// Physical record types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum RecordType {
    Full = 1,
    First = 2,
    Middle = 3,
    Last = 4,
}

impl RecordType {
    fn from_u8(b: u8) -> Option<RecordType> {
        match b {
            1 => Some(RecordType::Full),
            2 => Some(RecordType::First),
            3 => Some(RecordType::Middle),
            4 => Some(RecordType::Last),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;
