//! Runs benchmarks: N threads per benchmark over one [`KvEngine`], a latency histogram per
//! thread (merged at the end), and an optional progress bar.
//!
//! Timing follows db_bench: each thread reads the clock once per operation and charges the time
//! since its previous operation ended to the operation just finished, recording it in
//! nanoseconds in an HDR histogram. Threads start together behind a barrier. `seconds` is the
//! wall time from the earliest thread start to the latest thread finish; `ops_per_sec` is total
//! operations / `seconds`; `micros_per_op` is (sum of per-thread times) / total operations, i.e.
//! the average time one thread spends per operation (db_bench's definition).
//!
//! Each operation type (write, read, update, insert, scan, rmw, ...) has its own histogram;
//! the benchmark's overall latency is their merge.
//!
//! The loops allocate nothing per operation themselves: keys are encoded into a per-thread
//! buffer, values are slices of a pre-generated buffer, reads reuse one value buffer. Each
//! thread publishes its operation count to its own cache line after every operation; the
//! calling thread wakes every `--sample_interval_ms` to record a throughput sample (with the
//! engine's stall time over the interval, from `DbStats::stall_micros` deltas) and ten times a
//! second to draw the progress bar (only when stderr is a terminal and the benchmark has at
//! least [`PROGRESS_MIN_OPS`] operations).

use crate::config::{BenchConfig, Benchmark};
use crate::engine::{EngineError, EngineResult, KvBatch, KvEngine};
use crate::report::{self, BenchResult, LatencySummary, OpLatency, Sample, StatsSummary};
use crate::verify;
use crate::workload::{encode_key, thread_seed, KeyGen, ValueGen};
use crate::ycsb::{
    merge_update, next_below, zeta, AckCounter, KeyChooser, LoadOrder, OpChooser,
    RequestDistribution, UpdateMode, YcsbOp, ZIPFIAN_CONSTANT,
};
use hdrhistogram::Histogram;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rand::rngs::SmallRng;
use rand::SeedableRng;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{mpsc, Barrier, OnceLock};
use std::time::{Duration, Instant};

/// Benchmarks with fewer operations than this get no progress bar.
pub const PROGRESS_MIN_OPS: u64 = 100_000;

/// Largest latency the histograms hold exactly (longer ones are recorded as this): one hour.
const MAX_LATENCY_NANOS: u64 = 3_600_000_000_000;

/// A new, empty latency histogram (nanoseconds, 3 significant digits).
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_NANOS, 3).expect("constant bounds are valid")
}

/// The operation types that get their own latency histogram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// A db_bench put (fills, overwrite).
    Write,
    /// A point read.
    Read,
    /// One entry of readseq.
    Next,
    /// One seek (+ nexts) of seekrandom.
    Seek,
    /// A flush.
    Flush,
    /// A YCSB update (put of an existing key).
    Update,
    /// A YCSB insert (put of a new key).
    Insert,
    /// A YCSB scan.
    Scan,
    /// A YCSB read-modify-write.
    Rmw,
    /// A get of readrandomwriterandom.
    Get,
    /// A put of readrandomwriterandom.
    Put,
    /// A delete (deleterandom).
    Delete,
    /// A multiget of multireadrandom (one batch of keys).
    Multiget,
}

impl OpKind {
    /// Number of operation types.
    pub const COUNT: usize = 13;
    /// Every operation type, in report order.
    pub const ALL: [OpKind; OpKind::COUNT] = [
        OpKind::Write,
        OpKind::Read,
        OpKind::Next,
        OpKind::Seek,
        OpKind::Flush,
        OpKind::Update,
        OpKind::Insert,
        OpKind::Scan,
        OpKind::Rmw,
        OpKind::Get,
        OpKind::Put,
        OpKind::Delete,
        OpKind::Multiget,
    ];

    /// The name in reports.
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Write => "write",
            OpKind::Read => "read",
            OpKind::Next => "next",
            OpKind::Seek => "seek",
            OpKind::Flush => "flush",
            OpKind::Update => "update",
            OpKind::Insert => "insert",
            OpKind::Scan => "scan",
            OpKind::Rmw => "rmw",
            OpKind::Get => "get",
            OpKind::Put => "put",
            OpKind::Delete => "delete",
            OpKind::Multiget => "multiget",
        }
    }
}

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

    fn latest_zetan(&self, num: u64) -> f64 {
        *self
            .latest_zetan
            .get_or_init(|| zeta(num.max(1) - 1, ZIPFIAN_CONSTANT))
    }
}

/// The parameters one worker thread needs, copied out of the [`BenchConfig`].
#[derive(Clone, Copy, Debug)]
struct Plan {
    num: u64,
    reads: u64,
    key_size: usize,
    value_size: usize,
    seek_nexts: u64,
    streams: u64,
    threads: usize,
    verify: bool,
    seed: u64,
    distribution: Option<RequestDistribution>,
    read_percent: u32,
    /// Open-loop pacing: each thread starts an operation every `pace` (`--ops_per_sec`
    /// spread over the threads, or `--benchmark_write_rate_limit` for the write-only
    /// benchmarks, whichever is slower); `None`: as fast as the engine goes.
    pace: Option<Duration>,
    /// The pace of a *whilewriting benchmark's writer (`--benchmark_write_rate_limit`).
    writer_pace: Option<Duration>,
    /// `--duration`: each thread stops after this long (counts are then unbounded).
    duration: Option<Duration>,
    /// `--batch_size`: writes per batch of the write-only benchmarks.
    batch: u64,
    /// `--multiread_batch_size`.
    multiread_batch: u64,
    /// The YCSB operation mix of the benchmark (core workload or `-P` file).
    mix: Option<crate::ycsb::YcsbMix>,
    /// `ycsb-load` inserts in key order (`insertorder=ordered`).
    ordered_inserts: bool,
    /// How YCSB updates write (`--ycsb_update`).
    update: UpdateMode,
    /// A YCSB record's fields, and whether an update writes them all.
    fields: (u64, bool),
}

impl Plan {
    /// How many operations a loop meant to run `n` does: `n`, or unbounded under
    /// `--duration` (the timer's deadline ends it).
    fn count(&self, n: u64) -> u64 {
        if self.duration.is_some() {
            u64::MAX
        } else {
            n
        }
    }
}

/// A per-thread operation counter on its own cache line, read by the sampler.
#[repr(align(128))]
#[derive(Default)]
struct Slot(AtomicU64);

/// What one thread measured.
struct ThreadOut {
    hists: [Option<Histogram<u64>>; OpKind::COUNT],
    ops: u64,
    bytes: u64,
    found: u64,
    lookups: u64,
    /// YCSB updates of a record that does not exist (written nothing).
    failed: u64,
    start: Instant,
    finish: Instant,
}

/// Times operations: one clock read per operation, a histogram per operation type, and the
/// thread's operation counter.
///
/// Paced (open loop, `--ops_per_sec`), operation `i` is due at `start + i x pace`: the thread
/// waits for it when early, and its latency counts from when it was due, so time an operation
/// spent waiting behind a slow one is part of its latency (no coordinated omission).
struct OpTimer<'a> {
    hists: [Option<Histogram<u64>>; OpKind::COUNT],
    last: Instant,
    start: Instant,
    ops: u64,
    slot: &'a AtomicU64,
    pace: Option<Duration>,
    /// `--duration`: no operation starts after this instant.
    deadline: Option<Instant>,
}

impl<'a> OpTimer<'a> {
    fn start(slot: &'a AtomicU64, plan: &Plan) -> Self {
        Self::with_pace(slot, plan.pace, plan.duration)
    }

    fn with_pace(slot: &'a AtomicU64, pace: Option<Duration>, duration: Option<Duration>) -> Self {
        let now = Instant::now();
        OpTimer {
            hists: Default::default(),
            last: now,
            start: now,
            ops: 0,
            slot,
            pace,
            deadline: duration.map(|d| now + d),
        }
    }

    /// False once `--duration` is over (always true without it).
    #[inline]
    fn more(&self) -> bool {
        self.deadline.is_none_or(|d| self.last < d)
    }

    #[inline]
    fn done(&mut self, kind: OpKind) {
        self.done_n(kind, 1);
    }

    /// Records one timed operation that did `n` entries' work (a batch): one latency sample,
    /// `n` operations counted (db_bench's `FinishedOps(..., n)`).
    #[inline]
    fn done_n(&mut self, kind: OpKind, n: u64) {
        let now = Instant::now();
        let nanos = u64::try_from(now.duration_since(self.last).as_nanos()).unwrap_or(u64::MAX);
        self.hists[kind as usize]
            .get_or_insert_with(new_histogram)
            .saturating_record(nanos);
        self.last = now;
        self.ops += n;
        self.slot.store(self.ops, Relaxed);
        if let Some(pace) = self.pace {
            let due = self.start + pace.saturating_mul(self.ops.min(u32::MAX as u64) as u32);
            wait_until(due);
            self.last = due;
        }
    }

    fn finish(self, bytes: u64, found: u64, lookups: u64) -> ThreadOut {
        ThreadOut {
            hists: self.hists,
            ops: self.ops,
            bytes,
            found,
            lookups,
            failed: 0,
            start: self.start,
            finish: self.last,
        }
    }
}

/// Waits until `due`: sleeps while more than 200 us are left (the sleep's granularity), then
/// yields until it passes, so a paced thread starts each operation on time without holding a
/// core the engine's background threads need.
fn wait_until(due: Instant) {
    loop {
        let now = Instant::now();
        if now >= due {
            return;
        }
        let left = due - now;
        if left > Duration::from_micros(200) {
            std::thread::sleep(left - Duration::from_micros(150));
        } else {
            std::thread::yield_now();
        }
    }
}

/// Values to write: slices of the value generator, or, under `--verify`, copies stamped with
/// the key's first bytes and a unique version, so a value read back names the key it belongs to.
struct Values {
    gen: ValueGen,
    verify: bool,
    buf: Vec<u8>,
    version: u64,
}

impl Values {
    fn new(seed: u64, plan: &Plan, thread: usize) -> Self {
        Values {
            gen: ValueGen::new(seed ^ 0x5555_5555_5555_5555, plan.value_size),
            verify: plan.verify,
            buf: Vec::with_capacity(plan.value_size),
            version: (thread as u64) << 40,
        }
    }

    #[inline]
    fn next(&mut self, key: &[u8]) -> &[u8] {
        if !self.verify {
            return self.gen.next_value();
        }
        self.buf.clear();
        self.buf.extend_from_slice(self.gen.next_value());
        let kp = verify::stamp_len(key.len(), self.buf.len());
        self.buf[..kp].copy_from_slice(&key[..kp]);
        self.version += 1;
        let v = self.version.to_be_bytes();
        let room = (self.buf.len() - kp).min(8);
        self.buf[kp..kp + room].copy_from_slice(&v[..room]);
        &self.buf
    }
}

/// True when operation `i` of a readrandomwriterandom thread is a get: db_bench's pattern, in
/// each run of 100 operations the first `read_percent` are gets and the others puts.
pub fn rrwr_is_get(i: u64, read_percent: u32) -> bool {
    i % 100 < u64::from(read_percent)
}

/// The gets among the first `ops` operations of a readrandomwriterandom thread.
pub fn rrwr_gets(ops: u64, read_percent: u32) -> u64 {
    let p = u64::from(read_percent.min(100));
    ops / 100 * p + (ops % 100).min(p)
}

/// The share of `total` operations of thread `t` of `threads`, as a range of indices.
fn thread_range(total: u64, threads: usize, t: usize) -> std::ops::Range<u64> {
    let (n, t) = (threads as u64, t as u64);
    let (base, extra) = (total / n, total % n);
    let start = t * base + t.min(extra);
    start..start + base + u64::from(t < extra)
}

/// Shared inputs of the threads of one benchmark.
struct Shared<'a> {
    engine: &'a dyn KvEngine,
    bench: Benchmark,
    plan: Plan,
    state: &'a RunState,
    barrier: &'a Barrier,
}

/// Gets `key` into `buf`; when found, counts it in `found` and its key + value bytes in
/// `bytes`.
#[inline]
fn lookup(
    engine: &dyn KvEngine,
    key: &[u8],
    buf: &mut Vec<u8>,
    found: &mut u64,
    bytes: &mut u64,
) -> EngineResult<()> {
    if engine.get(key, buf)? {
        *found += 1;
        *bytes += (key.len() + buf.len()) as u64;
    }
    Ok(())
}

/// The key number of fillseq's `i`-th write with `streams` interleaved streams over
/// `[0, num)` (`num` a multiple of `streams`): stream `i % streams`, its `i / streams`-th key.
/// One stream is `i` itself.
fn stream_key(i: u64, num: u64, streams: u64) -> u64 {
    if streams <= 1 {
        return i;
    }
    let per = num / streams;
    (i % streams) * per + (i / streams) % per
}

/// Writes (or deletes, `delete`) the keys `next_key(0..count)`, one at a time or in batches
/// of `plan.batch`, until `count` or the deadline; returns the key + value bytes written.
#[allow(clippy::too_many_arguments)]
fn write_loop(
    engine: &dyn KvEngine,
    plan: &Plan,
    t: &mut OpTimer<'_>,
    values: &mut Values,
    key: &mut [u8],
    count: u64,
    delete: bool,
    mut next_key: impl FnMut(u64) -> u64,
) -> EngineResult<u64> {
    let per = if delete {
        plan.key_size
    } else {
        plan.key_size + plan.value_size
    } as u64;
    let kind = if delete {
        OpKind::Delete
    } else {
        OpKind::Write
    };
    let mut batch = KvBatch::new();
    let (mut i, mut bytes) = (0u64, 0u64);
    while i < count && t.more() {
        if plan.batch <= 1 {
            encode_key(next_key(i), key);
            if delete {
                engine.delete(key)?;
            } else {
                engine.put(key, values.next(key))?;
            }
            i += 1;
            bytes += per;
            t.done(kind);
        } else {
            batch.clear();
            let n = plan.batch.min(count - i);
            for j in 0..n {
                encode_key(next_key(i + j), key);
                if delete {
                    batch.delete(key);
                } else {
                    batch.put(key, values.next(key));
                }
            }
            engine.write_batch(&batch)?;
            i += n;
            bytes += per * n;
            t.done_n(kind, n);
        }
    }
    Ok(bytes)
}

/// The body of one benchmark thread.
fn worker(sh: &Shared<'_>, thread: usize, seed: u64, slot: &AtomicU64) -> EngineResult<ThreadOut> {
    if sh.bench.is_ycsb() {
        return ycsb_worker(sh, thread, seed, slot);
    }
    let (engine, plan) = (sh.engine, sh.plan);
    let mut key = vec![0u8; plan.key_size];
    let mut keys = KeyGen::new(seed, plan.num);
    let mut values = Values::new(seed, &plan, thread);
    let mut value_buf = Vec::new();
    let write_bytes = (plan.key_size + plan.value_size) as u64;
    let (mut bytes, mut found, mut lookups) = (0u64, 0u64, 0u64);
    let reads = plan.count(plan.reads);
    sh.barrier.wait();
    let mut t = OpTimer::start(slot, &plan);
    match sh.bench {
        Benchmark::Fillseq
        | Benchmark::Fillrandom
        | Benchmark::Overwrite
        | Benchmark::Deleterandom => {
            let n = plan.count(plan.num);
            let delete = sh.bench == Benchmark::Deleterandom;
            let sequential = sh.bench == Benchmark::Fillseq;
            bytes = write_loop(
                engine,
                &plan,
                &mut t,
                &mut values,
                &mut key,
                n,
                delete,
                |i| match sequential {
                    true => stream_key(i, plan.num, plan.streams),
                    false => keys.next_key(),
                },
            )?;
        }
        Benchmark::Readrandom | Benchmark::Readwhilewriting => {
            for _ in 0..reads {
                if !t.more() {
                    break;
                }
                encode_key(keys.next_key(), &mut key);
                lookup(engine, &key, &mut value_buf, &mut found, &mut bytes)?;
                t.done(OpKind::Read);
            }
        }
        Benchmark::Multireadrandom => {
            let batch = plan.multiread_batch as usize;
            let mut batch_keys = vec![vec![0u8; plan.key_size]; batch];
            let mut got = Vec::with_capacity(batch);
            let mut done = 0u64;
            while done < reads && t.more() {
                let n = (batch as u64).min(reads - done) as usize;
                for k in &mut batch_keys[..n] {
                    encode_key(keys.next_key(), k);
                }
                let refs: Vec<&[u8]> = batch_keys[..n].iter().map(|k| k.as_slice()).collect();
                engine.multi_get(&refs, &mut got)?;
                for (k, v) in refs.iter().zip(&got) {
                    if let Some(v) = v {
                        found += 1;
                        bytes += (k.len() + v.len()) as u64;
                    }
                }
                done += n as u64;
                t.done_n(OpKind::Multiget, n as u64);
            }
        }
        Benchmark::Readseq => {
            let mut cursor = engine.cursor()?;
            cursor.seek_to_first();
            while t.ops < reads && cursor.valid() && t.more() {
                bytes += (cursor.key().len() + cursor.value().len()) as u64;
                t.done(OpKind::Next);
                cursor.next();
            }
            cursor.status()?;
        }
        Benchmark::Seekrandom | Benchmark::Seekrandomwhilewriting => {
            for _ in 0..reads {
                if !t.more() {
                    break;
                }
                encode_key(keys.next_key(), &mut key);
                // A fresh iterator per seek, as db_bench does without a tailing iterator.
                let (exact, n) = seek_and_step(engine, &key, plan.seek_nexts as usize)?;
                found += u64::from(exact);
                bytes += n;
                t.done(OpKind::Seek);
            }
        }
        Benchmark::Readrandomwriterandom => {
            for i in 0..reads {
                if !t.more() {
                    break;
                }
                encode_key(keys.next_key(), &mut key);
                if rrwr_is_get(i, plan.read_percent) {
                    lookups += 1;
                    lookup(engine, &key, &mut value_buf, &mut found, &mut bytes)?;
                    t.done(OpKind::Get);
                } else {
                    engine.put(&key, values.next(&key))?;
                    bytes += write_bytes;
                    t.done(OpKind::Put);
                }
            }
        }
        Benchmark::Updaterandom => {
            // db_bench's updaterandom: a get, then a put of a new value, timed as one.
            for _ in 0..reads {
                if !t.more() {
                    break;
                }
                encode_key(keys.next_key(), &mut key);
                lookup(engine, &key, &mut value_buf, &mut found, &mut bytes)?;
                engine.put(&key, values.next(&key))?;
                bytes += write_bytes;
                t.done(OpKind::Rmw);
            }
        }
        Benchmark::Flush => {
            engine.flush()?;
            t.done(OpKind::Flush);
        }
        Benchmark::WaitForCompaction => {
            engine.wait_for_compaction()?;
            t.done(OpKind::Flush);
        }
        Benchmark::Compact => {
            engine.compact()?;
            t.done(OpKind::Flush);
        }
        Benchmark::Stats | Benchmark::Levelstats | Benchmark::Sstables => {
            unreachable!("report benchmarks are printed by run_benchmarks")
        }
        Benchmark::YcsbLoad
        | Benchmark::YcsbA
        | Benchmark::YcsbB
        | Benchmark::YcsbC
        | Benchmark::YcsbD
        | Benchmark::YcsbE
        | Benchmark::YcsbF
        | Benchmark::YcsbRun => unreachable!("handled by ycsb_worker"),
    }
    Ok(t.finish(bytes, found, lookups))
}

/// The body of one thread of a YCSB benchmark. `--reads` (`--ops`) is the operation count of
/// all threads together and `--num` the record count, as in YCSB.
fn ycsb_worker(
    sh: &Shared<'_>,
    thread: usize,
    seed: u64,
    slot: &AtomicU64,
) -> EngineResult<ThreadOut> {
    let (engine, plan, inserts) = (sh.engine, sh.plan, &sh.state.inserts);
    let mut key = vec![0u8; plan.key_size];
    let mut values = Values::new(seed, &plan, thread);
    let mut value_buf = Vec::new();
    let mut rng = SmallRng::seed_from_u64(seed);
    let write_bytes = (plan.key_size + plan.value_size) as u64;
    let (mut bytes, mut found, mut lookups, mut failed) = (0u64, 0u64, 0u64, 0u64);
    let Some(mix) = plan.mix else {
        // ycsb-load: this thread's share of a seeded permutation of the records (or of the
        // records in key order, for a workload with insertorder=ordered).
        let order = LoadOrder::new(plan.num, plan.seed);
        let range = thread_range(plan.num, plan.threads, thread);
        sh.barrier.wait();
        let mut t = OpTimer::start(slot, &plan);
        for i in range {
            if !t.more() {
                break;
            }
            let record = if plan.ordered_inserts { i } else { order.at(i) };
            encode_key(record, &mut key);
            engine.put(&key, values.next(&key))?;
            bytes += write_bytes;
            t.done(OpKind::Insert);
        }
        return Ok(t.finish(bytes, 0, 0));
    };
    let dist = plan.distribution.unwrap_or(mix.distribution);
    let ops = thread_range(plan.reads, plan.threads, thread);
    // YCSB's allowance for the keys inserted during the run (`expectednewkeys`).
    let expected_new_keys = (plan.reads as f64 * mix.insert * 2.0) as u64;
    let latest_zetan = if dist == RequestDistribution::Latest {
        sh.state.latest_zetan(plan.num)
    } else {
        0.0
    };
    let chooser = OpChooser::new(&mix);
    let mut keys = KeyChooser::new(
        dist,
        plan.num,
        expected_new_keys,
        latest_zetan,
        mix.zipfian_constant,
    );
    let ops = if plan.duration.is_some() {
        0..u64::MAX
    } else {
        ops
    };
    sh.barrier.wait();
    let mut t = OpTimer::start(slot, &plan);
    for _ in ops {
        if !t.more() {
            break;
        }
        match chooser.next(&mut rng) {
            YcsbOp::Read => {
                encode_key(keys.next(&mut rng, inserts), &mut key);
                lookups += 1;
                lookup(engine, &key, &mut value_buf, &mut found, &mut bytes)?;
                t.done(OpKind::Read);
            }
            YcsbOp::Update => {
                encode_key(keys.next(&mut rng, inserts), &mut key);
                let new = values.next(&key);
                if update(engine, &plan, &key, new, &mut rng, &mut value_buf)? {
                    bytes += write_bytes;
                } else {
                    failed += 1;
                }
                t.done(OpKind::Update);
            }
            YcsbOp::Insert => {
                let k = inserts.reserve();
                encode_key(k, &mut key);
                engine.put(&key, values.next(&key))?;
                inserts.acknowledge(k);
                bytes += write_bytes;
                t.done(OpKind::Insert);
            }
            YcsbOp::Scan => {
                encode_key(keys.next(&mut rng, inserts), &mut key);
                let len = 1 + next_below(&mut rng, mix.max_scan_length);
                bytes += seek_and_step(engine, &key, len as usize)?.1;
                t.done(OpKind::Scan);
            }
            YcsbOp::ReadModifyWrite => {
                encode_key(keys.next(&mut rng, inserts), &mut key);
                lookups += 1;
                lookup(engine, &key, &mut value_buf, &mut found, &mut bytes)?;
                let new = values.next(&key);
                if update(engine, &plan, &key, new, &mut rng, &mut value_buf)? {
                    bytes += write_bytes;
                } else {
                    failed += 1;
                }
                t.done(OpKind::Rmw);
            }
        }
    }
    inserts.advance();
    let mut out = t.finish(bytes, found, lookups);
    out.failed = failed;
    Ok(out)
}

/// One YCSB update of `key` as `plan.update` says (module `ycsb`): merged, it reads the record
/// into `buf`, and a missing one is a failed operation (returns false, writes nothing); then
/// `new`'s bytes replace one field chosen uniformly (every field under writeallfields) and the
/// record is put back. Blind, it puts `new`. Returns true when it wrote.
fn update(
    engine: &dyn KvEngine,
    plan: &Plan,
    key: &[u8],
    new: &[u8],
    rng: &mut SmallRng,
    buf: &mut Vec<u8>,
) -> EngineResult<bool> {
    if plan.update == UpdateMode::Blind {
        engine.put(key, new)?;
        return Ok(true);
    }
    if !engine.get(key, buf)? {
        return Ok(false);
    }
    let (fields, all) = plan.fields;
    let field = next_below(rng, fields.max(1));
    merge_update(buf, new, fields, field, all);
    engine.put(key, buf)?;
    Ok(true)
}

/// The background writer of `readwhilewriting`: random puts until `stop` is set; returns its
/// number of writes. It writes at least once, even when the readers are done before it is first
/// scheduled (a few thousand reads of a small database take milliseconds), so that every
/// *whilewriting result had a writer.
fn background_writer(
    engine: &dyn KvEngine,
    plan: Plan,
    seed: u64,
    stop: &AtomicBool,
    barrier: &Barrier,
) -> EngineResult<u64> {
    let mut key = vec![0u8; plan.key_size];
    let mut keys = KeyGen::new(seed, plan.num);
    let mut values = Values::new(seed, &plan, plan.threads);
    let mut writes = 0u64;
    barrier.wait();
    let start = Instant::now();
    loop {
        encode_key(keys.next_key(), &mut key);
        engine.put(&key, values.next(&key))?;
        writes += 1;
        if stop.load(Relaxed) {
            break;
        }
        if let Some(pace) = plan.writer_pace {
            // --benchmark_write_rate_limit: the next write is due at start + writes x pace;
            // wake in slices so that the end of the readers stops a slow writer promptly.
            let due = start + pace.saturating_mul(writes.min(u32::MAX as u64) as u32);
            while !stop.load(Relaxed) && Instant::now() < due {
                wait_until(due.min(Instant::now() + Duration::from_millis(50)));
            }
        }
    }
    Ok(writes)
}

/// Signals when dropped (even if the thread fails or panics): the last reader stops the
/// writer, and the sampling thread learns that one more worker is done.
struct SetOnDrop<'a> {
    readers_left: &'a AtomicUsize,
    stop: &'a AtomicBool,
    done: mpsc::Sender<()>,
}

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        if self.readers_left.fetch_sub(1, Relaxed) == 1 {
            self.stop.store(true, Relaxed);
        }
        let _ = self.done.send(());
    }
}

fn progress_bar(name: &str, total: u64, enabled: bool) -> Option<ProgressBar> {
    if !enabled || total < PROGRESS_MIN_OPS || !std::io::stderr().is_terminal() {
        return None;
    }
    let pb = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    let style = ProgressStyle::with_template(
        "{prefix:<16} [{elapsed_precise}] {wide_bar} {human_pos}/{human_len} ops (ETA {eta})",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    pb.set_style(style);
    pb.set_prefix(name.to_string());
    Some(pb)
}

fn join<T>(h: std::thread::ScopedJoinHandle<'_, EngineResult<T>>) -> EngineResult<T> {
    h.join().unwrap_or_else(|panic| {
        let msg = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        Err(format!("benchmark thread panicked: {msg}").into())
    })
}

fn stall_micros(engine: &dyn KvEngine) -> Option<u64> {
    engine.stats().map(|s| s.stall_micros())
}

/// Runs one benchmark (the `bench_index`-th of the run, which selects the threads' seeds) and
/// returns its merged figures. `show_progress` allows a progress bar (still only on a terminal).
/// While the threads run, the calling thread samples throughput and the engine's stall time
/// every `--sample_interval_ms`.
pub fn run_benchmark(
    engine: &dyn KvEngine,
    config: &BenchConfig,
    state: &RunState,
    bench: Benchmark,
    bench_index: usize,
    show_progress: bool,
    reporter: Option<&mut IntervalReporter>,
) -> EngineResult<BenchResult> {
    // Flush is one operation, not one per thread.
    let threads = if bench.is_maintenance() {
        1
    } else {
        config.threads.max(1)
    };
    let per_thread = |rate: u64| Duration::from_secs_f64(threads as f64 / rate as f64);
    let ops_pace = (config.ops_per_sec > 0).then(|| per_thread(config.ops_per_sec));
    // --benchmark_write_rate_limit in bytes per second: entries per second for writes of
    // key_size + value_size bytes.
    let entry_bytes = (config.key_size + config.value_size).max(1) as u64;
    let write_rate = (config.benchmark_write_rate_limit > 0)
        .then(|| (config.benchmark_write_rate_limit / entry_bytes).max(1));
    let pace = match (bench.is_write_only(), write_rate) {
        (true, Some(rate)) => Some(ops_pace.map_or(per_thread(rate), |p| p.max(per_thread(rate)))),
        _ => ops_pace,
    };
    let plan = Plan {
        pace,
        writer_pace: write_rate.map(|rate| Duration::from_secs_f64(1.0 / rate as f64)),
        duration: (config.duration > 0).then(|| Duration::from_secs(config.duration)),
        batch: config.batch_size.max(1),
        multiread_batch: config.multiread_batch_size.max(1),
        mix: config.mix_for(bench),
        ordered_inserts: config.ordered_inserts(),
        update: config.ycsb_update,
        fields: config.ycsb_fields(),
        num: config.num,
        reads: config.reads_per_thread(),
        key_size: config.key_size,
        value_size: config.value_size,
        seek_nexts: config.seek_nexts,
        streams: config.streams,
        threads,
        verify: config.verify,
        seed: config.seed,
        distribution: config.distribution,
        read_percent: config.read_percent(),
    };
    if bench == Benchmark::YcsbRun && plan.mix.is_none() {
        return Err("ycsb-run needs a YCSB workload (-P FILE or -p NAME=VALUE)".into());
    }
    let total_ops = match bench {
        _ if plan.duration.is_some() => 0,
        Benchmark::Fillseq
        | Benchmark::Fillrandom
        | Benchmark::Overwrite
        | Benchmark::Deleterandom => plan.num * threads as u64,
        Benchmark::Flush | Benchmark::WaitForCompaction | Benchmark::Compact => 1,
        Benchmark::YcsbLoad => plan.num,
        b if b.is_ycsb() => plan.reads,
        _ => plan.reads * threads as u64,
    };
    let with_writer = bench.has_writer();
    let slots: Vec<Slot> = (0..threads).map(|_| Slot::default()).collect();
    let stop = AtomicBool::new(false);
    let readers_left = AtomicUsize::new(threads);
    // The workers, the writer, and this (sampling) thread start together.
    let barrier = Barrier::new(threads + usize::from(with_writer) + 1);
    let pb = progress_bar(bench.name(), total_ops, show_progress);
    let interval = Duration::from_millis(config.sample_interval_ms.max(1));
    let stall_before = stall_micros(engine);
    let shared = Shared {
        engine,
        bench,
        plan,
        state,
        barrier: &barrier,
    };
    let (done_tx, done_rx) = mpsc::channel();

    let (outs, writer, samples) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let seed = thread_seed(config.seed, bench_index, t);
                let (shared, slot) = (&shared, &slots[t].0);
                let guard = SetOnDrop {
                    readers_left: &readers_left,
                    stop: &stop,
                    done: done_tx.clone(),
                };
                s.spawn(move || {
                    let _guard = guard;
                    worker(shared, t, seed, slot)
                })
            })
            .collect();
        let writer = with_writer.then(|| {
            let seed = thread_seed(config.seed, bench_index, threads);
            let (stop, barrier) = (&stop, &barrier);
            s.spawn(move || background_writer(engine, plan, seed, stop, barrier))
        });
        barrier.wait();
        let samples = sample_until_done(
            engine,
            &slots,
            threads,
            &done_rx,
            interval,
            stall_before,
            pb.as_ref(),
            reporter.map(|r| (r, bench.name())),
        );
        if let Some(pb) = &pb {
            pb.finish_and_clear();
        }
        let outs: Vec<_> = handles.into_iter().map(join).collect();
        (outs, writer.map(join), samples)
    });

    let outs = outs.into_iter().collect::<EngineResult<Vec<ThreadOut>>>()?;
    let writer_ops = writer.transpose()?;
    let mut result = merge(bench, outs, writer_ops, config.histogram, plan.mix)?;
    result.samples = samples;
    result.stall_micros = match (stall_before, stall_micros(engine)) {
        (Some(b), Some(a)) => Some(a.saturating_sub(b)),
        _ => None,
    };
    Ok(result)
}

/// `--report_interval_seconds`: a live line on stderr and a CSV row per interval.
pub struct IntervalReporter {
    every: Duration,
    csv: std::io::BufWriter<std::fs::File>,
    path: std::path::PathBuf,
}

impl IntervalReporter {
    /// Reports every `every`, into the CSV file `path` (created or truncated, with its header
    /// line).
    pub fn create(path: &std::path::Path, every: Duration) -> EngineResult<Self> {
        let file = std::fs::File::create(path)
            .map_err(|e| format!("creating --report_file {}: {e}", path.display()))?;
        let mut csv = std::io::BufWriter::new(file);
        writeln!(
            csv,
            "benchmark,secs_elapsed,interval_ops,interval_qps,interval_stall_ms,total_ops"
        )?;
        Ok(IntervalReporter {
            every,
            csv,
            path: path.to_path_buf(),
        })
    }

    /// Writes one interval: `secs` since the benchmark started, `ops` and `stall_micros` in
    /// the interval of `interval_secs`, `total` operations so far.
    fn line(
        &mut self,
        bench: &str,
        secs: f64,
        interval_secs: f64,
        ops: u64,
        stall_micros: u64,
        total: u64,
    ) {
        let qps = if interval_secs > 0.0 {
            ops as f64 / interval_secs
        } else {
            0.0
        };
        let stall_ms = stall_micros as f64 / 1e3;
        eprintln!(
            "{bench:<w$} {secs:>8.1} s: {qps:>10.0} ops/s in the last {interval_secs:.1} s, \
             {total} ops, stalled {stall_ms:.1} ms",
            w = report::NAME_WIDTH
        );
        // A failed CSV write is reported once at the end (`finish`), not per line.
        let _ = writeln!(
            self.csv,
            "{bench},{secs:.3},{ops},{qps:.1},{stall_ms:.3},{total}"
        );
    }

    /// Flushes the CSV file.
    pub fn finish(mut self) -> EngineResult<()> {
        self.csv
            .flush()
            .map_err(|e| format!("writing --report_file {}: {e}", self.path.display()).into())
    }
}

/// The sampling loop: every `interval`, the operations all threads completed and the engine's
/// stall time since the previous sample, until `threads` workers reported done; every
/// reporter interval, a live line.
#[allow(clippy::too_many_arguments)]
fn sample_until_done(
    engine: &dyn KvEngine,
    slots: &[Slot],
    threads: usize,
    done: &mpsc::Receiver<()>,
    interval: Duration,
    stall_before: Option<u64>,
    pb: Option<&ProgressBar>,
    mut reporter: Option<(&mut IntervalReporter, &str)>,
) -> Vec<Sample> {
    let start = Instant::now();
    let total = || slots.iter().map(|s| s.0.load(Relaxed)).sum::<u64>();
    let every = reporter.as_ref().map(|(r, _)| r.every);
    let mut next_report = every.map(|e| start + e);
    let (mut report_t, mut report_ops, mut report_stall) = (start, 0u64, stall_before);
    let mut samples: Vec<Sample> = Vec::new();
    let (mut last_t, mut last_ops, mut last_stall) = (start, 0u64, stall_before);
    let mut take = |now: Instant, samples: &mut Vec<Sample>| {
        let ops = total();
        let stats = engine.stats();
        let stall = stats.as_ref().map(|s| s.stall_micros());
        let dram_bytes = stats.map(|s| s.dram.total());
        let secs = now.duration_since(last_t).as_secs_f64();
        samples.push(Sample {
            t_sec: now.duration_since(start).as_secs_f64(),
            interval_sec: secs,
            ops: ops - last_ops,
            ops_per_sec: if secs > 0.0 {
                (ops - last_ops) as f64 / secs
            } else {
                0.0
            },
            stall_micros: match (last_stall, stall) {
                (Some(b), Some(a)) => a.saturating_sub(b),
                _ => 0,
            },
            dram_bytes,
        });
        (last_t, last_ops, last_stall) = (now, ops, stall);
        last_ops
    };
    let mut next = start + interval;
    let mut finished = 0;
    let mut sampled_ops = 0;
    while finished < threads {
        let now = Instant::now();
        if now >= next {
            sampled_ops = take(now, &mut samples);
            next += interval;
            if next <= now {
                next = now + interval;
            }
        }
        if let (Some(due), Some((r, bench))) = (next_report, reporter.as_mut()) {
            if now >= due {
                let (ops, stall) = (total(), stall_micros(engine));
                r.line(
                    bench,
                    now.duration_since(start).as_secs_f64(),
                    now.duration_since(report_t).as_secs_f64(),
                    ops - report_ops,
                    match (report_stall, stall) {
                        (Some(b), Some(a)) => a.saturating_sub(b),
                        _ => 0,
                    },
                    ops,
                );
                (report_t, report_ops, report_stall) = (now, ops, stall);
                next_report = every.map(|e| due + e);
            }
        }
        if let Some(pb) = pb {
            pb.set_position(total());
        }
        let wake = next_report.map_or(next, |r| r.min(next));
        let wait = wake
            .saturating_duration_since(Instant::now())
            .min(Duration::from_millis(100));
        match done.recv_timeout(wait) {
            Ok(()) => finished += 1,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    if total() > sampled_ops || samples.is_empty() {
        take(Instant::now(), &mut samples);
    }
    samples
}

fn merge(
    bench: Benchmark,
    outs: Vec<ThreadOut>,
    writer_ops: Option<u64>,
    with_histogram: bool,
    mix: Option<crate::ycsb::YcsbMix>,
) -> EngineResult<BenchResult> {
    let mut by_kind: [Option<Histogram<u64>>; OpKind::COUNT] = Default::default();
    let (mut ops, mut bytes, mut found, mut lookups, mut failed, mut thread_seconds) =
        (0u64, 0u64, 0u64, 0u64, 0u64, 0f64);
    let mut start: Option<Instant> = None;
    let mut finish: Option<Instant> = None;
    let merge_err = |e| EngineError::from(format!("merging histograms: {e:?}"));
    for o in &outs {
        for (slot, h) in by_kind.iter_mut().zip(&o.hists) {
            if let Some(h) = h {
                slot.get_or_insert_with(new_histogram)
                    .add(h)
                    .map_err(merge_err)?;
            }
        }
        ops += o.ops;
        bytes += o.bytes;
        found += o.found;
        lookups += o.lookups;
        failed += o.failed;
        thread_seconds += o.finish.duration_since(o.start).as_secs_f64();
        start = Some(start.map_or(o.start, |s| s.min(o.start)));
        finish = Some(finish.map_or(o.finish, |f| f.max(o.finish)));
    }
    let mut hist = new_histogram();
    let mut ops_by_type = Vec::new();
    for (kind, h) in OpKind::ALL.iter().zip(&by_kind) {
        if let Some(h) = h {
            hist.add(h).map_err(merge_err)?;
            ops_by_type.push(OpLatency::new(kind.name(), h));
        }
    }
    let seconds = match (start, finish) {
        (Some(s), Some(f)) => f.duration_since(s).as_secs_f64(),
        _ => 0.0,
    };
    let ycsb_lookups = mix.is_some_and(|m| m.read + m.rmw > 0.0);
    let mixed = ycsb_lookups || bench == Benchmark::Readrandomwriterandom;
    let reports_found = mixed
        || matches!(
            bench,
            Benchmark::Readrandom
                | Benchmark::Readwhilewriting
                | Benchmark::Seekrandom
                | Benchmark::Seekrandomwhilewriting
                | Benchmark::Multireadrandom
                | Benchmark::Updaterandom
        );
    let mut result = BenchResult::new(
        bench.name(),
        ops,
        seconds,
        thread_seconds,
        bytes,
        LatencySummary::from_histogram(&hist),
        reports_found.then_some(found),
        writer_ops,
    );
    result.ops_by_type = ops_by_type;
    if with_histogram {
        result.histogram = report::histogram_buckets(&hist);
    }
    if mixed {
        result.lookups = Some(lookups);
    }
    if mix.is_some_and(|m| m.update + m.rmw > 0.0) {
        result.failed = Some(failed);
    }
    Ok(result)
}

/// Runs every benchmark of `config` in order on `engine`, printing each result to `out` as it
/// completes, with the line of what it made the engine do (and, under `--statistics`, the
/// engine's complete figures); `stats`, `levelstats` and `sstables` print the engine's state
/// instead. Fill benchmarks are skipped under `--use_existing_db`, as db_bench does. Stops at
/// the first failing benchmark.
pub fn run_benchmarks(
    engine: &dyn KvEngine,
    config: &BenchConfig,
    out: &mut dyn Write,
    show_progress: bool,
) -> EngineResult<Vec<BenchResult>> {
    let mut results = Vec::with_capacity(config.benchmarks.len());
    let state = RunState::new(config.num);
    let mut reporter = match config.report_interval_seconds {
        0 => None,
        secs => Some(IntervalReporter::create(
            &config.report_file,
            Duration::from_secs(secs),
        )?),
    };
    for (i, &bench) in config.benchmarks.iter().enumerate() {
        if config.use_existing_db && bench.is_fill() {
            writeln!(
                out,
                "{:<w$} : skipped (--use_existing_db is true)",
                bench.name(),
                w = report::NAME_WIDTH
            )?;
            continue;
        }
        if bench.is_report() {
            write!(out, "{}", report_benchmark(engine, bench)?)?;
            out.flush()?;
            continue;
        }
        let before = engine.stats();
        let mut result = run_benchmark(
            engine,
            config,
            &state,
            bench,
            i,
            show_progress,
            reporter.as_mut(),
        )
        .map_err(|e| EngineError::from(format!("benchmark {}: {e}", bench.name())))?;
        let after = engine.stats();
        if let (Some(b), Some(a)) = (&before, &after) {
            result.engine = Some(report::EngineDelta::between(b, a));
        }
        write!(out, "{}", report::format_result(&result))?;
        if config.statistics {
            if let Some(a) = after {
                let summary = StatsSummary::new(engine.name(), a, None);
                write!(out, "{}", report::format_stats(&summary))?;
            }
        }
        out.flush()?;
        results.push(result);
    }
    if let Some(r) = reporter {
        r.finish()?;
    }
    Ok(results)
}

/// The text of a report benchmark (`stats`, `levelstats`, `sstables`).
fn report_benchmark(engine: &dyn KvEngine, bench: Benchmark) -> EngineResult<String> {
    let Some(stats) = engine.stats() else {
        return Ok(format!(
            "{:<w$} : {} has no TierKV figures to print\n",
            bench.name(),
            engine.name(),
            w = report::NAME_WIDTH
        ));
    };
    Ok(match bench {
        Benchmark::Stats => report::format_stats(&StatsSummary::new(engine.name(), stats, None)),
        Benchmark::Levelstats => report::format_level_stats(&stats),
        Benchmark::Sstables => report::format_sstables(&engine.live_tables()?),
        _ => unreachable!("only report benchmarks"),
    })
}

/// The engine's final figures, when it has them.
pub fn final_stats(engine: &dyn KvEngine) -> EngineResult<Option<StatsSummary>> {
    let Some(stats) = engine.stats() else {
        return Ok(None);
    };
    let logical = engine.logical_size()?;
    Ok(Some(StatsSummary::new(engine.name(), stats, logical)))
}

/// Seeks a new cursor to `key` and reads up to `steps` entries from there (fewer at the end).
/// Returns whether the cursor landed exactly on `key`, and the key + value bytes read.
fn seek_and_step(engine: &dyn KvEngine, key: &[u8], steps: usize) -> EngineResult<(bool, u64)> {
    let mut cursor = engine.cursor()?;
    cursor.seek(key);
    let exact = cursor.valid() && cursor.key() == key;
    // db_bench's count: the entry the seek lands on, then each entry a next reaches.
    let mut bytes = 0;
    if cursor.valid() {
        bytes += (cursor.key().len() + cursor.value().len()) as u64;
    }
    for _ in 0..steps {
        if !cursor.valid() {
            break;
        }
        cursor.next();
        if cursor.valid() {
            bytes += (cursor.key().len() + cursor.value().len()) as u64;
        }
    }
    cursor.status()?;
    Ok((exact, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::parse;
    use crate::engine::{MemEngine, NullEngine};

    fn config(args: &[&str]) -> BenchConfig {
        let c = parse(args).unwrap();
        c.validate().unwrap();
        c
    }

    #[test]
    fn null_engine_counts_ops_exactly() {
        for threads in [1usize, 2] {
            let t = threads as u64;
            let c = config(&[
                "--benchmarks=fillseq,fillrandom,overwrite,readrandom,readseq,seekrandom,flush",
                "--num=500",
                "--reads=300",
                "--seek_nexts=3",
                &format!("--threads={threads}"),
            ]);
            let e = NullEngine::default();
            let mut out = Vec::new();
            let r = run_benchmarks(&e, &c, &mut out, false).unwrap();
            let ops: Vec<u64> = r.iter().map(|r| r.ops).collect();
            assert_eq!(
                ops,
                vec![500 * t, 500 * t, 500 * t, 300 * t, 300 * t, 300 * t, 1]
            );
            for r in &r[..6] {
                assert_eq!(r.latency.count, r.ops, "{}", r.name);
                assert!(r.seconds > 0.0 && r.ops_per_sec > 0.0, "{}", r.name);
            }
            assert_eq!(e.puts.load(Relaxed), 3 * 500 * t);
            assert_eq!(e.gets.load(Relaxed), 300 * t);
            // readseq: one seek_to_first per thread; seekrandom: one seek per op.
            assert_eq!(e.seeks.load(Relaxed), t + 300 * t);
            // readseq: one next per entry; seekrandom: seek_nexts per seek.
            assert_eq!(e.nexts.load(Relaxed), 300 * t + 3 * 300 * t);
            // Write bytes are key + value per put.
            assert_eq!(r[0].bytes, 500 * t * (16 + 128));
            assert_eq!(r[3].found, Some(0));
            assert_eq!(r[4].found, None);
            let text = String::from_utf8(out).unwrap();
            for name in [
                "fillseq",
                "fillrandom",
                "overwrite",
                "readrandom",
                "readseq",
            ] {
                assert!(text.contains(&format!("{name:<22} :")), "{text}");
            }
        }
    }

    /// fillseq with streams writes every key of `[0, num)` once, each stream's keys in order,
    /// the streams taking turns.
    #[test]
    fn fillseq_streams_interleave_sequential_appenders() {
        let order: Vec<u64> = (0..12).map(|i| stream_key(i, 12, 3)).collect();
        assert_eq!(order, vec![0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]);
        assert_eq!(
            (0..5).map(|i| stream_key(i, 5, 1)).collect::<Vec<_>>(),
            [0, 1, 2, 3, 4]
        );
        let c = config(&["--benchmarks=fillseq", "--num=1000", "--streams=10"]);
        let e = MemEngine::default();
        run_benchmarks(&e, &c, &mut std::io::sink(), false).unwrap();
        assert_eq!(e.len(), 1000, "every key of [0, num) once");
    }

    #[test]
    fn mem_engine_sees_the_db_bench_semantics() {
        let c = config(&[
            "--benchmarks=fillseq,readrandom,readseq,seekrandom",
            "--num=1000",
            "--key_size=10",
            "--value_size=20",
            "--seek_nexts=5",
            "--threads=2",
        ]);
        let e = MemEngine::default();
        let r = run_benchmarks(&e, &c, &mut std::io::sink(), false).unwrap();
        assert_eq!(e.len(), 1000, "fillseq writes keys 0..num");
        // Every random read of [0, num) finds its key.
        assert_eq!(r[1].ops, 2000);
        assert_eq!(r[1].found, Some(2000));
        assert_eq!(r[1].bytes, 2000 * 30);
        // readseq reads `reads` (= num) entries per thread.
        assert_eq!(r[2].ops, 2000);
        assert_eq!(r[2].bytes, 2000 * 30);
        // seekrandom finds every key; nexts stop at the end of the database.
        assert_eq!(r[3].ops, 2000);
        assert_eq!(r[3].found, Some(2000));
        // Each seek reads the entry it lands on and up to 5 more (db_bench's count).
        assert!(r[3].bytes <= 2000 * 6 * 30 && r[3].bytes > 2000 * 5 * 30);
        assert_eq!(e.logical_size().unwrap(), Some(1000 * 30));
    }

    /// With `--seek_nexts=0` a seek still reads the entry it lands on (db_bench reports its
    /// bytes; a 0.0 MB/s line said nothing was read).
    #[test]
    fn seekrandom_without_nexts_counts_the_entry_each_seek_lands_on() {
        let c = config(&[
            "--benchmarks=fillseq,seekrandom",
            "--num=100",
            "--key_size=10",
            "--value_size=20",
            "--seek_nexts=0",
        ]);
        let e = MemEngine::default();
        let r = run_benchmarks(&e, &c, &mut std::io::sink(), false).unwrap();
        assert_eq!(r[1].found, Some(100));
        assert_eq!(r[1].bytes, 100 * 30);
    }

    #[test]
    fn readseq_stops_at_the_end_and_fillrandom_is_deterministic() {
        let c = config(&[
            "--benchmarks=fillrandom,readseq",
            "--num=2000",
            "--reads=5000",
        ]);
        let a = MemEngine::default();
        let r = run_benchmarks(&a, &c, &mut std::io::sink(), false).unwrap();
        let distinct = a.len() as u64;
        // 2000 uniform draws from 2000 keys hit about 1 - 1/e of them.
        assert!((1100..1400).contains(&distinct), "{distinct}");
        assert_eq!(r[1].ops, distinct, "readseq stops at the last key");
        // Same seed, same keys; another seed, other keys.
        let b = MemEngine::default();
        run_benchmarks(&b, &c, &mut std::io::sink(), false).unwrap();
        let keys = |e: &MemEngine| {
            let mut cur = e.cursor().unwrap();
            cur.seek_to_first();
            let mut v = Vec::new();
            while cur.valid() {
                v.push(cur.key().to_vec());
                cur.next();
            }
            v
        };
        assert_eq!(keys(&a), keys(&b));
        let mut c2 = c.clone();
        c2.seed = 12345;
        let d = MemEngine::default();
        run_benchmarks(&d, &c2, &mut std::io::sink(), false).unwrap();
        assert_ne!(keys(&a), keys(&d));
        // Every key is a valid db_bench key of a number < num.
        for k in keys(&a) {
            let n = u64::from_be_bytes(k[..8].try_into().unwrap());
            assert!(n < 2000);
            assert_eq!(&k[8..], b"00000000");
        }
    }

    #[test]
    fn readrandomwriterandom_follows_db_bench_pattern() {
        // In each run of 100 operations, the first `percent` are gets.
        let pattern: Vec<bool> = (0..200).map(|i| rrwr_is_get(i, 30)).collect();
        assert!(pattern[..30].iter().all(|&g| g) && pattern[30..100].iter().all(|&g| !g));
        assert_eq!(pattern[100..], pattern[..100]);
        for (ops, pct, gets) in [(1050, 50, 550), (1050, 90, 950), (99, 100, 99), (99, 0, 0)] {
            assert_eq!(rrwr_gets(ops, pct), gets, "{ops} {pct}");
            let counted = (0..ops).filter(|&i| rrwr_is_get(i, pct)).count() as u64;
            assert_eq!(counted, gets);
        }
        // The engine sees exactly that many gets and puts, per thread.
        for (pct, threads) in [(90u32, 1usize), (0, 2), (100, 2), (35, 3)] {
            let c = config(&[
                "--benchmarks=readrandomwriterandom",
                "--num=400",
                "--reads=1234",
                &format!("--readwritepercent={pct}"),
                &format!("--threads={threads}"),
            ]);
            let e = NullEngine::default();
            let r = run_benchmarks(&e, &c, &mut std::io::sink(), false).unwrap();
            let t = threads as u64;
            let gets = rrwr_gets(1234, pct) * t;
            assert_eq!(r[0].ops, 1234 * t);
            assert_eq!(e.gets.load(Relaxed), gets);
            assert_eq!(e.puts.load(Relaxed), 1234 * t - gets);
            assert_eq!(r[0].op("get").map_or(0, |o| o.count), gets);
            assert_eq!(r[0].op("put").map_or(0, |o| o.count), 1234 * t - gets);
            assert_eq!((r[0].found, r[0].lookups), (Some(0), Some(gets)));
            assert_eq!(r[0].latency.count, r[0].ops);
        }
    }

    /// YCSB's update as its bindings do it: read the record, a missing one a failed operation
    /// with nothing written; otherwise one field of ten replaced and the record put back.
    /// `--ycsb_update=blind` puts unread.
    #[test]
    fn ycsb_updates_read_merge_and_write_back_unless_blind() {
        let args = |update: &str, benches: &str| {
            config(&[
                &format!("--benchmarks={benches}"),
                "--num=200",
                "--reads=1000",
                "--value_size=100",
                &format!("--ycsb_update={update}"),
            ])
        };
        // Nothing loaded: every update (half of A, all of F's read-modify-writes') fails.
        for bench in ["ycsb-a", "ycsb-f"] {
            let e = NullEngine::default();
            let r = run_benchmarks(&e, &args("merge", bench), &mut std::io::sink(), false).unwrap();
            let writes = r[0].op("update").or(r[0].op("rmw")).map_or(0, |o| o.count);
            assert!(writes > 300, "{bench}: {writes}");
            assert_eq!(r[0].failed, Some(writes), "{bench}");
            assert_eq!(e.puts.load(Relaxed), 0, "{bench}: nothing written");
            // F reads twice per read-modify-write (its read, then the update's).
            let reads = r[0].op("read").map_or(0, |o| o.count);
            let rmw_reads = if bench == "ycsb-f" {
                2 * writes
            } else {
                writes
            };
            assert_eq!(e.gets.load(Relaxed), reads + rmw_reads, "{bench}");
            // Blind: every update writes, none fails, no read for it.
            let e = NullEngine::default();
            let r = run_benchmarks(&e, &args("blind", bench), &mut std::io::sink(), false).unwrap();
            let writes = r[0].op("update").or(r[0].op("rmw")).map_or(0, |o| o.count);
            assert_eq!(r[0].failed, Some(0));
            assert_eq!(e.puts.load(Relaxed), writes, "{bench}");
        }
        // Loaded: each update changes one 10-byte field of the 100-byte record it read.
        let e = MemEngine::default();
        let c = args("merge", "ycsb-load");
        run_benchmarks(&e, &c, &mut std::io::sink(), false).unwrap();
        let contents = |e: &MemEngine| {
            let mut c = e.cursor().unwrap();
            let mut m = std::collections::BTreeMap::new();
            c.seek_to_first();
            while c.valid() {
                m.insert(c.key().to_vec(), c.value().to_vec());
                c.next();
            }
            m
        };
        let before = contents(&e);
        assert_eq!(before.len(), 200);
        let r = run_benchmarks(&e, &args("merge", "ycsb-a"), &mut std::io::sink(), false).unwrap();
        assert_eq!(r[0].failed, Some(0));
        let after = contents(&e);
        let mut changed_fields = 0;
        for (k, old) in &before {
            let new = &after[k];
            assert_eq!(new.len(), 100);
            let fields: Vec<bool> = (0..10)
                .map(|f| old[f * 10..f * 10 + 10] != new[f * 10..f * 10 + 10])
                .collect();
            changed_fields += fields.iter().filter(|&&c| c).count();
        }
        // About 500 updates over 200 records; fields changed at most once per update.
        let updates = r[0].op("update").map_or(0, |o| o.count) as usize;
        assert!(
            changed_fields > 0 && changed_fields <= updates,
            "{changed_fields} {updates}"
        );
        assert!(
            before
                .iter()
                .any(|(k, old)| after[k] != *old && after[k][..10] == old[..10]),
            "an update that left field 0 alone"
        );
    }

    #[test]
    fn readwhilewriting_reports_the_readers() {
        let c = config(&[
            "--benchmarks=fillseq,readwhilewriting",
            "--num=300",
            "--threads=2",
        ]);
        let e = MemEngine::default();
        let r = run_benchmarks(&e, &c, &mut std::io::sink(), false).unwrap();
        assert_eq!(r[1].name, "readwhilewriting");
        assert_eq!(r[1].ops, 600);
        assert_eq!(r[1].found, Some(600));
        assert!(r[1].writer_ops.is_some());
        assert_eq!(e.len(), 300, "the writer only overwrites keys in [0, num)");
    }

    #[test]
    fn use_existing_db_skips_fills() {
        let c = config(&[
            "--benchmarks=fillseq,fillrandom,overwrite",
            "--num=10",
            "--use_existing_db",
            "--db=unused",
        ]);
        let mut out = Vec::new();
        let r = run_benchmarks(&NullEngine::default(), &c, &mut out, false).unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].name, "overwrite");
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("fillseq                : skipped (--use_existing_db is true)"),
            "{text}"
        );
    }

    struct FailingEngine;
    impl KvEngine for FailingEngine {
        fn name(&self) -> &str {
            "failing"
        }
        fn put(&self, _: &[u8], _: &[u8]) -> EngineResult<()> {
            Err("disk on fire".into())
        }
        fn delete(&self, _: &[u8]) -> EngineResult<()> {
            Ok(())
        }
        fn get(&self, _: &[u8], _: &mut Vec<u8>) -> EngineResult<bool> {
            panic!("get exploded")
        }
        fn cursor(&self) -> EngineResult<Box<dyn crate::engine::KvCursor + '_>> {
            Err("no cursor".into())
        }
    }

    #[test]
    fn engine_errors_and_panics_become_errors() {
        let run = |b: &str| {
            let c = config(&[&format!("--benchmarks={b}"), "--num=10", "--threads=2"]);
            run_benchmarks(&FailingEngine, &c, &mut std::io::sink(), false)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(run("fillseq"), "benchmark fillseq: disk on fire");
        assert!(run("readrandom").contains("panicked: get exploded"));
        assert_eq!(run("readseq"), "benchmark readseq: no cursor");
        // The writer's failure is reported and the readers still finish (no hang).
        assert!(run("readwhilewriting").contains("panicked"));
    }
}
