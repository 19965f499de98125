//! Crash tests on `MemFs`, for every design of the registry: a deterministic workload is
//! stopped at every crash point (the k-th mutating SSD operation, via `MemFs::freeze_after`;
//! a design that keeps data in PM has its crash-simulation pool imaged at the same instant, see
//! `support/mod.rs`), and the images a crash at that instant can leave behind (`SyncedOnly`,
//! `ProcessCrash`, `Random(seed)` of the SSD; the pool's persisted lines, or for a process
//! crash everything stored) are recovered and checked against the sequence of acknowledged
//! writes (images of one instant that are equal, say a synced-only and a process-crash image
//! once everything is synced, are one input and recovered once: see `support::Distinct`):
//!
//! (a) open succeeds;
//! (b) every write acknowledged with `sync`, and every write acknowledged before it, is present;
//!     with `ProcessCrash` every acknowledged write is present;
//! (c) the recovered state is exactly the model state after some prefix of the write sequence,
//!     at most one write past the acknowledged ones (the write in flight when the crash hit);
//! (d) the recovered database takes new writes, and reopening it gives the same state.
//!
//! Crashes during recovery: the recovery of a first crash image is itself stopped at each of its
//! crash points (and, for a sample, the recovery of that image too); every image of such a crash
//! must pass (a)-(d) with the bounds of the FIRST crash, and (e) recover the same state as an
//! uninterrupted recovery of the first image.

mod support;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::hash_map::DefaultHasher;
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use support::{Distinct, Env, Image};
use tierkv::fs::CrashMode;
use tierkv::{Db, Design, Options, WriteBatch, WriteOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;
/// The operations of one write batch: `None` value = delete.
type Ops = Vec<(Vec<u8>, Option<Vec<u8>>)>;

const DB: &str = "/db";

thread_local! {
    /// `table.value_separation` for the walks of this thread's test (0: values inline). Every
    /// open of a walk (the workload's, each recovery's, `check`'s) runs on its test's thread.
    static VALUE_SEPARATION: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Tiny options for `env`'s design and store.
fn options(env: &Env) -> Options {
    let mut o = support::tiny_options(env);
    o.table.value_separation = VALUE_SEPARATION.with(|v| v.get());
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
#[derive(Clone, Copy, Debug, Default)]
struct Outcome {
    /// Writes acknowledged at the crash point (a prefix of the workload's writes).
    acked: usize,
    /// Writes up to and including the last one acknowledged with sync, at the crash point.
    synced: usize,
    /// Writes acknowledged when the workload stopped (a design may acknowledge writes that do
    /// not reach the SSD after the crash point: they are not in the image).
    acked_final: usize,
    opened: bool,
}

/// Runs the workload on `env` until the first error.
fn run(env: &Env, steps: &[Step]) -> Outcome {
    let mut out = Outcome::default();
    let Ok(db) = Db::open(DB, options(env)) else {
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
                let r = db.write(
                    &WriteOptions {
                        sync: *sync,
                        ..Default::default()
                    },
                    b,
                );
                if r.is_ok() {
                    env.progress.ack(*sync);
                    out.acked_final += 1;
                }
                r
            }
            Step::Flush => db.flush(),
            Step::Compact => db.compact_range(None, None),
        };
        // An error, or the crash point passed: the images are those of the crash instant, and
        // a design whose log is in the pool would go on acknowledging writes no image holds.
        if r.is_err() || env.ssd.is_frozen() {
            break;
        }
    }
    drop(db);
    (out.acked, out.synced) = env.counts_at_crash();
    out
}

fn scan_all(db: &Db, ctx: &str) -> Model {
    db.scan(..)
        .unwrap_or_else(|e| panic!("{ctx}: scan: {e}"))
        .map(|e| e.unwrap_or_else(|e| panic!("{ctx}: scan: {e}")))
        .collect()
}

/// Checks (a)-(d) on the crash image `img` of `design`.
fn check_image(
    design: Design,
    img: &Image,
    mode: CrashMode,
    out: &Outcome,
    exp: &Expected,
    ctx: &str,
) {
    let ctx = format!(
        "{design} {ctx} {mode:?} (acked {}, synced {})",
        out.acked, out.synced
    );
    if !img.exists_db() {
        // Nothing durable yet: only possible before anything was acknowledged.
        assert!(
            out.synced == 0 && (mode != CrashMode::ProcessCrash || out.acked == 0),
            "{ctx}: the database vanished"
        );
    }
    let lower = if mode == CrashMode::ProcessCrash {
        out.acked
    } else {
        out.synced
    };
    check_recovered(design, img, lower, out, exp, &ctx);
}

/// Checks (a)-(d) on the crash image `img`, of which the first `lower` writes must survive;
/// returns the fingerprint of the state recovered (before the new writes of (d)).
fn check_recovered(
    design: Design,
    img: &Image,
    lower: usize,
    out: &Outcome,
    exp: &Expected,
    ctx: &str,
) -> u64 {
    let env = Env::from_image(design, img);
    // (a)
    let db = Db::open(DB, options(&env)).unwrap_or_else(|e| panic!("{ctx}: recovery failed: {e}"));
    let state = scan_all(&db, ctx);
    // (b) + (c)
    let upper = (out.acked_final + 1).min(exp.writes.len());
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
    let recovered = fp;
    let mut state = state;
    let mut b = WriteBatch::new();
    b.put(b"after-crash", b"1");
    b.delete(b"k001");
    db.write(
        &WriteOptions {
            sync: true,
            ..Default::default()
        },
        b,
    )
    .unwrap_or_else(|e| panic!("{ctx}: write after recovery: {e}"));
    db.put(b"k002", b"after").unwrap();
    state.insert(b"after-crash".to_vec(), b"1".to_vec());
    state.remove(&b"k001"[..]);
    state.insert(b"k002".to_vec(), b"after".to_vec());
    assert!(scan_all(&db, ctx) == state, "{ctx}: after new writes");
    db.close()
        .unwrap_or_else(|e| panic!("{ctx}: close after recovery: {e}"));
    let db = Db::open(DB, options(&env)).unwrap_or_else(|e| panic!("{ctx}: second open: {e}"));
    assert!(scan_all(&db, ctx) == state, "{ctx}: after second reopen");
    db.close().unwrap();
    Db::check(DB, options(&env)).unwrap_or_else(|e| panic!("{ctx}: check: {e}"));
    recovered
}

trait ExistsDb {
    fn exists_db(&self) -> bool;
}

impl ExistsDb for Image {
    fn exists_db(&self) -> bool {
        self.ssd
            .file_data(&std::path::Path::new(DB).join("CURRENT"))
            .is_some()
    }
}

fn crash_points(
    design: Design,
    seed: u64,
    len: usize,
    big_values: bool,
    step: u64,
) -> (u64, usize, usize) {
    let steps = workload(seed, len, big_values);
    let exp = expected(&steps);
    let probe = Env::new(design);
    let out = run(&probe, &steps);
    assert_eq!(
        out.acked,
        exp.writes.len(),
        "{design}: the workload runs without faults"
    );
    let count = probe.ssd.mutating_op_count();
    let (mut checked, mut repeats) = (0, 0);
    let mut k = 0;
    while k < count + 20 {
        let env = Env::new(design);
        env.freeze_after(k);
        let out = run(&env, &steps);
        let ctx = format!("seed {seed} crash point {k}");
        // The process-crash image first: it must keep every acknowledged write, the others
        // only the synced ones, so an image equal to it is checked with the stricter bound.
        let mut modes = vec![CrashMode::ProcessCrash, CrashMode::SyncedOnly];
        modes.extend([1, 2, 3].map(|r| CrashMode::Random(k * 10 + r)));
        let mut distinct = Distinct::default();
        for mode in modes {
            let img = env.crash(mode);
            if distinct.is_new(&img) {
                check_image(design, &img, mode, &out, &exp, &ctx);
            }
        }
        repeats += distinct.repeats;
        checked += 1;
        k += step;
    }
    (count, checked, repeats)
}

/// The designs whose runs live on SSD (at least in part), but `matrixkv`: it shares
/// `trianglekv`'s stage, rows, flushes and manifest records and differs only in which rows a
/// compaction takes (the model tests and `pm_crash.rs` run it); left out to fit the CI budget.
fn ssd_run_designs() -> Vec<Design> {
    let designs: Vec<Design> = support::designs()
        .into_iter()
        .filter(|d| !d.data_on_pm() && *d != Design::MATRIXKV)
        .collect();
    assert!(!designs.is_empty());
    designs
}

/// The designs of the longer walks (large values, the long workload, crashes during a
/// recovery of a recovery): those of [`ssd_designs`] but the row containers and `slmdb`,
/// whose SSD files are the leveled designs' SSTables and manifest records (the shorter walks
/// run them; `slmdb`'s index updates are PM fences, walked one by one in `pm_crash.rs`).
fn long_walk_designs() -> Vec<Design> {
    ssd_designs()
        .into_iter()
        .filter(|d| *d != Design::TRIANGLEKV && *d != Design::SLMDB)
        .collect()
}

/// The designs the crash-point walks below run: those whose runs live on SSD, and `nvlsm`,
/// whose runs are all in the PM pool but whose manifest and CURRENT are SSD files: its crash
/// points here are the manifest's writes, syncs and renames, with the pool imaged at each
/// (`pm_crash.rs` walks its PM fences one by one). `nvlsm-leveled` and `nvlsm-fragmented`
/// write their manifest through the same code and are left out to fit the CI budget. The
/// crash-during-recovery tests need first crashes that leave several WALs, which SSD crash
/// points of a design whose WAL is on PM do not reliably give: they run the designs with runs
/// on SSD.
fn ssd_designs() -> Vec<Design> {
    let mut designs = ssd_run_designs();
    designs.push(Design::NVLSM);
    designs
}

/// Every crash point of a ~300-step workload, on every design with runs on SSD.
#[test]
fn crash_at_every_point() {
    for design in ssd_designs() {
        let t = std::time::Instant::now();
        let (count, checked, repeats) = crash_points(design, 1, 300, false, 1);
        eprintln!(
            "{design}: {count} mutating SSD ops, {checked} crash points x 5 modes ({repeats} \
             images repeated an earlier one) in {:?}",
            t.elapsed()
        );
        // Designs with their log on PM make fewer SSD operations.
        let min = if design.wal_tier(&Options::default()) == tierkv::Tier::Ssd {
            300
        } else {
            100
        };
        assert!(
            count > min,
            "{design}: the workload flushes and compacts: {count}"
        );
    }
}

/// Every crash point of a workload with values larger than a log block (fragmented records),
/// on every design.
#[test]
fn crash_at_every_point_large_values() {
    for design in long_walk_designs() {
        let t = std::time::Instant::now();
        let (count, checked, repeats) = crash_points(design, 2, 200, true, 1);
        eprintln!(
            "{design}: {count} mutating SSD ops, {checked} crash points x 5 modes ({repeats} \
             images repeated an earlier one) in {:?}",
            t.elapsed()
        );
    }
}

/// Every crash point of the large-value workload on `leveled` with key-value separation (values
/// of 64 bytes or more in value logs next to the tables, on the SSD's stricter crash semantics:
/// unsynced data and directory entries are lost): a table never names a log that did not
/// survive, and no log a table names is deleted.
#[test]
fn crash_at_every_point_separated_values() {
    VALUE_SEPARATION.with(|v| v.set(64));
    let t = std::time::Instant::now();
    let (count, checked, repeats) = crash_points(Design::LEVELED, 2, 200, true, 1);
    eprintln!(
        "leveled, values separated: {count} mutating SSD ops, {checked} crash points x 5 modes \
         ({repeats} images repeated an earlier one) in {:?}",
        t.elapsed()
    );
    // The walk crossed separated tables: after the whole workload, tables name value logs.
    let env = Env::new(Design::LEVELED);
    run(&env, &workload(2, 200, true));
    let db = Db::open(DB, options(&env)).unwrap();
    let logs = db.stats().value_logs;
    assert!(logs.files > 0 && logs.live_bytes > 0, "{logs:?}");
}

/// A longer workload (more compactions into deeper levels), every fifth crash point, on every
/// design.
#[test]
fn crash_long_workload() {
    for design in long_walk_designs() {
        let t = std::time::Instant::now();
        let (count, checked, repeats) = crash_points(design, 3, 800, false, 5);
        eprintln!(
            "{design}: {count} mutating SSD ops, {checked} crash points x 5 modes ({repeats} \
             images repeated an earlier one) in {:?}",
            t.elapsed()
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Crashes during recovery.
//
// Recovery of a given crash image is deterministic (it runs on one thread until `Db::open`
// returns), so "the k-th mutating operation of recovery" is a well-defined crash point. The
// tests below recover an image of a first crash with the file system frozen at each such point,
// then recover each image of that second crash (and, for a sample, crash that recovery too).

/// An image left by a crash of the first run, with what the workload saw before that crash.
struct FirstCrash {
    design: Design,
    img: Image,
    out: Outcome,
    /// Writes that must survive every later crash: those acknowledged before the first crash
    /// for a process crash, those synced before it otherwise.
    lower: usize,
    /// Fingerprint of the state an uninterrupted recovery of `img` gives.
    reference: u64,
    /// Mutating operations counted when that recovery's `Db::open` returned: recovery's own,
    /// plus any the background threads had made by then.
    recovery_ops: u64,
    ctx: String,
}

/// Crash points past the end of recovery that are tried too (they hit the first operations of
/// the background threads, or nothing).
const RECOVERY_EXTRA_POINTS: u64 = 4;

/// Recovers a copy of `img` without a crash: the fingerprint of the state and the number of
/// mutating SSD operations counted when `Db::open` returned.
fn recover_uninterrupted(design: Design, img: &Image, ctx: &str) -> (u64, u64) {
    let env = Env::from_image(design, img);
    let db = Db::open(DB, options(&env)).unwrap_or_else(|e| panic!("{ctx}: recovery failed: {e}"));
    let ops = env.ssd.mutating_op_count();
    let state = scan_all(&db, ctx);
    db.close()
        .unwrap_or_else(|e| panic!("{ctx}: close after recovery: {e}"));
    (fingerprint(&state), ops)
}

/// Recovers a copy of `img` with the file system frozen after `k` mutating operations; returns
/// the frozen file system (its crash images are those of a crash at that point) and whether
/// `Db::open` succeeded (the crash point lies past recovery: the background threads hit it, or
/// nothing does).
fn crash_recovery(design: Design, img: &Image, k: u64) -> (Env, bool) {
    let env = Env::from_image(design, img);
    env.freeze_after(k);
    let opened = Db::open(DB, options(&env)).is_ok();
    (env, opened)
}

/// The modes of the images taken of a crash during recovery at point `k`.
fn recovery_crash_modes(k: u64) -> Vec<CrashMode> {
    let mut modes = vec![CrashMode::SyncedOnly, CrashMode::ProcessCrash];
    modes.extend([1, 2].map(|r| CrashMode::Random(k * 10 + r)));
    modes
}

/// Checks an image of a crash during the recovery of `first.img`: (a)-(d) with the lower bound
/// of the FIRST crash (recovery started from durable files holding those writes, so no crash
/// during it may lose them), and (e) the state is the one an uninterrupted recovery of the
/// first image gives: a crash during recovery loses nothing and adds nothing.
fn check_after_recovery_crash(img: &Image, first: &FirstCrash, exp: &Expected, ctx: &str) {
    assert!(img.exists_db(), "{ctx}: the database vanished");
    let got = check_recovered(first.design, img, first.lower, &first.out, exp, ctx);
    let writes = |fp: u64| exp.prefix.iter().position(|&p| p == fp);
    assert!(
        got == first.reference,
        "{ctx}: recovered state differs from the uninterrupted recovery of the first image \
         (state after {:?} writes, expected {:?})",
        writes(got),
        writes(first.reference),
    );
}

/// What `check` sees in `img`: live WALs (on every tier) and tables, and the bytes of a torn
/// WAL tail.
fn check_report(design: Design, img: &Image) -> tierkv::CheckReport {
    let env = Env::from_image(design, img);
    Db::check(DB, options(&env)).unwrap_or_else(|e| panic!("check of a first crash image: {e}"))
}

/// Images of first crashes after which recovery has work to do: `points` crash points of
/// `steps` (tried in order from a quarter of the way in) whose process-crash image holds at
/// least two live WALs with records and a table, each imaged in `modes` (with `torn_tail`, only
/// the images whose newest WAL ends in a torn record, and only points with one).
fn first_crashes(
    design: Design,
    seed: u64,
    steps: &[Step],
    points: usize,
    modes: &[CrashMode],
    torn_tail: bool,
) -> Vec<FirstCrash> {
    let probe = Env::new(design);
    run(&probe, steps);
    let count = probe.ssd.mutating_op_count();
    let mut found = Vec::new();
    let mut accepted = 0;
    // Candidates from a quarter of the way in; after a match the search jumps ahead, so the
    // points spread over the rest of the workload.
    let mut k = count / 4;
    while accepted < points && k < count {
        let env = Env::new(design);
        env.freeze_after(k);
        let out = run(&env, steps);
        let whole = check_report(design, &env.crash(CrashMode::ProcessCrash));
        let rich = whole.wal_files_checked >= 2
            && whole.wal_records_checked >= 2
            && whole.tables_checked >= 1;
        let before = found.len();
        for &mode in modes.iter().filter(|_| rich) {
            let img = env.crash(mode);
            if torn_tail && check_report(design, &img).wal_torn_tail_bytes == 0 {
                continue;
            }
            let ctx = format!(
                "{design} seed {seed} first crash at {k} {mode:?} ({} WALs)",
                whole.wal_files_checked
            );
            let lower = if mode == CrashMode::ProcessCrash {
                out.acked
            } else {
                out.synced
            };
            let (reference, recovery_ops) = recover_uninterrupted(design, &img, &ctx);
            found.push(FirstCrash {
                design,
                img,
                out,
                lower,
                reference,
                recovery_ops,
                ctx,
            });
        }
        if found.len() > before {
            accepted += 1;
            k += count / (points as u64 * 3);
        } else {
            k += 7;
        }
    }
    assert_eq!(
        accepted, points,
        "{design} seed {seed}: not enough crash points leave several WALs"
    );
    found
}

/// Recovers each first crash image with a crash at EVERY crash point of recovery plus a few past
/// its end, and checks every image of that second crash (synced-only, process-crash, two
/// random); returns the number of images checked.
fn crash_every_recovery_point(firsts: &[FirstCrash], exp: &Expected) -> usize {
    let mut checked = 0;
    for first in firsts {
        // The first crash point at which recovery completed: every earlier one interrupted it.
        let mut end = None;
        for k in 0..=first.recovery_ops + RECOVERY_EXTRA_POINTS {
            let (frozen, opened) = crash_recovery(first.design, &first.img, k);
            if opened {
                end.get_or_insert(k);
            }
            assert_eq!(
                opened,
                end.is_some(),
                "{}: recovery is deterministic, yet completed with crash point {:?} and \
                 failed with {k}",
                first.ctx,
                end
            );
            // Every image has the first crash's bounds: equal images are one check.
            let mut distinct = Distinct::default();
            for mode in recovery_crash_modes(k) {
                let img = frozen.crash(mode);
                if distinct.is_new(&img) {
                    let ctx = format!("{}, recovery crash at {k} {mode:?}", first.ctx);
                    check_after_recovery_crash(&img, first, exp, &ctx);
                    checked += 1;
                }
            }
        }
        assert!(end.is_some(), "{}: no crash point past recovery", first.ctx);
    }
    checked
}

/// Crashes during the recovery of synced-only and process-crash images of first crashes that
/// leave several WALs with unflushed data (five crash points of each of two workloads, one with
/// values larger than a log block), at every crash point of recovery. Catches recovery deleting
/// the replayed WALs before the manifest records their tables, and `CURRENT` rewritten in place.
#[test]
fn crash_during_recovery_at_every_point() {
    let t = std::time::Instant::now();
    let mut checked = 0;
    for design in ssd_run_designs() {
        for (seed, big_values) in [(4, false), (6, true)] {
            let steps = workload(seed, 300, big_values);
            let exp = expected(&steps);
            let modes = [CrashMode::SyncedOnly, CrashMode::ProcessCrash];
            let firsts = first_crashes(design, seed, &steps, 5, &modes, false);
            checked += crash_every_recovery_point(&firsts, &exp);
        }
    }
    eprintln!(
        "{checked} distinct images of crashes during recovery in {:?}",
        t.elapsed()
    );
}

/// The same with random first-crash images whose newest WAL ends in a torn record (a power
/// failure kept part of an unsynced append), for every design whose WAL is on the SSD (a torn
/// PM log is `pm_crash.rs`'s subject: its torn images of the pool).
///
/// A recovery that made its new WAL durable before the manifest record moving `log_number`
/// past the replayed WALs failed this test: a crash in between left the torn WAL followed by a
/// newer one, which the next open rightly refuses ("damaged tail in a WAL that a newer WAL
/// follows") although nothing acknowledged was lost. Recovery now logs the new log number
/// before it creates that WAL.
#[test]
fn crash_during_recovery_torn_wal_tail() {
    let t = std::time::Instant::now();
    let seed = 4;
    let steps = workload(seed, 300, false);
    let exp = expected(&steps);
    let modes: Vec<_> = (0..4).map(|r| CrashMode::Random(seed * 100 + r)).collect();
    let mut checked = 0;
    let ssd_logged = ssd_run_designs()
        .into_iter()
        .filter(|d| d.wal_tier(&Options::default()) == tierkv::Tier::Ssd);
    for design in ssd_logged {
        let firsts = first_crashes(design, seed, &steps, 3, &modes, true);
        checked += crash_every_recovery_point(&firsts, &exp);
    }
    assert!(checked > 0, "some design logs to the SSD");
    eprintln!(
        "{checked} distinct images of crashes during recovery in {:?}",
        t.elapsed()
    );
}

/// A crash during recovery, then another during the recovery of that image: every second crash
/// point of the first recovery x 3 images x every third crash point of the second recovery x 3
/// images (sampled: the full product takes minutes), for one synced-only and one process-crash
/// first image. The checks are those of the first crash's writes, as above.
#[test]
fn crash_during_recovery_twice() {
    let t = std::time::Instant::now();
    let seed = 5;
    let steps = workload(seed, 300, false);
    let exp = expected(&steps);
    let modes = [CrashMode::SyncedOnly, CrashMode::ProcessCrash];
    let mut checked = 0;
    let firsts = ssd_run_designs()
        .into_iter()
        .filter(|d| long_walk_designs().contains(d))
        .flat_map(|d| first_crashes(d, seed, &steps, 1, &modes, false));
    for first in firsts {
        for k1 in (0..=first.recovery_ops + RECOVERY_EXTRA_POINTS).step_by(2) {
            let (frozen1, _) = crash_recovery(first.design, &first.img, k1);
            let mut distinct1 = Distinct::default();
            for m1 in [
                CrashMode::SyncedOnly,
                CrashMode::ProcessCrash,
                CrashMode::Random(k1),
            ] {
                let img = frozen1.crash(m1);
                if !distinct1.is_new(&img) {
                    continue;
                }
                let ctx1 = format!("{}, recovery crash at {k1} {m1:?}", first.ctx);
                let (_, ops) = recover_uninterrupted(first.design, &img, &ctx1);
                for k2 in (0..=ops + RECOVERY_EXTRA_POINTS).step_by(3) {
                    let (frozen2, _) = crash_recovery(first.design, &img, k2);
                    let mut distinct2 = Distinct::default();
                    for m2 in [
                        CrashMode::SyncedOnly,
                        CrashMode::ProcessCrash,
                        CrashMode::Random(k1 * 1000 + k2),
                    ] {
                        let img2 = frozen2.crash(m2);
                        if distinct2.is_new(&img2) {
                            let ctx = format!("{ctx1}, second recovery crash at {k2} {m2:?}");
                            check_after_recovery_crash(&img2, &first, &exp, &ctx);
                            checked += 1;
                        }
                    }
                }
            }
        }
    }
    eprintln!(
        "{checked} distinct images of crashes during a second recovery in {:?}",
        t.elapsed()
    );
}
