//! Reports: db_bench-style result lines, the engine-figures block, and the JSON document.
//!
//! A result prints as
//! `fillrandom   :       3.123 micros/op 320184 ops/sec;   45.9 MB/s (1000 of 1000 found)`
//! followed by `latency (micros): avg .. p50 .. p99 .. p99.9 .. max ..`. MB/s counts key + value
//! bytes written, or returned by reads, per second, with MB = 2^20 bytes as db_bench does.

use crate::config::{BenchConfig, Benchmark};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::Path;
use std::str::FromStr;
use tierkv::DbStats;

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

/// The histogram as db_bench prints it: `[ low, high ) count percent cumulative% ###`.
pub fn format_histogram(buckets: &[HistogramBucket]) -> String {
    let total: u64 = buckets.iter().map(|b| b.count).sum();
    let mut s = String::new();
    if total == 0 {
        return s;
    }
    let mut cum = 0u64;
    let _ = writeln!(
        s,
        "{:<w$}   latency histogram (micros): [low, high)  count  percent  cumulative",
        "",
        w = NAME_WIDTH
    );
    for b in buckets {
        cum += b.count;
        let pct = b.count as f64 * 100.0 / total as f64;
        let marks = "#".repeat((pct / 5.0).round() as usize);
        let _ = writeln!(
            s,
            "{:<w$}   [ {:>10.1}, {:>10.1} ) {:>9} {:>7.3}% {:>7.3}% {marks}",
            "",
            b.low_us,
            b.high_us,
            b.count,
            pct,
            cum as f64 * 100.0 / total as f64,
            w = NAME_WIDTH
        );
    }
    s
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

/// The one-line engine summary printed under a benchmark's result.
pub fn format_engine_delta(d: &EngineDelta) -> String {
    let mib = |b: u64| b as f64 / 1_048_576.0;
    let amp = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.2}"));
    format!(
        "{:<w$}   engine: wrote {:.1} MiB SSD + {:.1} MiB PM (WA {}), read {:.1} MiB for users (RA {}) + {:.1} MiB in background, {} flushes, {} compactions, stalled {:.3} s\n",
        "",
        mib(d.ssd_bytes_written),
        mib(d.pm_bytes_written),
        amp(d.write_amplification()),
        mib(d.user_read_io_bytes),
        amp(d.read_amplification()),
        mib(d.background_read_bytes),
        d.flushes,
        d.compactions,
        d.stall_micros as f64 / 1e6,
        w = NAME_WIDTH
    )
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

/// The width of the benchmark-name column of result lines: the longest name
/// (`seekrandomwhilewriting`), so every line of a run lines up.
pub const NAME_WIDTH: usize = 22;

/// The db_bench-style lines of one result (each ends with a newline).
pub fn format_result(r: &BenchResult) -> String {
    if matches!(r.name.as_str(), "flush" | "waitforcompaction" | "compact") {
        // One maintenance operation, not a stream of them: its time, no rate.
        let what = match r.name.as_str() {
            "flush" => "the write buffers written into the first stage",
            "compact" => "the whole key range compacted",
            _ => "until no flush or compaction was left",
        };
        let mut s = format!(
            "{:<w$} : {:>11.3} ms ({what})\n",
            r.name,
            r.seconds * 1e3,
            w = NAME_WIDTH
        );
        if let Some(d) = &r.engine {
            s.push_str(&format_engine_delta(d));
        }
        return s;
    }
    let mut s = format!(
        "{:<w$} : {:>11.3} micros/op {:.0} ops/sec; {:>6.1} MB/s",
        r.name,
        r.micros_per_op,
        r.ops_per_sec,
        r.mb_per_sec,
        w = NAME_WIDTH
    );
    if let Some(found) = r.found {
        let _ = write!(s, " ({found} of {} found)", r.lookups.unwrap_or(r.ops));
    }
    if let Some(w) = r.writer_ops {
        let _ = write!(s, " [writer: {w} puts]");
    }
    if let Some(f) = r.failed.filter(|&f| f > 0) {
        let _ = write!(s, " [{f} updates of missing records failed]");
    }
    if let Some(st) = r.stall_micros.filter(|&s| s > 0) {
        let _ = write!(s, " [stalled {:.3} s]", st as f64 / 1e6);
    }
    let l = &r.latency;
    let _ = writeln!(
        s,
        "\n{:<w$}   latency (micros): avg {:.2}  p50 {:.2}  p90 {:.2}  p99 {:.2}  p99.9 {:.2}  p99.99 {:.2}  max {:.2}",
        "", l.avg_us, l.p50_us, l.p90_us, l.p99_us, l.p999_us, l.p9999_us, l.max_us, w = NAME_WIDTH
    );
    if r.ops_by_type.len() > 1 {
        for o in &r.ops_by_type {
            let l = &o.latency;
            let _ = writeln!(
                s,
                "{:<w$}   {:<6} {:>9} ops: avg {:.2}  p50 {:.2}  p90 {:.2}  p99 {:.2}  p99.9 {:.2}  p99.99 {:.2}  max {:.2}",
                "", o.op, o.count, l.avg_us, l.p50_us, l.p90_us, l.p99_us, l.p999_us, l.p9999_us, l.max_us, w = NAME_WIDTH
            );
        }
    }
    s.push_str(&format_histogram(&r.histogram));
    if let Some(d) = &r.engine {
        s.push_str(&format_engine_delta(d));
    }
    s
}

/// The run's header: what is being measured, and the options in force.
pub fn format_header(
    engine: &str,
    design: &str,
    config: &BenchConfig,
    options: &serde_json::Value,
) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "Engine:     {engine}");
    let _ = writeln!(s, "Design:     {design}");
    let _ = writeln!(s, "Keys:       {} bytes each", config.key_size);
    let _ = writeln!(s, "Values:     {} bytes each", config.value_size);
    let _ = writeln!(s, "Entries:    {}", config.num);
    let _ = writeln!(s, "Reads:      {}", config.reads_per_thread());
    let _ = writeln!(s, "Threads:    {}", config.threads);
    if config.ops_per_sec > 0 {
        let _ = writeln!(
            s,
            "Rate:       {} ops/s in all, open loop (latency from when each operation was due)",
            config.ops_per_sec
        );
    }
    let _ = writeln!(s, "Sync:       {}", config.sync);
    let cap = |mbps: u64| match mbps {
        0 => "uncapped".to_string(),
        n => format!("{n} MB/s"),
    };
    let _ = writeln!(
        s,
        "SSD model:  writes {}, reads {}, direct reads {}",
        cap(config.ssd_write_mbps),
        cap(config.ssd_read_mbps),
        if config.use_direct_reads { "on" } else { "off" }
    );
    if options.get("engine").and_then(|e| e.as_str()) == Some("rocksdb") {
        if let Some(note) = crate::rocks::ssd_model_note(config) {
            let _ = writeln!(s, "Note:       {note}");
        }
    }
    let names: Vec<_> = config.benchmarks.iter().map(|b| b.name()).collect();
    let _ = writeln!(s, "Benchmarks: {}", names.join(","));
    if config
        .benchmarks
        .contains(&crate::config::Benchmark::Readrandomwriterandom)
    {
        let r = config.read_percent();
        let _ = writeln!(
            s,
            "Read/write: {r}% gets, {}% puts (readrandomwriterandom)",
            100 - r
        );
    }
    if !config.set.is_empty() {
        let set: Vec<String> = config.set.iter().map(|o| o.to_string()).collect();
        let _ = writeln!(s, "Set:        {}", set.join(" "));
    }
    if let Some(w) = &config.ycsb {
        let m = &w.mix;
        let _ = writeln!(
            s,
            "Workload:   {}: read {} update {} insert {} scan {} rmw {}, {} (zipfian constant {}), \
             scans 1..={}, insertorder={}, {}-byte records",
            w.source,
            m.read,
            m.update,
            m.insert,
            m.scan,
            m.rmw,
            m.distribution,
            m.zipfian_constant,
            m.max_scan_length,
            match w.insert_order {
                crate::ycsb_workload::InsertOrder::Hashed => "hashed",
                crate::ycsb_workload::InsertOrder::Ordered => "ordered",
            },
            w.value_size
        );
        if !w.ignored.is_empty() {
            let _ = writeln!(s, "            ignored: {}", w.ignored.join(", "));
        }
    }
    if config
        .benchmarks
        .iter()
        .any(|b| b.is_ycsb() && *b != Benchmark::YcsbLoad)
    {
        let dist = config
            .distribution
            .map_or("workload default".to_string(), |d| d.to_string());
        let _ = writeln!(
            s,
            "YCSB:       {} records, {} operations in all, distribution {dist}",
            config.num,
            config.reads_per_thread()
        );
    }
    if config.verbose {
        let _ = writeln!(
            s,
            "Options:    {}",
            serde_json::to_string_pretty(options).unwrap_or_default()
        );
    } else {
        let _ = writeln!(s, "Options:    {}", options_summary(options));
    }
    let _ = writeln!(s, "{}", "-".repeat(72));
    s
}

/// The engine options that differ from the design's defaults, as the flags spell them
/// (`--write_buffer_size=1000000`, or `--set PATH=VALUE` for options without a flag); the full
/// options are printed under `--verbose`.
pub fn options_summary(options: &serde_json::Value) -> String {
    if options.get("engine").and_then(|e| e.as_str()) == Some("rocksdb") {
        return "RocksDB's, from the flags (--verbose prints them)".to_string();
    }
    let Some(design) = options
        .get("design")
        .and_then(|d| d.as_str())
        .and_then(|d| tierkv::Design::from_str(d).ok())
    else {
        return "(--verbose prints them)".to_string();
    };
    // The defaults a run without flags gets: the engine's, with the bench's block cache size
    // (db_bench's 8 MiB).
    let defaults = serde_json::to_value(design.options(tierkv::Options {
        design,
        block_cache_bytes: crate::config::DEFAULT_CACHE_SIZE as usize,
        ..tierkv::Options::default()
    }))
    .unwrap_or_default();
    let (mut have, mut base) = (Vec::new(), Vec::new());
    flatten_json("", options, &mut have);
    flatten_json("", &defaults, &mut base);
    let mut parts = Vec::new();
    for (path, value) in &have {
        if matches!(
            path.as_str(),
            "create_if_missing" | "error_if_exists" | "read_only" | "design"
        ) {
            continue;
        }
        if base.iter().any(|(p, v)| p == path && v == value) {
            continue;
        }
        parts.push(flag_spelling(path, value));
    }
    if parts.is_empty() {
        format!("the defaults of {design} (--verbose prints them)")
    } else {
        format!(
            "the defaults of {design}, but {} (--verbose prints them all)",
            parts.join(" ")
        )
    }
}

/// Leaf `(dotted.path, value)` pairs of a JSON object, in order.
fn flatten_json(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, serde_json::Value)>) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, child) in map {
                let path = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten_json(&path, child, out);
            }
        }
        leaf => out.push((prefix.to_string(), leaf.clone())),
    }
}

/// `--flag=value` for an option a db_bench-style flag sets, else `--set path=value`.
fn flag_spelling(path: &str, value: &serde_json::Value) -> String {
    let text = match value {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let n = value.as_u64();
    let flag = match path {
        "write_buffer_size" => "write_buffer_size",
        "block_cache_bytes" => "cache_size",
        "max_write_buffer_number" => "max_write_buffer_number",
        "table.bloom_bits_per_key" => "bloom_bits",
        "table.block_size" => "block_size",
        "compaction.target_file_size" => "target_file_size_base",
        "compaction.max_bytes_for_level_base" => "max_bytes_for_level_base",
        "compaction.level_size_multiplier" => "max_bytes_for_level_multiplier",
        "compaction.level0_compaction_trigger" => "level0_file_num_compaction_trigger",
        "compaction.level0_slowdown_trigger" => "level0_slowdown_writes_trigger",
        "compaction.level0_stop_trigger" => "level0_stop_writes_trigger",
        "compaction.num_levels" => "num_levels",
        "pm.path" => "pm_path",
        "pm.size_bytes" => "pm_size",
        "pm.wal_on_pm" => "wal_on_pm",
        "ssd.direct_reads" => "use_direct_reads",
        "compaction.disable_auto_compactions" => "disable_auto_compactions",
        "compaction.background_compactions" => {
            if let Some(n) = n {
                return format!("--max_background_jobs={}", n + 1);
            }
            ""
        }
        "ssd.write_bytes_per_sec" | "ssd.read_bytes_per_sec" => {
            if let Some(n) = n {
                let which = if path.starts_with("ssd.write") {
                    "write"
                } else {
                    "read"
                };
                return format!("--ssd_{which}_mbps={}", n / crate::config::MB);
            }
            ""
        }
        _ => "",
    };
    if flag.is_empty() {
        format!("--set {path}={text}")
    } else {
        format!("--{flag}={text}")
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

/// `n` bytes as `"123456789 B (117.7 MiB)"`.
pub fn format_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{n} B ({v:.1} {})", UNITS[unit])
    }
}

/// The engine-figures block printed after the benchmarks (and by `tierkv stats`).
pub fn format_stats(s: &StatsSummary) -> String {
    let st = &s.stats;
    let b = format_bytes;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "** Engine figures ({}, design {}) **",
        s.engine, st.design
    );
    let _ = writeln!(
        o,
        "User writes:            {} ops, {}",
        st.user_writes,
        b(st.user_bytes_written)
    );
    let _ = writeln!(
        o,
        "User reads:             {} gets; {} returned by gets and scans",
        st.user_gets,
        b(st.user_bytes_read)
    );
    let _ = writeln!(o, "SSD bytes written:      {}", b(st.ssd_bytes_written()));
    let _ = writeln!(o, "  WAL:                  {}", b(st.ssd_written_wal));
    let _ = writeln!(o, "  flush:                {}", b(st.ssd_written_flush));
    let _ = writeln!(
        o,
        "  compaction:           {}",
        b(st.ssd_written_compaction)
    );
    let _ = writeln!(o, "  manifest:             {}", b(st.ssd_written_manifest));
    let _ = writeln!(
        o,
        "SSD bytes read:         compaction {}, user {}, recovery {}",
        b(st.ssd_read_compaction),
        b(st.ssd_read_user),
        b(st.ssd_read_recovery)
    );
    // Every tier together first (what the design costs in all), then the SSD's own.
    let all = crate::figures::RunFigures::new(st, s.logical_bytes)
        .database
        .amplification;
    let f = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{v:.3}"));
    let _ = writeln!(
        o,
        "Amplification:          write {}, read {}, space {} (every tier: SSD and PM bytes / \
         user bytes; write without the log {})",
        f(all.write),
        f(all.read),
        f(all.space),
        f(all.write_excluding_log)
    );
    let _ = writeln!(
        o,
        "SSD write amplification: {:.3} (SSD bytes written / user bytes written; tables only \
         {:.3})",
        s.write_amplification, s.write_amplification_tables
    );
    let _ = writeln!(
        o,
        "SSD read amplification: {:.3} (SSD bytes read for gets and scans / bytes they \
         returned)",
        s.read_amplification
    );
    match (s.space_amplification, s.logical_bytes) {
        (Some(sa), Some(l)) => {
            let _ = writeln!(
                o,
                "SSD space amplification: {sa:.3} (live SSD {} / logical {})",
                b(st.ssd_live_bytes()),
                b(l)
            );
        }
        _ => {
            let _ = writeln!(
                o,
                "SSD space amplification: n/a (live SSD {})",
                b(st.ssd_live_bytes())
            );
        }
    }
    let _ = writeln!(
        o,
        "Stalls:                 {} write groups, {:.3} s (slowdown {:.3} s, stop {:.3} s)",
        st.stall_count,
        s.stall_micros as f64 / 1e6,
        st.stall_slowdown_micros as f64 / 1e6,
        st.stall_stop_micros as f64 / 1e6
    );
    let _ = writeln!(
        o,
        "Flushes / compactions:  {} / {}",
        st.flushes, st.compactions
    );
    let l0: Vec<_> = st
        .compaction_jobs
        .iter()
        .filter(|j| j.from_group == 0 && !j.trivial_move)
        .collect();
    if !l0.is_empty() {
        let n = l0.len() as u64;
        let bytes: u64 = l0.iter().map(|j| j.input_bytes).sum();
        let micros: u64 = l0.iter().map(|j| j.micros).sum();
        let _ = writeln!(
            o,
            "  from L0:              {n}{}, input avg {} max {}, time avg {:.3} s max {:.3} s",
            if st.compaction_jobs_dropped > 0 {
                " (of the job log's last compactions)"
            } else {
                ""
            },
            b(bytes / n),
            b(l0.iter().map(|j| j.input_bytes).max().unwrap_or(0)),
            micros as f64 / n as f64 / 1e6,
            l0.iter().map(|j| j.micros).max().unwrap_or(0) as f64 / 1e6,
        );
    }
    let _ = writeln!(
        o,
        "WAL:                    {} appends, {} syncs, {} live on SSD, {} on PM",
        st.wal_appends,
        st.wal_syncs,
        b(st.wal_bytes),
        b(st.pm_wal_bytes)
    );
    let lookups = st.block_cache_hits + st.block_cache_misses;
    let hit_rate = if lookups > 0 {
        st.block_cache_hits as f64 * 100.0 / lookups as f64
    } else {
        0.0
    };
    let _ = writeln!(
        o,
        "Block cache:            {} hits, {} misses ({hit_rate:.1}% hits); Bloom filters avoided {} probes",
        st.block_cache_hits, st.block_cache_misses, st.bloom_useful
    );
    if let Some(pm) = &st.pm {
        let _ = writeln!(
            o,
            "PM pool:                {} mode, {} flushes, {} of {} allocated",
            pm.mode,
            pm.flush_instruction,
            b(pm.bytes_allocated),
            b(pm.pool_bytes)
        );
        let _ = writeln!(
            o,
            "PM bytes written:       {} engine ({} WAL, {} manifest, {} flush, {} compaction); {} device ({} lines written back, {} fences)",
            b(st.pm_bytes_written()),
            b(st.pm_written_wal),
            b(st.pm_written_manifest),
            b(st.pm_written_flush),
            b(st.pm_written_compaction),
            b(st.pm_device_bytes_written()),
            pm.lines_written_back,
            pm.fences
        );
        let _ = writeln!(
            o,
            "PM bytes read:          user {}, compaction {}, recovery {}; device {}",
            b(st.pm_read_user),
            b(st.pm_read_compaction),
            b(st.pm_read_recovery),
            b(pm.bytes_read)
        );
        let _ = writeln!(
            o,
            "PM amplification:       write {:.3}, read {:.3}{}",
            st.pm_write_amplification(),
            st.pm_read_amplification(),
            s.logical_bytes
                .map(|l| format!(", space {:.3}", st.pm_space_amplification(l)))
                .unwrap_or_default()
        );
        if st.pm_flush_fallbacks > 0 {
            let _ = writeln!(
                o,
                "PM full:                {} flushes went to SSD",
                st.pm_flush_fallbacks
            );
        }
        if st.pm_compaction_fallbacks > 0 {
            let _ = writeln!(
                o,
                "PM full:                {} compactions went to SSD ({} after filling the pool)",
                st.pm_compaction_fallbacks, st.pm_compaction_retries
            );
        }
        if st.pm_manifest_fallbacks > 0 {
            let _ = writeln!(
                o,
                "PM full:                the manifest moved to the database directory"
            );
        }
    }
    if st.flush_dropped_versions > 0 {
        let _ = writeln!(
            o,
            "Flushes dropped:        {} versions no reader could see",
            st.flush_dropped_versions
        );
    }
    if st.row_pages_freed_bytes > 0 {
        let _ = writeln!(
            o,
            "Row pages freed:        {} of PM wholly in rows' dead ranges",
            b(st.row_pages_freed_bytes)
        );
    }
    if st.subcompactions > 0 {
        let _ = writeln!(
            o,
            "Subcompactions:         {} key-range partitions merged in parallel",
            st.subcompactions
        );
    }
    if st.reused_runs > 0 {
        let _ = writeln!(
            o,
            "Reused runs:            {} left in place or moved, not rewritten",
            st.reused_runs
        );
    }
    if st.reused_table_bytes > 0 {
        let _ = writeln!(
            o,
            "Reused tables:          {:.1} MiB of untouched LSTs kept inside merged runs",
            st.reused_table_bytes as f64 / (1 << 20) as f64
        );
    }
    if st.reclaimed_runs > 0 {
        let _ = writeln!(
            o,
            "Reclaimed runs:         {} merged to free files less than half in use",
            st.reclaimed_runs
        );
    }
    if st.load_trigger > 0 {
        let _ = writeln!(
            o,
            "Load detector:          trigger {} buffer trees now, {} switches, {} eager flushes",
            st.load_trigger, st.load_mode_switches, st.eager_flushes
        );
    }
    if let Some(g) = &st.global_index {
        let _ = writeln!(
            o,
            "Global index:           {} keys in {} leaves, {} in PM ({} inner nodes, {}), \
             {} of inner nodes in DRAM; {} versions held for snapshots, {} tables listed by \
             R2/R3",
            g.keys,
            g.leaves,
            b(g.pm_bytes),
            g.inner_nodes,
            b(g.inner_pm_bytes),
            b(g.dram_bytes),
            g.held_versions,
            g.listed_tables
        );
        if st.index_stale_copies > 0 || st.index_adopted_tables > 0 {
            let _ = writeln!(
                o,
                "  compaction copies a flush outdated: {}; tables adopted at open: {}",
                st.index_stale_copies, st.index_adopted_tables
            );
        }
    }
    let vl = &st.value_logs;
    if vl.files > 0 {
        let _ = writeln!(
            o,
            "Value logs:             {} files, {} on PM, {} on SSD, {} of it named by tables",
            vl.files,
            b(vl.pm_bytes),
            b(vl.ssd_bytes),
            b(vl.live_bytes)
        );
    }
    let _ = writeln!(o, "Levels:");
    for (i, l) in st.levels.iter().enumerate() {
        let pm = st.pm_levels.get(i).filter(|p| p.files > 0);
        let on_pm = pm
            .map(|p| format!("  ({} on PM)", p.files))
            .unwrap_or_default();
        let _ = writeln!(o, "  L{i}: {:>6} files  {}{on_pm}", l.files, b(l.bytes));
    }
    if !st.compaction_levels.is_empty()
        || !st.flush_targets.is_empty()
        || !st.stall_causes.is_empty()
    {
        o.push_str(&format_compaction_stats(st));
    }
    if !st.stages.is_empty() {
        o.push_str(&crate::figures::format_figures(
            &crate::figures::RunFigures::new(st, s.logical_bytes),
        ));
    }
    let d = &st.dram;
    let _ = writeln!(o, "DRAM footprint:         {}", b(d.total()));
    let _ = writeln!(o, "  memtables:            {}", b(d.memtable_bytes));
    let _ = writeln!(o, "  kept for reuse:       {}", b(d.memtable_kept_bytes));
    if d.global_index_bytes > 0 {
        let _ = writeln!(o, "  global index:         {}", b(d.global_index_bytes));
    }
    if d.list_tower_bytes > 0 {
        let _ = writeln!(o, "  list upper levels:    {}", b(d.list_tower_bytes));
    }
    if d.l0_tree_bytes > 0 {
        let _ = writeln!(o, "  L0 tree inner nodes:  {}", b(d.l0_tree_bytes));
    }
    let _ = writeln!(o, "  Bloom filters:        {}", b(d.filter_bytes));
    let _ = writeln!(o, "  index blocks:         {}", b(d.index_bytes));
    let _ = writeln!(o, "  block cache:          {}", b(d.block_cache_bytes));
    if let Some(l) = &st.labdb {
        let _ = writeln!(
            o,
            "LAB-DB L0: trees {} (mutable, {} keys) and {} (immutable, {} keys), {} PM; \
             {} inserts, {} in-place updates, {} switches, {} chunks compacted ({} by file scan); \
             {} value arrays, {} ({} live); {} WAL-buffer drains; hot-key buffer: \
             {} slots in use, {} PM, {} versions written",
            l.mutable_tree,
            l.mutable_keys,
            l.immutable_tree,
            l.immutable_keys,
            b(l.pm_bytes),
            l.inserts,
            l.in_place_updates,
            l.switches,
            l.chunks,
            l.file_scan_chunks,
            l.value_files,
            b(l.value_bytes),
            b(l.value_live_bytes),
            l.log_drains,
            l.hot_slots,
            b(l.hot_pm_bytes),
            l.hot_writes
        );
    }
    o
}

/// db_bench's `levelstats`: each stage's groups (levels) with their files and bytes, then the
/// per-level compaction statistics and the stall causes.
pub fn format_level_stats(st: &DbStats) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "** Level stats (design {}) **", st.design);
    let _ = writeln!(
        o,
        "{:<8} {:<14} {:>7} {:>14} {:>9} {:>14}",
        "Stage", "Level", "Files", "Size(MB)", "PM files", "PM size(MB)"
    );
    let mb = |b: u64| b as f64 / 1_048_576.0;
    for (i, stage) in st.stages.iter().enumerate() {
        for (g, l) in stage.groups.iter().enumerate() {
            let pm = stage.pm_groups.get(g).cloned().unwrap_or_default();
            let _ = writeln!(
                o,
                "{:<8} {:<14} {:>7} {:>14.3} {:>9} {:>14.3}",
                i,
                group_name(st, i, g),
                l.files,
                mb(l.bytes),
                pm.files,
                mb(pm.bytes)
            );
        }
    }
    o.push_str(&format_compaction_stats(st));
    o
}

/// A stage group's name in the level tables: `L3` for a design of one stage, else the stage's
/// index and name with the group (`1 levels L2`).
fn group_name(st: &DbStats, stage: usize, group: usize) -> String {
    if st.stages.len() <= 1 {
        format!("L{group}")
    } else {
        let name = st.stages.get(stage).map_or("", |s| s.name.as_str());
        format!("{stage} {name} L{group}")
    }
}

/// The per-level compaction statistics as RocksDB prints them (in MB rather than GB, and one
/// row per stage group): for each group the flushes into it and the compactions whose output
/// it received, with the bytes read from the input group (Rn) and from the group itself (Rnp1),
/// written and moved, the write amplification Write / Rn (a flush counts as 1), the rates over
/// the compaction time, the count, and the entries in and dropped; then the stall causes.
pub fn format_compaction_stats(st: &DbStats) -> String {
    let mut o = String::new();
    let mb = |b: u64| b as f64 / 1_048_576.0;
    let _ = writeln!(o, "** Compaction stats (cumulative since open) **");
    let _ = writeln!(
        o,
        "{:<18} {:>6} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>11} {:>10}",
        "Level",
        "Files",
        "Size(MB)",
        "Read(MB)",
        "Rn(MB)",
        "Rnp1(MB)",
        "Write(MB)",
        "Moved(MB)",
        "W-Amp",
        "Rd(MB/s)",
        "Wr(MB/s)",
        "Comp(sec)",
        "Comp(cnt)",
        "Avg(sec)",
        "KeyIn",
        "KeyDrop"
    );
    let mut total = tierkv::stats::LevelCompactionStats::default();
    let (mut total_files, mut total_bytes) = (0usize, 0u64);
    let line = |o: &mut String,
                name: &str,
                files: usize,
                bytes: u64,
                c: &tierkv::stats::LevelCompactionStats| {
        let secs = c.micros as f64 / 1e6;
        let rate = |b: u64| if secs > 0.0 { mb(b) / secs } else { 0.0 };
        // A flush reads nothing from a level: its write amplification is 1 (RocksDB's L0).
        let w_amp = if c.read_input_bytes > 0 {
            c.written_bytes as f64 / c.read_input_bytes as f64
        } else if c.written_bytes > 0 {
            1.0
        } else {
            0.0
        };
        let _ = writeln!(
            o,
            "{:<18} {:>6} {:>10.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>6.2} {:>9.1} {:>9.1} {:>9.3} {:>9} {:>9.3} {:>11} {:>10}",
            name,
            files,
            mb(bytes),
            mb(c.read_input_bytes + c.read_output_bytes),
            mb(c.read_input_bytes),
            mb(c.read_output_bytes),
            mb(c.written_bytes),
            mb(c.moved_bytes),
            w_amp,
            rate(c.read_input_bytes + c.read_output_bytes),
            rate(c.written_bytes),
            secs,
            c.compactions,
            if c.compactions > 0 { secs / c.compactions as f64 } else { 0.0 },
            c.input_entries,
            c.dropped_entries
        );
    };
    for (i, stage) in st.stages.iter().enumerate() {
        for (g, l) in stage.groups.iter().enumerate() {
            let mut c = tierkv::stats::LevelCompactionStats {
                stage: i,
                group: g,
                ..Default::default()
            };
            for x in st
                .compaction_levels
                .iter()
                .filter(|x| x.stage == i && x.group == g)
            {
                c.add(x);
            }
            if i == 0 {
                // Flushes write into stage 0's groups: counted as writes, as RocksDB's L0.
                for f in st.flush_targets.iter().filter(|f| f.group == g) {
                    c.written_bytes += f.written_bytes;
                    c.micros += f.micros;
                    c.compactions += f.flushes;
                }
            }
            if l.files == 0 && c.compactions == 0 {
                continue;
            }
            line(&mut o, &group_name(st, i, g), l.files, l.bytes, &c);
            total.add(&c);
            total_files += l.files;
            total_bytes += l.bytes;
        }
    }
    line(&mut o, "Sum", total_files, total_bytes, &total);
    let _ = writeln!(
        o,
        "(stage 0's rows count the flushes into them as writes and in Comp(cnt); Read = Rn + Rnp1: key and value bytes the merges read)"
    );
    if st.stall_causes.is_empty() {
        let _ = writeln!(o, "Stall causes: none");
    } else {
        let _ = writeln!(o, "Stall causes:");
        for c in &st.stall_causes {
            let _ = writeln!(
                o,
                "  {:<40} {:>8} write groups {:>12.3} s",
                c.cause,
                c.stalled_groups,
                c.micros as f64 / 1e6
            );
        }
    }
    o
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

/// db_bench's `sstables`: every live table, by stage and level.
pub fn format_sstables(tables: &Option<Vec<TableInfo>>) -> String {
    let Some(tables) = tables else {
        return "sstables: this engine does not list its tables\n".to_string();
    };
    let mut o = String::new();
    let _ = writeln!(o, "** Live tables: {} **", tables.len());
    let mut current = None;
    for t in tables {
        if current != Some((t.stage, t.group)) {
            current = Some((t.stage, t.group));
            let _ = writeln!(o, "--- stage {} level {} ---", t.stage, t.group);
        }
        let entries = t.entries.map_or(String::new(), |e| format!(" {e} entries"));
        let part = t
            .part_of
            .map_or(String::new(), |f| format!(" (part of {f})"));
        let _ = writeln!(
            o,
            " {:>8}: {} bytes on {}{entries}{part} ['{}' .. '{}']",
            t.number,
            t.bytes,
            t.tier,
            crate::text::display_bytes(&t.smallest),
            crate::text::display_bytes(&t.largest)
        );
    }
    o
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

/// One row of the designs-side-by-side table: a figure's value per design and its ratio to the
/// first design's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ComparisonRow {
    /// The figure ("fillrandom ops/s", "write amplification", ...).
    pub figure: String,
    /// Its value for each design, in `--design` order (None: not measured).
    pub values: Vec<Option<f64>>,
    /// value / first design's value (None when either is missing or the first is 0).
    pub ratios: Vec<Option<f64>>,
}

/// The side-by-side figures of `runs`: per benchmark ops/s and p99 (for a benchmark of several
/// operation types also the average latency, and each type's average and p99), then write,
/// read and space amplification, stall time, DRAM and, for runs with a PM pool, the pool's
/// allocated bytes.
pub fn compare(runs: &[DesignRun]) -> Vec<ComparisonRow> {
    let mut names: Vec<&str> = Vec::new();
    for r in runs {
        for b in &r.benchmarks {
            if !names.contains(&b.name.as_str()) {
                names.push(&b.name);
            }
        }
    }
    let mut rows = Vec::new();
    let mut row = |figure: String, f: &dyn Fn(&DesignRun) -> Option<f64>| {
        let values: Vec<Option<f64>> = runs.iter().map(f).collect();
        let first = values.first().copied().flatten();
        let ratios = values
            .iter()
            .map(|v| match (v, first) {
                (Some(v), Some(f)) if f != 0.0 => Some(v / f),
                _ => None,
            })
            .collect();
        rows.push(ComparisonRow {
            figure,
            values,
            ratios,
        });
    };
    for name in &names {
        let bench = |r: &DesignRun| r.benchmarks.iter().find(|b| b.name == *name).cloned();
        row(format!("{name} ops/s"), &|r| {
            bench(r).map(|b| b.ops_per_sec)
        });
        row(format!("{name} p99 us"), &|r| {
            bench(r).map(|b| b.latency.p99_us)
        });
        // Benchmarks of several operation types (readrandomwriterandom, YCSB): the average
        // latency, and each type's average and p99.
        let mut ops: Vec<String> = Vec::new();
        for r in runs {
            if let Some(b) = bench(r).filter(|b| b.ops_by_type.len() > 1) {
                for o in &b.ops_by_type {
                    if !ops.contains(&o.op) {
                        ops.push(o.op.clone());
                    }
                }
            }
        }
        if !ops.is_empty() {
            row(format!("{name} avg us"), &|r| {
                bench(r).map(|b| b.latency.avg_us)
            });
        }
        for op in &ops {
            row(format!("{name} {op} avg us"), &|r| {
                bench(r).and_then(|b| b.op(op).map(|o| o.latency.avg_us))
            });
            row(format!("{name} {op} p99 us"), &|r| {
                bench(r).and_then(|b| b.op(op).map(|o| o.latency.p99_us))
            });
        }
    }
    let stats = |r: &DesignRun| r.final_stats.clone();
    // Amplification of the whole database (every tier's bytes added up: what a design costs
    // in all), then each tier's own when a design has PM. An engine without per-tier figures
    // (RocksDB) has one tier, the SSD.
    let figures = |r: &DesignRun| r.figures.clone();
    let total =
        |r: &DesignRun, f: &dyn Fn(&crate::figures::Amplification) -> Option<f64>| match figures(r)
        {
            Some(fig) => f(&fig.database.amplification),
            None => None,
        };
    row("write amplification".into(), &|r| {
        total(r, &|a| a.write).or_else(|| stats(r).map(|s| s.write_amplification))
    });
    row("read amplification".into(), &|r| {
        total(r, &|a| a.read).or_else(|| stats(r).map(|s| s.read_amplification))
    });
    row("space amplification".into(), &|r| {
        total(r, &|a| a.space).or_else(|| stats(r).and_then(|s| s.space_amplification))
    });
    if runs.iter().any(|r| r.tiers.iter().any(|t| t.tier == "PM")) {
        // Each tier's share of the rows above, by the same definitions (the engine's bytes to
        // that tier), so that the tiers add up to the total; the PM device's own count (cache
        // lines written back x 64) is its own row.
        for tier in ["SSD", "PM"] {
            let part = |r: &DesignRun| {
                let name = tier.to_lowercase();
                figures(r).and_then(|f| f.tiers.into_iter().find(|t| t.part == name))
            };
            // An engine without per-tier figures (RocksDB) has its SSD figures only.
            let fallback = |r: &DesignRun| {
                (tier == "SSD")
                    .then(|| r.tiers.iter().find(|t| t.tier == "SSD").cloned())
                    .flatten()
            };
            row(
                format!("  {tier} write amplification"),
                &|r| match part(r) {
                    Some(p) => p.amplification.write,
                    None => fallback(r).map(|t| t.write),
                },
            );
            row(format!("  {tier} read amplification"), &|r| match part(r) {
                Some(p) => p.amplification.read,
                None => fallback(r).map(|t| t.read),
            });
            row(
                format!("  {tier} space amplification"),
                &|r| match part(r) {
                    Some(p) => p.amplification.space,
                    None => fallback(r).and_then(|t| t.space),
                },
            );
        }
        row("PM device write amplification".into(), &|r| {
            figures(r)
                .and_then(|f| f.tiers.into_iter().find(|t| t.part == "pm"))
                .and_then(|p| p.device_write_amplification)
        });
    }
    row("stall time s".into(), &|r| {
        stats(r).map(|s| s.stall_micros as f64 / 1e6)
    });
    row("DRAM MiB peak".into(), &|r| {
        dram_over_run(r).map(|(peak, _)| peak / 1_048_576.0)
    });
    row("DRAM MiB mean".into(), &|r| {
        dram_over_run(r).map(|(_, mean)| mean / 1_048_576.0)
    });
    // The pool's chunks in use (a file takes whole chunks), where space amplification counts
    // the files' bytes.
    if runs
        .iter()
        .any(|r| stats(r).is_some_and(|s| s.stats.pm.is_some()))
    {
        row("PM allocated MiB".into(), &|r| {
            stats(r)
                .and_then(|s| s.stats.pm)
                .map(|p| p.bytes_allocated as f64 / 1_048_576.0)
        });
    }
    rows
}

/// The engine's DRAM over a run: the peak and the time-weighted mean of its benchmarks'
/// samples and the end-of-run figure (the only one for a run too short to sample). `None` for
/// an engine without TierKV's figures.
pub fn dram_over_run(r: &DesignRun) -> Option<(f64, f64)> {
    let end = r.final_stats.as_ref()?.stats.dram.total() as f64;
    let samples: Vec<(f64, f64)> = r
        .benchmarks
        .iter()
        .flat_map(|b| &b.samples)
        .filter_map(|s| s.dram_bytes.map(|d| (d as f64, s.interval_sec)))
        .collect();
    let peak = samples.iter().map(|s| s.0).fold(end, f64::max);
    let secs: f64 = samples.iter().map(|s| s.1).sum();
    let mean = if secs > 0.0 {
        samples.iter().map(|(d, t)| d * t).sum::<f64>() / secs
    } else {
        end
    };
    Some((peak, mean))
}

/// Decimals a figure is shown with, the same for every design (and for zero) so that a column
/// reads at a glance: rates as integers, latencies and MiB with one decimal, amplifications and
/// seconds with three.
fn figure_decimals(figure: &str) -> usize {
    if figure.ends_with("ops/s") {
        0
    } else if figure.ends_with(" us") || figure.ends_with("MiB") {
        1
    } else {
        3
    }
}

fn format_figure(figure: &str, v: f64) -> String {
    format!("{v:.*}", figure_decimals(figure))
}

/// What the amplification rows of the side-by-side table count.
pub const AMPLIFICATION_LEGEND: &str = "\
write amplification: bytes written to SSD and PM (log, flushes, compactions, manifest) / key+value bytes of user writes
read amplification:  bytes read from SSD and PM to answer gets and scans (blocks, indexes, filters; not the block cache) / key+value bytes returned
space amplification: live bytes on SSD and PM (tables, logs) / key+value bytes of the live data (when measured)
(indented rows: the same, counting only one tier's bytes, so the tiers add up to the row above; \"n/a\": not measured or nothing to divide by)
PM device write amplification: cache lines the PM device wrote back x 64 / key+value bytes of user writes (a small store costs a whole line)
DRAM MiB peak / mean: the engine's DRAM (memtables, filters, indexes, block cache, DRAM index nodes) over the run's samples, at most and on average
";

/// Notes under the side-by-side table: designs whose figures cannot be compared yet because
/// the run never moved data out of the memtable.
pub fn comparison_notes(runs: &[DesignRun]) -> Vec<String> {
    runs.iter()
        .filter_map(|r| {
            let s = r.final_stats.as_ref()?;
            (s.engine == "tierkv" && s.stats.flushes == 0 && s.stats.compactions == 0).then(|| {
                format!(
                    "{}: all data still in the memtable (no flush or compaction ran): amplification not yet meaningful",
                    r.design
                )
            })
        })
        .collect()
}

/// The side-by-side table: one column per design, each figure with its ratio to the first
/// design's (`1.23x`).
pub fn format_comparison(designs: &[String], rows: &[ComparisonRow]) -> String {
    let mut cells: Vec<Vec<String>> = Vec::new();
    let mut header = vec!["figure".to_string()];
    for (i, d) in designs.iter().enumerate() {
        header.push(if i == 0 {
            d.clone()
        } else {
            format!("{d} (vs {})", designs[0])
        });
    }
    cells.push(header);
    for r in rows {
        let mut line = vec![r.figure.clone()];
        for (i, v) in r.values.iter().enumerate() {
            line.push(match (v, r.ratios.get(i).copied().flatten()) {
                (None, _) => "n/a".into(),
                (Some(v), _) if i == 0 => format_figure(&r.figure, *v),
                (Some(v), Some(ratio)) => {
                    format!("{} ({ratio:.2}x)", format_figure(&r.figure, *v))
                }
                (Some(v), None) => format_figure(&r.figure, *v),
            });
        }
        cells.push(line);
    }
    let cols = cells[0].len();
    let widths: Vec<usize> = (0..cols)
        .map(|c| cells.iter().map(|l| l[c].len()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for (n, line) in cells.iter().enumerate() {
        for (c, cell) in line.iter().enumerate() {
            if c == 0 {
                let _ = write!(out, "{cell:<w$}", w = widths[c]);
            } else {
                let _ = write!(out, "  {cell:>w$}", w = widths[c]);
            }
        }
        out.push('\n');
        if n == 0 {
            out.push_str(&"-".repeat(widths.iter().sum::<usize>() + 2 * (cols - 1)));
            out.push('\n');
        }
    }
    out
}

/// The machine a run was measured on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MachineInfo {
    /// CPU model name (`/proc/cpuinfo`).
    pub cpu_model: String,
    /// Logical CPUs available.
    pub cores: usize,
    /// Total memory in bytes (`/proc/meminfo`), 0 when unknown.
    pub memory_bytes: u64,
    /// Kernel release (`/proc/sys/kernel/osrelease`).
    pub kernel: String,
    /// Operating system and architecture.
    pub os: String,
}

impl MachineInfo {
    /// Describes this machine (fields that cannot be read are "unknown" / 0).
    pub fn detect() -> Self {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let cpuinfo = read("/proc/cpuinfo");
        let cpu_model = cpuinfo
            .lines()
            .find(|l| {
                l.starts_with("model name") || l.starts_with("Model") || l.starts_with("cpu model")
            })
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_else(|| "unknown".into());
        let memory_bytes = read("/proc/meminfo")
            .lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024);
        let kernel = read("/proc/sys/kernel/osrelease").trim().to_string();
        MachineInfo {
            cpu_model,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory_bytes,
            kernel: if kernel.is_empty() {
                "unknown".into()
            } else {
                kernel
            },
            os: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
        }
    }
}

/// The git revision of the harness: recorded at build time by build.rs, else asked of git at
/// run time, else "unknown".
pub fn git_revision() -> String {
    let built = env!("TIERKV_GIT_REVISION");
    if built != "unknown" {
        return built.to_string();
    }
    std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// The `--json` document.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct JsonReport {
    /// `"tierkv-bench"`.
    pub tool: String,
    /// The harness version.
    pub version: String,
    /// The git revision the harness was built from.
    pub git_revision: String,
    /// The machine.
    pub machine: MachineInfo,
    /// The flags of the run.
    pub flags: BenchConfig,
    /// One entry per design, in `--design` order.
    pub runs: Vec<DesignRun>,
    /// The designs side by side (ratios to the first design).
    pub comparison: Vec<ComparisonRow>,
    /// For `tierkv reproduce`: the experiment, its rounds and phases, and every check with
    /// its verdict. Absent from `tierkv bench` reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reproduce: Option<crate::reproduce::ReproduceSummary>,
}

impl JsonReport {
    /// Assembles a report.
    pub fn new(flags: &BenchConfig, runs: Vec<DesignRun>) -> Self {
        JsonReport {
            tool: "tierkv-bench".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            git_revision: git_revision(),
            machine: MachineInfo::detect(),
            flags: flags.clone(),
            comparison: compare(&runs),
            runs,
            reproduce: None,
        }
    }

    /// The report as pretty-printed JSON.
    pub fn to_json(&self) -> serde_json::Result<String> {
        serde_json::to_string_pretty(self)
    }

    /// Writes the report to `path`.
    pub fn write_to(&self, path: &Path) -> Result<(), String> {
        let json = self
            .to_json()
            .map_err(|e| format!("encoding the JSON report: {e}"))?;
        std::fs::write(path, json + "\n")
            .map_err(|e| format!("writing the JSON report to {}: {e}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::parse;
    use crate::runner::new_histogram;
    use tierkv::stats::{DramFootprint, LevelStats};
    use tierkv::Options;

    fn sample_result() -> BenchResult {
        let mut h = new_histogram();
        for ns in 1..=1000u64 {
            h.record(ns * 1000).unwrap(); // 1..=1000 micros
        }
        BenchResult::new(
            "readrandom",
            1000,
            2.0,
            2.0,
            1000 * 144,
            LatencySummary::from_histogram(&h),
            Some(900),
            None,
        )
    }

    /// The byte counters of [`sample_stats`], written bytes times `scale`.
    fn sample_io(scale: u64) -> Vec<tierkv::stats::IoCount> {
        let io = |part: &str, stage: Option<usize>, purpose: &str, read: u64, written: u64| {
            tierkv::stats::IoCount {
                tier: tierkv::Tier::Ssd,
                part: part.into(),
                stage,
                purpose: purpose.into(),
                read,
                written: written * scale,
            }
        };
        vec![
            io("front_end", None, "wal", 0, 1100),
            io("stage0", Some(0), "flush", 0, 900),
            io("stage0", Some(0), "compaction", 0, 2100),
            io("db", None, "manifest", 0, 10),
            io("stage0", Some(0), "user_read", 1000, 0),
        ]
    }

    fn sample_stats() -> DbStats {
        DbStats {
            design: "leveled".into(),
            user_bytes_written: 1000,
            user_bytes_read: 500,
            ssd_written_wal: 1100,
            ssd_written_flush: 900,
            ssd_written_compaction: 2100,
            ssd_written_manifest: 10,
            ssd_read_user: 1000,
            stall_slowdown_micros: 1_500_000,
            stall_stop_micros: 500_000,
            stall_count: 7,
            flushes: 3,
            compactions: 2,
            levels: vec![
                LevelStats {
                    files: 2,
                    bytes: 400,
                },
                LevelStats {
                    files: 1,
                    bytes: 600,
                },
            ],
            wal_bytes: 200,
            io: sample_io(1),
            dram: DramFootprint {
                memtable_bytes: 1 << 20,
                memtable_kept_bytes: 40,
                filter_bytes: 10,
                index_bytes: 20,
                block_cache_bytes: 30,
                global_index_bytes: 0,
                l0_tree_bytes: 0,
                list_tower_bytes: 0,
            },
            ..DbStats::default()
        }
    }

    #[test]
    fn result_lines_have_db_bench_fields() {
        let r = sample_result();
        assert_eq!(r.ops_per_sec, 500.0);
        assert_eq!(r.micros_per_op, 2000.0);
        assert!((r.mb_per_sec - 144_000.0 / 2.0 / 1_048_576.0).abs() < 1e-9);
        assert!((r.latency.p50_us - 500.0).abs() < 1.0, "{:?}", r.latency);
        assert!((r.latency.p99_us - 990.0).abs() < 1.0, "{:?}", r.latency);
        assert!((r.latency.p999_us - 999.0).abs() < 1.0, "{:?}", r.latency);
        assert!((r.latency.avg_us - 500.5).abs() < 1.0, "{:?}", r.latency);
        let text = format_result(&r);
        assert!(
            text.starts_with("readrandom             :    2000.000 micros/op 500 ops/sec;    0.1 MB/s (900 of 1000 found)\n"),
            "{text}"
        );
        for field in [
            "latency (micros):",
            "avg 500.",
            "p50 500.",
            "p99 99",
            "p99.9 99",
            "max 100",
        ] {
            assert!(text.contains(field), "{field} missing from {text}");
        }
        assert!(text.ends_with('\n'));
        let empty = BenchResult::new(
            "flush",
            0,
            0.0,
            0.0,
            0,
            LatencySummary::default(),
            None,
            None,
        );
        assert_eq!(
            format_result(&empty),
            "flush                  :       0.000 ms (the write buffers written into the first stage)\n"
        );
    }

    #[test]
    fn stats_block_names_every_figure() {
        let s = StatsSummary::new("tierkv", sample_stats(), Some(800));
        assert!((s.write_amplification - 4.11).abs() < 1e-9);
        assert!((s.write_amplification_tables - 3.0).abs() < 1e-9);
        assert!((s.read_amplification - 2.0).abs() < 1e-9);
        assert_eq!(s.space_amplification, Some(1.5));
        assert_eq!(s.stall_micros, 2_000_000);
        let text = format_stats(&s);
        for field in [
            "User writes:            0 ops, 1000 B",
            "SSD bytes written:      4110 B (4.0 KiB)",
            "  WAL:                  1100 B (1.1 KiB)",
            "  flush:                900 B",
            "  compaction:           2100 B (2.1 KiB)",
            "  manifest:             10 B",
            "Amplification:          write ",
            "(every tier: SSD and PM bytes / user bytes; write without the log ",
            "SSD write amplification: 4.110 (SSD bytes written / user bytes written; tables only \
             3.000)",
            "SSD read amplification: 2.000 (SSD bytes read for gets and scans / bytes they \
             returned)",
            "SSD space amplification: 1.500 (live SSD 1200 B (1.2 KiB) / logical 800 B)",
            "Stalls:                 7 write groups, 2.000 s (slowdown 1.500 s, stop 0.500 s)",
            "Flushes / compactions:  3 / 2",
            "  L0:      2 files  400 B",
            "  L1:      1 files  600 B",
            "DRAM footprint:         1048676 B (1.0 MiB)",
            "  memtables:            1048576 B (1.0 MiB)",
            "  kept for reuse:       40 B",
            "  Bloom filters:        10 B",
            "  index blocks:         20 B",
            "  block cache:          30 B",
        ] {
            assert!(text.contains(field), "{field:?} missing from\n{text}");
        }
        let unknown = format_stats(&StatsSummary::new("tierkv", sample_stats(), None));
        assert!(unknown.contains("SSD space amplification: n/a"));
    }

    #[test]
    fn header_shows_flags_and_options() {
        let c = parse(&[
            "--benchmarks=fillseq,readrandom",
            "--num=1000",
            "--key_size=20",
        ])
        .unwrap();
        let options = serde_json::to_value(c.options()).unwrap();
        let text = format_header("tierkv", "leveled", &c, &options);
        assert!(text.contains("Design:     leveled"));
        assert!(text.contains("Keys:       20 bytes each"));
        assert!(text.contains("Entries:    1000"));
        assert!(text.contains("Benchmarks: fillseq,readrandom"));
        // Without --verbose: only what differs from the design's defaults.
        assert!(
            text.contains("Options:    the defaults of leveled (--verbose prints them)"),
            "{text}"
        );
        assert!(!text.contains("\"block_cache_bytes\""), "{text}");
        let verbose = parse(&["--num=1000", "--verbose"]).unwrap();
        let text = format_header("tierkv", "leveled", &verbose, &options);
        assert!(text.contains("\"block_cache_bytes\": 8388608"), "{text}");
        assert!(text.contains("\"write_buffer_size\": 67108864"));
        assert!(text.contains("SSD model:  writes uncapped, reads uncapped, direct reads off"));
        assert!(!text.contains("Note:"));
        let c = parse(&["--ssd_write_mbps=50", "--use_direct_reads"]).unwrap();
        let options = serde_json::to_value(c.options()).unwrap();
        let text = format_header("tierkv", "leveled", &c, &options);
        assert!(
            text.contains("SSD model:  writes 50 MB/s, reads uncapped, direct reads on"),
            "{text}"
        );
        assert!(
            text.contains(
                "the defaults of leveled, but --use_direct_reads=true --ssd_write_mbps=50"
            ),
            "{text}"
        );
        let shaped = parse(&[
            "--write_buffer_size=1000",
            "--max_background_jobs=3",
            "--set",
            "compaction.level0_compaction_trigger=8",
            "--set",
            "pm.latency.write_ns=5",
        ])
        .unwrap();
        let summary = options_summary(&serde_json::to_value(shaped.options()).unwrap());
        for part in [
            "--write_buffer_size=1000",
            "--max_background_jobs=3",
            "--level0_file_num_compaction_trigger=8",
            "--set pm.latency.write_ns=5",
        ] {
            assert!(summary.contains(part), "{part} missing from {summary}");
        }
        let rocks = crate::rocks::options_json(&c);
        let text = format_header("rocksdb", "rocksdb", &c, &rocks);
        assert!(
            text.contains("Note:       RocksDB is not under exactly"),
            "{text}"
        );
    }

    #[test]
    fn json_round_trip() {
        let c = parse(&[
            "--benchmarks=fillseq,readrandom",
            "--num=1000",
            "--key_size=20",
            "--json=r.json",
        ])
        .unwrap();
        let options = c.options();
        let stats = StatsSummary::new("tierkv", sample_stats(), Some(800));
        let mut result = sample_result();
        let mut h = new_histogram();
        for ns in 1..=100u64 {
            h.record(ns * 1000).unwrap();
        }
        result.ops_by_type = vec![OpLatency::new("read", &h), OpLatency::new("update", &h)];
        result.samples = vec![Sample {
            t_sec: 1.0,
            interval_sec: 1.0,
            ops: 1000,
            ops_per_sec: 1000.0,
            stall_micros: 250,
            dram_bytes: None,
        }];
        result.stall_micros = Some(250);
        let mut other = stats.clone();
        other.write_amplification *= 2.0;
        other.stats.io = sample_io(2);
        let runs = vec![
            DesignRun::new(
                "leveled",
                "tierkv",
                serde_json::to_value(&options).unwrap(),
                vec![result.clone()],
                Some(stats.clone()),
            ),
            DesignRun::new(
                "other",
                "tierkv",
                serde_json::json!({"x": 1}),
                vec![sample_result()],
                Some(other),
            ),
        ];
        let report = JsonReport::new(&c, runs.clone());
        let json = report.to_json().unwrap();

        // Parsed back into the typed report, every part compares equal.
        let back: JsonReport = serde_json::from_str(&json).unwrap();
        assert_eq!(back.tool, "tierkv-bench");
        assert_eq!(back.flags, c);
        assert_eq!(back.runs, runs);
        assert_eq!(back.comparison, report.comparison);
        assert_eq!(back.machine, report.machine);
        assert!(!back.git_revision.is_empty());
        assert!(back.machine.cores >= 1);
        let opts: Options = serde_json::from_value(back.runs[0].options.clone()).unwrap();
        assert_eq!(opts.block_cache_bytes, options.block_cache_bytes);
        assert_eq!(opts.table, options.table);
        assert_eq!(opts.compaction, options.compaction);
        assert_eq!(back.runs[0].tiers[0].tier, "SSD");
        // The side-by-side rows: ratios to the first design.
        let wa = back
            .comparison
            .iter()
            .find(|r| r.figure == "write amplification")
            .unwrap();
        assert_eq!(wa.ratios, vec![Some(1.0), Some(2.0)]);
        let ops = back
            .comparison
            .iter()
            .find(|r| r.figure == "readrandom ops/s")
            .unwrap();
        assert_eq!(ops.values, vec![Some(500.0), Some(500.0)]);
        let table = format_comparison(&["leveled".into(), "other".into()], &back.comparison);
        assert!(table.contains("other (vs leveled)"), "{table}");
        assert!(table.contains("(2.00x)"), "{table}");
        assert!(table.contains("readrandom p99 us"), "{table}");
        assert!(table.contains("DRAM MiB"), "{table}");
        assert!(
            !table.contains("PM allocated"),
            "no run has a pool: {table}"
        );
        // With a pool: its allocated chunks, side by side.
        let mut pm_runs = runs.clone();
        for (r, mib) in pm_runs.iter_mut().zip([2u64, 6]) {
            let s = r.final_stats.as_mut().unwrap();
            s.stats.pm = Some(tierkv::stats::PmDeviceStats {
                bytes_allocated: mib << 20,
                ..Default::default()
            });
        }
        let pool = compare(&pm_runs)
            .into_iter()
            .find(|r| r.figure == "PM allocated MiB")
            .expect("a PM allocated row");
        assert_eq!(pool.values, vec![Some(2.0), Some(6.0)]);
        assert_eq!(pool.ratios, vec![Some(1.0), Some(3.0)]);

        // And the untyped view has the documented field names.
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        let b = &v["runs"][0]["benchmarks"][0];
        assert_eq!(b["name"], "readrandom");
        assert_eq!(b["ops"], 1000);
        assert_eq!(b["seconds"], 2.0);
        assert_eq!(b["ops_per_sec"], 500.0);
        assert_eq!(b["found"], 900);
        assert!(b["mb_per_sec"].is_f64());
        assert!(b["latency"]["p999_us"].as_f64().unwrap() > 990.0);
        assert!(b["latency"]["p9999_us"].as_f64().unwrap() > 990.0);
        assert!(b["latency"]["p90_us"].as_f64().unwrap() > 890.0);
        assert_eq!(b["ops_by_type"][1]["op"], "update");
        assert!(b["ops_by_type"][0]["cdf"].as_array().unwrap().len() > 5);
        assert_eq!(b["samples"][0]["stall_micros"], 250);
        assert!(v["machine"]["cpu_model"].is_string());
        assert!(v["git_revision"].is_string());
        assert_eq!(
            v["flags"]["benchmarks"],
            serde_json::json!(["fillseq", "readrandom"])
        );
        assert_eq!(v["flags"]["key_size"], 20);
        assert_eq!(v["flags"]["design"], serde_json::json!(["leveled"]));
        let run = &v["runs"][0];
        assert_eq!(run["options"]["table"]["bloom_bits_per_key"], 10);
        assert_eq!(run["final_stats"]["stats"]["ssd_written_compaction"], 2100);
        assert_eq!(run["final_stats"]["write_amplification_tables"], 3.0);
        assert_eq!(run["final_stats"]["space_amplification"], 1.5);

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        report.write_to(&path).unwrap();
        let from_file: JsonReport = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(from_file.runs, report.runs);
        let err = report
            .write_to(&dir.path().join("missing/r.json"))
            .unwrap_err();
        assert!(err.contains("writing the JSON report"), "{err}");
    }

    #[test]
    fn bytes_are_human_readable() {
        assert_eq!(format_bytes(0), "0 B");
        assert_eq!(format_bytes(1023), "1023 B");
        assert_eq!(format_bytes(1536), "1536 B (1.5 KiB)");
        assert_eq!(format_bytes(3 << 30), "3221225472 B (3.0 GiB)");
    }
}
