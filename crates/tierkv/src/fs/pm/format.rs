//! The file system's on-PM format: magics, offsets and sizes of the directory and chunk
//! headers, and the checked words (a value with a check of its own address) it stores.

/// The named root (in the pool's root directory) that holds the directory chunk's offset.
pub const PMFS_ROOT_NAME: &str = "pmfs";

pub(crate) const DIR_MAGIC: u64 = u64::from_le_bytes(*b"TKVPMFS4");

/// The directory magics of older formats: the first had no identity and unchecked size fields,
/// the second kept the identity in the directory and was found through raw root slot 0, the
/// third had a directory of one chunk (a build of that format would not see the files of a
/// grown directory, so this one does not share its magic).
pub(crate) const DIR_MAGIC_OLD: [(u64, &str); 3] = [
    (u64::from_le_bytes(*b"TKVPMFS1"), "TKVPMFS1"),
    (u64::from_le_bytes(*b"TKVPMFS2"), "TKVPMFS2"),
    (u64::from_le_bytes(*b"TKVPMFS3"), "TKVPMFS3"),
];

pub(crate) const CHUNK_MAGIC: u64 = u64::from_le_bytes(*b"TKVCHUNK");

pub(crate) const DIR_HEADER_BYTES: u64 = 64;

pub(crate) const DIR_CRC_OFFSET: usize = 16;

/// Where a directory chunk keeps the link to the next directory chunk.
pub(crate) const DIR_NEXT_OFFSET: u64 = 24;

pub(crate) const ENTRY_BYTES: u64 = 128;

pub(crate) const ENTRY_NAME_OFFSET: usize = 32;

pub(crate) const CHUNK_HEADER_BYTES: u64 = 64;

pub(crate) const NAME_MAX: usize = 80;

pub(crate) const LIVE_TAG: u64 = 0x4556_494c;

pub(crate) const FLAG_LOG: u32 = 1;

/// Entry flag: the file's chunks carry position words (module doc).
pub(crate) const FLAG_POSITIONED: u32 = 2;

/// Where a chunk keeps its position word.
pub(crate) const CHUNK_POSITION_OFFSET: u64 = 16;

/// Sizes live in the low 48 bits of the size word.
pub(crate) const SIZE_MAX: u64 = (1 << 48) - 1;

/// Chunk offsets are multiples of the chunk size, so their low 16 bits hold a link check.
pub const PMFS_MIN_CHUNK_BYTES: u64 = 1 << 16;

/// Appended pieces at least this large are copied with non-temporal stores (durable at the next
/// fence, no write-back loop, no cache pollution); smaller ones are stored and written back.
pub(crate) const NT_MIN_BYTES: usize = 1024;

/// A 16-bit check of two words (entry sizes, chunk links).
pub(crate) fn check16(a: u64, b: u64) -> u64 {
    let mut buf = [0u8; 16];
    buf[..8].copy_from_slice(&a.to_le_bytes());
    buf[8..].copy_from_slice(&b.to_le_bytes());
    let c = crate::util::crc::crc32c(&buf);
    u64::from((c >> 16) ^ (c & 0xffff))
}

/// A checked word: the 48-bit `value` (a size, an offset) with `check16(at, value)` above it,
/// `at` naming where it is stored, so that a flipped bit or a word of another place fails
/// [`decode_checked`]. Stored and loaded as one 8-byte atomic word.
pub(crate) fn encode_checked(at: u64, value: u64) -> u64 {
    debug_assert!(value <= SIZE_MAX);
    value | check16(at, value) << 48
}

/// The value of the checked word `word` stored at `at`, or `None` if its check fails.
pub(crate) fn decode_checked(at: u64, word: u64) -> Option<u64> {
    let value = word & SIZE_MAX;
    (word >> 48 == check16(at, value)).then_some(value)
}

pub(crate) fn encode_link(from: u64, to: u64) -> u64 {
    if to == 0 {
        0
    } else {
        to | check16(from, to)
    }
}

pub(crate) fn decode_link(from: u64, word: u64) -> Option<u64> {
    if word == 0 {
        return Some(0);
    }
    let to = word & !0xffff;
    (word & 0xffff == check16(from, to)).then_some(to)
}

/// The live state word of an entry: the tag and the checksum of its fixed fields.
pub(crate) fn live_state(entry: u64, first_chunk: u64, flags: u32, name: &[u8]) -> u64 {
    let mut b = Vec::with_capacity(24 + name.len());
    b.extend_from_slice(&entry.to_le_bytes());
    b.extend_from_slice(&first_chunk.to_le_bytes());
    b.extend_from_slice(&(name.len() as u32).to_le_bytes());
    b.extend_from_slice(&flags.to_le_bytes());
    b.extend_from_slice(name);
    u64::from(crate::util::crc::crc32c(&b)) << 32 | LIVE_TAG
}
