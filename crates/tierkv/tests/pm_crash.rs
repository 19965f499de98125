//! Crash simulation over the PM tier of the `leveled-pm` design: the WAL append on the PM log,
//! the memtable flush into PM L0 tables, compactions out of PM, and every manifest change.
//!
//! A small workload (<= 50 operations) runs on an in-memory SSD (`MemFs`) and a
//! crash-simulation PM pool. At EVERY fence of the pool, a hook takes crash images — the strict
//! image, the image with every pending line, and 32 random subsets of pending 8-byte words —
//! together with the SSD state at that instant, and opens a second database on each. Each must
//! open, and hold exactly the state after some prefix of the workload's writes that includes
//! every write acknowledged before the fence (no acknowledged write lost, no hole, no deleted key
//! back), then accept new writes.

use parking_lot::Mutex;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use tierkv::fs::{CrashMode, MemFs};
use tierkv::pm::{CrashImage, DurabilityMode, LatencyModel, PmPool, PoolOptions};
use tierkv::{Db, Design, Options, WriteBatch, WriteOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

#[derive(Clone, Debug)]
enum Op {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
    Batch(Vec<(Vec<u8>, Option<Vec<u8>>)>),
    Flush,
    Compact,
}

fn pool_options() -> PoolOptions {
    PoolOptions {
        size: 2 << 20,
        mode: DurabilityMode::Emulated,
        latency: LatencyModel {
            read_ns: 0,
            write_ns: 0,
        },
        chunk_size: 64 << 10,
    }
}

fn options(fs: &MemFs, pool: Arc<PmPool>) -> Options {
    let mut o = Options {
        design: Design::LeveledPm,
        write_buffer_size: 4096,
        ..Options::default()
    };
    o.fs = Arc::new(fs.clone());
    o.pm.pool = Some(pool);
    o.pm.chunk_bytes = 64 << 10;
    o.table.block_size = 1024;
    o.compaction.level0_compaction_trigger = 2;
    o.compaction.target_file_size = 4096;
    o.compaction.max_bytes_for_level_base = 16 << 10;
    o.compaction.num_levels = 4;
    o
}

fn workload(seed: u64) -> Vec<Op> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let key = |rng: &mut SmallRng| format!("k{:02}", rng.gen_range(0..16)).into_bytes();
    let val = |rng: &mut SmallRng| vec![rng.gen::<u8>(); rng.gen_range(0..400)];
    (0..48)
        .map(|i| match (i, rng.gen_range(0..100)) {
            (20, _) => Op::Flush,
            (40, _) => Op::Compact,
            (_, 0..=59) => Op::Put(key(&mut rng), val(&mut rng)),
            (_, 60..=79) => Op::Delete(key(&mut rng)),
            _ => Op::Batch(
                (0..rng.gen_range(1..5))
                    .map(|_| {
                        let k = key(&mut rng);
                        (k, rng.gen_bool(0.7).then(|| val(&mut rng)))
                    })
                    .collect(),
            ),
        })
        .collect()
}

/// The model after the first `n` writes (flush/compact are not writes).
fn model_after(ops: &[Op], n: usize) -> Model {
    let mut m = Model::new();
    for op in ops.iter().filter(|o| !matches!(o, Op::Flush | Op::Compact)).take(n) {
        match op {
            Op::Put(k, v) => {
                m.insert(k.clone(), v.clone());
            }
            Op::Delete(k) => {
                m.remove(k);
            }
            Op::Batch(b) => {
                for (k, v) in b {
                    match v {
                        Some(v) => m.insert(k.clone(), v.clone()),
                        None => m.remove(k),
                    };
                }
            }
            Op::Flush | Op::Compact => unreachable!(),
        }
    }
    m
}

fn contents(db: &Db) -> Model {
    db.scan(..)
        .unwrap()
        .map(|e| e.unwrap())
        .collect::<BTreeMap<_, _>>()
}

/// Opens a database on one crash image and checks it against the models.
fn verify_image(
    ops: &[Op],
    ssd: MemFs,
    image: Vec<u8>,
    acked_lo: usize,
    acked_hi: usize,
    what: &str,
) {
    let pool = PmPool::open_crash_image(image, &pool_options())
        .unwrap_or_else(|e| panic!("{what}: pool image does not open: {e}"));
    let opts = options(&ssd, Arc::clone(&pool));
    let db = Db::open(Path::new("/db"), opts.clone())
        .unwrap_or_else(|e| panic!("{what}: recovery failed: {e}"));
    let got = contents(&db);
    let writes = ops.iter().filter(|o| !matches!(o, Op::Flush | Op::Compact)).count();
    let ok = (acked_lo..=(acked_hi + 1).min(writes)).any(|n| model_after(ops, n) == got);
    assert!(
        ok,
        "{what}: recovered state is not the state after any prefix in {acked_lo}..={}: {got:?}",
        acked_hi + 1
    );
    db.put(b"after-crash", b"x").unwrap();
    drop(db);
    let db = Db::open(Path::new("/db"), opts).unwrap_or_else(|e| panic!("{what}: reopen: {e}"));
    assert_eq!(db.get(b"after-crash").unwrap(), Some(b"x".to_vec()), "{what}");
}

/// Mixes two images per 8-byte word: the torn subsets of pending lines.
fn torn(strict: &[u8], pending: &[u8], rng: &mut SmallRng) -> Vec<u8> {
    let mut out = strict.to_vec();
    for (i, (a, b)) in strict.chunks(8).zip(pending.chunks(8)).enumerate() {
        if a != b && rng.gen_bool(0.5) {
            out[i * 8..i * 8 + b.len()].copy_from_slice(b);
        }
    }
    out
}

fn run(seed: u64) -> (u64, usize) {
    let ops = Arc::new(workload(seed));
    let ssd = MemFs::new();
    let pool = PmPool::create_crash_sim(&pool_options(), true).unwrap();
    let acked = Arc::new(AtomicUsize::new(0));
    let checked = Arc::new(AtomicU64::new(0));
    let failure: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
    {
        let (ops, ssd2, acked, checked, failure) = (
            Arc::clone(&ops),
            ssd.clone(),
            Arc::clone(&acked),
            Arc::clone(&checked),
            Arc::clone(&failure),
        );
        let weak = Arc::downgrade(&pool);
        let busy = Arc::new(std::sync::atomic::AtomicBool::new(false));
        pool.set_fence_hook(Some(Box::new(move |fence| {
            let Some(pool) = weak.upgrade() else { return };
            if busy.swap(true, Ordering::AcqRel) {
                return; // a fence inside the hook's own work
            }
            let lo = acked.load(Ordering::SeqCst);
            let strict = pool.crash_image(CrashImage::Strict).expect("crash-sim pool");
            let pending = pool.crash_image(CrashImage::AllPending).expect("crash-sim pool");
            let synced = ssd2.crash(CrashMode::SyncedOnly);
            let process = ssd2.crash(CrashMode::ProcessCrash);
            let hi = acked.load(Ordering::SeqCst);
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let what = |k: &str| format!("seed {seed} fence {fence} {k}");
                verify_image(&ops, synced.crash(CrashMode::ProcessCrash), strict.clone(), lo, hi, &what("strict"));
                verify_image(&ops, synced.crash(CrashMode::ProcessCrash), pending.clone(), lo, hi, &what("all-pending"));
                verify_image(&ops, process.crash(CrashMode::ProcessCrash), pending.clone(), lo, hi, &what("all-pending+process"));
                let mut rng = SmallRng::seed_from_u64(seed ^ fence);
                for t in 0..32 {
                    let img = torn(&strict, &pending, &mut rng);
                    if std::env::var("PM_DUMP").is_ok() {
                        std::fs::write(format!("/tmp/pmdump-{fence}-{t}-strict"), &strict).unwrap();
                        std::fs::write(format!("/tmp/pmdump-{fence}-{t}-pending"), &pending).unwrap();
                        std::fs::write(format!("/tmp/pmdump-{fence}-{t}-torn"), &img).unwrap();
                    }
                    verify_image(&ops, synced.crash(CrashMode::ProcessCrash), img, lo, hi, &what(&format!("torn {t}")));
                }
            }));
            if let Err(p) = r {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .unwrap_or_else(|| "panic".into());
                failure.lock().get_or_insert(msg);
            }
            checked.fetch_add(1, Ordering::Relaxed);
            busy.store(false, Ordering::Release);
        })));
    }
    let db = Db::open(Path::new("/db"), options(&ssd, Arc::clone(&pool))).unwrap();
    for op in ops.iter() {
        match op {
            Op::Put(k, v) => db.put(k, v).unwrap(),
            Op::Delete(k) => db.delete(k).unwrap(),
            Op::Batch(b) => {
                let mut wb = WriteBatch::new();
                for (k, v) in b {
                    match v {
                        Some(v) => wb.put(k, v),
                        None => wb.delete(k),
                    }
                }
                db.write(&WriteOptions::default(), wb).unwrap();
            }
            Op::Flush => db.flush().unwrap(),
            Op::Compact => db.compact_range(None, None).unwrap(),
        }
        if !matches!(op, Op::Flush | Op::Compact) {
            acked.fetch_add(1, Ordering::SeqCst);
        }
    }
    let final_state = contents(&db);
    drop(db);
    pool.set_fence_hook(None);
    if let Some(f) = failure.lock().take() {
        panic!("{f}");
    }
    let writes = ops.iter().filter(|o| !matches!(o, Op::Flush | Op::Compact)).count();
    assert_eq!(final_state, model_after(&ops, writes));
    (checked.load(Ordering::Relaxed), writes)
}

#[test]
fn crash_at_every_pm_fence_leveled_pm() {
    for seed in [1u64, 2] {
        let (fences, writes) = run(seed);
        // The workload really exercises the PM tier: WAL appends fence at least once each.
        assert!(fences as usize > writes, "seed {seed}: only {fences} fences for {writes} writes");
        eprintln!("seed {seed}: {fences} fences checked, 35 images each");
    }
}
