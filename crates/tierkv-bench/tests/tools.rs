//! End-to-end tests of the database tools (`put`, `get`, `delete`, `scan`, `stats`, `check`)
//! on existing databases, and of how `tierkv bench` treats its temporary database and its
//! report paths, each running the `tierkv` binary.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;

use common::{fails, ok, tierkv, tierkv_in};

/// The number after `name:` on its line of `text`.
fn figure(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no figure {name:?} in\n{text}"))
}

/// `put` records the pool path given at creation; every other tool opens the database without
/// `--design` and without `--pm_path`. A pool that moved is a clear error naming where it was
/// (not corruption); giving its new path once records it.
#[test]
fn tools_open_the_pool_the_database_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let pool = dir.path().join("pools/x.pool");
    std::fs::create_dir(dir.path().join("pools")).unwrap();
    let (db, pool_s) = (db.to_str().unwrap(), pool.to_str().unwrap());
    ok(&[
        "put",
        "--db",
        db,
        "--design",
        "leveled-pm",
        "--pm_path",
        pool_s,
        "a",
        "1",
    ]);
    assert!(pool.exists());
    assert!(!Path::new(db).join("pm.pool").exists());
    assert_eq!(ok(&["get", "--db", db, "a"]), "1\n");
    ok(&["put", "--db", db, "b", "2"]);
    ok(&["delete", "--db", db, "a"]);
    assert_eq!(ok(&["scan", "--db", db]), "b\t2\n");
    assert!(ok(&["check", "--db", db]).starts_with("OK"));
    assert!(ok(&["stats", "--db", db]).contains(&format!("PM pool:         {pool_s} ")));
    assert!(!Path::new(db).join("pm.pool").exists(), "no second pool");

    let moved = dir.path().join("moved.pool");
    std::fs::rename(&pool, &moved).unwrap();
    let err = fails(&["get", "--db", db, "b"]);
    assert!(
        err.contains(&format!("is at {pool_s} and is missing")) && err.contains("--pm_path"),
        "{err}"
    );
    assert!(!err.contains("corruption"), "{err}");
    let err = fails(&["check", "--db", db]);
    assert!(
        err.contains("is missing") && !err.contains("corruption"),
        "{err}"
    );
    // The new path, given once, wins and is recorded.
    let moved_s = moved.to_str().unwrap();
    assert_eq!(ok(&["get", "--db", db, "--pm_path", moved_s, "b"]), "2\n");
    assert_eq!(ok(&["get", "--db", db, "b"]), "2\n");
    assert!(ok(&["check", "--db", db]).starts_with("OK"));
    // `repair` finds the pool through each manifest it tries.
    std::fs::remove_file(Path::new(db).join("CURRENT")).unwrap();
    assert!(ok(&["repair", "--db", db]).contains("CURRENT now names MANIFEST-"));
    assert_eq!(ok(&["scan", "--db", db]), "b\t2\n");
}

/// `fluidkv` keeps its manifest in the pool: the tools find the design and the pool through
/// `CURRENT` alone, follow a moved pool given once and keep the manifest where it is (`--set`
/// moves it), and `repair`, given only the pool, finds the manifest in the pool (and the design
/// in it) after `CURRENT` is lost.
#[test]
fn tools_find_a_manifest_in_the_pool() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let pool = dir.path().join("fluid.pool");
    let (db, pool_s) = (db.to_str().unwrap(), pool.to_str().unwrap());
    ok(&[
        "put",
        "--db",
        db,
        "--design",
        "fluidkv",
        "--pm_path",
        pool_s,
        "a",
        "1",
    ]);
    let current = std::fs::read_to_string(Path::new(db).join("CURRENT")).unwrap();
    assert!(current.starts_with("pm:MANIFEST-"), "{current}");
    assert!(current.contains(&format!("\npool {pool_s}\n")), "{current}");
    assert_eq!(ok(&["get", "--db", db, "a"]), "1\n");
    ok(&["put", "--db", db, "b", "2"]);
    assert!(ok(&["check", "--db", db]).starts_with("OK"));
    let json: serde_json::Value = serde_json::from_str(&ok(&["stats", "--db", db, "--json"]))
        .expect("stats --json prints JSON");
    assert_eq!(json["design"], "fluidkv");
    assert_eq!(json["manifest_tier"], "pm");
    assert!(ok(&["stats", "--db", db]).contains("manifest on PM)"));

    let moved = dir.path().join("moved.pool");
    std::fs::rename(&pool, &moved).unwrap();
    let err = fails(&["get", "--db", db, "b"]);
    assert!(err.contains(pool_s) && !err.contains("corruption"), "{err}");
    let moved_s = moved.to_str().unwrap();
    assert_eq!(ok(&["get", "--db", db, "--pm_path", moved_s, "b"]), "2\n");
    assert_eq!(ok(&["get", "--db", db, "b"]), "2\n");
    assert!(std::fs::read_to_string(Path::new(db).join("CURRENT"))
        .unwrap()
        .contains(&format!("\npool {moved_s}\n")));

    std::fs::remove_file(Path::new(db).join("CURRENT")).unwrap();
    // No new database is created over the pool, which holds the old one's runs and logs: the
    // directory's IDENTITY says it is a database that lost its CURRENT.
    let err = fails(&[
        "put",
        "--db",
        db,
        "--design",
        "fluidkv",
        "--pm_path",
        moved_s,
        "c",
        "3",
    ]);
    assert!(
        err.contains("no CURRENT file") && err.contains("tierkv repair"),
        "{err}"
    );
    // Without --design: the pool's newest manifest names it.
    let repaired = ok(&["repair", "--db", db, "--pm_path", moved_s]);
    assert!(
        repaired.contains("CURRENT now names MANIFEST-"),
        "{repaired}"
    );
    assert_eq!(ok(&["scan", "--db", db]), "a\t1\nb\t2\n");
    // `--set` moves the manifest to the directory for this open (and a bad one is refused).
    let set = "--set=pm.manifest_on_pm=false";
    assert_eq!(ok(&["get", "--db", db, set, "a"]), "1\n");
    let current = std::fs::read_to_string(Path::new(db).join("CURRENT")).unwrap();
    assert!(current.starts_with("MANIFEST-"), "{current}");
    assert!(Path::new(db).join(current.trim_end()).exists());
    let err = fails(&["get", "--db", db, "--set=pm.no_such_option=1", "a"]);
    assert!(err.contains("no_such_option"), "{err}");
    // The tools keep it where it is.
    assert_eq!(ok(&["scan", "--db", db]), "a\t1\nb\t2\n");
    let after = std::fs::read_to_string(Path::new(db).join("CURRENT")).unwrap();
    assert!(after.starts_with("MANIFEST-"), "{after}");
    // So does `bench --use_existing_db`, whose design defaults would put it in the pool; its
    // --set moves it.
    let bench = |extra: &[&str]| {
        let db_flag = format!("--db={db}");
        let pool_flag = format!("--pm_path={moved_s}");
        let mut args = vec![
            "bench",
            "--design=fluidkv",
            "--num=2",
            "--benchmarks=readrandom",
            "--use_existing_db",
            db_flag.as_str(),
            pool_flag.as_str(),
        ];
        args.extend(extra);
        let out = ok(&args);
        assert!(out.contains("of 2 found)"), "{out}");
        std::fs::read_to_string(Path::new(db).join("CURRENT")).unwrap()
    };
    let after = bench(&[]);
    assert!(after.starts_with("MANIFEST-"), "{after}");
    let after = bench(&["--set=pm.manifest_on_pm=true"]);
    assert!(after.starts_with("pm:MANIFEST-"), "{after}");
    assert_eq!(ok(&["scan", "--db", db]), "a\t1\nb\t2\n");
}

/// A relative `--pm_path` is recorded as the absolute path it named, so the tools find the
/// pool from any working directory; a database with the default pool (`pm.pool` in its
/// directory) still opens after the directory is moved.
#[test]
fn a_relative_pool_path_is_recorded_absolute_and_the_default_follows_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    let out = tierkv_in(
        Some(dir.path()),
        &[
            "put",
            "--db=db",
            "--design=leveled-pm",
            "--pm_path=rel.pool",
            "k",
            "v",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(dir.path().join("rel.pool").exists());
    let db = dir.path().join("db");
    assert_eq!(ok(&["get", "--db", db.to_str().unwrap(), "k"]), "v\n");

    let first = dir.path().join("plain");
    let first_s = first.to_str().unwrap();
    ok(&["put", "--db", first_s, "--design", "leveled-pm", "k", "w"]);
    assert!(first.join("pm.pool").exists());
    let second = dir.path().join("plain-moved");
    std::fs::rename(&first, &second).unwrap();
    assert_eq!(ok(&["get", "--db", second.to_str().unwrap(), "k"]), "w\n");
}

/// `bench --use_existing_db` opens the pool its database recorded (no `--pm_path`), and a
/// design other than the database's is refused with the one to give.
#[test]
fn bench_use_existing_db_finds_the_recorded_pool() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let pool = dir.path().join("bench.pool");
    let db_flag = format!("--db={}", db.display());
    ok(&[
        "bench",
        "--design=leveled-pm",
        "--num=500",
        "--benchmarks=fillseq",
        "--pm_size=67108864",
        &db_flag,
        &format!("--pm_path={}", pool.display()),
    ]);
    assert!(pool.exists() && !db.join("pm.pool").exists());
    let out = ok(&[
        "bench",
        "--design=leveled-pm",
        "--num=500",
        "--benchmarks=readrandom",
        "--use_existing_db",
        "--pm_size=67108864",
        &db_flag,
    ]);
    assert!(out.contains("(500 of 500 found)"), "{out}");
    assert!(!db.join("pm.pool").exists(), "no second pool");
    let err = fails(&[
        "bench",
        "--num=500",
        "--benchmarks=readrandom",
        "--use_existing_db",
        &db_flag,
    ]);
    assert!(
        err.contains("created with design leveled-pm") && err.contains("--design leveled-pm"),
        "{err}"
    );
}

/// A fresh bench run replaces the pool at `--pm_path`, but never a file that is not a pool.
#[test]
fn bench_never_deletes_a_pm_path_that_is_not_a_pool() {
    let dir = tempfile::tempdir().unwrap();
    let precious = dir.path().join("notes.txt");
    std::fs::write(&precious, b"not a pool").unwrap();
    let run = |pool: &Path| {
        tierkv(&[
            "bench",
            "--design=leveled-pm",
            "--num=100",
            "--benchmarks=fillseq",
            "--pm_size=67108864",
            &format!("--pm_path={}", pool.display()),
        ])
    };
    let out = run(&precious);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("is not a TierKV PM pool"),
        "{err}"
    );
    assert_eq!(std::fs::read(&precious).unwrap(), b"not a pool");
    // A pool is replaced, run after run.
    let pool = dir.path().join("bench.pool");
    for _ in 0..2 {
        let out = run(&pool);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// `stats` prints what the database holds (design, live data, each level's tables and tier,
/// WAL, pool), not the opening process's counters; `--json` gives the same as a document whose
/// table count matches what `check` verifies.
#[test]
fn stats_prints_what_the_database_holds() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = db.to_str().unwrap();
    // Each open replays the WAL into an L0 table; with three L0 tables at stats' open no
    // compaction is due (the trigger is four), so the database stays as stats saw it.
    ok(&["put", "--db", db, "--design", "leveled-pm", "apple", "red"]);
    ok(&["put", "--db", db, "banana", "yellow"]);
    ok(&["delete", "--db", db, "cherry"]);
    let text = ok(&["stats", "--db", db]);
    assert!(
        text.contains("Design:          leveled-pm (format 3"),
        "{text}"
    );
    // apple/red + banana/yellow: 2 keys, 5 + 3 + 6 + 6 bytes.
    assert!(
        text.contains("Live data:       2 keys, 20 B of keys and values"),
        "{text}"
    );
    assert!(text.contains("Stage 0 (levels):"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("L0:") && l.ends_with("on PM")),
        "{text}"
    );
    assert!(text.contains("L1-L6:    empty"), "{text}");
    assert!(
        text.contains(&format!("PM pool:         {db}/pm.pool (emulated): ")),
        "{text}"
    );
    assert!(text.contains("WAL:  "), "{text}");
    assert!(!text.contains("pending"), "{text}");
    for meaningless in ["User writes", "write amplification", "Stalls"] {
        assert!(!text.contains(meaningless), "{meaningless} in\n{text}");
    }

    let json: serde_json::Value = serde_json::from_str(&ok(&["stats", "--db", db, "--json"]))
        .expect("stats --json prints JSON");
    assert_eq!(json["design"], "leveled-pm");
    assert_eq!(json["live_keys"], 2);
    assert_eq!(json["live_bytes"], 20);
    assert_eq!(json["wal_tier"], "pm");
    assert_eq!(json["background_pending"], false);
    let groups = json["stages"][0]["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 7);
    let files = |tier: &str| -> u64 {
        groups
            .iter()
            .map(|g| g[tier]["files"].as_u64().unwrap())
            .sum()
    };
    assert_eq!(files("pm"), 3, "{json}");
    assert_eq!(files("ssd"), 0, "leveled-pm keeps L0 on PM: {json}");
    assert_eq!(json["pm_tables"]["files"].as_u64(), Some(files("pm")));
    let pool = &json["pool"];
    assert!(pool["allocated_bytes"].as_u64().unwrap() > 0);
    assert!(pool["allocated_bytes"].as_u64() <= pool["size_bytes"].as_u64());
    // Nothing is left in the WAL after stats' open, so check verifies the same tables.
    let check = ok(&["check", "--db", db]);
    assert_eq!(figure(&check, "tables checked"), files("pm"), "{check}");

    // The leveled design keeps its tables on SSD and has no pool.
    let plain = dir.path().join("plain");
    let plain = plain.to_str().unwrap();
    ok(&["put", "--db", plain, "k", "v"]);
    ok(&["put", "--db", plain, "k2", "v2"]);
    let text = ok(&["stats", "--db", plain]);
    assert!(
        text.contains("Design:          leveled (format 3, WAL on SSD"),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("L0:") && l.ends_with("on SSD")),
        "{text}"
    );
    assert!(text.contains("PM pool:         none"), "{text}");

    // LAB-DB keeps its keys in the L0 trees' PM leaves and its values in value arrays on the
    // SSD: stats shows both, and counts them in the space (before: "0 files", "SSD 0 B").
    let lab = dir.path().join("lab");
    let lab = lab.to_str().unwrap();
    ok(&["put", "--db", lab, "--design", "labdb", "k", "value"]);
    ok(&["put", "--db", lab, "k2", "value2"]);
    let text = ok(&["stats", "--db", lab]);
    assert!(text.contains("L0 trees:        2 keys"), "{text}");
    assert!(text.contains("Value arrays:    "), "{text}");
    let space = text.lines().find(|l| l.starts_with("Space:")).unwrap();
    assert!(!space.contains("SSD 0 B"), "{text}");
    let json: serde_json::Value =
        serde_json::from_str(&ok(&["stats", "--db", lab, "--json"])).unwrap();
    assert!(json["labdb"]["value_bytes"].as_u64().unwrap() > 0, "{json}");

    let err = fails(&["stats", "--db", dir.path().join("none").to_str().unwrap()]);
    assert!(err.contains("reading database"), "{err}");
}

/// `check` prints one figure a line (no Rust debug dump), figures that follow from what was
/// written; a damaged table makes it exit non-zero saying it found damage.
#[test]
fn check_prints_a_readable_report_and_fails_on_damage() {
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("db");
    let db = db_path.to_str().unwrap();
    // Each tool's open replays the WAL into an L0 table: after three puts, two tables of one
    // entry each and one WAL record.
    ok(&["put", "--db", db, "a", "1"]);
    ok(&["put", "--db", db, "b", "2"]);
    ok(&["put", "--db", db, "c", "3"]);
    let report = ok(&["check", "--db", db]);
    assert!(report.starts_with(&format!("OK: no damage found in {db} (design leveled)\n")));
    assert_eq!(figure(&report, "tables checked"), 2, "{report}");
    assert_eq!(figure(&report, "entries checked"), 2, "{report}");
    assert_eq!(figure(&report, "WAL files checked"), 1, "{report}");
    assert_eq!(figure(&report, "WAL records checked"), 1, "{report}");
    assert_eq!(figure(&report, "WAL torn tail bytes"), 0, "{report}");
    assert_eq!(figure(&report, "index keys checked"), 0, "{report}");
    assert!(
        !report.contains("CheckReport") && !report.contains('{'),
        "{report}"
    );

    // A torn WAL tail is reported with what the next open does about it.
    let wal = std::fs::read_dir(&db_path)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "log"))
        .expect("a WAL");
    let mut bytes = std::fs::read(&wal).unwrap();
    let whole = bytes.len();
    bytes.extend_from_slice(&[0xab; 5]);
    std::fs::write(&wal, &bytes).unwrap();
    let report = ok(&["check", "--db", db]);
    assert!(figure(&report, "WAL torn tail bytes") > 0, "{report}");
    assert!(report.contains("the next open drops them"), "{report}");
    bytes.truncate(whole);
    std::fs::write(&wal, &bytes).unwrap();

    // One flipped byte in a table's data.
    let table = std::fs::read_dir(&db_path)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "sst"))
        .expect("a table");
    let mut bytes = std::fs::read(&table).unwrap();
    bytes[2] ^= 0x40;
    std::fs::write(&table, &bytes).unwrap();
    let err = fails(&["check", "--db", db]);
    assert!(
        err.starts_with(&format!(
            "error: check of {db} found damage: corruption in "
        )),
        "{err}"
    );
}

/// Reads `stream` to its end in a thread (a child blocked on a full pipe could not exit).
fn drain(mut stream: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stream.read_to_string(&mut s);
        s
    })
}

/// Ctrl-C during `tierkv bench` without `--db` removes the temporary database it announced,
/// with the PM pool inside it, and exits non-zero.
#[test]
fn ctrl_c_removes_the_temporary_database() {
    let tmp = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_tierkv"))
        .args([
            "bench",
            "--design=leveled-pm",
            "--pm_size=268435456",
            "--num=200000000",
            "--benchmarks=fillrandom",
        ])
        .env("TMPDIR", tmp.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the tierkv binary runs");
    let stderr = drain(child.stderr.take().unwrap());
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let db: PathBuf = loop {
        let mut line = String::new();
        let n = stdout.read_line(&mut line).unwrap();
        assert!(n > 0, "bench announces its database");
        if let Some(rest) = line.trim_end().strip_prefix("Database:") {
            let path = rest
                .trim()
                .strip_suffix(" (temporary, removed at exit)")
                .unwrap_or_else(|| panic!("{line}"));
            break PathBuf::from(path);
        }
    };
    let rest = drain(stdout);
    assert!(db.starts_with(tmp.path()), "{}", db.display());
    // Signal once the benchmark is writing: the pool exists and the WAL is in it.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !db.join("pm.pool").exists() {
        assert!(Instant::now() < deadline, "no pool in {}", db.display());
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    let pid = child.id().to_string();
    let kill = Command::new("kill").args(["-INT", &pid]).status().unwrap();
    assert!(kill.success());
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("bench did not exit after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stderr = stderr.join().unwrap();
    let stdout = rest.join().unwrap();
    assert!(
        !status.success(),
        "{status:?}\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(
        !db.exists(),
        "{} is still there\nstderr:\n{stderr}",
        db.display()
    );
    assert!(
        stderr.contains(&format!(
            "interrupted: removed the temporary database {}",
            db.display()
        )),
        "{stderr}"
    );
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "left in TMPDIR: {left:?}");
}

/// `--json` and `--plot` are checked before the run: a path that cannot be written fails at
/// once, before any database is opened; paths that can be are written after it.
#[test]
fn report_paths_are_checked_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let run = |flag: String| {
        let out = tierkv(&["bench", "--num=200", "--benchmarks=fillseq", &flag]);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(!stdout.contains("Database:"), "it ran:\n{stdout}");
        assert_eq!(out.status.code(), Some(1));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let missing = dir.path().join("no-such-dir/r.json");
    let err = run(format!("--json={}", missing.display()));
    assert!(
        err.contains(&format!("--json {}", missing.display())) && err.contains("does not exist"),
        "{err}"
    );
    let under_file = file.join("r.json");
    let err = run(format!("--json={}", under_file.display()));
    assert!(err.contains("is not a directory"), "{err}");
    let err = run(format!("--json={}", dir.path().display()));
    assert!(err.contains("is a directory"), "{err}");
    let err = run(format!("--plot={}", file.join("charts").display()));
    assert!(
        err.contains("--plot") && err.contains("cannot create the directory"),
        "{err}"
    );

    let json = dir.path().join("r.json");
    let plots = dir.path().join("new/charts");
    ok(&[
        "bench",
        "--num=200",
        "--benchmarks=fillseq",
        &format!("--json={}", json.display()),
        &format!("--plot={}", plots.display()),
    ]);
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["runs"][0]["benchmarks"][0]["name"], "fillseq");
    assert!(plots.join("amplification.svg").exists());
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().starts_with(".tierkv-write-check"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// `tierkv designs` and `bench --help` list every design of the registry with its summary.
#[test]
fn every_design_is_listed_with_its_summary() {
    let listed = ok(&["designs"]);
    let help = ok(&["bench", "--help"]);
    for d in tierkv::Design::ALL {
        let line = format!("{:<17} {}", d.name(), d.summary());
        assert!(listed.contains(&line), "{line:?} missing from\n{listed}");
        assert!(help.contains(&line), "{line:?} missing from bench --help");
    }
    assert!(listed.contains("rocksdb"), "{listed}");
}

/// A pool the bench creates for a temporary database (`--pm_path` without `--db`) is removed
/// with it, lock file included; with `--db` it is kept; a design that keeps nothing in PM is
/// not shown the flag and creates no pool.
#[test]
fn pools_of_temporary_databases_are_removed_with_them() {
    let dir = tempfile::tempdir().unwrap();
    let pool = dir.path().join("pool");
    let lock = dir.path().join("pool.lock");
    let pm_path = format!("--pm_path={}", pool.display());
    let run = |design: &str, db: Option<&Path>| {
        let mut args = vec![
            "bench".to_string(),
            format!("--design={design}"),
            "--num=500".into(),
            "--benchmarks=fillrandom".into(),
            pm_path.clone(),
            "--pm_size=67108864".into(),
        ];
        if let Some(db) = db {
            args.push(format!("--db={}", db.display()));
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        ok(&args)
    };
    run("leveled-pm", None);
    assert!(!pool.exists() && !lock.exists(), "the run's pool is left");
    let stdout = run("leveled", None);
    assert!(!stdout.contains("--pm_path"), "{stdout}");
    assert!(!pool.exists());
    let db = dir.path().join("db");
    run("leveled-pm", Some(&db));
    assert!(pool.exists(), "a kept database keeps its pool");
}
