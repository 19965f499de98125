//! The LAB batch record: one write group's operations, as the payload of a key-array
//! `NNNNNN.log` record (values in the memtable's value array) and of a WAL-buffer `NNNNNN.wbuf`
//! record (values inline, moved to the value array when the half is drained).
//!
//! The value records of a group's non-hot operations are consecutive in the memtable's value
//! array from `value_base`, in operation order, each [`VALUE_RECORD_HEADER`] bytes plus its
//! value (a tombstone is a header alone). So the record need not store each operation's
//! address: [`LabRecord::value_offsets`] recomputes it from the value lengths, which every
//! non-hot put carries even when its bytes are not inline. The hot operation (its value in a
//! hot slot) is reserved: the write path never writes one (the hot-key buffer is filled at
//! flushes), and the log's readers report one as corruption.
//!
//! The record relies on the record log's checksum for damage (a flipped key byte decodes as
//! another key); the decoder's own checks make any structural damage (truncation, a count that
//! disagrees with the operations, unknown flags or types, trailing bytes, value records beyond
//! 4 GiB) a clear corruption error instead of a panic.
//!
//! Format: `docs/FORMATS.md`, "LAB batch record".

use super::vaddr::{value_record_len, VALUE_RECORD_HEADER};
use crate::format::{SequenceNumber, ValueType, MAX_SEQUENCE};
use crate::util::coding::{put_length_prefixed, put_varint32, Decoder};
use crate::{Error, Result};

/// Bytes of the fixed header: first seq, count, flags, memtable, value base.
pub(crate) const LAB_RECORD_HEADER: usize = 28;
/// Flag: the group was synced before it was acknowledged.
const FLAG_SYNCED: u32 = 1;
/// Flag: put values are inline (a WAL-buffer record).
const FLAG_VALUES_INLINE: u32 = 2;
/// The magic of a WAL-buffer half's first record.
pub(crate) const WBUF_MAGIC: &[u8; 8] = b"TKVLWBUF";

/// Where one operation's value is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum OpValue {
    /// A value record in the memtable's value array (at the offset
    /// [`LabRecord::value_offsets`] gives): `len` value bytes (0 for a tombstone), and the bytes
    /// themselves when the record carries them inline.
    Array {
        /// The value's length.
        len: u32,
        /// The value, in a record with inline values.
        bytes: Option<Vec<u8>>,
    },
    /// Reserved, never written: the value is in this hot slot (the write path does not log
    /// hot operations; the hot-key buffer is filled at flushes).
    Hot {
        /// The slot's number.
        slot: u64,
    },
}

/// One operation of a group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LabOp {
    /// Put or delete.
    pub(crate) vtype: ValueType,
    /// The user key.
    pub(crate) key: Vec<u8>,
    /// Where its value is.
    pub(crate) value: OpValue,
}

/// One write group: operation `i` has sequence `first_seq + i`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LabRecord {
    /// The sequence number of the first operation.
    pub(crate) first_seq: SequenceNumber,
    /// Whether the group was synced before it was acknowledged (recovery: a synced record after
    /// a cut proves damage, as in the WAL).
    pub(crate) synced: bool,
    /// Whether put values are inline (every [`OpValue::Array`] then has its bytes).
    pub(crate) values_inline: bool,
    /// The memtable (and value array) number the group belongs to.
    pub(crate) memtable: u64,
    /// The offset of the group's first value record in the value array.
    pub(crate) value_base: u32,
    /// The operations, in sequence order (at least one).
    pub(crate) ops: Vec<LabOp>,
}

impl LabRecord {
    /// Serializes the record. `InvalidArgument` for a record that breaks the format's rules
    /// (no operation, inline bytes that disagree with `values_inline` or with `len`, a
    /// tombstone with a value, value records past 4 GiB, sequences past 56 bits): the write
    /// path builds records that obey them, so this is a guard.
    pub(crate) fn encode(&self) -> Result<Vec<u8>> {
        self.check()
            .map_err(|e| Error::InvalidArgument(format!("LAB record: {e}")))?;
        let mut b = Vec::with_capacity(LAB_RECORD_HEADER + self.ops.len() * 16);
        b.extend_from_slice(&self.first_seq.to_le_bytes());
        b.extend_from_slice(&(self.ops.len() as u32).to_le_bytes());
        let mut flags = 0;
        if self.synced {
            flags |= FLAG_SYNCED;
        }
        if self.values_inline {
            flags |= FLAG_VALUES_INLINE;
        }
        b.extend_from_slice(&flags.to_le_bytes());
        b.extend_from_slice(&self.memtable.to_le_bytes());
        b.extend_from_slice(&self.value_base.to_le_bytes());
        for op in &self.ops {
            b.push(op.vtype as u8);
            match &op.value {
                OpValue::Array { len, bytes } => {
                    b.push(0);
                    put_length_prefixed(&mut b, &op.key);
                    if op.vtype == ValueType::Value {
                        put_varint32(&mut b, *len);
                        if let Some(v) = bytes {
                            b.extend_from_slice(v);
                        }
                    }
                }
                OpValue::Hot { slot } => {
                    b.push(1);
                    put_length_prefixed(&mut b, &op.key);
                    b.extend_from_slice(&slot.to_le_bytes());
                }
            }
        }
        Ok(b)
    }

    /// The rules every record obeys; the error says which one is broken.
    fn check(&self) -> std::result::Result<(), String> {
        if self.ops.is_empty() {
            return Err("no operation".into());
        }
        if u32::try_from(self.ops.len()).is_err() {
            return Err(format!("{} operations", self.ops.len()));
        }
        let last = self.first_seq.checked_add(self.ops.len() as u64 - 1);
        if self.first_seq == 0 || last.is_none_or(|l| l > MAX_SEQUENCE) {
            return Err(format!(
                "sequences {} + {} beyond 56 bits or 0",
                self.first_seq,
                self.ops.len()
            ));
        }
        for op in &self.ops {
            if let OpValue::Array { len, bytes } = &op.value {
                if op.vtype == ValueType::Deletion && *len != 0 {
                    return Err("a delete with a value".into());
                }
                let inline = op.vtype == ValueType::Value && self.values_inline;
                match bytes {
                    Some(v) if inline && v.len() == *len as usize => {}
                    None if !inline => {}
                    _ => return Err("inline value bytes that disagree with the flags".into()),
                }
            }
        }
        self.value_end().map(|_| ())
    }

    /// Per operation, the offset of its value record in the value array (`None` for a hot
    /// operation), in operation order.
    pub(crate) fn value_offsets(&self) -> Vec<Option<u64>> {
        let mut at = u64::from(self.value_base);
        self.ops
            .iter()
            .map(|op| match &op.value {
                OpValue::Array { len, .. } => {
                    let here = at;
                    at += value_record_len(*len as usize);
                    Some(here)
                }
                OpValue::Hot { .. } => None,
            })
            .collect()
    }

    /// The offset just past the group's last value record; an error when the records would
    /// not fit a value array (4 GiB, the reach of a value address).
    pub(crate) fn value_end(&self) -> std::result::Result<u64, String> {
        let mut at = u64::from(self.value_base);
        for op in &self.ops {
            if let OpValue::Array { len, .. } = &op.value {
                at += VALUE_RECORD_HEADER as u64 + u64::from(*len);
            }
        }
        if at > u64::from(u32::MAX) {
            return Err(format!("value records end at {at}, past 4 GiB"));
        }
        Ok(at)
    }

    /// Parses a record; corruption names `location` and what was bad.
    pub(crate) fn decode(src: &[u8], location: &str) -> Result<LabRecord> {
        let bad = |what: &str| Error::corruption(location, format!("LAB record: bad {what}"));
        let mut d = Decoder::new(src);
        let first_seq = d.fixed64().ok_or_else(|| bad("header"))?;
        let count = d.fixed32().ok_or_else(|| bad("header"))?;
        let flags = d.fixed32().ok_or_else(|| bad("header"))?;
        let memtable = d.fixed64().ok_or_else(|| bad("header"))?;
        let value_base = d.fixed32().ok_or_else(|| bad("header"))?;
        if flags & !(FLAG_SYNCED | FLAG_VALUES_INLINE) != 0 {
            return Err(bad(&format!("flags {flags:#x}")));
        }
        let values_inline = flags & FLAG_VALUES_INLINE != 0;
        // Each operation takes at least 3 bytes: a count beyond that is damage, and is refused
        // before anything is allocated for it.
        if count == 0 || count as usize > src.len() / 3 {
            return Err(bad(&format!("operation count {count}")));
        }
        let mut ops = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let vtype = d
                .u8()
                .and_then(ValueType::from_u8)
                .ok_or_else(|| bad("operation type"))?;
            let hot = d.u8().ok_or_else(|| bad("operation"))?;
            let key = d.length_prefixed().ok_or_else(|| bad("key"))?.to_vec();
            let value = match hot {
                0 if vtype == ValueType::Deletion => OpValue::Array {
                    len: 0,
                    bytes: None,
                },
                0 => {
                    let len = d.varint32().ok_or_else(|| bad("value length"))?;
                    let bytes = if values_inline {
                        Some(d.bytes(len as usize).ok_or_else(|| bad("value"))?.to_vec())
                    } else {
                        None
                    };
                    OpValue::Array { len, bytes }
                }
                1 => OpValue::Hot {
                    slot: d.fixed64().ok_or_else(|| bad("hot slot"))?,
                },
                _ => return Err(bad(&format!("hot flag {hot}"))),
            };
            ops.push(LabOp { vtype, key, value });
        }
        if !d.is_empty() {
            return Err(bad("length (bytes after the last operation)"));
        }
        let r = LabRecord {
            first_seq,
            synced: flags & FLAG_SYNCED != 0,
            values_inline,
            memtable,
            value_base,
            ops,
        };
        // A decoded tombstone has no inline bytes; `check` accepts that form.
        r.check().map_err(|e| bad(&e))?;
        Ok(r)
    }
}

/// The first record of WAL-buffer half `number`: its magic and number, so a half read under
/// another name (or a reused chunk) is recognised.
pub(crate) fn encode_wbuf_header(number: u64) -> Vec<u8> {
    let mut b = WBUF_MAGIC.to_vec();
    b.extend_from_slice(&number.to_le_bytes());
    b
}

/// Checks the first record of WAL-buffer half `number`; anything else is corruption naming
/// `location`.
pub(crate) fn decode_wbuf_header(src: &[u8], number: u64, location: &str) -> Result<()> {
    if src.len() != 16 || &src[..8] != WBUF_MAGIC {
        return Err(Error::corruption(
            location,
            "WAL-buffer half: bad first record (magic)",
        ));
    }
    let n = u64::from_le_bytes(src[8..].try_into().expect("8 bytes"));
    if n != number {
        return Err(Error::corruption(
            location,
            format!("WAL-buffer half: first record names half {n}, not {number}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(values_inline: bool) -> LabRecord {
        let put = |key: &[u8], v: &[u8]| LabOp {
            vtype: ValueType::Value,
            key: key.to_vec(),
            value: OpValue::Array {
                len: v.len() as u32,
                bytes: values_inline.then(|| v.to_vec()),
            },
        };
        LabRecord {
            first_seq: 1000,
            synced: true,
            values_inline,
            memtable: 42,
            value_base: 32,
            ops: vec![
                put(b"apple", b"red"),
                LabOp {
                    vtype: ValueType::Deletion,
                    key: b"banana".to_vec(),
                    value: OpValue::Array {
                        len: 0,
                        bytes: None,
                    },
                },
                LabOp {
                    vtype: ValueType::Value,
                    key: b"hot".to_vec(),
                    value: OpValue::Hot { slot: 8192 },
                },
                put(b"", b""),
                put(b"cherry", &[7u8; 300]),
            ],
        }
    }

    #[test]
    fn round_trip_with_and_without_values_and_offsets() {
        for inline in [false, true] {
            let r = sample(inline);
            let b = r.encode().unwrap();
            assert_eq!(LabRecord::decode(&b, "k").unwrap(), r);
            // Records are consecutive from value_base; the hot op has none.
            assert_eq!(
                r.value_offsets(),
                vec![
                    Some(32),
                    Some(32 + 16 + 3),
                    None,
                    Some(32 + 19 + 16),
                    Some(32 + 19 + 32)
                ]
            );
            assert_eq!(r.value_end().unwrap(), 32 + 19 + 16 + 16 + 316);
            // Every strict prefix and any trailing byte is corruption.
            for cut in 0..b.len() {
                let e = LabRecord::decode(&b[..cut], "k").unwrap_err();
                assert!(e.is_corruption(), "{cut}: {e}");
            }
            let mut longer = b.clone();
            longer.push(0);
            assert!(LabRecord::decode(&longer, "k").unwrap_err().is_corruption());
            // A flipped bit decodes to another record or is corruption, never a panic (the
            // record log's checksum catches the rest).
            for bit in 0..b.len() * 8 {
                let mut d = b.clone();
                d[bit / 8] ^= 1 << (bit % 8);
                match LabRecord::decode(&d, "k") {
                    Ok(other) => assert_ne!(other, r, "bit {bit}"),
                    Err(e) => assert!(e.is_corruption(), "bit {bit}: {e}"),
                }
            }
        }
        // Without inline values a put carries its length only: the record is much shorter.
        assert!(sample(false).encode().unwrap().len() + 300 < sample(true).encode().unwrap().len());
    }

    #[test]
    fn structural_damage_is_named() {
        let b = sample(false).encode().unwrap();
        let corrupt = |f: &dyn Fn(&mut Vec<u8>)| {
            let mut d = b.clone();
            f(&mut d);
            LabRecord::decode(&d, "000042.log").unwrap_err()
        };
        // Unknown flag, zero count, a count too large to be real, sequence 0, type 2, hot 2.
        for e in [
            corrupt(&|d| d[12] |= 4),
            corrupt(&|d| d[8..12].copy_from_slice(&0u32.to_le_bytes())),
            corrupt(&|d| d[8..12].copy_from_slice(&u32::MAX.to_le_bytes())),
            corrupt(&|d| d[..8].copy_from_slice(&0u64.to_le_bytes())),
            corrupt(&|d| d[..8].copy_from_slice(&MAX_SEQUENCE.to_le_bytes())),
            corrupt(&|d| d[LAB_RECORD_HEADER] = 2),
            corrupt(&|d| d[LAB_RECORD_HEADER + 1] = 2),
            // Value records that would pass 4 GiB.
            corrupt(&|d| d[24..28].copy_from_slice(&(u32::MAX - 20).to_le_bytes())),
        ] {
            assert!(e.is_corruption(), "{e}");
            assert!(e.to_string().contains("000042.log"), "{e}");
        }
    }

    #[test]
    fn encode_refuses_records_that_break_the_rules() {
        let mut empty = sample(false);
        empty.ops.clear();
        let mut mixed = sample(false);
        mixed.ops[0].value = OpValue::Array {
            len: 3,
            bytes: Some(b"red".to_vec()),
        };
        let mut short = sample(true);
        short.ops[0].value = OpValue::Array {
            len: 4,
            bytes: Some(b"red".to_vec()),
        };
        let mut del = sample(false);
        del.ops[1].value = OpValue::Array {
            len: 1,
            bytes: None,
        };
        let mut far = sample(false);
        far.value_base = u32::MAX - 10;
        for r in [empty, mixed, short, del, far] {
            assert!(
                matches!(r.encode(), Err(Error::InvalidArgument(_))),
                "{r:?}"
            );
        }
    }

    fn arb_op(inline: bool) -> impl proptest::strategy::Strategy<Value = LabOp> {
        use proptest::prelude::*;
        (
            0u8..3,
            prop::collection::vec(any::<u8>(), 0..40),
            prop::collection::vec(any::<u8>(), 0..200),
            any::<u64>(),
        )
            .prop_map(move |(kind, key, value, slot)| match kind {
                0 => LabOp {
                    vtype: ValueType::Value,
                    key,
                    value: OpValue::Array {
                        len: value.len() as u32,
                        bytes: inline.then_some(value),
                    },
                },
                1 => LabOp {
                    vtype: ValueType::Deletion,
                    key,
                    value: OpValue::Array {
                        len: 0,
                        bytes: None,
                    },
                },
                _ => LabOp {
                    vtype: if slot % 2 == 0 {
                        ValueType::Value
                    } else {
                        ValueType::Deletion
                    },
                    key,
                    value: OpValue::Hot { slot },
                },
            })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, ..Default::default() })]

        /// Any group round-trips, its value records tile the array from `value_base` without a
        /// gap, and any prefix of it is corruption.
        #[test]
        fn any_group_round_trips(
            inline in proptest::prelude::any::<bool>(),
            ops in proptest::collection::vec(arb_op(false), 1..20),
            first_seq in 1u64..(1 << 50),
            memtable in proptest::prelude::any::<u64>(),
            value_base in 32u32..(1 << 20),
            synced in proptest::prelude::any::<bool>(),
        ) {
            // Give puts their bytes when the record carries them.
            let ops: Vec<LabOp> = ops
                .into_iter()
                .map(|mut op| {
                    if let OpValue::Array { len, bytes } = &mut op.value {
                        if inline && op.vtype == ValueType::Value {
                            *bytes = Some(vec![0xa5; *len as usize]);
                        }
                    }
                    op
                })
                .collect();
            let r = LabRecord { first_seq, synced, values_inline: inline, memtable, value_base, ops };
            let b = r.encode().unwrap();
            proptest::prop_assert_eq!(&LabRecord::decode(&b, "k").unwrap(), &r);
            let mut at = u64::from(value_base);
            for (op, off) in r.ops.iter().zip(r.value_offsets()) {
                match (&op.value, off) {
                    (OpValue::Array { len, .. }, Some(o)) => {
                        proptest::prop_assert_eq!(o, at);
                        at += value_record_len(*len as usize);
                    }
                    (OpValue::Hot { .. }, None) => {}
                    _ => proptest::prop_assert!(false, "offset for the wrong kind of op"),
                }
            }
            proptest::prop_assert_eq!(r.value_end().unwrap(), at);
            for cut in 0..b.len() {
                proptest::prop_assert!(LabRecord::decode(&b[..cut], "k").unwrap_err().is_corruption());
            }
        }
    }

    #[test]
    fn wbuf_header_round_trip_and_damage() {
        let h = encode_wbuf_header(17);
        decode_wbuf_header(&h, 17, "000017.wbuf").unwrap();
        assert!(decode_wbuf_header(&h, 18, "w").unwrap_err().is_corruption());
        for cut in 0..h.len() {
            assert!(decode_wbuf_header(&h[..cut], 17, "w")
                .unwrap_err()
                .is_corruption());
        }
        for bit in 0..h.len() * 8 {
            let mut d = h.clone();
            d[bit / 8] ^= 1 << (bit % 8);
            assert!(decode_wbuf_header(&d, 17, "w").unwrap_err().is_corruption());
        }
    }
}
