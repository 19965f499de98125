//! Internal keys: how a user key, a sequence number and an operation type are packed together.
//!
//! An internal key is `user_key ++ fixed64_le((sequence << 8) | value_type)`. Internal keys sort
//! by user key ascending (bytewise), then by sequence descending, then by type descending, so
//! that for one user key the newest version comes first. Every sorted structure below the write
//! batch (memtable, SST, merging iterator) orders entries by [`compare_internal`].

use std::cmp::Ordering;

/// A sequence number: every write gets the next one; snapshots are sequence numbers.
pub type SequenceNumber = u64;

/// The largest sequence number that fits in the 56 bits of an internal key trailer.
pub const MAX_SEQUENCE: SequenceNumber = (1 << 56) - 1;

/// Length of the trailer appended to a user key.
pub const TRAILER_LEN: usize = 8;

/// What an internal key records about its user key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[repr(u8)]
pub enum ValueType {
    /// A tombstone: the key was deleted at this sequence.
    Deletion = 0,
    /// A value was put at this sequence.
    Value = 1,
}

impl ValueType {
    /// Decodes a type byte; `None` for unknown values (the caller reports corruption).
    pub fn from_u8(b: u8) -> Option<ValueType> {
        match b {
            0 => Some(ValueType::Deletion),
            1 => Some(ValueType::Value),
            _ => None,
        }
    }
}

/// The type used when building a seek key: the highest type, so that a seek for
/// `(key, seq)` lands on the newest entry with sequence `<= seq`.
pub const VALUE_TYPE_FOR_SEEK: ValueType = ValueType::Value;

/// Packs a sequence and a type into a trailer.
pub fn pack_trailer(seq: SequenceNumber, t: ValueType) -> u64 {
    debug_assert!(seq <= MAX_SEQUENCE);
    (seq << 8) | t as u64
}

/// Appends the internal key for `(user_key, seq, t)` to `dst`.
pub fn append_internal_key(dst: &mut Vec<u8>, user_key: &[u8], seq: SequenceNumber, t: ValueType) {
    dst.extend_from_slice(user_key);
    dst.extend_from_slice(&pack_trailer(seq, t).to_le_bytes());
}

/// Builds the internal key for `(user_key, seq, t)`.
pub fn make_internal_key(user_key: &[u8], seq: SequenceNumber, t: ValueType) -> Vec<u8> {
    let mut v = Vec::with_capacity(user_key.len() + TRAILER_LEN);
    append_internal_key(&mut v, user_key, seq, t);
    v
}

/// The seek key that finds the newest version of `user_key` visible at `snapshot`.
pub fn lookup_key(user_key: &[u8], snapshot: SequenceNumber) -> Vec<u8> {
    make_internal_key(user_key, snapshot, VALUE_TYPE_FOR_SEEK)
}

/// A decoded view of an internal key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParsedInternalKey<'a> {
    /// The user's key.
    pub user_key: &'a [u8],
    /// The sequence number of the write.
    pub sequence: SequenceNumber,
    /// Value or deletion.
    pub value_type: ValueType,
}

/// Splits an internal key; `None` if it is too short or has an unknown type byte.
pub fn parse_internal_key(ikey: &[u8]) -> Option<ParsedInternalKey<'_>> {
    if ikey.len() < TRAILER_LEN {
        return None;
    }
    let (user_key, trailer) = ikey.split_at(ikey.len() - TRAILER_LEN);
    let trailer = u64::from_le_bytes(trailer.try_into().ok()?);
    Some(ParsedInternalKey {
        user_key,
        sequence: trailer >> 8,
        value_type: ValueType::from_u8(trailer as u8)?,
    })
}

/// The user key part of an internal key. REQUIRES: `ikey.len() >= TRAILER_LEN`.
pub fn user_key(ikey: &[u8]) -> &[u8] {
    &ikey[..ikey.len() - TRAILER_LEN]
}

/// The trailer of an internal key. REQUIRES: `ikey.len() >= TRAILER_LEN`.
pub fn trailer(ikey: &[u8]) -> u64 {
    let t = &ikey[ikey.len() - TRAILER_LEN..];
    u64::from_le_bytes(t.try_into().expect("8-byte trailer"))
}

/// The total order on internal keys: user key ascending, then trailer descending.
/// Keys shorter than a trailer (only possible in corrupt data, which decoders reject first)
/// compare bytewise so that the order stays total.
pub fn compare_internal(a: &[u8], b: &[u8]) -> Ordering {
    if a.len() < TRAILER_LEN || b.len() < TRAILER_LEN {
        return a.cmp(b);
    }
    match user_key(a).cmp(user_key(b)) {
        Ordering::Equal => trailer(b).cmp(&trailer(a)),
        o => o,
    }
}

/// An internal key (held as `K`: `Vec<u8>`, `Box<[u8]>`) ordered as [`compare_internal`]
/// orders internal keys, for ordered maps over them (memtable indexes, skiplist towers).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct OrderedKey<K>(pub K);

impl<K: AsRef<[u8]> + Eq> Ord for OrderedKey<K> {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_internal(self.0.as_ref(), other.0.as_ref())
    }
}

impl<K: AsRef<[u8]> + Eq> PartialOrd for OrderedKey<K> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newest_version_sorts_first() {
        let a5 = make_internal_key(b"a", 5, ValueType::Value);
        let a9 = make_internal_key(b"a", 9, ValueType::Deletion);
        let b1 = make_internal_key(b"b", 1, ValueType::Value);
        assert_eq!(compare_internal(&a9, &a5), Ordering::Less);
        assert_eq!(compare_internal(&a5, &b1), Ordering::Less);
        // A lookup at snapshot 7 sorts after the version at 9 and before the one at 5.
        let look = lookup_key(b"a", 7);
        assert_eq!(compare_internal(&a9, &look), Ordering::Less);
        assert_eq!(compare_internal(&look, &a5), Ordering::Less);
        let p = parse_internal_key(&a9).unwrap();
        assert_eq!(
            (p.user_key, p.sequence, p.value_type),
            (&b"a"[..], 9, ValueType::Deletion)
        );
        assert!(parse_internal_key(b"short").is_none());
        let mut bad = a5.clone();
        *bad.last_mut().unwrap() = 0; // high byte of the sequence, fine
        bad[1] = 7; // unknown type byte
        assert!(parse_internal_key(&bad).is_none());
    }
}
