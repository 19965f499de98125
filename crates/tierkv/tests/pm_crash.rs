//! Crash simulation over the PM tier of the `leveled-pm` design: the WAL append on the PM log,
//! the memtable flush into PM L0 tables, compactions out of PM, and every manifest change.
//!
//! A small workload (<= 50 operations) runs on an in-memory SSD (`MemFs`) and a
//! crash-simulation PM pool, once per fence of the pool. At the chosen fence a hook freezes the
//! SSD (every later SSD operation fails, as if the process had died there) and takes the crash
//! images of the pool just before the fence takes effect (so the persist it completes is in
//! flight) — the strict image, the image with every pending line, 32 random subsets of pending
//! 8-byte words and 16 random subsets of whole pending lines — then a second database is opened on each image together
//! with the SSD's synced state (and, for the all-pending image, its process-crash state). Each must
//! open, and hold exactly the state after some prefix of the workload's writes that includes
//! every write acknowledged before the fence (no acknowledged write lost, no hole, no deleted key
//! back), then accept new writes.

use parking_lot::Mutex;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
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
    for op in ops
        .iter()
        .filter(|o| !matches!(o, Op::Flush | Op::Compact))
        .take(n)
    {
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
    let writes = ops
        .iter()
        .filter(|o| !matches!(o, Op::Flush | Op::Compact))
        .count();
    let ok = (acked_lo..=(acked_hi + 1).min(writes)).any(|n| model_after(ops, n) == got);
    assert!(
        ok,
        "{what}: recovered state is not the state after any prefix in {acked_lo}..={}: {got:?}",
        acked_hi + 1
    );
    db.put(b"after-crash", b"x").unwrap();
    drop(db);
    let db = Db::open(Path::new("/db"), opts).unwrap_or_else(|e| panic!("{what}: reopen: {e}"));
    assert_eq!(
        db.get(b"after-crash").unwrap(),
        Some(b"x".to_vec()),
        "{what}"
    );
}

/// Crash images taken atomically at one fence.
struct Captured {
    strict: Vec<u8>,
    pending: Vec<u8>,
    torn: Vec<Vec<u8>>,
    acked_lo: usize,
    acked_hi: usize,
}

/// Runs the workload once and captures the crash state at fence `target`: the SSD file system
/// is frozen first (every later SSD operation fails, as if the process had died there), then the
/// pool images are taken, so PM and SSD show the same instant. Returns the capture (if the run
/// reached that fence), the SSD, and the number of fences the run made.
fn run_once(seed: u64, ops: &Arc<Vec<Op>>, target: u64) -> (Option<Captured>, MemFs, u64) {
    let ssd = MemFs::new();
    let pool = PmPool::create_crash_sim(&pool_options(), true).unwrap();
    let acked = Arc::new(AtomicUsize::new(0));
    let captured: Arc<Mutex<Option<Captured>>> = Arc::new(Mutex::new(None));
    {
        let (ssd2, acked, captured) = (ssd.clone(), Arc::clone(&acked), Arc::clone(&captured));
        let weak = Arc::downgrade(&pool);
        pool.set_fence_hook(Some(Box::new(move |fence| {
            if fence != target {
                return;
            }
            let Some(pool) = weak.upgrade() else { return };
            ssd2.freeze_after(0);
            let acked_lo = acked.load(Ordering::SeqCst);
            let strict = pool
                .crash_image(CrashImage::Strict)
                .expect("crash-sim pool");
            let pending = pool
                .crash_image(CrashImage::AllPending)
                .expect("crash-sim pool");
            // Each image is taken at one instant by the pool itself: images taken at different
            // instants must never be mixed (another thread may have progressed in between).
            let torn = (0..32)
                .map(|t| CrashImage::Torn(seed * 1000 + t))
                .chain((0..16).map(|t| CrashImage::TornLines(seed * 1000 + t)))
                .map(|kind| pool.crash_image(kind).expect("crash-sim pool"))
                .collect();
            let acked_hi = acked.load(Ordering::SeqCst);
            *captured.lock() = Some(Captured {
                strict,
                pending,
                torn,
                acked_lo,
                acked_hi,
            });
        })));
    }
    if let Ok(db) = Db::open(Path::new("/db"), options(&ssd, Arc::clone(&pool))) {
        for op in ops.iter() {
            let r = match op {
                Op::Put(k, v) => db.put(k, v),
                Op::Delete(k) => db.delete(k),
                Op::Batch(b) => {
                    let mut wb = WriteBatch::new();
                    for (k, v) in b {
                        match v {
                            Some(v) => wb.put(k, v),
                            None => wb.delete(k),
                        }
                    }
                    db.write(&WriteOptions::default(), wb)
                }
                Op::Flush => db.flush(),
                Op::Compact => db.compact_range(None, None),
            };
            if r.is_err() {
                assert!(
                    ssd.is_frozen(),
                    "seed {seed}: {op:?} failed without a crash: {r:?}"
                );
                break;
            }
            if !matches!(op, Op::Flush | Op::Compact) {
                acked.fetch_add(1, Ordering::SeqCst);
            }
        }
        if target == u64::MAX {
            let writes = ops
                .iter()
                .filter(|o| !matches!(o, Op::Flush | Op::Compact))
                .count();
            assert_eq!(
                contents(&db),
                model_after(ops, writes),
                "seed {seed}: final state"
            );
        }
    }
    pool.set_fence_hook(None);
    let fences = pool.fence_count();
    let c = captured.lock().take();
    (c, ssd, fences)
}

/// Crashes at every fence of the workload of `seed`; returns (fences, writes).
fn run(seed: u64) -> (u64, usize) {
    let ops = Arc::new(workload(seed));
    let (_, _, total) = run_once(seed, &ops, u64::MAX);
    let mut checked = 0;
    for target in 1..=total + 5 {
        let (captured, ssd, _) = run_once(seed, &ops, target);
        let Some(c) = captured else { continue };
        let synced = ssd.crash(CrashMode::SyncedOnly);
        let process = ssd.crash(CrashMode::ProcessCrash);
        let what = |k: &str| format!("seed {seed} fence {target} {k}");
        let (lo, hi) = (c.acked_lo, c.acked_hi);
        verify_image(
            &ops,
            synced.crash(CrashMode::ProcessCrash),
            c.strict.clone(),
            lo,
            hi,
            &what("strict"),
        );
        verify_image(
            &ops,
            synced.crash(CrashMode::ProcessCrash),
            c.pending.clone(),
            lo,
            hi,
            &what("all-pending"),
        );
        verify_image(
            &ops,
            process.crash(CrashMode::ProcessCrash),
            c.pending.clone(),
            lo,
            hi,
            &what("all-pending+process"),
        );
        for (t, img) in c.torn.into_iter().enumerate() {
            verify_image(
                &ops,
                synced.crash(CrashMode::ProcessCrash),
                img,
                lo,
                hi,
                &what(&format!("torn {t}")),
            );
        }
        checked += 1;
    }
    let writes = ops
        .iter()
        .filter(|o| !matches!(o, Op::Flush | Op::Compact))
        .count();
    (checked, writes)
}

#[test]
fn crash_at_every_pm_fence_leveled_pm() {
    for seed in [1u64, 2] {
        let (fences, writes) = run(seed);
        // The workload really exercises the PM tier: WAL appends fence at least once each.
        assert!(
            fences as usize > writes,
            "seed {seed}: only {fences} fences for {writes} writes"
        );
        eprintln!("seed {seed}: {fences} fences checked, 51 images each");
    }
}
