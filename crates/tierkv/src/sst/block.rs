//! A decoded, immutable block and a forward iterator over it.
//!
//! A [`Block`] owns its contents (trailer stripped, checksum already verified by the reader) and
//! is shared as `Arc<Block>` between the block cache and iterators. The restart array is read in
//! place, lazily, with every offset bounds-checked.
//!
//! Thread-safety: `Block` is immutable and `Send + Sync`; a [`BlockIter`] has one owner.
//!
//! Invariants: a `Block` always has a well-formed restart-array header (at least one restart and
//! the array inside the contents); everything else is checked as it is decoded, and a damaged
//! entry makes the iterator invalid with a corruption reason in [`BlockIter::status`], never a
//! panic. Keys are internal keys and are compared with [`compare_internal`].

use crate::format::{compare_internal, TRAILER_LEN};
use crate::util::coding::{decode_fixed32, decode_varint32};
use std::cmp::Ordering;
use std::sync::Arc;

/// An immutable block of sorted entries.
#[derive(Debug)]
pub struct Block {
    data: Vec<u8>,
    restarts_offset: usize,
    num_restarts: usize,
}

impl Block {
    /// Wraps block contents (trailer removed); `Err(reason)` if the restart array is malformed.
    pub fn new(data: Vec<u8>) -> Result<Block, &'static str> {
        let n = data.len();
        let num_restarts = decode_fixed32(n.checked_sub(4).map(|i| &data[i..]).unwrap_or(&[]))
            .ok_or("block too short for its restart count")? as usize;
        if num_restarts == 0 {
            return Err("block has no restart points");
        }
        let max = (n - 4) / 4;
        if num_restarts > max {
            return Err("restart count exceeds block size");
        }
        let restarts_offset = n - 4 - 4 * num_restarts;
        Ok(Block {
            data,
            restarts_offset,
            num_restarts,
        })
    }

    /// Bytes of contents (what the block cache charges).
    pub fn size(&self) -> usize {
        self.data.len()
    }

    fn restart(&self, i: usize) -> Result<usize, &'static str> {
        let off = decode_fixed32(&self.data[self.restarts_offset + 4 * i..])
            .ok_or("restart array truncated")? as usize;
        if off >= self.restarts_offset && !(off == 0 && self.restarts_offset == 0) {
            return Err("restart offset past the entries");
        }
        Ok(off)
    }

    /// Checks that the restart offsets are in bounds and strictly increasing (used by verify).
    pub fn check_restarts(&self) -> Result<(), &'static str> {
        let mut prev = None;
        for i in 0..self.num_restarts {
            let r = self.restart(i)?;
            if prev.is_some_and(|p| r <= p) {
                return Err("restart offsets not increasing");
            }
            prev = Some(r);
        }
        Ok(())
    }

    /// Decodes the entry header at `off`: `(shared, non_shared, value_len, header_len)`, checked
    /// so that the key delta and the value lie before the restart array.
    #[inline]
    fn entry_header(&self, off: usize) -> Result<(usize, usize, usize, usize), &'static str> {
        let limit = self.restarts_offset;
        let p = self
            .data
            .get(off..limit)
            .ok_or("entry offset out of range")?;
        let (shared, non_shared, value_len, hl);
        if p.len() >= 3 && (p[0] | p[1] | p[2]) < 0x80 {
            // Fast path: all three lengths fit in one byte.
            (shared, non_shared, value_len, hl) = (p[0] as usize, p[1] as usize, p[2] as usize, 3);
        } else {
            let (a, n1) = decode_varint32(p).ok_or("bad entry header")?;
            let (b, n2) = decode_varint32(&p[n1..]).ok_or("bad entry header")?;
            let (c, n3) = decode_varint32(&p[n1 + n2..]).ok_or("bad entry header")?;
            (shared, non_shared, value_len, hl) =
                (a as usize, b as usize, c as usize, n1 + n2 + n3);
        }
        if (p.len() - hl) < non_shared || (p.len() - hl - non_shared) < value_len {
            return Err("entry extends past the entries area");
        }
        Ok((shared, non_shared, value_len, hl))
    }
}

/// A forward iterator over one block. Reuses its key buffer; holds the block by `Arc`.
#[derive(Debug)]
pub struct BlockIter {
    block: Arc<Block>,
    /// Offset of the next entry to decode.
    next_off: usize,
    key: Vec<u8>,
    value_start: usize,
    value_end: usize,
    valid: bool,
    err: Option<&'static str>,
}

impl BlockIter {
    /// An unpositioned iterator over `block`, reusing `key_buf` for keys.
    pub fn new(block: Arc<Block>, mut key_buf: Vec<u8>) -> BlockIter {
        key_buf.clear();
        BlockIter {
            block,
            next_off: 0,
            key: key_buf,
            value_start: 0,
            value_end: 0,
            valid: false,
            err: None,
        }
    }

    /// Gives back the key buffer for reuse.
    pub fn into_key_buffer(self) -> Vec<u8> {
        self.key
    }

    /// True when positioned on an entry.
    #[inline]
    pub fn valid(&self) -> bool {
        self.valid
    }

    /// The corruption met, if any (the iterator is then invalid).
    pub fn status(&self) -> Option<&'static str> {
        self.err
    }

    /// The current key. REQUIRES: `valid()`.
    #[inline]
    pub fn key(&self) -> &[u8] {
        debug_assert!(self.valid);
        &self.key
    }

    /// The current value. REQUIRES: `valid()`.
    #[inline]
    pub fn value(&self) -> &[u8] {
        debug_assert!(self.valid);
        &self.block.data[self.value_start..self.value_end]
    }

    fn fail(&mut self, reason: &'static str) {
        self.valid = false;
        self.err = Some(reason);
        self.key.clear();
    }

    /// Decodes the entry at `next_off` into the key buffer; false at the end or on error.
    #[inline]
    fn parse_next(&mut self) -> bool {
        let off = self.next_off;
        if off >= self.block.restarts_offset {
            self.valid = false;
            return false;
        }
        let (shared, non_shared, value_len, hl) = match self.block.entry_header(off) {
            Ok(h) => h,
            Err(r) => {
                self.fail(r);
                return false;
            }
        };
        if shared > self.key.len() {
            self.fail("shared prefix longer than the previous key");
            return false;
        }
        let ks = off + hl;
        self.key.truncate(shared);
        self.key
            .extend_from_slice(&self.block.data[ks..ks + non_shared]);
        if self.key.len() < TRAILER_LEN {
            self.fail("key shorter than an internal-key trailer");
            return false;
        }
        self.value_start = ks + non_shared;
        self.value_end = self.value_start + value_len;
        self.next_off = self.value_end;
        self.valid = true;
        true
    }

    fn seek_to_restart(&mut self, i: usize) -> bool {
        match self.block.restart(i) {
            Ok(off) => {
                self.key.clear();
                self.next_off = off;
                true
            }
            Err(r) => {
                self.fail(r);
                false
            }
        }
    }

    /// Positions on the first entry.
    pub fn seek_to_first(&mut self) {
        if self.err.is_some() {
            return;
        }
        if self.seek_to_restart(0) {
            self.parse_next();
        }
    }

    /// Advances. REQUIRES: `valid()`.
    #[inline]
    pub fn next(&mut self) {
        debug_assert!(self.valid);
        if self.valid {
            self.parse_next();
        }
    }

    /// The full key stored at restart point `i` (restart entries share no prefix).
    fn restart_key(&self, i: usize) -> Result<&[u8], &'static str> {
        let off = self.block.restart(i)?;
        let (shared, non_shared, _, hl) = self.block.entry_header(off)?;
        if shared != 0 {
            return Err("restart entry shares a prefix");
        }
        Ok(&self.block.data[off + hl..off + hl + non_shared])
    }

    /// Positions on the first entry whose key is `>= target` (invalid if none).
    pub fn seek(&mut self, target: &[u8]) {
        if self.err.is_some() {
            return;
        }
        // Binary search for the last restart point whose key is < target.
        let (mut lo, mut hi) = (0usize, self.block.num_restarts - 1);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            match self.restart_key(mid) {
                Ok(k) => {
                    if compare_internal(k, target) == Ordering::Less {
                        lo = mid;
                    } else {
                        hi = mid - 1;
                    }
                }
                Err(r) => {
                    self.fail(r);
                    return;
                }
            }
        }
        if !self.seek_to_restart(lo) {
            return;
        }
        while self.parse_next() {
            if compare_internal(&self.key, target) != Ordering::Less {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{make_internal_key, ValueType};
    use crate::sst::block_builder::BlockBuilder;

    fn ik(k: &str, seq: u64, t: ValueType) -> Vec<u8> {
        make_internal_key(k.as_bytes(), seq, t)
    }

    fn entries(n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut v = Vec::new();
        for i in 0..n {
            let uk = format!("key{:05}", i * 3);
            // Some user keys get several versions, newest first; some are deletions.
            let versions = if i % 7 == 0 { 3 } else { 1 };
            for s in 0..versions {
                let seq = 100 - s as u64;
                if i % 5 == 0 && s == 0 {
                    v.push((ik(&uk, seq, ValueType::Deletion), Vec::new()));
                } else {
                    v.push((
                        ik(&uk, seq, ValueType::Value),
                        format!("v{i}.{s}").into_bytes(),
                    ));
                }
            }
        }
        v
    }

    fn build(e: &[(Vec<u8>, Vec<u8>)], interval: usize) -> Arc<Block> {
        let mut b = BlockBuilder::new(interval);
        for (k, v) in e {
            b.add(k, v);
        }
        Arc::new(Block::new(b.finish().to_vec()).unwrap())
    }

    #[test]
    fn round_trip_and_seek_several_intervals() {
        let e = entries(200);
        for interval in [1, 2, 3, 16, 1000] {
            let block = build(&e, interval);
            let mut it = BlockIter::new(block.clone(), Vec::new());
            it.seek_to_first();
            let mut got = Vec::new();
            while it.valid() {
                got.push((it.key().to_vec(), it.value().to_vec()));
                it.next();
            }
            assert!(it.status().is_none());
            assert_eq!(got, e, "interval {interval}");
            block.check_restarts().unwrap();

            // Seek to every key exactly, and to a key just after each one.
            for (i, (k, v)) in e.iter().enumerate() {
                it.seek(k);
                assert!(it.valid());
                assert_eq!((it.key(), it.value()), (&k[..], &v[..]));
                let mut after = k.clone();
                after.insert(after.len() - TRAILER_LEN, 0); // user key ++ 0x00: between keys
                it.seek(&after);
                if i + 1 < e.len() && after < e[i + 1].0 {
                    assert!(it.valid());
                }
                if it.valid() {
                    assert!(compare_internal(it.key(), &after).is_ge());
                    let expect = e.iter().find(|(x, _)| compare_internal(x, &after).is_ge());
                    assert_eq!(Some(it.key()), expect.map(|x| &x.0[..]));
                }
            }
            // Before first, past last.
            it.seek(&ik("a", 5, ValueType::Value));
            assert_eq!(it.key(), &e[0].0[..]);
            it.seek(&ik("z", 5, ValueType::Value));
            assert!(!it.valid());
            assert!(it.status().is_none());
            // Multiple versions: a lookup at seq 99 for key00000 skips the version at 100.
            it.seek(&ik("key00000", 99, ValueType::Value));
            assert_eq!(it.key(), &ik("key00000", 99, ValueType::Value)[..]);
            it.seek(&ik("key00000", 50, ValueType::Value));
            assert_eq!(it.key(), &e[3].0[..]);
        }
    }

    #[test]
    fn empty_block_and_damage() {
        let mut b = BlockBuilder::new(4);
        let block = Arc::new(Block::new(b.finish().to_vec()).unwrap());
        let mut it = BlockIter::new(block, Vec::new());
        it.seek_to_first();
        assert!(!it.valid() && it.status().is_none());
        it.seek(b"anything-longer-than-8");
        assert!(!it.valid() && it.status().is_none());

        assert!(Block::new(vec![]).is_err());
        assert!(Block::new(vec![0, 0, 0, 0]).is_err());
        assert!(Block::new(vec![0xff, 0xff, 0xff, 0x7f]).is_err());

        // Every single-byte change of a block must never panic; keys decoded stay >= 8 bytes.
        let e = entries(20);
        let good = {
            let mut b = BlockBuilder::new(3);
            for (k, v) in &e {
                b.add(k, v);
            }
            b.finish().to_vec()
        };
        for i in 0..good.len() {
            for x in [0x01u8, 0x80, 0xff] {
                let mut bad = good.clone();
                bad[i] ^= x;
                let Ok(block) = Block::new(bad) else { continue };
                let block = Arc::new(block);
                let _ = block.check_restarts();
                let mut it = BlockIter::new(block.clone(), Vec::new());
                it.seek_to_first();
                let mut n = 0;
                while it.valid() && n < 10_000 {
                    assert!(it.key().len() >= TRAILER_LEN);
                    let _ = it.value();
                    it.next();
                    n += 1;
                }
                for (k, _) in &e {
                    it.seek(k);
                    if it.valid() {
                        let _ = (it.key(), it.value());
                    }
                }
            }
        }
    }
}
