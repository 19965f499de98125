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
//! The loops allocate nothing per operation themselves: keys are encoded into a per-thread
//! buffer, values are slices of a pre-generated buffer, reads reuse one value buffer. Progress
//! is published to a shared atomic every 1024 operations; the calling thread polls it ten times
//! a second to draw the bar (only when stderr is a terminal and the benchmark has at least
//! [`PROGRESS_MIN_OPS`] operations).

use crate::config::{BenchConfig, Benchmark};
use crate::engine::{EngineError, EngineResult, KvEngine};
use crate::report::{self, BenchResult, LatencySummary, StatsSummary};
use crate::workload::{encode_key, thread_seed, KeyGen, ValueGen};
use hdrhistogram::Histogram;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// Benchmarks with fewer operations than this get no progress bar.
pub const PROGRESS_MIN_OPS: u64 = 100_000;

/// Operations between two updates of the shared progress counter.
const PROGRESS_BATCH: u64 = 1024;

/// Largest latency the histograms hold exactly (longer ones are recorded as this): one hour.
const MAX_LATENCY_NANOS: u64 = 3_600_000_000_000;

/// A new, empty latency histogram (nanoseconds, 3 significant digits).
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_NANOS, 3).expect("constant bounds are valid")
}

/// The parameters one worker thread needs, copied out of the [`BenchConfig`].
#[derive(Clone, Copy, Debug)]
struct Plan {
    num: u64,
    reads: u64,
    key_size: usize,
    value_size: usize,
    seek_nexts: u64,
}

/// What one thread measured.
struct ThreadOut {
    hist: Histogram<u64>,
    ops: u64,
    bytes: u64,
    found: u64,
    start: Instant,
    finish: Instant,
}

/// Times operations: one clock read per operation, histogram, progress.
struct OpTimer<'a> {
    hist: Histogram<u64>,
    last: Instant,
    start: Instant,
    ops: u64,
    progress: &'a AtomicU64,
}

impl<'a> OpTimer<'a> {
    fn start(progress: &'a AtomicU64) -> Self {
        let now = Instant::now();
        OpTimer {
            hist: new_histogram(),
            last: now,
            start: now,
            ops: 0,
            progress,
        }
    }

    #[inline]
    fn done(&mut self) {
        let now = Instant::now();
        let nanos = u64::try_from(now.duration_since(self.last).as_nanos()).unwrap_or(u64::MAX);
        self.hist.saturating_record(nanos);
        self.last = now;
        self.ops += 1;
        if self.ops.is_multiple_of(PROGRESS_BATCH) {
            self.progress.fetch_add(PROGRESS_BATCH, Relaxed);
        }
    }

    fn finish(self, bytes: u64, found: u64) -> ThreadOut {
        self.progress.fetch_add(self.ops % PROGRESS_BATCH, Relaxed);
        ThreadOut {
            hist: self.hist,
            ops: self.ops,
            bytes,
            found,
            start: self.start,
            finish: self.last,
        }
    }
}

/// The body of one benchmark thread.
fn worker(
    engine: &dyn KvEngine,
    bench: Benchmark,
    plan: Plan,
    seed: u64,
    progress: &AtomicU64,
    barrier: &Barrier,
) -> EngineResult<ThreadOut> {
    let mut key = vec![0u8; plan.key_size];
    let mut keys = KeyGen::new(seed, plan.num);
    let mut values = ValueGen::new(seed ^ 0x5555_5555_5555_5555, plan.value_size);
    let mut value_buf = Vec::new();
    let write_bytes = (plan.key_size + plan.value_size) as u64;
    let (mut bytes, mut found) = (0u64, 0u64);
    barrier.wait();
    let mut t = OpTimer::start(progress);
    match bench {
        Benchmark::Fillseq => {
            for k in 0..plan.num {
                encode_key(k, &mut key);
                engine.put(&key, values.next_value())?;
                bytes += write_bytes;
                t.done();
            }
        }
        Benchmark::Fillrandom | Benchmark::Overwrite => {
            for _ in 0..plan.num {
                encode_key(keys.next_key(), &mut key);
                engine.put(&key, values.next_value())?;
                bytes += write_bytes;
                t.done();
            }
        }
        Benchmark::Readrandom | Benchmark::Readwhilewriting => {
            for _ in 0..plan.reads {
                encode_key(keys.next_key(), &mut key);
                if engine.get(&key, &mut value_buf)? {
                    found += 1;
                    bytes += (key.len() + value_buf.len()) as u64;
                }
                t.done();
            }
        }
        Benchmark::Readseq => {
            let mut cursor = engine.cursor()?;
            cursor.seek_to_first();
            while t.ops < plan.reads && cursor.valid() {
                bytes += (cursor.key().len() + cursor.value().len()) as u64;
                t.done();
                cursor.next();
            }
            cursor.status()?;
        }
        Benchmark::Seekrandom => {
            for _ in 0..plan.reads {
                encode_key(keys.next_key(), &mut key);
                // A fresh iterator per seek, as db_bench does without a tailing iterator.
                let mut cursor = engine.cursor()?;
                cursor.seek(&key);
                if cursor.valid() && cursor.key() == key.as_slice() {
                    found += 1;
                }
                for _ in 0..plan.seek_nexts {
                    if !cursor.valid() {
                        break;
                    }
                    bytes += (cursor.key().len() + cursor.value().len()) as u64;
                    cursor.next();
                }
                cursor.status()?;
                drop(cursor);
                t.done();
            }
        }
        Benchmark::Flush => {
            engine.flush()?;
            t.done();
        }
    }
    Ok(t.finish(bytes, found))
}

/// The background writer of `readwhilewriting`: random puts until `stop` is set; returns its
/// number of writes.
fn background_writer(
    engine: &dyn KvEngine,
    plan: Plan,
    seed: u64,
    stop: &AtomicBool,
    barrier: &Barrier,
) -> EngineResult<u64> {
    let mut key = vec![0u8; plan.key_size];
    let mut keys = KeyGen::new(seed, plan.num);
    let mut values = ValueGen::new(seed ^ 0x5555_5555_5555_5555, plan.value_size);
    let mut writes = 0u64;
    barrier.wait();
    while !stop.load(Relaxed) {
        encode_key(keys.next_key(), &mut key);
        engine.put(&key, values.next_value())?;
        writes += 1;
    }
    Ok(writes)
}

/// Sets the flag when dropped: readers signal the writer even if they fail or panic.
struct SetOnDrop<'a> {
    readers_left: &'a AtomicUsize,
    stop: &'a AtomicBool,
}

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        if self.readers_left.fetch_sub(1, Relaxed) == 1 {
            self.stop.store(true, Relaxed);
        }
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

/// Runs one benchmark (the `bench_index`-th of the run, which selects the threads' seeds) and
/// returns its merged figures. `show_progress` allows a progress bar (still only on a terminal).
pub fn run_benchmark(
    engine: &dyn KvEngine,
    config: &BenchConfig,
    bench: Benchmark,
    bench_index: usize,
    show_progress: bool,
) -> EngineResult<BenchResult> {
    let plan = Plan {
        num: config.num,
        reads: config.reads_per_thread(),
        key_size: config.key_size,
        value_size: config.value_size,
        seek_nexts: config.seek_nexts,
    };
    // Flush is one operation, not one per thread.
    let threads = if bench == Benchmark::Flush {
        1
    } else {
        config.threads.max(1)
    };
    let per_thread = match bench {
        Benchmark::Fillseq | Benchmark::Fillrandom | Benchmark::Overwrite => plan.num,
        Benchmark::Flush => 1,
        _ => plan.reads,
    };
    let with_writer = bench == Benchmark::Readwhilewriting;
    let progress = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let readers_left = AtomicUsize::new(threads);
    let barrier = Barrier::new(threads + usize::from(with_writer));
    let pb = progress_bar(bench.name(), per_thread * threads as u64, show_progress);

    let (outs, writer) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let seed = thread_seed(config.seed, bench_index, t);
                let (progress, barrier) = (&progress, &barrier);
                let guard = SetOnDrop {
                    readers_left: &readers_left,
                    stop: &stop,
                };
                s.spawn(move || {
                    let _guard = guard;
                    worker(engine, bench, plan, seed, progress, barrier)
                })
            })
            .collect();
        let writer = with_writer.then(|| {
            let seed = thread_seed(config.seed, bench_index, threads);
            let (stop, barrier) = (&stop, &barrier);
            s.spawn(move || background_writer(engine, plan, seed, stop, barrier))
        });
        if let Some(pb) = &pb {
            while !handles.iter().all(|h| h.is_finished()) {
                pb.set_position(progress.load(Relaxed));
                std::thread::sleep(Duration::from_millis(100));
            }
            pb.finish_and_clear();
        }
        let outs: Vec<_> = handles.into_iter().map(join).collect();
        (outs, writer.map(join))
    });

    let outs = outs.into_iter().collect::<EngineResult<Vec<ThreadOut>>>()?;
    let writer_ops = writer.transpose()?;
    merge(bench, outs, writer_ops)
}

fn merge(
    bench: Benchmark,
    outs: Vec<ThreadOut>,
    writer_ops: Option<u64>,
) -> EngineResult<BenchResult> {
    let mut hist = new_histogram();
    let (mut ops, mut bytes, mut found, mut thread_seconds) = (0u64, 0u64, 0u64, 0f64);
    let mut start: Option<Instant> = None;
    let mut finish: Option<Instant> = None;
    for o in &outs {
        hist.add(&o.hist)
            .map_err(|e| EngineError::from(format!("merging histograms: {e:?}")))?;
        ops += o.ops;
        bytes += o.bytes;
        found += o.found;
        thread_seconds += o.finish.duration_since(o.start).as_secs_f64();
        start = Some(start.map_or(o.start, |s| s.min(o.start)));
        finish = Some(finish.map_or(o.finish, |f| f.max(o.finish)));
    }
    let seconds = match (start, finish) {
        (Some(s), Some(f)) => f.duration_since(s).as_secs_f64(),
        _ => 0.0,
    };
    let reports_found = matches!(
        bench,
        Benchmark::Readrandom | Benchmark::Readwhilewriting | Benchmark::Seekrandom
    );
    Ok(BenchResult::new(
        bench.name(),
        ops,
        seconds,
        thread_seconds,
        bytes,
        LatencySummary::from_histogram(&hist),
        reports_found.then_some(found),
        writer_ops,
    ))
}

/// Runs every benchmark of `config` in order on `engine`, printing each result to `out` as it
/// completes (fill benchmarks are skipped under `--use_existing_db`, as db_bench does). Stops at
/// the first failing benchmark.
pub fn run_benchmarks(
    engine: &dyn KvEngine,
    config: &BenchConfig,
    out: &mut dyn Write,
    show_progress: bool,
) -> EngineResult<Vec<BenchResult>> {
    let mut results = Vec::with_capacity(config.benchmarks.len());
    for (i, &bench) in config.benchmarks.iter().enumerate() {
        if config.use_existing_db && bench.is_fill() {
            writeln!(
                out,
                "{:<12} : skipped (--use_existing_db is true)",
                bench.name()
            )?;
            continue;
        }
        let result = run_benchmark(engine, config, bench, i, show_progress)
            .map_err(|e| EngineError::from(format!("benchmark {}: {e}", bench.name())))?;
        write!(out, "{}", report::format_result(&result))?;
        out.flush()?;
        results.push(result);
    }
    Ok(results)
}

/// The engine's final figures, when it has them.
pub fn final_stats(engine: &dyn KvEngine) -> EngineResult<Option<StatsSummary>> {
    let Some(stats) = engine.stats() else {
        return Ok(None);
    };
    let logical = engine.logical_size()?;
    Ok(Some(StatsSummary::new(engine.name(), stats, logical)))
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
                assert!(text.contains(&format!("{name:<12} :")), "{text}");
            }
        }
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
        assert!(r[3].bytes <= 2000 * 5 * 30 && r[3].bytes > 2000 * 4 * 30);
        assert_eq!(e.logical_size().unwrap(), Some(1000 * 30));
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
            text.contains("fillseq      : skipped (--use_existing_db is true)"),
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
        fn flush(&self) -> EngineResult<()> {
            Ok(())
        }
        fn stats(&self) -> Option<tierkv::DbStats> {
            None
        }
        fn logical_size(&self) -> EngineResult<Option<u64>> {
            Ok(None)
        }
        fn close(self: Box<Self>) -> EngineResult<()> {
            Ok(())
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
