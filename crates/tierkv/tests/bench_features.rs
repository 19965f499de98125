//! The engine features db_bench's flags need: writes that skip the WAL (`--disable_wal`),
//! no automatic compactions (`--disable_auto_compactions`), per-level compaction figures,
//! stall causes, and the listing of live tables (`sstables`).
//!
//! Crash behaviour of unlogged writes runs on `MemFs` with crash images (`support`): logged
//! writes keep their guarantees around unlogged ones, unlogged ones are durable once flushed.

mod support;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;
use support::{Env, Image};
use tierkv::fs::CrashMode;
use tierkv::{Db, DbStats, Design, Error, Options, Tier, WriteBatch, WriteOptions};

const DB: &str = "/db";

const LOGGED: WriteOptions = WriteOptions {
    sync: false,
    disable_wal: false,
};
const SYNCED: WriteOptions = WriteOptions {
    sync: true,
    disable_wal: false,
};
const UNLOGGED: WriteOptions = WriteOptions {
    sync: false,
    disable_wal: true,
};

fn key(i: u32) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

fn put(db: &Db, o: &WriteOptions, k: &[u8], v: &[u8]) -> tierkv::Result<()> {
    let mut b = WriteBatch::new();
    b.put(k, v);
    db.write(o, b)
}

/// Tiny options (as the crash tests use) for `env`'s design and store.
fn tiny(env: &Env) -> Options {
    support::tiny_options(env)
}

/// Small options on the real file system.
fn small(design: Design) -> Options {
    let mut o = design.options(Options {
        write_buffer_size: 64 << 10,
        ..Options::default()
    });
    o.compaction.target_file_size = 64 << 10;
    o.compaction.max_bytes_for_level_base = 256 << 10;
    o.table.block_size = 1024;
    o.pm.size_bytes = 64 << 20;
    o.pm.chunk_bytes = 256 << 10;
    o
}

/// The designs of `support::designs()` whose front end has a log separate from its memtable.
fn logged_designs() -> Vec<Design> {
    support::designs()
        .into_iter()
        .filter(|d| !d.memtable_on_pm() && d.needs_auto_compactions().is_none())
        .collect()
}

fn scan_all(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    db.scan(..).unwrap().map(|e| e.unwrap()).collect()
}

// ---------------------------------------------------------------------------------------------
// WriteOptions::disable_wal

#[test]
fn unlogged_writes_skip_the_wal_and_survive_a_clean_close_or_drop() {
    let dir = tempfile::tempdir().unwrap();
    let opts = small(Design::LEVELED);
    {
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        for i in 0..100 {
            put(&db, &LOGGED, &key(i), b"logged").unwrap();
        }
        let before = db.stats();
        assert_eq!(before.wal_appends, 100, "{before:?}");
        for i in 100..300 {
            put(&db, &UNLOGGED, &key(i), b"unlogged").unwrap();
        }
        let after = db.stats();
        assert_eq!(after.wal_appends, before.wal_appends, "no WAL append");
        assert_eq!(
            after.ssd_written_wal, before.ssd_written_wal,
            "no WAL bytes"
        );
        assert_eq!(after.user_writes, 300);
        assert_eq!(
            db.get(&key(150)).unwrap().as_deref(),
            Some(&b"unlogged"[..])
        );
        // `sync` with `disable_wal` is refused, with nothing written.
        let both = WriteOptions {
            sync: true,
            disable_wal: true,
        };
        let e = put(&db, &both, b"both", b"x").unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
        assert_eq!(db.get(b"both").unwrap(), None);
        // A clean close flushes the unlogged writes.
        db.close().unwrap();
    }
    {
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        let all = scan_all(&db);
        assert_eq!(all.len(), 300);
        assert_eq!(all[&key(299)], b"unlogged");
        for i in 300..400 {
            put(&db, &UNLOGGED, &key(i), b"dropped").unwrap();
        }
        // Dropping does the same.
        drop(db);
    }
    let db = Db::open(dir.path(), opts).unwrap();
    assert_eq!(scan_all(&db).len(), 400);
    assert_eq!(db.get(&key(399)).unwrap().as_deref(), Some(&b"dropped"[..]));
}

/// What a crash image must recover: `logged` (key, value) present, `lost` keys absent.
fn check_crash(
    design: Design,
    img: &Image,
    present: &[(Vec<u8>, Vec<u8>)],
    absent: &[Vec<u8>],
    ctx: &str,
) {
    let env = Env::from_image(design, img);
    // `check` reads the WALs as recovery does: every logged record, none ignored.
    let report = Db::check(DB, tiny(&env)).unwrap_or_else(|e| panic!("{design} {ctx}: check: {e}"));
    assert_eq!(report.wal_files_ignored, 0, "{design} {ctx}: {report:?}");
    let db = Db::open(DB, tiny(&env)).unwrap_or_else(|e| panic!("{design} {ctx}: open: {e}"));
    let all = scan_all(&db);
    for (k, v) in present {
        assert_eq!(
            all.get(k),
            Some(v),
            "{design} {ctx}: {} lost",
            String::from_utf8_lossy(k)
        );
    }
    for k in absent {
        assert!(
            !all.contains_key(k),
            "{design} {ctx}: {} present",
            String::from_utf8_lossy(k)
        );
    }
    // The recovered database takes writes of both kinds and recovers them again.
    put(&db, &SYNCED, b"after-logged", b"1").unwrap();
    put(&db, &UNLOGGED, b"after-unlogged", b"2").unwrap();
    db.close().unwrap();
    let db = Db::open(DB, tiny(&env)).unwrap();
    assert_eq!(db.get(b"after-logged").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(
        db.get(b"after-unlogged").unwrap().as_deref(),
        Some(&b"2"[..])
    );
    db.close().unwrap();
    Db::check(DB, tiny(&env)).unwrap_or_else(|e| panic!("{design} {ctx}: check: {e}"));
}

#[test]
fn logged_writes_between_unlogged_ones_survive_a_crash() {
    for design in logged_designs() {
        let env = Env::new(design);
        let mut opts = tiny(&env);
        // One memtable for the whole test: nothing is flushed but by `flush`.
        opts.write_buffer_size = 1 << 20;
        let db = Db::open(DB, opts).unwrap();
        let v = |i: u32| format!("value{i}").into_bytes();
        // Flushed unlogged writes are durable.
        for i in 0..10 {
            put(&db, &UNLOGGED, &key(i), &v(i)).unwrap();
        }
        db.flush().unwrap();
        // Then logged and unlogged writes interleave in one WAL, the last logged one synced:
        // every logged one follows a gap in the WAL's sequence numbers.
        let mut logged = Vec::new();
        let mut unlogged = Vec::new();
        for i in 10..40 {
            let o = match i % 3 {
                0 => &UNLOGGED,
                _ if i == 38 => &SYNCED,
                _ => &LOGGED,
            };
            put(&db, o, &key(i), &v(i)).unwrap();
            if o.disable_wal {
                unlogged.push(key(i));
            } else {
                logged.push((key(i), v(i)));
            }
        }
        let flushed: Vec<_> = (0..10).map(|i| (key(i), v(i))).collect();
        let all_logged: Vec<_> = flushed.iter().chain(&logged).cloned().collect();
        // A process crash keeps every logged write; a power failure every one up to the
        // synced one (key 38, the last logged write). Unlogged writes in the memtable are
        // lost either way.
        for mode in [
            CrashMode::ProcessCrash,
            CrashMode::SyncedOnly,
            CrashMode::Random(7),
        ] {
            check_crash(
                design,
                &env.crash(mode),
                &all_logged,
                &unlogged,
                &format!("{mode:?}"),
            );
        }
        drop(db);
    }
}

#[test]
fn disable_wal_has_no_effect_on_a_persistent_memtable() {
    for design in support::designs()
        .into_iter()
        .filter(|d| d.memtable_on_pm())
    {
        let env = Env::new(design);
        let mut opts = tiny(&env);
        opts.write_buffer_size = 1 << 20;
        let db = Db::open(DB, opts).unwrap();
        let writes: Vec<_> = (0..30).map(|i| (key(i), vec![i as u8; 10])).collect();
        for (i, (k, v)) in writes.iter().enumerate() {
            put(&db, if i % 2 == 0 { &UNLOGGED } else { &LOGGED }, k, v).unwrap();
        }
        // Every write is durable once linked into the PM memtable, "unlogged" or not.
        check_crash(
            design,
            &env.crash(CrashMode::ProcessCrash),
            &writes,
            &[],
            "process crash",
        );
        drop(db);
    }
}

/// One write of the crash walk: its key (distinct per write) and whether it skipped the WAL.
#[derive(Clone, Debug)]
enum Step {
    Write { i: u32, o: WriteOptions },
    Flush,
}

fn walk_workload(seed: u64, len: u32) -> Vec<Step> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut steps = Vec::new();
    for i in 0..len {
        if rng.gen_bool(0.04) {
            steps.push(Step::Flush);
        }
        let o = match rng.gen_range(0..10) {
            0..=3 => UNLOGGED,
            4 => SYNCED,
            _ => LOGGED,
        };
        steps.push(Step::Write { i, o });
    }
    steps
}

fn walk_value(i: u32) -> Vec<u8> {
    vec![b'a' + (i % 26) as u8; 100 + (i as usize * 7) % 200]
}

/// Runs `steps` on `env` until the first error; returns the writes acknowledged when it stopped
/// (a design with its WAL on PM goes on acknowledging writes after the SSD froze).
fn walk_run(env: &Env, steps: &[Step]) -> Option<u32> {
    let db = Db::open(DB, tiny(env)).ok()?;
    let mut acked = 0;
    for s in steps {
        let r = match s {
            Step::Write { i, o } => put(&db, o, &key(*i), &walk_value(*i)).map(|()| {
                env.progress.ack(o.sync);
                acked = i + 1;
            }),
            Step::Flush => db.flush(),
        };
        if r.is_err() {
            break;
        }
    }
    drop(db);
    Some(acked)
}

/// Checks a crash image of the walk: the logged writes recovered are a prefix of the logged
/// writes (point in time), at least those acknowledged (with sync, for a power failure);
/// an unlogged write is present only if every logged write before it is; nothing past the
/// write in flight is present.
fn walk_check(design: Design, img: &Image, steps: &[Step], lower: usize, upper: u32, ctx: &str) {
    let env = Env::from_image(design, img);
    let db = Db::open(DB, tiny(&env)).unwrap_or_else(|e| panic!("{ctx}: open: {e}"));
    let all = scan_all(&db);
    let writes: Vec<(u32, bool)> = steps
        .iter()
        .filter_map(|s| match s {
            Step::Write { i, o } => Some((*i, o.disable_wal)),
            Step::Flush => None,
        })
        .collect();
    for (k, v) in &all {
        let i: u32 = std::str::from_utf8(&k[3..]).unwrap().parse().unwrap();
        assert!(
            i <= upper,
            "{ctx}: write {i} past the one in flight ({upper})"
        );
        assert_eq!(v, &walk_value(i), "{ctx}: value of write {i}");
    }
    let present = |i: u32| all.contains_key(&key(i));
    // The logged writes present form a prefix of the logged writes.
    let logged: Vec<u32> = writes.iter().filter(|w| !w.1).map(|w| w.0).collect();
    let prefix = logged.iter().take_while(|&&i| present(i)).count();
    if let Some(&hole) = logged.get(prefix) {
        let after: Vec<u32> = logged[prefix..]
            .iter()
            .copied()
            .filter(|&i| present(i))
            .collect();
        assert!(
            after.is_empty(),
            "{ctx}: logged write {hole} lost but later logged writes {after:?} recovered"
        );
    }
    // Every write up to `lower` (acknowledged, or up to the last synced one) is present if
    // logged.
    for &i in logged.iter().filter(|&&i| (i as usize) < lower) {
        assert!(present(i), "{ctx}: logged write {i} < {lower} lost");
    }
    // An unlogged write is present only with every logged write before it.
    for &(i, _) in writes.iter().filter(|w| w.1) {
        if present(i) {
            let missing: Vec<u32> = logged
                .iter()
                .copied()
                .filter(|&l| l < i && !present(l))
                .collect();
            assert!(
                missing.is_empty(),
                "{ctx}: unlogged write {i} recovered without logged writes {missing:?}"
            );
        }
    }
    db.close().unwrap();
}

/// Every crash point (mutating SSD operation) of a workload mixing logged, synced and unlogged
/// writes and flushes, four crash modes each.
#[test]
fn crash_points_of_mixed_logged_and_unlogged_writes() {
    let designs: Vec<Design> = logged_designs()
        .into_iter()
        .filter(|d| [Design::LEVELED, Design::LEVELED_PM].contains(d))
        .collect();
    for design in designs {
        let steps = walk_workload(11, 160);
        let probe = Env::new(design);
        assert_eq!(
            walk_run(&probe, &steps),
            Some(160),
            "{design}: runs without faults"
        );
        let count = probe.ssd.mutating_op_count();
        let mut checked = 0;
        let mut k = 0;
        while k < count + 10 {
            let env = Env::new(design);
            env.freeze_after(k);
            let Some(acked_final) = walk_run(&env, &steps) else {
                k += 1;
                continue;
            };
            let (acked, synced) = env.counts_at_crash();
            // The write in flight when the workload stopped.
            let upper = acked_final;
            for mode in [
                CrashMode::ProcessCrash,
                CrashMode::SyncedOnly,
                CrashMode::Random(k * 3 + 1),
                CrashMode::Random(k * 3 + 2),
            ] {
                let lower = if mode == CrashMode::ProcessCrash {
                    acked
                } else {
                    synced
                };
                let img = env.crash(mode);
                let exists = img
                    .ssd
                    .file_data(&std::path::Path::new(DB).join("CURRENT"))
                    .is_some();
                if !exists {
                    assert_eq!(synced, 0, "{design} point {k} {mode:?}: database vanished");
                    continue;
                }
                let ctx =
                    format!("{design} crash point {k} {mode:?} (acked {acked}, synced {synced})");
                walk_check(design, &img, &steps, lower, upper, &ctx);
            }
            checked += 1;
            k += 1;
        }
        eprintln!("{design}: {count} mutating SSD ops, {checked} crash points x 4 modes");
        // The points inside `Db::open` itself leave no database to run the workload on.
        assert!(
            checked as u64 * 10 >= count * 9,
            "{design}: {checked} of {count} points"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// CompactionOptions::disable_auto_compactions

#[test]
fn without_auto_compactions_l0_grows_writes_go_on_and_compact_range_works() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = small(Design::LEVELED);
    opts.write_buffer_size = 16 << 10;
    opts.compaction.level0_compaction_trigger = 2;
    opts.compaction.level0_slowdown_trigger = 3;
    opts.compaction.level0_stop_trigger = 4;
    opts.compaction.disable_auto_compactions = true;
    let db = Arc::new(Db::open(dir.path(), opts).unwrap());
    for i in 0..4000 {
        db.put(&key(i % 1500), &[i as u8; 64]).unwrap();
    }
    db.flush().unwrap();
    // Waiting for background work returns (flushes only), well before a minute.
    let (tx, rx) = mpsc::channel();
    let waiter = Arc::clone(&db);
    std::thread::spawn(move || tx.send(waiter.wait_for_background_work()).unwrap());
    rx.recv_timeout(Duration::from_secs(60))
        .expect("wait_for_background_work hung")
        .unwrap();
    let s = db.stats();
    assert_eq!(s.compactions, 0, "{s:?}");
    assert!(
        s.levels[0].files > 4,
        "L0 past the stop trigger: {:?}",
        s.levels
    );
    assert!(s.levels[1..].iter().all(|l| l.files == 0), "{:?}", s.levels);
    assert!(!s.background_pending);
    // No stall for L0's triggers, which only compaction could relieve.
    assert!(
        s.stall_causes.iter().all(|c| !c.cause.starts_with("stage")),
        "{:?}",
        s.stall_causes
    );
    db.compact_range(None, None).unwrap();
    let s = db.stats();
    assert!(s.compactions > 0, "{s:?}");
    assert_eq!(s.levels[0].files, 0, "{:?}", s.levels);
    for i in (0..1500).step_by(37) {
        let want = (2500..4000).rev().find(|j| j % 1500 == i).unwrap_or(i);
        assert_eq!(
            db.get(&key(i)).unwrap(),
            Some(vec![want as u8; 64]),
            "key {i}"
        );
    }
}

#[test]
fn designs_that_need_compaction_refuse_to_open_without_it() {
    for design in Design::ALL.iter().copied() {
        let dir = tempfile::tempdir().unwrap();
        let mut opts = small(design);
        opts.compaction.disable_auto_compactions = true;
        let r = Db::open(dir.path(), opts);
        match design.needs_auto_compactions() {
            Some(why) => {
                let e = r.err().unwrap_or_else(|| panic!("{design} opened"));
                let msg = e.to_string();
                assert!(matches!(e, Error::InvalidArgument(_)), "{design}: {msg}");
                assert!(msg.contains(design.name()) && msg.contains(why), "{msg}");
            }
            None => {
                let db = r.unwrap_or_else(|e| panic!("{design}: {e}"));
                for i in 0..3000 {
                    db.put(&key(i % 700), &[i as u8; 80]).unwrap();
                }
                db.flush().unwrap();
                db.wait_for_background_work().unwrap();
                assert_eq!(db.stats().compactions, 0, "{design}");
                db.compact_range(None, None).unwrap();
                assert_eq!(db.get(&key(5)).unwrap(), Some(vec![(2805 % 256) as u8; 80]));
            }
        }
    }
    let refused: Vec<&str> = Design::ALL
        .iter()
        .filter(|d| d.needs_auto_compactions().is_some())
        .map(|d| d.name())
        .collect();
    assert_eq!(
        refused,
        [
            "nvlsm",
            "nvlsm-leveled",
            "nvlsm-fragmented",
            "trianglekv",
            "matrixkv",
            "labdb",
            "fluidkv",
            "listdb"
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Per-level compaction figures

/// The per-level rows, the flush rows and the stall causes add up to the totals.
fn check_sums(s: &DbStats, ctx: &str) {
    let levels = &s.compaction_levels;
    let sum =
        |f: fn(&tierkv::stats::LevelCompactionStats) -> u64| -> u64 { levels.iter().map(f).sum() };
    assert_eq!(
        sum(|l| l.written_bytes),
        s.ssd_written_compaction + s.pm_written_compaction,
        "{ctx}: compaction bytes written {levels:?}"
    );
    assert_eq!(sum(|l| l.compactions), s.compactions, "{ctx}: compactions");
    if s.compaction_jobs_dropped == 0 {
        let jobs = &s.compaction_jobs;
        assert_eq!(
            sum(|l| l.read_bytes()),
            jobs.iter().map(|j| j.input_bytes).sum::<u64>(),
            "{ctx}: bytes read"
        );
        assert_eq!(
            sum(|l| l.trivial_moves),
            jobs.iter().filter(|j| j.trivial_move).count() as u64,
            "{ctx}: trivial moves"
        );
        assert_eq!(
            sum(|l| l.read_input_runs + l.read_output_runs),
            jobs.iter()
                .filter(|j| !j.trivial_move)
                .map(|j| j.input_runs as u64)
                .sum::<u64>(),
            "{ctx}: runs read"
        );
        for l in levels {
            let mine = jobs
                .iter()
                .filter(|j| (j.stage, j.to_group) == (l.stage, l.group));
            assert_eq!(
                mine.clone().count() as u64,
                l.compactions,
                "{ctx}: compactions into stage {} group {}",
                l.stage,
                l.group
            );
            assert_eq!(
                mine.map(|j| j.micros).sum::<u64>(),
                l.micros,
                "{ctx}: time of stage {} group {}",
                l.stage,
                l.group
            );
        }
    }
    for l in levels {
        assert!(l.dropped_entries <= l.input_entries, "{ctx}: {l:?}");
        assert!(l.trivial_moves <= l.compactions, "{ctx}: {l:?}");
    }
    let flush: u64 = s.flush_targets.iter().map(|f| f.written_bytes).sum();
    assert_eq!(
        flush,
        s.ssd_written_flush + s.pm_written_flush,
        "{ctx}: flush bytes {:?}",
        s.flush_targets
    );
    let micros: u64 = s.stall_causes.iter().map(|c| c.micros).sum();
    assert_eq!(
        micros,
        s.stall_slowdown_micros + s.stall_stop_micros,
        "{ctx}: stall causes {:?}",
        s.stall_causes
    );
    let groups: u64 = s.stall_causes.iter().map(|c| c.stalled_groups).sum();
    assert!(groups >= s.stall_count, "{ctx}: {:?}", s.stall_causes);
}

#[test]
fn per_level_compaction_figures_add_up_on_leveled() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small(Design::LEVELED)).unwrap();
    let mut rng = SmallRng::seed_from_u64(3);
    for i in 0..20_000u32 {
        db.put(&key(rng.gen_range(0..8000)), &[i as u8; 100])
            .unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.wait_for_background_work().unwrap();
    let s = db.stats();
    check_sums(&s, "leveled");
    assert!(s.compactions > 0 && s.ssd_written_compaction > 0, "{s:?}");
    let levels = &s.compaction_levels;
    assert!(
        levels.iter().all(|l| l.stage == 0 && l.group >= 1),
        "{levels:?}"
    );
    // Compactions into L1 read L0 (Rn) and rewrote L1's overlapping tables (Rnp1).
    let l1 = levels.iter().find(|l| l.group == 1).expect("L1 row");
    assert!(l1.read_input_bytes > 0 && l1.read_input_runs > 0, "{l1:?}");
    assert!(
        l1.read_output_bytes > 0 && l1.read_output_runs > 0,
        "{l1:?}"
    );
    assert!(l1.written_runs > 0 && l1.micros > 0, "{l1:?}");
    // Overwrites were dropped.
    assert!(levels.iter().any(|l| l.dropped_entries > 0), "{levels:?}");
    // Flushes went to L0 on SSD, each counted.
    assert_eq!(s.flush_targets.len(), 1, "{:?}", s.flush_targets);
    let f = &s.flush_targets[0];
    assert_eq!((f.group, f.tier), (0, Tier::Ssd));
    assert_eq!(f.flushes, s.flushes);
    // Older JSON without the new fields still parses.
    let mut json: serde_json::Value = serde_json::to_value(&s).unwrap();
    for field in ["compaction_levels", "flush_targets", "stall_causes"] {
        json.as_object_mut().unwrap().remove(field);
    }
    let old: DbStats = serde_json::from_value(json).unwrap();
    assert!(old.compaction_levels.is_empty() && old.stall_causes.is_empty());
    let back: DbStats = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
    assert_eq!(back, s);
}

#[test]
fn per_level_figures_add_up_on_every_design() {
    for design in support::designs() {
        let env = Env::new(design);
        let db = Db::open(DB, tiny(&env)).unwrap();
        let mut rng = SmallRng::seed_from_u64(5);
        for i in 0..1500u32 {
            db.put(&key(rng.gen_range(0..600)), &[i as u8; 40]).unwrap();
        }
        db.flush().unwrap();
        db.wait_for_background_work().unwrap();
        db.compact_range(None, None).unwrap();
        db.wait_for_background_work().unwrap();
        let s = db.stats();
        check_sums(&s, design.name());
        assert!(s.compactions > 0, "{design}: {s:?}");
        assert!(!s.flush_targets.is_empty(), "{design}");
        drop(db);
        // After a reopen that replays a WAL, the flush rows count recovery's flushes too.
        let db = Db::open(DB, tiny(&env)).unwrap();
        db.wait_for_background_work().unwrap();
        check_sums(&db.stats(), &format!("{design} reopened"));
    }
}

// ---------------------------------------------------------------------------------------------
// Stall causes

fn stall_options(disable_auto_compactions: bool) -> Options {
    let mut o = small(Design::LEVELED);
    o.write_buffer_size = 8 << 10;
    o.compaction.level0_compaction_trigger = 1;
    o.compaction.level0_slowdown_trigger = 1;
    o.compaction.level0_stop_trigger = 2;
    o.compaction.disable_auto_compactions = disable_auto_compactions;
    o
}

fn stalled_writes(opts: Options) -> DbStats {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(dir.path(), opts).unwrap());
    let writers: Vec<_> = (0..4u32)
        .map(|t| {
            let db = Arc::clone(&db);
            std::thread::spawn(move || {
                for i in 0..1500u32 {
                    db.put(&key(t * 100_000 + i), &[t as u8; 100]).unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    // The sums checked compare counters read one after the other: a flush still running
    // could land between two of the reads.
    db.wait_for_background_work().unwrap();
    db.stats()
}

#[test]
fn stall_causes_name_the_l0_triggers_and_add_up() {
    let s = stalled_writes(stall_options(false));
    check_sums(&s, "stalls");
    assert!(s.stall_count > 0, "{s:?}");
    let slowdown = s
        .stall_causes
        .iter()
        .find(|c| c.cause == "stage 0 write pressure slowdown")
        .unwrap_or_else(|| panic!("no L0 slowdown: {:?}", s.stall_causes));
    assert!(
        slowdown.stalled_groups > 0 && slowdown.micros > 0,
        "{slowdown:?}"
    );
    let known = [
        "memtable limit",
        "PM pool full",
        "stage 0 write pressure slowdown",
        "stage 0 write pressure stop",
    ];
    for c in &s.stall_causes {
        assert!(known.contains(&c.cause.as_str()), "{c:?}");
        assert!(c.stalled_groups > 0, "{c:?}");
    }
    // Without automatic compactions the same writes meet no L0 trigger.
    let s = stalled_writes(stall_options(true));
    check_sums(&s, "stalls without compactions");
    assert!(
        s.stall_causes.iter().all(|c| c.cause == "memtable limit"),
        "{:?}",
        s.stall_causes
    );
    assert!(s.levels[0].files > 2, "{:?}", s.levels);
}

// ---------------------------------------------------------------------------------------------
// Live tables

#[test]
fn live_tables_list_every_run_of_the_current_version() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small(Design::LEVELED)).unwrap();
    assert!(db.live_tables().is_empty());
    for i in 0..6000 {
        db.put(&key(i), &[1; 100]).unwrap();
    }
    db.compact_range(None, None).unwrap();
    for i in 6000..6500 {
        db.put(&key(i), &[2; 100]).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_background_work().unwrap();
    let tables = db.live_tables();
    let s = db.stats();
    let files: usize = s.levels.iter().map(|l| l.files).sum();
    assert_eq!(tables.len(), files, "{tables:?}");
    for (g, level) in s.levels.iter().enumerate() {
        let mine: Vec<_> = tables.iter().filter(|t| t.group == g).collect();
        assert_eq!(mine.len(), level.files, "group {g}");
        assert_eq!(
            mine.iter().map(|t| t.file_size).sum::<u64>(),
            level.bytes,
            "group {g}"
        );
        // Levels below L0 are sorted and disjoint.
        if g > 0 {
            for w in mine.windows(2) {
                assert!(w[0].largest_key < w[1].smallest_key, "{w:?}");
            }
        }
    }
    let entries: u64 = tables.iter().map(|t| t.entries).sum();
    assert!(entries >= 6500, "{entries}");
    for t in &tables {
        assert_eq!((t.stage, t.stage_name.as_str()), (0, "levels"));
        assert_eq!(
            (t.tier, t.kind.as_str(), t.row, t.set),
            (Tier::Ssd, "sst", false, 0)
        );
        assert!(t.smallest_key <= t.largest_key, "{t:?}");
        assert!(
            t.smallest_key >= key(0) && t.largest_key <= key(6499),
            "{t:?}"
        );
        let path = dir.path().join(format!("{:06}.sst", t.number));
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            t.file_size,
            "{t:?}"
        );
    }
    // The newest tables hold the last keys written.
    assert!(tables.iter().any(|t| t.largest_key == key(6499)));
}

#[test]
fn live_tables_show_the_tier_of_each_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = small(Design::LEVELED_PM);
    opts.compaction.level0_compaction_trigger = 8;
    opts.compaction.level0_slowdown_trigger = 8;
    opts.compaction.level0_stop_trigger = 8;
    let db = Db::open(dir.path(), opts).unwrap();
    for round in 0..3u32 {
        for i in 0..600 {
            db.put(&key(round * 1000 + i), &[3; 100]).unwrap();
        }
        db.flush().unwrap();
    }
    db.compact_range(None, None).unwrap();
    for i in 0..600 {
        db.put(&key(5000 + i), &[4; 100]).unwrap();
    }
    db.flush().unwrap();
    let s = db.stats();
    assert_eq!(s.pm_flush_fallbacks, 0, "{s:?}");
    let tables = db.live_tables();
    for t in &tables {
        // L0 in the pool, L1 and below on SSD.
        let want = if t.group == 0 { Tier::Pm } else { Tier::Ssd };
        assert_eq!(t.tier, want, "{t:?}");
    }
    let pm: u64 = tables
        .iter()
        .filter(|t| t.tier == Tier::Pm)
        .map(|t| t.file_size)
        .sum();
    assert!(pm > 0, "{tables:?}");
    assert_eq!(pm, s.pm_live_bytes());
    assert!(tables.iter().any(|t| t.group > 0), "{tables:?}");
}
