//! The value address (vaddr) and the value record it points at.
//!
//! A vaddr is one `u64`, so a tree leaf updates it in place with one 8-byte persistent store. It
//! carries no check bits of its own: the value record it names checks its address instead. The
//! record's checksum covers the value array's number, the record's offset and the user key, none
//! of which the record stores, so a stale, torn or flipped vaddr (or one read for the wrong key)
//! fails the check and is reported as corruption rather than returning another key's value.
//!
//! Encoding (`docs/FORMATS.md`, "LAB-DB value address and value array"):
//! * bit 63 = 0: a value-array record; bits 62..32 = the `.vla` file number (1 ..= 2^31 - 1),
//!   bits 31..0 = the record's byte offset in that file (so a value array is below 4 GiB);
//! * bit 63 = 1: a half of a hot slot; bit 62 = the half (0 or 1), bits 61..48 = the low 14
//!   bits of the version's sequence number (checked against the half), bits 47..0 = the slot's
//!   number in the hot-key buffer.
//!
//! The word 0 is never a vaddr (file numbers start at 1), so a zeroed word reads as corruption.

use crate::format::{pack_trailer, SequenceNumber, ValueType, MAX_SEQUENCE};
use crate::util::crc::{mask, unmask};
use crate::{Error, Result};
use parking_lot::Mutex;
use std::sync::Arc;

/// The largest value-array file number a vaddr can name (31 bits).
pub(crate) const MAX_VALUE_FILE: u64 = (1 << 31) - 1;
/// The largest byte offset a vaddr can name in a value array (32 bits).
pub(crate) const MAX_VALUE_OFFSET: u64 = u32::MAX as u64;
/// The largest hot-slot number a vaddr can name (48 bits).
pub(crate) const MAX_HOT_SLOT: u64 = (1 << 48) - 1;
/// Bytes of a value record before its value: masked crc, value length, trailer.
pub(crate) const VALUE_RECORD_HEADER: usize = 16;

const HOT_BIT: u64 = 1 << 63;
/// The bits of a sequence number a hot-slot address carries as its check.
pub(crate) const HOT_TAG: u64 = (1 << 14) - 1;

/// Where a version's value lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Vaddr {
    /// A value record at `offset` in value array `file` (`NNNNNN.vla`).
    Value {
        /// The value array's file number.
        file: u64,
        /// The record's byte offset in the file.
        offset: u64,
    },
    /// One half of hot slot number `slot`, holding the version whose sequence number's low 14
    /// bits are `tag`.
    Hot {
        /// The slot's number.
        slot: u64,
        /// The half (0 or 1).
        half: usize,
        /// The low 14 bits of the version's sequence number.
        tag: u64,
    },
}

impl Vaddr {
    /// The address of the record at `offset` in value array `file`; `InvalidArgument` when
    /// either does not fit its field (the file-number allocator and the write path refuse such
    /// files before any record is written, so this is a guard, not a normal outcome).
    pub(crate) fn value(file: u64, offset: u64) -> Result<Vaddr> {
        if file == 0 || file > MAX_VALUE_FILE {
            return Err(Error::InvalidArgument(format!(
                "value array number {file} does not fit a value address (1 ..= {MAX_VALUE_FILE})"
            )));
        }
        if offset > MAX_VALUE_OFFSET {
            return Err(Error::InvalidArgument(format!(
                "offset {offset} in value array {file} does not fit a value address (a value \
                 array is below 4 GiB)"
            )));
        }
        Ok(Vaddr::Value { file, offset })
    }

    /// The address of half `half` of hot slot number `slot` holding the version at sequence
    /// `seq`; `InvalidArgument` for a slot beyond 48 bits or a half other than 0 or 1.
    pub(crate) fn hot(slot: u64, half: usize, seq: u64) -> Result<Vaddr> {
        if slot > MAX_HOT_SLOT || half > 1 {
            return Err(Error::InvalidArgument(format!(
                "hot slot {slot} half {half} does not fit a value address (48 bits, half 0 or 1)"
            )));
        }
        Ok(Vaddr::Hot {
            slot,
            half,
            tag: seq & HOT_TAG,
        })
    }

    /// The 8-byte word.
    pub(crate) fn encode(self) -> u64 {
        match self {
            Vaddr::Value { file, offset } => (file << 32) | offset,
            Vaddr::Hot { slot, half, tag } => {
                HOT_BIT | ((half as u64) << 62) | ((tag & HOT_TAG) << 48) | slot
            }
        }
    }

    /// Parses a word read from a tree leaf or a memtable entry; `location` names where it was
    /// read in errors. The word 0 and value-array number 0 are corruption (every hot word is a
    /// form: its half checks the tag).
    pub(crate) fn decode(word: u64, location: &str) -> Result<Vaddr> {
        if word & HOT_BIT != 0 {
            return Ok(Vaddr::Hot {
                slot: word & MAX_HOT_SLOT,
                half: ((word >> 62) & 1) as usize,
                tag: (word >> 48) & HOT_TAG,
            });
        }
        let file = word >> 32;
        if file == 0 {
            return Err(Error::corruption(
                location,
                format!("value address {word:#018x} names value array 0"),
            ));
        }
        Ok(Vaddr::Value {
            file,
            offset: word & MAX_VALUE_OFFSET,
        })
    }
}

/// A decoded value record: the version's sequence number, type and value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ValueRecord {
    /// The version's sequence number.
    pub(crate) seq: SequenceNumber,
    /// Put or tombstone.
    pub(crate) vtype: ValueType,
    /// The value (empty for a tombstone).
    pub(crate) value: Vec<u8>,
    /// Read from the block cache, not from the device.
    pub(crate) cached: bool,
}

impl ValueRecord {
    /// The bytes its read took from the device (0 from the block cache).
    pub(crate) fn device_bytes(&self) -> u64 {
        if self.cached {
            0
        } else {
            value_record_len(self.value.len())
        }
    }
}

/// The bytes of a value record: its size is [`VALUE_RECORD_HEADER`] plus the value's length.
pub(crate) fn value_record_len(value_len: usize) -> u64 {
    VALUE_RECORD_HEADER as u64 + value_len as u64
}

/// The checksum of a record at `offset` in value array `file` for `key`: it covers the address
/// and the key, which the record does not store, plus the trailer and the value (with both
/// lengths, so no two splits of the same bytes check alike).
fn record_crc(file: u64, offset: u64, key: &[u8], trailer: u64, value: &[u8]) -> u32 {
    let mut head = [0u8; 20];
    head[..8].copy_from_slice(&file.to_le_bytes());
    head[8..16].copy_from_slice(&offset.to_le_bytes());
    head[16..].copy_from_slice(&(key.len() as u32).to_le_bytes());
    let mut c = crc32c::crc32c(&head);
    c = crc32c::crc32c_append(c, key);
    let mut mid = [0u8; 12];
    mid[..8].copy_from_slice(&trailer.to_le_bytes());
    mid[8..].copy_from_slice(&(value.len() as u32).to_le_bytes());
    c = crc32c::crc32c_append(c, &mid);
    crc32c::crc32c_append(c, value)
}

/// Appends the value record of `(key, seq, vtype, value)` at `offset` in value array `file` to
/// `dst`. A tombstone's value must be empty. `InvalidArgument` for a value of 4 GiB or more or a
/// sequence beyond 56 bits (the write path refuses both earlier).
pub(crate) fn encode_value_record(
    dst: &mut Vec<u8>,
    file: u64,
    offset: u64,
    key: &[u8],
    seq: SequenceNumber,
    vtype: ValueType,
    value: &[u8],
) -> Result<()> {
    let len = u32::try_from(value.len()).map_err(|_| {
        Error::InvalidArgument(format!(
            "a value of {} bytes does not fit a value record",
            value.len()
        ))
    })?;
    if seq > MAX_SEQUENCE {
        return Err(Error::InvalidArgument(format!(
            "sequence number {seq} beyond 56 bits"
        )));
    }
    if vtype == ValueType::Deletion && !value.is_empty() {
        return Err(Error::InvalidArgument(
            "a tombstone's value record holds no value".into(),
        ));
    }
    let trailer = pack_trailer(seq, vtype);
    let crc = record_crc(file, offset, key, trailer, value);
    dst.extend_from_slice(&mask(crc).to_le_bytes());
    dst.extend_from_slice(&len.to_le_bytes());
    dst.extend_from_slice(&trailer.to_le_bytes());
    dst.extend_from_slice(value);
    Ok(())
}

/// The value length a record's header declares (the caller reads that many bytes after it).
pub(crate) fn value_len_in_header(header: &[u8; VALUE_RECORD_HEADER]) -> u32 {
    u32::from_le_bytes(header[4..8].try_into().expect("4 bytes"))
}

/// Decodes and checks the record `bytes` (header and value exactly) read at `offset` in value
/// array `file` for `key`. A checksum that fails (damage, or an address or key other than the
/// record's), a length that disagrees with `bytes`, or an unknown type is corruption naming
/// `location` and the offset.
pub(crate) fn decode_value_record(
    bytes: &[u8],
    file: u64,
    offset: u64,
    key: &[u8],
    location: &str,
) -> Result<ValueRecord> {
    let bad =
        |what: String| Error::corruption(location, format!("value record at {offset}: {what}"));
    if bytes.len() < VALUE_RECORD_HEADER {
        return Err(bad(format!(
            "{} bytes, shorter than its header",
            bytes.len()
        )));
    }
    let stored = u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes"));
    let len = u32::from_le_bytes(bytes[4..8].try_into().expect("4 bytes")) as usize;
    let trailer = u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes"));
    let value = &bytes[VALUE_RECORD_HEADER..];
    if value.len() != len {
        return Err(bad(format!(
            "declares {len} value bytes, {} present",
            value.len()
        )));
    }
    if record_crc(file, offset, key, trailer, value) != unmask(stored) {
        return Err(bad(
            "checksum mismatch (damaged, or the address or key is not the record's)".into(),
        ));
    }
    let vtype = ValueType::from_u8((trailer & 0xff) as u8)
        .ok_or_else(|| bad(format!("unknown type {}", trailer & 0xff)))?;
    if vtype == ValueType::Deletion && !value.is_empty() {
        return Err(bad("a tombstone with a value".into()));
    }
    Ok(ValueRecord {
        seq: trailer >> 8,
        vtype,
        value: value.to_vec(),
        cached: false,
    })
}

/// The value addresses of one memtable's versions: operation `seq` of the memtable has its
/// value record at `offsets[seq - first_seq]` in value array `number` (the memtable's). The
/// write leader appends; the flush reads once the memtable is immutable.
pub(crate) struct LabAddrs {
    number: u64,
    inner: Mutex<(u64, Vec<u32>)>,
}

impl LabAddrs {
    pub(crate) fn new(number: u64) -> Arc<LabAddrs> {
        Arc::new(LabAddrs {
            number,
            inner: Mutex::new((0, Vec::new())),
        })
    }

    /// The value array (and memtable) number.
    pub(crate) fn number(&self) -> u64 {
        self.number
    }

    /// Records the offsets of the operations numbered from `first_seq`: they continue the
    /// memtable's (writes are numbered consecutively under the leader).
    pub(crate) fn push(&self, first_seq: u64, offsets: &[u32]) -> Result<()> {
        let mut g = self.inner.lock();
        if g.1.is_empty() {
            g.0 = first_seq;
        } else if g.0 + g.1.len() as u64 != first_seq {
            return Err(Error::InvalidArgument(format!(
                "LAB log: group at sequence {first_seq} does not continue memtable {} (next {})",
                self.number,
                g.0 + g.1.len() as u64
            )));
        }
        g.1.extend_from_slice(offsets);
        Ok(())
    }

    /// The value address (encoded) of the memtable's version `seq`, if the memtable has it.
    pub(crate) fn word(&self, seq: u64) -> Option<u64> {
        let g = self.inner.lock();
        let i = seq.checked_sub(g.0)?;
        let off = *g.1.get(usize::try_from(i).ok()?)?;
        Vaddr::value(self.number, u64::from(off))
            .ok()
            .map(Vaddr::encode)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_continue_by_sequence() {
        let a = LabAddrs::new(7);
        a.push(10, &[32, 60]).unwrap();
        a.push(12, &[90]).unwrap();
        assert_eq!(a.word(9), None);
        assert_eq!(a.word(10), Some(Vaddr::value(7, 32).unwrap().encode()));
        assert_eq!(a.word(12), Some(Vaddr::value(7, 90).unwrap().encode()));
        assert_eq!(a.word(13), None);
        // A group that does not continue the memtable is refused.
        assert!(matches!(a.push(20, &[120]), Err(Error::InvalidArgument(_))));
        assert_eq!(a.word(20), None);
    }

    #[test]
    fn vaddr_round_trips_and_refuses_what_does_not_fit() {
        for v in [
            Vaddr::value(1, 0).unwrap(),
            Vaddr::value(7, 32).unwrap(),
            Vaddr::value(MAX_VALUE_FILE, MAX_VALUE_OFFSET).unwrap(),
            Vaddr::hot(0, 0, 1).unwrap(),
            Vaddr::hot(4096, 1, 1 << 40).unwrap(),
            Vaddr::hot(MAX_HOT_SLOT, 1, u64::MAX >> 8).unwrap(),
        ] {
            assert_eq!(Vaddr::decode(v.encode(), "t").unwrap(), v, "{v:?}");
        }
        assert_eq!(Vaddr::value(3, 40).unwrap().encode(), (3 << 32) | 40);
        assert_eq!(
            Vaddr::hot(64, 0, 1).unwrap().encode(),
            (1 << 63) | (1 << 48) | 64
        );
        assert_eq!(
            Vaddr::hot(64, 1, (1 << 14) + 3).unwrap().encode(),
            (1 << 63) | (1 << 62) | (3 << 48) | 64
        );
        for (file, offset) in [(0, 0), (MAX_VALUE_FILE + 1, 0), (1, MAX_VALUE_OFFSET + 1)] {
            assert!(matches!(
                Vaddr::value(file, offset),
                Err(Error::InvalidArgument(_))
            ));
        }
        for (slot, half) in [(MAX_HOT_SLOT + 1, 0), (0, 2)] {
            assert!(matches!(
                Vaddr::hot(slot, half, 1),
                Err(Error::InvalidArgument(_))
            ));
        }
        // A zeroed word and value array 0 are corruption.
        for word in [0, 12345] {
            assert!(
                Vaddr::decode(word, "t").unwrap_err().is_corruption(),
                "{word:#x}"
            );
        }
    }

    fn record(file: u64, offset: u64, key: &[u8], seq: u64, t: ValueType, v: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        encode_value_record(&mut b, file, offset, key, seq, t, v).unwrap();
        b
    }

    #[test]
    fn value_record_round_trip_and_every_damage_is_corruption() {
        for (key, seq, t, value) in [
            (&b"apple"[..], 1u64, ValueType::Value, &b"red"[..]),
            (b"", MAX_SEQUENCE, ValueType::Value, b""),
            (b"k", 77, ValueType::Deletion, b""),
        ] {
            let b = record(5, 32, key, seq, t, value);
            assert_eq!(b.len() as u64, value_record_len(value.len()));
            let header: [u8; VALUE_RECORD_HEADER] = b[..16].try_into().unwrap();
            assert_eq!(value_len_in_header(&header) as usize, value.len());
            let r = decode_value_record(&b, 5, 32, key, "f").unwrap();
            assert_eq!(
                r,
                ValueRecord {
                    seq,
                    vtype: t,
                    value: value.to_vec(),
                    cached: false,
                }
            );
            // The record checks its own address and key.
            for (file, offset, k) in [(6, 32, key), (5, 48, key), (5, 32, b"other".as_slice())] {
                let e = decode_value_record(&b, file, offset, k, "f").unwrap_err();
                assert!(e.is_corruption(), "{e}");
            }
            for cut in 0..b.len() {
                assert!(decode_value_record(&b[..cut], 5, 32, key, "f")
                    .unwrap_err()
                    .is_corruption());
            }
            for bit in 0..b.len() * 8 {
                let mut d = b.clone();
                d[bit / 8] ^= 1 << (bit % 8);
                let e = decode_value_record(&d, 5, 32, key, "f").unwrap_err();
                assert!(e.is_corruption(), "bit {bit}: {e}");
            }
        }
        // A tombstone never carries a value; values beyond 4 GiB are refused by the length
        // check before any allocation (not exercised: it needs 4 GiB).
        let mut b = Vec::new();
        assert!(matches!(
            encode_value_record(&mut b, 1, 32, b"k", 1, ValueType::Deletion, b"x"),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            encode_value_record(&mut b, 1, 32, b"k", MAX_SEQUENCE + 1, ValueType::Value, b""),
            Err(Error::InvalidArgument(_))
        ));
        assert!(b.is_empty());
    }
}
