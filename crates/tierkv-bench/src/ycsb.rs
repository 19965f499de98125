//! The YCSB core workloads: request-distribution generators ported from YCSB, the workload
//! mixes (`ycsb-load`, `ycsb-a` .. `ycsb-f`), and the shared insert counter.
//!
//! Ported from YCSB's `site.ycsb.generator` package:
//!
//! * [`Zipfian`]: `ZipfianGenerator`, Gray et al.'s algorithm ("Quickly Generating
//!   Billion-Record Synthetic Databases", SIGMOD 1994) with the zeta sum precomputed once and
//!   extended incrementally when the item count grows (YCSB's quirk of computing `eta` from the
//!   *initial* item count is kept, so the numbers match YCSB's).
//! * [`ScrambledZipfian`]: `ScrambledZipfianGenerator` with YCSB's constant 0.99: a zipfian over
//!   10^10 items with the precomputed zeta 26.46902820178302, each drawn item number hashed with
//!   FNV-1a 64 ([`fnv_hash64`]) and taken modulo the generator's item count, which is fixed when
//!   the generator is made (the record count, plus YCSB's `expectednewkeys` allowance for
//!   workloads that insert). Popular items are therefore spread over the key space.
//! * [`SkewedLatest`]: `SkewedLatestGenerator`: `latest - zipfian(latest)`, where `latest` is the
//!   last acknowledged insert ([`AckCounter`], YCSB's `AcknowledgedCounterGenerator`).
//! * Uniform: `UniformLongGenerator` over the initial record count.
//!
//! As in YCSB's `CoreWorkload.nextKeynum`, a chosen key number above the last acknowledged insert
//! is drawn again, so reads never target a key that is still being inserted.
//!
//! Differences from YCSB, all deliberate:
//!
//! * Keys use db_bench's encoding ([`crate::workload::encode_key`]: big-endian number padded to
//!   `--key_size`) instead of `"user" + hash`, so every benchmark of a run shares one key space.
//!   To keep YCSB's random insertion order (its default `insertorder=hashed`), `ycsb-load` writes
//!   the record numbers `0..num` in a seeded pseudo-random permutation ([`LoadOrder`]).
//! * A record is one value of `--value_size` bytes (a `-P` workload's `fieldcount` x
//!   `fieldlength`) that stands for `fieldcount` fields (10 unless the workload says) laid end
//!   to end, each `value_size / fieldcount` bytes (the last takes the remainder).
//! * An update is done as YCSB's bindings do it ([`UpdateMode::Merge`], the default): read the
//!   record, a missing one being a failed operation (the RocksDB binding's `NOT_FOUND`,
//!   counted, nothing written), then overwrite one field chosen uniformly with new bytes (all
//!   fields under `writeallfields=true`) and put the whole record back. A read-modify-write
//!   (workload F) reads the record and then updates it the same way, and its latency covers
//!   both. `--ycsb_update=blind` puts a whole new value without reading (this harness's
//!   earlier behaviour, kept for comparison).

use rand::rngs::SmallRng;
use rand::RngCore;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// How a YCSB update writes (`--ycsb_update`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum UpdateMode {
    /// Read the record (missing: a failed operation), overwrite the written fields, put it
    /// back: what YCSB's bindings do.
    #[default]
    Merge,
    /// Put a whole new value without reading.
    Blind,
}

/// YCSB's default `fieldcount`.
pub const FIELD_COUNT: u64 = 10;

/// The byte range of field `field` of `fields` in a record of `len` bytes (fields of
/// `len / fields` bytes, the last taking the remainder).
pub fn field_range(len: usize, fields: u64, field: u64) -> std::ops::Range<usize> {
    let fields = fields.clamp(1, len.max(1) as u64) as usize;
    let field = (field as usize).min(fields - 1);
    let width = len / fields;
    let start = field * width;
    let end = if field + 1 == fields {
        len
    } else {
        start + width
    };
    start..end
}

/// Merges an update into `record` (the value read): copies field `field` of `new` over the
/// same field of `record`, or, with `all_fields`, every byte of `new`. A record of another
/// length than `new` (written by another benchmark) keeps its length: the field is taken
/// from its own layout.
pub fn merge_update(record: &mut [u8], new: &[u8], fields: u64, field: u64, all_fields: bool) {
    let range = if all_fields {
        0..record.len()
    } else {
        field_range(record.len(), fields, field)
    };
    for (i, b) in record[range].iter_mut().enumerate() {
        *b = new[i % new.len().max(1)];
    }
}

/// YCSB's default zipfian constant.
pub const ZIPFIAN_CONSTANT: f64 = 0.99;
/// Item count of YCSB's scrambled zipfian (`ScrambledZipfianGenerator.ITEM_COUNT`).
pub const SCRAMBLED_ITEM_COUNT: u64 = 10_000_000_000;
/// zeta(10^10, 0.99), precomputed by YCSB (`ScrambledZipfianGenerator.ZETAN`).
pub const SCRAMBLED_ZETAN: f64 = 26.469_028_201_783_02;
/// YCSB's maximum scan length (`maxscanlength`); lengths are uniform in `1..=MAX_SCAN_LENGTH`.
pub const MAX_SCAN_LENGTH: u64 = 100;

/// A uniform double in `[0, 1)` from 53 random bits.
#[inline]
pub fn next_f64(rng: &mut SmallRng) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// A uniform integer in `[0, n)` (`n >= 1`) by multiply-shift (bias below 2^-64 * n).
#[inline]
pub fn next_below(rng: &mut SmallRng, n: u64) -> u64 {
    ((u128::from(rng.next_u64()) * u128::from(n)) >> 64) as u64
}

/// YCSB's `Utils.fnvhash64`: FNV-1a 64 over the 8 little-endian bytes of `val`, made
/// non-negative as Java's `Math.abs` does (except that `i64::MIN` maps to 2^63, not to itself).
#[inline]
pub fn fnv_hash64(val: u64) -> u64 {
    const OFFSET: u64 = 0xCBF2_9CE4_8422_2325;
    const PRIME: u64 = 1_099_511_628_211;
    let mut h = OFFSET;
    let mut v = val;
    for _ in 0..8 {
        h ^= v & 0xff;
        h = h.wrapping_mul(PRIME);
        v >>= 8;
    }
    (h as i64).unsigned_abs()
}

/// zeta(n, theta) = sum over i in 1..=n of 1 / i^theta (YCSB's `zetastatic`).
pub fn zeta(n: u64, theta: f64) -> f64 {
    zeta_from(0, n, theta, 0.0)
}

/// Extends `initial` = zeta(`start`, theta) to zeta(`n`, theta).
pub fn zeta_from(start: u64, n: u64, theta: f64, initial: f64) -> f64 {
    let mut sum = initial;
    for i in start..n {
        sum += 1.0 / ((i + 1) as f64).powf(theta);
    }
    sum
}

/// YCSB's `ZipfianGenerator`: item `base + i` has probability proportional to 1 / (i+1)^theta.
#[derive(Clone, Debug)]
pub struct Zipfian {
    items: u64,
    base: u64,
    theta: f64,
    zeta2theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
    half_pow_theta: f64,
    count_for_zeta: u64,
}

impl Zipfian {
    /// A generator over `[min, max]` (computes zeta: O(max - min) work).
    pub fn new(min: u64, max: u64, theta: f64) -> Self {
        let items = max - min + 1;
        Zipfian::with_zetan(min, max, theta, zeta(items, theta))
    }

    /// A generator over `[min, max]` with zeta(max - min + 1, theta) given.
    pub fn with_zetan(min: u64, max: u64, theta: f64, zetan: f64) -> Self {
        let items = max - min + 1;
        let zeta2theta = zeta(2, theta);
        let mut z = Zipfian {
            items,
            base: min,
            theta,
            zeta2theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta: 0.0,
            half_pow_theta: 0.5f64.powf(theta),
            count_for_zeta: items,
        };
        z.eta = z.compute_eta();
        z
    }

    fn compute_eta(&self) -> f64 {
        (1.0 - (2.0 / self.items as f64).powf(1.0 - self.theta))
            / (1.0 - self.zeta2theta / self.zetan)
    }

    /// The number of items the generator was made for.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// The current zeta sum.
    pub fn zetan(&self) -> f64 {
        self.zetan
    }

    /// The next item of `[min, max]`.
    #[inline]
    pub fn next(&mut self, rng: &mut SmallRng) -> u64 {
        self.next_with_count(rng, self.items)
    }

    /// YCSB's `nextLong(itemcount)`: the next item of `[base, base + itemcount]`, extending the
    /// zeta sum when `itemcount` grew (a smaller count keeps the larger sum, as YCSB does unless
    /// `allowitemcountdecrease`).
    #[inline]
    pub fn next_with_count(&mut self, rng: &mut SmallRng, itemcount: u64) -> u64 {
        if itemcount > self.count_for_zeta {
            self.zetan = zeta_from(self.count_for_zeta, itemcount, self.theta, self.zetan);
            self.count_for_zeta = itemcount;
            self.eta = self.compute_eta();
        }
        let u = next_f64(rng);
        let uz = u * self.zetan;
        if uz < 1.0 {
            return self.base;
        }
        if uz < 1.0 + self.half_pow_theta {
            return self.base + 1;
        }
        self.base + (itemcount as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64
    }
}

/// YCSB's `ScrambledZipfianGenerator` (constant 0.99) over `[min, max]`.
#[derive(Clone, Debug)]
pub struct ScrambledZipfian {
    gen: Zipfian,
    min: u64,
    item_count: u64,
}

impl ScrambledZipfian {
    /// A generator over `[min, max]`; costs O(1) (zeta is YCSB's precomputed constant).
    pub fn new(min: u64, max: u64) -> Self {
        ScrambledZipfian {
            gen: Zipfian::with_zetan(0, SCRAMBLED_ITEM_COUNT, ZIPFIAN_CONSTANT, SCRAMBLED_ZETAN),
            min,
            item_count: max - min + 1,
        }
    }

    /// A generator over `[min, max]` with zipfian constant `theta`: YCSB's
    /// `ScrambledZipfianGenerator(min, max, zipfianconstant)`. At 0.99 it is [`new`](Self::new);
    /// at any other constant the zipfian runs over the item count itself (`[0, max - min + 1]`,
    /// zeta computed here: O(max - min) work), as YCSB's does.
    pub fn with_constant(min: u64, max: u64, theta: f64) -> Self {
        if theta == ZIPFIAN_CONSTANT {
            return ScrambledZipfian::new(min, max);
        }
        let item_count = max - min + 1;
        ScrambledZipfian {
            gen: Zipfian::new(0, item_count, theta),
            min,
            item_count,
        }
    }

    /// The next item.
    #[inline]
    pub fn next(&mut self, rng: &mut SmallRng) -> u64 {
        self.min + fnv_hash64(self.gen.next(rng)) % self.item_count
    }
}

/// YCSB's `SkewedLatestGenerator`: recent inserts are the most popular.
#[derive(Clone, Debug)]
pub struct SkewedLatest {
    zipfian: Zipfian,
}

impl SkewedLatest {
    /// A generator for a key space whose last item is `last` (the zipfian runs over `last`
    /// items, as YCSB's `new ZipfianGenerator(basis.lastValue())`); `zetan` is zeta(last, 0.99),
    /// computed once with [`zeta`] and shared by every thread.
    pub fn with_zetan(last: u64, zetan: f64) -> Self {
        SkewedLatest {
            zipfian: Zipfian::with_zetan(0, last.max(1) - 1, ZIPFIAN_CONSTANT, zetan),
        }
    }

    /// The next item given the last acknowledged one: `last - zipfian(last)`, in `[0, last]`.
    #[inline]
    pub fn next(&mut self, rng: &mut SmallRng, last: u64) -> u64 {
        last.saturating_sub(self.zipfian.next_with_count(rng, last))
    }
}

/// The request distribution of a YCSB workload (`--distribution`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum RequestDistribution {
    /// Scrambled zipfian, constant 0.99 (YCSB's default).
    Zipfian,
    /// Skewed latest: recently inserted keys are the most popular.
    Latest,
    /// Uniform over the loaded records.
    Uniform,
}

impl fmt::Display for RequestDistribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RequestDistribution::Zipfian => "zipfian",
            RequestDistribution::Latest => "latest",
            RequestDistribution::Uniform => "uniform",
        })
    }
}

/// YCSB's `AcknowledgedCounterGenerator`: hands out insert key numbers and tracks the highest
/// number below which every insert has completed, so that readers never pick a key that is still
/// being written. Shared by the threads (and the benchmarks) of one run.
#[derive(Debug)]
pub struct AckCounter {
    next: AtomicU64,
    /// Every key number below this one is written.
    acked: AtomicU64,
    window: Box<[AtomicBool]>,
    lock: Mutex<()>,
}

const ACK_WINDOW: usize = 1 << 16;

impl AckCounter {
    /// A counter whose first insert will be `start` (keys `0..start` are loaded).
    pub fn new(start: u64) -> Self {
        AckCounter {
            next: AtomicU64::new(start),
            acked: AtomicU64::new(start),
            window: (0..ACK_WINDOW).map(|_| AtomicBool::new(false)).collect(),
            lock: Mutex::new(()),
        }
    }

    /// Reserves the next insert key number.
    #[inline]
    pub fn reserve(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// Marks `value` (from [`reserve`](Self::reserve)) as written.
    pub fn acknowledge(&self, value: u64) {
        self.window[value as usize % ACK_WINDOW].store(true, Ordering::Release);
        self.advance();
    }

    /// Moves the acknowledged limit over every contiguous acknowledged value (YCSB does this
    /// under a try-lock; a late acknowledgement is picked up by the next call).
    pub fn advance(&self) {
        if let Ok(_guard) = self.lock.try_lock() {
            let mut a = self.acked.load(Ordering::Relaxed);
            loop {
                let slot = &self.window[a as usize % ACK_WINDOW];
                if !slot.load(Ordering::Acquire) {
                    break;
                }
                slot.store(false, Ordering::Relaxed);
                a += 1;
            }
            self.acked.store(a, Ordering::Release);
        }
    }

    /// Number of key numbers known written: every key below it exists.
    #[inline]
    pub fn acknowledged(&self) -> u64 {
        self.acked.load(Ordering::Acquire)
    }

    /// YCSB's `lastValue()`: the highest key number known written (0 when none).
    #[inline]
    pub fn last(&self) -> u64 {
        self.acknowledged().saturating_sub(1)
    }

    /// Key numbers handed out so far (acknowledged or not).
    pub fn reserved(&self) -> u64 {
        self.next.load(Ordering::Relaxed)
    }
}

/// Chooses key numbers for one thread from a request distribution.
#[derive(Clone, Debug)]
pub enum KeyChooser {
    /// Uniform over `[0, n)`.
    Uniform(u64),
    /// Scrambled zipfian.
    Zipfian(ScrambledZipfian),
    /// Skewed latest.
    Latest(SkewedLatest),
}

impl KeyChooser {
    /// The chooser for `dist` over `record_count` loaded records and an allowance of
    /// `expected_new_keys` inserts (YCSB: operations x insert proportion x 2). `latest_zetan` is
    /// zeta(record_count - 1, 0.99), needed only for [`RequestDistribution::Latest`];
    /// `zipfian_constant` applies to [`RequestDistribution::Zipfian`] (YCSB's
    /// `zipfianconstant`; the latest distribution always uses 0.99, as YCSB's does).
    pub fn new(
        dist: RequestDistribution,
        record_count: u64,
        expected_new_keys: u64,
        latest_zetan: f64,
        zipfian_constant: f64,
    ) -> Self {
        let n = record_count.max(1);
        match dist {
            RequestDistribution::Uniform => KeyChooser::Uniform(n),
            RequestDistribution::Zipfian => KeyChooser::Zipfian(ScrambledZipfian::with_constant(
                0,
                n + expected_new_keys - 1,
                zipfian_constant,
            )),
            RequestDistribution::Latest => {
                KeyChooser::Latest(SkewedLatest::with_zetan(n - 1, latest_zetan))
            }
        }
    }

    /// The next key number, never above `counter.last()` (redrawn when it is, as YCSB does).
    #[inline]
    pub fn next(&mut self, rng: &mut SmallRng, counter: &AckCounter) -> u64 {
        let last = counter.last();
        match self {
            KeyChooser::Uniform(n) => next_below(rng, *n).min(last),
            KeyChooser::Zipfian(z) => loop {
                let k = z.next(rng);
                if k <= last {
                    return k;
                }
            },
            KeyChooser::Latest(l) => l.next(rng, last),
        }
    }
}

/// The operations of the YCSB core workloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum YcsbOp {
    /// Read one record.
    Read,
    /// Overwrite one existing record.
    Update,
    /// Insert a new record after the current last one.
    Insert,
    /// Read a short range (length uniform in 1..=100).
    Scan,
    /// Read a record, then write it back.
    ReadModifyWrite,
}

/// A YCSB core workload's operation mix.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct YcsbMix {
    /// Proportion of reads.
    pub read: f64,
    /// Proportion of updates.
    pub update: f64,
    /// Proportion of inserts.
    pub insert: f64,
    /// Proportion of scans.
    pub scan: f64,
    /// Proportion of read-modify-writes.
    pub rmw: f64,
    /// The workload's own request distribution (YCSB's `requestdistribution`).
    pub distribution: RequestDistribution,
    /// The zipfian constant of the zipfian distribution (YCSB's `zipfianconstant`).
    pub zipfian_constant: f64,
    /// Scan lengths are uniform in `1..=max_scan_length` (YCSB's `maxscanlength`).
    pub max_scan_length: u64,
}

impl YcsbMix {
    /// Workload A (update heavy): 50% reads, 50% updates, zipfian.
    pub const A: YcsbMix = YcsbMix::new(0.5, 0.5, 0.0, 0.0, 0.0, RequestDistribution::Zipfian);
    /// Workload B (read mostly): 95% reads, 5% updates, zipfian.
    pub const B: YcsbMix = YcsbMix::new(0.95, 0.05, 0.0, 0.0, 0.0, RequestDistribution::Zipfian);
    /// Workload C (read only), zipfian.
    pub const C: YcsbMix = YcsbMix::new(1.0, 0.0, 0.0, 0.0, 0.0, RequestDistribution::Zipfian);
    /// Workload D (read latest): 95% reads, 5% inserts, latest.
    pub const D: YcsbMix = YcsbMix::new(0.95, 0.0, 0.05, 0.0, 0.0, RequestDistribution::Latest);
    /// Workload E (short ranges): 95% scans, 5% inserts, zipfian scan starts.
    pub const E: YcsbMix = YcsbMix::new(0.0, 0.0, 0.05, 0.95, 0.0, RequestDistribution::Zipfian);
    /// Workload F (read-modify-write): 50% reads, 50% read-modify-writes, zipfian.
    pub const F: YcsbMix = YcsbMix::new(0.5, 0.0, 0.0, 0.0, 0.5, RequestDistribution::Zipfian);

    /// A mix with YCSB's zipfian constant (0.99) and the core workloads' scan lengths
    /// (`1..=100`).
    pub const fn new(
        read: f64,
        update: f64,
        insert: f64,
        scan: f64,
        rmw: f64,
        distribution: RequestDistribution,
    ) -> Self {
        YcsbMix {
            read,
            update,
            insert,
            scan,
            rmw,
            distribution,
            zipfian_constant: ZIPFIAN_CONSTANT,
            max_scan_length: MAX_SCAN_LENGTH,
        }
    }
}

/// Picks operations in a mix's proportions with one random number per operation.
#[derive(Clone, Debug)]
pub struct OpChooser {
    /// Cumulative thresholds on a uniform u64; the last operation takes the rest.
    thresholds: [u64; 4],
    ops: [YcsbOp; 5],
    len: usize,
}

impl OpChooser {
    /// The chooser of `mix` (operations with proportion 0 are never chosen).
    pub fn new(mix: &YcsbMix) -> Self {
        let all = [
            (YcsbOp::Read, mix.read),
            (YcsbOp::Update, mix.update),
            (YcsbOp::Insert, mix.insert),
            (YcsbOp::Scan, mix.scan),
            (YcsbOp::ReadModifyWrite, mix.rmw),
        ];
        let present: Vec<_> = all.iter().filter(|(_, p)| *p > 0.0).copied().collect();
        let total: f64 = present.iter().map(|(_, p)| p).sum();
        let mut ops = [YcsbOp::Read; 5];
        let mut thresholds = [u64::MAX; 4];
        let mut acc = 0.0;
        for (i, (op, p)) in present.iter().enumerate() {
            ops[i] = *op;
            acc += p / total;
            if i < 4 {
                thresholds[i] = if acc >= 1.0 {
                    u64::MAX
                } else {
                    (acc * 2f64.powi(64)) as u64
                };
            }
        }
        OpChooser {
            thresholds,
            ops,
            len: present.len().max(1),
        }
    }

    /// The next operation.
    #[inline]
    pub fn next(&self, rng: &mut SmallRng) -> YcsbOp {
        let r = rng.next_u64();
        for i in 0..self.len - 1 {
            if r < self.thresholds[i] {
                return self.ops[i];
            }
        }
        self.ops[self.len - 1]
    }
}

/// A seeded permutation of `[0, num)`: `ycsb-load` writes record `at(i)` as its `i`-th insert,
/// so records arrive in random key order as with YCSB's hashed insert order. A bijective mix on
/// the next power of two, cycle-walked into `[0, num)`.
#[derive(Clone, Copy, Debug)]
pub struct LoadOrder {
    num: u64,
    mask: u64,
    shift: u32,
    seed: u64,
}

impl LoadOrder {
    /// The permutation of `[0, num)` selected by `seed`.
    pub fn new(num: u64, seed: u64) -> Self {
        let bits = 64 - num.saturating_sub(1).leading_zeros();
        let mask = if bits >= 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        LoadOrder {
            num,
            mask,
            shift: (bits / 2).max(1),
            seed: seed & mask,
        }
    }

    #[inline]
    fn mix(&self, mut x: u64) -> u64 {
        x ^= self.seed;
        x = x.wrapping_mul(0x9E37_79B9_7F4A_7C15) & self.mask;
        x ^= x >> self.shift;
        x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9) & self.mask;
        x ^= x >> self.shift;
        x
    }

    /// The record inserted `i`-th (`i < num`).
    #[inline]
    pub fn at(&self, i: u64) -> u64 {
        let mut x = self.mix(i);
        while x >= self.num {
            x = self.mix(x);
        }
        x
    }
}

impl FromStr for RequestDistribution {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        <RequestDistribution as clap::ValueEnum>::from_str(s, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use std::collections::HashMap;

    fn rng(seed: u64) -> SmallRng {
        SmallRng::seed_from_u64(seed)
    }

    /// Exact zipf pmf over `n` items with constant `theta`, for ranks 0..k.
    fn zipf_pmf(n: u64, theta: f64, k: usize) -> Vec<f64> {
        let z = zeta(n, theta);
        (0..k)
            .map(|i| 1.0 / ((i + 1) as f64).powf(theta) / z)
            .collect()
    }

    #[test]
    fn fnv_matches_ycsb() {
        // FNV-1a 64 over the 8 little-endian bytes of 0: known values computed from the
        // definition (offset basis xor 0, times prime, eight times).
        let mut h: u64 = 0xCBF2_9CE4_8422_2325;
        for _ in 0..8 {
            h = h.wrapping_mul(1_099_511_628_211);
        }
        assert_eq!(fnv_hash64(0), (h as i64).unsigned_abs());
        assert_ne!(fnv_hash64(1), fnv_hash64(2));
        assert!(fnv_hash64(12345) <= 1 << 63);
    }

    #[test]
    fn zipfian_matches_the_zipf_pmf() {
        let n = 1000;
        let draws = 400_000;
        let mut z = Zipfian::new(0, n - 1, ZIPFIAN_CONSTANT);
        let mut r = rng(1);
        let mut counts = vec![0u64; n as usize + 1];
        for _ in 0..draws {
            let v = z.next(&mut r);
            assert!(v <= n, "{v}");
            counts[v as usize] += 1;
        }
        let pmf = zipf_pmf(n, ZIPFIAN_CONSTANT, 20);
        // Item 0 is the most popular, with probability 1/zeta(n).
        let top = counts[0] as f64 / draws as f64;
        assert!((top - pmf[0]).abs() / pmf[0] < 0.03, "{top} vs {}", pmf[0]);
        // Gray's algorithm is exact for ranks 0 and 1 and approximate beyond: print the
        // errors, then bound them.
        let errs: Vec<f64> = pmf
            .iter()
            .enumerate()
            .map(|(i, p)| (counts[i] as f64 / draws as f64 - p) / p)
            .collect();
        eprintln!("relative errors by rank: {errs:.3?}");
        for (i, e) in errs.iter().enumerate() {
            assert!(e.abs() < 0.25, "rank {i}: relative error {e}");
        }
        // Chi-square over the top 10 ranks + the rest (10 degrees of freedom): the ranks
        // 0 and 1 are exact, so the statistic is dominated by the approximation of ranks 2..9.
        let top_share: f64 = pmf[..10].iter().sum();
        assert!(counts[..10].iter().sum::<u64>() as f64 / draws as f64 > top_share * 0.9);
    }

    #[test]
    fn zipfian_grows_its_zeta_incrementally() {
        let mut a = Zipfian::new(0, 99, ZIPFIAN_CONSTANT);
        let mut r = rng(2);
        let _ = a.next_with_count(&mut r, 500);
        assert!((a.zetan() - zeta(500, ZIPFIAN_CONSTANT)).abs() < 1e-9);
        for _ in 0..1000 {
            assert!(a.next_with_count(&mut r, 500) <= 500);
        }
    }

    #[test]
    fn scrambled_zipfian_covers_the_range_and_ranks_follow_zipf() {
        let n = 1000u64;
        let draws = 1_000_000;
        let mut z = ScrambledZipfian::new(0, n - 1);
        let mut r = rng(3);
        let mut counts = vec![0u64; n as usize];
        for _ in 0..draws {
            counts[z.next(&mut r) as usize] += 1;
        }
        // Most of the range is drawn (the 10^10-item tail hashes all over it).
        let hit = counts.iter().filter(|&&c| c > 0).count();
        assert!(hit > 990, "{hit} of {n} items drawn");
        // The popular items are not the low key numbers: they are scattered.
        let mut ranked: Vec<(u64, usize)> =
            counts.iter().enumerate().map(|(i, &c)| (c, i)).collect();
        ranked.sort_unstable_by(|a, b| b.cmp(a));
        let top_items: Vec<usize> = ranked[..5].iter().map(|&(_, i)| i).collect();
        assert!(top_items.iter().any(|&i| i > 10), "{top_items:?}");
        // Popularity by rank: the most popular item holds 1/zeta(10^10) of the draws (plus the
        // uniform share of the tail), the next ranks decay like 1/rank^0.99.
        let pmf: Vec<f64> = (0..5)
            .map(|i| 1.0 / ((i + 1) as f64).powf(ZIPFIAN_CONSTANT) / SCRAMBLED_ZETAN)
            .collect();
        for i in 0..5 {
            let f = ranked[i].0 as f64 / draws as f64;
            // The tail adds about (1 - top share) / n to every item.
            let expected = pmf[i] + 0.6 / n as f64;
            eprintln!("rank {i}: {f} vs {expected}");
            assert!(
                (f - expected).abs() / expected < 0.3,
                "rank {i}: {f} vs {expected}"
            );
        }
        // Deterministic for a seed.
        let mut a = ScrambledZipfian::new(0, n - 1);
        let mut b = ScrambledZipfian::new(0, n - 1);
        let (mut ra, mut rb) = (rng(9), rng(9));
        assert!((0..100).all(|_| a.next(&mut ra) == b.next(&mut rb)));
    }

    #[test]
    fn uniform_passes_chi_square() {
        let n = 100u64;
        let draws = 200_000u64;
        let mut r = rng(4);
        let counter = AckCounter::new(n);
        let mut c = KeyChooser::new(RequestDistribution::Uniform, n, 0, 0.0, ZIPFIAN_CONSTANT);
        let mut counts = vec![0u64; n as usize];
        for _ in 0..draws {
            counts[c.next(&mut r, &counter) as usize] += 1;
        }
        let e = draws as f64 / n as f64;
        let chi2: f64 = counts
            .iter()
            .map(|&o| (o as f64 - e).powi(2) / e)
            .sum::<f64>();
        // 99 degrees of freedom: the 99.9% critical value is about 148.
        assert!(chi2 < 148.0, "chi-square {chi2}");
    }

    #[test]
    fn latest_favours_recent_items() {
        let n = 10_000u64;
        let counter = AckCounter::new(n);
        let mut c = KeyChooser::new(
            RequestDistribution::Latest,
            n,
            0,
            zeta(n - 1, ZIPFIAN_CONSTANT),
            ZIPFIAN_CONSTANT,
        );
        let mut r = rng(5);
        let draws = 200_000;
        let mut by_age: HashMap<u64, u64> = HashMap::new();
        for _ in 0..draws {
            let k = c.next(&mut r, &counter);
            assert!(k < n);
            *by_age.entry(n - 1 - k).or_default() += 1;
        }
        // The newest record is the most popular, with zipf's top probability.
        let newest = by_age[&0] as f64 / draws as f64;
        let p0 = 1.0 / zeta(n - 1, ZIPFIAN_CONSTANT);
        assert!((newest - p0).abs() / p0 < 0.05, "{newest} vs {p0}");
        let recent: u64 = (0..100).filter_map(|a| by_age.get(&a)).sum();
        assert!(recent as f64 / draws as f64 > 0.5, "{recent}");
        // After inserts, the newest record moves with the counter.
        for _ in 0..10 {
            let v = counter.reserve();
            counter.acknowledge(v);
        }
        assert_eq!(counter.last(), n + 9);
        let newest = (0..10_000)
            .filter(|_| c.next(&mut r, &counter) == n + 9)
            .count();
        assert!(newest > 800, "{newest}");
    }

    #[test]
    fn ack_counter_tracks_contiguous_inserts() {
        let c = AckCounter::new(10);
        assert_eq!((c.acknowledged(), c.last()), (10, 9));
        let a = c.reserve();
        let b = c.reserve();
        assert_eq!((a, b), (10, 11));
        c.acknowledge(b);
        assert_eq!(c.acknowledged(), 10, "11 is written but 10 is not yet");
        c.acknowledge(a);
        assert_eq!(c.acknowledged(), 12);
        assert_eq!(c.reserved(), 12);
        // Zipfian choices above the limit are redrawn.
        let mut z = KeyChooser::new(
            RequestDistribution::Zipfian,
            10,
            1000,
            0.0,
            ZIPFIAN_CONSTANT,
        );
        let mut r = rng(6);
        assert!((0..10_000).all(|_| z.next(&mut r, &c) <= 11));
    }

    fn mix_counts(mix: &YcsbMix, draws: u64) -> [f64; 5] {
        let ch = OpChooser::new(mix);
        let mut r = rng(7);
        let mut counts = [0u64; 5];
        for _ in 0..draws {
            let i = match ch.next(&mut r) {
                YcsbOp::Read => 0,
                YcsbOp::Update => 1,
                YcsbOp::Insert => 2,
                YcsbOp::Scan => 3,
                YcsbOp::ReadModifyWrite => 4,
            };
            counts[i] += 1;
        }
        counts.map(|c| c as f64 / draws as f64)
    }

    #[test]
    fn op_chooser_follows_the_mix() {
        for mix in [
            YcsbMix::A,
            YcsbMix::B,
            YcsbMix::C,
            YcsbMix::D,
            YcsbMix::E,
            YcsbMix::F,
        ] {
            let f = mix_counts(&mix, 200_000);
            let want = [mix.read, mix.update, mix.insert, mix.scan, mix.rmw];
            for i in 0..5 {
                assert!((f[i] - want[i]).abs() < 0.01, "{mix:?}: {f:?}");
                if want[i] == 0.0 {
                    assert_eq!(f[i], 0.0, "{mix:?}");
                }
            }
        }
    }

    #[test]
    fn updates_merge_one_field_or_all() {
        // 10 fields of a 25-byte record: 2 bytes each, the last 7.
        assert_eq!(field_range(25, 10, 0), 0..2);
        assert_eq!(field_range(25, 10, 8), 16..18);
        assert_eq!(field_range(25, 10, 9), 18..25);
        // More fields than bytes: one byte each.
        assert_eq!(field_range(3, 10, 2), 2..3);
        assert_eq!(field_range(0, 10, 0), 0..0);
        let mut record = vec![0u8; 20];
        merge_update(&mut record, &[7u8; 20], 10, 3, false);
        let want: Vec<u8> = (0..20)
            .map(|i| if (6..8).contains(&i) { 7 } else { 0 })
            .collect();
        assert_eq!(record, want);
        merge_update(&mut record, &[9u8; 20], 10, 0, true);
        assert_eq!(record, vec![9u8; 20]);
        // A shorter record than the new value keeps its length.
        let mut short = vec![1u8; 4];
        merge_update(&mut short, &[5u8; 20], 2, 1, false);
        assert_eq!(short, vec![1, 1, 5, 5]);
    }

    #[test]
    fn load_order_is_a_permutation() {
        for num in [1u64, 2, 3, 7, 100, 1000, 4096, 5000] {
            let o = LoadOrder::new(num, 301);
            let mut seen: Vec<u64> = (0..num).map(|i| o.at(i)).collect();
            let first: Vec<u64> = seen.iter().take(20).copied().collect();
            seen.sort_unstable();
            assert_eq!(seen, (0..num).collect::<Vec<_>>(), "num {num}");
            if num >= 100 {
                assert_ne!(first, (0..20).collect::<Vec<_>>(), "shuffled");
            }
        }
    }

    #[test]
    fn scrambled_zipfian_follows_its_constant() {
        // A smaller constant spreads requests: the most popular item's share falls with it.
        let top_share = |theta: f64| {
            let mut z = ScrambledZipfian::with_constant(0, 999, theta);
            let mut r = rng(9);
            let mut counts = vec![0u64; 1000];
            for _ in 0..100_000 {
                let k = z.next(&mut r);
                assert!(k < 1000);
                counts[k as usize] += 1;
            }
            *counts.iter().max().unwrap() as f64 / 100_000.0
        };
        let (skewed, flatter) = (top_share(0.99), top_share(0.5));
        assert!(skewed > 2.0 * flatter, "0.99: {skewed}, 0.5: {flatter}");
        // At 0.99 it is YCSB's precomputed generator.
        let mut a = ScrambledZipfian::with_constant(0, 99, ZIPFIAN_CONSTANT);
        let mut b = ScrambledZipfian::new(0, 99);
        let (mut ra, mut rb) = (rng(3), rng(3));
        assert!((0..1000).all(|_| a.next(&mut ra) == b.next(&mut rb)));
    }
}
