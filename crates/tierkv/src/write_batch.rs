//! `WriteBatch`: a group of puts and deletes applied atomically.
//!
//! The encoded form is also the WAL record payload (format in `docs/FORMATS.md`):
//! `sequence: fixed64 | count: fixed32 | count x record`, where a record is
//! `type: u8 (1 = put, 0 = delete) | key: varint32 length + bytes | [value: varint32 length + bytes]`.
//! The top bit of `count` is set on a WAL record whose group was synced before it was
//! acknowledged (recovery uses it to tell a power failure's torn log from damage).

use crate::format::{SequenceNumber, ValueType};
use crate::util::coding::{put_length_prefixed, Decoder};
use crate::{Error, Result};

const HEADER_LEN: usize = 12;
/// The top bit of the count field: the record's group was synced before acknowledgement.
const SYNCED_FLAG: u32 = 1 << 31;

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
    pub(crate) fn encode(&mut self, first_sequence: SequenceNumber, synced: bool) -> &[u8] {
        debug_assert!(self.count < SYNCED_FLAG, "validated");
        let count = self.count | if synced { SYNCED_FLAG } else { 0 };
        self.rep[..8].copy_from_slice(&first_sequence.to_le_bytes());
        self.rep[8..HEADER_LEN].copy_from_slice(&count.to_le_bytes());
        &self.rep
    }

    /// Checks every key and value against the limits; `InvalidArgument` names the offender.
    pub(crate) fn validate(&self, max_key: usize, max_value: usize) -> Result<()> {
        if self.count >= SYNCED_FLAG {
            return Err(Error::InvalidArgument(format!(
                "a batch of {} operations; at most {} are allowed",
                self.count,
                SYNCED_FLAG - 1
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
    let count = raw & !SYNCED_FLAG;
    Ok(DecodedBatch {
        first_sequence,
        count,
        synced: raw & SYNCED_FLAG != 0,
        ops: BatchOps {
            d,
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
}
