//! I/O error injection with `MemFs::inject`: a failed WAL append or sync, a failed manifest sync,
//! failed table writes during flush and compaction, a failed WAL rotation each poison the
//! database (that operation fails, every later write fails with `Error::Poisoned`, reads keep
//! working), and recovery from a crash image afterwards finds every acknowledged write. A failed
//! table read makes `get` fail, never return a wrong value.

use std::collections::BTreeMap;
use std::sync::Arc;
use tierkv::fs::{CrashMode, FaultSpec, FsOp, MemFs};
use tierkv::{Db, Error, Options, WriteBatch, WriteOptions};

const DB: &str = "/db";

fn options(fs: &MemFs) -> Options {
    let mut o = Options {
        fs: Arc::new(fs.clone()),
        write_buffer_size: 8 << 10,
        ..Options::default()
    };
    o.table.block_size = 1024;
    o.compaction.target_file_size = 8 << 10;
    o.compaction.max_bytes_for_level_base = 32 << 10;
    o
}

fn key(i: usize) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn value(i: usize, round: usize) -> Vec<u8> {
    let mut v = format!("value{i}-{round}-").into_bytes();
    v.resize(60, b'v');
    v
}

fn fault(op: FsOp, path: &str) -> FaultSpec {
    FaultSpec {
        path_contains: Some(path.into()),
        ..FaultSpec::new(op)
    }
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Writes `n` keys (round `round`) into `db` and `model`.
fn fill(db: &Db, model: &mut Model, n: usize, round: usize) {
    for i in 0..n {
        db.put(&key(i), &value(i, round)).unwrap();
        model.insert(key(i), value(i, round));
    }
}

fn scan_all(db: &Db) -> Model {
    db.scan(..).unwrap().map(|e| e.unwrap()).collect()
}

/// Every later write (put, delete, batch, sync or not) and flush fails with `Poisoned`; reads
/// still return `model`.
#[track_caller]
fn assert_poisoned(db: &Db, model: &Model) {
    let poisoned = |r: tierkv::Result<()>, what: &str| match r {
        Err(Error::Poisoned(_)) => {}
        other => panic!("{what}: expected Poisoned, got {other:?}"),
    };
    poisoned(db.put(b"later", b"1"), "put");
    poisoned(db.delete(&key(0)), "delete");
    let mut b = WriteBatch::new();
    b.put(b"later2", b"2");
    poisoned(
        db.write(
            &WriteOptions {
                sync: true,
                ..Default::default()
            },
            b,
        ),
        "sync batch",
    );
    poisoned(db.flush(), "flush");
    // Reads still work and see exactly the acknowledged state.
    for (k, v) in model.iter().step_by(7) {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
    }
    assert_eq!(db.get(b"later").unwrap(), None);
    assert_eq!(&scan_all(db), model);
}

/// Opens `img` and checks it holds `model` (plus, optionally, the write in flight), takes new
/// writes, and reopens to the same state.
#[track_caller]
fn assert_recovers(img: &MemFs, model: &Model, in_flight: Option<(&[u8], &[u8])>) {
    let db = Db::open(DB, options(img)).expect("recovery");
    let state = scan_all(&db);
    let mut with_in_flight = model.clone();
    if let Some((k, v)) = in_flight {
        with_in_flight.insert(k.to_vec(), v.to_vec());
    }
    assert!(
        &state == model || state == with_in_flight,
        "recovered {} keys, acknowledged {}",
        state.len(),
        model.len()
    );
    db.put(b"after", b"ok").unwrap();
    db.close().unwrap();
    let db = Db::open(DB, options(img)).unwrap();
    assert_eq!(db.get(b"after").unwrap(), Some(b"ok".to_vec()));
    db.close().unwrap();
    Db::check(DB, options(img)).unwrap();
}

#[test]
fn failed_wal_append_poisons() {
    let fs = MemFs::new();
    let db = Db::open(DB, options(&fs)).unwrap();
    let mut model = Model::new();
    fill(&db, &mut model, 50, 0);
    fs.inject(fault(FsOp::Append, ".log"));
    let e = db.put(b"failed", b"x").unwrap_err();
    assert!(matches!(e, Error::Io { op: "append", .. }), "{e:?}");
    fs.clear_faults();
    // The file system works again; the database stays poisoned.
    assert_poisoned(&db, &model);
    let img = fs.crash(CrashMode::ProcessCrash);
    drop(db);
    // The failed append wrote nothing.
    assert_recovers(&img, &model, None);
}

#[test]
fn failed_wal_sync_poisons() {
    let fs = MemFs::new();
    let db = Db::open(DB, options(&fs)).unwrap();
    let mut model = Model::new();
    fill(&db, &mut model, 30, 0);
    db.write(
        &WriteOptions {
            sync: true,
            ..Default::default()
        },
        {
            let mut b = WriteBatch::new();
            b.put(b"synced", b"1");
            b
        },
    )
    .unwrap();
    model.insert(b"synced".to_vec(), b"1".to_vec());
    let synced_model = model.clone();
    fs.inject(fault(FsOp::Sync, ".log"));
    let mut b = WriteBatch::new();
    b.put(b"failed", b"x");
    let e = db
        .write(
            &WriteOptions {
                sync: true,
                ..Default::default()
            },
            b,
        )
        .unwrap_err();
    assert!(matches!(e, Error::Io { op: "sync", .. }), "{e:?}");
    fs.clear_faults();
    assert_eq!(
        db.get(b"failed").unwrap(),
        None,
        "not acknowledged, not visible"
    );
    assert_poisoned(&db, &model);
    // A process crash keeps the appended record: the failed write may or may not come back.
    assert_recovers(
        &fs.crash(CrashMode::ProcessCrash),
        &model,
        Some((b"failed", b"x")),
    );
    // A power failure keeps at least what was synced.
    for mode in [
        CrashMode::SyncedOnly,
        CrashMode::Random(1),
        CrashMode::Random(2),
    ] {
        let img = fs.crash(mode);
        let db = Db::open(DB, options(&img)).unwrap();
        assert_eq!(scan_all(&db), synced_model, "{mode:?}");
    }
}

#[test]
fn failed_manifest_sync_during_flush_poisons() {
    let fs = MemFs::new();
    let db = Db::open(DB, options(&fs)).unwrap();
    let mut model = Model::new();
    fill(&db, &mut model, 60, 0);
    fs.inject(fault(FsOp::Sync, "MANIFEST"));
    let e = db.flush().unwrap_err();
    assert!(
        matches!(e, Error::Poisoned(_) | Error::Io { op: "sync", .. }),
        "{e:?}"
    );
    fs.clear_faults();
    assert_poisoned(&db, &model);
    let img = fs.crash(CrashMode::ProcessCrash);
    let e = db.close().unwrap_err();
    assert!(matches!(e, Error::Poisoned(_)), "{e:?}");
    assert_recovers(&img, &model, None);
}

#[test]
fn failed_table_write_during_background_flush_poisons() {
    let fs = MemFs::new();
    let db = Db::open(DB, options(&fs)).unwrap();
    let mut model = Model::new();
    fs.inject(fault(FsOp::Append, ".sst"));
    // Writes fill memtables until the background flush fails and poisons the database.
    let mut poisoned = false;
    for i in 0..5000 {
        match db.put(&key(i), &value(i, 0)) {
            Ok(()) => {
                model.insert(key(i), value(i, 0));
            }
            Err(Error::Poisoned(_)) => {
                poisoned = true;
                break;
            }
            Err(e) => panic!("{e:?}"),
        }
    }
    assert!(poisoned, "the failed flush must stop writes");
    fs.clear_faults();
    assert_poisoned(&db, &model);
    let img = fs.crash(CrashMode::ProcessCrash);
    assert!(db.close().is_err());
    assert_recovers(&img, &model, None);
}

#[test]
fn failed_compaction_poisons_and_loses_nothing() {
    for (op, path) in [
        (FsOp::Append, ".sst"),
        (FsOp::Sync, ".sst"),
        (FsOp::SyncDir, "db"),
        (FsOp::Read, ".sst"),
        (FsOp::Sync, "MANIFEST"),
    ] {
        let fs = MemFs::new();
        let mut o = options(&fs);
        // No automatic compaction: the manual one does all the work.
        o.compaction.level0_compaction_trigger = 20;
        o.compaction.level0_slowdown_trigger = 30;
        o.compaction.level0_stop_trigger = 40;
        let db = Db::open(DB, o).unwrap();
        let mut model = Model::new();
        fill(&db, &mut model, 300, 0);
        db.flush().unwrap();
        fill(&db, &mut model, 300, 1);
        db.flush().unwrap();
        assert!(db.stats().levels[0].files >= 2);
        fs.inject(fault(op, path));
        let e = db
            .compact_range(None, None)
            .expect_err(&format!("{op:?} {path}"));
        assert!(
            matches!(e, Error::Io { .. } | Error::Poisoned(_)),
            "{op:?}: {e:?}"
        );
        fs.clear_faults();
        assert_poisoned(&db, &model);
        let img = fs.crash(CrashMode::ProcessCrash);
        drop(db);
        assert_recovers(&img, &model, None);
        // Power failure: every write is in a synced table (both fills were flushed).
        assert_recovers(&fs.crash(CrashMode::SyncedOnly), &model, None);
    }
}

#[test]
fn failed_wal_rotation_poisons() {
    for (op, path) in [(FsOp::Create, ".log"), (FsOp::SyncDir, "db")] {
        let fs = MemFs::new();
        let db = Db::open(DB, options(&fs)).unwrap();
        let mut model = Model::new();
        fs.inject(fault(op, path));
        let mut failed = false;
        for i in 0..5000 {
            match db.put(&key(i), &value(i, 0)) {
                Ok(()) => {
                    model.insert(key(i), value(i, 0));
                }
                Err(e) => {
                    // A failed WAL create fails the write at once; the new WAL's directory entry
                    // is synced in the background (by the flush thread), whose failure poisons
                    // the database and fails the next write.
                    assert!(
                        matches!(e, Error::Io { .. } | Error::Poisoned(_)),
                        "{op:?}: {e:?}"
                    );
                    failed = true;
                    break;
                }
            }
        }
        assert!(failed && model.len() > 10, "{op:?}");
        fs.clear_faults();
        assert_poisoned(&db, &model);
        let img = fs.crash(CrashMode::ProcessCrash);
        drop(db);
        assert_recovers(&img, &model, None);
    }
}

#[test]
fn failed_table_read_is_an_error_not_a_wrong_value() {
    let fs = MemFs::new();
    let mut o = options(&fs);
    // Every get reads the table.
    o.block_cache_bytes = 0;
    // Only user reads may meet the injected faults: no background compaction runs in this
    // test (a failed compaction read poisons the database by design; see
    // `failed_compaction_poisons_and_loses_nothing`).
    o.compaction.level0_compaction_trigger = 64;
    o.compaction.level0_slowdown_trigger = 64;
    o.compaction.level0_stop_trigger = 64;
    let db = Db::open(DB, o.clone()).unwrap();
    let mut model = Model::new();
    fill(&db, &mut model, 300, 0);
    db.flush().unwrap();
    // Newer values for some keys in a second table: a failed read of the newer table must not
    // fall back to the older value.
    for i in (0..300).step_by(3) {
        db.put(&key(i), &value(i, 1)).unwrap();
        model.insert(key(i), value(i, 1));
    }
    db.flush().unwrap();
    drop(db);
    let db = Db::open(DB, o).unwrap(); // fresh table cache
    for count in [1, 2, 3] {
        for i in (0..300).step_by(11) {
            fs.inject(FaultSpec {
                count: Some(count),
                ..fault(FsOp::Read, ".sst")
            });
            match db.get(&key(i)) {
                Ok(v) => assert_eq!(v.as_ref(), model.get(&key(i)), "key {i}: wrong value"),
                Err(e) => assert!(matches!(e, Error::Io { op: "read", .. }), "{e:?}"),
            }
            fs.clear_faults();
            assert_eq!(db.get(&key(i)).unwrap().as_ref(), model.get(&key(i)));
        }
    }
    // A scan hitting a failed read reports it.
    fs.inject(fault(FsOp::Read, ".sst"));
    let r: Result<Vec<_>, _> = match db.scan(..) {
        Ok(it) => it.collect(),
        Err(e) => Err(e),
    };
    assert!(matches!(r, Err(Error::Io { .. })), "{r:?}");
    // Failed reads do not poison: writes still work.
    fs.clear_faults();
    db.put(b"x", b"y").unwrap();
    assert_eq!(scan_all(&db).len(), model.len() + 1);
}
