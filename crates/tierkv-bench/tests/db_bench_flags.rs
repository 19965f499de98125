//! End-to-end tests of the db_bench and YCSB flags and benchmarks of `tierkv bench`: each runs
//! the binary over a real TierKV database (a temporary directory) and checks what it printed
//! and the JSON report.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn tierkv(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tierkv"))
        .args(args)
        .output()
        .expect("the tierkv binary runs")
}

/// Runs `args`, asserts success, returns stdout and stderr.
fn ok(args: &[&str]) -> (String, String) {
    let out = tierkv(args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "{args:?} failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    (stdout, stderr)
}

/// Runs `args`, asserts failure, returns stderr.
fn fails(args: &[&str]) -> String {
    let out = tierkv(args);
    assert!(!out.status.success(), "{args:?} succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn bench<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["runs"][0]["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == name)
        .unwrap_or_else(|| panic!("{name} missing"))
}

/// The new benchmarks do what db_bench's do, on a small database with compactions.
#[test]
fn db_bench_benchmarks_run() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("r.json");
    let (stdout, _) = ok(&[
        "bench",
        "--num=3000",
        "--write_buffer_size=65536",
        "--benchmarks=fillrandom,updaterandom,multireadrandom,seekrandomwhilewriting,compact,levelstats,deleterandom,readrandom,stats",
        "--multiread_batch_size=8",
        "--seek_nexts=2",
        &format!("--json={}", report.display()),
    ]);
    let v = json(&report);
    // updaterandom: a get and a put per operation; every key of the filled range is found
    // unless fillrandom missed it (random keys), so some, not all, are found.
    let up = bench(&v, "updaterandom");
    assert_eq!(up["ops"], 3000);
    assert!(up["found"].as_u64().unwrap() > 1000, "{up}");
    // multireadrandom: 3000 keys read in batches of 8: one timed operation per batch.
    let mr = bench(&v, "multireadrandom");
    assert_eq!(mr["ops"], 3000);
    let batches = mr["ops_by_type"][0]["count"].as_u64().unwrap();
    assert_eq!(batches, 3000_u64.div_ceil(8), "{mr}");
    assert!(mr["found"].as_u64().unwrap() > 1000, "{mr}");
    // seekrandomwhilewriting: the seekers' figures, and the writer's puts.
    let sw = bench(&v, "seekrandomwhilewriting");
    assert_eq!(sw["ops"], 3000);
    assert!(sw["writer_ops"].as_u64().unwrap() > 0, "{sw}");
    // compact: one operation that left everything in one level.
    assert!(stdout.contains("the whole key range compacted"), "{stdout}");
    assert!(
        stdout.contains("** Level stats (design leveled) **"),
        "{stdout}"
    );
    // deleterandom then readrandom: deleted keys are gone, so fewer are found than before.
    let rr = bench(&v, "readrandom");
    let found_after_deletes = rr["found"].as_u64().unwrap();
    assert!(found_after_deletes < 3000 * 2 / 3, "{rr}");
    assert!(stdout.contains("** Engine figures (tierkv, design leveled) **"));
    // Each benchmark says what it made the engine do.
    let engine_lines = stdout.matches("engine: wrote").count();
    assert_eq!(engine_lines, 7, "{stdout}");
    let fill = bench(&v, "fillrandom");
    assert!(fill["engine"]["flushes"].as_u64().unwrap() > 0, "{fill}");
    assert!(
        fill["engine"]["ssd_bytes_written"].as_u64().unwrap()
            > fill["engine"]["user_bytes_written"].as_u64().unwrap()
    );
}

/// Benchmarks TierKV does not run are refused with the reason.
#[test]
fn reverse_and_mixgraph_are_refused_with_the_reason() {
    let err = fails(&["bench", "--benchmarks=fillseq,readreverse", "--num=10"]);
    assert!(err.contains("forward only"), "{err}");
    let err = fails(&["bench", "--benchmarks=mixgraph", "--num=10"]);
    assert!(err.contains("not reproduced"), "{err}");
}

/// --batch_size groups writes into atomic batches, one timed operation each; --histogram
/// prints the buckets; --statistics prints the engine figures after every benchmark.
#[test]
fn batches_histogram_and_statistics() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("r.json");
    let (stdout, _) = ok(&[
        "bench",
        "--num=1000",
        "--batch_size=10",
        "--benchmarks=fillseq,readrandom",
        "--histogram",
        "--statistics",
        "--verify",
        &format!("--json={}", report.display()),
    ]);
    let v = json(&report);
    let fill = bench(&v, "fillseq");
    assert_eq!(fill["ops"], 1000);
    assert_eq!(fill["ops_by_type"][0]["count"], 100, "{fill}");
    // Every key written by the batches is read back (and checked by --verify).
    assert_eq!(bench(&v, "readrandom")["found"], 1000);
    let buckets = fill["histogram"].as_array().unwrap();
    let counted: u64 = buckets.iter().map(|b| b["count"].as_u64().unwrap()).sum();
    assert_eq!(counted, 100);
    assert!(stdout.contains("latency histogram (micros)"), "{stdout}");
    assert_eq!(
        stdout.matches("** Engine figures").count(),
        3,
        "after each of the two benchmarks and at the end:\n{stdout}"
    );
    let err = fails(&["bench", "--batch_size=0"]);
    assert!(err.contains("--batch_size=0"), "{err}");
}

/// --duration bounds a benchmark by time rather than by count, and
/// --report_interval_seconds writes one CSV row per interval.
#[test]
fn duration_and_report_interval() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("r.json");
    let csv = dir.path().join("report.csv");
    let (_, stderr) = ok(&[
        "bench",
        "--engine=memory",
        "--num=1000000000",
        "--benchmarks=fillrandom",
        "--duration=2",
        "--report_interval_seconds=1",
        &format!("--report_file={}", csv.display()),
        &format!("--json={}", report.display()),
    ]);
    let v = json(&report);
    let fill = bench(&v, "fillrandom");
    // It stopped at the deadline, long before 10^9 writes.
    assert!(fill["ops"].as_u64().unwrap() < 1_000_000_000);
    assert!(fill["seconds"].as_f64().unwrap() >= 2.0, "{fill}");
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("benchmark,secs_elapsed,interval_ops,interval_qps,interval_stall_ms,total_ops")
    );
    let rows: Vec<&str> = lines.collect();
    assert!(!rows.is_empty(), "{text}");
    assert!(rows.iter().all(|r| r.starts_with("fillrandom,")), "{text}");
    assert!(stderr.contains("ops/s in the last"), "{stderr}");
    let err = fails(&[
        "bench",
        "--report_interval_seconds=1",
        "--report_file=/nonexistent-dir/x.csv",
    ]);
    assert!(err.contains("does not exist"), "{err}");
}

/// --benchmark_write_rate_limit paces writes: a run never writes faster than the cap.
#[test]
fn write_rate_limit_caps_the_writes() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("r.json");
    // 144-byte entries at 72000 B/s: 500 writes per second, so 400 writes take 0.8 s.
    ok(&[
        "bench",
        "--engine=memory",
        "--num=400",
        "--benchmarks=fillrandom",
        "--benchmark_write_rate_limit=72000",
        &format!("--json={}", report.display()),
    ]);
    let fill = json(&report)["runs"][0]["benchmarks"][0].clone();
    assert!(fill["ops_per_sec"].as_f64().unwrap() <= 510.0, "{fill}");
}

/// A YCSB workload file sets the records, operations and record size; -p overrides it; without
/// `--benchmarks` its load and transaction phases run (ycsb-load, ycsb-run), as YCSB's `load`
/// and `run`; its read-modify-writes read the loaded records and merge into them.
#[test]
fn ycsb_workload_files() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("r.json");
    let workload = concat!(env!("CARGO_MANIFEST_DIR"), "/../../workloads/workloadf");
    let (stdout, _) = ok(&[
        "bench",
        "-P",
        workload,
        "-p",
        "recordcount=2000",
        "-p",
        "fieldlength=20",
        "-target",
        "0",
        &format!("--json={}", report.display()),
    ]);
    assert!(stdout.contains("Values:     200 bytes each"), "{stdout}");
    assert!(stdout.contains("Entries:    2000"), "{stdout}");
    assert!(stdout.contains("rmw 0.5"), "{stdout}");
    let v = json(&report);
    assert_eq!(bench(&v, "ycsb-load")["ops"], 2000);
    let run = bench(&v, "ycsb-run");
    // operationcount=1000 from the file; reads and read-modify-writes only, all found.
    assert_eq!(run["ops"], 1000);
    let ops: Vec<&str> = run["ops_by_type"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["op"].as_str().unwrap())
        .collect();
    assert_eq!(ops, vec!["read", "rmw"]);
    assert_eq!(run["found"], run["lookups"]);
    // Every read-modify-write found the record it merged into.
    assert_eq!(run["failed"], 0);
    assert_eq!(v["flags"]["ycsb_update"], "merge");
    assert_eq!(v["runs"][0]["benchmarks"].as_array().unwrap().len(), 2);
    assert_eq!(v["flags"]["ycsb"]["mix"]["read_modify_write"], 0.5);

    let err = fails(&["bench", "--benchmarks=ycsb-run", "--num=10"]);
    assert!(err.contains("-P FILE"), "{err}");
    let err = fails(&[
        "bench",
        "-P",
        "/nonexistent/workload",
        "--benchmarks=ycsb-run",
    ]);
    assert!(err.contains("reading YCSB workload file"), "{err}");
    let err = fails(&[
        "bench",
        "-p",
        "requestdistribution=hotspot",
        "--benchmarks=ycsb-run",
    ]);
    assert!(err.contains("requestdistribution=hotspot"), "{err}");
}

/// The side-by-side table adds every tier's bytes up, and says when a run never left the
/// memtable.
#[test]
fn side_by_side_counts_every_tier() {
    let dir = tempfile::tempdir().unwrap();
    let pool = dir.path().join("pool");
    let (stdout, _) = ok(&[
        "bench",
        "--design=leveled,leveled-pm",
        "--num=2000",
        "--benchmarks=fillrandom",
        &format!("--pm_path={}", pool.display()),
        "--pm_size=67108864",
    ]);
    let table = stdout
        .split("** Designs side by side")
        .nth(1)
        .expect("a side-by-side table");
    let row = |name: &str| {
        table
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} missing from {table}"))
            .to_string()
    };
    // leveled-pm wrote its WAL to PM: the total is not 0 even though its SSD figure is.
    let total = row("write amplification");
    assert!(!total.contains(" 0.000"), "{total}");
    assert!(
        row("  SSD write amplification").contains("0.000"),
        "{table}"
    );
    assert!(row("  PM write amplification").contains("n/a"), "{table}");
    // leveled-pm's tiers add up to its total (before, the PM row was the device's figure and
    // could exceed the total); the device's figure has its own row.
    let second = |name: &str| -> f64 {
        let line = row(name);
        let cells: Vec<&str> = line[name.len()..].split_whitespace().collect();
        cells[1]
            .parse()
            .unwrap_or_else(|_| panic!("{name}: {line}"))
    };
    let (ssd, pm) = (
        second("  SSD write amplification"),
        second("  PM write amplification"),
    );
    let total_wa = second("write amplification");
    assert!((ssd + pm - total_wa).abs() < 0.002, "{table}");
    assert!(second("PM device write amplification") > 0.0, "{table}");
    // DRAM over the run: its peak and its mean.
    assert!(
        second("DRAM MiB peak") >= second("DRAM MiB mean"),
        "{table}"
    );
    assert!(
        table.contains("leveled: all data still in the memtable"),
        "{table}"
    );
    assert!(table.contains("read amplification:  bytes read"), "{table}");
}

/// A kept --db that exists is not overwritten; the error says how to reuse it.
#[test]
fn an_existing_db_gets_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db_flag = format!("--db={}", db.display());
    ok(&["bench", "--num=100", "--benchmarks=fillseq", &db_flag]);
    let err = fails(&["bench", "--num=100", "--benchmarks=readrandom", &db_flag]);
    assert!(
        err.contains("already exists") && err.contains("--use_existing_db"),
        "{err}"
    );
    let (stdout, _) = ok(&[
        "bench",
        "--num=100",
        "--benchmarks=fillseq,readrandom",
        "--use_existing_db",
        &db_flag,
    ]);
    assert!(stdout.contains("(100 of 100 found)"), "{stdout}");
}

/// The long flags of `--help` of `args`.
fn help_flags(args: &[&str]) -> std::collections::BTreeSet<String> {
    let (stdout, _) = ok(args);
    flags_in(&stdout)
}

fn flags_in(text: &str) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(pos) = text[i..].find("--") {
        let start = i + pos + 2;
        let end = start
            + text[start..]
                .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
                .unwrap_or(text.len() - start);
        // A flag starts a word: `--x` after a space, backtick, parenthesis or line start.
        let before = if i + pos == 0 {
            b' '
        } else {
            bytes[i + pos - 1]
        };
        if end > start && matches!(before, b' ' | b'`' | b'(' | b'\n' | b'[' | b',') {
            out.insert(text[start..end].to_string());
        }
        i = end.max(start);
    }
    out
}

/// The README and `--help` agree: every flag of `tierkv bench --help` is in the README, and
/// every flag the README names is one some subcommand accepts.
#[test]
fn readme_and_help_agree() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let named = flags_in(&readme);
    let bench = help_flags(&["bench", "--help"]);
    let missing: Vec<_> = bench
        .iter()
        .filter(|f| *f != "help" && !named.contains(*f))
        .collect();
    assert!(missing.is_empty(), "README lacks bench flags {missing:?}");
    let mut accepted = bench;
    for sub in [
        "reproduce",
        "put",
        "get",
        "delete",
        "scan",
        "stats",
        "check",
        "repair",
        "grow-pool",
        "simulate-compaction",
    ] {
        accepted.extend(help_flags(&[sub, "--help"]));
    }
    // Flags of other tools the README shows (cargo's, RocksDB's db_bench).
    let foreign = [
        "release",
        "features",
        "all",
        "check",
        "workspace",
        "all_targets",
        "component",
    ];
    let unknown: Vec<_> = named
        .iter()
        .filter(|f| !accepted.contains(*f) && !foreign.contains(&f.as_str()))
        .collect();
    assert!(
        unknown.is_empty(),
        "README names flags no subcommand has: {unknown:?}"
    );
}

/// --disable_wal writes no log and loses nothing at close; --disable_auto_compactions leaves
/// compaction to `compact`; levelstats and sstables print the compaction statistics and the
/// live tables.
#[test]
fn wal_off_auto_compactions_off_and_level_tables() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("r.json");
    let db = dir.path().join("db");
    let (stdout, _) = ok(&[
        "bench",
        "--num=20000",
        "--write_buffer_size=65536",
        "--benchmarks=fillseq,levelstats,compact,sstables",
        "--disable_wal",
        "--disable_auto_compactions",
        &format!("--db={}", db.display()),
        &format!("--json={}", report.display()),
    ]);
    let v = json(&report);
    let fill = bench(&v, "fillseq");
    assert!(fill["engine"]["flushes"].as_u64().unwrap() > 3, "{fill}");
    assert_eq!(fill["engine"]["compactions"], 0, "{fill}");
    let compact = bench(&v, "compact");
    assert!(compact["engine"]["compactions"].as_u64().unwrap() > 0);
    let stats = &v["runs"][0]["final_stats"]["stats"];
    assert_eq!(stats["ssd_written_wal"], 0, "no WAL bytes");
    let level_rows = stats["compaction_levels"].as_array().unwrap();
    assert!(!level_rows.is_empty());
    assert!(
        stdout.contains("** Compaction stats (cumulative since open) **"),
        "{stdout}"
    );
    assert!(stdout.contains("Stall causes"), "{stdout}");
    // After `compact` everything is in one table listing at one level.
    let listing = stdout
        .split("** Live tables:")
        .nth(1)
        .expect("sstables output");
    assert!(listing.contains("bytes on ssd"), "{listing}");
    // The unlogged writes were flushed at close: every key is there on reopen.
    let report2 = dir.path().join("r2.json");
    ok(&[
        "bench",
        "--num=20000",
        "--benchmarks=readseq",
        "--use_existing_db",
        &format!("--db={}", db.display()),
        &format!("--json={}", report2.display()),
    ]);
    assert_eq!(bench(&json(&report2), "readseq")["ops"], 20000);
    let err = fails(&["bench", "--sync", "--disable_wal"]);
    assert!(err.contains("--sync and --disable_wal"), "{err}");
    let err = fails(&["bench", "--design=nvlsm", "--disable_auto_compactions"]);
    assert!(err.contains("refused for design nvlsm"), "{err}");
}
