//! The designs that keep data in the PM pool, on real files: `leveled-pm` and `leveled` with
//! its WAL on PM. Checks where the data lives, the per-tier figures, and that a database
//! remembers its WAL tier.

use tierkv::{Db, Design, Error, Options, WriteOptions};

fn small(design: Design) -> Options {
    let mut o = Options {
        design,
        write_buffer_size: 64 << 10,
        ..Options::default()
    };
    o.compaction.target_file_size = 64 << 10;
    o.compaction.max_bytes_for_level_base = 256 << 10;
    o.pm.size_bytes = 32 << 20;
    o.pm.chunk_bytes = 256 << 10;
    o
}

/// The `.log` files in `dir` (WALs on SSD).
fn log_files(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".log")
        })
        .count()
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

#[test]
fn leveled_pm_keeps_wal_and_l0_in_pm_and_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let opts = small(Design::LEVELED_PM);
    {
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        for i in 0..5000 {
            db.put(&key(i), &[i as u8; 100]).unwrap();
        }
        db.flush().unwrap();
        let s = db.stats();
        let pm = s.pm.as_ref().expect("PM figures");
        assert!(pm.lines_written_back > 0 && pm.fences > 0, "{pm:?}");
        assert!(s.pm_written_wal > 0 && s.pm_written_flush > 0, "{s:?}");
        assert_eq!(
            s.ssd_written_wal + s.ssd_written_flush,
            0,
            "nothing of WAL/L0 on SSD"
        );
        assert!(s.pm_levels[0].files > 0 || s.levels[1].files > 0, "{s:?}");
        // Unflushed writes live only in the PM WAL: they must survive a reopen.
        for i in 5000..5100 {
            db.put(&key(i), b"tail").unwrap();
        }
        db.write(
            &WriteOptions {
                sync: true,
                ..Default::default()
            },
            {
                let mut b = tierkv::WriteBatch::new();
                b.put(&key(5100), b"synced");
                b
            },
        )
        .unwrap();
    }
    // The pool file sits in the database directory; no .log file on SSD.
    assert!(dir.path().join("pm.pool").exists());
    let ssd_logs = log_files(dir.path());
    assert_eq!(ssd_logs, 0);
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    assert_eq!(db.get(&key(42)).unwrap(), Some(vec![42u8; 100]));
    assert_eq!(db.get(&key(5099)).unwrap(), Some(b"tail".to_vec()));
    assert_eq!(db.get(&key(5100)).unwrap(), Some(b"synced".to_vec()));
    db.compact_range(None, None).unwrap();
    assert_eq!(
        db.get(&key(4999)).unwrap(),
        Some(vec![(4999 % 256) as u8; 100])
    );
    let s = db.stats();
    assert_eq!(
        s.pm_levels.iter().map(|l| l.files).sum::<usize>(),
        0,
        "compaction moved L0 out of PM"
    );
    drop(db);
    let report = Db::check(dir.path(), opts).unwrap();
    assert!(report.tables_checked > 0);
}

#[test]
fn leveled_with_wal_on_pm_and_wal_tier_is_remembered() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = small(Design::LEVELED);
    opts.pm.wal_on_pm = true;
    {
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        for i in 0..300 {
            db.put(&key(i), b"v").unwrap();
        }
        let s = db.stats();
        assert!(s.pm_written_wal > 0 && s.ssd_written_wal == 0, "{s:?}");
    }
    // Reopening without the PM WAL would skip the log: refused.
    let plain = small(Design::LEVELED);
    match Db::open(dir.path(), plain) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("WAL"), "{m}"),
        other => panic!("expected InvalidArgument, got {:?}", other.map(|_| ())),
    }
    let db = Db::open(dir.path(), opts).unwrap();
    assert_eq!(db.get(&key(299)).unwrap(), Some(b"v".to_vec()));
}

#[test]
fn a_pool_with_another_databases_files_is_refused() {
    let base = tempfile::tempdir().unwrap();
    let pool = base.path().join("shared.pool");
    let mut opts = small(Design::LEVELED_PM);
    opts.pm.path = Some(pool.clone());
    let db = Db::open(base.path().join("a"), opts.clone()).unwrap();
    db.put(b"k", b"v").unwrap();
    drop(db);
    match Db::open(base.path().join("b"), opts) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("another database"), "{m}"),
        other => panic!("expected InvalidArgument, got {:?}", other.map(|_| ())),
    }
}

/// `leveled-pm` with `pm.wal_on_ssd` (LAB-DB's "RocksDB-NVM" baseline): the WAL on SSD, the
/// L0 tables still in the pool; unflushed writes survive a reopen from the SSD WAL.
#[test]
fn leveled_pm_with_its_wal_on_ssd() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = small(Design::LEVELED_PM);
    opts.pm.wal_on_ssd = true;
    {
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        for i in 0..3000 {
            db.put(&key(i), &[i as u8; 100]).unwrap();
        }
        db.flush().unwrap();
        for i in 3000..3050 {
            db.put(&key(i), b"tail").unwrap();
        }
        let s = db.stats();
        assert!(s.ssd_written_wal > 0 && s.pm_written_wal == 0, "{s:?}");
        assert!(s.pm_written_flush > 0, "{s:?}");
    }
    let logs = log_files(dir.path());
    assert!(logs > 0, "the WAL is on SSD");
    let db = Db::open(dir.path(), opts).unwrap();
    assert_eq!(db.get(&key(7)).unwrap(), Some(vec![7u8; 100]));
    assert_eq!(db.get(&key(3049)).unwrap(), Some(b"tail".to_vec()));
}
