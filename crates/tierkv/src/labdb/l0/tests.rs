use super::*;
use crate::fs::{open_pm_owners, PmFsOpen};
use crate::pbtree::PbTreeOwner;
use tierkv_pm::PoolOptions;

fn key(i: u64) -> Vec<u8> {
    format!("k{i:04}").into_bytes()
}

/// An L0 attached to a new pool, value arrays on a `MemFs`, every key hot from its first
/// flush.
fn attached() -> (Arc<PmPool>, Arc<LabL0>) {
    let pool = PmPool::create_crash_sim(
        &PoolOptions {
            size: 8 << 20,
            chunk_size: 64 << 10,
            ..PoolOptions::default()
        },
        true,
    )
    .unwrap();
    let opened = crate::pm_structures::open_pm_structures(
        &pool,
        "t",
        PmFsOpen::Create(7),
        crate::pm_structures::PmKinds {
            lab: Some(true),
            ..crate::pm_structures::PmKinds::default()
        },
        |_, _| false,
    )
    .unwrap();
    let options = LabOptions {
        hot_buffer_bytes: 4 << 10,
        hot_slot_bytes: 256,
        hot_threshold: 1,
        ..LabOptions::default()
    };
    let dir = std::path::Path::new("/db");
    let ssd: Arc<dyn crate::fs::FileSystem> = Arc::new(crate::fs::MemFs::new());
    ssd.create_dir_all(dir).unwrap();
    let values = ValueFiles::new(dir, ssd, None, 7, 16, None);
    let hot = HotBuffer::open(opened.pmfs.clone(), dir, &options, true).unwrap();
    let l0 = Arc::new(LabL0::new(&options));
    l0.attach(
        Arc::clone(&pool),
        "t",
        opened.lab_trees.unwrap(),
        (values, Some(Arc::new(hot))),
        INITIAL_ROLES,
        Some(1),
    )
    .unwrap();
    (pool, l0)
}

/// Flushes version `seq` of `key` (value `value`) into the mutable tree of `roles` as
/// value array `number`, with no live snapshot or version.
fn flush_one(l0: &LabL0, roles: TreeRoles, number: u64, key: &[u8], seq: u64, value: &[u8]) {
    let entries = vec![(
        make_internal_key(key, seq, ValueType::Value),
        value.to_vec(),
    )];
    flush_with(l0, roles, number, &entries, Vec::new());
}

/// Flushes `entries` into the mutable tree of `roles` as value array `number`, with the
/// live snapshots `snapshots` and no live version.
fn flush_with(
    l0: &LabL0,
    roles: TreeRoles,
    number: u64,
    entries: &[(Vec<u8>, Vec<u8>)],
    snapshots: Vec<u64>,
) {
    let live = Vec::new;
    let readers: Readers<'_> = (snapshots, &live);
    l0.flush(roles, entries, number, &readers, || Ok(()))
        .unwrap();
}

fn hot_writes(l0: &LabL0) -> u64 {
    l0.att().unwrap().hot.as_ref().unwrap().figures().writes
}

/// The upkeep of the flush thread, with no live version: held versions no snapshot needs
/// forgotten, unreferenced arrays and slots handed over, what is due run.
fn upkeep(l0: &LabL0, smallest: u64) {
    let hot = l0.forget_held(smallest).unwrap();
    l0.drop_after(Vec::new(), hot);
    l0.release_values(&[], u64::MAX);
    l0.run_deferred().unwrap();
}

/// With `read` in progress and the half `word` (version 1 of `key`, "one") named by nothing
/// else, the next flush of `key` finds no free half and leaves it intact; once the read is
/// over, the flush after the upkeep reuses it.
fn half_outlives_the_read(
    l0: &LabL0,
    roles: TreeRoles,
    key: &[u8],
    word: u64,
    read: ReadGuard<'_>,
) {
    flush_one(l0, roles, 12, key, 3, b"three");
    assert_eq!(
        hot_writes(l0),
        2,
        "a half a read in progress may read was rewritten"
    );
    let r = l0.att().unwrap().read(word, key).unwrap();
    assert_eq!((r.seq, r.value.as_slice()), (1, &b"one"[..]));
    drop(read);
    // The read is over: the half is free for the next flush.
    upkeep(l0, 10);
    flush_one(l0, roles, 13, key, 4, b"four");
    assert_eq!(hot_writes(l0), 3);
}

/// A compacted chunk's entries are removed once the versions older than its record are
/// released, but a reader of a newer version still reads the tree: one that read an entry
/// just before its removal still reads the hot half it names, which no flush overwrites
/// until that read is over.
#[test]
fn a_removed_chunk_entrys_hot_half_outlives_the_reads_in_progress() {
    let (_pool, l0) = attached();
    let k = b"hot".to_vec();
    let roles = INITIAL_ROLES;
    flush_one(&l0, roles, 10, &k, 1, b"one");
    let roles = l0.switch(roles, &[]).unwrap();
    assert_eq!(
        roles,
        TreeRoles {
            mutable: 2,
            immutable: 1
        }
    );
    // Tree 1 names one half of the key's slot, tree 2 the other.
    flush_one(&l0, roles, 11, &k, 2, b"two");
    assert_eq!(hot_writes(&l0), 2);
    let chunk = l0.next_chunk(roles).unwrap().unwrap();
    assert_eq!(chunk.entries, 1);
    l0.chunk_done(&chunk, Vec::new());
    // A read (of the version the chunk's record installed) finds tree 1's entry ...
    let read = l0.begin_read();
    let word = l0.tree(1).unwrap().unwrap().get_word(&k).unwrap().unwrap();
    // ... the entry is removed, and the next flushes of the key find no free half.
    upkeep(&l0, 10);
    assert_eq!(l0.tree(1).unwrap().unwrap().get_word(&k).unwrap(), None);
    upkeep(&l0, 10);
    half_outlives_the_read(&l0, roles, &k, word, read);
    let got = l0.get(roles, &k, 10, false).unwrap().unwrap();
    assert_eq!(got.1, b"four");
}

/// A held version is forgotten once no snapshot needs it, but a chunk compaction (which
/// pins no version) reading the immutable tree may have copied it and not yet read its hot
/// half: no flush overwrites the half until that read is over.
#[test]
fn a_forgotten_held_versions_hot_half_outlives_the_reads_in_progress() {
    let (_pool, l0) = attached();
    let k = b"hot".to_vec();
    let roles = INITIAL_ROLES;
    flush_one(&l0, roles, 10, &k, 1, b"one");
    // A snapshot at 1: the version the next flush replaces in place is held.
    let entries = vec![(make_internal_key(&k, 2, ValueType::Value), b"two".to_vec())];
    flush_with(&l0, roles, 11, &entries, vec![1]);
    let roles = l0.switch(roles, &[]).unwrap();
    // The chunk's read copies the held version of tree 1 ...
    let read = l0.begin_read();
    let held = l0.held.lock().clone_range(&k, &k, 1);
    let word = held[&k][0];
    // ... the snapshot goes, the held version is forgotten, and the next flushes of the
    // key (into tree 2) find no free half: tree 1 names one, the read may read the other.
    upkeep(&l0, 10);
    assert!(l0.held.lock().is_empty());
    upkeep(&l0, 10);
    half_outlives_the_read(&l0, roles, &k, word, read);
}

/// A tree of keys 0..300 whose values are in value array 5, but 240..270 in 6 and
/// 270..300 in 3 (the oldest).
fn tree() -> (Arc<PmPool>, Arc<PbTree>) {
    let options = PoolOptions {
        size: 4 << 20,
        chunk_size: 64 << 10,
        ..PoolOptions::default()
    };
    let pool = PmPool::create_crash_sim(&options, true).unwrap();
    let mut owner =
        PbTreeOwner::with_layout(Arc::clone(&pool), "t", "t", Layout::Inline, InnerKind::Dram);
    open_pm_owners(&pool, "t", PmFsOpen::Create(7), &mut [&mut owner]).unwrap();
    let tree = Arc::new(owner.into_tree(true).unwrap());
    for i in 0..300 {
        let file = match i {
            0..240 => 5,
            240..270 => 6,
            _ => 3,
        };
        let w = Vaddr::value(file, 64 + i).unwrap().encode();
        tree.upsert_word(&key(i), |_| WordOp::Put(w)).unwrap();
    }
    (pool, tree)
}

fn file_of(tree: &PbTree, k: &[u8]) -> u64 {
    match Vaddr::decode(tree.get_word(k).unwrap().unwrap(), "t").unwrap() {
        Vaddr::Value { file, .. } => file,
        Vaddr::Hot { .. } => unreachable!(),
    }
}

/// Leaf scan from the cursor, then file scan: the oldest array's leaves first, every
/// entry left compacted exactly once, the last chunk (only) marked last.
#[test]
fn file_scan_takes_the_oldest_arrays_leaves_first_and_covers_the_rest_once() {
    let (_pool, tree) = tree();
    let mut state = ChunkState::new(1, 300);
    // Leaf scan: the leftmost leaves, one at a time, in order, up to array 6's keys.
    let mut next_lo = key(0);
    loop {
        let c = leaf_scan_chunk(&tree, &state, 1).unwrap();
        assert!(!c.file_scan && !c.last, "{c:?}");
        assert_eq!(c.lo, next_lo);
        if c.hi >= key(240) {
            break;
        }
        state.compacted += c.entries;
        let hi: u64 = std::str::from_utf8(&c.hi[1..]).unwrap().parse().unwrap();
        next_lo = key(hi + 1);
        state.cursor = Some(c.hi);
    }
    let before = state.compacted;
    assert!(before > 150, "{before}");
    let cursor = state.cursor.clone().unwrap();
    let mut seen = std::collections::BTreeSet::new();
    let mut chunks = Vec::new();
    loop {
        let c = file_scan_chunk(&tree, &state, 10).unwrap();
        assert!(c.file_scan && c.entries > 0, "{c:?}");
        assert!(c.lo > cursor && c.lo <= c.hi, "{c:?}");
        let mut it = tree.iter();
        it.seek(&c.lo).unwrap();
        let mut n = 0;
        while let Some((k, _)) = it.current() {
            if *k > c.hi {
                break;
            }
            assert!(
                seen.insert(k.clone()),
                "{} compacted twice",
                String::from_utf8_lossy(k)
            );
            n += 1;
            it.next().unwrap();
        }
        assert_eq!(n, c.entries, "{c:?}");
        state.compacted += c.entries;
        state.done.push((c.lo.clone(), c.hi.clone()));
        chunks.push(c.clone());
        if c.last {
            break;
        }
        assert!(chunks.len() < 60, "no end");
    }
    // Every entry after the cursor, once.
    assert_eq!(seen.len() as u64, 300 - before);
    assert_eq!(state.compacted, 300);
    // The first chunk is wholly in the oldest array's keys, where a leaf scan would have
    // taken array 6's next.
    assert!(chunks[0].lo >= key(270), "{:?}", chunks[0]);
    assert_eq!(file_of(&tree, &chunks[0].lo), 3);
    assert_eq!(file_of(&tree, &chunks[0].hi), 3);
    let c = leaf_scan_chunk(
        &tree,
        &ChunkState {
            cursor: Some(cursor),
            ..ChunkState::new(1, 300)
        },
        10,
    )
    .unwrap();
    assert_eq!(file_of(&tree, &c.lo), 6);
    // Nothing left: an empty last chunk.
    let c = file_scan_chunk(&tree, &state, 10).unwrap();
    assert!(c.last && c.entries == 0, "{c:?}");
}
