//! ListDB (`listdb`, FluidKV's baseline): index-unified logging, flushes that link log entries
//! into L0 lists and zipper compactions that splice them into L1, seen through the database.

use std::collections::BTreeMap;
use tierkv::{Db, Design, Options, ReadOptions};

fn key(i: u64) -> Vec<u8> {
    format!("key{:08}", i.wrapping_mul(2_654_435_761) % 100_000_000).into_bytes()
}

fn listdb(dir: &std::path::Path) -> Options {
    let mut o = Design::LISTDB.options(Options {
        design: Design::LISTDB,
        write_buffer_size: 64 << 10,
        ..Options::default()
    });
    o.pm.chunk_bytes = 64 << 10;
    o.pm.size_bytes = 64 << 20;
    o.pm.path = Some(dir.join("pm.pool"));
    o
}

fn assert_matches(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, ctx: &str) {
    for (k, v) in model.iter().step_by(7) {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{ctx}");
    }
    let got: Vec<(Vec<u8>, Vec<u8>)> = db.scan(..).unwrap().collect::<tierkv::Result<_>>().unwrap();
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(got.len(), want.len(), "{ctx}: scan length");
    assert!(got == want, "{ctx}: scan differs");
}

/// A flush writes one next word per entry it links and a zip two per gap it splices: no key
/// or value is written twice. A snapshot taken before the zips reads its versions after them
/// and after deletes; reopening finds the same database, and `check` walks every list.
#[test]
fn flushes_link_and_zips_splice_without_copying_and_everything_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let o = listdb(dir.path());
    let mut model = BTreeMap::new();
    let db = Db::open(dir.path(), o.clone()).unwrap();
    for i in 0..3000u64 {
        let v = format!("first-{i}-{}", "v".repeat((i % 50) as usize)).into_bytes();
        db.put(&key(i), &v).unwrap();
        model.insert(key(i), v);
    }
    db.flush().unwrap();
    let snap = db.snapshot();
    let at_snap = model.clone();
    for i in 0..6000u64 {
        if i % 4 == 0 {
            db.delete(&key(i)).unwrap();
            model.remove(&key(i));
        } else {
            let v = format!("second-{i}").into_bytes();
            db.put(&key(i), &v).unwrap();
            model.insert(key(i), v);
        }
    }
    db.flush().unwrap();
    // The zipper runs on its own thread.
    db.wait_for_background_work().unwrap();
    let s = db.stats();
    let l = s.listdb.expect("listdb figures");
    assert!(l.zips >= 2 && s.compactions == l.zips, "{l:?}");
    assert!(l.l1_entries > 3000, "{l:?}");
    // The log holds every write once; flushes and zips wrote next words only.
    // (The log position also counts the unused end of each chunk an entry did not fit.)
    assert!(s.pm_written_wal <= l.log_bytes, "{s:?}");
    assert!(l.log_bytes - s.pm_written_wal < 4096 * l.chunks, "{s:?}");
    assert_eq!(s.pm_written_flush, l.linked_bytes);
    assert_eq!(s.pm_written_compaction, l.spliced_bytes);
    assert!(l.linked_bytes <= 8 * 9000, "{l:?}");
    assert!(l.spliced_bytes > 0 && l.spliced_bytes <= 16 * 9000, "{l:?}");
    assert_eq!(s.levels[1].files, 1, "{:?}", s.levels);
    assert!(s.dram.list_tower_bytes > 0);
    assert_matches(&db, &model, "after the zips");
    let ro = ReadOptions {
        snapshot: Some(snap.clone()),
        ..Default::default()
    };
    let got: BTreeMap<Vec<u8>, Vec<u8>> = db
        .scan_with(&ro, ..)
        .unwrap()
        .collect::<tierkv::Result<_>>()
        .unwrap();
    assert!(got == at_snap, "the snapshot's view changed");
    for i in (0..3000u64).step_by(11) {
        assert_eq!(
            db.get_with(&ro, &key(i)).unwrap().as_ref(),
            at_snap.get(&key(i))
        );
    }
    drop((ro, snap));
    // Unflushed writes too: they are in the log.
    for i in 6000..6100u64 {
        db.put(&key(i), b"late").unwrap();
        model.insert(key(i), b"late".to_vec());
    }
    db.close().unwrap();
    let report = Db::check(dir.path(), o.clone()).unwrap();
    assert!(report.entries_checked >= l.l1_entries, "{report:?}");
    assert!(report.wal_records_checked >= 100, "{report:?}");
    let db = Db::open(dir.path(), o).unwrap();
    assert_matches(&db, &model, "after reopening");
    let l2 = db.stats().listdb.unwrap();
    assert_eq!(l2.l1_entries + l2.l0_entries, l.l1_entries + l.l0_entries);
}
