//! Reports: db_bench-style result lines, the engine-figures block, and the JSON document.
//!
//! A result prints as
//! `fillrandom   :       3.123 micros/op 320184 ops/sec;   45.9 MB/s (1000 of 1000 found)`
//! followed by `latency (micros): avg .. p50 .. p99 .. p99.9 .. max ..`. MB/s counts key + value
//! bytes written, or returned by reads, per second, with MB = 2^20 bytes as db_bench does.

use crate::config::BenchConfig;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::Path;
use tierkv::{DbStats, Options};

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
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
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
            p99_us: us(h.value_at_quantile(0.99)),
            p999_us: us(h.value_at_quantile(0.999)),
            max_us: us(h.max()),
        }
    }
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
        }
    }
}

/// The db_bench-style lines of one result (each ends with a newline).
pub fn format_result(r: &BenchResult) -> String {
    let mut s = format!(
        "{:<12} : {:>11.3} micros/op {:.0} ops/sec; {:>6.1} MB/s",
        r.name, r.micros_per_op, r.ops_per_sec, r.mb_per_sec
    );
    if let Some(found) = r.found {
        let _ = write!(s, " ({found} of {} found)", r.ops);
    }
    if let Some(w) = r.writer_ops {
        let _ = write!(s, " [writer: {w} puts]");
    }
    let l = &r.latency;
    let _ = writeln!(
        s,
        "\n{:<12}   latency (micros): avg {:.2}  p50 {:.2}  p99 {:.2}  p99.9 {:.2}  max {:.2}",
        "", l.avg_us, l.p50_us, l.p99_us, l.p999_us, l.max_us
    );
    s
}

/// The run's header: what is being measured, and the options in force.
pub fn format_header(engine: &str, config: &BenchConfig, options: &Options) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "Engine:     {engine}");
    let _ = writeln!(s, "Design:     {}", options.design);
    let _ = writeln!(s, "Keys:       {} bytes each", config.key_size);
    let _ = writeln!(s, "Values:     {} bytes each", config.value_size);
    let _ = writeln!(s, "Entries:    {}", config.num);
    let _ = writeln!(s, "Reads:      {}", config.reads_per_thread());
    let _ = writeln!(s, "Threads:    {}", config.threads);
    let _ = writeln!(s, "Sync:       {}", config.sync);
    let names: Vec<_> = config.benchmarks.iter().map(|b| b.name()).collect();
    let _ = writeln!(s, "Benchmarks: {}", names.join(","));
    let _ = writeln!(s, "Options:    {options:#?}");
    let _ = writeln!(s, "{}", "-".repeat(72));
    s
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
        "User reads:             {} gets, {} returned",
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
    let _ = writeln!(
        o,
        "Write amplification:    {:.3} (tables only {:.3})",
        s.write_amplification, s.write_amplification_tables
    );
    let _ = writeln!(o, "Read amplification:     {:.3}", s.read_amplification);
    match (s.space_amplification, s.logical_bytes) {
        (Some(sa), Some(l)) => {
            let _ = writeln!(
                o,
                "Space amplification:    {sa:.3} (live SSD {} / logical {})",
                b(st.ssd_live_bytes()),
                b(l)
            );
        }
        _ => {
            let _ = writeln!(
                o,
                "Space amplification:    n/a (live SSD {})",
                b(st.ssd_live_bytes())
            );
        }
    }
    let _ = writeln!(
        o,
        "Stalls:                 {} writes, {:.3} s (slowdown {:.3} s, stop {:.3} s)",
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
    let _ = writeln!(
        o,
        "WAL:                    {} appends, {} syncs, {} live",
        st.wal_appends,
        st.wal_syncs,
        b(st.wal_bytes)
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
    let _ = writeln!(o, "Levels:");
    for (i, l) in st.levels.iter().enumerate() {
        let _ = writeln!(o, "  L{i}: {:>6} files  {}", l.files, b(l.bytes));
    }
    let d = &st.dram;
    let _ = writeln!(o, "DRAM footprint:         {}", b(d.total()));
    let _ = writeln!(o, "  memtables:            {}", b(d.memtable_bytes));
    let _ = writeln!(o, "  Bloom filters:        {}", b(d.filter_bytes));
    let _ = writeln!(o, "  index blocks:         {}", b(d.index_bytes));
    let _ = writeln!(o, "  block cache:          {}", b(d.block_cache_bytes));
    o
}

/// The `--json` document.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct JsonReport {
    /// `"tierkv-bench"`.
    pub tool: String,
    /// The harness version.
    pub version: String,
    /// The engine benchmarked.
    pub engine: String,
    /// The flags of the run.
    pub flags: BenchConfig,
    /// The engine options in force at the start.
    pub options: Options,
    /// Every benchmark run, in order.
    pub benchmarks: Vec<BenchResult>,
    /// The engine's figures after the last benchmark.
    pub final_stats: Option<StatsSummary>,
}

impl JsonReport {
    /// Assembles a report.
    pub fn new(
        engine: &str,
        flags: &BenchConfig,
        options: &Options,
        benchmarks: Vec<BenchResult>,
        final_stats: Option<StatsSummary>,
    ) -> Self {
        JsonReport {
            tool: "tierkv-bench".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            engine: engine.into(),
            flags: flags.clone(),
            options: options.clone(),
            benchmarks,
            final_stats,
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
            dram: DramFootprint {
                memtable_bytes: 1 << 20,
                filter_bytes: 10,
                index_bytes: 20,
                block_cache_bytes: 30,
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
            text.starts_with("readrandom   :    2000.000 micros/op 500 ops/sec;    0.1 MB/s (900 of 1000 found)\n"),
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
        assert!(format_result(&empty)
            .starts_with("flush        :       0.000 micros/op 0 ops/sec;    0.0 MB/s\n"));
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
            "Write amplification:    4.110 (tables only 3.000)",
            "Read amplification:     2.000",
            "Space amplification:    1.500 (live SSD 1200 B (1.2 KiB) / logical 800 B)",
            "Stalls:                 7 writes, 2.000 s (slowdown 1.500 s, stop 0.500 s)",
            "Flushes / compactions:  3 / 2",
            "  L0:      2 files  400 B",
            "  L1:      1 files  600 B",
            "DRAM footprint:         1048636 B (1.0 MiB)",
            "  memtables:            1048576 B (1.0 MiB)",
            "  Bloom filters:        10 B",
            "  index blocks:         20 B",
            "  block cache:          30 B",
        ] {
            assert!(text.contains(field), "{field:?} missing from\n{text}");
        }
        let unknown = format_stats(&StatsSummary::new("tierkv", sample_stats(), None));
        assert!(unknown.contains("Space amplification:    n/a"));
    }

    #[test]
    fn header_shows_flags_and_options() {
        let c = parse(&[
            "--benchmarks=fillseq,readrandom",
            "--num=1000",
            "--key_size=20",
        ])
        .unwrap();
        let text = format_header("tierkv", &c, &c.options());
        assert!(text.contains("Keys:       20 bytes each"));
        assert!(text.contains("Entries:    1000"));
        assert!(text.contains("Benchmarks: fillseq,readrandom"));
        assert!(text.contains("block_cache_bytes: 8388608"), "{text}");
        assert!(text.contains("write_buffer_size: 67108864"));
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
        let report = JsonReport::new(
            "tierkv",
            &c,
            &options,
            vec![sample_result()],
            Some(stats.clone()),
        );
        let json = report.to_json().unwrap();

        // Parsed back into the typed report, every part compares equal.
        let back: JsonReport = serde_json::from_str(&json).unwrap();
        assert_eq!(back.tool, "tierkv-bench");
        assert_eq!(back.engine, "tierkv");
        assert_eq!(back.flags, c);
        assert_eq!(back.options.block_cache_bytes, options.block_cache_bytes);
        assert_eq!(back.options.write_buffer_size, options.write_buffer_size);
        assert_eq!(back.options.design, options.design);
        assert_eq!(back.options.table, options.table);
        assert_eq!(back.options.compaction, options.compaction);
        assert_eq!(back.benchmarks, vec![sample_result()]);
        assert_eq!(back.final_stats, Some(stats));

        // And the untyped view has the documented field names.
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        let b = &v["benchmarks"][0];
        assert_eq!(b["name"], "readrandom");
        assert_eq!(b["ops"], 1000);
        assert_eq!(b["seconds"], 2.0);
        assert_eq!(b["ops_per_sec"], 500.0);
        assert_eq!(b["found"], 900);
        assert!(b["mb_per_sec"].is_f64());
        assert!(b["latency"]["p999_us"].as_f64().unwrap() > 990.0);
        assert_eq!(
            v["flags"]["benchmarks"],
            serde_json::json!(["fillseq", "readrandom"])
        );
        assert_eq!(v["flags"]["key_size"], 20);
        assert_eq!(v["flags"]["design"], "Leveled");
        assert_eq!(v["options"]["table"]["bloom_bits_per_key"], 10);
        assert_eq!(v["final_stats"]["stats"]["ssd_written_compaction"], 2100);
        assert_eq!(v["final_stats"]["write_amplification_tables"], 3.0);
        assert_eq!(v["final_stats"]["space_amplification"], 1.5);

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        report.write_to(&path).unwrap();
        let from_file: JsonReport = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(from_file.benchmarks, report.benchmarks);
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
