//! The SSD model (`Options::ssd`, `fs::SsdModelFs`) under a whole database: round trips with
//! the caps on (in memory, waits through a clock that never sleeps) and with direct reads (on
//! the disk), and the refusals.

use parking_lot::Mutex;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tierkv::fs::{Clock, FileSystem, MemFs, SsdModelFs, SsdModelOptions};
use tierkv::{Db, Design, Error, Options};

/// A clock whose sleeps advance it instead of blocking: the database waits as the model says,
/// and the test never does.
#[derive(Default)]
struct ManualClock {
    now: Mutex<Duration>,
}

impl Clock for ManualClock {
    fn now(&self) -> Duration {
        *self.now.lock()
    }
    fn sleep(&self, d: Duration) {
        *self.now.lock() += d;
    }
}

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

fn value(i: u32, round: u32) -> Vec<u8> {
    format!("value{i}-{round}-{}", "x".repeat((i % 97) as usize)).into_bytes()
}

/// Writes `n` keys (deleting every fifth), reads them back, scans, reopens with `reopen`'s
/// options and checks again. Returns the database of the second open.
fn round_trip(dir: &Path, first: Options, reopen: impl FnOnce(&Db) -> Options, n: u32) -> Db {
    let db = Db::open(dir, first).unwrap();
    for i in 0..n {
        db.put(&key(i), &value(i, 0)).unwrap();
    }
    for i in (0..n).step_by(5) {
        db.delete(&key(i)).unwrap();
    }
    db.flush().unwrap();
    let check = |db: &Db| {
        for i in (0..n).step_by(3) {
            let want = (i % 5 != 0).then(|| value(i, 0));
            assert_eq!(db.get(&key(i)).unwrap(), want, "key {i}");
        }
        let all: Vec<_> = db.scan(..).unwrap().collect::<Result<_, _>>().unwrap();
        assert_eq!(all.len() as u32, n - n.div_ceil(5));
        for (k, v) in &all {
            let i: u32 = std::str::from_utf8(&k[3..]).unwrap().parse().unwrap();
            assert_eq!(v, &value(i, 0));
        }
    };
    check(&db);
    assert!(db.stats().flushes > 0);
    let options = reopen(&db);
    db.close().unwrap();
    let db = Db::open(dir, options).unwrap();
    check(&db);
    db
}

#[test]
fn capped_database_round_trips_and_waits_for_its_bytes() {
    let mem = MemFs::new();
    let clock = Arc::new(ManualClock::default());
    let model = SsdModelOptions {
        write_bytes_per_sec: 1_000_000,
        read_bytes_per_sec: 1_000_000,
        direct_reads: false,
    };
    let fs: Arc<dyn FileSystem> = Arc::new(SsdModelFs::with_clock(
        Arc::new(mem.clone()),
        &model,
        clock.clone(),
    ));
    let mut o = small_options();
    o.fs = Arc::clone(&fs);
    o.ssd = model;
    let db = round_trip(Path::new("/db"), o.clone(), |_| o, 20_000);
    // The database used the given model (not a second one around it) through both opens.
    let m = db.options().fs.as_ssd_model().expect("the model");
    assert!(std::ptr::eq(m, fs.as_ssd_model().unwrap()));
    let s = m.stats();
    let stats = db.stats();
    assert!(
        s.bytes_written >= stats.ssd_written_wal + stats.ssd_written_flush,
        "{s:?} {stats:?}"
    );
    // A few MB went through 1 MB/s caps: writers and readers waited, on the test's clock.
    assert!(s.bytes_written > 2_000_000, "{s:?}");
    assert!(
        s.write_waits > 0 && s.write_wait > Duration::from_secs(1),
        "{s:?}"
    );
    assert!(s.read_waits > 0, "{s:?}");
    assert!(*clock.now.lock() >= s.write_wait.min(s.read_wait));
}

#[test]
fn options_turn_the_model_on_and_a_reopen_keeps_one_model() {
    let mem = MemFs::new();
    let mut o = small_options();
    o.fs = Arc::new(mem);
    o.ssd.write_bytes_per_sec = 500_000_000;
    o.ssd.read_bytes_per_sec = 500_000_000;
    let mut first_model = 0usize;
    let db = round_trip(
        Path::new("/db"),
        o,
        |db| {
            let m = db
                .options()
                .fs
                .as_ssd_model()
                .expect("Options::ssd wraps the fs");
            first_model = m as *const SsdModelFs as usize;
            db.options().clone()
        },
        3000,
    );
    let m = db.options().fs.as_ssd_model().unwrap();
    assert_eq!(m as *const SsdModelFs as usize, first_model);
    assert!(m.stats().bytes_written > 0 && m.stats().bytes_read > 0);
    // Off by default: no model.
    let plain = Db::open(
        "/plain",
        Options {
            fs: Arc::new(MemFs::new()),
            ..Options::default()
        },
    )
    .unwrap();
    assert!(plain.options().fs.as_ssd_model().is_none());
}

#[test]
fn direct_reads_round_trip_on_the_disk() {
    // The default temporary location is on the disk on the development machine. If its file
    // system refuses direct reads the open fails and so does this test, with the reason.
    let dir = tempfile::tempdir().unwrap();
    let mut o = small_options();
    o.ssd.direct_reads = true;
    o.ssd.read_bytes_per_sec = 1_000_000_000;
    o.ssd.write_bytes_per_sec = 1_000_000_000;
    let first = o.clone();
    match Db::open(dir.path().join("probe"), o.clone()) {
        Ok(db) => db.close().unwrap(),
        Err(e) => panic!(
            "direct reads are refused in {} ({e}); run the tests with TMPDIR on a disk-backed \
             file system that supports O_DIRECT",
            dir.path().display()
        ),
    }
    let db = round_trip(dir.path(), first, |_| o, 20_000);
    let s = db.options().fs.as_ssd_model().unwrap().stats();
    // Recovery read the WAL, the manifest and CURRENT; reads are charged by aligned ranges.
    assert!(
        s.bytes_read > 0 && s.bytes_read_charged >= s.bytes_read,
        "{s:?}"
    );
    // Compaction and reads of tables work too.
    db.compact_range(None, None).unwrap();
    assert_eq!(db.get(&key(1)).unwrap(), Some(value(1, 0)));
    assert_eq!(db.get(&key(5)).unwrap(), None);
}

#[test]
fn direct_reads_are_refused_where_there_is_no_device() {
    // The in-memory file system has no direct reads.
    let o = Options {
        fs: Arc::new(MemFs::new()),
        ssd: SsdModelOptions {
            direct_reads: true,
            ..SsdModelOptions::default()
        },
        ..Options::default()
    };
    let e = Db::open("/db", o).err().expect("refused");
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    assert!(e.to_string().contains("direct reads"), "{e}");

    // tmpfs (/dev/shm) accepts O_DIRECT since Linux 6.6, but reads its own page cache there:
    // refused at open, before anything is read.
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() {
        eprintln!("no /dev/shm here: the tmpfs refusal is not exercised");
        return;
    }
    let dir = tempfile::tempdir_in(shm).unwrap();
    let mut o = Options::default();
    o.ssd.direct_reads = true;
    let e = Db::open(dir.path(), o).err().expect("refused on tmpfs");
    let msg = e.to_string();
    assert!(
        msg.contains("direct reads") && msg.contains("tmpfs"),
        "{msg}"
    );
    // Without direct reads the same place opens (the caps alone are fine anywhere).
    let mut o = Options::default();
    o.ssd.write_bytes_per_sec = 100_000_000;
    Db::open(dir.path(), o).unwrap().close().unwrap();
}

#[test]
fn bad_model_options_are_rejected_at_open() {
    let mut o = Options {
        fs: Arc::new(MemFs::new()),
        ..Options::default()
    };
    o.ssd.write_bytes_per_sec = 4096;
    let e = Db::open("/db", o.clone()).err().unwrap().to_string();
    assert!(
        e.contains("ssd.write_bytes_per_sec 4096 is below the minimum"),
        "{e}"
    );
    o.ssd.write_bytes_per_sec = 0;
    o.ssd.read_bytes_per_sec = 999_999;
    let e = Db::open("/db", o.clone()).err().unwrap().to_string();
    assert!(e.contains("ssd.read_bytes_per_sec 999999"), "{e}");
    o.ssd.read_bytes_per_sec = 0;
    Db::open("/db", o).unwrap().close().unwrap();
}

#[test]
fn only_the_ssd_tier_passes_through_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = small_options();
    o.design = Design::LEVELED_PM;
    o.pm.size_bytes = 32 << 20;
    o.pm.chunk_bytes = 256 << 10;
    o.ssd.write_bytes_per_sec = 1_000_000_000;
    let db = Db::open(dir.path(), o).unwrap();
    for i in 0..20_000 {
        db.put(&key(i), &value(i, 0)).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let s = db.stats();
    let m = db.options().fs.as_ssd_model().unwrap().stats();
    let ssd =
        s.ssd_written_wal + s.ssd_written_manifest + s.ssd_written_flush + s.ssd_written_compaction;
    // The WAL and L0 went to PM, past the model; the compacted tables and the manifest to SSD,
    // through it.
    assert!(
        s.pm_written_wal > 1_000_000 && s.ssd_written_compaction > 0,
        "{s:?}"
    );
    assert!(
        m.bytes_written >= ssd && m.bytes_written < ssd + 4096,
        "{m:?} {s:?}"
    );
}
