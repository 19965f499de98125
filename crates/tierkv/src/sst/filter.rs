//! The table's full Bloom filter over user keys, and the 64-bit hash it probes with.
//!
//! Block layout: `bits[m] k:u8`, where `m >= 8` bytes hold `8 * m` bits and `k` (1..=30) is the
//! number of probes. A key with hash `h = hash64(user_key)` sets bits
//! `fastrange(h1 + i * h2, 8 * m)` for `i in 0..k`, with `h1 = h`, `h2 = h.rotate_left(32) | 1`
//! (wrapping arithmetic) and `fastrange(x, n) = (x as u128 * n as u128) >> 64`. Bit `b` is bit
//! `b % 8` of byte `b / 8`.
//!
//! Thread-safety: a [`BloomFilter`] is immutable and shared; a [`FilterBuilder`] has one owner.
//!
//! Invariants: [`hash64`] is part of the on-disk format: it must never change (it is defined on
//! little-endian byte loads only, so it is the same on every platform and run). A filter never
//! answers "absent" for a key that was added.

/// Multiplicative constants (from xxHash64 / Murmur3) used by [`hash64`].
const P1: u64 = 0x9e37_79b1_85eb_ca87;
const P2: u64 = 0xc2b2_ae3d_27d4_eb4f;
const P3: u64 = 0x1656_67b1_9e37_79f9;

#[inline]
fn fmix64(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^= h >> 33;
    h
}

/// The filter's stable 64-bit hash: `h = seed ^ len * P1`; for each 8-byte little-endian word
/// `w` (the tail zero-padded into a final word), `h = rotl(h ^ rotl(w * P2, 31) * P1, 27) * P1 +
/// P3`; the result is Murmur3's `fmix64(h)`.
pub fn hash64(data: &[u8]) -> u64 {
    let mut h = 0x5f2e_7b3a_9c41_d86f_u64 ^ (data.len() as u64).wrapping_mul(P1);
    let mut chunks = data.chunks_exact(8);
    let mix = |h: u64, w: u64| {
        (h ^ w.wrapping_mul(P2).rotate_left(31).wrapping_mul(P1))
            .rotate_left(27)
            .wrapping_mul(P1)
            .wrapping_add(P3)
    };
    for c in &mut chunks {
        h = mix(h, u64::from_le_bytes(c.try_into().expect("8 bytes")));
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        let mut w = [0u8; 8];
        w[..tail.len()].copy_from_slice(tail);
        h = mix(h, u64::from_le_bytes(w));
    }
    fmix64(h)
}

/// Probes for `bits_per_key`: `round(bits_per_key * ln 2)` clamped to 1..=30.
pub fn num_probes(bits_per_key: usize) -> u32 {
    ((bits_per_key as f64 * std::f64::consts::LN_2).round() as u32).clamp(1, 30)
}

#[inline]
fn fastrange(x: u64, n: u64) -> u64 {
    ((x as u128 * n as u128) >> 64) as u64
}

/// Collects key hashes and builds the filter block at the end of the table.
#[derive(Debug)]
pub struct FilterBuilder {
    bits_per_key: usize,
    hashes: Vec<u64>,
}

impl FilterBuilder {
    /// A builder for `bits_per_key >= 1` bits per key.
    pub fn new(bits_per_key: usize) -> FilterBuilder {
        debug_assert!(bits_per_key > 0);
        FilterBuilder {
            bits_per_key,
            hashes: Vec::new(),
        }
    }

    /// Adds a user key (the caller skips repeats of the same user key).
    pub fn add_key(&mut self, user_key: &[u8]) {
        self.hashes.push(hash64(user_key));
    }

    /// The size of the block [`FilterBuilder::finish`] would build now.
    pub fn size_estimate(&self) -> usize {
        let bits = (self.hashes.len() as u64 * self.bits_per_key as u64).max(64);
        bits.div_ceil(8) as usize + 1
    }

    /// Builds the filter block contents.
    pub fn finish(&self) -> Vec<u8> {
        let bits = (self.hashes.len() as u64 * self.bits_per_key as u64).max(64);
        let bytes = bits.div_ceil(8) as usize;
        let nbits = bytes as u64 * 8;
        let k = num_probes(self.bits_per_key);
        let mut out = vec![0u8; bytes + 1];
        for &h in &self.hashes {
            let delta = h.rotate_left(32) | 1;
            let mut g = h;
            for _ in 0..k {
                let b = fastrange(g, nbits);
                out[(b / 8) as usize] |= 1 << (b % 8);
                g = g.wrapping_add(delta);
            }
        }
        out[bytes] = k as u8;
        out
    }
}

/// A decoded filter block.
#[derive(Debug)]
pub struct BloomFilter {
    data: Vec<u8>,
    nbits: u64,
    k: u32,
}

impl BloomFilter {
    /// Wraps filter block contents; `Err(reason)` if malformed.
    pub fn new(mut data: Vec<u8>) -> Result<BloomFilter, &'static str> {
        let k = data.pop().ok_or("empty filter block")? as u32;
        if !(1..=30).contains(&k) {
            return Err("filter probe count not in 1..=30");
        }
        if data.is_empty() {
            return Err("filter has no bits");
        }
        data.shrink_to_fit();
        Ok(BloomFilter {
            nbits: data.len() as u64 * 8,
            data,
            k,
        })
    }

    /// False only if `user_key` was certainly not added.
    #[inline]
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        let h = hash64(user_key);
        let delta = h.rotate_left(32) | 1;
        let mut g = h;
        for _ in 0..self.k {
            let b = fastrange(g, self.nbits);
            if self.data[(b / 8) as usize] & (1 << (b % 8)) == 0 {
                return false;
            }
            g = g.wrapping_add(delta);
        }
        true
    }

    /// Resident bytes.
    pub fn size(&self) -> usize {
        self.data.capacity() + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_is_stable() {
        // Pinned values: the hash is part of the on-disk format.
        let pinned = [hash64(b""), hash64(b"a"), hash64(b"key00000001")];
        assert_eq!(
            pinned,
            [
                0xef62_3f93_1777_49a9,
                0x8463_bc7d_0264_caad,
                0xd501_af93_0ab1_7898
            ]
        );
        assert_ne!(hash64(b"a"), hash64(b"a\0"));
        assert_ne!(hash64(b""), hash64(b"\0"));
    }

    #[test]
    fn probes() {
        assert_eq!(num_probes(10), 7);
        assert_eq!(num_probes(1), 1);
        assert_eq!(num_probes(64), 30);
    }

    #[test]
    fn no_false_negatives_and_low_fp_rate() {
        let mut b = FilterBuilder::new(10);
        for i in 0..10_000 {
            b.add_key(format!("user{i:08}").as_bytes());
        }
        let f = BloomFilter::new(b.finish()).unwrap();
        for i in 0..10_000 {
            assert!(f.may_contain(format!("user{i:08}").as_bytes()));
        }
        let fp = (0..10_000)
            .filter(|i| f.may_contain(format!("absent{i:08}").as_bytes()))
            .count();
        assert!(fp < 200, "false-positive rate {fp}/10000");
        assert!(BloomFilter::new(vec![]).is_err());
        assert!(BloomFilter::new(vec![0, 0, 31]).is_err());
        assert!(BloomFilter::new(vec![7]).is_err());
    }
}
