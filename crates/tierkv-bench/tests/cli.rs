//! End-to-end tests of the `tierkv` binary over a real TierKV database.
//!
//! Each run uses its own temporary directory (the default `--db`, or a `tempfile` directory).

use std::process::Command;

fn tierkv(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tierkv"))
        .args(args)
        .output()
        .expect("the tierkv binary runs")
}

fn bench_runs_each_benchmark_on(extra: &[&str]) {
    let mut args = vec![
        "bench",
        "--num=2000",
        "--benchmarks=fillseq,readrandom,readseq",
    ];
    args.extend_from_slice(extra);
    let out = tierkv(&args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    for name in ["fillseq", "readrandom", "readseq"] {
        assert!(
            stdout.contains(&format!("{name:<22} :")),
            "{name} missing from\n{stdout}"
        );
    }
    assert!(stdout.contains("(2000 of 2000 found)"), "{stdout}");
}

#[test]
fn bench_runs_each_benchmark() {
    bench_runs_each_benchmark_on(&[]);
}

#[test]
fn bench_prints_engine_figures_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let db = dir.path().join("db");
    let out = tierkv(&[
        "bench",
        "--num=5000",
        "--benchmarks=fillrandom,overwrite,flush,readrandom,seekrandom,readwhilewriting",
        "--threads=2",
        "--seek_nexts=2",
        &format!("--db={}", db.display()),
        &format!("--json={}", json.display()),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Every tier first, then the SSD's own figures, named as such.
    assert!(
        stdout.contains("Amplification:          write "),
        "{stdout}"
    );
    assert!(stdout.contains("SSD write amplification:"), "{stdout}");
    assert!(stdout.contains("SSD space amplification:"), "{stdout}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let run = &v["runs"][0];
    assert_eq!(run["benchmarks"].as_array().unwrap().len(), 6);
    assert!(
        run["final_stats"]["stats"]["user_bytes_written"]
            .as_u64()
            .unwrap()
            > 0
    );
    // The figures of the schema (docs/REPORT_SCHEMA.md): the parts add up to the database.
    let f = &run["figures"];
    let bytes = |p: &serde_json::Value| p["bytes_written"].as_u64().unwrap();
    let database = bytes(&f["database"]);
    let tiers: u64 = f["tiers"].as_array().unwrap().iter().map(bytes).sum();
    let parts: u64 = f["parts"].as_array().unwrap().iter().map(bytes).sum();
    assert_eq!(database, tiers);
    assert!(parts > 0 && parts <= database, "{parts} of {database}");
    assert_eq!(f["parts"][1]["name"], "levels");
    let a = &f["database"]["amplification"];
    assert!(a["write"].as_f64().unwrap() > a["write_excluding_log"].as_f64().unwrap());
    assert!(f["footprint"]["dram_bytes"].as_u64().unwrap() > 0);
    assert!(stdout.contains("stage0 (levels)"), "{stdout}");
    assert!(db.exists(), "--db is kept");
    // The kept database is reusable; fills are skipped.
    let again = tierkv(&[
        "bench",
        "--num=5000",
        "--benchmarks=fillseq,readrandom",
        "--use_existing_db",
        &format!("--db={}", db.display()),
    ]);
    let stdout = String::from_utf8_lossy(&again.stdout);
    assert!(again.status.success(), "{stdout}");
    assert!(
        stdout.contains("fillseq                : skipped"),
        "{stdout}"
    );
    assert!(stdout.contains("(5000 of 5000 found)"), "{stdout}");
}

#[test]
fn bench_runs_each_benchmark_on_the_memory_engine() {
    // The same run through the harness alone (the in-memory reference engine).
    bench_runs_each_benchmark_on(&["--engine=memory"]);
}

#[test]
fn bench_runs_ycsb_and_reproduce_lists() {
    let out = tierkv(&[
        "bench",
        "--benchmarks=ycsb-load,ycsb-a,ycsb-e",
        "--num=2000",
        "--ops=2000",
        "--threads=2",
        "--verify",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("ycsb-a                 :"), "{stdout}");
    assert!(stdout.contains(" found)"), "{stdout}");
    assert!(stdout.contains("   scan "), "{stdout}");

    let list = tierkv(&["reproduce", "--list"]);
    assert!(list.status.success());
    assert!(String::from_utf8_lossy(&list.stdout).contains("leveled-vs-leveled-pm"));
    let unknown = tierkv(&["reproduce", "nosuch"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("unknown experiment"));
    let rocks = tierkv(&["bench", "--design=rocksdb", "--num=10"]);
    if cfg!(not(feature = "rocksdb")) {
        assert_eq!(rocks.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&rocks.stderr).contains("`rocksdb` cargo feature"));
    }
}

#[test]
fn tools_put_get_scan_delete_check() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = db.to_str().unwrap();
    assert!(tierkv(&["put", "--db", db, "apple", "red"])
        .status
        .success());
    assert!(tierkv(&["put", "--db", db, "0x00ff", "0x0102"])
        .status
        .success());
    let got = tierkv(&["get", "--db", db, "apple"]);
    assert!(got.status.success());
    assert_eq!(String::from_utf8_lossy(&got.stdout), "red\n");
    let scan = tierkv(&["scan", "--db", db]);
    assert!(scan.status.success());
    assert_eq!(
        String::from_utf8_lossy(&scan.stdout),
        "0x00ff\t0x0102\napple\tred\n"
    );
    assert!(tierkv(&["delete", "--db", db, "apple"]).status.success());
    let missing = tierkv(&["get", "--db", db, "apple"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("error: key apple not found"));
    assert!(tierkv(&["check", "--db", db]).status.success());
    assert!(tierkv(&["stats", "--db", db]).status.success());
}

#[test]
fn errors_are_reported_not_panics() {
    // Bad flags: clap's usage error (status 2), naming the problem.
    let out = tierkv(&["bench", "--benchmarks=fillseq,nosuch"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown benchmark \"nosuch\""));
    // Flags that parse but do not make sense together: `error: ...`, status 1.
    let out = tierkv(&["bench", "--num=0"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: --num must be at least 1"));
    let out = tierkv(&["get", "--db", "/nonexistent", "0xz1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: hex argument"));
}

/// The tools open a database with what it was created with (a `leveled-pm` database needs no
/// `--design`), refuse a design that disagrees, refuse a foreign pool, and `repair` brings back
/// a database whose CURRENT was deleted (which every other tool refuses to recreate).
#[test]
fn tools_read_the_design_from_the_manifest_and_repair_restores_current() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let pool = dir.path().join("db.pool");
    let (db, pool) = (db.to_str().unwrap(), pool.to_str().unwrap());
    let ok = |args: &[&str]| {
        let out = tierkv(args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let fails = |args: &[&str], why: &str| {
        let out = tierkv(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && stderr.contains(why),
            "{args:?}: {stderr}"
        );
    };
    let pm = format!("--pm_path={pool}");
    ok(&["put", "--db", db, "--design", "leveled-pm", &pm, "a", "1"]);
    ok(&["put", "--db", db, &pm, "b", "2"]);
    assert_eq!(ok(&["get", "--db", db, &pm, "a"]), "1\n");
    assert!(ok(&["check", "--db", db, &pm]).starts_with("OK"));
    fails(
        &["get", "--db", db, "--design", "leveled", &pm, "a"],
        "created with design leveled-pm",
    );
    let other = dir.path().join("other.pool");
    ok(&[
        "put",
        "--db",
        dir.path().join("db2").to_str().unwrap(),
        "--design",
        "leveled-pm",
        &format!("--pm_path={}", other.display()),
        "x",
        "y",
    ]);
    fails(
        &[
            "get",
            "--db",
            db,
            &format!("--pm_path={}", other.display()),
            "a",
        ],
        "another database",
    );
    std::fs::remove_file(dir.path().join("db/CURRENT")).unwrap();
    fails(&["put", "--db", db, &pm, "z", "z"], "no CURRENT");
    assert!(ok(&["repair", "--db", db, &pm]).contains("CURRENT now names MANIFEST-"));
    assert_eq!(ok(&["scan", "--db", db, &pm]), "a\t1\nb\t2\n");
}

/// `simulate-compaction` runs a design's policies over a key stream without I/O and reports
/// each stage's write amplification.
#[test]
fn simulate_compaction_reports_per_stage_write_amplification() {
    let out = tierkv(&[
        "simulate-compaction",
        "--design=leveled-pm",
        "--num=50000",
        "--write_buffer_size=65536",
        "--max_bytes_for_level_base=262144",
        "--target_file_size_base=65536",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("stage0 (levels): write amplification"),
        "{stdout}"
    );
    let wa: f64 = stdout
        .lines()
        .find_map(|l| l.split("write amplification without the log ").nth(1))
        .and_then(|v| v.trim().parse().ok())
        .expect("the total write amplification");
    assert!(wa > 2.0, "random puts are compacted: {wa}\n{stdout}");
}

/// db_bench's `--compression_type`: `none` runs; a codec TierKV does not have is refused with
/// the reason, not ignored. A key size too small for `--num` distinct keys is refused too.
#[test]
fn compression_type_and_key_space_are_checked() {
    let ok = tierkv(&[
        "bench",
        "--num=500",
        "--benchmarks=fillrandom",
        "--compression_type=none",
    ]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let snappy = tierkv(&["bench", "--num=500", "--compression_type=snappy"]);
    assert!(!snappy.status.success());
    let err = String::from_utf8_lossy(&snappy.stderr);
    assert!(
        err.contains("--compression_type=snappy") && err.contains("uncompressed"),
        "{err}"
    );
    let tiny = tierkv(&["bench", "--num=100000", "--key_size=1"]);
    assert!(!tiny.status.success());
    let err = String::from_utf8_lossy(&tiny.stderr);
    assert!(err.contains("at most 256 distinct keys"), "{err}");
}

/// A flag tierkv does not have is named as unknown, without pointing at an unrelated flag.
#[test]
fn an_unknown_flag_says_it_is_unknown() {
    let out = tierkv(&["bench", "--stats_interval_seconds=1", "--num=10"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown flag --stats_interval_seconds"),
        "{err}"
    );
    assert!(!err.contains("similar argument"), "{err}");
}
