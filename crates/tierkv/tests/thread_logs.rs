//! FluidKV's FastStore front end (`pm.thread_logs`): many writers without a leader, each
//! appending to its own PM log.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use tierkv::{Db, Design, Options, ReadOptions, WriteBatch, WriteOptions};

const ACCOUNTS: u32 = 16;
const START: u64 = 1000;

fn account(i: u32) -> Vec<u8> {
    format!("acct{i:02}").into_bytes()
}

fn options(thread_logs: bool) -> Options {
    let mut o = Design::LEVELED_PM.options(Options {
        design: Design::LEVELED_PM,
        write_buffer_size: 64 << 10,
        ..Options::default()
    });
    o.pm.thread_logs = thread_logs;
    o.pm.chunk_bytes = 64 << 10;
    o.pm.size_bytes = 64 << 20;
    o.compaction.target_file_size = 64 << 10;
    o.compaction.max_bytes_for_level_base = 256 << 10;
    o
}

fn balance(db: &Db, r: &ReadOptions, i: u32) -> u64 {
    let v = db
        .get_with(r, &account(i))
        .unwrap()
        .expect("every account exists");
    u64::from_le_bytes(v.try_into().unwrap())
}

/// Four writers move money between accounts in atomic batches and write keys of their own
/// (puts and deletes) while a reader checks, at a snapshot and through an iterator, that the
/// accounts always add up: a snapshot never sees a later write without an earlier one, nor
/// half a batch. The writes of each thread survive flushes, compactions and reopening (with
/// and without the front end: the other one replays its logs).
#[test]
fn concurrent_writers_publish_in_order_and_survive_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(dir.path(), options(true)).unwrap());
    let mut b = WriteBatch::new();
    for i in 0..ACCOUNTS {
        b.put(&account(i), &START.to_le_bytes());
    }
    db.write(&WriteOptions::default(), b).unwrap();
    let total = START * u64::from(ACCOUNTS);
    let stop = Arc::new(AtomicBool::new(false));
    let barrier = Arc::new(Barrier::new(5));
    let reader = {
        let (db, stop, barrier) = (Arc::clone(&db), Arc::clone(&stop), Arc::clone(&barrier));
        std::thread::spawn(move || {
            barrier.wait();
            let mut checks = 0u64;
            while !stop.load(Ordering::Relaxed) || checks < 10 {
                let snap = db.snapshot();
                let seq = snap.sequence();
                let r = ReadOptions {
                    snapshot: Some(snap),
                    ..ReadOptions::default()
                };
                let sum: u64 = (0..ACCOUNTS).map(|i| balance(&db, &r, i)).sum();
                assert_eq!(sum, total, "gets at snapshot {seq}");
                let mut it = db.iter(&r).unwrap();
                it.seek(b"acct");
                let mut sum = 0;
                while it.valid() && it.key().starts_with(b"acct") {
                    sum += u64::from_le_bytes(it.value().try_into().unwrap());
                    it.next();
                }
                it.status().unwrap();
                assert_eq!(sum, total, "scan at snapshot {seq}");
                checks += 1;
            }
            checks
        })
    };
    let writers: Vec<_> = (0..4u32)
        .map(|t| {
            let (db, barrier) = (Arc::clone(&db), Arc::clone(&barrier));
            std::thread::spawn(move || {
                barrier.wait();
                let mut own = BTreeMap::new();
                let mut calls = 0u64;
                let mut x = 0x9e37_79b9_u64.wrapping_mul(u64::from(t) + 1);
                for n in 0..3000u32 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    // A transfer between two of the four accounts this thread owns (no other
                    // thread writes them, so reading the balances first loses no update): an
                    // atomic batch of both new balances, which keeps the sum only whole.
                    let (a, b) = (t * 4 + (x % 4) as u32, t * 4 + ((x >> 8) % 4) as u32);
                    if n.is_multiple_of(3) && a != b {
                        let r = ReadOptions::default();
                        let (va, vb) = (balance(&db, &r, a), balance(&db, &r, b));
                        if va > 0 {
                            let mut wb = WriteBatch::new();
                            wb.put(&account(a), &(va - 1).to_le_bytes());
                            wb.put(&account(b), &(vb + 1).to_le_bytes());
                            db.write(&WriteOptions::default(), wb).unwrap();
                            calls += 1;
                        }
                    }
                    let k = format!("t{t}-{:04}", x % 700).into_bytes();
                    calls += 1;
                    if x.is_multiple_of(5) {
                        db.delete(&k).unwrap();
                        own.remove(&k);
                    } else {
                        let v = format!("{t}:{n}:")
                            .repeat(1 + (x % 40) as usize)
                            .into_bytes();
                        let sync = n.is_multiple_of(500);
                        let mut wb = WriteBatch::new();
                        wb.put(&k, &v);
                        db.write(
                            &WriteOptions {
                                sync,
                                ..WriteOptions::default()
                            },
                            wb,
                        )
                        .unwrap();
                        own.insert(k, v);
                    }
                }
                (own, calls)
            })
        })
        .collect();
    let mut model = BTreeMap::new();
    // The accounts' first batch, then each thread's writes.
    let mut calls = 1;
    for w in writers {
        let (own, n) = w.join().unwrap();
        model.extend(own);
        calls += n;
    }
    stop.store(true, Ordering::Relaxed);
    let checks = reader.join().unwrap();
    assert!(checks >= 10);
    let s = db.stats();
    assert!(s.flushes > 5, "{s:?}");
    // Every write has its own log record (no write groups, as the memtable front end makes).
    assert_eq!(s.wal_appends, calls, "{s:?}");
    let verify = |db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>| {
        let r = ReadOptions::default();
        for (k, v) in model {
            assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{k:?}");
        }
        let sum: u64 = (0..ACCOUNTS).map(|i| balance(db, &r, i)).sum();
        assert_eq!(sum, total);
        let own: Vec<(Vec<u8>, Vec<u8>)> = db
            .scan(&b"t"[..]..&b"u"[..])
            .unwrap()
            .collect::<tierkv::Result<_>>()
            .unwrap();
        assert!(own.iter().map(|(k, v)| (k, v)).eq(model.iter()));
    };
    verify(&db, &model);
    let db = Arc::try_unwrap(db).ok().expect("the only handle");
    db.close().unwrap();
    for thread_logs in [true, false, true] {
        let db = Db::open(dir.path(), options(thread_logs))
            .unwrap_or_else(|e| panic!("reopen with thread_logs {thread_logs}: {e}"));
        verify(&db, &model);
        // Writes left in the logs (unflushed) for the next open, the other front end.
        for i in 0..200u32 {
            let k = format!("t9-{i:04}").into_bytes();
            db.put(&k, b"late").unwrap();
        }
        drop(db);
        model.extend((0..200u32).map(|i| (format!("t9-{i:04}").into_bytes(), b"late".to_vec())));
    }
    tierkv::Db::check(dir.path(), options(true)).unwrap();
}

/// `pm.thread_logs` is refused for a design whose log is not on PM in front of a DRAM
/// memtable.
#[test]
fn thread_logs_need_a_pm_log_in_front_of_a_dram_memtable() {
    for design in [Design::LEVELED, Design::SLMDB, Design::LABDB] {
        let dir = tempfile::tempdir().unwrap();
        let mut o = design.options(Options {
            design,
            ..Options::default()
        });
        o.pm.thread_logs = true;
        let e = Db::open(dir.path(), o).err().expect("refused");
        assert!(e.to_string().contains("thread_logs"), "{design}: {e}");
    }
}
