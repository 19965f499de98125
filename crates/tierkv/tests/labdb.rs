//! LAB-DB (`labdb`): what its L0 trees must do beyond the model and crash tests that every
//! design runs: updates in place, tree switches and chunked compaction, versions held for
//! snapshots across an in-place update, value arrays freed, a damaged value record reported,
//! and `check`.

mod support;

use std::collections::BTreeMap;
use tierkv::fs::{FileSystem, MemFs};
use tierkv::{Db, Design, Options, ReadOptions};

fn key(i: u64) -> Vec<u8> {
    format!("key{:05}", i).into_bytes()
}

fn open(env: &support::Env) -> Db {
    Db::open("/db", support::tiny_options(env)).unwrap()
}

fn scan(db: &Db, read: &ReadOptions) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = db.iter(read).unwrap();
    it.seek_to_first();
    rest_of(&mut it)
}

/// The entries from the iterator's position to its end (its status checked).
fn rest_of(it: &mut tierkv::DbIterator) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().unwrap();
    out
}

/// Rounds of updates over a small key space: flushes update keys in place, the mutable tree
/// fills its share of the leaf region and becomes immutable, chunks move into L1, old value
/// arrays go; every read agrees with a model, before and after reopening.
#[test]
fn updates_in_place_switch_trees_and_compact_chunks() {
    let env = support::Env::new(Design::LABDB);
    let mut model = BTreeMap::new();
    let mut db = open(&env);
    for round in 0..12u64 {
        for i in 0..150u64 {
            let k = key((i * 7 + round) % 300);
            let v = format!("v{round}-{i}-{}", "x".repeat((i % 40) as usize)).into_bytes();
            if i % 17 == 5 {
                db.delete(&k).unwrap();
                model.remove(&k);
            } else {
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
        }
        db.flush().unwrap();
        if round == 6 {
            db.close().unwrap();
            db = open(&env);
        }
    }
    db.wait_for_background_work().unwrap();
    let stats = db.stats();
    let lab = stats.labdb.expect("labdb figures");
    assert!(lab.in_place_updates > 0, "{lab:?}");
    assert!(lab.inserts > 0, "{lab:?}");
    assert!(lab.switches > 0, "{lab:?}");
    assert!(lab.chunks > 0, "{lab:?}");
    assert!(lab.file_scan_chunks > 0, "{lab:?}");
    assert!(lab.pm_bytes > 0 && lab.dram_bytes > 0, "{lab:?}");
    // The trees' PM and the value arrays count as the database's live bytes.
    assert!(stats.pm_live_bytes() >= lab.pm_bytes, "{lab:?}");
    assert!(stats.ssd_live_bytes() >= lab.value_bytes, "{lab:?}");
    assert!(
        stats.levels[1].files > 0,
        "nothing reached L1: {:?}",
        stats.levels
    );
    let want: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(scan(&db, &ReadOptions::default()), want);
    for i in 0..300 {
        let k = key(i);
        assert_eq!(db.get(&k).unwrap(), model.get(&k).cloned());
    }
    // Value arrays whose every entry was replaced or compacted are deleted: far fewer remain
    // than the flushes that wrote one.
    let vla = env
        .ssd
        .list(std::path::Path::new("/db"))
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".vla"))
        .count();
    assert!(
        (vla as u64) < stats.flushes,
        "{vla} value arrays after {} flushes",
        stats.flushes
    );
    db.close().unwrap();
    let db = open(&env);
    assert_eq!(scan(&db, &ReadOptions::default()), want);
    let report = Db::check("/db", support::tiny_options(&env)).err();
    assert!(
        report.is_some_and(|e| e.to_string().contains("in use")),
        "check must refuse an open database"
    );
    db.close().unwrap();
    let report = Db::check("/db", support::tiny_options(&env)).unwrap();
    assert!(report.entries_checked > 0);
}

/// A snapshot taken before a flush replaces a key in place still reads the old version, by
/// get and by iterator; the held version is forgotten once the snapshot goes.
#[test]
fn snapshot_sees_the_version_an_in_place_update_replaced() {
    let env = support::Env::new(Design::LABDB);
    let db = open(&env);
    db.put(b"a", b"old-a").unwrap();
    db.put(b"b", b"old-b").unwrap();
    db.flush().unwrap();
    let snap = db.snapshot();
    db.put(b"a", b"new-a").unwrap();
    db.delete(b"b").unwrap();
    db.put(b"c", b"new-c").unwrap();
    db.flush().unwrap();
    let lab = db.stats().labdb.unwrap();
    assert!(lab.in_place_updates >= 2, "{lab:?}");
    assert!(lab.held_versions >= 2, "{lab:?}");
    let at = ReadOptions {
        snapshot: Some(snap.clone()),
        ..ReadOptions::default()
    };
    assert_eq!(
        db.get_with(&at, b"a").unwrap().as_deref(),
        Some(&b"old-a"[..])
    );
    assert_eq!(
        db.get_with(&at, b"b").unwrap().as_deref(),
        Some(&b"old-b"[..])
    );
    assert_eq!(db.get_with(&at, b"c").unwrap(), None);
    assert_eq!(
        scan(&db, &at),
        vec![
            (b"a".to_vec(), b"old-a".to_vec()),
            (b"b".to_vec(), b"old-b".to_vec())
        ]
    );
    let now = ReadOptions::default();
    assert_eq!(
        db.get_with(&now, b"a").unwrap().as_deref(),
        Some(&b"new-a"[..])
    );
    assert_eq!(db.get_with(&now, b"b").unwrap(), None);
    drop(snap);
    drop(at);
    // The next flush's upkeep forgets what no snapshot needs.
    db.put(b"d", b"d").unwrap();
    db.flush().unwrap();
    let mut held = db.stats().labdb.unwrap().held_versions;
    for _ in 0..100 {
        if held == 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        held = db.stats().labdb.unwrap().held_versions;
    }
    assert_eq!(held, 0);
    assert_eq!(
        scan(&db, &now),
        vec![
            (b"a".to_vec(), b"new-a".to_vec()),
            (b"c".to_vec(), b"new-c".to_vec()),
            (b"d".to_vec(), b"d".to_vec())
        ]
    );
}

/// An iterator opened before the immutable tree is compacted away reads its own state to the
/// end, while writes switch trees and compact chunks under it.
#[test]
fn iterator_outlives_chunk_compactions_and_tree_resets() {
    let env = support::Env::new(Design::LABDB);
    let db = open(&env);
    let mut want = Vec::new();
    for i in 0..200u64 {
        let v = format!("first-{i}").into_bytes();
        db.put(&key(i), &v).unwrap();
        want.push((key(i), v));
    }
    db.flush().unwrap();
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    it.seek_to_first();
    for round in 0..8u64 {
        for i in 0..200u64 {
            db.put(&key(i), format!("r{round}-{i}").as_bytes()).unwrap();
        }
        db.flush().unwrap();
    }
    db.wait_for_background_work().unwrap();
    assert!(db.stats().labdb.unwrap().chunks > 0);
    assert_eq!(rest_of(&mut it), want);
}

/// An iterator pinned to a snapshot, opened while its tree held versions for that snapshot,
/// still finds them after the tree was compacted into L1 and its root reset (the tree
/// retired): a retired tree's held versions are forgotten only after its last reader.
#[test]
fn snapshot_iterator_keeps_held_versions_of_a_retired_tree() {
    let env = support::Env::new(Design::LABDB);
    let mut opts = support::tiny_options(&env);
    // Both flushes go into one tree: it switches only when compact_range asks.
    opts.labdb.leaf_region_bytes = 4 << 20;
    let db = Db::open("/db", opts).unwrap();
    let mut want = Vec::new();
    for i in 0..200u64 {
        let v = format!("first-{i}").into_bytes();
        db.put(&key(i), &v).unwrap();
        want.push((key(i), v));
    }
    db.flush().unwrap();
    let snap = db.snapshot();
    for i in 0..200u64 {
        db.put(&key(i), format!("second-{i}").as_bytes()).unwrap();
    }
    db.flush().unwrap();
    let lab = db.stats().labdb.unwrap();
    assert!(lab.held_versions >= 200, "{lab:?}");
    let at = ReadOptions {
        snapshot: Some(snap),
        ..ReadOptions::default()
    };
    let mut it = db.iter(&at).unwrap();
    it.seek_to_first();
    // The tree of both flushes becomes immutable and is compacted; then the next switch
    // resets its root.
    db.compact_range(None, None).unwrap();
    db.put(b"zz", b"later").unwrap();
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    assert!(db.stats().labdb.unwrap().switches >= 2);
    assert_eq!(rest_of(&mut it), want);
}

/// Options for the log tests: trees large enough that nothing switches or compacts (so the
/// only SSD writes are the log's and the flushes'), the log's mode as given.
fn log_options(env: &support::Env, split_log: bool) -> Options {
    let mut o = support::tiny_options(env);
    o.labdb.leaf_region_bytes = 4 << 20;
    o.labdb.split_log = split_log;
    o
}

/// SSD bytes the flushes wrote (stage 0), and SSD bytes the log wrote (the front end).
fn flush_and_log_ssd_bytes(db: &Db) -> (u64, u64) {
    let stats = db.stats();
    let flush = stats
        .io
        .iter()
        .filter(|x| x.tier == tierkv::Tier::Ssd && x.stage == Some(0) && x.purpose == "flush")
        .map(|x| x.written)
        .sum();
    let log = stats
        .io
        .iter()
        .filter(|x| x.tier == tierkv::Tier::Ssd && x.purpose == "wal")
        .map(|x| x.written)
        .sum();
    (flush, log)
}

/// The paper's log: values go to SSD once, into the value array of the memtable's log, and a
/// flush writes only addresses into the tree; the PM WAL buffer's halves drain as they fill.
/// Without it (`split_log = false`, the B+-tree-only variant) each flush writes the values
/// again.
#[test]
fn split_log_writes_values_once() {
    let mut ssd_bytes = Vec::new();
    for split_log in [true, false] {
        let env = support::Env::new(Design::LABDB);
        let db = Db::open("/db", log_options(&env, split_log)).unwrap();
        let mut want = BTreeMap::new();
        for i in 0..300u64 {
            let v = format!("{i:04}-{}", "v".repeat(200)).into_bytes();
            db.put(&key(i % 120), &v).unwrap();
            want.insert(key(i % 120), v);
        }
        db.flush().unwrap();
        let (flush, log) = flush_and_log_ssd_bytes(&db);
        let lab = db.stats().labdb.unwrap();
        assert!(lab.in_place_updates > 0, "{lab:?}");
        if split_log {
            assert_eq!(flush, 0, "a flush wrote values again");
            assert!(log >= 300 * 205, "the log wrote {log} bytes");
            assert!(lab.log_drains > 0, "{lab:?}");
        } else {
            assert!(flush >= 120 * 205, "the flushes wrote {flush} bytes");
            assert_eq!(lab.log_drains, 0, "{lab:?}");
        }
        ssd_bytes.push(flush + log);
        assert_eq!(
            scan(&db, &ReadOptions::default()),
            want.clone().into_iter().collect::<Vec<_>>()
        );
        db.close().unwrap();
        let db = Db::open("/db", log_options(&env, split_log)).unwrap();
        for (k, v) in &want {
            assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
        }
        db.close().unwrap();
        let report = Db::check("/db", log_options(&env, split_log)).unwrap();
        assert!(report.entries_checked > 0, "{report:?}");
    }
    assert!(
        ssd_bytes[0] < ssd_bytes[1],
        "SSD bytes with the split log {} and without {}",
        ssd_bytes[0],
        ssd_bytes[1]
    );
}

/// A write is durable once it is in the PM WAL buffer: a power failure that loses every
/// unsynced SSD byte loses no acknowledged write, although none was synced. Without the
/// buffer (the WAL on SSD, not synced) the same failure loses the unflushed writes.
#[test]
fn writes_are_durable_in_the_pm_wal_buffer() {
    for split_log in [true, false] {
        let env = support::Env::new(Design::LABDB);
        let db = Db::open("/db", log_options(&env, split_log)).unwrap();
        for i in 0..400u64 {
            db.put(&key(i), format!("value-{i}").as_bytes()).unwrap();
        }
        // Power fails now: the SSD keeps only what was synced, the pool what was persisted.
        let img = env.crash(tierkv::fs::CrashMode::SyncedOnly);
        drop(db);
        let after = support::Env::from_image(Design::LABDB, &img);
        let db = Db::open("/db", log_options(&after, split_log)).unwrap();
        let found = (0..400u64)
            .filter(|&i| db.get(&key(i)).unwrap().is_some())
            .count();
        if split_log {
            assert_eq!(found, 400, "acknowledged writes lost");
            for i in 0..400u64 {
                assert_eq!(
                    db.get(&key(i)).unwrap(),
                    Some(format!("value-{i}").into_bytes())
                );
            }
        } else {
            assert!(found < 400, "an unsynced SSD WAL kept everything");
        }
        db.close().unwrap();
    }
}

/// A value read from a tree goes through the block cache: reading the same value again
/// reads nothing more from the SSD (and does, with no cache).
#[test]
fn value_reads_share_the_block_cache() {
    for cache in [64 << 10, 0] {
        let env = support::Env::new(Design::LABDB);
        let mut opts = log_options(&env, true);
        opts.block_cache_bytes = cache;
        let db = Db::open("/db", opts).unwrap();
        for i in 0..50u64 {
            db.put(&key(i), format!("value-{i}").as_bytes()).unwrap();
        }
        db.flush().unwrap();
        let read = |db: &Db| {
            db.stats()
                .stage_bytes_read(0, tierkv::Tier::Ssd, tierkv::stats::IoPurpose::UserRead)
        };
        assert_eq!(db.get(&key(7)).unwrap(), Some(b"value-7".to_vec()));
        let first = read(&db);
        assert!(first > 0, "the first read went to the SSD");
        assert_eq!(db.get(&key(7)).unwrap(), Some(b"value-7".to_vec()));
        // Another key whose record is in the same page.
        assert_eq!(db.get(&key(8)).unwrap(), Some(b"value-8".to_vec()));
        if cache > 0 {
            assert_eq!(read(&db), first, "cached values were read again");
        } else {
            assert!(read(&db) > first);
        }
        db.close().unwrap();
    }
}

/// A damaged value record is reported as corruption naming its value array, never returned.
#[test]
fn damaged_value_record_is_corruption() {
    let env = support::Env::new(Design::LABDB);
    let db = open(&env);
    db.put(b"k", b"the value").unwrap();
    db.flush().unwrap();
    db.close().unwrap();
    let dir = std::path::Path::new("/db");
    let vla = env
        .ssd
        .list(dir)
        .unwrap()
        .into_iter()
        .find(|n| n.ends_with(".vla"))
        .expect("a value array");
    let path = dir.join(&vla);
    let mut bytes = read_all(&env.ssd, &path);
    let last = bytes.len() - 2;
    bytes[last] ^= 0x40;
    write_all(&env.ssd, &path, &bytes);
    let db = open(&env);
    let err = db.get(b"k").unwrap_err();
    assert!(err.is_corruption(), "{err}");
    assert!(err.to_string().contains(&vla), "{err}");
}

fn read_all(fs: &MemFs, path: &std::path::Path) -> Vec<u8> {
    let f = fs.open_readable(path).unwrap();
    let mut b = vec![0u8; f.size() as usize];
    f.read_exact_at(0, &mut b).unwrap();
    b
}

fn write_all(fs: &MemFs, path: &std::path::Path, bytes: &[u8]) {
    fs.remove(path).unwrap();
    let mut f = fs.create(path).unwrap();
    f.append(bytes).unwrap();
    f.sync().unwrap();
}

/// The design refuses to run with automatic compactions off (its trees would fill for good).
#[test]
fn needs_automatic_compactions() {
    let env = support::Env::new(Design::LABDB);
    let mut o: Options = support::tiny_options(&env);
    o.compaction.disable_auto_compactions = true;
    assert!(Db::open("/db", o).is_err());
}

/// Switch after switch, the trees' PM goes back to the pool: retired trees are freed once no
/// reader holds them, so a small pool never fills.
#[test]
fn retired_trees_give_their_pm_back() {
    let env = support::Env::new(Design::LABDB);
    let mut o = support::tiny_options(&env);
    o.labdb.leaf_region_bytes = 4 << 10;
    o.labdb.immutable_at = 0.2;
    o.labdb.chunk_bytes = 1 << 10;
    o.pm.wal_on_pm = true;
    let db = Db::open("/db", o).unwrap();
    let mut peak = 0;
    for round in 0..200u64 {
        for i in 0..16u64 {
            db.put(&key(i), format!("r{round}").as_bytes()).unwrap();
        }
        db.flush().unwrap();
        if round % 10 == 0 {
            db.compact_range(None, None).unwrap();
        }
        let s = db.stats();
        peak = peak.max(s.pm.as_ref().unwrap().bytes_allocated);
    }
    db.wait_for_background_work().unwrap();
    let s = db.stats();
    let lab = s.labdb.unwrap();
    assert!(lab.switches > 20, "{lab:?}");
    let chunk = 64 << 10;
    assert!(peak <= 8 * chunk, "peak PM allocation {peak} bytes");
}

/// `compact_range` compacts both trees whole into the levels: the immutable tree, then the
/// mutable one once the flush thread switched it.
#[test]
fn compact_range_empties_both_trees() {
    let env = support::Env::new(Design::LABDB);
    let db = open(&env);
    for i in 0..120u64 {
        db.put(&key(i), format!("v{i}").as_bytes()).unwrap();
    }
    db.flush().unwrap();
    let before = db.stats().labdb.unwrap();
    assert!(before.mutable_keys > 0, "{before:?}");
    db.compact_range(None, None).unwrap();
    let after = db.stats().labdb.unwrap();
    assert_eq!(
        (after.mutable_keys, after.immutable_tree),
        (0, 0),
        "{after:?}"
    );
    assert!(after.switches > before.switches, "{after:?}");
    let stats = db.stats();
    assert!(
        stats.levels[1..].iter().any(|l| l.files > 0),
        "{:?}",
        stats.levels
    );
    for i in 0..120u64 {
        assert_eq!(db.get(&key(i)).unwrap(), Some(format!("v{i}").into_bytes()));
    }
}

/// An iterator without a snapshot reads the state of its creation even where a flush then
/// updates the tree in place before the iterator reaches the key (it pins its sequence as a
/// snapshot, so the replaced version is held for it).
#[test]
fn iterator_without_snapshot_keeps_a_version_updated_in_place_after_it_opened() {
    let env = support::Env::new(Design::LABDB);
    let mut o = support::tiny_options(&env);
    // A region the keys fill far below the switch point: the second flush updates in place.
    o.labdb.leaf_region_bytes = 1 << 20;
    let db = Db::open("/db", o).unwrap();
    for i in 0..100u64 {
        db.put(&key(i), b"old").unwrap();
    }
    db.flush().unwrap();
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    for i in 0..100u64 {
        db.put(&key(i), b"new").unwrap();
    }
    db.flush().unwrap();
    let lab = db.stats().labdb.unwrap();
    assert!(lab.in_place_updates >= 100 && lab.switches == 0, "{lab:?}");
    it.seek_to_first();
    let got = rest_of(&mut it);
    assert_eq!(got.len(), 100);
    assert!(got.iter().all(|(_, v)| v == b"old"), "{got:?}");
}

/// Keys flushed often get a hot slot in PM: their entries name the slot, updated in place at
/// each flush; a snapshot still reads the version it saw (its half is not overwritten while
/// the snapshot needs it); reads, scans, a reopen and `check` agree with a model; slots of keys
/// that left the trees are freed and reused.
#[test]
fn hot_keys_live_in_pm_slots_updated_in_place() {
    let env = support::Env::new(Design::LABDB);
    let mut o = support::tiny_options(&env);
    // No tree switch: every flush updates the same tree.
    o.labdb.leaf_region_bytes = 1 << 20;
    let mut model = BTreeMap::new();
    let mut db = Db::open("/db", o.clone()).unwrap();
    for i in 0..40u64 {
        db.put(&key(i), b"cold").unwrap();
        model.insert(key(i), b"cold".to_vec());
    }
    db.flush().unwrap();
    let mut snap = None;
    let mut at_snap = BTreeMap::new();
    for round in 0..8u64 {
        for i in 0..8u64 {
            let v = format!("hot-{round}-{i}").into_bytes();
            if round == 7 && i == 7 {
                db.delete(&key(i)).unwrap();
                model.remove(&key(i));
            } else {
                db.put(&key(i), &v).unwrap();
                model.insert(key(i), v);
            }
        }
        db.flush().unwrap();
        if round == 3 {
            snap = Some(db.snapshot());
            at_snap = model.clone();
        }
    }
    let lab = db.stats().labdb.unwrap();
    assert!(lab.hot_slots >= 8 && lab.hot_slots < 40, "{lab:?}");
    assert!(lab.hot_writes >= 8 * 5, "{lab:?}");
    assert!(lab.hot_pm_bytes > 0, "{lab:?}");
    let want: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(scan(&db, &ReadOptions::default()), want);
    for (k, v) in &model {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
    }
    // A hot key's newest version is a tombstone in its slot.
    assert_eq!(db.get(&key(7)).unwrap(), None);
    let at = ReadOptions {
        snapshot: snap.clone(),
        ..ReadOptions::default()
    };
    for (k, v) in &at_snap {
        assert_eq!(db.get_with(&at, k).unwrap().as_ref(), Some(v), "{k:?}");
    }
    let want_snap: Vec<_> = at_snap
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert_eq!(scan(&db, &at), want_snap);
    drop(at);
    drop(snap);
    // While the snapshot lived, the flushes after the next one could not overwrite the half
    // it needed: those versions went to the tree as value addresses. Now they go to the slots
    // again, once the versions live when the held versions were forgotten are released (an
    // iterator may have copied them): within a few flushes.
    let before = db.stats().labdb.unwrap().hot_writes;
    for round in 8..12u64 {
        for i in 0..7u64 {
            let v = format!("hot-{round}-{i}").into_bytes();
            db.put(&key(i), &v).unwrap();
            model.insert(key(i), v);
        }
        db.flush().unwrap();
    }
    assert!(db.stats().labdb.unwrap().hot_writes >= before + 7);
    let want: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    // Reopened: the trees' entries claim their slots again.
    db.close().unwrap();
    let report = Db::check("/db", o.clone()).unwrap();
    assert!(report.entries_checked >= 40, "{report:?}");
    db = Db::open("/db", o.clone()).unwrap();
    let lab = db.stats().labdb.unwrap();
    assert_eq!(lab.hot_slots, 7, "{lab:?}");
    assert_eq!(scan(&db, &ReadOptions::default()), want);
    // Everything compacted into the levels: the slots lose their references and are freed,
    // then taken again by the next hot keys.
    db.compact_range(None, None).unwrap();
    for round in 0..4u64 {
        for i in 20..28u64 {
            let v = format!("later-{round}-{i}").into_bytes();
            db.put(&key(i), &v).unwrap();
            model.insert(key(i), v);
        }
        db.flush().unwrap();
    }
    db.wait_for_background_work().unwrap();
    let lab = db.stats().labdb.unwrap();
    // The 7 slots of keys 0..7 were freed; keys 20..28 hold 8.
    assert_eq!(lab.hot_slots, 8, "{lab:?}");
    let want: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(scan(&db, &ReadOptions::default()), want);
    for (k, v) in &model {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
    }
}

/// A damaged half of a hot slot is reported as corruption naming the slot, never returned;
/// `check` finds it too.
#[test]
fn damaged_hot_slot_is_corruption() {
    let env = support::Env::new(Design::LABDB);
    let mut o = support::tiny_options(&env);
    o.labdb.leaf_region_bytes = 1 << 20;
    let db = Db::open("/db", o.clone()).unwrap();
    let value = b"a-hot-value-found-only-in-its-slot";
    for round in 0..3 {
        db.put(b"k", format!("{round}").as_bytes()).unwrap();
        db.flush().unwrap();
    }
    db.put(b"k", value).unwrap();
    db.flush().unwrap();
    let lab = db.stats().labdb.unwrap();
    assert!(lab.hot_writes >= 2, "{lab:?}");
    db.close().unwrap();
    // Flip a byte of every copy of the value in the pool (the slot's half; a WAL-buffer copy
    // is not read again).
    let pool = env.pool.as_ref().unwrap();
    let mut bytes = vec![0u8; pool.size() as usize];
    pool.read(0, &mut bytes).unwrap();
    let mut flipped = 0;
    for at in 0..bytes.len() - value.len() {
        if &bytes[at..at + value.len()] == value {
            pool.write(at as u64 + 5, &[bytes[at + 5] ^ 0x20]).unwrap();
            flipped += 1;
        }
    }
    assert!(flipped >= 1);
    let err = Db::check("/db", o.clone()).unwrap_err();
    assert!(
        err.is_corruption() && err.to_string().contains("hot slot"),
        "{err}"
    );
    // The open claims the slot for the tree's entry: the half no longer holds its version.
    let Err(err) = Db::open("/db", o) else {
        panic!("a damaged hot slot opened");
    };
    assert!(
        err.is_corruption() && err.to_string().contains("hot slot"),
        "{err}"
    );
}

/// Reopened with another slot size, or with the hot-key buffer off, a database reads the slots
/// it has as they were written (the geometry is the buffer's, not the options').
#[test]
fn hot_slots_survive_reopening_with_other_hot_options() {
    let env = support::Env::new(Design::LABDB);
    let mut o = support::tiny_options(&env);
    o.labdb.leaf_region_bytes = 1 << 20;
    let db = Db::open("/db", o.clone()).unwrap();
    let mut want = Vec::new();
    for round in 0..3u64 {
        want.clear();
        for i in 0..6u64 {
            let v = format!("v{round}-{i}").into_bytes();
            db.put(&key(i), &v).unwrap();
            want.push((key(i), v));
        }
        db.flush().unwrap();
    }
    assert!(db.stats().labdb.unwrap().hot_slots >= 6);
    db.close().unwrap();
    for (slot_bytes, buffer_bytes) in [(1024, 16 << 10), (512, 0), (512, 4 << 10)] {
        let mut o2 = o.clone();
        o2.labdb.hot_slot_bytes = slot_bytes;
        o2.labdb.hot_buffer_bytes = buffer_bytes;
        let db = Db::open("/db", o2).unwrap();
        assert!(db.stats().labdb.unwrap().hot_slots >= 6);
        assert_eq!(scan(&db, &ReadOptions::default()), want);
        db.close().unwrap();
    }
}
