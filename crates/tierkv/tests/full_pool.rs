//! A PM pool filled to the last chunk, on every design of the registry that keeps a pool: the
//! database never locks its user out. Writes go on until one fails; then every open succeeds
//! (read-only, saying why, where the recovery itself needs space the pool lacks) with every
//! acknowledged write readable, `check` reports the condition, and once the pool is grown
//! (`Db::grow_pool`) the database opens writable again and keeps everything. A full disk
//! likewise.

use std::path::Path;
use tierkv::{Db, Design, Error, Options};

fn options(design: Design, dir: &Path) -> Options {
    let mut o = design.options(Options {
        design,
        write_buffer_size: 128 << 10,
        ..Options::default()
    });
    o.pm.path = Some(dir.join("p.pool"));
    o.pm.size_bytes = 4 << 20;
    o.pm.chunk_bytes = 256 << 10;
    // The hot-key buffer takes a segment only with room to spare; with a pool this small,
    // let it try (every key is hot at once).
    o.labdb.hot_threshold = 1;
    o
}

fn key(i: u32) -> Vec<u8> {
    // Spread over the key space: every flush touches every part of the trees.
    format!("key{:08}", i.wrapping_mul(2_654_435_761) % 100_000_000).into_bytes()
}

fn value(i: u32) -> Vec<u8> {
    vec![(i % 251) as u8; 300]
}

/// Every acknowledged key has its value.
fn assert_all(db: &Db, acked: u32, what: &str) {
    for i in 0..acked {
        assert_eq!(
            db.get(&key(i)).unwrap().as_deref(),
            Some(&value(i)[..]),
            "{what}: key {i} of {acked}"
        );
    }
}

/// Writes until a write fails (or `limit`); returns the acknowledged count and the failure.
fn fill(db: &Db, limit: u32) -> (u32, Option<Error>) {
    for i in 0..limit {
        if let Err(e) = db.put(&key(i), &value(i)) {
            return (i, Some(e));
        }
    }
    (limit, None)
}

#[test]
fn a_full_pool_never_locks_the_database_out_on_any_design() {
    let mut filled = Vec::new();
    for &design in Design::ALL {
        let dir = tempfile::tempdir().unwrap();
        let o = options(design, dir.path());
        if !design.uses_pm(&o) {
            continue;
        }
        let db = Db::open(dir.path(), o.clone()).unwrap();
        let (acked, failure) = fill(&db, 60_000);
        let Some(failure) = failure else {
            // The design moves its data out of the pool as fast as it comes.
            continue;
        };
        // The failed write started nothing it left half done: every acknowledged key reads.
        assert_all(&db, acked, &format!("{design} at the failed write"));
        drop(db);
        filled.push(design.name());
        // Every open succeeds and serves every acknowledged write.
        let db = Db::open(dir.path(), o.clone())
            .unwrap_or_else(|e| panic!("{design}: reopen after {failure}: {e}"));
        assert_all(&db, acked, &format!("{design} after the fill"));
        let read_only = db.read_only_reason().map(str::to_string);
        if let Some(reason) = &read_only {
            assert!(reason.contains("out of space"), "{design}: {reason}");
            let err = db.put(b"more", b"x").unwrap_err();
            assert!(
                matches!(&err, Error::ReadOnly(m) if m.contains("grow")),
                "{design}: {err}"
            );
        }
        drop(db);
        // `check` finds no damage and says what the next open will do.
        let report = Db::check(dir.path(), o.clone()).unwrap();
        assert_eq!(
            report.next_open_read_only.is_some(),
            read_only.is_some(),
            "{design}: {report:?}"
        );
        assert!(report.pm_chunks > 0, "{design}");
        // Grown, the database opens writable and keeps everything.
        let old = Db::grow_pool(dir.path(), o.clone(), 64 << 20).unwrap();
        assert_eq!(old, 4 << 20, "{design}");
        let db = Db::open(dir.path(), o.clone()).unwrap();
        assert_eq!(db.read_only_reason(), None, "{design}");
        db.put(b"after the grow", b"y").unwrap();
        assert_all(&db, acked, &format!("{design} after the grow"));
        db.close().unwrap();
        let db = Db::open(dir.path(), o.clone()).unwrap();
        assert_eq!(
            db.get(b"after the grow").unwrap().as_deref(),
            Some(&b"y"[..])
        );
        assert_all(&db, acked, &format!("{design} reopened"));
        drop(db);
        assert_eq!(Db::check(dir.path(), o).unwrap().next_open_read_only, None);
    }
    // The designs whose pool filled up and locked them out before, and ListDB, whose log
    // entries are its lists' nodes (nothing else in it takes space: a full pool fails the
    // append before its tail moves).
    for name in ["labdb", "slmdb", "listdb"] {
        assert!(
            filled.contains(&name),
            "{name} never filled its pool: {filled:?}"
        );
    }
}

/// A full disk the same way: an open whose recovery cannot write (every append fails as with
/// `ENOSPC`) continues read-only with every key, and opens writable once there is room.
#[test]
fn a_full_disk_opens_read_only_until_there_is_room() {
    use std::sync::Arc;
    use tierkv::fs::{FaultSpec, FsOp, MemFs};
    let fs = MemFs::new();
    let o = Options {
        fs: Arc::new(fs.clone()),
        ..Options::default()
    };
    let db = Db::open("/db", o.clone()).unwrap();
    for i in 0..200 {
        db.put(&key(i), &value(i)).unwrap();
    }
    drop(db);
    fs.inject_full(FaultSpec::new(FsOp::Append));
    let db = Db::open("/db", o.clone()).unwrap();
    let reason = db.read_only_reason().expect("opened read-only").to_string();
    assert!(reason.contains("append"), "{reason}");
    assert_all(&db, 200, "on the full disk");
    let err = db.put(b"more", b"x").unwrap_err();
    assert!(matches!(err, Error::ReadOnly(_)), "{err}");
    drop(db);
    fs.clear_faults();
    let db = Db::open("/db", o).unwrap();
    assert_eq!(db.read_only_reason(), None);
    db.put(b"more", b"x").unwrap();
    assert_all(&db, 200, "with room again");
}
