//! Model test: random operation sequences checked against a `BTreeMap` model, on every design
//! of the registry.
//!
//! Every sequence is driven by one seed. Operations: put, delete, mixed batches, point gets,
//! scans over random ranges (compared in full), iterator seeks, snapshots (later read back and
//! compared with the model's copy taken at the same instant), flush, whole and partial
//! `compact_range`, and close + reopen. Options are tiny so flushes and compactions happen every
//! few operations.
//!
//! `TIERKV_MODEL_SEEDS=N` raises the number of sequences run by `model_random_sequences_memfs`.
//! A failure prints the seed and the op index; freeze it as `model_regression_seed_<N>`.

mod support;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use tierkv::fs::MemFs;
use tierkv::pm::PmPool;
use tierkv::{Db, Design, Options, ReadOptions, Snapshot, WriteBatch, WriteOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Tiny options: 4 KiB memtables, 1 KiB blocks, 4 KiB tables, a 16 KiB L1.
fn small_options(rng: &mut SmallRng) -> Options {
    let mut o = Options {
        write_buffer_size: 4096,
        max_write_buffer_number: 2,
        block_cache_bytes: if rng.gen_bool(0.2) { 0 } else { 64 << 10 },
        max_open_files: 16,
        ..Options::default()
    };
    o.table.block_size = 1024;
    o.table.restart_interval = [1, 4, 16][rng.gen_range(0..3)];
    o.table.bloom_bits_per_key = [0, 10][rng.gen_range(0..2)];
    o.compaction.level0_compaction_trigger = 2;
    o.compaction.level0_slowdown_trigger = 8;
    o.compaction.level0_stop_trigger = 12;
    o.compaction.target_file_size = 4096;
    o.compaction.max_bytes_for_level_base = 16 << 10;
    o.compaction.level_size_multiplier = 4;
    o.compaction.num_levels = 5;
    // LAB-DB's L0 trees: a few leaves, so sequences switch trees and compact chunks.
    o.labdb.leaf_region_bytes = [6 << 10, 16 << 10][rng.gen_range(0..2)];
    o.labdb.chunk_bytes = [1 << 10, 4 << 10][rng.gen_range(0..2)];
    // Its log: a WAL buffer of two 4 KiB halves, so writes drain them; or the plain WAL (the
    // B+-tree-only variant).
    o.labdb.wal_buffer_bytes = 8 << 10;
    o.labdb.split_log = rng.gen_range(0..4) != 0;
    // Its hot-key buffer: 32 slots of two 256-byte halves, a key hot from its second flush;
    // or none.
    o.labdb.hot_buffer_bytes = [0, 16 << 10][rng.gen_range(0..2)];
    o.labdb.hot_slot_bytes = 512;
    o.labdb.hot_threshold = 2;
    o
}

/// A key space of `n` distinct keys: the empty key, short and long keys, binary bytes,
/// common prefixes.
fn key_space(rng: &mut SmallRng, n: usize) -> Vec<Vec<u8>> {
    let mut keys = std::collections::BTreeSet::new();
    keys.insert(Vec::new());
    let prefixes: [&[u8]; 4] = [b"", b"user:", b"\x00\x00", b"\xff\xfe"];
    while keys.len() < n {
        let mut k = prefixes[rng.gen_range(0..prefixes.len())].to_vec();
        let len = match rng.gen_range(0..10) {
            0 => rng.gen_range(0..3),
            1..=7 => rng.gen_range(1..16),
            8 => rng.gen_range(16..64),
            _ => rng.gen_range(64..300),
        };
        if rng.gen_bool(0.5) {
            k.extend((0..len).map(|_| rng.gen::<u8>()));
        } else {
            k.extend((0..len).map(|_| b'a' + rng.gen_range(0..4u8)));
        }
        keys.insert(k);
    }
    let mut keys: Vec<_> = keys.into_iter().collect();
    // Shuffle so key index order is unrelated to key order.
    for i in (1..keys.len()).rev() {
        keys.swap(i, rng.gen_range(0..=i));
    }
    keys
}

fn value(rng: &mut SmallRng) -> Vec<u8> {
    let len = match rng.gen_range(0..100) {
        0..=9 => 0,
        10..=89 => rng.gen_range(1..64),
        90..=96 => rng.gen_range(64..1500),
        _ => rng.gen_range(4097..9000),
    };
    let b = rng.gen::<u8>();
    (0..len).map(|i| b.wrapping_add((i % 251) as u8)).collect()
}

fn in_bounds(k: &[u8], lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> bool {
    let lo_ok = match lo {
        Bound::Included(l) => k >= l.as_slice(),
        Bound::Excluded(l) => k > l.as_slice(),
        Bound::Unbounded => true,
    };
    let hi_ok = match hi {
        Bound::Included(h) => k <= h.as_slice(),
        Bound::Excluded(h) => k < h.as_slice(),
        Bound::Unbounded => true,
    };
    lo_ok && hi_ok
}

fn model_range(m: &Model, lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> Vec<(Vec<u8>, Vec<u8>)> {
    m.iter()
        .filter(|(k, _)| in_bounds(k, lo, hi))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn random_bound(rng: &mut SmallRng, keys: &[Vec<u8>]) -> Bound<Vec<u8>> {
    let k = if rng.gen_bool(0.8) {
        keys[rng.gen_range(0..keys.len())].clone()
    } else {
        // A key probably not in the key space.
        (0..rng.gen_range(0..6)).map(|_| rng.gen::<u8>()).collect()
    };
    match rng.gen_range(0..5) {
        0 => Bound::Unbounded,
        1 | 2 => Bound::Included(k),
        _ => Bound::Excluded(k),
    }
}

fn as_slice_bound(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_slice()),
        Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

fn short(k: &[u8]) -> String {
    if k.len() <= 24 {
        format!("{k:x?}")
    } else {
        format!("{:x?}..(len {})", &k[..24], k.len())
    }
}

fn diff(got: &[(Vec<u8>, Vec<u8>)], want: &[(Vec<u8>, Vec<u8>)]) -> String {
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if g != w {
            return format!(
                "first difference at entry {i}: got key {} (value len {}), want key {} (value len {})",
                short(&g.0),
                g.1.len(),
                short(&w.0),
                w.1.len()
            );
        }
    }
    format!("got {} entries, want {}", got.len(), want.len())
}

/// Where a sequence runs: a design, on the in-memory file system (with a crash-simulation PM
/// pool for a design that keeps data in PM) or on the real one (with a pool file in the
/// database directory).
#[derive(Clone)]
enum Backend {
    Mem(Design, MemFs, Option<Arc<PmPool>>),
    Disk(Design, PathBuf),
}

impl Backend {
    /// A fresh in-memory store for `design`.
    fn mem(design: Design) -> Backend {
        let env = support::Env::new(design);
        Backend::Mem(design, env.ssd, env.pool)
    }

    fn options(&self, rng: &mut SmallRng) -> (PathBuf, Options) {
        let o = small_options(rng);
        let (dir, mut o) = match self {
            Backend::Mem(design, fs, pool) => (
                PathBuf::from("/db"),
                support::design_options(o, *design, fs, pool.as_ref()),
            ),
            Backend::Disk(design, p) => {
                let mut o = design.options(o);
                o.pm.chunk_bytes = 64 << 10;
                o.pm.size_bytes = support::pool_options(*design).size;
                (p.clone(), o)
            }
        };
        // FluidKV's FastStore in front of the designs that log to PM, drawn at every open: a
        // reopen may switch front ends over logs the other one wrote.
        o.pm.thread_logs = false;
        let thread_logs_ok = o.design.wal_tier(&o) == tierkv::Tier::Pm
            && !o.design.memtable_on_pm()
            && o.design != Design::LABDB;
        o.pm.thread_logs = thread_logs_ok && rng.gen_bool(0.5);
        // Key-value separation, drawn at every open where a design can have it: a reopen may
        // read and compact separated tables with it off, or inline tables with it on.
        if o.design != Design::SLMDB && o.design != Design::LABDB {
            o.table.value_separation = [0, 100, 300][rng.gen_range(0..3)];
        }
        // The manifest in the pool or the directory, drawn at every open of a design with a
        // pool: a reopen moves it (and deletes the one on the other tier).
        if o.design.uses_pm(&o) {
            o.pm.manifest_on_pm = Some(rng.gen_bool(0.5));
        }
        (dir, o)
    }
}

/// Runs one random sequence of `ops` operations for `seed`; panics with "seed S op I: ..." on
/// the first divergence from the model.
/// Work the engine did during one sequence (summed over its opens).
#[derive(Default, Debug, Clone, Copy)]
struct Work {
    flushes: u64,
    compactions: u64,
    deepest_level: usize,
    reopens: u64,
}

impl Work {
    fn add_stats(&mut self, d: &Db) {
        let s = d.stats();
        self.flushes += s.flushes;
        self.compactions += s.compactions;
        let deepest = s.levels.iter().rposition(|l| l.files > 0).unwrap_or(0);
        self.deepest_level = self.deepest_level.max(deepest);
    }
    fn merge(&mut self, o: Work) {
        self.flushes += o.flushes;
        self.compactions += o.compactions;
        self.deepest_level = self.deepest_level.max(o.deepest_level);
        self.reopens += o.reopens;
    }
}

fn run_sequence(seed: u64, ops: usize, backend: Backend, partial_compactions: bool) -> Work {
    let mut work = Work::default();
    let mut rng = SmallRng::seed_from_u64(seed);
    let (path, opts) = backend.options(&mut rng);
    let nkeys = [8, 50, 200, 1000][rng.gen_range(0..4)];
    let keys = key_space(&mut rng, nkeys);
    let mut db =
        Some(Db::open(&path, opts.clone()).unwrap_or_else(|e| panic!("seed {seed}: open: {e}")));
    let mut model = Model::new();
    let mut snaps: Vec<(Snapshot, Model)> = Vec::new();
    let pick = |rng: &mut SmallRng| keys[rng.gen_range(0..keys.len())].clone();
    let trace = std::env::var_os("TIERKV_MODEL_TRACE").is_some();
    for i in 0..ops {
        let d = db.as_ref().unwrap();
        let what = rng.gen_range(0..100);
        if trace {
            eprintln!(
                "seed {seed} op {i}: kind {what} stats {:?}",
                d.stats().levels
            );
        }
        match what {
            0..=29 => {
                let (k, v) = (pick(&mut rng), value(&mut rng));
                let sync = rng.gen_bool(0.1);
                let mut b = WriteBatch::new();
                b.put(&k, &v);
                d.write(
                    &WriteOptions {
                        sync,
                        ..Default::default()
                    },
                    b,
                )
                .unwrap_or_else(|e| panic!("seed {seed} op {i}: put {}: {e}", short(&k)));
                model.insert(k, v);
            }
            30..=39 => {
                let k = pick(&mut rng);
                d.delete(&k)
                    .unwrap_or_else(|e| panic!("seed {seed} op {i}: delete: {e}"));
                model.remove(&k);
            }
            40..=49 => {
                let mut b = WriteBatch::new();
                let n = rng.gen_range(1..40);
                for _ in 0..n {
                    let k = pick(&mut rng);
                    if rng.gen_bool(0.7) {
                        let v = value(&mut rng);
                        b.put(&k, &v);
                        model.insert(k, v);
                    } else {
                        b.delete(&k);
                        model.remove(&k);
                    }
                }
                let sync = rng.gen_bool(0.2);
                d.write(
                    &WriteOptions {
                        sync,
                        ..Default::default()
                    },
                    b,
                )
                .unwrap_or_else(|e| panic!("seed {seed} op {i}: batch: {e}"));
            }
            50..=64 => {
                for _ in 0..4 {
                    let k = pick(&mut rng);
                    let got = d
                        .get(&k)
                        .unwrap_or_else(|e| panic!("seed {seed} op {i}: get: {e}"));
                    assert!(
                        got.as_ref() == model.get(&k),
                        "seed {seed} op {i}: get {} returned {:?} bytes, model has {:?}",
                        short(&k),
                        got.as_ref().map(|v| v.len()),
                        model.get(&k).map(|v| v.len())
                    );
                }
            }
            65..=74 => {
                let lo = random_bound(&mut rng, &keys);
                let hi = random_bound(&mut rng, &keys);
                let got: Vec<_> = d
                    .scan((as_slice_bound(&lo), as_slice_bound(&hi)))
                    .unwrap_or_else(|e| panic!("seed {seed} op {i}: scan: {e}"))
                    .collect::<Result<_, _>>()
                    .unwrap_or_else(|e| panic!("seed {seed} op {i}: scan: {e}"));
                let want = model_range(&model, &lo, &hi);
                assert!(
                    got == want,
                    "seed {seed} op {i}: scan {lo:x?}..{hi:x?}: {}",
                    diff(&got, &want)
                );
            }
            75..=77 => {
                // Iterator seek + a few nexts.
                let target = pick(&mut rng);
                let mut it = d
                    .iter(&ReadOptions::default())
                    .unwrap_or_else(|e| panic!("seed {seed} op {i}: iter: {e}"));
                it.seek(&target);
                let want: Vec<_> = model
                    .range(target.clone()..)
                    .take(5)
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                let mut got = Vec::new();
                while it.valid() && got.len() < 5 {
                    got.push((it.key().to_vec(), it.value().to_vec()));
                    it.next();
                }
                it.status()
                    .unwrap_or_else(|e| panic!("seed {seed} op {i}: iter: {e}"));
                assert!(
                    got == want,
                    "seed {seed} op {i}: seek {}: {}",
                    short(&target),
                    diff(&got, &want)
                );
            }
            78..=81 => {
                if snaps.len() >= 3 {
                    snaps.remove(rng.gen_range(0..snaps.len()));
                }
                snaps.push((d.snapshot(), model.clone()));
            }
            82..=87 => {
                if snaps.is_empty() {
                    continue;
                }
                let j = rng.gen_range(0..snaps.len());
                let (snap, smodel) = &snaps[j];
                let ro = ReadOptions {
                    snapshot: Some(snap.clone()),
                    ..ReadOptions::default()
                };
                for _ in 0..3 {
                    let k = pick(&mut rng);
                    let got = d
                        .get_with(&ro, &k)
                        .unwrap_or_else(|e| panic!("seed {seed} op {i}: snapshot get: {e}"));
                    assert!(
                        got.as_ref() == smodel.get(&k),
                        "seed {seed} op {i}: snapshot get {}: {:?} bytes, model {:?}",
                        short(&k),
                        got.as_ref().map(|v| v.len()),
                        smodel.get(&k).map(|v| v.len())
                    );
                }
                let lo = random_bound(&mut rng, &keys);
                let hi = random_bound(&mut rng, &keys);
                let got: Vec<_> = d
                    .scan_with(&ro, (as_slice_bound(&lo), as_slice_bound(&hi)))
                    .unwrap_or_else(|e| panic!("seed {seed} op {i}: snapshot scan: {e}"))
                    .collect::<Result<_, _>>()
                    .unwrap_or_else(|e| panic!("seed {seed} op {i}: snapshot scan: {e}"));
                let want = model_range(smodel, &lo, &hi);
                assert!(
                    got == want,
                    "seed {seed} op {i}: snapshot scan {lo:x?}..{hi:x?}: {}",
                    diff(&got, &want)
                );
            }
            88..=91 => {
                d.flush()
                    .unwrap_or_else(|e| panic!("seed {seed} op {i}: flush: {e}"));
            }
            92..=95 => {
                let (a, b) = (pick(&mut rng), pick(&mut rng));
                let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
                let mut which = rng.gen_range(0..4);
                if !partial_compactions {
                    which = 0;
                }
                let r = match which {
                    0 => d.compact_range(None, None),
                    1 => d.compact_range(Some(&lo), None),
                    2 => d.compact_range(None, Some(&hi)),
                    _ => d.compact_range(Some(&lo), Some(&hi)),
                };
                r.unwrap_or_else(|e| panic!("seed {seed} op {i}: compact_range: {e}"));
            }
            _ => {
                // Close and reopen; snapshots do not survive.
                snaps.clear();
                work.add_stats(d);
                work.reopens += 1;
                db.take()
                    .unwrap()
                    .close()
                    .unwrap_or_else(|e| panic!("seed {seed} op {i}: close: {e}"));
                // Every structure the sequence built so far passes the checker, not only the
                // reads (overlapping runs a reuse left, say, read right but are damage).
                if !matches!(backend, Backend::Disk(..)) {
                    Db::check(&path, opts.clone())
                        .unwrap_or_else(|e| panic!("seed {seed} op {i}: check: {e}"));
                }
                db = Some(
                    Db::open(&path, opts.clone())
                        .unwrap_or_else(|e| panic!("seed {seed} op {i}: reopen: {e}")),
                );
            }
        }
    }
    // Final full comparison, before and after a reopen.
    let d = db.take().unwrap();
    check_full(&d, &model, &format!("seed {seed} op {ops} (end)"));
    work.add_stats(&d);
    snaps.clear();
    d.close()
        .unwrap_or_else(|e| panic!("seed {seed}: final close: {e}"));
    let d =
        Db::open(&path, opts.clone()).unwrap_or_else(|e| panic!("seed {seed}: final reopen: {e}"));
    check_full(&d, &model, &format!("seed {seed} op {ops} (after reopen)"));
    d.close().unwrap();
    if !matches!(backend, Backend::Disk(..)) {
        Db::check(&path, opts).unwrap_or_else(|e| panic!("seed {seed}: check: {e}"));
    }
    work
}

fn check_full(d: &Db, model: &Model, ctx: &str) {
    let got: Vec<_> = d
        .scan(..)
        .unwrap_or_else(|e| panic!("{ctx}: scan: {e}"))
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{ctx}: scan: {e}"));
    let want: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert!(got == want, "{ctx}: full scan: {}", diff(&got, &want));
    for (k, v) in model.iter().take(50) {
        let g = d.get(k).unwrap_or_else(|e| panic!("{ctx}: get: {e}"));
        assert!(g.as_ref() == Some(v), "{ctx}: get {}", short(k));
    }
}

fn ops_for(seed: u64) -> usize {
    50 + (seed % 51) as usize
}

#[test]
#[ignore = "debug helper: TIERKV_MODEL_SEED=N [TIERKV_MODEL_DESIGN=D] TIERKV_MODEL_TRACE=1"]
fn model_one_seed_from_env() {
    let seed = std::env::var("TIERKV_MODEL_SEED").unwrap().parse().unwrap();
    let design =
        std::env::var("TIERKV_MODEL_DESIGN").map_or(Design::LEVELED, |d| d.parse().unwrap());
    run_sequence(seed, ops_for(seed), Backend::mem(design), true);
}

fn seed_count() -> u64 {
    std::env::var("TIERKV_MODEL_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3000)
}

/// Runs `seeds`, catching panics so that every failing seed is reported, not only the first.
fn run_seeds(
    seeds: impl Iterator<Item = u64>,
    partial_compactions: bool,
    backend: impl Fn(u64) -> Backend,
) -> Work {
    let mut total = Work::default();
    let mut failures = Vec::new();
    let mut ran = 0;
    for seed in seeds {
        ran += 1;
        let b = backend(seed);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            run_sequence(seed, ops_for(seed), b, partial_compactions)
        }));
        match r {
            Ok(w) => total.merge(w),
            Err(p) => {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                failures.push(msg);
                if failures.len() >= 10 {
                    break;
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {ran} sequences failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    total
}

/// The main model test, on every design; `compact_range` runs on whole and partial key ranges.
/// To fit the CI budget, `nvlsm` and `trianglekv` run two thirds of the seeds and the variants
/// of their families (`nvlsm-leveled`, `nvlsm-fragmented`: the same stage, policy and run kind
/// with other set shapes; `matrixkv`: the same stage and rows with another compaction plan) a
/// third.
/// Split in two tests of about equal length (the designs of [`MEMFS_HALF_A`], then the others)
/// so that the two run on two threads.
#[test]
fn model_random_sequences_memfs_a() {
    model_random_sequences_memfs(|d| MEMFS_HALF_A.contains(&d));
}

#[test]
fn model_random_sequences_memfs_b() {
    model_random_sequences_memfs(|d| !MEMFS_HALF_A.contains(&d));
}

const MEMFS_HALF_A: &[Design] = &[
    Design::LEVELED,
    Design::LEVELED_PM,
    Design::LEVELED_PMTABLE,
    Design::NVLSM,
    Design::LISTDB,
];

fn model_random_sequences_memfs(selected: impl Fn(Design) -> bool) {
    for design in support::designs().into_iter().filter(|&d| selected(d)) {
        let n = if design == Design::NVLSM_LEVELED
            || design == Design::NVLSM_FRAGMENTED
            || design == Design::MATRIXKV
        {
            seed_count() / 3
        } else if design == Design::NVLSM || design == Design::TRIANGLEKV {
            seed_count() * 2 / 3
        } else {
            seed_count()
        };
        let start = std::time::Instant::now();
        let work = run_seeds(0..n, true, |_| Backend::mem(design));
        eprintln!("{design}: {n} sequences in {:?}: {work:?}", start.elapsed());
        // The options are small enough that the engine really flushes, compacts and reopens.
        assert!(
            work.flushes > n && work.compactions > n / 2,
            "{design}: {work:?}"
        );
        // Data reaches the third group, or the last one of a design with fewer (SLM-DB's
        // single level).
        let groups: usize = design
            .layouts(&design.options(Options::default()))
            .iter()
            .map(|l| l.groups.len())
            .sum();
        assert!(
            work.deepest_level >= 2.min(groups - 1) && work.reopens > n / 2,
            "{design}: {work:?}"
        );
    }
}

/// Every design on the real file system (its PM pool, where it has one, a file in the
/// database directory).
#[test]
fn model_random_sequences_real_fs() {
    let dir = tempfile::tempdir().unwrap();
    for design in support::designs() {
        let base = dir.path().join(design.name());
        let seeds = 1_000_000..1_000_000 + (seed_count() / 100).max(20);
        let count = seeds.end - seeds.start;
        let work = run_seeds(seeds, true, move |seed| {
            Backend::Disk(design, base.join(format!("db{seed}")))
        });
        assert!(
            work.flushes > count && work.compactions > 0,
            "{design}: {work:?}"
        );
    }
}

/// 4 writers on disjoint key sets and 2 readers (gets, scans, snapshot scans) at once; then the
/// whole database is compared with the writers' models, before and after a reopen.
fn concurrent_run(path: &Path, opts: Options) {
    const WRITERS: usize = 4;
    const OPS: usize = 1500;
    let db = Arc::new(Db::open(path, opts.clone()).unwrap());
    let done = Arc::new(AtomicBool::new(false));
    let barrier = Arc::new(Barrier::new(WRITERS + 2));
    let key = |t: usize, i: usize| format!("w{t}-{i:04}").into_bytes();
    // Values: "<key>|<version>|" + padding: readers check each value belongs to its key and
    // versions never go backwards.
    let val = |k: &[u8], ver: usize, pad: usize| {
        let mut v = k.to_vec();
        v.extend_from_slice(format!("|{ver:08}|").as_bytes());
        v.resize(v.len() + pad, b'x');
        v
    };
    let parse = |k: &[u8], v: &[u8]| -> usize {
        assert!(v.starts_with(k), "value of {k:?} belongs to another key");
        let rest = &v[k.len()..];
        assert_eq!(rest[0], b'|');
        std::str::from_utf8(&rest[1..9]).unwrap().parse().unwrap()
    };
    let writers: Vec<_> = (0..WRITERS)
        .map(|t| {
            let db = Arc::clone(&db);
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(t as u64);
                let mut model = Model::new();
                barrier.wait();
                for ver in 1..=OPS {
                    let i = rng.gen_range(0..300);
                    let k = key(t, i);
                    match rng.gen_range(0..10) {
                        0 | 1 => {
                            db.delete(&k).unwrap();
                            model.remove(&k);
                        }
                        2 => {
                            let mut b = WriteBatch::new();
                            for j in 0..5 {
                                let k = key(t, (i + j * 7) % 300);
                                let v = val(&k, ver, j * 30);
                                b.put(&k, &v);
                                model.insert(k, v);
                            }
                            db.write(
                                &WriteOptions {
                                    sync: ver % 50 == 0,
                                    ..Default::default()
                                },
                                b,
                            )
                            .unwrap();
                        }
                        _ => {
                            let v = val(&k, ver, rng.gen_range(0..200));
                            db.put(&k, &v).unwrap();
                            model.insert(k, v);
                        }
                    }
                    if t == 0 && ver % 500 == 0 {
                        db.flush().unwrap();
                    }
                    if t == 1 && ver % 700 == 0 {
                        db.compact_range(None, None).unwrap();
                    }
                }
                model
            })
        })
        .collect();
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let db = Arc::clone(&db);
            let done = Arc::clone(&done);
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(100 + r as u64);
                let mut seen: HashMap<Vec<u8>, usize> = HashMap::new();
                let mut rounds = 0;
                barrier.wait();
                while !done.load(Ordering::Acquire) || rounds < 10 {
                    rounds += 1;
                    let k = key(rng.gen_range(0..WRITERS), rng.gen_range(0..300));
                    let got = db
                        .get(&k)
                        .unwrap_or_else(|e| panic!("get {:?}: {e}", String::from_utf8_lossy(&k)));
                    if let Some(v) = got {
                        let ver = parse(&k, &v);
                        let prev = seen.entry(k.clone()).or_insert(0);
                        assert!(ver >= *prev, "version of {k:?} went back");
                        *prev = ver;
                    }
                    if rounds % 20 == 0 {
                        // A snapshot scan twice: identical, sorted, well-formed.
                        let snap = db.snapshot();
                        let ro = ReadOptions {
                            snapshot: Some(snap),
                            ..ReadOptions::default()
                        };
                        let t = rng.gen_range(0..WRITERS);
                        let lo = key(t, 0);
                        let hi = key(t, 150);
                        let a: Vec<_> = db
                            .scan_with(&ro, &lo[..]..&hi[..])
                            .unwrap()
                            .collect::<Result<_, _>>()
                            .unwrap();
                        for w in a.windows(2) {
                            assert!(w[0].0 < w[1].0, "scan out of order");
                        }
                        for (k, v) in &a {
                            assert!(k >= &lo && k < &hi);
                            parse(k, v);
                        }
                        let b: Vec<_> = db
                            .scan_with(&ro, &lo[..]..&hi[..])
                            .unwrap()
                            .collect::<Result<_, _>>()
                            .unwrap();
                        if a != b {
                            let show = |e: Option<&(Vec<u8>, Vec<u8>)>| {
                                e.map(|(k, v)| {
                                    (String::from_utf8_lossy(k).into_owned(), parse(k, v))
                                })
                            };
                            let at = (0..a.len().max(b.len()))
                                .find(|&i| a.get(i) != b.get(i))
                                .unwrap_or(0);
                            panic!(
                                "two scans of one snapshot differ: {} vs {} entries, first \
                                 difference at {at}: {:?} vs {:?}",
                                a.len(),
                                b.len(),
                                show(a.get(at)),
                                show(b.get(at))
                            );
                        }
                    }
                }
                rounds
            })
        })
        .collect();
    let mut model = Model::new();
    for w in writers {
        model.extend(w.join().unwrap());
    }
    done.store(true, Ordering::Release);
    for r in readers {
        assert!(r.join().unwrap() >= 10);
    }
    check_full(&db, &model, "concurrent (end)");
    let db = Arc::into_inner(db).expect("threads joined");
    db.close().unwrap();
    let db = Db::open(path, opts).unwrap();
    check_full(&db, &model, "concurrent (after reopen)");
    db.close().unwrap();
}

/// The pool of the concurrent tests: 8 MiB, or 32 MiB for a design that keeps every run in the
/// pool (their writers fill more than the model sequences).
fn concurrent_pool(design: Design) -> tierkv::pm::PoolOptions {
    let size = if design.data_on_pm() {
        32 << 20
    } else {
        8 << 20
    };
    tierkv::pm::PoolOptions {
        size,
        ..support::pool_options(design)
    }
}

#[test]
fn concurrent_writers_and_readers_real_fs() {
    for design in support::designs() {
        let dir = tempfile::tempdir().unwrap();
        let mut rng = SmallRng::seed_from_u64(7);
        let mut opts = design.options(small_options(&mut rng));
        opts.write_buffer_size = 16 << 10;
        opts.pm.chunk_bytes = 64 << 10;
        opts.pm.size_bytes = concurrent_pool(design).size;
        concurrent_run(dir.path(), opts);
    }
}

#[test]
fn concurrent_writers_and_readers_memfs() {
    for design in support::designs() {
        let mut rng = SmallRng::seed_from_u64(8);
        let env = support::Env::new(design);
        let mut opts = env.options(small_options(&mut rng));
        if opts.pm.pool.is_some() {
            let pool = concurrent_pool(design);
            opts.pm.size_bytes = pool.size;
            opts.pm.pool = Some(tierkv::pm::PmPool::create_crash_sim(&pool, false).unwrap());
        }
        concurrent_run(Path::new("/db"), opts);
    }
}

/// Replays a seed that failed when a manual compaction of a partial range moved only some L0
/// files down (fixed: L0 is always compacted whole). These failures depended on
/// background-compaction timing, so each replay runs the seed 20 times;
/// `partial_l0_manual_compaction_keeps_newest` reproduces the cause deterministically.
fn replay_partial(seed: u64) {
    for _ in 0..20 {
        run_sequence(seed, ops_for(seed), Backend::mem(Design::LEVELED), true);
    }
}

/// Op 76: a snapshot `get` of the empty key returned a stale 4810-byte value (model: 13 bytes).
#[test]
fn model_regression_seed_80() {
    replay_partial(80);
}

/// Op 7: `get` returned a stale 61-byte value (model: 11 bytes).
#[test]
fn model_regression_seed_1001() {
    replay_partial(1001);
}

/// End of sequence: a full scan returned a deleted key (resurrected).
#[test]
fn model_regression_seed_1343() {
    replay_partial(1343);
}

/// An L0 file that does not overlap the compacted range but overlaps a newer L0 file that does
/// must not be left above it: LevelDB widens the L0 input set until it is closed under overlap.
#[test]
fn partial_l0_manual_compaction_keeps_newest() {
    let opts = Options {
        fs: Arc::new(MemFs::new()),
        ..Options::default()
    };
    let db = Db::open("/db", opts).unwrap();
    db.put(b"x", b"old").unwrap();
    db.flush().unwrap(); // L0: [x..x]
    db.put(b"a", b"1").unwrap();
    db.put(b"x", b"new").unwrap();
    db.flush().unwrap(); // L0: [x..x], [a..x] (newer)
    db.compact_range(Some(b"a"), Some(b"b")).unwrap();
    assert_eq!(db.get(b"x").unwrap(), Some(b"new".to_vec()));
    let all: Vec<_> = db.scan(..).unwrap().collect::<Result<_, _>>().unwrap();
    assert_eq!(
        all,
        vec![
            (b"a".to_vec(), b"1".to_vec()),
            (b"x".to_vec(), b"new".to_vec())
        ]
    );
}

/// The same bug resurrects deleted keys: the newer tombstone is compacted into L1 (and dropped
/// there as L1 is the base level for the key) while the older put stays in L0.
#[test]
fn partial_l0_manual_compaction_does_not_resurrect() {
    let opts = Options {
        fs: Arc::new(MemFs::new()),
        ..Options::default()
    };
    let db = Db::open("/db", opts).unwrap();
    db.put(b"x", b"old").unwrap();
    db.flush().unwrap();
    db.put(b"a", b"1").unwrap();
    db.delete(b"x").unwrap();
    db.flush().unwrap();
    db.compact_range(Some(b"a"), Some(b"b")).unwrap();
    assert_eq!(db.get(b"x").unwrap(), None);
    let keys: Vec<_> = db.scan(..).unwrap().map(|e| e.unwrap().0).collect();
    assert_eq!(keys, vec![b"a".to_vec()]);
}
