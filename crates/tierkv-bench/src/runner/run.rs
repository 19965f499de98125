//! One benchmark ([`run_benchmark`]): the pacing and plan taken from the flags, the worker
//! threads started together behind a barrier, the background writer of the *whilewriting
//! benchmarks, the progress bar, and the merge of the threads' figures into one result.

use super::*;

/// Benchmarks with fewer operations than this get no progress bar.
pub const PROGRESS_MIN_OPS: u64 = 100_000;

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
