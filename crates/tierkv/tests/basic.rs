//! End-to-end behaviour of the public API on the real file system.

use tierkv::{Db, Error, Options, ReadOptions, WriteBatch, WriteOptions};

fn small_options() -> Options {
    let mut o = Options {
        write_buffer_size: 64 << 10,
        ..Options::default()
    };
    o.compaction.target_file_size = 64 << 10;
    o.compaction.max_bytes_for_level_base = 256 << 10;
    o.table.block_size = 1024;
    o
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

#[test]
fn put_get_delete_reopen_across_flushes_and_compactions() {
    let dir = tempfile::tempdir().unwrap();
    let n = 20_000u32;
    {
        let db = Db::open(dir.path(), small_options()).unwrap();
        for i in 0..n {
            db.put(&key(i), format!("value{i}").as_bytes()).unwrap();
        }
        for i in (0..n).step_by(3) {
            db.delete(&key(i)).unwrap();
        }
        db.flush().unwrap();
        let s = db.stats();
        assert!(s.flushes > 0, "{s:?}");
        assert!(
            s.levels.iter().skip(1).any(|l| l.files > 0),
            "compaction ran: {s:?}"
        );
        for i in (0..n).step_by(7) {
            let want = (i % 3 != 0).then(|| format!("value{i}").into_bytes());
            assert_eq!(db.get(&key(i)).unwrap(), want, "key {i}");
        }
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), small_options()).unwrap();
    let mut count = 0;
    for (i, e) in db.scan(..).unwrap().enumerate() {
        let (k, _) = e.unwrap();
        assert_ne!(k, Vec::new());
        count = i + 1;
    }
    assert_eq!(count as u32, n - n.div_ceil(3));
    db.compact_range(None, None).unwrap();
    assert_eq!(db.get(&key(1)).unwrap(), Some(b"value1".to_vec()));
    assert_eq!(db.get(&key(3)).unwrap(), None);
}

#[test]
fn snapshots_batches_and_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small_options()).unwrap();
    db.put(b"a", b"1").unwrap();
    let snap = db.snapshot();
    let mut b = WriteBatch::new();
    b.put(b"a", b"2");
    b.put(b"b", b"3");
    b.delete(b"c");
    db.write(
        &WriteOptions {
            sync: true,
            ..Default::default()
        },
        b,
    )
    .unwrap();
    db.flush().unwrap();
    let ro = ReadOptions {
        snapshot: Some(snap.clone()),
        ..Default::default()
    };
    assert_eq!(db.get_with(&ro, b"a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(db.get_with(&ro, b"b").unwrap(), None);
    assert_eq!(db.get(b"a").unwrap(), Some(b"2".to_vec()));
    db.compact_range(None, None).unwrap();
    assert_eq!(db.get_with(&ro, b"a").unwrap(), Some(b"1".to_vec()));
    let keys: Vec<_> = db
        .scan(&b"a"[..]..=&b"b"[..])
        .unwrap()
        .map(|e| e.unwrap().0)
        .collect();
    assert_eq!(keys, vec![b"a".to_vec(), b"b".to_vec()]);
    let mut it = db.iter(&ro).unwrap();
    it.seek(b"a");
    assert!(it.valid());
    assert_eq!((it.key(), it.value()), (&b"a"[..], &b"1"[..]));
    it.next();
    assert!(!it.valid());
}

#[test]
fn bad_arguments_and_conflicting_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small_options()).unwrap();
    let big = vec![0u8; small_options().max_key_size + 1];
    assert!(matches!(db.put(&big, b"v"), Err(Error::InvalidArgument(_))));
    // A second open of the same directory is refused while the first holds the lock.
    assert!(Db::open(dir.path(), small_options()).is_err());
    drop(db);
    let mut other = small_options();
    other.compaction.num_levels = 4;
    assert!(matches!(
        Db::open(dir.path(), other),
        Err(Error::InvalidArgument(_))
    ));
    let missing = dir.path().join("nope");
    let o = Options {
        create_if_missing: false,
        ..small_options()
    };
    assert!(Db::open(&missing, o).is_err());
    let report = Db::check(dir.path(), small_options()).unwrap();
    assert_eq!(report.tables_checked, 0);
}

#[test]
fn db_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Db>();
    assert_send_sync::<tierkv::Snapshot>();
    // Many threads write and read one database at once; writers share group commits.
    let dir = tempfile::tempdir().unwrap();
    let db = std::sync::Arc::new(Db::open(dir.path(), small_options()).unwrap());
    let threads: Vec<_> = (0..4u32)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                for i in 0..2000u32 {
                    db.put(&key(t * 100_000 + i), &i.to_le_bytes()).unwrap();
                    assert_eq!(
                        db.get(&key(t * 100_000 + i)).unwrap(),
                        Some(i.to_le_bytes().to_vec())
                    );
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let s = db.stats();
    assert_eq!(s.user_writes, 8000);
    assert!(s.wal_appends <= 8000 && s.wal_appends > 0);
}

#[test]
fn writes_are_throttled_while_l0_is_at_its_slowdown_trigger_and_stalls_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = small_options();
    o.write_buffer_size = 4096;
    o.compaction.level0_compaction_trigger = 2;
    o.compaction.level0_slowdown_trigger = 2;
    o.compaction.level0_stop_trigger = 64;
    let db = Db::open(dir.path(), o).unwrap();
    for i in 0..20_000u32 {
        db.put(&key(i % 3000), &i.to_le_bytes()).unwrap();
    }
    let s = db.stats();
    // Thousands of flushes each bring L0 to its slowdown trigger while a compaction runs:
    // writes in that window sleep 1 ms each, counted once per write group.
    assert!(s.flushes > 100, "{s:?}");
    assert!(s.stall_count > 0, "no write was throttled: {s:?}");
    assert!(
        s.stall_slowdown_micros >= 1000,
        "a throttled write sleeps >= 1 ms: {s:?}"
    );
    for i in 17_000..20_000u32 {
        assert_eq!(
            db.get(&key(i % 3000)).unwrap(),
            Some(i.to_le_bytes().to_vec())
        );
    }
}

/// Options of an NVLSM-family `design` with 4 KiB memtables and runs, C1 of two runs and 64 KiB
/// pool chunks in a pool of `pool_bytes`: many sets of several floors from a little data.
fn tiny_set_options(design: tierkv::Design, pool_bytes: u64) -> Options {
    let mut o = Options {
        design,
        write_buffer_size: 4096,
        ..Options::default()
    };
    o.pm.chunk_bytes = 64 << 10;
    o.pm.size_bytes = pool_bytes;
    o.compaction.target_file_size = 4096;
    o.compaction.level0_compaction_trigger = 2;
    o
}

/// `check` verifies the next pointers of `nvlsm`'s Skip-Array Trees (and finds none to check
/// in `nvlsm-fragmented`'s guards), on a database with sets of several floors.
#[test]
fn check_verifies_skip_array_tree_pointers() {
    for (design, expect_pointers) in [
        (tierkv::Design::NVLSM, true),
        (tierkv::Design::NVLSM_FRAGMENTED, false),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let o = design.options(tiny_set_options(design, 32 << 20));
        let db = Db::open(dir.path(), o.clone()).unwrap();
        for round in 0..40u32 {
            for i in 0..50u32 {
                let k = format!("key{:05}", (i * 7919 + round * 31) % 2000);
                db.put(k.as_bytes(), format!("v{round}").as_bytes())
                    .unwrap();
            }
            db.flush().unwrap();
        }
        db.close().unwrap();
        let report = Db::check(dir.path(), o).unwrap();
        assert!(report.tables_checked > 4, "{design}: {report:?}");
        assert_eq!(
            report.pointers_checked > 0,
            expect_pointers,
            "{design}: {report:?}"
        );
    }
}

/// `nvlsm` with two floors per set and tiny runs: every push into the last component fills
/// most of the sets it reaches, and their write-backs run several sets per task. The data
/// stays exact (gets and a full scan against a model, before and after a reopen), the sets
/// stay disjoint (the version's invariants are checked at every edit and at open) and `check`
/// finds nothing wrong.
#[test]
fn nvlsm_two_floor_write_backs_keep_every_key() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = tiny_set_options(tierkv::Design::NVLSM, 256 << 20);
    o.compaction.num_levels = 3;
    o.nvlsm.max_floor = 2;
    let o = tierkv::Design::NVLSM.options(o);
    let mut model = std::collections::BTreeMap::new();
    let db = Db::open(dir.path(), o.clone()).unwrap();
    // Few keys per flush over a wide key space: a push reaches some sets of the last
    // component and skips others, so full sets and sets that are not full alternate.
    for round in 0..400u32 {
        for i in 0..12u32 {
            let k = format!("key{:05}", (i * 7919 + round * 104_729) % 3000);
            let v = format!("v{round}-{i}");
            db.put(k.as_bytes(), v.as_bytes()).unwrap();
            model.insert(k.into_bytes(), v.into_bytes());
        }
        db.flush().unwrap();
    }
    let verify = |db: &Db| {
        for (k, v) in &model {
            assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{k:?}");
        }
        let scanned: Vec<(Vec<u8>, Vec<u8>)> =
            db.scan(..).unwrap().collect::<tierkv::Result<_>>().unwrap();
        let expected: Vec<(Vec<u8>, Vec<u8>)> =
            model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_eq!(scanned, expected);
    };
    verify(&db);
    db.close().unwrap();
    let db = Db::open(dir.path(), o.clone()).unwrap();
    verify(&db);
    db.close().unwrap();
    let report = Db::check(dir.path(), o).unwrap();
    assert!(report.tables_checked > 10, "{report:?}");
}

/// Options of a row-container design with tiny memtables, tables and L0: 4 KiB memtables and
/// tables, the rows' L0 16 KiB (compaction at 60%), ranges of 8..16 KiB.
fn tiny_row_options(design: tierkv::Design, bypass: bool) -> Options {
    let mut o = tiny_set_options(design, 32 << 20);
    o.compaction.num_levels = 4;
    o.compaction.level_size_multiplier = 4;
    o.compaction.max_bytes_for_level_base = 64 << 10;
    o.rows.l0_bytes = 16 << 10;
    o.rows.sequential_bypass = bypass;
    design.options(o)
}

/// `trianglekv` frees the PM pages of a row that lie wholly in its dead ranges (and with
/// `rows.free_dead_pages` off, frees none): rows of eight 64 KiB chunks, ranges of a chunk or
/// two per row. An iterator opened halfway keeps what it may read (its rows' older metadata
/// holds their pages) and reads exactly the data of its moment after many more compactions;
/// gets and a scan equal the model, before and after a reopen, and `check` passes.
#[test]
fn trianglekv_frees_row_pages_wholly_in_dead_ranges() {
    for free in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let mut o = tiny_set_options(tierkv::Design::TRIANGLEKV, 96 << 20);
        o.write_buffer_size = 512 << 10;
        o.compaction.target_file_size = 128 << 10;
        o.compaction.max_bytes_for_level_base = 4 << 20;
        o.rows.l0_bytes = 4 << 20;
        o.rows.free_dead_pages = free;
        let o = tierkv::Design::TRIANGLEKV.options(o);
        let db = Db::open(dir.path(), o.clone()).unwrap();
        let mut model = std::collections::BTreeMap::new();
        let value = |i: u32, round: u32| format!("{i}-{round}-").repeat(80).into_bytes();
        let write = |db: &Db, round: u32, model: &mut std::collections::BTreeMap<_, _>| {
            for i in 0..3000u32 {
                let k = format!("key{:05}", (i * 7919 + round * 104_729) % 6000).into_bytes();
                let v = value(i, round);
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
        };
        for round in 0..4 {
            write(&db, round, &mut model);
        }
        let frozen = model.clone();
        let mut it = db.iter(&ReadOptions::default()).unwrap();
        it.seek_to_first();
        for round in 4..14 {
            write(&db, round, &mut model);
        }
        db.flush().unwrap();
        db.wait_for_background_work().unwrap();
        let mut seen = std::collections::BTreeMap::new();
        while it.valid() {
            seen.insert(it.key().to_vec(), it.value().to_vec());
            it.next();
        }
        it.status().unwrap();
        assert!(seen == frozen, "free {free}: the iterator's data changed");
        drop(it);
        // The next pass frees what the iterator held.
        write(&db, 14, &mut model);
        db.flush().unwrap();
        db.wait_for_background_work().unwrap();
        let s = db.stats();
        assert!(s.compactions > 5, "free {free}: {s:?}");
        if free {
            assert!(
                s.row_pages_freed_bytes >= 4 << 16,
                "free {free}: {} bytes freed",
                s.row_pages_freed_bytes
            );
        } else {
            assert_eq!(s.row_pages_freed_bytes, 0);
        }
        let verify = |db: &Db| {
            for (k, v) in &model {
                assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "free {free} {k:?}");
            }
            let scanned: Vec<(Vec<u8>, Vec<u8>)> =
                db.scan(..).unwrap().collect::<tierkv::Result<_>>().unwrap();
            assert!(scanned.len() == model.len(), "free {free}");
            assert!(
                scanned.iter().map(|(k, v)| (k, v)).eq(model.iter()),
                "free {free}"
            );
        };
        verify(&db);
        db.close().unwrap();
        tierkv::Db::check(dir.path(), o.clone()).unwrap();
        // Reopened with freeing on: a database whose dead pages were never freed (as after a
        // crash between a compaction's manifest record and its freeing pass) has them freed by
        // the open; a second open finds nothing left to free.
        let mut on = o.clone();
        on.rows.free_dead_pages = true;
        let db = Db::open(dir.path(), on.clone()).unwrap();
        let at_open = db.stats().row_pages_freed_bytes;
        if free {
            assert_eq!(at_open, 0, "everything was freed before the close");
        } else {
            assert!(at_open >= 4 << 16, "the open freed {at_open} bytes");
        }
        verify(&db);
        db.close().unwrap();
        let db = Db::open(dir.path(), on.clone()).unwrap();
        assert_eq!(db.stats().row_pages_freed_bytes, 0);
        verify(&db);
        db.close().unwrap();
        tierkv::Db::check(dir.path(), on).unwrap();
    }
}

/// `trianglekv` and `matrixkv` under random writes over a small key space: compactions move
/// key ranges out of rows while rows keep arriving. Gets and a full scan equal a model before
/// and after a reopen, and `check` verifies every row's cross-row hints.
#[test]
fn row_containers_keep_every_key_and_their_hints() {
    for design in [tierkv::Design::TRIANGLEKV, tierkv::Design::MATRIXKV] {
        let dir = tempfile::tempdir().unwrap();
        let o = tiny_row_options(design, true);
        let mut model = std::collections::BTreeMap::new();
        let db = Db::open(dir.path(), o.clone()).unwrap();
        for round in 0..300u32 {
            for i in 0..20u32 {
                let k = format!("key{:05}", (i * 7919 + round * 104_729) % 2000);
                let v = format!("v{round}-{i}");
                if (i + round) % 11 == 0 {
                    db.delete(k.as_bytes()).unwrap();
                    model.remove(k.as_bytes());
                } else {
                    db.put(k.as_bytes(), v.as_bytes()).unwrap();
                    model.insert(k.into_bytes(), v.into_bytes());
                }
            }
        }
        db.flush().unwrap();
        let s = db.stats();
        assert!(s.compactions > 10, "{design}: {s:?}");
        assert!(
            s.pm_written_flush > 0,
            "{design}: rows are written to PM: {s:?}"
        );
        let verify = |db: &Db, model: &std::collections::BTreeMap<Vec<u8>, Vec<u8>>| {
            for k in (0..2000u32).map(|i| format!("key{i:05}").into_bytes()) {
                assert_eq!(
                    db.get(&k).unwrap().as_ref(),
                    model.get(&k),
                    "{design} {k:?}"
                );
            }
            let scanned: Vec<(Vec<u8>, Vec<u8>)> =
                db.scan(..).unwrap().collect::<tierkv::Result<_>>().unwrap();
            let expected: Vec<(Vec<u8>, Vec<u8>)> =
                model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            assert_eq!(scanned, expected, "{design}");
        };
        verify(&db, &model);
        db.close().unwrap();
        Db::check(dir.path(), o.clone()).unwrap();
        let db = Db::open(dir.path(), o.clone()).unwrap();
        verify(&db, &model);
        db.close().unwrap();
        // Reopened with room for many rows: three more flushes become rows linked by their
        // hints (no compaction takes them), whose hints `check` verifies.
        let mut roomy = o;
        roomy.rows.l0_bytes = 1 << 20;
        let db = Db::open(dir.path(), roomy.clone()).unwrap();
        for round in 0..3u32 {
            for i in (0..2000u32).step_by(20) {
                let k = format!("key{:05}", i + round);
                db.put(k.as_bytes(), b"again").unwrap();
                model.insert(k.into_bytes(), b"again".to_vec());
            }
            db.flush().unwrap();
        }
        verify(&db, &model);
        db.close().unwrap();
        let report = Db::check(dir.path(), roomy).unwrap();
        assert!(report.pointers_checked >= 200, "{design}: {report:?}");
    }
}

/// A sequential load goes straight to L1: each flushed memtable overlaps no row and no L1
/// table, so the flushes write SSTables to SSD (but while a compaction holds L1: a row), and
/// without the bypass the same load writes only rows, to PM.
#[test]
fn sequential_load_bypasses_the_rows() {
    for bypass in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let o = tiny_row_options(tierkv::Design::TRIANGLEKV, bypass);
        let db = Db::open(dir.path(), o).unwrap();
        for i in 0..3000u32 {
            db.put(&key(i), format!("value{i}").as_bytes()).unwrap();
        }
        db.flush().unwrap();
        let s = db.stats();
        assert!(s.flushes > 20, "{s:?}");
        if bypass {
            assert!(
                s.ssd_written_flush > 5 * s.pm_written_flush,
                "most flushes go to L1: {s:?}"
            );
        } else {
            assert!(s.ssd_written_flush == 0 && s.pm_written_flush > 0, "{s:?}");
        }
        for i in (0..3000u32).step_by(13) {
            assert_eq!(
                db.get(&key(i)).unwrap(),
                Some(format!("value{i}").into_bytes())
            );
        }
    }
}

/// A flush leaves out the versions no reader can see (a newer version of the key is visible to
/// every live snapshot), keeps the ones a snapshot still reads, and keeps tombstones; for every
/// design, whatever its first stage.
#[test]
fn flush_drops_versions_no_reader_can_see() {
    for &design in tierkv::Design::ALL {
        let dir = tempfile::tempdir().unwrap();
        let mut o = design.options(small_options());
        o.write_buffer_size = 4 << 20;
        o.pm.path = Some(dir.path().join("pm.pool"));
        o.pm.size_bytes = 256 << 20;
        let db = Db::open(dir.path(), o).unwrap();
        let value = |round: u32| format!("round {round}").into_bytes();
        for round in 0..20 {
            for k in 0..16 {
                db.put(&key(k), &value(round)).unwrap();
            }
        }
        let snap = db.snapshot();
        for round in 20..40 {
            for k in 0..16 {
                db.put(&key(k), &value(round)).unwrap();
            }
        }
        db.delete(&key(0)).unwrap();
        db.flush().unwrap();
        // Rounds 0..18 are shadowed by a version the snapshot sees: gone. Round 19 (the
        // snapshot's) and the newer ones stay (LevelDB's rule: only the oldest snapshot counts).
        assert_eq!(db.stats().flush_dropped_versions, 16 * 19, "{design}");
        let ro = ReadOptions {
            snapshot: Some(snap.clone()),
            ..Default::default()
        };
        for k in 0..16 {
            assert_eq!(
                db.get_with(&ro, &key(k)).unwrap(),
                Some(value(19)),
                "{design}"
            );
            let now = (k != 0).then(|| value(39));
            assert_eq!(db.get(&key(k)).unwrap(), now, "{design}");
        }
        drop((ro, snap));
        for k in 1..16 {
            db.put(&key(k), b"a").unwrap();
            db.put(&key(k), b"b").unwrap();
        }
        db.flush().unwrap();
        assert_eq!(db.stats().flush_dropped_versions, 16 * 19 + 15, "{design}");
        for k in 1..16 {
            assert_eq!(db.get(&key(k)).unwrap(), Some(b"b".to_vec()), "{design}");
        }
        assert_eq!(
            db.get(&key(0)).unwrap(),
            None,
            "{design}: the tombstone still hides"
        );
    }
}
