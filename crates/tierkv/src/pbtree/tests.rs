use super::*;
use crate::fs::open_pm_owners;
use proptest::prelude::*;
use std::collections::BTreeMap as Model;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use tierkv_pm::{CrashImage, PoolOptions};

const ID: u128 = 0xb7;
const ROOT: &str = "index";

fn options() -> PoolOptions {
    PoolOptions {
        size: 4 << 20,
        chunk_size: 64 << 10,
        ..PoolOptions::default()
    }
}

fn open_on(pool: &Arc<PmPool>, how: PmFsOpen, writable: bool) -> Result<Arc<PbTree>> {
    let mut owner = PbTreeOwner::new(Arc::clone(pool), "test pool", ROOT);
    open_pm_owners(pool, "test pool", how, &mut [&mut owner])?;
    Ok(Arc::new(owner.into_tree(writable)?))
}

fn new_tree() -> (Arc<PmPool>, Arc<PbTree>) {
    let pool = PmPool::create_crash_sim(&options(), true).unwrap();
    let tree = open_on(&pool, PmFsOpen::Create(ID), true).unwrap();
    (pool, tree)
}

/// The tree after a crash now: the strict image reopened.
fn reopen(pool: &PmPool, kind: CrashImage) -> Result<(Arc<PmPool>, Arc<PbTree>)> {
    let img = pool.crash_image(kind).unwrap();
    let p2 = PmPool::open_crash_image_checked(img, &options(), true).unwrap();
    let t = open_on(&p2, PmFsOpen::Existing(ID), true)?;
    Ok((p2, t))
}

fn all(tree: &Arc<PbTree>) -> Vec<Entry> {
    let mut it = tree.iter();
    it.seek_to_first().unwrap();
    let mut out = Vec::new();
    while let Some(e) = it.current() {
        out.push(e.clone());
        it.next().unwrap();
    }
    out
}

fn model_entries(m: &Model<Vec<u8>, Vec<u8>>) -> Vec<Entry> {
    m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// The PM bytes a tree of these entries holds in `leaves` leaves: what no leak looks like.
fn expected_pm_bytes(m: &Model<Vec<u8>, Vec<u8>>, leaves: u64) -> u64 {
    leaves * LEAF_BYTES
        + m.iter()
            .map(|(k, v)| slot_bytes(class_of((OBJECT_HEADER + k.len() + v.len()) as u64)))
            .sum::<u64>()
}

/// A key of `n` (zero-padded decimal) with `extra` more bytes, so that keys share long
/// prefixes and vary in length.
fn key(n: u32, extra: usize) -> Vec<u8> {
    let mut k = format!("key{n:08}").into_bytes();
    k.extend(std::iter::repeat_n(b'x', extra));
    k
}

#[test]
fn puts_gets_deletes_and_iterates_in_key_order() {
    let (_pool, t) = new_tree();
    assert_eq!(t.get(b"a").unwrap(), None);
    assert_eq!(t.put(b"b", b"2").unwrap(), None);
    assert_eq!(t.put(b"a", b"1").unwrap(), None);
    assert_eq!(t.put(b"", b"empty key").unwrap(), None);
    assert_eq!(t.put(b"b", b"22").unwrap(), Some(b"2".to_vec()));
    assert_eq!(t.get(b"b").unwrap(), Some(b"22".to_vec()));
    assert_eq!(t.get(b"").unwrap(), Some(b"empty key".to_vec()));
    assert_eq!(t.delete(b"a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(t.delete(b"a").unwrap(), None);
    assert_eq!(
        all(&t),
        vec![
            (b"".to_vec(), b"empty key".to_vec()),
            (b"b".to_vec(), b"22".to_vec())
        ]
    );
    assert_eq!(t.len(), 2);
    assert_eq!(t.verify().unwrap(), 2);
}

#[test]
fn splits_keep_every_key_and_the_order_and_survive_a_reopen() {
    let (pool, t) = new_tree();
    let mut m = Model::new();
    // Reverse and interleaved order, keys of 11 to 411 bytes: many splits, several classes.
    for n in (0..600u32)
        .rev()
        .filter(|n| n % 2 == 0)
        .chain((0..600).filter(|n| n % 2 == 1))
    {
        let k = key(n, (n as usize * 7) % 400);
        let v = n.to_le_bytes().repeat(1 + n as usize % 5);
        t.put(&k, &v).unwrap();
        m.insert(k, v);
    }
    assert!(t.stats().leaves >= 600 / LEAF_SLOTS as u64);
    assert_eq!(all(&t), model_entries(&m));
    let mut it = t.iter();
    it.seek(&key(300, 0)).unwrap();
    assert_eq!(it.current().unwrap().0, key(300, (300 * 7) % 400));
    let (_p2, t2) = reopen(&pool, CrashImage::Strict).unwrap();
    assert_eq!(all(&t2), model_entries(&m));
    assert_eq!(t2.verify().unwrap(), 600);
    assert_eq!(
        t2.stats().pm_bytes,
        expected_pm_bytes(&m, t2.stats().leaves)
    );
    // Deleting everything unlinks every leaf but the head and frees every object.
    for k in m.keys() {
        assert!(t2.delete(k).unwrap().is_some());
    }
    let s = t2.stats();
    assert_eq!((s.keys, s.leaves, s.pm_bytes), (0, 1, LEAF_BYTES));
    assert!(all(&t2).is_empty());
}

#[test]
fn upsert_decides_on_the_current_payload() {
    let (_pool, t) = new_tree();
    t.put(b"k", b"file-7").unwrap();
    // Replace only if it still names file 7, as a compaction does.
    t.upsert(b"k", |p| match p {
        Some(b"file-7") => Upsert::Put(b"file-9".to_vec()),
        _ => Upsert::Keep,
    })
    .unwrap();
    t.upsert(b"k", |p| match p {
        Some(b"file-7") => Upsert::Put(b"file-10".to_vec()),
        _ => Upsert::Keep,
    })
    .unwrap();
    assert_eq!(t.get(b"k").unwrap(), Some(b"file-9".to_vec()));
}

#[test]
fn an_object_too_large_for_a_chunk_is_refused_and_changes_nothing() {
    let (_pool, t) = new_tree();
    let big = vec![7u8; 64 << 10];
    let e = t.put(&big, b"v").unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    assert_eq!(t.len(), 0);
    assert_eq!(t.stats().pm_bytes, LEAF_BYTES);
    // The largest that fits does.
    let k = vec![7u8; (64 << 10) - OBJECT_HEADER - 1];
    t.put(&k, b"v").unwrap();
    assert_eq!(t.get(&k).unwrap(), Some(b"v".to_vec()));
}

#[test]
fn a_read_only_tree_refuses_updates() {
    let (pool, t) = new_tree();
    t.put(b"a", b"1").unwrap();
    let img = pool.crash_image(CrashImage::Strict).unwrap();
    let p2 = PmPool::open_crash_image(img, &options()).unwrap();
    let ro = open_on(&p2, PmFsOpen::Existing(ID), false).unwrap();
    assert_eq!(ro.get(b"a").unwrap(), Some(b"1".to_vec()));
    assert!(matches!(ro.put(b"b", b"2"), Err(Error::InvalidArgument(_))));
}

/// Damage to a leaf word, a slot pointer or an object is reported as corruption naming the
/// tree, never returned as data.
#[test]
fn damage_is_reported_as_corruption() {
    let (pool, t) = new_tree();
    for n in 0..100 {
        t.put(&key(n, 0), b"value").unwrap();
    }
    let head = t.state.read().leaves[&Vec::new()];
    let leaf = t.pm.read_leaf(head).unwrap();
    let slot = leaf.valid().next().unwrap();
    let obj = leaf.slots[slot].1;
    let cases: Vec<(&str, u64)> = vec![
        ("bitmap", head),
        ("next link", head + 8),
        ("magic", head + 16),
        ("slot pointer", slot_at(head, slot) + 8),
        ("object key", obj + OBJECT_HEADER as u64),
        ("object length", obj),
    ];
    for (what, at) in cases {
        let mut img = pool.crash_image(CrashImage::Strict).unwrap();
        img[at as usize] ^= 0x10;
        let p2 = PmPool::open_crash_image(img, &options()).unwrap();
        match open_on(&p2, PmFsOpen::Existing(ID), true) {
            Err(Error::Corruption { location, .. }) => {
                assert!(location.contains("PM tree index"), "{what}: {location}")
            }
            Err(e) => panic!("{what}: {e}"),
            Ok(_) => panic!("{what}: damage not found"),
        }
    }
}

#[derive(Clone, Debug)]
enum Op {
    Put(u32, usize, u8),
    Delete(u32, usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..300u32, 0..200usize, any::<u8>()).prop_map(|(k, x, v)| Op::Put(k, x, v)),
        1 => (0..300u32, 0..3usize).prop_map(|(k, x)| Op::Delete(k, x)),
    ]
}

/// Keys of one number come in three lengths (sharing a prefix).
fn op_key(k: u32, x: usize) -> Vec<u8> {
    key(k, x % 3 * 50)
}

fn apply(t: &PbTree, m: &mut Model<Vec<u8>, Vec<u8>>, op: &Op) {
    match *op {
        Op::Put(k, x, v) => {
            let val = vec![v; 1 + x];
            assert_eq!(
                t.put(&op_key(k, x), &val).unwrap(),
                m.insert(op_key(k, x), val)
            );
        }
        Op::Delete(k, x) => {
            assert_eq!(t.delete(&op_key(k, x)).unwrap(), m.remove(&op_key(k, x)));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Any sequence of puts and deletes: the tree matches a model map on gets, iteration and
    /// seeks, before and after a reopen, and holds exactly the PM bytes its content needs.
    #[test]
    fn matches_a_model(ops in prop::collection::vec(op(), 1..400), probe in 0..300u32) {
        let (pool, t) = new_tree();
        let mut m = Model::new();
        for o in &ops {
            apply(&t, &mut m, o);
        }
        prop_assert_eq!(all(&t), model_entries(&m));
        let mut it = t.iter();
        it.seek(&key(probe, 0)).unwrap();
        let want = m.range(key(probe, 0)..).next().map(|(k, v)| (k.clone(), v.clone()));
        prop_assert_eq!(it.current().cloned(), want);
        for n in [probe, probe / 2] {
            for x in 0..3 {
                let k = op_key(n, x);
                prop_assert_eq!(t.get(&k).unwrap(), m.get(&k).cloned());
            }
        }
        prop_assert_eq!(t.stats().pm_bytes, expected_pm_bytes(&m, t.stats().leaves));
        let (_p2, t2) = reopen(&pool, CrashImage::Strict).unwrap();
        prop_assert_eq!(all(&t2), model_entries(&m));
        prop_assert_eq!(t2.verify().unwrap(), m.len() as u64);
        prop_assert_eq!(t2.stats().pm_bytes, expected_pm_bytes(&m, t2.stats().leaves));
    }
}

/// A crash at every fence of inserts, updates, deletes, splits and unlinks, in the strict, the
/// all-pending and torn images: the reopened tree is the content before or after the
/// operation in flight (never a mix, never a lost acknowledged key), checks clean, holds no
/// leaked PM slot, and takes further updates.
#[test]
fn a_crash_at_any_fence_leaves_the_tree_before_or_after_the_operation() {
    let (pool, t) = new_tree();
    let before: Arc<Mutex<Model<Vec<u8>, Vec<u8>>>> = Arc::default();
    let after: Arc<Mutex<Model<Vec<u8>, Vec<u8>>>> = Arc::default();
    let checked = Arc::new(AtomicU64::new(0));
    {
        let (before, after, checked) = (before.clone(), after.clone(), checked.clone());
        let weak = Arc::downgrade(&pool);
        pool.set_fence_hook(Some(Box::new(move |fence| {
            let Some(p) = weak.upgrade() else { return };
            let (b, a) = (
                before.lock().unwrap().clone(),
                after.lock().unwrap().clone(),
            );
            let kinds = CrashImage::at_fence(fence, 3, 2);
            for kind in kinds {
                let (_p2, t2) =
                    reopen(&p, kind).unwrap_or_else(|e| panic!("fence {fence} {kind:?}: {e}"));
                let got = all(&t2);
                let which = if got == model_entries(&b) {
                    &b
                } else if got == model_entries(&a) {
                    &a
                } else {
                    panic!("fence {fence} {kind:?}: neither before nor after");
                };
                assert_eq!(t2.verify().unwrap(), which.len() as u64);
                assert_eq!(
                    t2.stats().pm_bytes,
                    expected_pm_bytes(which, t2.stats().leaves),
                    "fence {fence} {kind:?}: leaked PM"
                );
                t2.put(b"after the crash", b"1").unwrap();
                checked.fetch_add(1, Ordering::SeqCst);
            }
        })));
    }
    let mut m = Model::new();
    let mut step = |t: &PbTree, op: Op| {
        let mut next = m.clone();
        *before.lock().unwrap() = m.clone();
        // Compute the content after the op on a copy of the model first.
        match &op {
            Op::Put(k, x, v) => {
                next.insert(key(*k, *x), vec![*v; 3]);
            }
            Op::Delete(k, x) => {
                next.remove(&key(*k, *x));
            }
        }
        *after.lock().unwrap() = next.clone();
        match op {
            Op::Put(k, x, v) => {
                t.put(&key(k, x), &[v; 3]).unwrap();
            }
            Op::Delete(k, x) => {
                t.delete(&key(k, x)).unwrap();
            }
        }
        m = next;
    };
    // Fill one leaf and split it (the 49th insert), update, delete down to an unlink.
    for n in 0..LEAF_SLOTS as u32 + 1 {
        step(&t, Op::Put(n, 0, 1));
    }
    assert_eq!(t.stats().leaves, 2);
    step(&t, Op::Put(40, 0, 2));
    step(&t, Op::Put(5, 0, 3));
    let upper: Vec<u32> = (0..LEAF_SLOTS as u32 + 1)
        .filter(|n| !t.state.read().leaf_for(&key(*n, 0)).0.is_empty())
        .collect();
    for n in upper {
        step(&t, Op::Delete(n, 0));
    }
    assert_eq!(t.stats().leaves, 1, "the split-off leaf was unlinked");
    pool.set_fence_hook(None);
    assert!(
        checked.load(Ordering::SeqCst) >= 7 * 100,
        "too few fences walked"
    );
}
