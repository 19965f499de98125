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
        text.contains("the defaults of leveled, but --use_direct_reads=true --ssd_write_mbps=50"),
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
