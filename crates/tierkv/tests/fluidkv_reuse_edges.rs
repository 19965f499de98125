//! FluidKV's reuse of untouched runs and tables at its edges: a new key exactly equal to a
//! StableStore run's (or a kept logical sorted table's) smallest or largest key touches it, so
//! it is merged, never left beside an output holding the same key. Reads would stay right
//! either way (the newer version wins); only the checker sees two overlapping runs in one
//! disjoint group, so every case ends with `Db::check` and a reopen.

use std::collections::BTreeMap;
use std::path::Path;
use tierkv::{Db, Design, Options};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn options(pool: &Path, tables: bool) -> Options {
    let mut o = Design::FLUIDKV.options(Options {
        design: Design::FLUIDKV,
        write_buffer_size: 64 << 10,
        ..Options::default()
    });
    o.pm.path = Some(pool.to_path_buf());
    o.pm.chunk_bytes = 64 << 10;
    o.pm.size_bytes = 128 << 20;
    o.compaction.load_aware = false;
    o.compaction.level0_compaction_trigger = 8;
    o.compaction.target_file_size = 512 << 10;
    o.compaction.reuse_untouched_runs = true;
    o.compaction.reuse_untouched_tables = tables;
    o
}

fn put(db: &Db, model: &mut Model, key: &[u8], tag: &str) {
    let v = format!("{tag}-{}", "v".repeat(90)).into_bytes();
    db.put(key, &v).unwrap();
    model.insert(key.to_vec(), v);
}

/// Writes `keys` alone into a buffer tree and compacts it into the StableStore; then closes
/// the database, checks it and reopens it, and compares it with `model`.
fn compact_one(
    dir: &Path,
    o: &Options,
    db: Db,
    model: &mut Model,
    keys: &[Vec<u8>],
    ctx: &str,
) -> Db {
    for k in keys {
        put(&db, model, k, ctx);
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    db.close().unwrap();
    Db::check(dir, o.clone()).unwrap_or_else(|e| panic!("{ctx}: check: {e}"));
    let db = Db::open(dir, o.clone()).unwrap();
    let got: Vec<(Vec<u8>, Vec<u8>)> = db.scan(..).unwrap().collect::<tierkv::Result<_>>().unwrap();
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert!(got == want, "{ctx}: contents differ");
    db
}

/// A StableStore run's edge keys: the run containing `probe`.
fn run_edges(db: &Db, probe: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let run = db
        .live_tables()
        .into_iter()
        .find(|t| {
            t.group == 1 && t.smallest_key.as_slice() <= probe && probe <= t.largest_key.as_slice()
        })
        .expect("a StableStore run holds the probe");
    (run.smallest_key, run.largest_key)
}

#[test]
fn a_key_on_a_runs_edge_touches_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, pool) = (tmp.path().join("db"), tmp.path().join("pool"));
    let o = options(&pool, false);
    let mut db = Db::open(&dir, o.clone()).unwrap();
    let mut model = Model::new();
    for i in 0..500 {
        put(&db, &mut model, format!("k4{i:05}").as_bytes(), "first");
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let probe = b"k400250".to_vec();
    let run_of = |db: &Db| {
        db.live_tables()
            .into_iter()
            .find(|t| t.group == 1 && t.smallest_key <= probe && probe <= t.largest_key)
            .map(|t| t.number)
    };
    let before = run_of(&db);
    // Keys just outside the run leave it where it is: reuse is in play.
    let outside = [b"k3".to_vec(), b"k400500".to_vec()];
    db = compact_one(&dir, &o, db, &mut model, &outside, "outside");
    assert_eq!(run_of(&db), before, "{:?}", db.live_tables());
    for edge in 0..2 {
        let (lo, hi) = run_edges(&db, &probe);
        let key = if edge == 0 { lo } else { hi };
        let ctx = format!(
            "{} edge {}",
            ["smallest", "largest"][edge],
            String::from_utf8_lossy(&key)
        );
        db = compact_one(&dir, &o, db, &mut model, &[key], &ctx);
    }
}

/// With per-table reuse, the parts a hot range leaves (runs reading part of an old file) end
/// exactly on logical sorted table boundaries: a new key equal to a part's smallest or largest
/// key falls into that table, which must be merged, not kept.
#[test]
fn a_key_on_a_kept_tables_edge_touches_the_table() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, pool) = (tmp.path().join("db"), tmp.path().join("pool"));
    let o = options(&pool, true);
    let mut db = Db::open(&dir, o.clone()).unwrap();
    let mut model = Model::new();
    for j in 0..8000u64 {
        put(
            &db,
            &mut model,
            format!("k{:06}", j * 7919 % 8000).as_bytes(),
            "first",
        );
    }
    db.compact_range(None, None).unwrap();
    let hot: Vec<Vec<u8>> = (4000..4200)
        .step_by(10)
        .map(|i| format!("k{i:06}").into_bytes())
        .collect();
    db = compact_one(&dir, &o, db, &mut model, &hot, "hot range");
    let parts: Vec<_> = db
        .live_tables()
        .into_iter()
        .filter(|t| t.backing.is_some())
        .collect();
    assert!(
        !parts.is_empty(),
        "a hot range leaves parts: {:?}",
        db.live_tables()
    );
    let mut edges: Vec<Vec<u8>> = parts
        .iter()
        .flat_map(|p| [p.smallest_key.clone(), p.largest_key.clone()])
        .collect();
    edges.sort();
    edges.dedup();
    // Some edges at most, nearest the hot range first: each case compacts the whole store.
    edges.sort_by_key(|k| {
        let i: i64 = std::str::from_utf8(&k[1..]).unwrap().parse().unwrap();
        (i - 4100).abs()
    });
    for key in edges.into_iter().take(6) {
        let ctx = format!("edge {}", String::from_utf8_lossy(&key));
        db = compact_one(&dir, &o, db, &mut model, &[key], &ctx);
    }
}
