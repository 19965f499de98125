//! End-to-end tests of the YCSB workloads, the designs side by side, the reports and the
//! plots, through the library API.

use clap::Parser;
use tierkv::Design;
use tierkv_bench::commands;
use tierkv_bench::report::{DesignRun, JsonReport};
use tierkv_bench::BenchConfig;

#[derive(Parser)]
struct Flags {
    #[command(flatten)]
    config: BenchConfig,
}

fn config(args: &[&str]) -> BenchConfig {
    let c = Flags::try_parse_from(std::iter::once("bench").chain(args.iter().copied()))
        .unwrap()
        .config;
    c.validate().unwrap();
    c
}

const ALL_YCSB: &str = "--benchmarks=ycsb-load,ycsb-a,ycsb-b,ycsb-c,ycsb-d,ycsb-e,ycsb-f";

/// Every read of every YCSB workload must return the last value written to its key (the
/// verifying wrapper fails the run otherwise), and every record read must be found.
fn check_verified_run(runs: &[DesignRun], num: u64, ops: u64) {
    for run in runs {
        let b = &run.benchmarks;
        assert_eq!(b.len(), 7, "{}", run.design);
        assert_eq!(b[0].name, "ycsb-load");
        assert_eq!(b[0].ops, num);
        for r in &b[1..] {
            assert_eq!(r.ops, ops, "{} {}", run.design, r.name);
            if let Some(found) = r.found {
                assert_eq!(
                    Some(found),
                    r.lookups,
                    "{} {}: every read finds its record",
                    run.design,
                    r.name
                );
            }
            let by_type: u64 = r.ops_by_type.iter().map(|o| o.count).sum();
            assert_eq!(by_type, r.ops, "{} {}", run.design, r.name);
            let sampled: u64 = r.samples.iter().map(|s| s.ops).sum();
            assert_eq!(
                sampled, r.ops,
                "{} {}: samples cover every op",
                run.design, r.name
            );
        }
        // D and E inserted new records after the loaded ones.
        assert!(b[4].op("insert").is_some_and(|o| o.count > 0));
        assert!(b[5].op("scan").is_some_and(|o| o.count > 0));
        assert!(b[6].op("rmw").is_some_and(|o| o.count > 0));
    }
}

#[test]
fn every_ycsb_workload_reads_what_was_written_on_every_design() {
    let dir = tempfile::tempdir().unwrap();
    let designs: Vec<&str> = Design::ALL.iter().map(|d| d.name()).collect();
    let (num, ops) = (3000u64, 3000u64);
    let c = config(&[
        ALL_YCSB,
        &format!("--design={}", designs.join(",")),
        &format!("--num={num}"),
        &format!("--ops={ops}"),
        "--threads=2",
        "--value_size=100",
        // Small memtables: flushes and compactions happen during the run.
        "--write_buffer_size=65536",
        "--sample_interval_ms=100",
        "--verify",
        &format!("--db={}", dir.path().join("db").display()),
    ]);
    let mut out = Vec::new();
    let runs = commands::bench(&c, &mut out).unwrap();
    assert_eq!(runs.len(), designs.len());
    check_verified_run(&runs, num, ops);
    for run in &runs {
        let s = run.final_stats.as_ref().expect("tierkv has figures");
        assert!(s.stats.flushes > 0, "{}: the run flushed", run.design);
        assert!(s.write_amplification > 0.0);
    }
    // FluidKV's load detector reports its trigger in the text report (and the JSON).
    let fluid = runs.iter().find(|r| r.design == "fluidkv").unwrap();
    let st = &fluid.final_stats.as_ref().unwrap().stats;
    assert!([1, 4].contains(&st.load_trigger), "{}", st.load_trigger);
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("Load detector:          trigger "), "{text}");
}

#[test]
fn ycsb_on_the_memory_and_null_engines() {
    // The reference engine, verified, with the uniform and latest distributions too.
    for dist in ["zipfian", "uniform", "latest"] {
        let c = config(&[
            ALL_YCSB,
            "--engine=memory",
            "--num=2000",
            "--ops=4000",
            "--threads=3",
            "--verify",
            &format!("--distribution={dist}"),
        ]);
        let runs = commands::bench(&c, &mut Vec::new()).unwrap();
        check_verified_run(&runs, 2000, 4000);
    }
    // The no-op engine: nothing is found, every operation still runs.
    let c = config(&[ALL_YCSB, "--engine=null", "--num=1000", "--ops=5000"]);
    let mut out = Vec::new();
    let runs = commands::bench(&c, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    for r in &runs[0].benchmarks {
        assert!(text.contains(&format!("{:<22} :", r.name)), "{text}");
        if r.name != "ycsb-load" {
            assert_eq!(r.ops, 5000);
        }
    }
    assert!(text.contains("read "), "per-op lines: {text}");
}

#[test]
fn ycsb_mix_proportions() {
    let c = config(&[
        "--benchmarks=ycsb-a,ycsb-b,ycsb-c,ycsb-d,ycsb-e,ycsb-f",
        "--engine=null",
        "--num=10000",
        "--ops=40000",
        "--threads=2",
    ]);
    let runs = commands::bench(&c, &mut Vec::new()).unwrap();
    let want: [&[(&str, f64)]; 6] = [
        &[("read", 0.5), ("update", 0.5)],
        &[("read", 0.95), ("update", 0.05)],
        &[("read", 1.0)],
        &[("read", 0.95), ("insert", 0.05)],
        &[("scan", 0.95), ("insert", 0.05)],
        &[("read", 0.5), ("rmw", 0.5)],
    ];
    for (r, want) in runs[0].benchmarks.iter().zip(want) {
        assert_eq!(
            r.ops_by_type.len(),
            want.len(),
            "{}: {:?}",
            r.name,
            r.ops_by_type
        );
        for (op, p) in want {
            let got = r.op(op).map_or(0, |o| o.count) as f64 / r.ops as f64;
            assert!((got - p).abs() < 0.015, "{} {op}: {got} vs {p}", r.name);
        }
    }
}

#[test]
fn designs_side_by_side_with_json_and_plots() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let plots = dir.path().join("plots");
    // Two designs through the memory engine (rocksdb names the second column; the memory
    // engine runs it, so no RocksDB build is needed).
    let c = config(&[
        "--benchmarks=fillrandom,readrandom,ycsb-a",
        "--design=leveled,rocksdb",
        "--engine=memory",
        "--num=3000",
        "--sample_interval_ms=100",
        &format!("--json={}", json.display()),
        &format!("--plot={}", plots.display()),
    ]);
    let mut out = Vec::new();
    let runs = commands::bench(&c, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(runs.len(), 2);
    assert!(
        text.contains("Designs side by side (ratio to leveled)"),
        "{text}"
    );
    assert!(text.contains("rocksdb (vs leveled)"), "{text}");
    assert!(text.contains("fillrandom ops/s"), "{text}");
    let report: JsonReport = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(report.runs.len(), 2);
    assert_eq!(report.runs[1].design, "rocksdb");
    assert_eq!(report.runs[1].options["compression"], "none");
    assert!(report.runs[0].options["write_buffer_size"].is_u64());
    assert!(!report.comparison.is_empty());
    assert!(report.machine.cores >= 1);
    // Same seeds for every design: the same keys were written.
    assert_eq!(runs[0].benchmarks[1].found, runs[1].benchmarks[1].found);
    for name in [
        "throughput-fillrandom.svg",
        "throughput-ycsb-a.svg",
        "latency-readrandom.svg",
        "latency-ycsb-a.svg",
        "amplification.svg",
    ] {
        let svg = std::fs::read_to_string(plots.join(name)).unwrap();
        assert!(
            svg.trim_start().starts_with("<svg"),
            "{name}: {}",
            &svg[..80.min(svg.len())]
        );
        assert!(svg.trim_end().ends_with("</svg>"), "{name}");
        assert!(svg.contains("<text"), "{name} has text");
    }
}

#[test]
fn amplification_bars_from_a_real_database() {
    let dir = tempfile::tempdir().unwrap();
    let plots = dir.path().join("plots");
    let c = config(&[
        "--benchmarks=fillrandom,ycsb-c",
        "--num=3000",
        "--write_buffer_size=65536",
        "--sample_interval_ms=100",
        &format!("--plot={}", plots.display()),
    ]);
    let runs = commands::bench(&c, &mut Vec::new()).unwrap();
    assert_eq!(runs[0].tiers.len(), 1);
    assert_eq!(runs[0].tiers[0].tier, "SSD");
    assert!(runs[0].tiers[0].write > 0.0);
    let svg = std::fs::read_to_string(plots.join("amplification.svg")).unwrap();
    assert!(
        svg.contains("leveled SSD"),
        "bar labels name design and tier"
    );
    // The throughput samples carry the engine's stall deltas (zero or more).
    assert!(runs[0].benchmarks.iter().all(|b| b.stall_micros.is_some()));
}
