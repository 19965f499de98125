use super::iter::visible;
use super::*;
use crate::format::ValueType;
use crate::fs::{open_pm_owners, PmFsOpen};
use crate::pbtree::PbTreeOwner;
use crate::tier::Tier;
use crate::version::RunKind;
use tierkv_pm::{PmPool, PoolOptions};

fn index() -> GlobalIndex {
    let pool = PmPool::create_crash_sim(
        &PoolOptions {
            size: 4 << 20,
            chunk_size: 64 << 10,
            ..PoolOptions::default()
        },
        true,
    )
    .unwrap();
    let mut owner = PbTreeOwner::new(Arc::clone(&pool), "test pool", ROOT_NAME);
    open_pm_owners(&pool, "test pool", PmFsOpen::Create(7), &mut [&mut owner]).unwrap();
    let ix = GlobalIndex::new(&crate::options::SlmOptions::default());
    ix.attach(Arc::new(owner.into_tree(true).unwrap())).unwrap();
    ix
}

fn meta(number: u64) -> Arc<FileMetaData> {
    Arc::new(FileMetaData {
        number,
        file_size: 1,
        num_entries: 1,
        smallest: make_internal_key(b"a", 1, ValueType::Value),
        largest: make_internal_key(b"z", 1, ValueType::Value),
        tier: Tier::Ssd,
        kind: RunKind::Sst,
        set: 0,
        row: None,
        value_refs: Vec::new(),
        backing: None,
    })
}

fn block(b: u64) -> BlockHandle {
    BlockHandle {
        offset: b * 4096,
        size: 4000,
    }
}

/// Entries of a table: (key, seq, type, block), in internal-key order.
fn entries(list: &[(&[u8], u64, ValueType, u64)]) -> Vec<IndexedEntry> {
    list.iter()
        .map(|&(k, s, t, b)| (make_internal_key(k, s, t), block(b)))
        .collect()
}

fn at(ix: &GlobalIndex, key: &[u8], seq: u64, pinned: bool) -> Option<(u64, u64)> {
    ix.locate(key, seq, pinned)
        .unwrap()
        .map(|l| (l.file, l.seq))
}

#[test]
fn locations_round_trip_and_damage_is_corruption() {
    let l = Location {
        file: 12345,
        block: BlockHandle {
            offset: 1 << 40,
            size: 4093,
        },
        seq: (1 << 56) - 1,
    };
    assert_eq!(Location::decode(&l.encode(), b"k").unwrap(), l);
    let mut long = l.encode();
    long.push(0);
    for bad in [&l.encode()[..3], &long[..], &[0xff; 12][..]] {
        let e = Location::decode(bad, b"k").unwrap_err();
        assert!(e.to_string().contains(ROOT_NAME), "{e}");
    }
}

#[test]
fn visibility_follows_the_tree_then_the_held_versions() {
    let loc = |file, seq| Location {
        file,
        block: block(0),
        seq,
    };
    let held = [
        Held {
            seq: 7,
            next: 9,
            loc: loc(2, 7),
        },
        Held {
            seq: 3,
            next: 5,
            loc: loc(1, 3),
        },
    ];
    let cur = Some(loc(3, 12));
    let f = |seq, pinned| visible(cur, &held, seq, pinned).map(|l| l.seq);
    assert_eq!(f(12, true), Some(12));
    assert_eq!(f(20, true), Some(12));
    assert_eq!(f(8, true), Some(7), "held, not yet replaced at 8");
    assert_eq!(f(9, true), None, "replaced at 9 by a tombstone: absent");
    assert_eq!(f(4, true), Some(3));
    assert_eq!(f(2, true), None, "before the first version");
    // An unpinned read with nothing held for it sees the newer version.
    assert_eq!(visible(cur, &[], 2, false).map(|l| l.seq), Some(12));
    assert_eq!(visible(cur, &[], 2, true), None);
    assert_eq!(visible(None, &[], 2, false), None);
}

#[test]
fn flushes_replace_older_versions_and_hold_what_snapshots_read() {
    let ix = index();
    ix.index_flush(
        &meta(1),
        &entries(&[
            (b"a", 1, ValueType::Value, 0),
            (b"b", 2, ValueType::Value, 0),
        ]),
        &[],
    )
    .unwrap();
    // A snapshot at 5 reads a@1 and b@2; the next flush replaces a and deletes b, and also
    // holds its own older version of c (c@6, replaced at 8) for the snapshot at 7.
    ix.index_flush(
        &meta(2),
        &entries(&[
            (b"a", 10, ValueType::Value, 3),
            (b"b", 11, ValueType::Deletion, 3),
            (b"c", 8, ValueType::Value, 4),
            (b"c", 6, ValueType::Value, 4),
        ]),
        &[5, 7],
    )
    .unwrap();
    assert_eq!(at(&ix, b"a", 20, false), Some((2, 10)));
    assert_eq!(at(&ix, b"b", 20, false), None, "deleted");
    assert_eq!(
        at(&ix, b"a", 5, true),
        Some((1, 1)),
        "held for the snapshot"
    );
    assert_eq!(
        at(&ix, b"b", 5, true),
        Some((1, 2)),
        "held for the snapshot"
    );
    assert_eq!(at(&ix, b"c", 7, true), Some((2, 6)));
    assert_eq!(at(&ix, b"c", 5, true), None, "c did not exist at 5");
    assert_eq!(
        at(&ix, b"c", 5, false),
        Some((2, 8)),
        "an unpinned read sees the newer"
    );
    assert!(ix.is_live(1, b"a", 1).unwrap(), "held versions are live");
    assert!(ix.is_live(2, b"a", 10).unwrap());
    assert!(
        !ix.is_live(2, b"b", 11).unwrap(),
        "tombstones are never live"
    );
    assert_eq!(ix.live_counts().get(&1), Some(&0));
    assert_eq!(ix.live_counts().get(&2), Some(&2));
    assert_eq!(ix.stats().held_versions, 3);
    // The snapshots are released: the next flush forgets what they held.
    ix.index_flush(&meta(3), &entries(&[(b"d", 20, ValueType::Value, 0)]), &[])
        .unwrap();
    assert_eq!(ix.stats().held_versions, 0);
    assert!(!ix.is_live(1, b"a", 1).unwrap());
    // The same versions flushed again (recovery) move to the new table.
    ix.index_flush(&meta(4), &entries(&[(b"a", 10, ValueType::Value, 9)]), &[])
        .unwrap();
    assert_eq!(at(&ix, b"a", 20, false), Some((4, 10)));
    // An older version never replaces a newer one.
    ix.index_flush(&meta(5), &entries(&[(b"a", 9, ValueType::Value, 0)]), &[])
        .unwrap();
    assert_eq!(at(&ix, b"a", 20, false), Some((4, 10)));
}

#[test]
fn compaction_moves_only_what_still_names_its_inputs() {
    let ix = index();
    ix.index_flush(
        &meta(1),
        &entries(&[
            (b"a", 1, ValueType::Value, 0),
            (b"b", 2, ValueType::Value, 0),
        ]),
        &[],
    )
    .unwrap();
    // A flush replaces b after the compaction checked it, before the pointers move.
    ix.index_flush(&meta(2), &entries(&[(b"b", 5, ValueType::Value, 0)]), &[3])
        .unwrap();
    let inputs: HashSet<u64> = [1].into_iter().collect();
    let stale = ix
        .index_compaction(
            &inputs,
            &meta(9),
            &entries(&[
                (b"a", 1, ValueType::Value, 7),
                (b"b", 2, ValueType::Value, 7),
            ]),
        )
        .unwrap();
    assert_eq!(
        stale, 0,
        "b@2 is held for the snapshot at 3: its place moves too"
    );
    assert_eq!(at(&ix, b"a", 9, false), Some((9, 1)));
    assert_eq!(at(&ix, b"b", 9, false), Some((2, 5)), "the flush won");
    assert_eq!(
        at(&ix, b"b", 3, true),
        Some((9, 2)),
        "the held version moved"
    );
    let l = ix.locate(b"a", 9, false).unwrap().unwrap();
    assert_eq!(l.block, block(7));
    // Without a snapshot the copy of a replaced version is stale.
    let ix = index();
    ix.index_flush(&meta(1), &entries(&[(b"b", 2, ValueType::Value, 0)]), &[])
        .unwrap();
    ix.index_flush(&meta(2), &entries(&[(b"b", 5, ValueType::Value, 0)]), &[])
        .unwrap();
    let stale = ix
        .index_compaction(
            &inputs,
            &meta(9),
            &entries(&[(b"b", 2, ValueType::Value, 7)]),
        )
        .unwrap();
    assert_eq!(stale, 1);
    assert_eq!(ix.live_counts().get(&9).copied().unwrap_or(0), 0);
}

#[test]
fn the_leaf_scan_lists_tables_when_a_window_spans_too_many() {
    let ix = index();
    // 12 tables, each holding every 12th key: any window of keys spans all of them.
    for t in 0..12u64 {
        let keys: Vec<Vec<u8>> = (0..20u64)
            .map(|i| format!("k{:04}", i * 12 + t).into_bytes())
            .collect();
        let list: Vec<(&[u8], u64, ValueType, u64)> = keys
            .iter()
            .map(|k| (k.as_slice(), 100 + t, ValueType::Value, 0))
            .collect();
        ix.index_flush(&meta(t + 1), &entries(&list), &[]).unwrap();
    }
    ix.leaf_scan(12).unwrap();
    assert_eq!(ix.listed().len(), 12, "{:?}", ix.listed());
    // The whole tree is in PM: its inner node too; DRAM holds the root offset alone.
    let s = ix.stats();
    assert!(s.leaves > 1, "{s:?}");
    assert_eq!((s.inner_nodes, s.dram_bytes), (1, 8), "{s:?}");
    assert!(
        s.inner_pm_bytes > 0 && s.inner_pm_bytes < s.pm_bytes,
        "{s:?}"
    );
    ix.remove_files(&[1, 2]);
    assert_eq!(ix.listed().len(), 10);
    ix.unlist(3);
    assert!(!ix.listed().contains(&3));
    // Off: nothing is listed.
    let off = GlobalIndex::new(&crate::options::SlmOptions {
        leaf_scan: false,
        range_rule: false,
        ..Default::default()
    });
    off.attach(Arc::clone(ix.tree().unwrap())).unwrap();
    off.leaf_scan(12).unwrap();
    off.note_range(&(0..30).collect::<Vec<u64>>());
    assert!(off.listed().is_empty());
    // R3: a 30-key sub-range over more than 8 tables lists them.
    let on = GlobalIndex::new(&crate::options::SlmOptions::default());
    on.note_range(&(0..30).map(|i| i % 9).collect::<Vec<u64>>());
    assert_eq!(on.listed().len(), 9);
    on.note_range(&(0..30).map(|i| 100 + i % 8).collect::<Vec<u64>>());
    assert_eq!(on.listed().len(), 9, "8 tables are not more than 8");
}
