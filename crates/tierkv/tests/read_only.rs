//! A read-only open through the API, on every design of the registry: it serves every
//! acknowledged key (the logs replayed in memory), refuses every write with
//! [`Error::ReadOnly`], never creates a database, and a writer and a read-only open exclude
//! each other while read-only opens share. (That nothing is written is checked byte for byte
//! through the tools, in the bench crate's `tests/read_only.rs`.)

use tierkv::{Db, Design, Error, Options};

fn create(design: Design, db: &std::path::Path) {
    let mut o = design.options(Options {
        design,
        ..Options::default()
    });
    o.pm.size_bytes = 64 << 20;
    let d = Db::open(db, o).unwrap();
    for (k, v) in [("a", "1"), ("b", "2"), ("c", "3")] {
        d.put(k.as_bytes(), v.as_bytes()).unwrap();
    }
    d.delete(b"b").unwrap();
    d.put(b"d", b"4").unwrap();
    // Dropped without a flush: the logs hold the writes.
}

#[test]
fn a_read_only_open_serves_reads_refuses_writes_and_excludes_a_writer() {
    for &design in Design::ALL {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db");
        create(design, &db);
        let options = |read_only| Options {
            read_only,
            ..design.options(Options {
                design,
                ..Options::default()
            })
        };
        let mut o = options(true);
        o.pm.size_bytes = 64 << 20;
        let ro = Db::open(&db, o.clone()).unwrap();
        assert_eq!(
            ro.get(b"d").unwrap().as_deref(),
            Some(&b"4"[..]),
            "{design}"
        );
        assert_eq!(ro.get(b"b").unwrap(), None, "{design}");
        let keys: Vec<Vec<u8>> = ro.scan(..).unwrap().map(|e| e.unwrap().0).collect();
        assert_eq!(keys, vec![b"a".to_vec(), b"c".to_vec(), b"d".to_vec()]);
        for err in [
            ro.put(b"x", b"y").unwrap_err(),
            ro.delete(b"a").unwrap_err(),
            ro.flush().unwrap_err(),
            ro.compact_range(None, None).unwrap_err(),
        ] {
            assert!(matches!(err, Error::ReadOnly(_)), "{design}: {err}");
        }
        ro.wait_for_background_work().unwrap();
        // Read-only opens share the database; a writer waits for them, and they for it.
        let ro2 = Db::open(&db, o.clone()).unwrap();
        let err = Db::open(&db, options(false)).err().unwrap();
        assert!(
            err.to_string().contains("held by another"),
            "{design}: {err}"
        );
        drop((ro, ro2));
        let rw = Db::open(&db, options(false)).unwrap();
        let err = Db::open(&db, o.clone()).err().unwrap();
        assert!(
            err.to_string().contains("held by a writer"),
            "{design}: {err}"
        );
        rw.close().unwrap();
        // A directory with no database is not created by a read-only open.
        let empty = dir.path().join("none");
        let err = Db::open(&empty, o).err().unwrap();
        assert!(matches!(err, Error::NotFound(_)), "{design}: {err}");
        assert!(!empty.exists(), "{design}");
    }
}
