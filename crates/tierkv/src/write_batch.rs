//! `WriteBatch`: a group of puts and deletes applied atomically.
//!
//! The encoded form is also the WAL record payload (format in `docs/FORMATS.md`):
//! `sequence: fixed64 | count: fixed32 | count x record`, where a record is
//! `type: u8 (1 = put, 0 = delete) | key: varint32 length + bytes | [value: varint32 length + bytes]`.
//! The top bit of `count` is set on a WAL record whose group was synced before it was
//! acknowledged (recovery uses it to tell a power failure's torn log from damage). The next bit
//! is set on a record that unlogged writes (`WriteOptions::disable_wal`) preceded: the record
//! then ends with a fixed64, the sequence numbers they took since the previous record appended
//! to a WAL, so that recovery tells their gap from a log cut at a record boundary.

use crate::format::{SequenceNumber, ValueType};
use crate::util::coding::{put_length_prefixed, Decoder};
use crate::{Error, Result};

const HEADER_LEN: usize = 12;
/// The top bit of the count field: the record's group was synced before acknowledgement.
const SYNCED_FLAG: u32 = 1 << 31;
/// The next bit: the record ends with a fixed64 counting the sequence numbers unlogged writes
/// took since the previous record appended to a WAL.
const UNLOGGED_FLAG: u32 = 1 << 30;
/// The bits of the count field that hold the operation count.
const COUNT_MASK: u32 = UNLOGGED_FLAG - 1;

/// An ordered list of puts and deletes that the database applies atomically: after a crash,
/// either all of them are present or none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteBatch {
    rep: Vec<u8>,
    count: u32,
    user_bytes: u64,
}

impl Default for WriteBatch {
    fn default() -> Self {
        WriteBatch::new()
    }
}

/// One operation of a decoded batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchOp<'a> {
    /// Put `key` -> `value`.
    Put(&'a [u8], &'a [u8]),
    /// Delete `key`.
    Delete(&'a [u8]),
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> Self {
        WriteBatch {
            rep: vec![0; HEADER_LEN],
            count: 0,
            user_bytes: 0,
        }
    }

    /// An empty batch with room for `bytes` bytes of operations.
    pub fn with_capacity(bytes: usize) -> Self {
        let mut rep = Vec::with_capacity(HEADER_LEN + bytes);
        rep.resize(HEADER_LEN, 0);
        WriteBatch {
            rep,
            count: 0,
            user_bytes: 0,
        }
    }

    /// Adds a put.
    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        self.rep.push(ValueType::Value as u8);
        put_length_prefixed(&mut self.rep, key);
        put_length_prefixed(&mut self.rep, value);
        self.count += 1;
        self.user_bytes += (key.len() + value.len()) as u64;
    }

    /// Adds a delete.
    pub fn delete(&mut self, key: &[u8]) {
        self.rep.push(ValueType::Deletion as u8);
        put_length_prefixed(&mut self.rep, key);
        self.count += 1;
        self.user_bytes += key.len() as u64;
    }

    /// Number of operations.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// True when the batch holds no operation.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Removes every operation.
    pub fn clear(&mut self) {
        self.rep.truncate(HEADER_LEN);
        self.count = 0;
        self.user_bytes = 0;
    }

    /// Key + value bytes of the operations (the "user bytes" of write amplification).
    pub fn user_bytes(&self) -> u64 {
        self.user_bytes
    }

    /// Size of the encoded batch.
    pub fn encoded_len(&self) -> usize {
        self.rep.len()
    }

    /// Appends every operation of `other`.
    pub fn append(&mut self, other: &WriteBatch) {
        self.rep.extend_from_slice(&other.rep[HEADER_LEN..]);
        self.count += other.count;
        self.user_bytes += other.user_bytes;
    }

    /// Stamps the first sequence number, the count and whether the record is synced before it
    /// is acknowledged into the header; returns the encoding.
    #[cfg(test)]
    pub(crate) fn encode(&mut self, first_sequence: SequenceNumber, synced: bool) -> &[u8] {
        self.stamp(first_sequence, synced, false);
        &self.rep
    }

    fn stamp(&mut self, first_sequence: SequenceNumber, synced: bool, unlogged: bool) {
        debug_assert!(self.count <= COUNT_MASK, "validated");
        let count = self.count
            | if synced { SYNCED_FLAG } else { 0 }
            | if unlogged { UNLOGGED_FLAG } else { 0 };
        self.rep[..8].copy_from_slice(&first_sequence.to_le_bytes());
        self.rep[8..HEADER_LEN].copy_from_slice(&count.to_le_bytes());
    }

    /// Hands `f` the batch's WAL record: the header stamped with the first sequence number and
    /// whether the record is synced before it is acknowledged, and, when unlogged writes took
    /// `unlogged_before` sequence numbers since the previous record appended to a WAL, the
    /// trailer that says so (module docs). The batch is left as it was.
    pub(crate) fn with_record<T>(
        &mut self,
        first_sequence: SequenceNumber,
        synced: bool,
        unlogged_before: u64,
        f: impl FnOnce(&[u8]) -> T,
    ) -> T {
        let unlogged = unlogged_before > 0;
        self.stamp(first_sequence, synced, unlogged);
        let len = self.rep.len();
        if unlogged {
            self.rep.extend_from_slice(&unlogged_before.to_le_bytes());
        }
        let r = f(&self.rep);
        self.rep.truncate(len);
        r
    }

    /// Checks every key and value against the limits; `InvalidArgument` names the offender.
    pub(crate) fn validate(&self, max_key: usize, max_value: usize) -> Result<()> {
        if self.count > COUNT_MASK {
            return Err(Error::InvalidArgument(format!(
                "a batch of {} operations; at most {COUNT_MASK} are allowed",
                self.count
            )));
        }
        for op in self.iter_ops() {
            let (key, value) = match op? {
                BatchOp::Put(k, v) => (k, v),
                BatchOp::Delete(k) => (k, &[][..]),
            };
            if key.len() > max_key {
                return Err(Error::InvalidArgument(format!(
                    "key of {} bytes exceeds max_key_size {max_key}",
                    key.len()
                )));
            }
            if value.len() > max_value {
                return Err(Error::InvalidArgument(format!(
                    "value of {} bytes exceeds max_value_size {max_value}",
                    value.len()
                )));
            }
        }
        Ok(())
    }

    /// Iterates the operations in order.
    pub fn iter_ops(&self) -> BatchOps<'_> {
        BatchOps {
            d: Decoder::new(&self.rep[HEADER_LEN..]),
            left: self.count,
            location: "write batch",
        }
    }
}

/// A decoded WAL record: first sequence number and the operations.
pub(crate) struct DecodedBatch<'a> {
    pub first_sequence: SequenceNumber,
    pub count: u32,
    /// The record's group was synced before it was acknowledged.
    pub synced: bool,
    /// Sequence numbers unlogged writes took between the previous record appended to a WAL
    /// and this one: the next record is expected that much past the previous one's end.
    pub unlogged_before: u64,
    pub ops: BatchOps<'a>,
}

/// Decodes an encoded batch (a WAL record); `location` names the log file in errors.
pub(crate) fn decode_batch<'a>(rep: &'a [u8], location: &'static str) -> Result<DecodedBatch<'a>> {
    let mut d = Decoder::new(rep);
    let (Some(first_sequence), Some(raw)) = (d.fixed64(), d.fixed32()) else {
        return Err(Error::corruption(
            location,
            "write batch shorter than its header",
        ));
    };
    let mut body = &rep[HEADER_LEN..];
    let mut unlogged_before = 0;
    if raw & UNLOGGED_FLAG != 0 {
        let Some(split) = body.len().checked_sub(8) else {
            return Err(Error::corruption(
                location,
                "write batch shorter than its unlogged-writes trailer",
            ));
        };
        let (ops, trailer) = body.split_at(split);
        unlogged_before = u64::from_le_bytes(trailer.try_into().expect("8 bytes"));
        if unlogged_before == 0 {
            return Err(Error::corruption(
                location,
                "write batch flagged as following unlogged writes counts none",
            ));
        }
        body = ops;
    }
    let count = raw & COUNT_MASK;
    Ok(DecodedBatch {
        first_sequence,
        count,
        synced: raw & SYNCED_FLAG != 0,
        unlogged_before,
        ops: BatchOps {
            d: Decoder::new(body),
            left: count,
            location,
        },
    })
}

/// Iterator over the operations of an encoded batch.
pub struct BatchOps<'a> {
    d: Decoder<'a>,
    left: u32,
    location: &'static str,
}

impl<'a> Iterator for BatchOps<'a> {
    type Item = Result<BatchOp<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            if !self.d.is_empty() {
                self.d = Decoder::new(&[]);
                return Some(Err(Error::corruption(
                    self.location,
                    "write batch has bytes past its counted records",
                )));
            }
            return None;
        }
        self.left -= 1;
        let bad = |why: &str| Some(Err(Error::corruption(self.location, why.to_string())));
        let op = match self.d.u8().and_then(ValueType::from_u8) {
            Some(ValueType::Value) => match (self.d.length_prefixed(), self.d.length_prefixed()) {
                (Some(k), Some(v)) => BatchOp::Put(k, v),
                _ => {
                    self.left = 0;
                    return bad("truncated put in write batch");
                }
            },
            Some(ValueType::Deletion) => match self.d.length_prefixed() {
                Some(k) => BatchOp::Delete(k),
                None => {
                    self.left = 0;
                    return bad("truncated delete in write batch");
                }
            },
            None => {
                self.left = 0;
                return bad("unknown record type in write batch");
            }
        };
        Some(Ok(op))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_corruption() {
        let mut b = WriteBatch::new();
        b.put(b"k1", b"v1");
        b.delete(b"k2");
        b.put(b"", b"");
        assert_eq!(b.len(), 3);
        assert_eq!(b.user_bytes(), 6);
        let synced = b.encode(7, true).to_vec();
        let d = decode_batch(&synced, "test").unwrap();
        assert_eq!((d.first_sequence, d.count, d.synced), (7, 3, true));
        let enc = b.encode(42, false).to_vec();
        let d = decode_batch(&enc, "test").unwrap();
        assert_eq!((d.first_sequence, d.count, d.synced), (42, 3, false));
        let ops: Vec<_> = d.ops.map(|o| o.unwrap()).collect();
        assert_eq!(
            ops,
            vec![
                BatchOp::Put(b"k1", b"v1"),
                BatchOp::Delete(b"k2"),
                BatchOp::Put(b"", b"")
            ]
        );
        // Truncations anywhere give an error, never a panic.
        for cut in 0..enc.len() {
            let r =
                decode_batch(&enc[..cut], "test").and_then(|d| d.ops.collect::<Result<Vec<_>>>());
            assert!(r.is_err(), "cut at {cut} decoded");
        }
        assert!(b.validate(1, 100).is_err());
        assert!(b.validate(2, 2).is_ok());
    }

    #[test]
    fn a_record_after_unlogged_writes_carries_their_count() {
        let mut b = WriteBatch::new();
        b.put(b"k1", b"v1");
        b.delete(b"k2");
        let plain = b.with_record(9, false, 0, |r| r.to_vec());
        assert_eq!(decode_batch(&plain, "test").unwrap().unlogged_before, 0);
        let rec = b.with_record(9, true, 1234, |r| r.to_vec());
        assert_eq!(rec.len(), plain.len() + 8);
        let d = decode_batch(&rec, "test").unwrap();
        assert_eq!(
            (d.first_sequence, d.count, d.synced, d.unlogged_before),
            (9, 2, true, 1234)
        );
        let ops: Vec<_> = d.ops.map(|o| o.unwrap()).collect();
        assert_eq!(
            ops,
            vec![BatchOp::Put(b"k1", b"v1"), BatchOp::Delete(b"k2")]
        );
        // The batch itself is unchanged: its operations decode as before.
        assert_eq!(b.iter_ops().count(), 2);
        assert_eq!(b.encoded_len(), plain.len());
        // Truncations anywhere give an error, never a panic.
        for cut in 0..rec.len() {
            let r =
                decode_batch(&rec[..cut], "test").and_then(|d| d.ops.collect::<Result<Vec<_>>>());
            assert!(r.is_err(), "cut at {cut} decoded");
        }
        // A flagged record whose trailer counts nothing is damage.
        let mut zero = rec.clone();
        let n = zero.len();
        zero[n - 8..].fill(0);
        assert!(decode_batch(&zero, "test").is_err());
    }
}
