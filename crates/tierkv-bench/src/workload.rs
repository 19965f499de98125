//! db_bench's key and value generation.
//!
//! * Keys ([`encode_key`]): the key number as 8 bytes big-endian, padded with ASCII `'0'` up to
//!   `key_size`; when `key_size < 8` only the low `key_size` bytes of the number are kept (still
//!   big-endian), exactly as db_bench's `GenerateKeyFromInt` does. Keys therefore sort in key
//!   number order (for numbers that fit in the kept bytes).
//! * Random key numbers ([`KeyGen`]): uniform in `[0, num)` from a seeded [`SmallRng`], so a run
//!   is reproducible for a given `--seed` (each thread of each benchmark gets its own seed, see
//!   [`thread_seed`]).
//! * Values ([`ValueGen`]): slices of a pre-generated random buffer of at least 1 MiB, taken at
//!   consecutive offsets and wrapping around, as db_bench's `RandomGenerator` does; producing a
//!   value costs no allocation and no random-number generation.

use rand::rngs::SmallRng;
use rand::{Rng, RngCore, SeedableRng};

/// Writes key number `k` into `out` in db_bench's format (`out.len()` is the key size).
pub fn encode_key(k: u64, out: &mut [u8]) {
    let fill = out.len().min(8);
    let be = k.to_be_bytes();
    out[..fill].copy_from_slice(&be[8 - fill..]);
    for b in &mut out[fill..] {
        *b = b'0';
    }
}

/// Returns key number `k` as a freshly allocated key of `key_size` bytes (for tests and tools;
/// benchmark loops reuse a buffer with [`encode_key`]).
pub fn make_key(k: u64, key_size: usize) -> Vec<u8> {
    let mut key = vec![0; key_size];
    encode_key(k, &mut key);
    key
}

/// The seed of thread `thread` of the `bench_index`-th benchmark of a run with base seed `seed`.
/// Distinct threads and benchmarks get distinct, deterministic seeds.
pub fn thread_seed(seed: u64, bench_index: usize, thread: usize) -> u64 {
    // splitmix64-style mixing keeps nearby inputs from giving correlated streams.
    let mut z = seed
        .wrapping_add((bench_index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add((thread as u64 + 1).wrapping_mul(0xBF58_476D_1CE4_E5B9));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Uniform random key numbers in `[0, num)`.
#[derive(Clone, Debug)]
pub struct KeyGen {
    rng: SmallRng,
    num: u64,
}

impl KeyGen {
    /// A generator over `[0, num)` seeded with `seed`. `num` must be at least 1 (a `num` of 0
    /// is treated as 1 so that generation never panics).
    pub fn new(seed: u64, num: u64) -> Self {
        KeyGen {
            rng: SmallRng::seed_from_u64(seed),
            num: num.max(1),
        }
    }

    /// The next key number.
    #[inline]
    pub fn next_key(&mut self) -> u64 {
        self.rng.gen_range(0..self.num)
    }
}

/// Minimum size of the random buffer values are cut from (db_bench uses 1 MiB).
pub const VALUE_BUFFER_BYTES: usize = 1 << 20;

/// Random values of a fixed size, cut from a pre-generated buffer.
#[derive(Clone, Debug)]
pub struct ValueGen {
    data: Vec<u8>,
    pos: usize,
    value_size: usize,
}

impl ValueGen {
    /// A generator of `value_size`-byte values; the buffer is filled from `seed`.
    pub fn new(seed: u64, value_size: usize) -> Self {
        let mut data = vec![0u8; VALUE_BUFFER_BYTES.max(value_size)];
        SmallRng::seed_from_u64(seed).fill_bytes(&mut data);
        ValueGen {
            data,
            pos: 0,
            value_size,
        }
    }

    /// The size of every value.
    pub fn value_size(&self) -> usize {
        self.value_size
    }

    /// The next value (valid until the next call).
    #[inline]
    pub fn next_value(&mut self) -> &[u8] {
        if self.pos + self.value_size > self.data.len() {
            self.pos = 0;
        }
        let start = self.pos;
        self.pos += self.value_size;
        &self.data[start..start + self.value_size]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_format_matches_db_bench() {
        // key_size 16: 8 big-endian bytes then eight '0' characters.
        assert_eq!(make_key(0, 16), [&[0u8; 8][..], b"00000000"].concat());
        assert_eq!(
            make_key(1, 16),
            [0, 0, 0, 0, 0, 0, 0, 1, b'0', b'0', b'0', b'0', b'0', b'0', b'0', b'0'].to_vec()
        );
        assert_eq!(
            make_key(0x0102_0304_0506_0708, 10),
            [1, 2, 3, 4, 5, 6, 7, 8, b'0', b'0'].to_vec()
        );
        // key_size 8: exactly the big-endian number, no padding.
        assert_eq!(make_key(258, 8), [0, 0, 0, 0, 0, 0, 1, 2].to_vec());
        // key_size < 8: the low bytes, big-endian.
        assert_eq!(make_key(0x0102_0304_0506_0708, 4), [5, 6, 7, 8].to_vec());
        assert_eq!(make_key(258, 2), [1, 2].to_vec());
        assert_eq!(make_key(258, 1), [2].to_vec());
        assert_eq!(make_key(7, 0), Vec::<u8>::new());
        // key_size > 16: longer padding.
        let k = make_key(u64::MAX, 20);
        assert_eq!(&k[..8], &[0xFF; 8]);
        assert_eq!(&k[8..], b"000000000000");
    }

    #[test]
    fn keys_sort_in_number_order() {
        let keys: Vec<_> = [0u64, 1, 255, 256, 65_535, 1 << 40]
            .iter()
            .map(|&k| make_key(k, 16))
            .collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn random_keys_in_range_and_deterministic() {
        let num = 1000;
        let a: Vec<u64> = {
            let mut g = KeyGen::new(thread_seed(301, 0, 0), num);
            (0..10_000).map(|_| g.next_key()).collect()
        };
        let b: Vec<u64> = {
            let mut g = KeyGen::new(thread_seed(301, 0, 0), num);
            (0..10_000).map(|_| g.next_key()).collect()
        };
        assert_eq!(a, b, "same seed, same sequence");
        assert!(a.iter().all(|&k| k < num));
        // Roughly uniform: every decile gets 1000 +- 20% of the draws, and most keys are hit.
        let mut deciles = [0u32; 10];
        for &k in &a {
            deciles[(k / 100) as usize] += 1;
        }
        assert!(
            deciles.iter().all(|&d| (800..=1200).contains(&d)),
            "{deciles:?}"
        );
        let distinct: std::collections::HashSet<_> = a.iter().collect();
        assert!(distinct.len() > 990, "{}", distinct.len());

        let mut other = KeyGen::new(thread_seed(302, 0, 0), num);
        let c: Vec<u64> = (0..10_000).map(|_| other.next_key()).collect();
        assert_ne!(a, c, "another seed, another sequence");
        assert_ne!(thread_seed(301, 0, 0), thread_seed(301, 0, 1));
        assert_ne!(thread_seed(301, 0, 0), thread_seed(301, 1, 0));

        // num = 1 gives only key 0; num = 0 does not panic.
        let mut one = KeyGen::new(1, 1);
        assert!((0..100).all(|_| one.next_key() == 0));
        assert_eq!(KeyGen::new(1, 0).next_key(), 0);
    }

    #[test]
    fn values_have_the_size_and_vary() {
        let mut g = ValueGen::new(7, 100);
        let v1 = g.next_value().to_vec();
        let v2 = g.next_value().to_vec();
        assert_eq!(v1.len(), 100);
        assert_ne!(v1, v2);
        // Wraps around the buffer without panicking.
        for _ in 0..(VALUE_BUFFER_BYTES / 100 + 10) {
            assert_eq!(g.next_value().len(), 100);
        }
        // Values larger than the default buffer work too.
        let mut big = ValueGen::new(7, VALUE_BUFFER_BYTES + 5);
        assert_eq!(big.next_value().len(), VALUE_BUFFER_BYTES + 5);
        assert_eq!(big.next_value().len(), VALUE_BUFFER_BYTES + 5);
        let mut empty = ValueGen::new(7, 0);
        assert!(empty.next_value().is_empty());
    }
}
