//! Randomized damage to what an open trusts first: the manifest, `CURRENT`, the PM pool's root
//! directory and its file directory. Hundreds of damaged copies of closed databases (`leveled`
//! on an in-memory SSD, `leveled-pm` and the all-PM `nvlsm` with a crash-simulation pool) are
//! opened; each open must
//! either return exactly the acknowledged data or fail with a corruption error (or, for a
//! manifest of another database next to this database's pool, with the error saying the pool
//! belongs to another database). Never success with less, more or other data, never a panic,
//! never a new database in place of the damaged one.
//!
//! The damage: manifests truncated anywhere, bit-flipped anywhere, replaced by an older
//! manifest of the same database or by another database's; `CURRENT` removed, truncated,
//! bit-flipped or pointed at an older manifest; PM directory entries bit-flipped, truncated
//! (their tail zeroed) or swapped with each other, the directory header bit-flipped; the pool's
//! root directory (its header, selector, identity and named roots) bit-flipped.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use tierkv::fs::{CrashMode, FileSystem, MemFs, PMFS_ROOT_NAME};
use tierkv::pm::{
    CrashImage, PmPool, PoolOptions, ROOT_COPY_OFFSETS, ROOT_DIRECTORY_OFFSET, ROOT_SELECTOR_OFFSET,
};
use tierkv::{Db, Design, Error, Options, WriteBatch};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const DB: &str = "/db";
const CHUNK: u64 = 64 << 10;

fn pool_options() -> PoolOptions {
    PoolOptions {
        size: 256 * CHUNK,
        chunk_size: CHUNK,
        ..PoolOptions::default()
    }
}

fn options(design: Design, fs: &MemFs, pool: Option<Arc<PmPool>>) -> Options {
    let mut o = Options {
        design,
        write_buffer_size: 4096,
        fs: Arc::new(fs.clone()),
        ..Options::default()
    };
    o.pm.pool = pool;
    o.table.block_size = 1024;
    o.compaction.level0_compaction_trigger = 2;
    o.compaction.target_file_size = 4096;
    o.compaction.max_bytes_for_level_base = 16 << 10;
    o.compaction.num_levels = 4;
    o
}

/// A closed database: its SSD, its pool image (for `leveled-pm`), the acknowledged state, and
/// every manifest it had at the end of each session (name, content).
struct Closed {
    design: Design,
    ssd: MemFs,
    pool: Option<Vec<u8>>,
    model: Model,
    manifests: Vec<(String, Vec<u8>)>,
}

fn current_manifest(fs: &MemFs) -> (String, Vec<u8>) {
    let current = fs.file_data(&Path::new(DB).join("CURRENT")).unwrap();
    let name = String::from_utf8(current).unwrap().trim_end().to_string();
    let data = fs.file_data(&Path::new(DB).join(&name)).unwrap();
    (name, data)
}

/// Four sessions of writes, deletes and batches with flushes and compactions; the last
/// session's few writes stay in the WAL (so its manifest ends with recovery's own records, whose
/// loss is harmless).
fn build(design: Design, seed: u64) -> Closed {
    let ssd = MemFs::new();
    let pool = (design != Design::LEVELED)
        .then(|| PmPool::create_crash_sim(&pool_options(), false).unwrap());
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut model = Model::new();
    let mut manifests = Vec::new();
    for session in 0..4 {
        let db = Db::open(DB, options(design, &ssd, pool.clone())).unwrap();
        for i in 0..if session < 3 { 250 } else { 20 } {
            let k = format!("k{:03}", rng.gen_range(0..150)).into_bytes();
            if rng.gen_bool(0.2) {
                db.delete(&k).unwrap();
                model.remove(&k);
            } else if rng.gen_bool(0.1) {
                let mut b = WriteBatch::new();
                let k2 = format!("b{:03}", rng.gen_range(0..50)).into_bytes();
                b.put(&k, b"batch");
                b.put(&k2, &k);
                db.write(&Default::default(), b).unwrap();
                model.insert(k.clone(), b"batch".to_vec());
                model.insert(k2, k);
            } else {
                let v = vec![(seed as u8) ^ (i as u8); rng.gen_range(1..120)];
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
        }
        if session == 2 {
            db.compact_range(None, None).unwrap();
        } else if session < 3 {
            db.flush().unwrap();
        }
        drop(db);
        manifests.push(current_manifest(&ssd));
    }
    let pool = pool.map(|p| p.crash_image(CrashImage::Strict).unwrap());
    Closed {
        design,
        ssd,
        pool,
        model,
        manifests,
    }
}

/// One damaged copy of a database.
struct Damaged {
    what: String,
    ssd: MemFs,
    pool: Option<Vec<u8>>,
}

fn flip_bit(data: &mut [u8], rng: &mut SmallRng) -> usize {
    let bit = rng.gen_range(0..data.len() * 8);
    data[bit / 8] ^= 1 << (bit % 8);
    bit
}

/// A damaged copy of `db`; `other` is another database (for swapped manifests).
fn damage(db: &Closed, other: &Closed, rng: &mut SmallRng) -> Damaged {
    let ssd = db.ssd.crash(CrashMode::ProcessCrash);
    let mut pool = db.pool.clone();
    let (name, manifest) = current_manifest(&ssd);
    let manifest_path = Path::new(DB).join(&name);
    let current = Path::new(DB).join("CURRENT");
    let kinds = if pool.is_some() { 13 } else { 9 };
    let what = match rng.gen_range(0..kinds) {
        0 => {
            // Half of the cuts fall in the last record (the one a crash can tear).
            let from = if rng.gen_bool(0.5) {
                manifest.len().saturating_sub(12)
            } else {
                0
            };
            let len = rng.gen_range(from..manifest.len());
            ssd.truncate(&manifest_path, len as u64);
            format!("manifest truncated to {len} of {} bytes", manifest.len())
        }
        1 | 2 => {
            let mut data = manifest.clone();
            let bit = flip_bit(&mut data, rng);
            ssd.set_file_data(&manifest_path, data);
            format!("manifest bit {bit} flipped")
        }
        3 => {
            let (old_name, old) = &db.manifests[rng.gen_range(0..db.manifests.len() - 1)];
            ssd.set_file_data(&manifest_path, old.clone());
            format!("manifest replaced by the older {old_name}")
        }
        4 => {
            let (other_name, data) = &other.manifests[rng.gen_range(0..other.manifests.len())];
            ssd.set_file_data(&manifest_path, data.clone());
            format!("manifest replaced by another database's {other_name}")
        }
        5 => {
            ssd.remove(&current).unwrap();
            "CURRENT removed".to_string()
        }
        6 => {
            let len = rng.gen_range(0..name.len() + 1);
            ssd.truncate(&current, len as u64);
            format!("CURRENT truncated to {len} bytes")
        }
        7 => {
            let mut data = ssd.file_data(&current).unwrap();
            let bit = flip_bit(&mut data, rng);
            ssd.set_file_data(&current, data);
            format!("CURRENT bit {bit} flipped")
        }
        8 => {
            let (old_name, old) = &db.manifests[rng.gen_range(0..db.manifests.len() - 1)];
            ssd.set_file_data(&Path::new(DB).join(old_name), old.clone());
            ssd.set_file_data(&current, format!("{old_name}\n").into_bytes());
            format!("CURRENT pointed at the older {old_name}")
        }
        k => damage_pool(pool.as_mut().expect("a pool"), k, rng),
    };
    Damaged { what, ssd, pool }
}

fn word(image: &[u8], at: u64) -> u64 {
    u64::from_le_bytes(image[at as usize..at as usize + 8].try_into().unwrap())
}

/// Offsets of the live entries of the pool's file directory, and the directory's offset (found
/// through the named root "pmfs" of the pool's root directory).
fn live_entries(image: &[u8]) -> (u64, Vec<u64>) {
    let pool = PmPool::open_crash_image(image.to_vec(), &pool_options()).unwrap();
    let root = pool.named_root(PMFS_ROOT_NAME).unwrap().unwrap();
    let word = |at: u64| word(image, at);
    let entries = (CHUNK - 64) / 128;
    let live = (0..entries)
        .map(|i| root + 64 + i * 128)
        .filter(|&e| word(e) != 0)
        .collect();
    (root, live)
}

fn damage_pool(image: &mut [u8], kind: usize, rng: &mut SmallRng) -> String {
    let (root, live) = live_entries(image);
    let entry = live[rng.gen_range(0..live.len())] as usize;
    let name_len = u32::from_le_bytes(image[entry + 24..entry + 28].try_into().unwrap()) as usize;
    match kind {
        9 => {
            let bit = flip_bit(&mut image[entry..entry + 32 + name_len], rng);
            format!("pool entry at {entry}: bit {bit} flipped")
        }
        10 if live.len() > 1 && rng.gen_bool(0.5) => {
            let other = live.iter().copied().find(|&e| e as usize != entry).unwrap() as usize;
            for i in 0..128 {
                image.swap(entry + i, other + i);
            }
            format!("pool entries at {entry} and {other} swapped")
        }
        10 => {
            let from = rng.gen_range(8..32 + name_len);
            image[entry + from..entry + 128].fill(0);
            format!("pool entry at {entry} truncated at byte {from}")
        }
        11 => {
            let bit = flip_bit(&mut image[root as usize..root as usize + 20], rng);
            format!("pool directory header bit {bit} flipped")
        }
        _ => {
            // The root directory: its header's checked bytes, the selector, or the current
            // copy's header (checksum, generation, flags, count, identity) and named roots.
            let copy = ROOT_COPY_OFFSETS[(word(image, ROOT_SELECTOR_OFFSET) & 1) as usize];
            let roots = u32::from_le_bytes(
                image[copy as usize + 12..copy as usize + 16]
                    .try_into()
                    .unwrap(),
            ) as u64;
            let (what, at, len) = match rng.gen_range(0..4) {
                0 => ("header", ROOT_DIRECTORY_OFFSET, 20),
                1 => ("selector", ROOT_SELECTOR_OFFSET, 8),
                2 => ("copy header", copy, 32),
                _ => ("named roots", copy + 32, 32 * roots),
            };
            let bit = flip_bit(&mut image[at as usize..(at + len) as usize], rng);
            format!("pool root directory {what} at {at}: bit {bit} flipped")
        }
    }
}

fn scan(db: &Db) -> Result<Model, Error> {
    db.scan(..)?.collect()
}

/// Opens a damaged copy; checks the outcome. Returns whether the open succeeded.
fn check_case(db: &Closed, d: Damaged, case: usize) -> bool {
    let ctx = format!("{} case {case}: {}", db.design, d.what);
    let pool = d
        .pool
        .map(|img| PmPool::open_crash_image(img, &pool_options()).unwrap());
    let opts = options(db.design, &d.ssd, pool.clone());
    match Db::open(DB, opts.clone()) {
        Ok(opened) => {
            let got = scan(&opened).unwrap_or_else(|e| panic!("{ctx}: scan after open: {e}"));
            assert!(
                got == db.model,
                "{ctx}: opened with {} keys, {} acknowledged (same: {})",
                got.len(),
                db.model.len(),
                got.iter()
                    .filter(|(k, v)| db.model.get(*k) == Some(v))
                    .count()
            );
            drop(opened);
            Db::check(DB, opts).unwrap_or_else(|e| panic!("{ctx}: check after open: {e}"));
            true
        }
        Err(e) => {
            if std::env::var_os("DAMAGE_VERBOSE").is_some() {
                eprintln!("{ctx}: {e}");
            }
            let identity =
                matches!(&e, Error::InvalidArgument(m) if m.contains("another database"));
            assert!(
                e.is_corruption() || identity,
                "{ctx}: open failed with a non-corruption error: {e}"
            );
            assert!(
                Db::check(DB, opts).is_err(),
                "{ctx}: open fails ({e}) but check passes"
            );
            false
        }
    }
}

fn run(design: Design, cases: usize, seed: u64) {
    let db = build(design, seed);
    let other = build(design, seed + 100);
    assert!(db.model.len() > 50, "the workload leaves data");
    let mut rng = SmallRng::seed_from_u64(seed * 7919);
    let mut opened = 0;
    for case in 0..cases {
        let d = damage(&db, &other, &mut rng);
        if check_case(&db, d, case) {
            opened += 1;
        }
    }
    // Some damage is harmless (a cut that only drops a torn tail, a swapped pair of entries
    // is not), most is not: both outcomes occur.
    assert!(
        opened > 0 && opened < cases,
        "{design}: {opened} of {cases} damaged copies opened"
    );
    eprintln!("{design}: {cases} damaged copies, {opened} opened with every acknowledged write, the rest refused");
}

#[test]
fn damaged_manifests_and_current_never_open_with_other_data_leveled() {
    run(Design::LEVELED, 300, 1);
}

#[test]
fn damaged_manifests_current_and_pool_directories_never_open_with_other_data_leveled_pm() {
    run(Design::LEVELED_PM, 300, 2);
}

/// The all-PM design: its manifest on SSD names Skip-Array Tree floors and C1 runs that live in
/// the pool, as do its WAL and compaction log.
#[test]
fn damaged_manifests_current_and_pool_directories_never_open_with_other_data_nvlsm() {
    run(Design::NVLSM, 300, 3);
}

/// A row container: its manifest records every row's hints, dead ranges and size sketch
/// (sub-tag 6) beside SSD tables, and its rows and WAL live in the pool.
#[test]
fn damaged_manifests_current_and_pool_directories_never_open_with_other_data_trianglekv() {
    run(Design::TRIANGLEKV, 300, 4);
}

/// SLM-DB's LevelDB+PM: its live memtables are persistent skiplists in the pool (the last
/// session's writes are still in one at close), in place of a WAL.
#[test]
fn damaged_manifests_current_and_pool_directories_never_open_with_other_data_leveled_pmtable() {
    run(Design::LEVELED_PMTABLE, 300, 5);
}

/// SLM-DB: its global index in the pool names tables the manifest must hold (an older manifest
/// put in place of the current one lacks some of them).
#[test]
fn damaged_manifests_current_and_pool_directories_never_open_with_other_data_slmdb() {
    run(Design::SLMDB, 300, 6);
}
