//! Measuring while a benchmark runs: throughput samples with the engine's stall time per
//! `--sample_interval_ms`, and the live lines and CSV rows of `--report_interval_seconds`
//! ([`IntervalReporter`]).

use super::*;

pub(super) fn stall_micros(engine: &dyn KvEngine) -> Option<u64> {
    engine.stats().map(|s| s.stall_micros())
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
pub(super) fn sample_until_done(
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
