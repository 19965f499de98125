//! `tiered` (size-tiered compaction, RocksDB's universal): it rewrites less than `leveled` and
//! holds more space, in the compaction simulator; on a real database its sorted runs stay few,
//! its data moves below L0 and every key reads back, before and after a reopen.

use std::collections::BTreeMap;
use tierkv::{simulate_compaction, Db, Design, Options, Tier};

/// A permutation of `0..n` scattered over the key space: random-order unique keys.
fn key(i: u64) -> Vec<u8> {
    format!("key{:010}", i.wrapping_mul(2_654_435_761) % 4_294_967_291).into_bytes()
}

fn options(design: Design) -> Options {
    let mut o = design.options(Options {
        design,
        write_buffer_size: 64 << 10,
        ..Options::default()
    });
    o.compaction.max_bytes_for_level_base = 256 << 10;
    o.compaction.target_file_size = 64 << 10;
    o
}

#[test]
fn tiered_rewrites_less_than_leveled_for_more_space() {
    // 60,000 puts of 100-byte values over 20,000 keys (each written three times).
    let stream = || (0..60_000u64).map(|i| (key(i % 20_000), 100));
    let leveled = simulate_compaction(&options(Design::LEVELED), stream()).unwrap();
    let tiered = simulate_compaction(&options(Design::TIERED), stream()).unwrap();
    let (wl, wt) = (leveled.write_amplification(), tiered.write_amplification());
    assert!(
        wt < wl * 0.8,
        "tiered write amplification {wt:.2}, leveled {wl:.2}"
    );
    let held =
        |r: &tierkv::SimulationReport| -> u64 { r.stages[0].groups.iter().map(|g| g.bytes).sum() };
    assert!(
        held(&tiered) > held(&leveled),
        "tiered holds {} bytes, leveled {}",
        held(&tiered),
        held(&leveled)
    );
    // Compaction keeps the sorted runs near the trigger: L0's tables plus non-empty levels.
    let g = &tiered.stages[0].groups;
    let runs = g[0].runs + g[1..].iter().filter(|g| g.runs > 0).count();
    let o = options(Design::TIERED);
    assert!(
        runs <= o.compaction.level0_compaction_trigger + g.len(),
        "{runs} sorted runs"
    );
    assert!(g[1..].iter().any(|g| g.runs > 0), "nothing left L0");
}

#[test]
fn tiered_database_reads_every_key_and_compacts_below_l0() {
    let dir = tempfile::tempdir().unwrap();
    let o = options(Design::TIERED);
    let db = Db::open(dir.path(), o.clone()).unwrap();
    let mut model = BTreeMap::new();
    for i in 0..30_000u64 {
        let k = key(i % 10_000);
        if i % 7 == 3 {
            db.delete(&k).unwrap();
            model.remove(&k);
        } else {
            let v = format!("v{i}-{}", "x".repeat((i % 90) as usize)).into_bytes();
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
    }
    db.flush().unwrap();
    db.wait_for_background_work().unwrap();
    let tables = db.live_tables();
    assert!(tables
        .iter()
        .all(|t| t.tier == Tier::Ssd && t.stage_name == "tiers"));
    assert!(tables.iter().any(|t| t.group >= 1), "nothing left L0");
    let l0 = tables.iter().filter(|t| t.group == 0).count();
    let levels: std::collections::BTreeSet<usize> = tables
        .iter()
        .filter(|t| t.group >= 1)
        .map(|t| t.group)
        .collect();
    assert!(
        l0 + levels.len() < o.compaction.level0_stop_trigger,
        "{l0} L0 tables and {} levels",
        levels.len()
    );
    let check = |db: &Db, when: &str| {
        for i in 0..10_000u64 {
            let k = key(i);
            assert_eq!(
                db.get(&k).unwrap(),
                model.get(&k).cloned(),
                "{when}: key {i}"
            );
        }
        let scanned: Vec<(Vec<u8>, Vec<u8>)> =
            db.scan(..).unwrap().collect::<tierkv::Result<_>>().unwrap();
        let expected: Vec<(Vec<u8>, Vec<u8>)> =
            model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert!(
            scanned == expected,
            "{when}: the scan differs from the model"
        );
    };
    check(&db, "open");
    // A manual compaction leaves one sorted run, in the last level.
    db.compact_range(None, None).unwrap();
    let after = db.live_tables();
    let last = o.compaction.num_levels - 1;
    assert!(!after.is_empty() && after.iter().all(|t| t.group == last));
    check(&db, "compacted");
    db.close().unwrap();
    Db::check(dir.path(), o.clone()).unwrap();
    let db = Db::open(dir.path(), o).unwrap();
    check(&db, "reopened");
}
