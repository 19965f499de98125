//! TriangleKV's page freeing with values of about 8 KiB: a row's dead ranges then end inside
//! the 64 KiB chunks most of the time, next to a live entry, so freeing "the pages wholly
//! inside a dead range" is exercised at every kind of edge (with ~560-byte entries a range's
//! end shares a chunk with a live entry about 1% of the time). Every key is read back against a
//! model while pages are freed, after a clean reopen, and after a crash image of the SSD and
//! the pool; `Db::check` runs on each.

mod support;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::sync::Arc;
use tierkv::fs::{CrashMode, MemFs};
use tierkv::pm::{CrashImage, PmPool, PoolOptions};
use tierkv::{Db, Design, Options};

const DB: &str = "/db";
type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// 512 KiB memtables (rows of about 64 entries over 8 chunks: a row's first and last chunk are
/// never freed), rows compacted from 2 MiB of live bytes, a 24 MiB pool of 64 KiB chunks.
fn options(ssd: &MemFs, pool: &Arc<PmPool>) -> Options {
    let mut o = Options {
        write_buffer_size: 512 << 10,
        max_open_files: 32,
        block_cache_bytes: 256 << 10,
        ..Options::default()
    };
    o.table.block_size = 4096;
    // A row compaction takes 256 to 512 KiB of input (`level_size_multiplier` x
    // `target_file_size` / 2 to twice that): about a quarter of the rows' key space, so the
    // dead range of a 512 KiB row covers whole chunks in its middle.
    o.compaction.target_file_size = 128 << 10;
    o.compaction.level_size_multiplier = 4;
    o.compaction.max_bytes_for_level_base = 2 << 20;
    o.compaction.num_levels = 4;
    o.rows.l0_bytes = 2 << 20;
    let mut o = support::design_options(o, Design::TRIANGLEKV, ssd, Some(pool));
    o.pm.size_bytes = POOL.size;
    o
}

const POOL: PoolOptions = PoolOptions {
    size: 24 << 20,
    chunk_size: 64 << 10,
    mode: tierkv::pm::DurabilityMode::Emulated,
    latency: tierkv::pm::LatencyModel::DRAM,
};

fn key(i: u64) -> Vec<u8> {
    format!("key{i:04}").into_bytes()
}

/// A value of 7 to 9 KiB naming its key and version, so a value of another entry never reads
/// as this one.
fn value(rng: &mut SmallRng, i: u64, version: u64) -> Vec<u8> {
    let mut v = format!("{i}/{version}/").into_bytes();
    let len = rng.gen_range(7 << 10..9 << 10);
    v.resize(len, b'a' + (version % 26) as u8);
    v
}

fn assert_same(db: &Db, model: &Model, keys: u64, ctx: &str) {
    for i in 0..keys {
        assert_eq!(
            db.get(&key(i)).unwrap().as_ref(),
            model.get(&key(i)),
            "{ctx}: key {i}"
        );
    }
    let got: Vec<(Vec<u8>, Vec<u8>)> = db.scan(..).unwrap().collect::<tierkv::Result<_>>().unwrap();
    assert!(
        got.len() == model.len()
            && got
                .iter()
                .zip(model)
                .all(|(g, (k, v))| g.0 == *k && g.1 == *v),
        "{ctx}: scan differs ({} entries, model {})",
        got.len(),
        model.len()
    );
}

#[test]
fn freed_pages_never_take_a_live_entry() {
    let (ssd, pool) = (
        MemFs::new(),
        PmPool::create_crash_sim(&POOL, false).unwrap(),
    );
    let o = options(&ssd, &pool);
    let db = Db::open(DB, o.clone()).unwrap();
    let mut rng = SmallRng::seed_from_u64(8);
    let mut model = Model::new();
    let keys = 400;
    for n in 0..3000u64 {
        let i = rng.gen_range(0..keys);
        if rng.gen_ratio(1, 10) {
            db.delete(&key(i)).unwrap();
            model.remove(&key(i));
        } else {
            let v = value(&mut rng, i, n);
            db.put(&key(i), &v).unwrap();
            model.insert(key(i), v);
        }
        if n % 300 == 299 {
            assert_same(&db, &model, keys, &format!("after {n} writes"));
        }
    }
    let st = db.stats();

    let freed = st.row_pages_freed_bytes;
    assert!(freed > 0, "the workload freed no row page");
    // A crash now: everything acknowledged was stored, so a process crash keeps all of it.
    let image = (
        ssd.crash(CrashMode::ProcessCrash),
        pool.crash_image(CrashImage::AllPending).unwrap(),
    );
    db.close().unwrap();
    Db::check(DB, o.clone()).unwrap();
    let db = Db::open(DB, o).unwrap();
    assert_same(&db, &model, keys, "reopened");
    drop(db);
    let crashed = PmPool::open_crash_image(image.1, &POOL).unwrap();
    let o = options(&image.0, &crashed);
    let db = Db::open(DB, o.clone()).unwrap();
    assert_same(&db, &model, keys, "after a crash");
    db.close().unwrap();
    Db::check(DB, o).unwrap();
}
