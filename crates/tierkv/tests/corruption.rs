//! Damage on purpose: torn, zeroed and garbage WAL tails (tolerated), damage in the middle of a
//! WAL or in an older WAL, flipped bytes in SST data, index and footer, in the manifest, a torn
//! manifest tail, a missing table. Each case asserts the exact outcome: which data is still
//! returned, and that every error is `Error::Corruption` naming the damaged file — never wrong
//! data, never a panic. `Db::check` must detect every damage and pass on a clean database.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use tierkv::fs::{CrashMode, FaultSpec, FileSystem, FsOp, MemFs};
use tierkv::{Db, Error, Options, WriteBatch, WriteOptions};

const DB: &str = "/db";

fn options(fs: &MemFs) -> Options {
    let mut o = Options {
        fs: Arc::new(fs.clone()),
        ..Options::default()
    };
    o.table.block_size = 1024;
    o
}

fn key(i: usize) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn value(i: usize) -> Vec<u8> {
    let mut v = format!("value{i}-").into_bytes();
    v.resize(100, b'a' + (i % 26) as u8);
    v
}

/// Panics unless `e` is `Error::Corruption` whose location contains `file`.
#[track_caller]
fn assert_corruption_in(e: &Error, file: &str) {
    match e {
        Error::Corruption { location, .. } if location.contains(file) => {}
        other => panic!("expected corruption in {file}, got {other:?}"),
    }
}

fn files_ending(fs: &MemFs, suffix: &str) -> Vec<PathBuf> {
    fs.file_names()
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect()
}

fn newest_log(fs: &MemFs) -> PathBuf {
    files_ending(fs, ".log").into_iter().max().expect("a WAL")
}

fn file_name(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

fn current_manifest(fs: &MemFs) -> PathBuf {
    let cur = fs.file_data(&Path::new(DB).join("CURRENT")).unwrap();
    Path::new(DB).join(String::from_utf8(cur).unwrap().trim_end())
}

// ---------------------------------------------------------------------------------------------
// WAL.

/// Writes `n` records (one key each, every fifth synced) to the WAL only (no flush) and returns
/// the file system, the newest WAL and its size before each record.
fn db_with_wal_records(n: usize) -> (MemFs, PathBuf, Vec<u64>) {
    let fs = MemFs::new();
    let db = Db::open(DB, options(&fs)).unwrap();
    let wal = newest_log(&fs);
    let mut sizes = Vec::new();
    for i in 0..n {
        sizes.push(fs.file_data(&wal).unwrap().len() as u64);
        let mut b = WriteBatch::new();
        b.put(&key(i), &value(i));
        db.write(
            &WriteOptions {
                sync: i % 5 == 0,
                ..Default::default()
            },
            b,
        )
        .unwrap();
    }
    drop(db); // no flush: everything is in the WAL only
    assert_eq!(newest_log(&fs), wal, "no WAL rotation");
    (fs, wal, sizes)
}

fn assert_present(db: &Db, range: std::ops::Range<usize>) {
    for i in range {
        assert_eq!(db.get(&key(i)).unwrap(), Some(value(i)), "key {i}");
    }
}

#[test]
fn wal_torn_tail_is_dropped() {
    let n = 20;
    let (fs, wal, sizes) = db_with_wal_records(n);
    // Cut the last record in its middle (inside the header, then inside the payload).
    for cut in [3, 40] {
        let img = fs.crash(CrashMode::ProcessCrash);
        img.truncate(&wal, sizes[n - 1] + cut);
        let report = Db::check(DB, options(&img)).unwrap();
        assert_eq!(report.wal_torn_tail_bytes, cut, "cut {cut}");
        assert_eq!(report.wal_records_checked, n as u64 - 1);
        let db = Db::open(DB, options(&img)).unwrap();
        assert_present(&db, 0..n - 1);
        assert_eq!(db.get(&key(n - 1)).unwrap(), None);
        assert_eq!(db.scan(..).unwrap().count(), n - 1);
        // The database keeps working and the dropped tail stays dropped.
        db.put(b"new", b"1").unwrap();
        db.close().unwrap();
        let db = Db::open(DB, options(&img)).unwrap();
        assert_present(&db, 0..n - 1);
        assert_eq!(db.get(&key(n - 1)).unwrap(), None);
        assert_eq!(db.get(b"new").unwrap(), Some(b"1".to_vec()));
    }
}

#[test]
fn wal_zeroed_tail_is_dropped() {
    let n = 20;
    let (fs, wal, _) = db_with_wal_records(n);
    let len = fs.file_data(&wal).unwrap().len() as u64;
    fs.truncate(&wal, len + 100); // extends with zeros
    assert!(Db::check(DB, options(&fs)).is_ok());
    let db = Db::open(DB, options(&fs)).unwrap();
    assert_present(&db, 0..n);
    assert_eq!(db.scan(..).unwrap().count(), n);
}

#[test]
fn wal_garbage_tail_is_dropped() {
    let n = 20;
    let (fs, wal, _) = db_with_wal_records(n);
    let mut data = fs.file_data(&wal).unwrap();
    let mut x: u32 = 12345;
    for _ in 0..300 {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        data.push((x >> 16) as u8);
    }
    fs.set_file_data(&wal, data);
    let report = Db::check(DB, options(&fs)).unwrap();
    assert_eq!(report.wal_records_checked, n as u64);
    let db = Db::open(DB, options(&fs)).unwrap();
    assert_present(&db, 0..n);
    assert_eq!(db.scan(..).unwrap().count(), n);
}

#[test]
fn wal_damage_followed_by_valid_records_is_corruption() {
    let n = 20;
    let (fs, wal, sizes) = db_with_wal_records(n);
    // Payload byte of record 5 (header is 7 bytes); records 6.. are intact.
    for offset in [sizes[5] + 20, sizes[5] + 5, sizes[5]] {
        let img = fs.crash(CrashMode::ProcessCrash);
        img.corrupt_byte(&wal, offset, 0x40);
        let e = Db::open(DB, options(&img)).err().expect("open must fail");
        assert_corruption_in(&e, &file_name(&wal));
        let e = Db::check(DB, options(&img)).unwrap_err();
        assert_corruption_in(&e, &file_name(&wal));
    }
}

/// Damage in any record but the last, at its header, its payload or its checksum, is
/// corruption; damage in the last record is a torn tail that drops exactly that record.
#[test]
fn damage_in_every_record_of_a_wal() {
    let n = 30;
    let (fs, wal, sizes) = db_with_wal_records(n);
    let end = fs.file_data(&wal).unwrap().len() as u64;
    for r in 0..n {
        let next = sizes.get(r + 1).copied().unwrap_or(end);
        for offset in [
            sizes[r],
            sizes[r] + 4,
            sizes[r] + 6,
            (sizes[r] + next) / 2,
            next - 1,
        ] {
            let img = fs.crash(CrashMode::ProcessCrash);
            img.corrupt_byte(&wal, offset, 0x81);
            let opened = Db::open(DB, options(&img));
            if r + 1 < n {
                let e = opened
                    .err()
                    .unwrap_or_else(|| panic!("record {r} at {offset}"));
                assert_corruption_in(&e, &file_name(&wal));
            } else {
                let db = opened.unwrap_or_else(|e| panic!("last record at {offset}: {e}"));
                assert_present(&db, 0..n - 1);
                assert_eq!(db.get(&key(n - 1)).unwrap(), None);
            }
        }
    }
}

/// The same on a PM WAL (`leveled-pm`): a damaged byte in the pool image in any record but the
/// last is corruption naming the WAL; in the last it is a dropped torn tail.
#[test]
fn damage_in_every_record_of_a_pm_wal() {
    use tierkv::pm::{CrashImage, PmPool, PoolOptions};
    let pool_options = PoolOptions {
        size: 2 << 20,
        chunk_size: 64 << 10,
        ..PoolOptions::default()
    };
    let ssd = MemFs::new();
    let pm_options = |ssd: &MemFs, pool: Arc<PmPool>| {
        let mut o = options(ssd);
        o.design = tierkv::Design::LEVELED_PM;
        o.pm.pool = Some(pool);
        o
    };
    let pool = PmPool::create_crash_sim(&pool_options, false).unwrap();
    let n = 20;
    {
        let db = Db::open(DB, pm_options(&ssd, Arc::clone(&pool))).unwrap();
        for i in 0..n {
            db.put(&key(i), &value(i)).unwrap();
        }
    }
    let image = pool.crash_image(CrashImage::Strict).unwrap();
    // The WAL is the only live file: its data starts 64 bytes into its first chunk, and each
    // record is a 7-byte header plus a 12-byte batch header plus the put.
    let word = |at: usize| u64::from_le_bytes(image[at..at + 8].try_into().unwrap()) as usize;
    let dir = pool
        .named_root(tierkv::fs::PMFS_ROOT_NAME)
        .unwrap()
        .expect("a file system") as usize;
    let entry = (0..1023)
        .map(|i| dir + 64 + i * 128)
        .find(|&e| word(e) != 0)
        .unwrap();
    let data = word(entry + 16) + 64;
    let record = 7 + 12 + 1 + 1 + key(0).len() + 1 + value(0).len();
    for r in 0..n {
        for within in [0, 5, 7, 20, record - 1] {
            let mut img = image.clone();
            img[data + r * record + within] ^= 0x22;
            let p = PmPool::open_crash_image(img, &pool_options).unwrap();
            let opened = Db::open(DB, pm_options(&ssd.crash(CrashMode::ProcessCrash), p));
            if r + 1 < n {
                let e = opened
                    .err()
                    .unwrap_or_else(|| panic!("record {r} byte {within}"));
                assert!(
                    e.is_corruption() && e.to_string().contains(".log"),
                    "record {r} byte {within}: {e}"
                );
            } else {
                let db = opened.unwrap_or_else(|e| panic!("last record byte {within}: {e}"));
                assert_present(&db, 0..n - 1);
                assert_eq!(db.get(&key(n - 1)).unwrap(), None);
            }
        }
    }
}

/// Writes keys until a flush fails (a failing table create keeps the rotated WALs), every
/// `sync_every`-th write synced (0: none); returns the crash image, its WALs oldest first and the
/// writes acknowledged.
fn db_with_older_wals(sync_every: usize) -> (MemFs, Vec<PathBuf>, usize) {
    let fs = MemFs::new();
    let mut o = options(&fs);
    o.write_buffer_size = 4096;
    let db = Db::open(DB, o).unwrap();
    fs.inject(FaultSpec {
        path_contains: Some(".sst".into()),
        ..FaultSpec::new(FsOp::Create)
    });
    let mut acked = 0;
    for i in 0..200 {
        let mut b = WriteBatch::new();
        b.put(&key(i), &value(i));
        let sync = sync_every > 0 && i % sync_every == sync_every - 1;
        if db
            .write(
                &WriteOptions {
                    sync,
                    ..Default::default()
                },
                b,
            )
            .is_err()
        {
            break;
        }
        acked = i + 1;
    }
    assert!(acked > 10 && acked < 200, "acked {acked}");
    drop(db);
    let img = fs.crash(CrashMode::ProcessCrash);
    let logs = files_ending(&img, ".log");
    assert!(logs.len() >= 2, "{logs:?}");
    // Undamaged, the image recovers every acknowledged write.
    {
        let clean = img.crash(CrashMode::ProcessCrash);
        let db = Db::open(DB, options(&clean)).unwrap();
        assert_present(&db, 0..acked);
    }
    (img, logs, acked)
}

/// A cut older WAL followed by a write acknowledged with `sync` cannot be a power failure's cut
/// (a sync write syncs every closed WAL first): corruption naming the WAL.
///
/// Every write is synced: the write that rotated the WAL is the newer WAL's first record
/// whenever the failed flush stops the writes (sparser syncs could leave the newer WAL with no
/// synced record, and the cut would then be a power failure's).
#[test]
fn damaged_tail_of_an_older_wal_before_a_synced_write_is_corruption() {
    let (img, logs, _) = db_with_older_wals(1);
    let older = &logs[0];
    let len = img.file_data(older).unwrap().len() as u64;
    img.truncate(older, len - 10);
    let e = Db::open(DB, options(&img)).err().expect("open must fail");
    assert_corruption_in(&e, &file_name(older));
    let e = Db::check(DB, options(&img)).unwrap_err();
    assert_corruption_in(&e, &file_name(older));
}

/// A cut older WAL followed only by writes acknowledged without `sync` (closed WALs are synced
/// in the background, so a power failure can cut one): point-in-time recovery opens with the
/// state at the cut, a prefix of the writes, and ignores the later WALs.
#[test]
fn cut_older_wal_before_unsynced_writes_recovers_to_the_cut() {
    let (img, logs, acked) = db_with_older_wals(0);
    let older = &logs[0];
    let len = img.file_data(older).unwrap().len() as u64;
    img.truncate(older, len - 10);
    let report = Db::check(DB, options(&img)).unwrap();
    assert!(report.wal_torn_tail_bytes > 0, "{report:?}");
    assert_eq!(report.wal_files_ignored, logs.len() - 1, "{report:?}");
    assert_recovers_to_a_cut(&img, acked);
}

/// Opens `img` and checks it holds a proper prefix of the `acked` writes, nothing after it.
fn assert_recovers_to_a_cut(img: &MemFs, acked: usize) {
    let db = Db::open(DB, options(img)).unwrap();
    let kept = (0..acked)
        .take_while(|&i| db.get(&key(i)).unwrap().is_some())
        .count();
    assert!(kept > 0 && kept < acked, "{kept} of {acked} writes kept");
    assert_present(&db, 0..kept);
    for i in kept..acked {
        assert_eq!(db.get(&key(i)).unwrap(), None, "key {i} after the cut");
    }
}

/// The end offsets of the records of a log whose records each fit in one block.
fn record_ends(data: &[u8]) -> Vec<u64> {
    let mut ends = Vec::new();
    let mut at = 0usize;
    while at + 7 <= data.len() {
        let len = u16::from_le_bytes([data[at + 4], data[at + 5]]) as usize;
        if len == 0 && data[at + 6] == 0 {
            break;
        }
        at += 7 + len;
        ends.push(at as u64);
    }
    ends
}

/// [`db_with_older_wals`] whose newer WAL holds batches (writes that reached it before the
/// failed flush stopped them; its first record is the link to the older WAL): the setup is
/// retried until it does.
fn older_wals_with_newer_records(sync_every: usize) -> (MemFs, Vec<PathBuf>, usize) {
    (0..50)
        .map(|_| db_with_older_wals(sync_every))
        .find(|(img, logs, _)| record_ends(&img.file_data(&logs[1]).unwrap()).len() > 1)
        .expect("a newer WAL with records within 50 tries")
}

/// A closed WAL cut exactly at a record boundary leaves no damaged bytes: the gap in the
/// sequence numbers shows it. Followed only by unsynced writes, recovery stops at the cut;
/// followed by a synced write, it is corruption.
///
/// In the synced case every write is synced, so that any record in the newer WAL is a synced
/// one (with sparser syncs the records that reached the newer WAL before the failed flush
/// stopped the writes may all be unsynced, and the cut would then be a power failure's).
#[test]
fn older_wal_cut_at_a_record_boundary() {
    for (sync_every, expect_corruption) in [(0, false), (1, true)] {
        let (img, logs, acked) = older_wals_with_newer_records(sync_every);
        let older = &logs[0];
        let ends = record_ends(&img.file_data(older).unwrap());
        assert!(ends.len() > 3, "{ends:?}");
        img.truncate(older, ends[ends.len() - 3]);
        if expect_corruption {
            let e = Db::open(DB, options(&img)).err().expect("open must fail");
            assert!(e.is_corruption(), "{e}");
            assert!(Db::check(DB, options(&img)).unwrap_err().is_corruption());
        } else {
            let report = Db::check(DB, options(&img)).unwrap();
            assert_eq!(report.wal_torn_tail_bytes, 0, "{report:?}");
            assert_eq!(report.wal_files_ignored, logs.len() - 1, "{report:?}");
            assert_recovers_to_a_cut(&img, acked);
        }
    }
}

/// A closed WAL emptied whole (a power failure before its first sync) while the newer WAL
/// keeps its records: nothing in the older WAL shows damage, and no record is left to measure a
/// gap from; the newer WAL's link record says what the older one held. Followed only by
/// unsynced writes, recovery opens the state before the older WAL (here: empty, the flush never
/// succeeded), not the newer writes over a hole; followed by a synced write, it is corruption
/// naming the emptied WAL.
#[test]
fn an_emptied_older_wal_is_a_cut_not_a_hole() {
    for (sync_every, expect_corruption) in [(0, false), (1, true)] {
        let (img, logs, acked) = older_wals_with_newer_records(sync_every);
        let older = &logs[0];
        img.truncate(older, 0);
        if expect_corruption {
            let e = Db::open(DB, options(&img)).err().expect("open must fail");
            assert_corruption_in(&e, &file_name(older));
            assert!(e.to_string().contains("writes are missing"), "{e}");
            let e = Db::check(DB, options(&img)).unwrap_err();
            assert_corruption_in(&e, &file_name(older));
        } else {
            let report = Db::check(DB, options(&img)).unwrap();
            assert_eq!(report.wal_files_ignored, logs.len() - 1, "{report:?}");
            let db = Db::open(DB, options(&img)).unwrap();
            for i in 0..acked {
                assert_eq!(db.get(&key(i)).unwrap(), None, "key {i} over the hole");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// SSTables.

const N: usize = 300;

/// A database whose `N` keys sit in one flushed table (about 30 data blocks of 1 KiB).
fn db_with_one_table() -> (MemFs, PathBuf) {
    let fs = MemFs::new();
    let db = Db::open(DB, options(&fs)).unwrap();
    for i in 0..N {
        db.put(&key(i), &value(i)).unwrap();
    }
    db.flush().unwrap();
    db.close().unwrap();
    let tables = files_ending(&fs, ".sst");
    assert_eq!(tables.len(), 1, "{tables:?}");
    let report = Db::check(DB, options(&fs)).unwrap();
    assert_eq!(report.tables_checked, 1);
    assert_eq!(report.entries_checked, N as u64);
    (fs, tables[0].clone())
}

/// The layout of a table, from its footer (48 bytes: filter handle, index handle, format
/// version, checksum, magic).
struct Layout {
    filter_offset: u64,
    filter_size: u64,
    index_offset: u64,
    index_size: u64,
    footer_offset: u64,
}

fn layout(fs: &MemFs, table: &Path) -> Layout {
    let data = fs.file_data(table).unwrap();
    let end = data.len() - 48;
    let f = &data[end..];
    let u = |i: usize| u64::from_le_bytes(f[i..i + 8].try_into().unwrap());
    let l = Layout {
        filter_offset: u(0),
        filter_size: u(8),
        index_offset: u(16),
        index_size: u(24),
        footer_offset: end as u64,
    };
    assert!(l.filter_size > 0 && l.filter_offset < l.index_offset);
    l
}

/// Reads every key through `get` and a full scan; returns the keys whose `get` failed. Every
/// error must be corruption naming `table`, every value returned must be right.
fn read_all_checked(fs: &MemFs, table: &Path) -> Vec<usize> {
    let name = file_name(table);
    let db = Db::open(DB, options(fs)).unwrap();
    let mut failed = Vec::new();
    for i in 0..N {
        match db.get(&key(i)) {
            Ok(v) => assert_eq!(v, Some(value(i)), "key {i}: wrong data"),
            Err(e) => {
                assert_corruption_in(&e, &name);
                failed.push(i);
            }
        }
    }
    // A full scan returns right entries, then the error.
    let mut seen = 0;
    let mut scan_error = None;
    let scan = match db.scan(..) {
        Ok(it) => it.collect::<Vec<_>>(),
        Err(e) => vec![Err(e)],
    };
    for e in scan {
        match e {
            Ok((k, v)) => {
                assert_eq!(k, key(seen));
                assert_eq!(v, value(seen));
                seen += 1;
            }
            Err(e) => {
                scan_error = Some(e);
                break;
            }
        }
    }
    let e = scan_error.expect("the scan must report the damage");
    assert_corruption_in(&e, &name);
    assert!(seen < N);
    // `check` refuses a database in use: close it first.
    drop(db);
    let e = Db::check(DB, options(fs)).unwrap_err();
    assert_corruption_in(&e, &name);
    failed
}

#[test]
fn sst_data_block_damage() {
    let (fs, table) = db_with_one_table();
    // Inside the first data block, in the middle of the data, and in the trailer (checksum)
    // of the last data block (data blocks end where the filter block starts).
    let l = layout(&fs, &table);
    for offset in [100, l.filter_offset / 2, l.filter_offset - 3] {
        let img = fs.crash(CrashMode::ProcessCrash);
        img.corrupt_byte(&table, offset, 0x01);
        let failed = read_all_checked(&img, &table);
        assert!(!failed.is_empty(), "offset {offset}: damage not detected");
        // Only the keys of the damaged block fail: the others are still readable.
        assert!(
            failed.len() < N / 5,
            "offset {offset}: {} failed",
            failed.len()
        );
        assert!(
            failed.windows(2).all(|w| w[1] == w[0] + 1),
            "contiguous: {failed:?}"
        );
        if offset == 100 {
            assert_eq!(failed[0], 0);
        }
    }
}

#[test]
fn sst_index_block_damage() {
    let (fs, table) = db_with_one_table();
    let l = layout(&fs, &table);
    for offset in [l.index_offset + 2, l.index_offset + l.index_size / 2] {
        let img = fs.crash(CrashMode::ProcessCrash);
        img.corrupt_byte(&table, offset, 0x08);
        let failed = read_all_checked(&img, &table);
        // The index guards every block: no key of the table can be read.
        assert_eq!(failed.len(), N, "offset {offset}");
    }
}

#[test]
fn sst_filter_block_damage() {
    let (fs, table) = db_with_one_table();
    let l = layout(&fs, &table);
    for offset in [l.filter_offset + 1, l.filter_offset + l.filter_size - 1] {
        let img = fs.crash(CrashMode::ProcessCrash);
        img.corrupt_byte(&table, offset, 0x04);
        let failed = read_all_checked(&img, &table);
        assert_eq!(failed.len(), N, "offset {offset}");
    }
}

#[test]
fn sst_footer_damage() {
    let (fs, table) = db_with_one_table();
    let end = layout(&fs, &table).footer_offset;
    // Filter handle, index handle, version, checksum, magic.
    for offset in [end + 3, end + 17, end + 33, end + 37, end + 47] {
        let img = fs.crash(CrashMode::ProcessCrash);
        img.corrupt_byte(&table, offset, 0x10);
        let failed = read_all_checked(&img, &table);
        assert_eq!(failed.len(), N, "offset {offset}");
    }
    // A table shorter than a footer (or of any size other than the one the manifest
    // recorded) fails the open, and `check`, with corruption naming it.
    let img = fs.crash(CrashMode::ProcessCrash);
    img.truncate(&table, 20);
    let e = Db::open(DB, options(&img)).err().expect("open must fail");
    assert_corruption_in(&e, &file_name(&table));
    let e = Db::check(DB, options(&img)).unwrap_err();
    assert_corruption_in(&e, &file_name(&table));
}

#[test]
fn missing_table_fails_open() {
    let (fs, table) = db_with_one_table();
    fs.remove(&table).unwrap();
    let e = Db::open(DB, options(&fs)).err().expect("open must fail");
    assert_corruption_in(&e, &file_name(&table));
    assert!(Db::check(DB, options(&fs)).is_err());
}

// ---------------------------------------------------------------------------------------------
// Manifest.

#[test]
fn manifest_damage_in_the_middle_fails_open() {
    let (fs, _) = db_with_one_table();
    let manifest = current_manifest(&fs);
    let len = fs.file_data(&manifest).unwrap().len() as u64;
    assert!(len > 30);
    // Several records: the first (the snapshot of the state at open) is damaged.
    for offset in [3, 10] {
        let img = fs.crash(CrashMode::ProcessCrash);
        img.corrupt_byte(&manifest, offset, 0x20);
        let e = Db::open(DB, options(&img)).err().expect("open must fail");
        assert_corruption_in(&e, "MANIFEST");
        let e = Db::check(DB, options(&img)).unwrap_err();
        assert_corruption_in(&e, "MANIFEST");
    }
}

/// A torn final manifest record is an edit that never committed (its sync never returned), so
/// nothing was deleted on its behalf: the WAL it would have retired is still there. Simulated by
/// failing the manifest sync of a flush (the record is appended, the sync fails, the database is
/// poisoned) and then tearing that record. The database must open and return every
/// acknowledged write.
#[test]
fn torn_manifest_tail_recovers_from_the_wal() {
    let fs = MemFs::new();
    let db = Db::open(DB, options(&fs)).unwrap();
    for i in 0..N {
        db.put(&key(i), &value(i)).unwrap();
    }
    let manifest = current_manifest(&fs);
    let before = fs.file_data(&manifest).unwrap().len() as u64;
    fs.inject(FaultSpec {
        path_contains: Some("MANIFEST".into()),
        ..FaultSpec::new(FsOp::Sync)
    });
    assert!(db.flush().is_err());
    assert!(matches!(db.put(b"x", b"y"), Err(Error::Poisoned(_))));
    drop(db);
    fs.clear_faults();
    let after = fs.file_data(&manifest).unwrap().len() as u64;
    assert!(after > before, "the flush appended a manifest record");
    for cut in [before + 3, before + (after - before) / 2, after - 1] {
        let img = fs.crash(CrashMode::ProcessCrash);
        img.truncate(&manifest, cut);
        let report = Db::check(DB, options(&img)).unwrap();
        assert_eq!(report.tables_checked, 0, "the torn edit is not applied");
        let db = Db::open(DB, options(&img)).unwrap();
        assert_present(&db, 0..N);
        assert_eq!(db.get(b"x").unwrap(), None);
        assert_eq!(db.scan(..).unwrap().count(), N);
        db.put(b"x", b"z").unwrap();
        db.close().unwrap();
        let db = Db::open(DB, options(&img)).unwrap();
        assert_present(&db, 0..N);
        assert_eq!(db.get(b"x").unwrap(), Some(b"z".to_vec()));
        db.close().unwrap();
        assert!(Db::check(DB, options(&img)).is_ok());
    }
    // Untouched (the whole record present but never synced), the edit may count: either way
    // every write is there.
    let img = fs.crash(CrashMode::ProcessCrash);
    let db = Db::open(DB, options(&img)).unwrap();
    assert_present(&db, 0..N);
}

#[test]
fn check_passes_on_a_clean_database_and_reports_what_it_read() {
    let fs = MemFs::new();
    let mut o = options(&fs);
    o.write_buffer_size = 16 << 10;
    // ~230 KB of data: several output tables after the full compaction.
    o.compaction.target_file_size = 64 << 10;
    let db = Db::open(DB, o.clone()).unwrap();
    for i in 0..2000 {
        db.put(&key(i), &value(i)).unwrap();
    }
    db.compact_range(None, None).unwrap();
    for i in 2000..2010 {
        db.put(&key(i), &value(i)).unwrap();
    }
    drop(db);
    let report = Db::check(DB, o).unwrap();
    assert!(report.tables_checked > 1, "{report:?}");
    assert_eq!(report.entries_checked, 2000);
    assert_eq!(report.wal_records_checked, 10);
    assert_eq!(report.wal_torn_tail_bytes, 0);
}
