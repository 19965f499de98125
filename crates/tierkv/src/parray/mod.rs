//! The PM sorted array: an immutable run of `(internal key, value)` entries in one file, with
//! fixed-size index entries so that a binary search costs one small read per probe, and
//! optional *next pointers* (cascade pointers) into the lower floors of a Skip-Array Tree.
//!
//! This is the run format of NVLSM (Zhang & Du, "NVLSM: A Persistent Memory Key-Value Store Using
//! Log-Structured Merge Tree with Accumulative Compaction", ACM TOS 2021, section 4.2) and the
//! building block of TriangleKV's RowTables. In production the file lives in the PM pool's file
//! system (`PmFs`) and is read in place through [`RandomAccessFile::read_exact_at`]: PM is
//! byte-addressable, so the index is *not* copied into DRAM; only the Bloom filter is.
//!
//! * [`ArrayBuilder`] writes an array from entries in [`compare_internal`] order;
//! * [`PmArray`] opens one: entry reads, head-first comparisons, lower bounds, verified reads,
//!   an [`ArrayIterator`], and a full [`PmArray::verify`];
//! * [`cascade`] links arrays into a Skip-Array Tree: [`PointerBuilder`] computes the next
//!   pointers of a new top floor by the paper's co-scan, [`cascade_get`] and [`cascade_seek`]
//!   search all floors in one descent (the paper's Algorithm 1).
//!
//! # File format (all integers little-endian; `docs/FORMATS.md`, "PM sorted array")
//!
//! ```text
//! offset 0            data area:   key_0 value_0 key_1 value_1 ... (internal keys, raw bytes)
//! data_len            index area:  n entries of 48 bytes, entry i = the i-th smallest key
//! data_len + 48 n     filter area: an sst::filter Bloom filter over the user keys (may be empty)
//! file_size - 64      footer:      64 bytes
//! ```
//!
//! Index entry (48 bytes):
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 0 | 16 | key head: the first `min(16, user_key_len)` bytes of the user key, zero-padded |
//! | 16 | 4 | user key length |
//! | 20 | 8 | trailer (`seq << 8 \| type`) |
//! | 28 | 4 | data offset: where the internal key starts; the value follows it |
//! | 32 | 4 | value length |
//! | 36 | 4 | next-pointer offset (0 when there is no pointer) |
//! | 40 | 1 | next-pointer floor slot, `0xFF` = no pointer |
//! | 41 | 3 | zero |
//! | 44 | 4 | masked crc32c of (bytes 0..44 of the entry, the internal key, the value) |
//!
//! Footer (64 bytes, the end of the file):
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 0 | 8 | magic, the ASCII bytes `TKVARRAY` |
//! | 8 | 4 | format version: 1 |
//! | 12 | 4 | entry count `n` (at least 1) |
//! | 16 | 8 | data length (at most `u32::MAX`) |
//! | 24 | 8 | index offset (= data length) |
//! | 32 | 8 | filter offset (= index offset + 48 n) |
//! | 40 | 8 | filter length (0 = no filter) |
//! | 48 | 1 | flags: bit 0 = some entry carries a next pointer; other bits zero |
//! | 49 | 1 | the floor slot the array was built for, `0xFF` = none |
//! | 50 | 2 | zero |
//! | 52 | 4 | masked crc32c of the index area |
//! | 56 | 4 | masked crc32c of the filter area |
//! | 60 | 4 | masked crc32c of footer bytes 0..60 |
//!
//! Checksums are CRC-32C masked as everywhere in the engine ([`crate::util::crc::mask`]).
//!
//! # Invariants
//!
//! * Entries are in strictly increasing [`compare_internal`] order; their key and value bytes
//!   are contiguous and in entry order (entry 0 at offset 0, the data area ends with the last
//!   value). Entry `i`'s head, length and trailer describe the key at its data offset.
//! * A next pointer of an array built for floor slot `f` names a floor `< f`; an array built
//!   for no floor (or for floor 0) has none. What the pointer means is defined in [`cascade`].
//! * Opening checks the footer, the layout, the index checksum and every entry's structural
//!   bounds, and the filter checksum; afterwards each probe re-reads its 48-byte entry from the
//!   file and re-checks its bounds. Key and value bytes are checked against the entry checksum
//!   on every read that returns them, and a search that decided by key bytes not yet checked
//!   re-reads the entries that fixed its answer with their checksum (see
//!   [`PmArray::lower_bound`]), so damaged bytes give [`crate::Error::Corruption`] naming the
//!   file and offset, never wrong data and never a panic.
//!
//! Thread-safety: a [`PmArray`] is immutable and shared as `Arc<PmArray>`; builders, pointer
//! builders and iterators have one owner.
//!
//! Durability: [`ArrayBuilder::finish`] syncs the file before it returns; an array is published
//! (by a manifest record of its stage) only after that.
//!
//! [`compare_internal`]: crate::format::compare_internal
//! [`RandomAccessFile::read_exact_at`]: crate::fs::RandomAccessFile::read_exact_at

mod builder;
pub(crate) mod cascade;
pub(crate) mod live;
mod reader;

#[cfg(test)]
mod tests;

pub(crate) use builder::ArrayBuilder;
pub(crate) use cascade::{
    cascade_get, cascade_seek, chain_get, chain_seek, verify_pointers, verify_row_hints,
    PointerBuilder,
};
pub(crate) use reader::{ArrayIterator, PmArray};

use crate::util::coding::{decode_fixed32, decode_fixed64};
use crate::util::crc::{crc32c, mask, unmask};
use std::cmp::Ordering;

/// An entry's internal key and value.
pub(crate) type KeyValue = (Vec<u8>, Vec<u8>);

/// Bytes of one index entry.
pub(crate) const ENTRY_LEN: usize = 48;
/// Bytes of the user key kept in an index entry.
pub(crate) const HEAD_LEN: usize = 16;
/// Bytes of the footer.
pub(crate) const FOOTER_LEN: usize = 64;
/// The footer's magic bytes.
pub(crate) const MAGIC: [u8; 8] = *b"TKVARRAY";
/// The format version this code writes and the only one it reads.
pub(crate) const FORMAT_VERSION: u32 = 1;
/// The floor-slot byte meaning "none" (in an entry: no next pointer).
pub(crate) const NO_FLOOR: u8 = 0xFF;
/// Footer flag: some entry carries a next pointer.
const FLAG_POINTERS: u8 = 1;
/// Bytes of an entry covered by its checksum, before the key and value.
const ENTRY_CRC_AT: usize = 44;

/// A cascade pointer: index `offset` of the floor in slot `floor` of the same Skip-Array Tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct NextPtr {
    /// The floor slot (0 = bottom); never `0xFF`.
    pub floor: u8,
    /// The entry index in that floor.
    pub offset: u32,
}

/// A decoded index entry. Decoding checks the entry is canonical (zero padding and reserved
/// bytes, no offset without a floor), so [`IndexEntry::encode`] reproduces its bytes exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct IndexEntry {
    /// The first `min(16, user_key_len)` bytes of the user key, zero-padded.
    pub head: [u8; HEAD_LEN],
    /// The user key's length.
    pub user_key_len: u32,
    /// The internal key's trailer.
    pub trailer: u64,
    /// Where the internal key starts in the data area.
    pub data_offset: u32,
    /// The value's length (it follows the internal key).
    pub value_len: u32,
    /// The cascade pointer, if any.
    pub next: Option<NextPtr>,
    /// The stored masked checksum of the entry, key and value.
    pub crc: u32,
}

impl IndexEntry {
    /// The entry for `ikey` (a valid internal key) stored at `data_offset`, with its checksum
    /// computed over `value` too.
    fn new(ikey: &[u8], value: &[u8], data_offset: u32, next: Option<NextPtr>) -> IndexEntry {
        let uk = crate::format::user_key(ikey);
        let mut e = IndexEntry {
            head: pad_head(uk),
            user_key_len: uk.len() as u32,
            trailer: crate::format::trailer(ikey),
            data_offset,
            value_len: value.len() as u32,
            next,
            crc: 0,
        };
        e.crc = e.checksum(ikey, value);
        e
    }

    /// The 48 bytes of the entry.
    pub(crate) fn encode(&self) -> [u8; ENTRY_LEN] {
        let mut b = [0u8; ENTRY_LEN];
        self.encode_checked_part(&mut b);
        b[44..48].copy_from_slice(&self.crc.to_le_bytes());
        b
    }

    fn encode_checked_part(&self, b: &mut [u8; ENTRY_LEN]) {
        b[..16].copy_from_slice(&self.head);
        b[16..20].copy_from_slice(&self.user_key_len.to_le_bytes());
        b[20..28].copy_from_slice(&self.trailer.to_le_bytes());
        b[28..32].copy_from_slice(&self.data_offset.to_le_bytes());
        b[32..36].copy_from_slice(&self.value_len.to_le_bytes());
        let (offset, floor) = self.next.map_or((0, NO_FLOOR), |p| (p.offset, p.floor));
        b[36..40].copy_from_slice(&offset.to_le_bytes());
        b[40] = floor;
    }

    /// The masked checksum of this entry's first 44 bytes followed by `ikey` and `value`.
    pub(crate) fn checksum(&self, ikey: &[u8], value: &[u8]) -> u32 {
        let mut b = [0u8; ENTRY_LEN];
        self.encode_checked_part(&mut b);
        let c = crc32c(&b[..ENTRY_CRC_AT]);
        let c = crc32c::crc32c_append(c, ikey);
        mask(crc32c::crc32c_append(c, value))
    }

    /// Decodes an entry; `Err(reason)` if it is not canonical.
    pub(crate) fn decode(b: &[u8; ENTRY_LEN]) -> Result<IndexEntry, String> {
        let u32_at = |i: usize| decode_fixed32(&b[i..]).ok_or("short entry");
        let mut head = [0u8; HEAD_LEN];
        head.copy_from_slice(&b[..HEAD_LEN]);
        let user_key_len = u32_at(16)?;
        let used = (user_key_len as usize).min(HEAD_LEN);
        if head[used..].iter().any(|&x| x != 0) {
            return Err("key head padding is not zero".into());
        }
        let trailer = decode_fixed64(&b[20..]).ok_or("short entry")?;
        let data_offset = u32_at(28)?;
        let value_len = u32_at(32)?;
        let next_offset = u32_at(36)?;
        let next = match b[40] {
            NO_FLOOR if next_offset != 0 => {
                return Err(format!("next-pointer offset {next_offset} without a floor"))
            }
            NO_FLOOR => None,
            floor => Some(NextPtr {
                floor,
                offset: next_offset,
            }),
        };
        if b[41..44] != [0, 0, 0] {
            return Err("reserved entry bytes are not zero".into());
        }
        Ok(IndexEntry {
            head,
            user_key_len,
            trailer,
            data_offset,
            value_len,
            next,
            crc: u32_at(44)?,
        })
    }

    /// Bytes of the internal key.
    pub(crate) fn key_len(&self) -> u64 {
        self.user_key_len as u64 + crate::format::TRAILER_LEN as u64
    }

    /// One past the entry's last data byte (key and value).
    pub(crate) fn data_end(&self) -> u64 {
        self.data_offset as u64 + self.key_len() + self.value_len as u64
    }

    /// The part of a key that an index entry holds, for head-first comparisons.
    fn key_head(&self) -> KeyHead {
        KeyHead {
            head: self.head,
            user_key_len: self.user_key_len as usize,
            trailer: self.trailer,
        }
    }
}

/// The first `min(16, len)` bytes of `user_key`, zero-padded to 16.
pub(crate) fn pad_head(user_key: &[u8]) -> [u8; HEAD_LEN] {
    let mut h = [0u8; HEAD_LEN];
    let n = user_key.len().min(HEAD_LEN);
    h[..n].copy_from_slice(&user_key[..n]);
    h
}

/// What a comparison can see without the data area: the key head, the user key's length and
/// the trailer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KeyHead {
    head: [u8; HEAD_LEN],
    user_key_len: usize,
    trailer: u64,
}

impl KeyHead {
    /// The head of an internal key. REQUIRES: `ikey.len() >= TRAILER_LEN`.
    pub(crate) fn of(ikey: &[u8]) -> KeyHead {
        let uk = crate::format::user_key(ikey);
        KeyHead {
            head: pad_head(uk),
            user_key_len: uk.len(),
            trailer: crate::format::trailer(ikey),
        }
    }

    /// `compare_internal(a, b)` decided from the heads alone, `None` when both user keys are
    /// longer than 16 bytes and their first 16 bytes are equal (only the rest can decide).
    ///
    /// Why this is exact: over the first `m = min(16, len_a, len_b)` bytes the heads hold the
    /// keys themselves, so a difference there decides. Otherwise, if one key has at most 16
    /// bytes, it is entirely in its head and is a prefix of the other: the shorter user key
    /// sorts first, and equal lengths mean equal user keys, ordered by trailer descending.
    pub(crate) fn decide(a: &KeyHead, b: &KeyHead) -> Option<Ordering> {
        let m = a.user_key_len.min(b.user_key_len).min(HEAD_LEN);
        match a.head[..m].cmp(&b.head[..m]) {
            Ordering::Equal => {}
            o => return Some(o),
        }
        if a.user_key_len <= HEAD_LEN || b.user_key_len <= HEAD_LEN {
            return Some(match a.user_key_len.cmp(&b.user_key_len) {
                Ordering::Equal => b.trailer.cmp(&a.trailer),
                o => o,
            });
        }
        None
    }
}

/// The decoded footer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Footer {
    pub num_entries: u32,
    pub data_len: u64,
    pub index_offset: u64,
    pub filter_offset: u64,
    pub filter_len: u64,
    pub has_pointers: bool,
    pub floor_slot: Option<u8>,
    pub index_crc: u32,
    pub filter_crc: u32,
}

impl Footer {
    /// The 64 bytes of the footer, its own checksum included.
    pub(crate) fn encode(&self) -> [u8; FOOTER_LEN] {
        let mut b = [0u8; FOOTER_LEN];
        b[..8].copy_from_slice(&MAGIC);
        b[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        b[12..16].copy_from_slice(&self.num_entries.to_le_bytes());
        b[16..24].copy_from_slice(&self.data_len.to_le_bytes());
        b[24..32].copy_from_slice(&self.index_offset.to_le_bytes());
        b[32..40].copy_from_slice(&self.filter_offset.to_le_bytes());
        b[40..48].copy_from_slice(&self.filter_len.to_le_bytes());
        b[48] = if self.has_pointers { FLAG_POINTERS } else { 0 };
        b[49] = self.floor_slot.unwrap_or(NO_FLOOR);
        b[52..56].copy_from_slice(&self.index_crc.to_le_bytes());
        b[56..60].copy_from_slice(&self.filter_crc.to_le_bytes());
        let crc = mask(crc32c(&b[..60]));
        b[60..64].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes and checks a footer (magic, checksum, version, flags, reserved bytes); the
    /// layout against the file size is the reader's to check. `Err(reason)` if damaged.
    pub(crate) fn decode(b: &[u8; FOOTER_LEN]) -> Result<Footer, String> {
        if b[..8] != MAGIC {
            return Err("bad sorted-array magic".into());
        }
        let u32_at = |i: usize| decode_fixed32(&b[i..]).ok_or("short footer");
        let u64_at = |i: usize| decode_fixed64(&b[i..]).ok_or("short footer");
        if unmask(u32_at(60)?) != crc32c(&b[..60]) {
            return Err("footer checksum mismatch".into());
        }
        let version = u32_at(8)?;
        if version != FORMAT_VERSION {
            return Err(format!("unsupported sorted-array format version {version}"));
        }
        if b[48] & !FLAG_POINTERS != 0 || b[50..52] != [0, 0] {
            return Err("unknown footer flags or reserved bytes not zero".into());
        }
        Ok(Footer {
            num_entries: u32_at(12)?,
            data_len: u64_at(16)?,
            index_offset: u64_at(24)?,
            filter_offset: u64_at(32)?,
            filter_len: u64_at(40)?,
            has_pointers: b[48] & FLAG_POINTERS != 0,
            floor_slot: (b[49] != NO_FLOOR).then_some(b[49]),
            index_crc: u32_at(52)?,
            filter_crc: u32_at(56)?,
        })
    }
}

/// The first entry at or after `i` outside every interval of `skip` (sorted, disjoint, possibly
/// adjacent or empty).
pub(crate) fn first_live(skip: &[(u32, u32)], mut i: u32) -> u32 {
    let mut k = skip.partition_point(|e| e.1 <= i);
    while k < skip.len() && skip[k].0 <= i {
        i = skip[k].1;
        k += 1;
    }
    i
}
