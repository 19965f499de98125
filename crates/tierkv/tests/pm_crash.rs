//! Crash simulation over the PM tier, for every design of the registry that keeps data in PM
//! (`leveled` with its WAL on PM, `leveled-pm`): the WAL append on the PM log,
//! the memtable flush into PM L0 tables, compactions out of PM, and every manifest change.
//!
//! A small workload (<= 50 operations) runs on an in-memory SSD (`MemFs`) and a
//! crash-simulation PM pool, once per fence of the pool. At the chosen fence a hook freezes the
//! SSD (every later SSD operation fails, as if the process had died there) and takes the crash
//! images of the pool just before the fence takes effect (so the persist it completes is in
//! flight) — the strict image, the image with every pending line, 32 random subsets of pending
//! 8-byte words and 16 random subsets of whole pending lines — then a second database is opened
//! on each image together with the SSD's synced state (and, for the all-pending image, its
//! process-crash state); images of one instant that are equal (few pending words leave few
//! distinct torn images) are one input and recovered once (`support::Distinct`). Each must
//! open, and hold exactly the state after some prefix of the workload's writes that includes
//! every write acknowledged before the fence (no acknowledged write lost, no hole, no deleted key
//! back), then accept new writes.
//!
//! `fluidkv` also runs in a pool too small for its runs, so that the walk crosses compactions
//! that find no room and run again with their outputs on the SSD.
//!
//! `leveled` and `leveled-pm` also run a workload of unlogged puts (`disable_wal`) between
//! logged writes, so that the walk crosses sequence gaps within a WAL and between two.
//!
//! The workload pushes data into L2 and L3 and then deletes keys living there while only the
//! upper levels are compacted, so a compaction that drops a tombstone too early shows.
//!
//! Crashes during recovery: images of a first crash are recovered with the same hook crashing at
//! every fence of recovery, and each image of that second crash must recover to the same state
//! as an uninterrupted recovery of the first images (which holds every write acknowledged before
//! the first crash).

mod support;
use parking_lot::Mutex;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{Distinct, Image};
use tierkv::fs::{CrashMode, MemFs};
use tierkv::pm::{CrashImage, DurabilityMode, LatencyModel, PmPool, PoolOptions};
use tierkv::{Db, Design, Options, WriteBatch, WriteOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

#[derive(Clone, Debug)]
enum Op {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
    Batch(Vec<(Vec<u8>, Option<Vec<u8>>)>),
    /// A put that skips the WAL (`WriteOptions::disable_wal`): durable once flushed, lost by a
    /// crash before that. Only [`gap_workload`] makes them, each on a key of its own.
    Unlogged(Vec<u8>, Vec<u8>),
    Flush,
    Compact,
    /// Waits until the background compactions leave no level over its target.
    Settle,
}

/// True for the operations that are writes (flush, compact and settle are not).
fn is_write(op: &Op) -> bool {
    !matches!(op, Op::Flush | Op::Compact | Op::Settle)
}

/// The pool of `design`: 2 MiB of 64 KiB chunks, 4 MiB for designs that keep every run in the
/// pool (each run file takes at least one chunk).
fn pool_options(design: Design) -> PoolOptions {
    PoolOptions {
        // LAB-DB: room for its hot-key buffer beside the WAL's reserve.
        size: if let Some(chunks) = POOL_CHUNKS.with(|c| c.get()) {
            chunks * (64 << 10)
        } else if design.data_on_pm() || design == Design::LABDB {
            4 << 20
        } else {
            2 << 20
        },
        mode: DurabilityMode::Emulated,
        latency: LatencyModel {
            read_ns: 0,
            write_ns: 0,
        },
        chunk_size: 64 << 10,
    }
}

/// Tiny options for `design`, keeping data in the pool: with its log on PM where that is an
/// option (`pm.wal_on_pm`; designs that always keep data in PM ignore it).
fn options(design: Design, fs: &MemFs, pool: Arc<PmPool>) -> Options {
    let mut o = Options {
        design,
        write_buffer_size: 4096,
        ..Options::default()
    };
    o.pm.wal_on_pm = true;
    o.fs = Arc::new(fs.clone());
    o.pm.pool = Some(pool);
    o.pm.chunk_bytes = 64 << 10;
    o.table.block_size = 1024;
    // FluidKV's key-value separation and manifest in the pool (its defaults): the walks cross
    // value-log writes, the compactions that copy pointers or collect logs, and every manifest
    // record (and the creation's first manifest, before `CURRENT` exists) as PM stores.
    if design == Design::FLUIDKV {
        let defaults = design.options(Options::default());
        o.table.value_separation = defaults.table.value_separation;
        assert!(o.table.value_separation > 0);
        o.pm.manifest_on_pm = defaults.pm.manifest_on_pm;
        assert_eq!(o.manifest_tier(), tierkv::Tier::Pm);
    }
    o.compaction.level0_compaction_trigger = 2;
    o.compaction.target_file_size = 4096;
    o.compaction.max_bytes_for_level_base = 4 << 10;
    o.compaction.level_size_multiplier = 2;
    o.compaction.num_levels = 4;
    // LAB-DB: a tree of one leaf (16 keys) becomes immutable, so flushes switch trees and
    // compactions move chunks into L1.
    o.labdb.leaf_region_bytes = if WIDE.with(|w| w.get()) {
        // Room for trees of several leaves before they switch.
        64 << 10
    } else {
        4 << 10
    };
    o.labdb.immutable_at = 0.2;
    o.labdb.chunk_bytes = 1 << 10;
    // Its log: a WAL buffer of two 4 KiB halves, so the walks cross drains.
    o.labdb.wal_buffer_bytes = 8 << 10;
    // Its hot-key buffer: keys hot from their second flush, so the walks cross slot writes.
    o.labdb.hot_buffer_bytes = 16 << 10;
    o.labdb.hot_slot_bytes = 512;
    o.labdb.hot_threshold = 2;
    o.pm.thread_logs = THREAD_LOGS.with(|t| t.get());
    o.pm.compaction_space_check = SPACE_CHECK.with(|c| c.get());
    if SMALL_TABLES.with(|t| t.get()) {
        o.table.index_partition_blocks = 1;
        o.compaction.reuse_untouched_runs = true;
        o.compaction.reuse_untouched_tables = true;
        o.compaction.reuse_min_tables = 1;
        o.compaction.reuse_min_gap_bytes = Some(0);
        o.compaction.target_file_size = 16 << 10;
    }
    o
}

fn key(i: usize) -> Vec<u8> {
    format!("k{i:02}").into_bytes()
}

/// `n` random writes over 16 keys: puts, deletes and batches of both.
fn random_writes(rng: &mut SmallRng, n: usize) -> Vec<Op> {
    let val = |rng: &mut SmallRng| vec![rng.gen::<u8>(); rng.gen_range(0..400)];
    (0..n)
        .map(|_| match rng.gen_range(0..100) {
            0..=59 => Op::Put(key(rng.gen_range(0..16)), val(rng)),
            60..=79 => Op::Delete(key(rng.gen_range(0..16))),
            _ => Op::Batch(
                (0..rng.gen_range(1..5))
                    .map(|_| {
                        let k = key(rng.gen_range(0..16));
                        (k, rng.gen_bool(0.7).then(|| val(rng)))
                    })
                    .collect(),
            ),
        })
        .collect()
}

/// Random writes around a fixed sequence of flushes and compactions that puts data into L2 and
/// L3 and then deletes keys living there while only the upper levels are compacted: a
/// compaction that dropped a tombstone while a deeper level still holds its key would bring
/// the key back.
fn workload(seed: u64) -> Vec<Op> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let deletes = |keys: &[usize]| keys.iter().map(|&k| Op::Delete(key(k))).collect::<Vec<_>>();
    let mut ops = Vec::new();
    // Every key with a 500..700-byte value: ~10 KiB, more than L1's target (4 KiB).
    for b in 0..4 {
        let batch = (4 * b..4 * b + 4)
            .map(|k| (key(k), Some(vec![rng.gen::<u8>(); rng.gen_range(500..700)])))
            .collect();
        ops.push(Op::Batch(batch));
    }
    ops.extend(random_writes(&mut rng, 8));
    // Everything into L1, which outgrows its target: part of it moves on into L2.
    ops.push(Op::Compact);
    ops.push(Op::Settle);
    ops.extend(random_writes(&mut rng, 6));
    ops.push(Op::Flush);
    // Keys spread over the key space, so some live in L2; the second flush makes two L0 tables,
    // compacted into L1 only while L2 still holds those keys.
    ops.extend(deletes(&[0, 5, 10, 15]));
    ops.push(Op::Flush);
    ops.push(Op::Settle);
    ops.extend(random_writes(&mut rng, 6));
    // Everything into L2, which outgrows its target (8 KiB) if little was deleted: L3.
    ops.push(Op::Compact);
    ops.push(Op::Settle);
    ops.extend(deletes(&[2, 7, 12, 13]));
    ops.push(Op::Flush);
    ops.extend(deletes(&[1, 8]));
    ops.push(Op::Flush);
    ops.push(Op::Settle);
    ops
}

/// For [`crash_at_every_pm_fence_reused_tables`]: 32 keys into one run, then writes to one
/// or two keys at a time compacted into it, so that each compaction keeps most of the run's
/// tables in place.
fn reuse_workload(seed: u64) -> Vec<Op> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut val = |n: usize| vec![rng.gen::<u8>(); n];
    // Values under `table.value_separation`, so that the tables hold them: 32 keys in about
    // 7 tables.
    let mut ops: Vec<Op> = (0..4)
        .map(|b| {
            Op::Batch(
                (8 * b..8 * b + 8)
                    .map(|k| (key(k), Some(val(200))))
                    .collect(),
            )
        })
        .collect();
    ops.push(Op::Compact);
    ops.push(Op::Settle);
    // The last step leaves the file of keys 16..31 less than half in use: its last part (key
    // 31), which no new key falls into, is merged too.
    for keys in [&[3][..], &[18, 19], &[27], &[9, 10], &[22]] {
        for &k in keys {
            ops.push(Op::Put(key(k), val(100)));
        }
        ops.push(Op::Delete(key(keys[0] + 1)));
        ops.push(Op::Flush);
        ops.push(Op::Compact);
        ops.push(Op::Settle);
    }
    ops
}

/// For [`crash_at_every_pm_fence_splitting_trees`]: 80 keys, more than one leaf of any tree
/// holds (30 of LAB-DB's, 48 of SLM-DB's index), flushed into the trees while they grow, then
/// updates, deletes and a compaction.
fn wide_workload(seed: u64) -> Vec<Op> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut ops: Vec<Op> = (0..8)
        .map(|b| {
            Op::Batch(
                (10 * b..10 * b + 10)
                    .map(|k| (key(k), Some(vec![rng.gen::<u8>(); rng.gen_range(20..60)])))
                    .collect(),
            )
        })
        .collect();
    ops.push(Op::Flush);
    for _ in 0..10 {
        let k = rng.gen_range(0..80);
        ops.push(match rng.gen_bool(0.7) {
            true => Op::Put(key(k), vec![rng.gen::<u8>(); 40]),
            false => Op::Delete(key(k)),
        });
    }
    ops.push(Op::Flush);
    ops.push(Op::Compact);
    ops.push(Op::Settle);
    ops.extend((0..80).step_by(7).map(|k| Op::Delete(key(k))));
    ops.push(Op::Flush);
    ops.push(Op::Settle);
    ops
}

/// For [`crash_at_every_pm_fence_sequence_gaps`]: logged writes over 16 keys around bursts
/// of unlogged puts, each burst more than a memtable holds (4 KiB), so that a WAL rotates
/// while unlogged writes hold sequence numbers: the first record of the next WAL counts them,
/// and the gap between the two files' numbers is theirs, not a cut.
fn gap_workload(seed: u64) -> Vec<Op> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut next = 0;
    let mut unlogged = |rng: &mut SmallRng, n: usize| {
        let burst: Vec<Op> = (next..next + n)
            .map(|i| Op::Unlogged(unlogged_key(i), vec![rng.gen::<u8>(); 400]))
            .collect();
        next += n;
        burst
    };
    let mut ops: Vec<Op> = (0..4)
        .map(|b| {
            Op::Batch(
                (4 * b..4 * b + 4)
                    .map(|k| (key(k), Some(vec![rng.gen::<u8>(); rng.gen_range(100..200)])))
                    .collect(),
            )
        })
        .collect();
    ops.extend(unlogged(&mut rng, 8));
    ops.extend(random_writes(&mut rng, 4));
    ops.extend(unlogged(&mut rng, 6));
    ops.extend(random_writes(&mut rng, 3));
    ops.push(Op::Flush);
    ops.extend(unlogged(&mut rng, 3));
    ops.extend(random_writes(&mut rng, 3));
    ops.push(Op::Flush);
    ops.extend(random_writes(&mut rng, 2));
    ops.extend(unlogged(&mut rng, 11));
    ops.extend(random_writes(&mut rng, 4));
    ops.push(Op::Settle);
    ops
}

/// The key of the `i`-th unlogged put (never the key of a logged write).
fn unlogged_key(i: usize) -> Vec<u8> {
    format!("u{i:02}").into_bytes()
}

/// Judges the unlogged puts `got` holds against a crash after the first `n` writes: each one
/// present holds its value and is among those `n`; each one a completed flush made durable (a
/// flush followed by a write acknowledged among the first `acked` writes) is present. `None`
/// if they are not what such a crash may leave, else whether an unlogged put was lost under a
/// later logged write that was kept (the sequence gap recovery must accept).
fn unlogged_ok(ops: &[Op], n: usize, got: &Model, acked: usize) -> Option<bool> {
    // The index among the writes of each operation that is one.
    let mut index = Vec::with_capacity(ops.len());
    let mut writes = 0;
    for op in ops {
        index.push(writes);
        writes += usize::from(is_write(op));
    }
    let mut lost_under_logged = false;
    for (p, op) in ops.iter().enumerate() {
        let Op::Unlogged(k, v) = op else { continue };
        match got.get(k) {
            Some(g) if g != v || index[p] >= n => return None,
            Some(_) => {}
            None if durable_after_flush(ops, p, acked) => return None,
            None => {
                lost_under_logged |=
                    ops.iter().enumerate().skip(p + 1).any(|(q, o)| {
                        is_write(o) && !matches!(o, Op::Unlogged(..)) && index[q] < n
                    });
            }
        }
    }
    Some(lost_under_logged)
}

/// True if a flush after position `p` of `ops` completed before the crash: a write after it is
/// among the first `acked` writes.
fn durable_after_flush(ops: &[Op], p: usize, acked: usize) -> bool {
    let Some(f) = ops[p..].iter().position(|o| matches!(o, Op::Flush)) else {
        return false;
    };
    let writes_before = ops[..p + f].iter().filter(|o| is_write(o)).count();
    let next_write = ops[p + f..].iter().any(is_write);
    next_write && writes_before < acked
}

/// Waits (up to 10 s) until no background work is pending, or the SSD froze (a crash stopped the
/// background work). Returns true if the levels settled.
fn settle(db: &Db, ssd: &MemFs) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline && !ssd.is_frozen() {
        if !db.stats().background_pending {
            return true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    false
}

/// The model after the first `n` writes (flush/compact are not writes), unlogged ones left
/// out ([`unlogged_ok`] judges those).
fn model_after(ops: &[Op], n: usize) -> Model {
    let mut m = Model::new();
    for op in ops.iter().filter(|o| is_write(o)).take(n) {
        match op {
            Op::Unlogged(..) => {}
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
            Op::Flush | Op::Compact | Op::Settle => unreachable!(),
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

// Half-done jobs the compaction logs discarded, and published ones they redid, over every
// image `verify_image` opened (per test thread: tests run side by side).
thread_local! {
    static CLOG_JOBS: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
    /// Tables a global index named that recovery adopted (`slmdb`), over the same images.
    static ADOPTED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// The workload and every image run with `pm.thread_logs` (FluidKV's FastStore).
    static THREAD_LOGS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// The pool's size in chunks, when a test sets it (else [`pool_options`]' default).
    static POOL_CHUNKS: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
    /// Compactions that went to the SSD for want of room, in the uninterrupted runs.
    static COMPACTION_FALLBACKS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Of those, the jobs that filled the pool first and ran again.
    static COMPACTION_RETRIES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// `pm.compaction_space_check` for the walk.
    static SPACE_CHECK: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
    /// FluidKV with one data block per logical sorted table, reused one table at a time.
    static SMALL_TABLES: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Runs reading part of another run's file, made in the uninterrupted runs.
    static REUSED_TABLES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Runs merged to free a file less than half in use, summed over the uninterrupted runs.
    static RECLAIMED_RUNS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Images not recovered because they equal another image of the same instant.
    static REPEATS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// Run [`wide_workload`] (80 keys: the trees split).
    static WIDE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// The most leaves a tree (LAB-DB's L0 trees, SLM-DB's index) had in an uninterrupted run.
    static MAX_LEAVES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Run [`gap_workload`] (unlogged puts between logged writes).
    static GAPS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Recovered states that lost an unlogged put under a later logged write they kept.
    static LOST_UNDER_LOGGED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Flushes the uninterrupted run made on its own (memtables that filled), over the runs.
    static ROTATIONS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Opens a database on one crash image and checks it against the models (and, for designs with
/// a compaction log, that the log accounted for every run file left); returns the state it
/// recovered.
fn verify_image(
    design: Design,
    ops: &[Op],
    ssd: MemFs,
    image: Vec<u8>,
    acked_lo: usize,
    acked_hi: usize,
    what: &str,
) -> Model {
    let pool = PmPool::open_crash_image(image, &pool_options(design))
        .unwrap_or_else(|e| panic!("{what}: pool image does not open: {e}"));
    let opts = options(design, &ssd, Arc::clone(&pool));
    let db = Db::open(Path::new("/db"), opts.clone())
        .unwrap_or_else(|e| panic!("{what}: recovery failed: {e}"));
    let got = contents(&db);
    let adopted = db.stats().index_adopted_tables;
    ADOPTED.with(|c| c.set(c.get() + adopted));
    if design.compaction_log() {
        // Every run file a crash can leave is accounted for by the compaction log.
        let st = db.stats();
        assert_eq!(
            st.unlogged_runs_removed, 0,
            "{what}: runs left that no compaction log accounted for"
        );
        CLOG_JOBS.with(|c| {
            let (d, r) = c.get();
            c.set((d + st.clog_discarded, r + st.clog_redone));
        });
    }
    let writes = ops.iter().filter(|o| is_write(o)).count();
    let logged: Model = got
        .iter()
        .filter(|(k, _)| !k.starts_with(b"u"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let matched = (acked_lo..=(acked_hi + 1).min(writes)).find_map(|n| {
        (model_after(ops, n) == logged)
            .then(|| unlogged_ok(ops, n, &got, acked_lo))
            .flatten()
    });
    if matched == Some(true) {
        LOST_UNDER_LOGGED.with(|c| c.set(c.get() + 1));
    }
    assert!(
        matched.is_some(),
        "{what}: recovered state is not the state after any prefix in {acked_lo}..={}: {got:?}",
        acked_hi + 1
    );
    db.put(b"after-crash", b"x").unwrap();
    drop(db);
    // The recovered database passes the checker too, not only the reads: a recovery that
    // leaves overlapping runs or a dangling pointer behind reads right until it compacts.
    Db::check(Path::new("/db"), opts.clone())
        .unwrap_or_else(|e| panic!("{what}: check after recovery: {e}"));
    let db = Db::open(Path::new("/db"), opts).unwrap_or_else(|e| panic!("{what}: reopen: {e}"));
    assert_eq!(
        db.get(b"after-crash").unwrap(),
        Some(b"x".to_vec()),
        "{what}"
    );
    got
}

/// Crash images taken atomically at one fence.
struct Captured {
    strict: Vec<u8>,
    pending: Vec<u8>,
    torn: Vec<Vec<u8>>,
    acked_lo: usize,
    acked_hi: usize,
}

/// The torn images taken at each fence: `torn` of `Torn` and `lines` of `TornLines`, seeded from
/// `seed`.
/// Torn and torn-lines images per fence of the main workload: 32 + 16, or 8 + 4 for the designs
/// that keep every run on PM (their workloads make three times the fences, each a flush or
/// compaction step, and the test must fit the CI budget).
fn torn_images(design: Design) -> (u64, u64) {
    if design.data_on_pm() || THREAD_LOGS.with(|t| t.get()) {
        (8, 4)
    } else {
        (32, 16)
    }
}

/// The seeds of the main workload `design` runs: two, or one (a different one per design) for
/// the designs that keep every run on PM.
fn seeds(design: Design) -> Vec<u64> {
    // One seed for the all-PM designs and the row containers (each fence images a pool that
    // holds runs, so their walks are the longest).
    if design.data_on_pm()
        || design == Design::TRIANGLEKV
        || design == Design::MATRIXKV
        || design == Design::SLMDB
    {
        vec![1 + design.name().len() as u64 % 2]
    } else {
        vec![1, 2]
    }
}

fn torn_kinds(seed: u64, torn: u64, lines: u64) -> Vec<CrashImage> {
    (0..torn)
        .map(|t| CrashImage::Torn(seed * 1000 + t))
        .chain((0..lines).map(|t| CrashImage::TornLines(seed * 1000 + t)))
        .collect()
}

/// Sets a fence hook on `pool` that, at fence `target`, freezes `ssd` first (every later SSD
/// operation fails, as if the process had died there), then takes the pool's images (strict,
/// all-pending, then one per kind in `torn`), so PM and SSD show the same instant. `acked` is
/// read before and after as the bounds on the acknowledged writes.
fn capture_at_fence(
    pool: &Arc<PmPool>,
    ssd: &MemFs,
    target: u64,
    torn: Vec<CrashImage>,
    acked: &Arc<AtomicUsize>,
) -> Arc<Mutex<Option<Captured>>> {
    let captured: Arc<Mutex<Option<Captured>>> = Arc::new(Mutex::new(None));
    let (ssd2, acked, captured2) = (ssd.clone(), Arc::clone(acked), Arc::clone(&captured));
    let weak = Arc::downgrade(pool);
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
        let torn = torn
            .iter()
            .map(|&kind| pool.crash_image(kind).expect("crash-sim pool"))
            .collect();
        let acked_hi = acked.load(Ordering::SeqCst);
        *captured2.lock() = Some(Captured {
            strict,
            pending,
            torn,
            acked_lo,
            acked_hi,
        });
    })));
    captured
}

/// Runs the workload once and captures the crash state at fence `target` (see
/// [`capture_at_fence`]; 32 torn and 16 torn-lines images). Returns the capture (if the run
/// reached that fence), the SSD, and the number of fences the run made.
fn run_once(
    design: Design,
    seed: u64,
    ops: &Arc<Vec<Op>>,
    target: u64,
) -> (Option<Captured>, MemFs, u64) {
    let ssd = MemFs::new();
    // The pool verifies at every fence that no store bypassed its bookkeeping. That check
    // compares the whole pool with its durable image, and the walk reruns the workload once per
    // fence, so it runs in the uninterrupted run only: that run crosses every fence the
    // interrupted ones do.
    let pool = PmPool::create_crash_sim(&pool_options(design), target == u64::MAX).unwrap();
    let acked = Arc::new(AtomicUsize::new(0));
    let (torn, lines) = torn_images(design);
    let captured = capture_at_fence(&pool, &ssd, target, torn_kinds(seed, torn, lines), &acked);
    let opened = Db::open(Path::new("/db"), options(design, &ssd, Arc::clone(&pool)));
    if let Err(e) = &opened {
        assert!(
            ssd.is_frozen() || target != u64::MAX,
            "{design} seed {seed}: open: {e}"
        );
    }
    if let Ok(db) = opened {
        for op in ops.iter() {
            let r = match op {
                Op::Put(k, v) => db.put(k, v),
                Op::Unlogged(k, v) => {
                    let mut wb = WriteBatch::new();
                    wb.put(k, v);
                    let unlogged = WriteOptions {
                        disable_wal: true,
                        ..WriteOptions::default()
                    };
                    db.write(&unlogged, wb)
                }
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
                Op::Settle => {
                    let settled = settle(&db, &ssd);
                    assert!(
                        settled || ssd.is_frozen(),
                        "seed {seed}: the background compactions did not settle"
                    );
                    Ok(())
                }
            };
            if r.is_err() {
                assert!(
                    ssd.is_frozen(),
                    "seed {seed}: {op:?} failed without a crash: {r:?}"
                );
                break;
            }
            if is_write(op) {
                acked.fetch_add(1, Ordering::SeqCst);
            }
            if target == u64::MAX {
                let stats = db.stats();
                let leaves = match (&stats.global_index, &stats.labdb) {
                    (Some(index), _) => index.leaves,
                    // At least this many leaves of 30 slots hold a tree's keys.
                    (None, Some(lab)) => lab.mutable_keys.max(lab.immutable_keys).div_ceil(30),
                    (None, None) => 0,
                };
                MAX_LEAVES.with(|m| m.set(m.get().max(leaves)));
            }
            if captured.lock().is_some() {
                // The images are taken: nothing the process does after the crash counts.
                break;
            }
        }
        if target == u64::MAX {
            let writes = ops.iter().filter(|o| is_write(o)).count();
            let mut expected = model_after(ops, writes);
            for op in ops.iter() {
                if let Op::Unlogged(k, v) = op {
                    expected.insert(k.clone(), v.clone());
                }
            }
            assert!(
                contents(&db) == expected,
                "seed {seed}: the final state is not the model's"
            );
            // Below L1 (leveled designs), or in a set or level past the first stage group (all
            // on PM: a smaller workload relative to their larger groups).
            let stats = db.stats();
            let levels = &stats.levels;
            let deep = if design.data_on_pm() { 1 } else { 2 };
            if GAPS.with(|g| g.get()) {
                // Small: it only needs WALs that rotate under unlogged writes.
                let explicit = ops.iter().filter(|o| matches!(o, Op::Flush)).count() as u64;
                ROTATIONS.with(|r| r.set(r.get() + stats.flushes.saturating_sub(explicit)));
            } else if levels.len() > deep {
                assert!(
                    levels[deep..].iter().any(|l| l.files > 0),
                    "seed {seed}: the workload leaves data below group {}: {levels:?}",
                    deep - 1
                );
            } else {
                // One group (SLM-DB's single level): compactions ran within it.
                assert!(stats.compactions > 0, "seed {seed}: no compaction ran");
            }
            COMPACTION_FALLBACKS.with(|c| c.set(c.get() + stats.pm_compaction_fallbacks));
            COMPACTION_RETRIES.with(|c| c.set(c.get() + stats.pm_compaction_retries));
            REUSED_TABLES.with(|c| c.set(c.get() + stats.reused_table_bytes));
            RECLAIMED_RUNS.with(|c| c.set(c.get() + stats.reclaimed_runs));
            // LAB-DB: the walk crosses writes of hot slots.
            if let Some(lab) = &stats.labdb {
                assert!(
                    lab.hot_writes > 0,
                    "seed {seed}: no hot slot written: {lab:?}"
                );
            }
        }
    }
    pool.set_fence_hook(None);
    let fences = pool.fence_count();
    let c = captured.lock().take();
    (c, ssd, fences)
}

/// Verifies each image of a capture: the strict and the all-pending pool images with the SSD's
/// synced state, the all-pending one with its process-crash state, and each torn one with the
/// synced state; each must hold the state after a prefix of the writes in `lo..=hi + 1` and,
/// if `reference` is given, exactly that state.
fn verify_captured(
    design: Design,
    ops: &[Op],
    c: Captured,
    ssd: &MemFs,
    (lo, hi): (usize, usize),
    what: &str,
    reference: Option<&Model>,
) {
    let synced = ssd.crash(CrashMode::SyncedOnly);
    let process = ssd.crash(CrashMode::ProcessCrash);
    let images = [
        ("strict".to_string(), &synced, c.strict),
        ("all-pending".to_string(), &synced, c.pending.clone()),
        ("all-pending+process".to_string(), &process, c.pending),
    ]
    .into_iter()
    .chain(
        c.torn
            .into_iter()
            .enumerate()
            .map(|(t, img)| (format!("torn {t}"), &synced, img)),
    );
    // Every image has the same bounds: equal images are one check.
    let mut distinct = Distinct::default();
    for (kind, ssd, img) in images {
        let image = Image {
            ssd: ssd.clone(),
            pool: Some(img),
        };
        if !distinct.is_new(&image) {
            continue;
        }
        let img = image.pool.expect("a pool image");
        let what = format!("{what} {kind}");
        let got = verify_image(
            design,
            ops,
            ssd.crash(CrashMode::ProcessCrash),
            img,
            lo,
            hi,
            &what,
        );
        if let Some(reference) = reference {
            assert!(
                got == *reference,
                "{what}: recovered state differs from the uninterrupted recovery of the first \
                 crash image: {got:?}"
            );
        }
    }
    REPEATS.with(|r| r.set(r.get() + distinct.repeats));
}

/// Crashes at every fence of the workload of `seed`; returns (fences, writes).
fn run(design: Design, seed: u64) -> (u64, usize) {
    let ops = Arc::new(if GAPS.with(|g| g.get()) {
        gap_workload(seed)
    } else if WIDE.with(|w| w.get()) {
        wide_workload(seed)
    } else if SMALL_TABLES.with(|t| t.get()) {
        reuse_workload(seed)
    } else {
        workload(seed)
    });
    let (_, _, total) = run_once(design, seed, &ops, u64::MAX);
    let mut checked = 0;
    for target in 1..=total + 5 {
        let (captured, ssd, _) = run_once(design, seed, &ops, target);
        let Some(c) = captured else { continue };
        let (lo, hi) = (c.acked_lo, c.acked_hi);
        let what = format!("seed {seed} fence {target}");
        verify_captured(design, &ops, c, &ssd, (lo, hi), &what, None);
        checked += 1;
    }
    let writes = ops.iter().filter(|o| is_write(o)).count();
    (checked, writes)
}

/// The designs of [`crash_at_every_pm_fence_a`]; the others are walked by
/// [`crash_at_every_pm_fence_b`]. Two tests of about equal length, so that the walks (the
/// longest tests of the suite) run on two threads.
const FENCE_WALK_A: &[Design] = &[
    Design::LEVELED_PM,
    Design::NVLSM_FRAGMENTED,
    Design::TRIANGLEKV,
    Design::MATRIXKV,
];

/// `leveled-pm` writing through FluidKV's FastStore (`pm.thread_logs`): every fence of its
/// thread logs (each log's header, each record), rotations and flushes, recovered by merging
/// the logs by sequence number.
#[test]
fn crash_at_every_pm_fence_thread_logs() {
    THREAD_LOGS.with(|t| t.set(true));
    let design = Design::LEVELED_PM;
    let (fences, writes) = run(design, 3);
    assert!(
        fences as usize > writes,
        "{design} with thread logs: only {fences} fences for {writes} writes"
    );
    let repeats = REPEATS.with(|r| r.replace(0));
    eprintln!(
        "{design} with thread logs: {fences} fences checked, {repeats} images equal to another"
    );
}

/// `fluidkv` in a pool too small for its runs: compactions whose inputs could not fit write
/// their outputs to the SSD at once (`pm.compaction_space_check`, the default); without that
/// check, compactions that find no room discard their outputs and run again with them on the
/// SSD. The walks crash at every fence of those jobs (the discarded attempt's, the compaction
/// log's records of both, the SSD attempt's commit).
#[test]
fn crash_at_every_pm_fence_full_pool() {
    let design = Design::FLUIDKV;
    if !support::designs().contains(&design) {
        return;
    }
    POOL_CHUNKS.with(|c| c.set(Some(FULL_POOL_CHUNKS)));
    // With the space check (the default) the compactions that cannot fit go to the SSD at
    // once; without it each fills the pool first and runs again there.
    for check in [true, false] {
        SPACE_CHECK.with(|c| c.set(check));
        let (fences, writes) = run(design, 1);
        let fallbacks = COMPACTION_FALLBACKS.with(|c| c.replace(0));
        let retries = COMPACTION_RETRIES.with(|c| c.replace(0));
        let what = format!(
            "{design} in {FULL_POOL_CHUNKS} chunks, space check {check}: {fences} fences for \
             {writes} writes, {fallbacks} compactions on the SSD, {retries} after filling the \
             pool"
        );
        let crossed = match check {
            true => retries < fallbacks,
            false => retries > 0 && retries == fallbacks,
        };
        assert!(fences as usize > writes && crossed, "{what}");
        eprintln!(
            "{what}; {} images equal to another",
            REPEATS.with(|r| r.replace(0))
        );
    }
}

/// `fluidkv` with logical sorted tables of one data block: compactions keep the tables no new
/// key falls into, as runs reading part of the old file, and merge the last part of a file
/// less than half in use. The walk crashes at every fence of those jobs; recovery must keep
/// every file such a run reads and free the rest.
#[test]
fn crash_at_every_pm_fence_reused_tables() {
    let design = Design::FLUIDKV;
    if !support::designs().contains(&design) {
        return;
    }
    SMALL_TABLES.with(|t| t.set(true));
    let (fences, writes) = run(design, 2);
    let reused = REUSED_TABLES.with(|c| c.replace(0));
    let reclaimed = RECLAIMED_RUNS.with(|c| c.replace(0));
    assert!(
        fences as usize > writes && reused > 0 && reclaimed > 0,
        "{design} with one-block tables: {fences} fences for {writes} writes, {reused} bytes \
         of tables reused, {reclaimed} runs reclaimed"
    );
    eprintln!(
        "{design} with one-block tables: {fences} fences checked, {reused} bytes of tables \
         reused, {reclaimed} runs reclaimed, {} images equal to another",
        REPEATS.with(|r| r.replace(0))
    );
}

/// LAB-DB's L0 trees and SLM-DB's global index grown past one leaf: the walk crashes inside
/// their splits (every fence of a leaf split and, SLM-DB, of its copy-on-write inner nodes),
/// which the main workload's 16 keys never reach.
#[test]
fn crash_at_every_pm_fence_splitting_trees() {
    WIDE.with(|w| w.set(true));
    for design in [Design::LABDB, Design::SLMDB] {
        if !support::designs().contains(&design) {
            continue;
        }
        let (fences, writes) = run(design, 4);
        let leaves = MAX_LEAVES.with(|m| m.replace(0));
        assert!(
            fences as usize > writes && leaves > 1,
            "{design} with 80 keys: {fences} fences for {writes} writes, at most {leaves} leaves"
        );
        eprintln!(
            "{design} with 80 keys: {fences} fences checked, trees of up to {leaves} leaves, {} \
             images equal to another",
            REPEATS.with(|r| r.replace(0))
        );
    }
}

/// The designs whose WAL is on PM and honours `disable_wal` (`leveled` with `pm.wal_on_pm`,
/// `leveled-pm`): writes that skipped the WAL leave a gap in the sequence numbers, also between
/// two WAL files when the memtable fills under them. Every image must recover the logged
/// writes of a prefix (none lost, no hole) and the unlogged puts a completed flush made
/// durable; some images must lose unlogged puts under later logged writes, so that recovery
/// crossed the gap rather than taking it for a cut.
#[test]
fn crash_at_every_pm_fence_sequence_gaps() {
    GAPS.with(|g| g.set(true));
    for design in [Design::LEVELED, Design::LEVELED_PM] {
        if !support::designs().contains(&design) {
            continue;
        }
        let (fences, writes) = run(design, 5);
        let lost = LOST_UNDER_LOGGED.with(|c| c.replace(0));
        let rotations = ROTATIONS.with(|r| r.replace(0));
        let what = format!(
            "{design} with unlogged writes: {fences} fences for {writes} writes, {rotations} \
             memtables that filled, {lost} images that lost unlogged puts under logged writes"
        );
        assert!(
            fences as usize > writes && rotations > 0 && lost > 0,
            "{what}"
        );
        eprintln!(
            "{what}, {} images equal to another",
            REPEATS.with(|r| r.replace(0))
        );
    }
}

/// The pool of [`crash_at_every_pm_fence_full_pool`], in 64 KiB chunks.
const FULL_POOL_CHUNKS: u64 = 12;

#[test]
fn crash_at_every_pm_fence_a() {
    crash_at_every_pm_fence(|d| FENCE_WALK_A.contains(&d));
}

#[test]
fn crash_at_every_pm_fence_b() {
    crash_at_every_pm_fence(|d| !FENCE_WALK_A.contains(&d));
}

fn crash_at_every_pm_fence(selected: impl Fn(Design) -> bool) {
    for design in pm_designs().into_iter().filter(|&d| selected(d)) {
        for seed in seeds(design) {
            let (fences, writes) = run(design, seed);
            // The workload really exercises the PM tier: WAL appends fence at least once each.
            assert!(
                fences as usize > writes,
                "{design} seed {seed}: only {fences} fences for {writes} writes"
            );
            let (torn, lines) = torn_images(design);
            eprintln!(
                "{design} seed {seed}: {fences} fences checked, {} images each, {} equal to \
                 another",
                3 + torn + lines,
                REPEATS.with(|r| r.replace(0))
            );
        }
        let adopted = ADOPTED.with(|c| c.replace(0));
        if design == Design::SLMDB {
            // Crashes fell between a flush's or compaction's index updates and its manifest
            // record: recovery adopted the tables the index already named.
            eprintln!("{design}: recovery adopted {adopted} tables the index named");
            assert!(
                adopted > 0,
                "{design}: no crash fell inside an index update"
            );
        }
        if design.compaction_log() {
            // Crashes fell inside flushes and compactions, before and after their manifest
            // records: recovery both discarded and redid jobs.
            let (discarded, redone) = CLOG_JOBS.with(|c| c.replace((0, 0)));
            eprintln!("{design}: compaction log discarded {discarded} jobs, redid {redone}");
            assert!(discarded > 0, "{design}: no crash left a half-done job");
            assert!(
                redone > 0,
                "{design}: no crash fell between a manifest record and its commit"
            );
        }
    }
}

/// Every design of the registry that keeps data in the PM pool under this file's options.
fn pm_designs() -> Vec<Design> {
    let designs: Vec<Design> = support::designs()
        .into_iter()
        .filter(|&d| {
            let mut o = Options {
                design: d,
                ..Options::default()
            };
            o.pm.wal_on_pm = true;
            d.uses_pm(&o)
        })
        .collect();
    assert!(!designs.is_empty());
    designs
}

/// The designs of the crash-during-recovery walks: [`pm_designs`] but `matrixkv`, whose
/// recovery is `trianglekv`'s (the same front end, rows and manifest), and `nvlsm-leveled` and
/// `nvlsm-fragmented`, whose recovery is `nvlsm`'s (the same front end, sorted arrays in the
/// pool, compaction log and manifest; their fence walks above still cover them), left out to
/// fit the CI budget; and `listdb`, whose recovery replays nothing into a stage (its log
/// entries are indexed again in DRAM; the one store it may make, unlinking a chunk a crashed
/// append left, is redone by the next open if a crash cuts it).
fn recovery_designs() -> Vec<Design> {
    pm_designs()
        .into_iter()
        .filter(|d| {
            ![
                Design::MATRIXKV,
                Design::NVLSM_LEVELED,
                Design::NVLSM_FRAGMENTED,
                Design::LISTDB,
            ]
            .contains(d)
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Crashes during recovery.
//
// Recovery of a given pair of crash images (pool + SSD) is deterministic (it runs on one thread
// until `Db::open` returns), so "the k-th fence of recovery" is a well-defined crash point.

/// Images of a crash of the first run: the pool image and the SSD image of one instant.
struct FirstCrash {
    pool: Vec<u8>,
    ssd: MemFs,
    /// Bounds on the writes acknowledged before the first crash.
    lo: usize,
    hi: usize,
    /// The state an uninterrupted recovery of these images gives.
    reference: Model,
    /// Fences counted when that recovery's `Db::open` returned (recovery's own, plus any the
    /// background threads had made by then).
    fences: u64,
    what: String,
}

/// Fences past the end of recovery that are tried too.
const RECOVERY_EXTRA_FENCES: u64 = 3;

/// Opens copies of `pool` and `ssd` and recovers them without a crash: the state, the fences
/// counted when `Db::open` returned, and whether recovery replayed WAL data into an L0 table.
fn recover_uninterrupted(
    design: Design,
    pool: &[u8],
    ssd: &MemFs,
    what: &str,
) -> (Model, u64, bool) {
    let pool = PmPool::open_crash_image_checked(pool.to_vec(), &pool_options(design), true)
        .unwrap_or_else(|e| panic!("{what}: pool image does not open: {e}"));
    let ssd = ssd.crash(CrashMode::ProcessCrash);
    let db = Db::open(Path::new("/db"), options(design, &ssd, Arc::clone(&pool)))
        .unwrap_or_else(|e| panic!("{what}: recovery failed: {e}"));
    let fences = pool.fence_count();
    // Recovery wrote the replayed WAL data into stage 0 (on PM or, for a design whose L0 is
    // on the SSD, there).
    let s = db.stats();
    let replayed = s.pm_written_flush + s.ssd_written_flush > 0;
    (contents(&db), fences, replayed)
}

/// Which images of a first crash recovery starts from.
#[derive(Clone, Copy, Debug)]
enum FirstImage {
    /// The strict pool image with the SSD's synced state.
    Strict,
    /// The all-pending pool image with the SSD's process-crash state.
    AllPendingProcess,
    /// Torn pool image `i` of [`run_once`] (32 torn, then 16 torn-lines) with the SSD's synced
    /// state.
    Torn(usize),
}

impl FirstImage {
    /// The pool image and the SSD image of this kind.
    fn take(self, c: &Captured, ssd: &MemFs) -> (Vec<u8>, MemFs) {
        match self {
            FirstImage::Strict => (c.strict.clone(), ssd.crash(CrashMode::SyncedOnly)),
            FirstImage::AllPendingProcess => {
                (c.pending.clone(), ssd.crash(CrashMode::ProcessCrash))
            }
            FirstImage::Torn(i) => (c.torn[i].clone(), ssd.crash(CrashMode::SyncedOnly)),
        }
    }
}

/// True if the WAL of these images ends in a torn record (which recovery drops).
fn has_torn_wal_tail(design: Design, pool: &[u8], ssd: &MemFs) -> bool {
    let pool =
        PmPool::open_crash_image(pool.to_vec(), &pool_options(design)).expect("opened before");
    let ssd = ssd.crash(CrashMode::ProcessCrash);
    let report = Db::check(Path::new("/db"), options(design, &ssd, pool))
        .unwrap_or_else(|e| panic!("check of a first crash image: {e}"));
    report.wal_torn_tail_bytes > 0
}

/// Crash images of the first run at `points` fences (from a quarter of the way in) after which
/// recovery replays WAL data into L0 tables: at each fence, the images of the kinds in `kinds`
/// (with `torn_tail`, only those whose WAL ends in a torn record, and only fences with one).
fn first_crashes(
    design: Design,
    seed: u64,
    ops: &Arc<Vec<Op>>,
    points: usize,
    kinds: &[FirstImage],
    torn_tail: bool,
) -> Vec<FirstCrash> {
    let (_, _, total) = run_once(design, seed, ops, u64::MAX);
    let mut found = Vec::new();
    let mut accepted = 0;
    let mut target = total / 4;
    while accepted < points && target <= total {
        let (c, ssd, _) = run_once(design, seed, ops, target);
        let mut replayed = false;
        let mut firsts = Vec::new();
        for &kind in kinds {
            let Some(c) = &c else { break };
            let (pool, ssd) = kind.take(c, &ssd);
            if torn_tail && !has_torn_wal_tail(design, &pool, &ssd) {
                continue;
            }
            let what = format!("seed {seed} first crash at fence {target} {kind:?}");
            let (reference, fences, r) = recover_uninterrupted(design, &pool, &ssd, &what);
            replayed |= r;
            firsts.push(FirstCrash {
                pool,
                ssd,
                lo: c.acked_lo,
                hi: c.acked_hi,
                reference,
                fences,
                what,
            });
        }
        if replayed {
            found.extend(firsts);
            accepted += 1;
            target += total / (2 * points as u64);
        } else {
            target += 1;
        }
    }
    assert_eq!(
        accepted, points,
        "seed {seed}: not enough fences leave WAL data to replay"
    );
    found
}

/// Recovers copies of `first`'s images with a crash at fence `target` of recovery (see
/// [`capture_at_fence`]; 8 torn and 8 torn-lines images). Returns the capture (if recovery, or
/// the background work after it, reached that fence) and the SSD.
fn crash_recovery_at(design: Design, first: &FirstCrash, target: u64) -> (Option<Captured>, MemFs) {
    // Unchecked: the uninterrupted recovery of the same images checked every fence.
    let pool = PmPool::open_crash_image(first.pool.clone(), &pool_options(design))
        .expect("the first image opened before");
    let ssd = first.ssd.crash(CrashMode::ProcessCrash);
    let acked = Arc::new(AtomicUsize::new(0));
    let captured = capture_at_fence(&pool, &ssd, target, torn_kinds(target, 8, 8), &acked);
    if let Ok(db) = Db::open(Path::new("/db"), options(design, &ssd, Arc::clone(&pool))) {
        // The crash point lies past recovery; the background threads hit it, or nothing does.
        drop(db);
    }
    pool.set_fence_hook(None);
    let c = captured.lock().take();
    (c, ssd)
}

/// Crashes the recovery of each first-crash image at EVERY fence of recovery plus a few past
/// its end; each image of that second crash (strict, all-pending with the synced and with the
/// process-crash SSD, 8 torn, 8 torn-lines) must recover to a state holding every write
/// acknowledged before the FIRST crash, and to exactly the state an uninterrupted recovery of
/// the first images gives. Returns the number of recovery fences crashed at.
fn crash_every_recovery_fence(design: Design, ops: &[Op], firsts: &[FirstCrash]) -> usize {
    let mut checked = 0;
    for first in firsts {
        for target in 1..=first.fences + RECOVERY_EXTRA_FENCES {
            let (captured, ssd) = crash_recovery_at(design, first, target);
            let Some(c) = captured else { continue };
            let what = format!("{}, recovery crash at fence {target}", first.what);
            verify_captured(
                design,
                ops,
                c,
                &ssd,
                (first.lo, first.hi),
                &what,
                Some(&first.reference),
            );
            checked += 1;
        }
    }
    checked
}

/// Crashes during the recovery of the strict and the all-pending (+ process-crash SSD) images
/// of first crashes that leave WAL data on PM (three fences of each workload), at every fence
/// of recovery. Catches recovery deleting the replayed WALs before the manifest records their
/// tables, and `CURRENT` switched without a synced rename before old files are deleted.
#[test]
fn crash_during_recovery_at_every_pm_fence() {
    let t = Instant::now();
    let mut checked = 0;
    for design in recovery_designs() {
        for seed in seeds(design) {
            let ops = Arc::new(workload(seed));
            let kinds = [FirstImage::Strict, FirstImage::AllPendingProcess];
            let firsts = first_crashes(design, seed, &ops, 3, &kinds, false);
            checked += crash_every_recovery_fence(design, &ops, &firsts);
        }
    }
    eprintln!(
        "{checked} recovery fences x 19 images ({} equal to another) in {:?}",
        REPEATS.with(|r| r.replace(0)),
        t.elapsed()
    );
}

/// The same from torn first-crash images whose WAL on PM ends in a torn record.
///
/// This failed while recovery created its new WAL before the manifest record moving
/// `log_number` past the replayed WALs (see the SSD test of the same name).
#[test]
fn crash_during_recovery_torn_wal_tail() {
    let t = Instant::now();
    let seed = 2;
    let ops = Arc::new(workload(seed));
    let mut checked = 0;
    // A design whose memtable is in PM has no WAL to tear (the walk above covers its
    // recovery).
    for design in recovery_designs()
        .into_iter()
        .filter(|d| !d.memtable_on_pm())
    {
        // Twelve of the design's torn images.
        let (torn, lines) = torn_images(design);
        let n = (torn + lines) as usize;
        let kinds: Vec<_> = (0..n).step_by(n / 12).map(FirstImage::Torn).collect();
        let firsts = first_crashes(design, seed, &ops, 2, &kinds, true);
        checked += crash_every_recovery_fence(design, &ops, &firsts);
    }
    eprintln!(
        "{checked} recovery fences x 19 images ({} equal to another) in {:?}",
        REPEATS.with(|r| r.replace(0)),
        t.elapsed()
    );
}
