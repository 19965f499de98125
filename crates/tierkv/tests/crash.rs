//! Crash tests on `MemFs`: a deterministic workload is stopped at every crash point (the k-th
//! mutating file-system operation, via `MemFs::freeze_after`), and the images a crash at that
//! instant can leave behind (`SyncedOnly`, `ProcessCrash`, `Random(seed)`) are recovered and
//! checked against the sequence of acknowledged writes:
//!
//! (a) open succeeds;
//! (b) every write acknowledged with `sync`, and every write acknowledged before it, is present;
//!     with `ProcessCrash` every acknowledged write is present;
//! (c) the recovered state is exactly the model state after some prefix of the write sequence,
//!     at most one write past the acknowledged ones (the write in flight when the crash hit);
//! (d) the recovered database takes new writes, and reopening it gives the same state.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::hash_map::DefaultHasher;
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::sync::Arc;
use tierkv::fs::{CrashMode, MemFs};
use tierkv::{Db, Options, WriteBatch, WriteOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;
/// The operations of one write batch: `None` value = delete.
type Ops = Vec<(Vec<u8>, Option<Vec<u8>>)>;

const DB: &str = "/db";

fn options(fs: &MemFs) -> Options {
    let mut o = Options {
        write_buffer_size: 4096,
        max_open_files: 16,
        block_cache_bytes: 64 << 10,
        fs: Arc::new(fs.clone()),
        ..Options::default()
    };
    o.table.block_size = 1024;
    o.compaction.level0_compaction_trigger = 2;
    o.compaction.target_file_size = 4096;
    o.compaction.max_bytes_for_level_base = 8 << 10;
    o.compaction.level_size_multiplier = 4;
    o.compaction.num_levels = 4;
    o
}

/// One step of the workload.
#[derive(Clone, Debug)]
enum Step {
    /// A write: its operations (`None` value = delete) and whether it is synced.
    Write {
        ops: Ops,
        sync: bool,
    },
    Flush,
    Compact,
}

fn workload(seed: u64, len: usize, big_values: bool) -> Vec<Step> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let key = |rng: &mut SmallRng| format!("k{:03}", rng.gen_range(0..120)).into_bytes();
    let mut steps = Vec::new();
    for i in 0..len {
        let r = rng.gen_range(0..100);
        let step = match r {
            0..=1 => Step::Flush,
            2 => Step::Compact,
            _ => {
                let n = if r < 80 { 1 } else { rng.gen_range(2..8) };
                let ops = (0..n)
                    .map(|_| {
                        let k = key(&mut rng);
                        if rng.gen_bool(0.25) {
                            (k, None)
                        } else {
                            let len = if big_values && rng.gen_bool(0.05) {
                                // Spans several 32 KiB log blocks.
                                rng.gen_range(33_000..80_000)
                            } else {
                                rng.gen_range(0..200)
                            };
                            let mut v = format!("v{i}-").into_bytes();
                            v.resize(v.len() + len, b'a' + (i % 26) as u8);
                            (k, Some(v))
                        }
                    })
                    .collect();
                Step::Write {
                    ops,
                    sync: rng.gen_bool(0.15),
                }
            }
        };
        steps.push(step);
    }
    steps
}

fn apply(model: &mut Model, ops: &[(Vec<u8>, Option<Vec<u8>>)]) {
    for (k, v) in ops {
        match v {
            Some(v) => model.insert(k.clone(), v.clone()),
            None => model.remove(k),
        };
    }
}

fn fingerprint(m: &Model) -> u64 {
    let mut h = DefaultHasher::new();
    m.hash(&mut h);
    h.finish()
}

/// The writes of the workload in order, and the fingerprint of the model after each prefix
/// (`prefix[i]`: after the first `i` writes).
struct Expected {
    writes: Vec<(Ops, bool)>,
    prefix: Vec<u64>,
}

fn expected(steps: &[Step]) -> Expected {
    let writes: Vec<_> = steps
        .iter()
        .filter_map(|s| match s {
            Step::Write { ops, sync } => Some((ops.clone(), *sync)),
            _ => None,
        })
        .collect();
    let mut m = Model::new();
    let mut prefix = vec![fingerprint(&m)];
    for (ops, _) in &writes {
        apply(&mut m, ops);
        prefix.push(fingerprint(&m));
    }
    Expected { writes, prefix }
}

/// What the workload saw before it stopped.
#[derive(Debug, Default)]
struct Outcome {
    /// Writes acknowledged (a prefix of the workload's writes).
    acked: usize,
    /// Writes up to and including the last one acknowledged with sync.
    synced: usize,
    opened: bool,
}

/// Runs the workload on `fs` until the first error.
fn run(fs: &MemFs, steps: &[Step]) -> Outcome {
    let mut out = Outcome::default();
    let Ok(db) = Db::open(DB, options(fs)) else {
        return out;
    };
    out.opened = true;
    for step in steps {
        let r = match step {
            Step::Write { ops, sync } => {
                let mut b = WriteBatch::new();
                for (k, v) in ops {
                    match v {
                        Some(v) => b.put(k, v),
                        None => b.delete(k),
                    }
                }
                let r = db.write(&WriteOptions { sync: *sync }, b);
                if r.is_ok() {
                    out.acked += 1;
                    if *sync {
                        out.synced = out.acked;
                    }
                }
                r
            }
            Step::Flush => db.flush(),
            Step::Compact => db.compact_range(None, None),
        };
        if r.is_err() {
            break;
        }
    }
    out
}

fn scan_all(db: &Db, ctx: &str) -> Model {
    db.scan(..)
        .unwrap_or_else(|e| panic!("{ctx}: scan: {e}"))
        .map(|e| e.unwrap_or_else(|e| panic!("{ctx}: scan: {e}")))
        .collect()
}

/// Checks (a)-(d) on the crash image `img`.
fn check_image(img: &MemFs, mode: CrashMode, out: &Outcome, exp: &Expected, ctx: &str) {
    let ctx = format!(
        "{ctx} {mode:?} (acked {}, synced {})",
        out.acked, out.synced
    );
    if !img.exists_db() {
        // Nothing durable yet: only possible before anything was acknowledged.
        assert!(
            out.synced == 0 && (mode != CrashMode::ProcessCrash || out.acked == 0),
            "{ctx}: the database vanished"
        );
    }
    // (a)
    let db = Db::open(DB, options(img)).unwrap_or_else(|e| panic!("{ctx}: recovery failed: {e}"));
    let state = scan_all(&db, &ctx);
    // (b) + (c)
    let lower = if mode == CrashMode::ProcessCrash {
        out.acked
    } else {
        out.synced
    };
    let upper = (out.acked + 1).min(exp.writes.len());
    let fp = fingerprint(&state);
    let prefix = (lower..=upper).find(|&p| exp.prefix[p] == fp);
    assert!(
        prefix.is_some(),
        "{ctx}: recovered state ({} keys) is not the state after any of writes {lower}..={upper}{}",
        state.len(),
        match (0..exp.prefix.len()).find(|&p| exp.prefix[p] == fp) {
            Some(p) => format!(" (it is the state after {p} writes)"),
            None => " (nor after any prefix: holes or resurrected keys)".into(),
        }
    );
    // (d)
    let mut state = state;
    let mut b = WriteBatch::new();
    b.put(b"after-crash", b"1");
    b.delete(b"k001");
    db.write(&WriteOptions { sync: true }, b)
        .unwrap_or_else(|e| panic!("{ctx}: write after recovery: {e}"));
    db.put(b"k002", b"after").unwrap();
    state.insert(b"after-crash".to_vec(), b"1".to_vec());
    state.remove(&b"k001"[..]);
    state.insert(b"k002".to_vec(), b"after".to_vec());
    assert!(scan_all(&db, &ctx) == state, "{ctx}: after new writes");
    db.close()
        .unwrap_or_else(|e| panic!("{ctx}: close after recovery: {e}"));
    let db = Db::open(DB, options(img)).unwrap_or_else(|e| panic!("{ctx}: second open: {e}"));
    assert!(scan_all(&db, &ctx) == state, "{ctx}: after second reopen");
    db.close().unwrap();
    Db::check(DB, options(img)).unwrap_or_else(|e| panic!("{ctx}: check: {e}"));
}

trait ExistsDb {
    fn exists_db(&self) -> bool;
}

impl ExistsDb for MemFs {
    fn exists_db(&self) -> bool {
        self.file_data(&Path::new(DB).join("CURRENT")).is_some()
    }
}

fn crash_points(seed: u64, len: usize, big_values: bool, step: u64) -> (u64, usize) {
    let steps = workload(seed, len, big_values);
    let exp = expected(&steps);
    let probe = MemFs::new();
    let out = run(&probe, &steps);
    assert_eq!(
        out.acked,
        exp.writes.len(),
        "the workload runs without faults"
    );
    let count = probe.mutating_op_count();
    let mut checked = 0;
    let mut k = 0;
    while k < count + 20 {
        let fs = MemFs::new();
        fs.freeze_after(k);
        let out = run(&fs, &steps);
        let ctx = format!("seed {seed} crash point {k}");
        let mut modes = vec![CrashMode::SyncedOnly, CrashMode::ProcessCrash];
        modes.extend([1, 2, 3].map(|r| CrashMode::Random(k * 10 + r)));
        for mode in modes {
            check_image(&fs.crash(mode), mode, &out, &exp, &ctx);
        }
        checked += 1;
        k += step;
    }
    (count, checked)
}

/// Every crash point of a ~300-step workload.
#[test]
fn crash_at_every_point() {
    let t = std::time::Instant::now();
    let (count, checked) = crash_points(1, 300, false, 1);
    eprintln!(
        "{count} mutating ops, {checked} crash points x 5 modes in {:?}",
        t.elapsed()
    );
    assert!(count > 300, "the workload flushes and compacts: {count}");
}

/// Every crash point of a workload with values larger than a log block (fragmented records).
#[test]
fn crash_at_every_point_large_values() {
    let t = std::time::Instant::now();
    let (count, checked) = crash_points(2, 200, true, 1);
    eprintln!(
        "{count} mutating ops, {checked} crash points x 5 modes in {:?}",
        t.elapsed()
    );
}

/// A longer workload (more compactions into deeper levels), every fifth crash point.
#[test]
fn crash_long_workload() {
    let t = std::time::Instant::now();
    let (count, checked) = crash_points(3, 800, false, 5);
    eprintln!(
        "{count} mutating ops, {checked} crash points x 5 modes in {:?}",
        t.elapsed()
    );
}
