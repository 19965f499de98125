//! Regression tests for opens that used to lose acknowledged data or return another database's
//! data: a PM pool of another database, a full pool, a damaged manifest tail, a damaged PM
//! directory entry, a missing `CURRENT`; and the tool-facing behaviour around them (`check` on
//! a database in use, a design mismatch, `describe`, the pool's minimum size).
//!
//! Each test reproduces the failure as a user met it and checks the fixed behaviour: the open
//! either returns exactly the acknowledged data or fails with an error that says why, and a
//! failed open changes nothing.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tierkv::fs::{CrashMode, FileSystem, MemFs};
use tierkv::pm::{PmPool, PoolOptions};
use tierkv::{Db, Design, Error, Options, WriteBatch, WriteOptions};

fn pm_options(design: Design, pool: &Path) -> Options {
    let mut o = Options {
        design,
        write_buffer_size: 64 << 10,
        ..Options::default()
    };
    o.pm.path = Some(pool.to_path_buf());
    o.pm.size_bytes = 8 << 20;
    o.pm.chunk_bytes = 256 << 10;
    o
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn files_of(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "LOCK")
        .collect()
}

fn contents(db: &Db) -> Vec<(Vec<u8>, Vec<u8>)> {
    db.scan(..).unwrap().map(|e| e.unwrap()).collect()
}

/// A database opened with another database's pool is refused before anything is read or
/// written, in both directions, and both databases keep all their data.
#[test]
fn a_pool_of_another_database_is_refused() {
    let base = tempfile::tempdir().unwrap();
    let (a, b) = (base.path().join("A"), base.path().join("B"));
    let (pool_a, pool_b) = (base.path().join("A.pool"), base.path().join("B.pool"));
    for i in 1..=3u32 {
        for (dir, pool, tag) in [(&a, &pool_a, "AAAA"), (&b, &pool_b, "BBBB")] {
            let db = Db::open(dir, pm_options(Design::LEVELED_PM, pool)).unwrap();
            db.put(format!("key{i}").as_bytes(), format!("{tag}{i}").as_bytes())
                .unwrap();
        }
    }
    for (dir, pool) in [(&a, &pool_b), (&b, &pool_a)] {
        let o = pm_options(Design::LEVELED_PM, pool);
        for err in [
            Db::open(dir, o.clone())
                .err()
                .expect("a foreign pool opens"),
            Db::check(dir, o.clone()).expect_err("a foreign pool checks"),
        ] {
            assert!(
                matches!(&err, Error::InvalidArgument(m) if m.contains("another database")),
                "{err}"
            );
        }
    }
    for (dir, pool, tag) in [(&a, &pool_a, "AAAA"), (&b, &pool_b, "BBBB")] {
        let db = Db::open(dir, pm_options(Design::LEVELED_PM, pool)).unwrap();
        let want: Vec<_> = (1..=3)
            .map(|i| {
                (
                    format!("key{i}").into_bytes(),
                    format!("{tag}{i}").into_bytes(),
                )
            })
            .collect();
        assert_eq!(contents(&db), want);
    }
}

/// A pool far too small for the write buffer: memtables rotate when their WAL fills its share
/// of the pool, tables go to SSD when the pool has no room for them, every write succeeds, and
/// the database reopens (again and again) with all of it and no orphan file.
///
/// The same with FluidKV's thread logs (`pm.thread_logs`): a write that finds no room for its
/// log record waits for a flush, or rotates the write buffer so that one frees its logs. And
/// with the manifest in the pool too (`pm.manifest_on_pm`), whose chunks the pool's
/// minimum counts.
#[test]
fn a_full_pool_keeps_taking_writes_and_always_reopens() {
    for (thread_logs, manifest_on_pm) in
        [(false, false), (true, false), (false, true), (true, true)]
    {
        full_pool_keeps_taking_writes(thread_logs, manifest_on_pm);
    }
}

fn full_pool_keeps_taking_writes(thread_logs: bool, manifest_on_pm: bool) {
    let dir = tempfile::tempdir().unwrap();
    let pool = dir.path().join("small.pool");
    let mut o = pm_options(Design::LEVELED_PM, &pool);
    o.pm.thread_logs = thread_logs;
    o.pm.manifest_on_pm = Some(manifest_on_pm);
    o.write_buffer_size = 1 << 20;
    o.pm.chunk_bytes = 64 << 10;
    // One chunk more than the minimum (which counts two chunks for a manifest in the pool).
    o.pm.size_bytes = if manifest_on_pm { 8 } else { 6 } * (64 << 10);
    o.compaction.target_file_size = 64 << 10;
    let n = 6000u32;
    {
        let db = Db::open(dir.path(), o.clone()).unwrap();
        for i in 0..n {
            db.put(&key(i), &[i as u8; 120]).unwrap();
        }
        let s = db.stats();
        // The WAL rotates its memtable when it fills its share of the pool; thread logs rotate
        // when a write finds no room (a "PM pool full" stall).
        let early = if thread_logs { 2 } else { 5 };
        assert!(
            s.flushes > early,
            "small logs rotate write buffers early: {s:?}"
        );
        assert!(s.pm_flush_fallbacks > 0, "tables went to SSD: {s:?}");
    }
    let current = std::fs::read_to_string(dir.path().join("CURRENT")).unwrap();
    assert_eq!(current.starts_with("pm:"), manifest_on_pm, "{current}");
    // No background compaction after the fill: the files on disk can be compared with the
    // version at any instant.
    o.compaction.level0_compaction_trigger = 1000;
    o.compaction.level0_slowdown_trigger = 1000;
    o.compaction.level0_stop_trigger = 1000;
    for round in 0..3 {
        let db = Db::open(dir.path(), o.clone()).unwrap();
        let got = contents(&db);
        assert_eq!(got.len(), n as usize + round, "round {round}");
        for (i, (k, v)) in got.iter().take(n as usize).enumerate() {
            assert_eq!((k, v), (&key(i as u32), &vec![i as u8; 120]));
        }
        let s = db.stats();
        let ssd_tables: usize = s.levels.iter().map(|l| l.files).sum::<usize>()
            - s.pm_levels.iter().map(|l| l.files).sum::<usize>();
        let on_disk = files_of(dir.path())
            .iter()
            .filter(|n| n.ends_with(".sst"))
            .count();
        assert_eq!(on_disk, ssd_tables, "round {round}: no orphan table");
        db.put(format!("round{round}").as_bytes(), b"x").unwrap();
        drop(db);
        Db::check(dir.path(), o.clone()).unwrap();
    }
}

/// A write whose WAL record cannot fit in the pool fails with `NoSpace`, writes nothing and
/// leaves the database writable (it is not poisoned).
#[test]
fn a_write_larger_than_the_pool_fails_cleanly() {
    for thread_logs in [false, true] {
        write_larger_than_the_pool_fails_cleanly(thread_logs);
    }
}

fn write_larger_than_the_pool_fails_cleanly(thread_logs: bool) {
    let dir = tempfile::tempdir().unwrap();
    let pool = dir.path().join("p.pool");
    let mut o = pm_options(Design::LEVELED_PM, &pool);
    o.pm.thread_logs = thread_logs;
    o.pm.chunk_bytes = 64 << 10;
    o.pm.size_bytes = 8 * (64 << 10);
    let db = Db::open(dir.path(), o.clone()).unwrap();
    db.put(b"before", b"1").unwrap();
    let err = db.put(b"huge", &vec![7u8; 1 << 20]).unwrap_err();
    assert!(matches!(err, Error::NoSpace(_)), "{err}");
    db.put(b"after", b"2").unwrap();
    assert_eq!(db.get(b"huge").unwrap(), None);
    drop(db);
    let db = Db::open(dir.path(), o).unwrap();
    assert_eq!(
        contents(&db),
        vec![
            (b"after".to_vec(), b"2".to_vec()),
            (b"before".to_vec(), b"1".to_vec())
        ]
    );
}

/// Crash images taken while a tiny pool is at its fullest (at every fence of a filling
/// workload, every 7th) all reopen with every acknowledged write.
#[test]
fn crash_images_of_a_full_pool_reopen() {
    use parking_lot::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tierkv::pm::CrashImage;
    let pool_options = PoolOptions {
        size: 5 * (64 << 10),
        chunk_size: 64 << 10,
        ..PoolOptions::default()
    };
    let options = |ssd: &MemFs, pool: Arc<PmPool>| {
        let mut o = Options {
            design: Design::LEVELED_PM,
            write_buffer_size: 256 << 10,
            fs: Arc::new(ssd.clone()),
            ..Options::default()
        };
        o.pm.pool = Some(pool);
        o.compaction.target_file_size = 32 << 10;
        o
    };
    let writes = 1500u32;
    let mut checked = 0;
    let mut fullest = u64::MAX;
    for target in (1..).step_by(7) {
        let ssd = MemFs::new();
        let pool = PmPool::create_crash_sim(&pool_options, false).unwrap();
        let acked = Arc::new(AtomicUsize::new(0));
        // The pool image, the writes acknowledged and the free chunks at the target fence.
        type Captured = Option<(Vec<u8>, usize, u64)>;
        let image: Arc<Mutex<Captured>> = Arc::default();
        {
            let (ssd, acked, image) = (ssd.clone(), Arc::clone(&acked), Arc::clone(&image));
            let weak = Arc::downgrade(&pool);
            pool.set_fence_hook(Some(Box::new(move |fence| {
                let Some(pool) = weak.upgrade() else { return };
                if fence == target {
                    // Read before the image: the fence may be a flush thread's, and a write
                    // acknowledged after the image was taken need not be in it.
                    let acked = acked.load(Ordering::SeqCst);
                    ssd.freeze_after(0);
                    let img = pool.crash_image(CrashImage::Strict).unwrap();
                    let free = pool.free_chunks();
                    *image.lock() = Some((img, acked, free));
                }
            })));
        }
        if let Ok(db) = Db::open("/db", options(&ssd, Arc::clone(&pool))) {
            for i in 0..writes {
                if db.put(&key(i), &[i as u8; 100]).is_err() {
                    break;
                }
                acked.fetch_add(1, Ordering::SeqCst);
            }
        }
        pool.set_fence_hook(None);
        let Some((img, acked, free)) = image.lock().take() else {
            break; // the workload made fewer fences than `target`
        };
        fullest = fullest.min(free);
        let pool2 = PmPool::open_crash_image(img, &pool_options).unwrap();
        let ssd2 = ssd
            .crash(CrashMode::SyncedOnly)
            .crash(CrashMode::ProcessCrash);
        let db = Db::open("/db", options(&ssd2, pool2))
            .unwrap_or_else(|e| panic!("fence {target}: reopen failed: {e}"));
        let got = contents(&db);
        assert!(
            got.len() >= acked,
            "fence {target}: {} < {acked}",
            got.len()
        );
        db.put(b"after", b"x")
            .unwrap_or_else(|e| panic!("fence {target}: write after reopen: {e}"));
        checked += 1;
    }
    assert!(checked > 20, "only {checked} crash images");
    assert!(
        fullest <= 1,
        "the pool never filled: at least {fullest} chunks free"
    );
}

/// Options of a small `leveled` database on `fs` that never compacts on its own (so that the
/// last manifest record is the last flush).
fn flushing(fs: &MemFs) -> Options {
    let mut o = Options {
        write_buffer_size: 8 << 10,
        fs: Arc::new(fs.clone()),
        ..Options::default()
    };
    o.compaction.level0_compaction_trigger = 1000;
    o.compaction.level0_slowdown_trigger = 1000;
    o.compaction.level0_stop_trigger = 1000;
    o
}

fn manifest_of(fs: &MemFs) -> PathBuf {
    let current = fs.file_data(Path::new("/db/CURRENT")).unwrap();
    Path::new("/db").join(String::from_utf8(current).unwrap().trim_end())
}

fn all_files(fs: &MemFs) -> Vec<(PathBuf, Vec<u8>)> {
    fs.file_names()
        .into_iter()
        .map(|p| {
            let d = fs.file_data(&p).unwrap();
            (p, d)
        })
        .collect()
}

/// A manifest whose last records are cut off (or damaged) no longer leads to a version whose
/// oldest live WAL exists: the open and `check` report corruption naming the WAL, and nothing
/// is deleted or written.
#[test]
fn a_damaged_manifest_tail_is_corruption_and_deletes_nothing() {
    let fs = MemFs::new();
    {
        let db = Db::open("/db", flushing(&fs)).unwrap();
        for i in 0..2000 {
            db.put(&key(i), &[1u8; 50]).unwrap();
        }
        db.flush().unwrap();
    }
    let manifest = manifest_of(&fs);
    let len = fs.file_data(&manifest).unwrap().len() as u64;
    for damage in [
        "cut 3 bytes",
        "cut 40 bytes",
        "flip a bit of the last record",
    ] {
        let img = fs.crash(CrashMode::ProcessCrash);
        match damage {
            "cut 3 bytes" => img.truncate(&manifest, len - 3),
            "cut 40 bytes" => img.truncate(&manifest, len - 40),
            _ => img.corrupt_byte(&manifest, len - 10, 0x08),
        }
        let before = all_files(&img);
        let err = Db::open("/db", flushing(&img)).err().expect(damage);
        assert!(
            err.is_corruption() && err.to_string().contains(".log"),
            "{damage}: {err}"
        );
        let err = Db::check("/db", flushing(&img)).expect_err(damage);
        assert!(err.is_corruption(), "{damage}: {err}");
        assert!(all_files(&img) == before, "{damage}: files changed");
    }
}

/// The same in the pool: one flipped bit in the state word of the WAL's directory entry used to
/// make the WAL vanish; now the open fails with corruption naming the entry.
#[test]
fn a_damaged_pool_directory_entry_is_corruption() {
    let ssd = MemFs::new();
    let o = PoolOptions {
        size: 2 << 20,
        chunk_size: 64 << 10,
        ..PoolOptions::default()
    };
    let pool = PmPool::create_crash_sim(&o, false).unwrap();
    let options = |ssd: &MemFs, pool: Arc<PmPool>| {
        let mut opts = Options {
            design: Design::LEVELED_PM,
            fs: Arc::new(ssd.clone()),
            ..Options::default()
        };
        opts.pm.pool = Some(pool);
        opts
    };
    {
        let db = Db::open("/db", options(&ssd, Arc::clone(&pool))).unwrap();
        for i in 0..443 {
            db.put(&key(i), b"acknowledged").unwrap();
        }
    }
    let image = pool.crash_image(tierkv::pm::CrashImage::Strict).unwrap();
    let dir_chunk = pool
        .named_root(tierkv::fs::PMFS_ROOT_NAME)
        .unwrap()
        .expect("a file system");
    let entries = (64 << 10) / 128 - 1;
    let mut damaged = 0;
    for e in 0..entries {
        let at = (dir_chunk + 64 + e * 128) as usize;
        if image[at..at + 8] == [0; 8] {
            continue;
        }
        for bit in [0usize, 13, 31, 32, 63] {
            let mut img = image.clone();
            img[at + bit / 8] ^= 1 << (bit % 8);
            let p = PmPool::open_crash_image(img, &o).unwrap();
            let err = Db::open("/db", options(&ssd, p))
                .err()
                .unwrap_or_else(|| panic!("entry {e} state bit {bit} flipped unnoticed"));
            assert!(err.is_corruption(), "entry {e} bit {bit}: {err}");
            damaged += 1;
        }
    }
    assert!(damaged > 0, "the WAL has a directory entry");
    let p = PmPool::open_crash_image(image, &o).unwrap();
    let db = Db::open("/db", options(&ssd, p)).unwrap();
    assert_eq!(contents(&db).len(), 443);
}

/// A database whose `CURRENT` is gone is never recreated over: the open fails (saying so)
/// and deletes nothing; `repair` points `CURRENT` at the newest valid manifest.
#[test]
fn a_missing_current_is_not_a_new_database_and_repair_restores_it() {
    let fs = MemFs::new();
    let o = Options {
        fs: Arc::new(fs.clone()),
        ..Options::default()
    };
    for (k, v) in [(&b"a"[..], &b"1"[..]), (b"b", b"2")] {
        let db = Db::open("/db", o.clone()).unwrap();
        db.put(k, v).unwrap();
    }
    fs.remove(Path::new("/db/CURRENT")).unwrap();
    let before = all_files(&fs);
    let err = Db::open("/db", o.clone())
        .err()
        .expect("opened without CURRENT");
    assert!(
        err.is_corruption() && err.to_string().contains("no CURRENT"),
        "{err}"
    );
    assert!(all_files(&fs) == before, "files changed");
    let report = Db::repair("/db", o.clone()).unwrap();
    assert!(report.changed, "{report:?}");
    let db = Db::open("/db", o.clone()).unwrap();
    let mut b = WriteBatch::new();
    b.put(b"z", b"z");
    db.write(
        &WriteOptions {
            sync: true,
            ..Default::default()
        },
        b,
    )
    .unwrap();
    assert_eq!(
        contents(&db),
        vec![
            (b"a".to_vec(), b"1".to_vec()),
            (b"b".to_vec(), b"2".to_vec()),
            (b"z".to_vec(), b"z".to_vec())
        ]
    );
    drop(db);
    // Repairing a sound database changes nothing.
    assert!(!Db::repair("/db", o).unwrap().changed);
}

/// `check` refuses a database in use instead of reporting false damage.
#[test]
fn check_refuses_a_database_in_use() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.put(b"k", b"v").unwrap();
    let err = Db::check(dir.path(), Options::default()).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument(m) if m.contains("in use")),
        "{err}"
    );
    drop(db);
    Db::check(dir.path(), Options::default()).unwrap();
}

/// A `leveled` database opened as `leveled-pm` is told about the design, not about a missing
/// pool, and no pool lock file is left behind; `describe` reads what a database was created
/// with.
#[test]
fn a_design_mismatch_is_reported_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = Options::default();
    o.pm.wal_on_pm = true;
    o.pm.size_bytes = 32 << 20;
    Db::open(dir.path(), o).unwrap().put(b"k", b"v").unwrap();
    let before = files_of(dir.path());
    let err = Db::open(
        dir.path(),
        pm_options(Design::LEVELED_PM, &dir.path().join("x")),
    )
    .err()
    .unwrap();
    assert!(
        matches!(&err, Error::InvalidArgument(m) if m.contains("design")),
        "{err}"
    );
    assert_eq!(files_of(dir.path()), before);
    let d = Db::describe(dir.path(), &tierkv::fs::PosixFs).unwrap();
    assert_eq!((d.design.as_str(), d.wal_on_pm), ("leveled", true));
    assert!(tierkv::fs::PosixFs.exists(&dir.path().join("CURRENT")));
}

/// A pool below the minimum is refused at open with the minimum in the message.
#[test]
fn a_pool_below_the_minimum_says_the_minimum() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = pm_options(Design::LEVELED_PM, &dir.path().join("p.pool"));
    o.pm.chunk_bytes = 4 << 20;
    o.pm.size_bytes = 16 << 20;
    let err = Db::open(dir.path(), o).err().unwrap();
    assert!(
        matches!(&err, Error::InvalidArgument(m) if m.contains("minimum of 20971520 bytes")),
        "{err}"
    );
}

/// Tables on disk that the live version does not name, after a clean open.
fn orphan_tables(fs: &MemFs, o: &Options) -> usize {
    let db = Db::open("/db", o.clone()).unwrap();
    let named: usize = db.stats().levels.iter().map(|l| l.files).sum();
    drop(db);
    let on_disk = fs
        .file_names()
        .iter()
        .filter(|p| p.to_string_lossy().ends_with(".sst"))
        .count();
    on_disk - named
}

/// An open that fails while it writes the replayed tables (a full disk) removes what it wrote;
/// one that fails at its manifest leaves tables the next open deletes first. Retrying never
/// piles up files, and once there is room the open recovers everything.
#[test]
fn failed_opens_leave_no_orphan_files() {
    use tierkv::fs::{FaultSpec, FsOp};
    let fs = MemFs::new();
    let o = flushing(&fs);
    {
        let db = Db::open("/db", o.clone()).unwrap();
        for i in 0..600 {
            db.put(&key(i), &[2u8; 40]).unwrap();
        }
        db.flush().unwrap();
        for i in 600..1000 {
            db.put(&key(i), &[3u8; 40]).unwrap(); // only in the WAL
        }
    }
    let tables = |fs: &MemFs| {
        fs.file_names()
            .iter()
            .filter(|p| p.to_string_lossy().ends_with(".sst"))
            .count()
    };
    let before = tables(&fs);
    for (fault, what) in [
        (
            FaultSpec {
                path_contains: Some(".sst".into()),
                skip: 3,
                ..FaultSpec::new(FsOp::Append)
            },
            "a table append",
        ),
        (
            FaultSpec {
                path_contains: Some("MANIFEST".into()),
                ..FaultSpec::new(FsOp::Create)
            },
            "the manifest",
        ),
    ] {
        let mut first = None;
        for attempt in 0..3 {
            fs.inject(fault.clone());
            let err = Db::open("/db", o.clone())
                .err()
                .expect("the fault fails the open");
            assert!(matches!(err, Error::Io { .. }), "{what}: {err}");
            fs.clear_faults();
            // Only the tables of the last failed attempt may be left, and only when the failure
            // came after they were written and before a manifest named them: retrying never
            // piles them up.
            let extra = tables(&fs) - before;
            assert_eq!(
                *first.get_or_insert(extra),
                extra,
                "{what}, attempt {attempt}"
            );
            if what == "a table append" {
                assert_eq!(extra, 0, "{what}: the partial table is removed");
            }
        }
    }
    assert_eq!(orphan_tables(&fs, &o), 0);
    let db = Db::open("/db", o).unwrap();
    assert_eq!(contents(&db).len(), 1000);
}
