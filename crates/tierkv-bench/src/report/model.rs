//! What a run measured: latency summaries, benchmark results, samples, engine deltas and
//! the per-design run (the data the text, the comparison and the JSON report are made of).

use super::*;

/// Latency percentiles of one benchmark, in microseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Operations recorded.
    pub count: u64,
    /// Fastest operation.
    pub min_us: f64,
    /// Mean.
    pub avg_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 90th percentile.
    #[serde(default)]
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// 99.99th percentile.
    #[serde(default)]
    pub p9999_us: f64,
    /// Slowest operation.
    pub max_us: f64,
}

impl LatencySummary {
    /// Summarises a histogram of latencies recorded in nanoseconds.
    pub fn from_histogram(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return LatencySummary::default();
        }
        let us = |ns: u64| ns as f64 / 1000.0;
        LatencySummary {
            count: h.len(),
            min_us: us(h.min()),
            avg_us: h.mean() / 1000.0,
            p50_us: us(h.value_at_quantile(0.50)),
            p90_us: us(h.value_at_quantile(0.90)),
            p99_us: us(h.value_at_quantile(0.99)),
            p999_us: us(h.value_at_quantile(0.999)),
            p9999_us: us(h.value_at_quantile(0.9999)),
            max_us: us(h.max()),
        }
    }
}

/// One point of a latency CDF: the fraction `quantile` of operations took at most
/// `latency_us`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CdfPoint {
    /// Latency in microseconds.
    pub latency_us: f64,
    /// Fraction of operations at or below it, in [0, 1].
    pub quantile: f64,
}

/// The CDF of a latency histogram (nanoseconds), about five points per halving of the tail,
/// so p99.99 and beyond are drawn.
pub fn latency_cdf(h: &Histogram<u64>) -> Vec<CdfPoint> {
    let mut out: Vec<CdfPoint> = Vec::new();
    if h.is_empty() {
        return out;
    }
    for v in h.iter_quantiles(5) {
        let p = CdfPoint {
            latency_us: h.highest_equivalent(v.value_iterated_to()) as f64 / 1000.0,
            // Rounded so that the JSON report reads back exactly.
            quantile: (v.quantile_iterated_to() * 1e9).round() / 1e9,
        };
        if out.last().is_some_and(|l| l.latency_us == p.latency_us) {
            out.pop();
        }
        out.push(p);
        if p.quantile >= 1.0 {
            break;
        }
    }
    out
}

/// The latency figures of one operation type (read, update, insert, scan, rmw, write, ...).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpLatency {
    /// The operation type.
    pub op: String,
    /// Operations of this type.
    pub count: u64,
    /// Percentiles.
    pub latency: LatencySummary,
    /// The CDF, for plots.
    pub cdf: Vec<CdfPoint>,
}

impl OpLatency {
    /// The figures of `op` from its histogram (nanoseconds).
    pub fn new(op: &str, h: &Histogram<u64>) -> Self {
        OpLatency {
            op: op.to_string(),
            count: h.len(),
            latency: LatencySummary::from_histogram(h),
            cdf: latency_cdf(h),
        }
    }
}

/// Throughput and stall time of one sampling interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// End of the interval, in seconds since the benchmark started.
    pub t_sec: f64,
    /// Length of the interval in seconds (the last one may be shorter).
    pub interval_sec: f64,
    /// Operations completed in the interval, all threads together.
    pub ops: u64,
    /// `ops / interval_sec`.
    pub ops_per_sec: f64,
    /// Microseconds writers were stalled in the interval, from the engine's own figures
    /// (`DbStats::stall_micros` deltas; 0 for engines without them).
    pub stall_micros: u64,
    /// The engine's DRAM footprint at the end of the interval (TierKV engines).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dram_bytes: Option<u64>,
}

/// The figures of one benchmark.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchResult {
    /// Benchmark name.
    pub name: String,
    /// Operations done, all threads together.
    pub ops: u64,
    /// Wall-clock seconds, earliest thread start to latest thread finish.
    pub seconds: f64,
    /// Sum of the threads' running times.
    pub thread_seconds: f64,
    /// Average time one thread spent per operation (db_bench's micros/op).
    pub micros_per_op: f64,
    /// Operations per wall-clock second.
    pub ops_per_sec: f64,
    /// Key + value bytes written or returned.
    pub bytes: u64,
    /// `bytes` per second in MiB.
    pub mb_per_sec: f64,
    /// Latency percentiles.
    pub latency: LatencySummary,
    /// Keys found, for the benchmarks that look keys up (readrandom, seekrandom,
    /// readwhilewriting).
    pub found: Option<u64>,
    /// Writes of readwhilewriting's background writer.
    pub writer_ops: Option<u64>,
    /// Latency per operation type.
    #[serde(default)]
    pub ops_by_type: Vec<OpLatency>,
    /// Throughput over time (`--sample_interval_ms`).
    #[serde(default)]
    pub samples: Vec<Sample>,
    /// Microseconds writers were stalled during the benchmark (engine figures), when known.
    #[serde(default)]
    pub stall_micros: Option<u64>,
    /// Key lookups `found` counts, when not every operation is one (YCSB: reads and
    /// read-modify-writes).
    #[serde(default)]
    pub lookups: Option<u64>,
    /// YCSB updates and read-modify-writes of a record that did not exist (failed operations,
    /// nothing written; `--ycsb_update=merge`), when the benchmark updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<u64>,
    /// The latency histogram bucket by bucket (`--histogram`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub histogram: Vec<HistogramBucket>,
    /// What this benchmark made the engine do (its figures' change over the benchmark), for
    /// engines with TierKV's figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<EngineDelta>,
}

/// One bucket of a latency histogram: operations whose latency fell in `[low_us, high_us)`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistogramBucket {
    /// Lower bound, microseconds.
    pub low_us: f64,
    /// Upper bound, microseconds.
    pub high_us: f64,
    /// Operations in the bucket.
    pub count: u64,
}

/// The buckets of `h` (nanoseconds) on a doubling scale from 1 us, empty buckets left out
/// (db_bench prints its histogram the same way).
pub fn histogram_buckets(h: &Histogram<u64>) -> Vec<HistogramBucket> {
    let mut out = Vec::new();
    let mut low = 0.0;
    for v in h.iter_log(1_000, 2.0) {
        let high = v.value_iterated_to() as f64 / 1e3;
        let count = v.count_since_last_iteration();
        if count > 0 {
            out.push(HistogramBucket {
                low_us: low,
                high_us: high,
                count,
            });
        }
        low = high;
    }
    out
}

/// The change in an engine's figures over one benchmark: what the benchmark made it do.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EngineDelta {
    /// Key + value bytes of user writes.
    pub user_bytes_written: u64,
    /// Key + value bytes returned to user reads.
    pub user_bytes_read: u64,
    /// Bytes written to SSD (log, flush, compaction, manifest).
    pub ssd_bytes_written: u64,
    /// Bytes written to PM.
    pub pm_bytes_written: u64,
    /// Bytes read from SSD and PM to answer user reads.
    pub user_read_io_bytes: u64,
    /// Bytes read by flushes, compactions and recovery.
    pub background_read_bytes: u64,
    /// Flushes finished.
    pub flushes: u64,
    /// Compactions finished.
    pub compactions: u64,
    /// Microseconds writers were stalled.
    pub stall_micros: u64,
}

impl EngineDelta {
    /// The figures of `after` minus those of `before`.
    pub fn between(before: &DbStats, after: &DbStats) -> Self {
        let sum = |s: &DbStats, f: &dyn Fn(&tierkv::stats::IoCount) -> u64| -> u64 {
            s.io.iter().map(f).sum()
        };
        let d = |f: &dyn Fn(&DbStats) -> u64| f(after).saturating_sub(f(before));
        EngineDelta {
            user_bytes_written: d(&|s| s.user_bytes_written),
            user_bytes_read: d(&|s| s.user_bytes_read),
            ssd_bytes_written: d(&|s| {
                sum(s, &|c| {
                    if c.tier == tierkv::Tier::Ssd {
                        c.written
                    } else {
                        0
                    }
                })
            }),
            pm_bytes_written: d(&|s| {
                sum(s, &|c| {
                    if c.tier == tierkv::Tier::Pm {
                        c.written
                    } else {
                        0
                    }
                })
            }),
            user_read_io_bytes: d(&|s| {
                sum(s, &|c| if c.purpose == "user_read" { c.read } else { 0 })
            }),
            background_read_bytes: d(&|s| {
                sum(s, &|c| if c.purpose == "user_read" { 0 } else { c.read })
            }),
            flushes: d(&|s| s.flushes),
            compactions: d(&|s| s.compactions),
            stall_micros: d(&|s| s.stall_micros()),
        }
    }

    /// Bytes written to every tier / user bytes written, when the benchmark wrote.
    pub fn write_amplification(&self) -> Option<f64> {
        (self.user_bytes_written > 0).then(|| {
            (self.ssd_bytes_written + self.pm_bytes_written) as f64 / self.user_bytes_written as f64
        })
    }

    /// Bytes read for user reads / user bytes returned, when the benchmark read.
    pub fn read_amplification(&self) -> Option<f64> {
        (self.user_bytes_read > 0)
            .then(|| self.user_read_io_bytes as f64 / self.user_bytes_read as f64)
    }
}

impl BenchResult {
    /// Builds a result, deriving the rates.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        name: &str,
        ops: u64,
        seconds: f64,
        thread_seconds: f64,
        bytes: u64,
        latency: LatencySummary,
        found: Option<u64>,
        writer_ops: Option<u64>,
    ) -> Self {
        let per_sec = |x: f64| if seconds > 0.0 { x / seconds } else { 0.0 };
        BenchResult {
            name: name.to_string(),
            ops,
            seconds,
            thread_seconds,
            micros_per_op: if ops > 0 {
                thread_seconds * 1e6 / ops as f64
            } else {
                0.0
            },
            ops_per_sec: per_sec(ops as f64),
            bytes,
            mb_per_sec: per_sec(bytes as f64 / 1_048_576.0),
            latency,
            found,
            writer_ops,
            ops_by_type: Vec::new(),
            samples: Vec::new(),
            stall_micros: None,
            lookups: None,
            failed: None,
            histogram: Vec::new(),
            engine: None,
        }
    }

    /// The latency figures of operation type `op`, if it ran.
    pub fn op(&self, op: &str) -> Option<&OpLatency> {
        self.ops_by_type.iter().find(|o| o.op == op)
    }
}

/// The engine's figures at the end of a run, with the derived amplifications.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StatsSummary {
    /// The engine's name.
    pub engine: String,
    /// The raw figures.
    pub stats: DbStats,
    /// Key + value bytes of the live data, when measured.
    pub logical_bytes: Option<u64>,
    /// All SSD bytes written / user bytes written.
    pub write_amplification: f64,
    /// Flush + compaction bytes / user bytes written.
    pub write_amplification_tables: f64,
    /// SSD bytes read for user reads / user bytes read.
    pub read_amplification: f64,
    /// Live SSD bytes / logical bytes, when the logical size is known.
    pub space_amplification: Option<f64>,
    /// Total stall time in microseconds.
    pub stall_micros: u64,
}

impl StatsSummary {
    /// Derives the amplifications from `stats` and the measured logical size.
    pub fn new(engine: &str, stats: DbStats, logical_bytes: Option<u64>) -> Self {
        StatsSummary {
            engine: engine.to_string(),
            write_amplification: stats.write_amplification(),
            write_amplification_tables: stats.write_amplification_tables(),
            read_amplification: stats.read_amplification(),
            space_amplification: logical_bytes.map(|l| stats.space_amplification(l)),
            stall_micros: stats.stall_micros(),
            logical_bytes,
            stats,
        }
    }
}

/// One live table, for db_bench's `sstables`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableInfo {
    /// The stage holding it.
    pub stage: usize,
    /// Its group (level) in the stage.
    pub group: usize,
    /// Its file number.
    pub number: u64,
    /// `SSD` or `PM`.
    pub tier: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// Its entries, when known.
    pub entries: Option<u64>,
    /// Its smallest and largest user keys.
    pub smallest: Vec<u8>,
    /// See `smallest`.
    pub largest: Vec<u8>,
    /// For a run made of part of another run's file (FluidKV's reused logical sorted tables):
    /// that file's number.
    #[serde(default)]
    pub part_of: Option<u64>,
}

/// Amplification figures of one tier, for reports and bar charts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TierAmplification {
    /// The tier ("SSD", "PM", ...).
    pub tier: String,
    /// Bytes written to the tier / user bytes written.
    pub write: f64,
    /// Bytes read from the tier for user reads / user bytes read.
    pub read: f64,
    /// Live bytes on the tier / logical bytes, when known.
    pub space: Option<f64>,
}

/// The amplification figures of each tier of a run. Today DbStats has SSD figures only; when PM
/// figures are added to DbStats, adding the PM tier is one more entry here.
pub fn tier_amplifications(s: &StatsSummary) -> Vec<TierAmplification> {
    let mut v = vec![TierAmplification {
        tier: "SSD".into(),
        write: s.write_amplification,
        read: s.read_amplification,
        space: s.space_amplification,
    }];
    if s.stats.pm.is_some() {
        v.push(TierAmplification {
            tier: "PM".into(),
            write: s.stats.pm_write_amplification(),
            read: s.stats.pm_read_amplification(),
            space: s.logical_bytes.map(|l| s.stats.pm_space_amplification(l)),
        });
    }
    v
}

/// Everything measured for one design of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DesignRun {
    /// The design's name (`leveled`, `rocksdb`, ...).
    pub design: String,
    /// The engine that ran (`tierkv`, `rocksdb`, `null`, `memory`).
    pub engine: String,
    /// The full options the engine was opened with.
    pub options: serde_json::Value,
    /// Every benchmark run, in order.
    pub benchmarks: Vec<BenchResult>,
    /// The engine's figures after the last benchmark.
    pub final_stats: Option<StatsSummary>,
    /// Amplification per tier (from `final_stats`).
    #[serde(default)]
    pub tiers: Vec<TierAmplification>,
    /// The figures the designs are judged by (from `final_stats`; `docs/REPORT_SCHEMA.md`).
    #[serde(default)]
    pub figures: Option<crate::figures::RunFigures>,
    /// For a variant (`LABEL=DESIGN+PATH=VALUE...`): the design it runs (`design` is the
    /// label). Absent for a plain design.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_design: Option<String>,
    /// For a variant: its own overrides (`PATH=VALUE`, applied after `--set`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<String>,
    /// Seconds opening the database took (with `--use_existing_db`, its recovery: log replay,
    /// PM structures attached, DRAM indexes rebuilt). Absent where not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_seconds: Option<f64>,
}

impl DesignRun {
    /// Assembles the figures of one design.
    pub fn new(
        design: &str,
        engine: &str,
        options: serde_json::Value,
        benchmarks: Vec<BenchResult>,
        final_stats: Option<StatsSummary>,
    ) -> Self {
        DesignRun {
            design: design.into(),
            engine: engine.into(),
            options,
            tiers: final_stats
                .as_ref()
                .map(tier_amplifications)
                .unwrap_or_default(),
            figures: final_stats
                .as_ref()
                .filter(|s| s.engine == "tierkv")
                .map(|s| crate::figures::RunFigures::new(&s.stats, s.logical_bytes)),
            benchmarks,
            final_stats,
            base_design: None,
            overrides: Vec::new(),
            open_seconds: None,
        }
    }
}
