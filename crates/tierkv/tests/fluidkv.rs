//! FluidKV's parts: logical sorted tables (SSTables with a partitioned index) in the PM pool,
//! compactions split into key-range partitions merged in parallel, and the load detector that
//! sets the BufferStore's compaction trigger.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use tierkv::{Db, Design, Options, ReadOptions, Tier};

fn key(i: u64) -> Vec<u8> {
    format!("key{:08}", i.wrapping_mul(2_654_435_761) % 100_000_000).into_bytes()
}

fn fluidkv(window_ms: u64) -> Options {
    let mut o = Design::FLUIDKV.options(Options {
        design: Design::FLUIDKV,
        write_buffer_size: 64 << 10,
        ..Options::default()
    });
    o.pm.chunk_bytes = 64 << 10;
    o.pm.size_bytes = 128 << 20;
    o.compaction.target_file_size = 128 << 10;
    o.compaction.load_window_ms = window_ms;
    o
}

/// Writes `n` keys (every fifth deleted again, every third written twice) into `db` and
/// `model`, starting at `from`.
fn load(db: &Db, model: &mut BTreeMap<Vec<u8>, Vec<u8>>, from: u64, n: u64) {
    for i in from..from + n {
        let v = format!("value-{i}-{}", "x".repeat((i % 40) as usize)).into_bytes();
        db.put(&key(i), &v).unwrap();
        model.insert(key(i), v);
        if i % 3 == 0 {
            let v2 = format!("again-{i}").into_bytes();
            db.put(&key(i), &v2).unwrap();
            model.insert(key(i), v2);
        }
        if i % 5 == 0 {
            db.delete(&key(i)).unwrap();
            model.remove(&key(i));
        }
    }
}

fn assert_matches(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, upto: u64, ctx: &str) {
    for i in 0..upto {
        assert_eq!(
            db.get(&key(i)).unwrap().as_ref(),
            model.get(&key(i)),
            "{ctx}: key {i}"
        );
    }
    let got: Vec<(Vec<u8>, Vec<u8>)> = db.scan(..).unwrap().collect::<tierkv::Result<_>>().unwrap();
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(got.len(), want.len(), "{ctx}: scan length");
    assert!(got == want, "{ctx}: scan differs");
}

/// The same writes and compactions with one partition and with three give the same database;
/// the partitioned one counts its partitions, its outputs are disjoint (`check` verifies the
/// levels), and a snapshot taken halfway reads its own data after the compactions.
#[test]
fn partitioned_compactions_keep_every_key_and_snapshot() {
    for parts in [1usize, 3] {
        let dir = tempfile::tempdir().unwrap();
        let mut o = Design::LEVELED.options(Options {
            write_buffer_size: 32 << 10,
            ..Options::default()
        });
        o.table.block_size = 512;
        o.compaction.target_file_size = 32 << 10;
        o.compaction.max_bytes_for_level_base = 128 << 10;
        o.compaction.subcompactions = parts;
        let db = Db::open(dir.path(), o.clone()).unwrap();
        let mut model = BTreeMap::new();
        load(&db, &mut model, 0, 3000);
        let snap = db.snapshot();
        let at_snapshot = model.clone();
        load(&db, &mut model, 1500, 3000);
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
        db.wait_for_background_work().unwrap();
        assert_matches(&db, &model, 4500, &format!("{parts} partitions"));
        let r = ReadOptions {
            snapshot: Some(snap.clone()),
            ..ReadOptions::default()
        };
        for i in 0..3000 {
            assert_eq!(
                db.get_with(&r, &key(i)).unwrap().as_ref(),
                at_snapshot.get(&key(i)),
                "{parts} partitions, snapshot, key {i}"
            );
        }
        drop(r);
        drop(snap);
        let s = db.stats();
        if parts == 1 {
            assert_eq!(s.subcompactions, 0);
        } else {
            assert!(
                s.subcompactions >= 3,
                "{} partitions merged",
                s.subcompactions
            );
        }
        db.close().unwrap();
        Db::check(dir.path(), o.clone()).unwrap();
        let db = Db::open(dir.path(), o).unwrap();
        assert_matches(&db, &model, 4500, &format!("{parts} partitions, reopened"));
    }
}

/// `fluidkv` keeps every run in the pool as tables with a partitioned index: DRAM holds one
/// index entry per logical sorted table (32 blocks), a small fraction of the keys; its
/// contents survive reopening and `check`.
#[test]
fn fluidkv_keeps_lsts_in_the_pool_and_little_index_in_dram() {
    let dir = tempfile::tempdir().unwrap();
    let o = fluidkv(500);
    assert_eq!(o.table.index_partition_blocks, 32);
    assert_eq!(o.compaction.num_levels, 2);
    assert!(o.pm.thread_logs && o.compaction.load_aware);
    let db = Db::open(dir.path(), o.clone()).unwrap();
    let mut model = BTreeMap::new();
    load(&db, &mut model, 0, 20_000);
    db.flush().unwrap();
    db.wait_for_background_work().unwrap();
    assert_matches(&db, &model, 20_000, "fluidkv");
    let tables = db.live_tables();
    assert!(!tables.is_empty());
    assert!(tables.iter().all(|t| t.tier == Tier::Pm && t.group <= 1));
    assert!(
        tables.iter().any(|t| t.group == 1),
        "nothing reached the StableStore"
    );
    let s = db.stats();
    let entries: u64 = tables.iter().map(|t| t.entries).sum();
    // About 23 entries per 512-byte block, 32 blocks per LST: one DRAM index entry per ~700
    // entries; an index entry here is well under 100 bytes.
    assert!(
        s.dram.index_bytes * 5 < entries,
        "{} index bytes for {entries} entries",
        s.dram.index_bytes
    );
    db.close().unwrap();
    Db::check(dir.path(), o.clone()).unwrap();
    let db = Db::open(dir.path(), o).unwrap();
    assert_matches(&db, &model, 20_000, "fluidkv reopened");
}

/// Waits up to 20 s for `cond` on the database's stats.
fn wait_until(db: &Db, what: &str, cond: impl Fn(&tierkv::DbStats) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !cond(&db.stats()) {
        assert!(
            Instant::now() < deadline,
            "never: {what} ({:?})",
            db.stats().load_trigger
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Under writes the BufferStore holds up to 4 buffer trees before it compacts; once only
/// reads come, the detector lowers the trigger to 1 (every buffer tree is compacted into the
/// StableStore) and flushes the FastStore whatever its fill; writes bring the trigger back.
#[test]
fn load_detector_sets_the_trigger_and_flushes_when_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), fluidkv(40)).unwrap();
    let mut model = BTreeMap::new();
    // Writes only: the trigger stays at 4.
    load(&db, &mut model, 0, 200);
    db.flush().unwrap();
    load(&db, &mut model, 200, 200);
    db.flush().unwrap();
    load(&db, &mut model, 400, 100);
    db.wait_for_background_work().unwrap();
    assert_eq!(db.stats().load_trigger, 4);
    let buffer_trees = || db.live_tables().iter().filter(|t| t.group == 0).count();
    assert_eq!(buffer_trees(), 2, "two buffer trees wait under writes");
    // Reads only: the trigger drops to 1, the memtable is flushed and everything compacted.
    let stop = std::sync::atomic::AtomicBool::new(false);
    let reads = std::thread::scope(|s| {
        let h = s.spawn(|| {
            let mut n = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                db.get(&key(n % 500)).unwrap();
                n += 1;
                std::thread::sleep(Duration::from_micros(200));
            }
            n
        });
        wait_until(&db, "read mode", |s| {
            s.load_trigger == 1 && s.eager_flushes >= 1
        });
        let deadline = Instant::now() + Duration::from_secs(20);
        while buffer_trees() > 0 {
            assert!(Instant::now() < deadline, "buffer trees never compacted");
            std::thread::sleep(Duration::from_millis(10));
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        h.join().unwrap()
    });
    assert!(reads > 0);
    assert!(db.stats().load_mode_switches >= 1);
    assert_matches(&db, &model, 500, "after the read-only period");
    // Writes again: the trigger goes back to 4.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut i = 500;
    while db.stats().load_trigger != 4 {
        assert!(Instant::now() < deadline, "write mode never came back");
        load(&db, &mut model, i, 20);
        i += 20;
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(db.stats().load_mode_switches >= 2);
    assert_matches(&db, &model, i, "after writes came back");
}

/// Bytes compactions wrote, on either tier.
fn compaction_written(db: &Db) -> u64 {
    let s = db.stats();
    s.pm_written_compaction + s.ssd_written_compaction
}

/// Writes 500 keys `{prefix}{i:05}` and flushes them into one buffer tree.
fn buffer_tree(db: &Db, model: &mut BTreeMap<Vec<u8>, Vec<u8>>, prefix: &str) {
    for i in 0..500 {
        let (k, v) = (format!("{prefix}{i:05}"), format!("{prefix}-value-{i}"));
        db.put(k.as_bytes(), v.as_bytes()).unwrap();
        model.insert(k.into_bytes(), v.into_bytes());
    }
    db.flush().unwrap();
}

/// A compaction leaves a StableStore run no buffer-tree key falls into where it is, and moves
/// buffer trees that overlap no other input, instead of rewriting them; with the option off
/// the same compaction rewrites all three. Either way the contents are the same.
#[test]
fn compactions_reuse_the_runs_they_do_not_touch() {
    for reuse in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let mut o = fluidkv(500);
        o.compaction.load_aware = false;
        o.compaction.level0_compaction_trigger = 8;
        o.compaction.reuse_untouched_runs = reuse;
        let db = Db::open(dir.path(), o.clone()).unwrap();
        let mut model = BTreeMap::new();
        buffer_tree(&db, &mut model, "k4");
        db.compact_range(None, None).unwrap();
        let stable: Vec<u64> = db.live_tables().iter().map(|t| t.number).collect();
        assert_eq!(stable.len(), 1);
        // Two buffer trees on either side of the StableStore's run.
        buffer_tree(&db, &mut model, "k3");
        buffer_tree(&db, &mut model, "k5");
        let trees: Vec<u64> = db
            .live_tables()
            .iter()
            .filter(|t| t.group == 0)
            .map(|t| t.number)
            .collect();
        assert_eq!(trees.len(), 2);
        let written_before = compaction_written(&db);
        let reused_before = db.stats().reused_runs;
        db.compact_range(None, None).unwrap();
        let after: Vec<(usize, u64)> = db
            .live_tables()
            .iter()
            .map(|t| (t.group, t.number))
            .collect();
        let written = compaction_written(&db) - written_before;
        if reuse {
            let mut want: Vec<(usize, u64)> =
                stable.iter().chain(&trees).map(|&n| (1, n)).collect();
            want.sort_unstable();
            let mut got = after.clone();
            got.sort_unstable();
            assert_eq!(got, want, "the same three files, all in the StableStore");
            assert_eq!(written, 0, "nothing rewritten");
            assert_eq!(db.stats().reused_runs - reused_before, 3);
        } else {
            assert!(after
                .iter()
                .all(|&(g, n)| g == 1 && !stable.contains(&n) && !trees.contains(&n)));
            assert!(written > 0);
            assert_eq!(db.stats().reused_runs, 0);
        }
        assert_matches(&db, &model, 0, &format!("reuse {reuse}"));
        // A buffer tree whose keys lie on both sides of the three runs (none inside them) is
        // merged alone, its output cut around them: the StableStore stays disjoint.
        let before: Vec<u64> = db.live_tables().iter().map(|t| t.number).collect();
        for (k, v) in [("k200000", "low"), ("k600000", "high")] {
            db.put(k.as_bytes(), v.as_bytes()).unwrap();
            model.insert(k.as_bytes().to_vec(), v.as_bytes().to_vec());
        }
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
        let now: Vec<u64> = db.live_tables().iter().map(|t| t.number).collect();
        if reuse {
            assert!(
                before.iter().all(|n| now.contains(n)),
                "{before:?} -> {now:?}"
            );
            assert_eq!(
                now.len(),
                5,
                "two outputs, cut around the three runs: {now:?}"
            );
        }
        assert_matches(&db, &model, 0, &format!("reuse {reuse}, around the runs"));
        // A buffer tree inside the reused run's range is merged with it; the others stay.
        for i in (0..500).step_by(7) {
            let (k, v) = (format!("k4{i:05}"), format!("new-{i}"));
            db.put(k.as_bytes(), v.as_bytes()).unwrap();
            model.insert(k.into_bytes(), v.into_bytes());
        }
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
        assert_matches(&db, &model, 0, &format!("reuse {reuse}, after a merge"));
        db.close().unwrap();
        Db::check(dir.path(), o.clone()).unwrap();
        let db = Db::open(dir.path(), o).unwrap();
        assert_matches(&db, &model, 0, &format!("reuse {reuse}, reopened"));
    }
}

/// Key-value separation (`fluidkv` separates values of 256 bytes or more): compactions copy
/// the pointers (they write a fraction of the bytes the same compactions write with the values
/// inline), the logs of overwritten values are collected, every value reads back across
/// reopens and `check`, and with separation turned off new tables keep their values inline
/// and the logs go once no table names them.
#[test]
fn large_values_are_separated_and_their_logs_collected() {
    let value = |i: u64, round: u64| -> Vec<u8> {
        let len = if i.is_multiple_of(4) {
            40
        } else {
            300 + (i * 37 + round) % 700
        };
        (0..len).map(|b| (b + i + round) as u8).collect()
    };
    let mut compaction_bytes = Vec::new();
    for sep in [0usize, 256] {
        let dir = tempfile::tempdir().unwrap();
        let mut o = fluidkv(500);
        o.table.value_separation = sep;
        let db = Db::open(dir.path(), o.clone()).unwrap();
        let mut model = BTreeMap::new();
        for round in 0..4 {
            for i in 0..600 {
                let v = value(i, round);
                db.put(&key(i), &v).unwrap();
                model.insert(key(i), v);
            }
            db.compact_range(None, None).unwrap();
        }
        assert_matches(&db, &model, 600, &format!("separation {sep}"));
        let s = db.stats();
        compaction_bytes.push(s.pm_written_compaction);
        let live: u64 = model
            .values()
            .filter(|v| v.len() >= 256)
            .map(|v| v.len() as u64 + 4)
            .sum();
        if sep == 0 {
            assert_eq!(s.value_logs.files, 0);
            continue;
        }
        // After a full compaction every version but the newest is gone: the tables name
        // exactly the large live values, and the logs hold little else.
        db.compact_range(None, None).unwrap();
        let s = db.stats();
        assert_eq!(s.value_logs.live_bytes, live);
        assert!(s.value_logs.files > 0);
        assert!(
            s.value_logs.pm_bytes <= 2 * live,
            "{} bytes of logs for {live} live bytes",
            s.value_logs.pm_bytes
        );
        drop(db);
        let report = Db::check(dir.path(), o.clone()).unwrap();
        assert!(report.tables_checked > 0);
        let db = Db::open(dir.path(), o.clone()).unwrap();
        assert_matches(&db, &model, 600, "reopened");
        drop(db);
        // Separation off: the separated tables still read; once every key is written again
        // and compacted, the values are inline and no log is left.
        o.table.value_separation = 0;
        let db = Db::open(dir.path(), o.clone()).unwrap();
        assert_matches(&db, &model, 600, "separation off, before");
        for i in 0..600 {
            let v = value(i, 9);
            db.put(&key(i), &v).unwrap();
            model.insert(key(i), v);
        }
        db.compact_range(None, None).unwrap();
        assert_matches(&db, &model, 600, "separation off");
        let s = db.stats();
        assert_eq!((s.value_logs.files, s.value_logs.pm_bytes), (0, 0));
        drop(db);
        Db::check(dir.path(), o).unwrap();
    }
    assert!(
        compaction_bytes[1] * 2 < compaction_bytes[0],
        "compactions wrote {} bytes with separation, {} without",
        compaction_bytes[1],
        compaction_bytes[0]
    );
}

/// A value log a table names that is missing or shorter than what the table wrote is
/// corruption at open (key-value separation on `leveled`, tables on the disk); a damaged
/// record is corruption when read, never a value.
#[test]
fn a_missing_short_or_damaged_value_log_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = Design::LEVELED.options(Options::default());
    o.table.value_separation = 100;
    let db = Db::open(dir.path(), o.clone()).unwrap();
    for i in 0..50u64 {
        db.put(&key(i), &vec![i as u8; 300]).unwrap();
    }
    db.flush().unwrap();
    assert_eq!(db.stats().value_logs.files, 1);
    drop(db);
    let log = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "vlog"))
        .expect("a value log");
    let good = std::fs::read(&log).unwrap();
    let corrupt = |what: &str| match Db::open(dir.path(), o.clone()) {
        Err(tierkv::Error::Corruption { .. }) => {}
        other => panic!("{what}: {:?}", other.map(|_| ())),
    };
    std::fs::write(&log, &good[..good.len() - 1]).unwrap();
    corrupt("a short log");
    std::fs::remove_file(&log).unwrap();
    corrupt("a missing log");
    let mut bad = good.clone();
    bad[10] ^= 1;
    std::fs::write(&log, &bad).unwrap();
    let db = Db::open(dir.path(), o.clone()).unwrap();
    let errors = (0..50)
        .filter(|&i| matches!(db.get(&key(i)), Err(tierkv::Error::Corruption { .. })))
        .count();
    assert_eq!(errors, 1);
    drop(db);
    assert!(Db::check(dir.path(), o.clone()).is_err());
    std::fs::write(&log, &good).unwrap();
    let db = Db::open(dir.path(), o).unwrap();
    for i in 0..50u64 {
        assert_eq!(db.get(&key(i)).unwrap(), Some(vec![i as u8; 300]));
    }
}

/// The names of the manifests in `dir` (the directory, not the pool).
fn directory_manifests(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("MANIFEST-"))
        .collect()
}

/// The pool of a closed database, opened as the engine opens it; `current` is its `CURRENT`.
fn open_pool(pool: &std::path::Path, current: &str) -> tierkv::fs::PmFs {
    let identity = current
        .lines()
        .find_map(|l| l.strip_prefix("identity "))
        .map(|h| u128::from_str_radix(h, 16).unwrap())
        .expect("CURRENT names the identity");
    let options = tierkv_pm::PoolOptions {
        size: 128 << 20,
        chunk_size: 64 << 10,
        ..tierkv_pm::PoolOptions::default()
    };
    let pool = tierkv_pm::PmPool::open(pool, &options).unwrap();
    tierkv::fs::PmFs::open(pool, "test pool", tierkv::fs::PmFsOpen::Existing(identity)).unwrap()
}

/// FluidKV keeps its manifest in the pool (the paper's Manifest on PM): `CURRENT` in the
/// directory names it with the pool's path and the database's identity and design, no
/// manifest is in the directory, and the database reopens, checks and describes itself from
/// it. `pm.manifest_on_pm` moves it between opens (the old one is deleted); a `CURRENT` that
/// disagrees with the pool, a missing pool, a damaged manifest in the pool and a lost
/// `CURRENT` are reported, and `repair` finds the manifest in the pool again.
#[test]
fn the_manifest_lives_in_the_pool() {
    use tierkv::fs::FileSystem;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let pool = tmp.path().join("pools").join("fluid.pool");
    std::fs::create_dir_all(pool.parent().unwrap()).unwrap();
    let options = |on_pm: Option<bool>, path: bool| {
        let mut o = fluidkv(100);
        if on_pm.is_some() {
            o.pm.manifest_on_pm = on_pm;
        }
        o.pm.path = path.then(|| pool.clone());
        o
    };
    assert_eq!(options(None, true).manifest_tier(), Tier::Pm);
    let mut model = BTreeMap::new();
    let db = Db::open(&dir, options(None, true)).unwrap();
    load(&db, &mut model, 0, 3000);
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    load(&db, &mut model, 3000, 1000);
    // Every flush and compaction record went to the pool; the directory got only CURRENT.
    let s = db.stats();
    assert!(s.flushes > 0 && s.pm_written_manifest > 0, "{s:?}");
    assert!(s.ssd_written_manifest < 200, "{s:?}");
    db.close().unwrap();
    let current = std::fs::read_to_string(dir.join("CURRENT")).unwrap();
    let lines: Vec<&str> = current.lines().collect();
    assert!(lines[0].starts_with("pm:MANIFEST-"), "{current}");
    assert_eq!(lines[1], "design fluidkv");
    assert_eq!(lines[3], format!("pool {}", pool.display()));
    assert_eq!(directory_manifests(&dir), Vec::<String>::new());

    // Reopened without the pool's path: CURRENT gives it.
    let db = Db::open(&dir, options(None, false)).unwrap();
    assert_matches(&db, &model, 4000, "reopened from the manifest in the pool");
    db.close().unwrap();
    let created = Db::describe(&dir, &tierkv::fs::PosixFs).unwrap();
    assert!(created.manifest_on_pm);
    assert_eq!(created.design, "fluidkv");
    assert_eq!(created.pm_path.as_deref(), Some(pool.as_path()));
    let report = Db::check(&dir, options(None, false)).unwrap();
    assert!(report.tables_checked > 0, "{report:?}");

    // Moved to the directory and back; each open deletes the other tier's manifest.
    let db = Db::open(&dir, options(Some(false), false)).unwrap();
    load(&db, &mut model, 4000, 500);
    db.close().unwrap();
    let current = std::fs::read_to_string(dir.join("CURRENT")).unwrap();
    assert!(current.starts_with("MANIFEST-") && current.lines().count() == 1);
    assert_eq!(directory_manifests(&dir).len(), 1);
    assert!(
        !Db::describe(&dir, &tierkv::fs::PosixFs)
            .unwrap()
            .manifest_on_pm
    );
    let db = Db::open(&dir, options(Some(true), false)).unwrap();
    assert_matches(&db, &model, 4500, "manifest moved back to the pool");
    db.close().unwrap();
    assert_eq!(directory_manifests(&dir), Vec::<String>::new());
    let current = std::fs::read_to_string(dir.join("CURRENT")).unwrap();
    let manifest = current.lines().next().unwrap()["pm:".len()..].to_string();
    {
        let fs = open_pool(&pool, &current);
        let in_pool: Vec<String> = fs
            .list(&dir)
            .unwrap()
            .into_iter()
            .filter(|n| n.starts_with("MANIFEST-"))
            .collect();
        assert_eq!(in_pool, vec![manifest.clone()]);
    }

    // A design other than the one CURRENT names, before the pool is touched.
    let mut leveled_pm = Design::LEVELED_PM.options(Options::default());
    leveled_pm.pm.path = Some(pool.clone());
    let e = Db::open(&dir, leveled_pm).err().unwrap();
    assert!(
        matches!(&e, tierkv::Error::InvalidArgument(m) if m.contains("design")),
        "{e}"
    );
    // CURRENT naming another identity: the pool is refused as another database's.
    let other = current
        .lines()
        .map(|l| match l.strip_prefix("identity ") {
            Some(_) => format!("identity {:032x}", 0xfeed_u128),
            None => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    std::fs::write(dir.join("CURRENT"), &other).unwrap();
    let e = Db::open(&dir, options(None, false)).err().unwrap();
    assert!(e.to_string().contains("another database"), "{e}");
    // CURRENT naming a pool that is not there.
    let elsewhere = current.replace(
        &pool.display().to_string(),
        &tmp.path().join("gone.pool").display().to_string(),
    );
    std::fs::write(dir.join("CURRENT"), &elsewhere).unwrap();
    let e = Db::open(&dir, options(None, false)).err().unwrap();
    assert!(
        matches!(&e, tierkv::Error::NotFound(m) if m.contains("gone.pool")),
        "{e}"
    );
    std::fs::write(dir.join("CURRENT"), &current).unwrap();

    // A damaged manifest in the pool: corruption naming it, never a database with less.
    let original = {
        let fs = open_pool(&pool, &current);
        let path = dir.join(&manifest);
        let original = fs.read_all(&path).unwrap();
        let mut damaged = original.clone();
        damaged[10] ^= 0x40;
        fs.remove(&path).unwrap();
        let mut w = fs.create_log(&path).unwrap();
        w.append(&damaged).unwrap();
        w.sync().unwrap();
        original
    };
    let e = Db::open(&dir, options(None, false)).err().unwrap();
    assert!(
        matches!(&e, tierkv::Error::Corruption { location, .. }
            if location.contains(&manifest) && location.contains("PM pool")),
        "{e}"
    );
    {
        let fs = open_pool(&pool, &current);
        let path = dir.join(&manifest);
        fs.remove(&path).unwrap();
        let mut w = fs.create_log(&path).unwrap();
        w.append(&original).unwrap();
        w.sync().unwrap();
    }

    // A lost CURRENT: the directory holds no manifest or run, but its IDENTITY says it is a
    // database, so no new database is created over it; repair finds the manifest in the pool
    // and points CURRENT at it again.
    std::fs::remove_file(dir.join("CURRENT")).unwrap();
    let e = Db::open(&dir, options(None, true)).err().unwrap();
    assert!(
        e.is_corruption() && e.to_string().contains("no CURRENT file"),
        "{e}"
    );
    let repaired = Db::repair(&dir, options(None, true)).unwrap();
    assert!(repaired.changed, "{repaired:?}");
    assert!(repaired.manifest.contains(&manifest), "{repaired:?}");
    assert_eq!(
        std::fs::read_to_string(dir.join("CURRENT")).unwrap(),
        current
    );
    let db = Db::open(&dir, options(None, false)).unwrap();
    assert_matches(&db, &model, 4500, "after repair");
    db.close().unwrap();
    let unchanged = Db::repair(&dir, options(None, false)).unwrap();
    assert!(!unchanged.changed, "{unchanged:?}");
}

/// A pool too small for the data: flushes and compactions that find no room write their runs
/// to the SSD (a compaction whose inputs could not fit goes there at once, one that fills the
/// pool runs again with its outputs there) instead of failing, so every
/// write succeeds and the database is not poisoned; it reads back whole, reopens, passes
/// `check`, and no table file is left that its version does not name.
#[test]
fn a_full_pool_sends_compactions_to_the_ssd() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = fluidkv(50);
    o.pm.size_bytes = 16 * (64 << 10);
    let n = 40_000;
    let mut model = BTreeMap::new();
    {
        let db = Db::open(dir.path(), o.clone()).unwrap();
        load(&db, &mut model, 0, n);
        db.flush().unwrap();
        db.wait_for_background_work().unwrap();
        let s = db.stats();
        assert!(
            s.pm_compaction_fallbacks > 0,
            "compactions went to SSD: {s:?}"
        );
        // Once the StableStore outgrew the pool, the compactions went to the SSD at the start,
        // without filling the pool first.
        assert!(
            s.pm_compaction_retries < s.pm_compaction_fallbacks,
            "{} of {} compactions filled the pool first",
            s.pm_compaction_retries,
            s.pm_compaction_fallbacks
        );
        let ssd_tables: usize = s.levels.iter().map(|l| l.files).sum::<usize>()
            - s.pm_levels.iter().map(|l| l.files).sum::<usize>();
        assert!(ssd_tables > 0, "{s:?}");
        assert_matches(&db, &model, n, "full pool");
        // Still writable.
        load(&db, &mut model, n, 1000);
    }
    let db = Db::open(dir.path(), o.clone()).unwrap();
    assert_matches(&db, &model, n + 1000, "reopened");
    // The files the SSD's runs read (a run made of part of a file reads that file).
    let ssd_tables = db
        .live_tables()
        .iter()
        .filter(|t| t.tier == Tier::Ssd)
        .map(|t| t.backing.unwrap_or(t.number))
        .collect::<std::collections::BTreeSet<u64>>()
        .len();
    drop(db);
    let on_disk = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".sst")
        })
        .count();
    assert_eq!(on_disk, ssd_tables, "no orphan table on the SSD");
    Db::check(dir.path(), o).unwrap();
}

/// The `.sst` files in the pool of the closed database in `dir`.
fn pool_tables(dir: &std::path::Path, pool: &std::path::Path) -> usize {
    use tierkv::fs::FileSystem;
    let current = std::fs::read_to_string(dir.join("CURRENT")).unwrap();
    open_pool(pool, &current)
        .list(dir)
        .unwrap()
        .iter()
        .filter(|n| n.ends_with(".sst"))
        .count()
}

/// `fluidkv(500)` for the StableStore tests: compactions only when asked for (8 buffer trees
/// before an automatic one, the load detector off), 512 KiB tables.
fn stable_options() -> Options {
    let mut o = fluidkv(500);
    o.compaction.load_aware = false;
    o.compaction.level0_compaction_trigger = 8;
    o.compaction.target_file_size = 512 << 10;
    o
}

/// Writes key `k{i:06}` with a value of about 100 bytes tagged `tag` into `db` and `model`.
fn put_stable(db: &Db, model: &mut BTreeMap<Vec<u8>, Vec<u8>>, i: u64, tag: &str) {
    let (k, v) = (format!("k{i:06}"), format!("{tag}-{i}-{}", "v".repeat(90)));
    db.put(k.as_bytes(), v.as_bytes()).unwrap();
    model.insert(k.into_bytes(), v.into_bytes());
}

/// Writes keys 0..8000 in a scattered order (so that the buffer trees overlap and merge into
/// full runs) and compacts them into the StableStore.
fn fill_stable_store(db: &Db, model: &mut BTreeMap<Vec<u8>, Vec<u8>>) {
    for j in 0..8000 {
        put_stable(db, model, j * 7919 % 8000, "first");
    }
    db.compact_range(None, None).unwrap();
}

/// The number of a key `k{i:06}`.
fn key_index(k: &[u8]) -> u64 {
    std::str::from_utf8(&k[1..]).unwrap().parse().unwrap()
}

/// Reuse per logical sorted table (`compaction.reuse_untouched_tables`): a buffer tree whose
/// keys fall into a few LSTs of a StableStore run leaves that run's other LSTs in place, as
/// runs reading part of the old file, and the compaction writes a fraction of what it writes
/// with the option off. Contents, a snapshot taken before, `check` and a reopen agree either
/// way; once every key is rewritten no run reads the old file and it is gone from the pool.
#[test]
fn compactions_keep_the_tables_no_new_key_falls_into() {
    let put = put_stable;
    let mut written = Vec::new();
    for tables in [true, false] {
        let tmp = tempfile::tempdir().unwrap();
        let (dir, pool) = (tmp.path().join("db"), tmp.path().join("pool"));
        let mut o = stable_options();
        o.pm.path = Some(pool.clone());
        o.compaction.reuse_untouched_tables = tables;
        let db = Db::open(&dir, o.clone()).unwrap();
        let mut model = BTreeMap::new();
        fill_stable_store(&db, &mut model);
        let stable = db.live_tables();
        assert!(stable.iter().all(|t| t.group == 1 && t.backing.is_none()));
        // A hot range: 20 keys in a few LSTs of one run.
        let snapshot = db.snapshot();
        let old_model = model.clone();
        for i in (4000..4200).step_by(10) {
            put(&db, &mut model, i, "hot");
        }
        db.flush().unwrap();
        let before = compaction_written(&db);
        db.compact_range(None, None).unwrap();
        written.push(compaction_written(&db) - before);
        let parts: Vec<_> = db
            .live_tables()
            .into_iter()
            .filter(|t| t.backing.is_some())
            .collect();
        if tables {
            assert!(!parts.is_empty(), "{:?}", db.live_tables());
            assert!(db.stats().reused_table_bytes > 0);
            for p in &parts {
                let b = p.backing.unwrap();
                assert!(stable.iter().any(|t| t.number == b), "{b} was a run");
                assert!(p.entries > 0 && p.smallest_key <= p.largest_key);
            }
        } else {
            assert!(parts.is_empty());
            assert_eq!(db.stats().reused_table_bytes, 0);
        }
        assert_matches(&db, &model, 0, &format!("tables {tables}"));
        let ro = ReadOptions {
            snapshot: Some(snapshot.clone()),
            ..ReadOptions::default()
        };
        for i in (3900..4300).step_by(3) {
            let k = format!("k{i:06}").into_bytes();
            assert_eq!(
                db.get_with(&ro, &k).unwrap().as_ref(),
                old_model.get(&k),
                "snapshot, key {i}"
            );
        }
        drop((ro, snapshot));
        // A second hot range, next to the first: parts of parts.
        for i in (4300..4500).step_by(10) {
            put(&db, &mut model, i, "warm");
        }
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
        assert_matches(&db, &model, 0, &format!("tables {tables}, second range"));
        db.close().unwrap();
        Db::check(&dir, o.clone()).unwrap();
        let db = Db::open(&dir, o.clone()).unwrap();
        assert_matches(&db, &model, 0, &format!("tables {tables}, reopened"));
        // Every key rewritten: no run reads an old file, and no file no run reads stays in
        // the pool (parts of the new runs may be reused by the later compactions).
        for i in 0..8000 {
            put(&db, &mut model, i, "last");
        }
        db.compact_range(None, None).unwrap();
        let live = db.live_tables();
        let files: std::collections::BTreeSet<u64> =
            live.iter().map(|t| t.backing.unwrap_or(t.number)).collect();
        assert!(
            stable.iter().all(|t| !files.contains(&t.number)),
            "{live:?}"
        );
        assert_matches(&db, &model, 0, &format!("tables {tables}, rewritten"));
        db.close().unwrap();
        assert_eq!(
            pool_tables(&dir, &pool),
            files.len(),
            "no orphan in the pool: {files:?}"
        );
        Db::check(&dir, o).unwrap();
    }
    assert!(
        written[0] * 3 < written[1],
        "per-LST reuse wrote {} bytes, whole runs {}",
        written[0],
        written[1]
    );
}

/// New keys scattered one per few LSTs: keeping every untouched stretch would cut the merge's
/// output into pieces of about one LST, each a file taking a whole pool chunk. With the
/// default `compaction.reuse_min_gap_bytes` (the chunk size) the compaction merges those
/// stretches instead and leaves far fewer runs; with no minimum it keeps them all. The
/// contents agree either way.
#[test]
fn scattered_keys_do_not_cut_the_stablestore_into_slivers() {
    let mut runs = Vec::new();
    for min_gap in [None, Some(0)] {
        let tmp = tempfile::tempdir().unwrap();
        let mut o = stable_options();
        o.compaction.reuse_min_gap_bytes = min_gap;
        let db = Db::open(tmp.path(), o.clone()).unwrap();
        let mut model = BTreeMap::new();
        fill_stable_store(&db, &mut model);
        let mut put = |i: u64, tag: &str| put_stable(&db, &mut model, i, tag);
        // One key every 1000: one touched LST in about every eight.
        for i in (500..8000).step_by(1000) {
            put(i, "scattered");
        }
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
        let live = db.live_tables();
        let parts = live.iter().filter(|t| t.backing.is_some()).count();
        runs.push((live.len(), parts));
        assert_matches(&db, &model, 0, &format!("min gap {min_gap:?}"));
        db.close().unwrap();
        Db::check(tmp.path(), o).unwrap();
    }
    let ((default_runs, default_parts), (all_runs, all_parts)) = (runs[0], runs[1]);
    assert!(all_parts >= 6, "every stretch kept: {runs:?}");
    assert!(
        default_parts * 3 <= all_parts && default_runs * 2 <= all_runs,
        "the default keeps few stretches: {runs:?}"
    );
}

/// A file is freed only whole, so a run made of part of it holds all of it. A compaction that
/// merges most of a split file also merges the file's small untouched part, so that the file is
/// freed; the part's keys read the same, and the pool holds only the files runs read.
#[test]
fn a_file_stays_only_while_half_of_it_is_in_use() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, pool) = (tmp.path().join("db"), tmp.path().join("pool"));
    let mut o = stable_options();
    o.pm.path = Some(pool.clone());
    o.compaction.reuse_min_gap_bytes = Some(0);
    let db = Db::open(&dir, o.clone()).unwrap();
    let mut model = BTreeMap::new();
    fill_stable_store(&db, &mut model);
    let mut put = |i: u64, tag: &str| put_stable(&db, &mut model, i, tag);
    let first = db.live_tables()[0].clone();
    let (lo, hi) = (
        key_index(&first.smallest_key),
        key_index(&first.largest_key),
    );
    assert!(hi - lo > 2000, "{first:?}");
    // A hot range a quarter into the first run: it splits into a part before the range and
    // one after it.
    let quarter = lo + (hi - lo) / 4;
    for i in (quarter..quarter + 40).step_by(10) {
        put(i, "hot");
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let reading = |db: &Db| -> Vec<tierkv::LiveTable> {
        db.live_tables()
            .into_iter()
            .filter(|t| t.backing == Some(first.number) || t.number == first.number)
            .collect()
    };
    let parts = reading(&db);
    assert!(
        parts.len() == 2 && parts.iter().all(|p| p.backing.is_some()),
        "{parts:?}"
    );
    assert_eq!(db.stats().reclaimed_runs, 0);
    // Every key after the hot range rewritten: the part before it is untouched, but the file
    // would stay for about a quarter of it, so the compaction merges that part too.
    for i in quarter + 40..=hi {
        put(i, "later");
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    assert!(reading(&db).is_empty(), "{:?}", db.live_tables());
    assert!(db.stats().reclaimed_runs >= 1);
    assert_matches(&db, &model, 0, "reclaimed");
    db.close().unwrap();
    let files: std::collections::BTreeSet<u64> = Db::open(&dir, o.clone())
        .unwrap()
        .live_tables()
        .iter()
        .map(|t| t.backing.unwrap_or(t.number))
        .collect();
    assert!(!files.contains(&first.number));
    assert_eq!(pool_tables(&dir, &pool), files.len(), "{files:?}");
    Db::check(&dir, o).unwrap();
}

/// A file in the pool takes whole chunks. A compaction cuts a table in the pool where the
/// finished file (entries, index, footer) still fits the chunks `compaction.target_file_size`
/// takes, not at that many bytes of entries, which would spill the index into one chunk
/// more; the full tables fill most of those chunks.
#[test]
fn compaction_outputs_fit_their_pool_chunks() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, pool) = (tmp.path().join("db"), tmp.path().join("pool"));
    let mut o = fluidkv(500);
    o.pm.path = Some(pool.clone());
    o.compaction.load_aware = false;
    let db = Db::open(&dir, o.clone()).unwrap();
    let mut model = BTreeMap::new();
    load(&db, &mut model, 0, 20_000);
    db.compact_range(None, None).unwrap();
    assert_matches(&db, &model, 20_000, "fit");
    let tables: Vec<tierkv::LiveTable> = db
        .live_tables()
        .into_iter()
        .filter(|t| t.tier == Tier::Pm && t.group == 1 && t.backing.is_none())
        .collect();
    db.close().unwrap();
    let current = std::fs::read_to_string(dir.join("CURRENT")).unwrap();
    let fs = open_pool(&pool, &current);
    // `fluidkv(..)`: 128 KiB tables in 64 KiB chunks.
    let budget = 2 * fs.data_per_chunk();
    drop(fs);
    assert!(tables.len() >= 5, "{tables:?}");
    for t in &tables {
        assert!(t.file_size <= budget, "{} > {budget}: {t:?}", t.file_size);
    }
    let full = tables
        .iter()
        .filter(|t| t.file_size * 10 >= budget * 9)
        .count();
    assert!(2 * full >= tables.len(), "few full tables: {tables:?}");
    Db::check(&dir, o).unwrap();
}

/// `check` reads the file that runs made of parts of it read (once, however many parts it
/// has), so a damaged byte in such a file is reported, naming it. The StableStore is on the
/// SSD here (a pool too small for it), where the file can be damaged from outside.
#[test]
fn check_reports_damage_in_a_file_only_parts_read() {
    let tmp = tempfile::tempdir().unwrap();
    let mut o = stable_options();
    o.pm.size_bytes = 16 * (64 << 10);
    o.compaction.reuse_min_gap_bytes = Some(0);
    let db = Db::open(tmp.path(), o.clone()).unwrap();
    let mut model = BTreeMap::new();
    fill_stable_store(&db, &mut model);
    // A hot range in the middle of the first run.
    let first = db.live_tables()[0].clone();
    assert_eq!(first.tier, Tier::Ssd, "{first:?}");
    let mid = (key_index(&first.smallest_key) + key_index(&first.largest_key)) / 2;
    for i in (mid..mid + 40).step_by(10) {
        put_stable(&db, &mut model, i, "hot");
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let parts: Vec<tierkv::LiveTable> = db
        .live_tables()
        .into_iter()
        .filter(|t| t.backing.is_some() && t.tier == Tier::Ssd)
        .collect();
    let backing = parts
        .first()
        .and_then(|p| p.backing)
        .expect("parts on the SSD");
    assert!(
        parts.iter().filter(|p| p.backing == Some(backing)).count() >= 2,
        "{parts:?}"
    );
    db.close().unwrap();
    Db::check(tmp.path(), o.clone()).unwrap();
    let name = format!("{backing:06}.sst");
    let path = tmp.path().join(&name);
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes.len() / 3;
    bytes[at] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();
    let e = Db::check(tmp.path(), o).unwrap_err();
    assert!(e.is_corruption() && e.to_string().contains(&name), "{e}");
}
