//! What the threads of a benchmark are given: the state shared by the benchmarks of a run
//! ([`RunState`]), the parameters copied out of the flags, the shared inputs of one benchmark's
//! threads, and each thread's share of the operations.

use super::*;

/// State shared by the benchmarks of one run on one engine: the YCSB insert counter (inserts of
/// ycsb-d and ycsb-e continue after the records and after earlier inserts) and the zeta sum of
/// the latest distribution, computed once.
#[derive(Debug)]
pub struct RunState {
    /// YCSB's insert key sequence (starts at `--num`).
    pub inserts: AckCounter,
    latest_zetan: OnceLock<f64>,
}

impl RunState {
    /// The state of a run whose record count is `num`.
    pub fn new(num: u64) -> Self {
        RunState {
            inserts: AckCounter::new(num),
            latest_zetan: OnceLock::new(),
        }
    }

    pub(super) fn latest_zetan(&self, num: u64) -> f64 {
        *self
            .latest_zetan
            .get_or_init(|| zeta(num.max(1) - 1, ZIPFIAN_CONSTANT))
    }
}

/// The parameters one worker thread needs, copied out of the [`BenchConfig`].
#[derive(Clone, Copy, Debug)]
pub(super) struct Plan {
    pub(super) num: u64,
    pub(super) reads: u64,
    pub(super) key_size: usize,
    pub(super) value_size: usize,
    pub(super) seek_nexts: u64,
    pub(super) streams: u64,
    pub(super) threads: usize,
    pub(super) verify: bool,
    pub(super) seed: u64,
    pub(super) distribution: Option<RequestDistribution>,
    pub(super) read_percent: u32,
    /// Open-loop pacing: each thread starts an operation every `pace` (`--ops_per_sec`
    /// spread over the threads, or `--benchmark_write_rate_limit` for the write-only
    /// benchmarks, whichever is slower); `None`: as fast as the engine goes.
    pub(super) pace: Option<Duration>,
    /// The pace of a *whilewriting benchmark's writer (`--benchmark_write_rate_limit`).
    pub(super) writer_pace: Option<Duration>,
    /// `--duration`: each thread stops after this long (counts are then unbounded).
    pub(super) duration: Option<Duration>,
    /// `--batch_size`: writes per batch of the write-only benchmarks.
    pub(super) batch: u64,
    /// `--multiread_batch_size`.
    pub(super) multiread_batch: u64,
    /// The YCSB operation mix of the benchmark (core workload or `-P` file).
    pub(super) mix: Option<crate::ycsb::YcsbMix>,
    /// `ycsb-load` inserts in key order (`insertorder=ordered`).
    pub(super) ordered_inserts: bool,
    /// How YCSB updates write (`--ycsb_update`).
    pub(super) update: UpdateMode,
    /// A YCSB record's fields, and whether an update writes them all.
    pub(super) fields: (u64, bool),
}

impl Plan {
    /// How many operations a loop meant to run `n` does: `n`, or unbounded under
    /// `--duration` (the timer's deadline ends it).
    pub(super) fn count(&self, n: u64) -> u64 {
        if self.duration.is_some() {
            u64::MAX
        } else {
            n
        }
    }
}

/// The share of `total` operations of thread `t` of `threads`, as a range of indices.
pub(super) fn thread_range(total: u64, threads: usize, t: usize) -> std::ops::Range<u64> {
    let (n, t) = (threads as u64, t as u64);
    let (base, extra) = (total / n, total % n);
    let start = t * base + t.min(extra);
    start..start + base + u64::from(t < extra)
}

/// Shared inputs of the threads of one benchmark.
pub(super) struct Shared<'a> {
    pub(super) engine: &'a dyn KvEngine,
    pub(super) bench: Benchmark,
    pub(super) plan: Plan,
    pub(super) state: &'a RunState,
    pub(super) barrier: &'a Barrier,
}
