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

/// A tree's leaf layout, where its inner nodes are, and their fanout when in PM.
#[derive(Clone, Copy, Debug)]
struct Shape {
    layout: Layout,
    inner: InnerKind,
    fanout: usize,
}

/// SLM-DB's global index: objects, inner nodes in PM (a small fanout, so that a few hundred
/// keys grow a tree of several levels).
const OBJECTS_PM: Shape = Shape {
    layout: Layout::Objects,
    inner: InnerKind::Pm,
    fanout: 3,
};
const OBJECTS_DRAM: Shape = Shape {
    layout: Layout::Objects,
    inner: InnerKind::Dram,
    fanout: FANOUT,
};
/// LAB-DB's L0.
const INLINE_DRAM: Shape = Shape {
    layout: Layout::Inline,
    inner: InnerKind::Dram,
    fanout: FANOUT,
};
const INLINE_PM: Shape = Shape {
    layout: Layout::Inline,
    inner: InnerKind::Pm,
    fanout: 4,
};

/// Every shape: every test that is not about one shape runs for each.
const SHAPES: [Shape; 4] = [OBJECTS_PM, OBJECTS_DRAM, INLINE_DRAM, INLINE_PM];

fn open_on(pool: &Arc<PmPool>, how: PmFsOpen, writable: bool, shape: Shape) -> Result<Arc<PbTree>> {
    let mut owner = PbTreeOwner::with_layout(
        Arc::clone(pool),
        "test pool",
        ROOT,
        shape.layout,
        shape.inner,
    )
    .with_fanout(shape.fanout);
    open_pm_owners(pool, "test pool", how, &mut [&mut owner])?;
    Ok(Arc::new(owner.into_tree(writable)?))
}

fn new_tree(shape: Shape) -> (Arc<PmPool>, Arc<PbTree>) {
    let pool = PmPool::create_crash_sim(&options(), true).unwrap();
    let tree = open_on(&pool, PmFsOpen::Create(ID), true, shape).unwrap();
    (pool, tree)
}

/// The tree after a crash now, in image `kind`, reopened.
fn reopen(pool: &PmPool, kind: CrashImage, shape: Shape) -> Result<(Arc<PmPool>, Arc<PbTree>)> {
    let img = pool.crash_image(kind).unwrap();
    let p2 = PmPool::open_crash_image_checked(img, &options(), true).unwrap();
    let t = open_on(&p2, PmFsOpen::Existing(ID), true, shape)?;
    Ok((p2, t))
}

/// A test payload in `layout`: the bytes themselves for `Objects`; for `Inline`, an 8-byte word
/// drawn from them (their crc and length), so that distinct test payloads stay distinct.
fn pay(layout: Layout, p: &[u8]) -> Vec<u8> {
    match layout {
        Layout::Objects => p.to_vec(),
        Layout::Inline => fingerprint(p).to_le_bytes().to_vec(),
    }
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

/// The PM bytes a tree of these entries holds: what no leak looks like (`Inline`: an object
/// only for a key over `INLINE_KEY` bytes, holding the key alone), with its leaves and its
/// inner nodes (their bytes counted by the tree; `verify` checks the count against a walk).
fn expected_pm_bytes(layout: Layout, m: &Model<Vec<u8>, Vec<u8>>, s: &PbTreeStats) -> u64 {
    s.leaves * LEAF_BYTES
        + s.inner_pm_bytes
        + m.iter()
            .map(|(k, v)| match layout {
                Layout::Objects => slot_bytes(class_of((OBJECT_HEADER + k.len() + v.len()) as u64)),
                Layout::Inline if k.len() <= INLINE_KEY => 0,
                Layout::Inline => slot_bytes(class_of((OBJECT_HEADER + k.len()) as u64)),
            })
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
    for shape in SHAPES {
        let layout = shape.layout;
        let p = |b: &[u8]| pay(layout, b);
        let (_pool, t) = new_tree(shape);
        assert_eq!(t.layout(), layout);
        assert_eq!(t.get(b"a").unwrap(), None);
        assert_eq!(t.put(b"b", &p(b"2")).unwrap(), None);
        assert_eq!(t.put(b"a", &p(b"1")).unwrap(), None);
        assert_eq!(t.put(b"", &p(b"empty key")).unwrap(), None);
        assert_eq!(t.put(b"b", &p(b"22")).unwrap(), Some(p(b"2")));
        assert_eq!(t.get(b"b").unwrap(), Some(p(b"22")));
        assert_eq!(t.get(b"").unwrap(), Some(p(b"empty key")));
        assert_eq!(t.delete(b"a").unwrap(), Some(p(b"1")));
        assert_eq!(t.delete(b"a").unwrap(), None);
        assert_eq!(
            all(&t),
            vec![(b"".to_vec(), p(b"empty key")), (b"b".to_vec(), p(b"22"))],
            "{layout:?}"
        );
        assert_eq!(t.len(), 2);
        assert_eq!(t.verify().unwrap(), 2);
    }
}

#[test]
fn splits_keep_every_key_and_the_order_and_survive_a_reopen() {
    for shape in SHAPES {
        let layout = shape.layout;
        let (pool, t) = new_tree(shape);
        let mut m = Model::new();
        // Reverse and interleaved order, keys of 11 to 411 bytes: many splits, several
        // classes (Inline: keys of at most 23 bytes in the slot, the others as objects).
        for n in (0..600u32)
            .rev()
            .filter(|n| n % 2 == 0)
            .chain((0..600).filter(|n| n % 2 == 1))
        {
            let k = key(n, (n as usize * 7) % 400);
            let v = pay(layout, &n.to_le_bytes().repeat(1 + n as usize % 5));
            t.put(&k, &v).unwrap();
            m.insert(k, v);
        }
        assert!(t.stats().leaves >= 600 / layout.slots() as u64);
        if shape.inner == InnerKind::Pm {
            // Tall enough that splits and unlinks rewrite paths of several nodes.
            assert!(t.stats().inner_nodes > shape.fanout as u64, "{shape:?}");
        }
        assert_eq!(t.verify().unwrap(), 600);
        assert_eq!(all(&t), model_entries(&m));
        let mut it = t.iter();
        it.seek(&key(300, 0)).unwrap();
        assert_eq!(it.current().unwrap().0, key(300, (300 * 7) % 400));
        let (_p2, t2) = reopen(&pool, CrashImage::Strict, shape).unwrap();
        assert_eq!(all(&t2), model_entries(&m));
        assert_eq!(t2.verify().unwrap(), 600);
        assert_eq!(
            t2.stats().pm_bytes,
            expected_pm_bytes(layout, &m, &t2.stats())
        );
        // Deleting everything unlinks every leaf but the head and frees every object.
        for k in m.keys() {
            assert!(t2.delete(k).unwrap().is_some());
        }
        let s = t2.stats();
        // PM inner nodes: one root naming the head (the emptied levels collapsed).
        let inner = match shape.inner {
            InnerKind::Pm => 1,
            InnerKind::Dram => 0,
        };
        assert_eq!(
            (s.keys, s.leaves, s.inner_nodes, s.pm_bytes),
            (0, 1, inner, LEAF_BYTES + s.inner_pm_bytes),
            "{shape:?}"
        );
        assert_eq!(t2.verify().unwrap(), 0);
        assert!(all(&t2).is_empty());
    }
}

#[test]
fn upsert_decides_on_the_current_payload() {
    for shape in SHAPES {
        let layout = shape.layout;
        let p = |b: &[u8]| pay(layout, b);
        let (_pool, t) = new_tree(shape);
        t.put(b"k", &p(b"file-7")).unwrap();
        // Replace only if it still names file 7, as a compaction does.
        for new in [b"file-9".as_slice(), b"file-10"] {
            t.upsert(b"k", |old| {
                if old == Some(p(b"file-7").as_slice()) {
                    Upsert::Put(p(new))
                } else {
                    Upsert::Keep
                }
            })
            .unwrap();
        }
        assert_eq!(t.get(b"k").unwrap(), Some(p(b"file-9")), "{layout:?}");
    }
}

#[test]
fn an_object_too_large_for_a_chunk_is_refused_and_changes_nothing() {
    for shape in SHAPES {
        let layout = shape.layout;
        let (_pool, t) = new_tree(shape);
        let v = pay(layout, b"v");
        let big = vec![7u8; 64 << 10];
        let e = t.put(&big, &v).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
        assert_eq!(t.len(), 0);
        assert_eq!(t.stats().pm_bytes, LEAF_BYTES + t.stats().inner_pm_bytes);
        // The largest that fits does (Inline: a long key's object holds the key alone).
        let payload_in_object = match layout {
            Layout::Objects => v.len(),
            Layout::Inline => 0,
        };
        let k = vec![7u8; (64 << 10) - OBJECT_HEADER - payload_in_object];
        t.put(&k, &v).unwrap();
        assert_eq!(t.get(&k).unwrap(), Some(v), "{layout:?}");
    }
}

#[test]
fn a_read_only_tree_refuses_updates() {
    for shape in SHAPES {
        let layout = shape.layout;
        let (pool, t) = new_tree(shape);
        t.put(b"a", &pay(layout, b"1")).unwrap();
        let img = pool.crash_image(CrashImage::Strict).unwrap();
        let p2 = PmPool::open_crash_image(img, &options()).unwrap();
        let ro = open_on(&p2, PmFsOpen::Existing(ID), false, shape).unwrap();
        assert_eq!(ro.get(b"a").unwrap(), Some(pay(layout, b"1")));
        assert!(matches!(
            ro.put(b"b", &pay(layout, b"2")),
            Err(Error::InvalidArgument(_))
        ));
    }
}

/// Opens the image of `pool` with `byte` XORed by 0x10 at `at`; it must fail as corruption
/// naming the tree.
fn assert_damage_found(pool: &PmPool, shape: Shape, what: &str, at: u64) {
    let mut img = pool.crash_image(CrashImage::Strict).unwrap();
    img[at as usize] ^= 0x10;
    let p2 = PmPool::open_crash_image(img, &options()).unwrap();
    match open_on(&p2, PmFsOpen::Existing(ID), true, shape) {
        Err(Error::Corruption { location, .. }) => {
            assert!(location.contains("PM tree index"), "{what}: {location}")
        }
        Err(e) => panic!("{shape:?} {what}: {e}"),
        Ok(_) => panic!("{shape:?} {what}: damage not found"),
    }
}

/// Damage to a leaf word, a slot pointer or an object is reported as corruption naming the
/// tree, never returned as data.
#[test]
fn damage_is_reported_as_corruption() {
    let (pool, t) = new_tree(OBJECTS_PM);
    for n in 0..300 {
        t.put(&key(n, 0), b"value").unwrap();
    }
    let head = t.state.read().head;
    let leaf = t.pm.read_leaf(head).unwrap();
    let slot = leaf.valid().next().unwrap();
    let obj = leaf.slots[slot].object().unwrap();
    // The inner root and one of its children (the tree is at least two levels tall).
    let root = t.pm.inner_root(head).unwrap().unwrap();
    let node = t.pm.read_node(root).unwrap();
    assert!(node.level >= 2, "{node:?}");
    let child = node.entries[1].1;
    let cases: Vec<(&str, u64)> = vec![
        ("bitmap", head),
        ("next link", head + 8),
        ("magic", head + 16),
        ("slot pointer", Layout::Objects.slot_at(head, slot) + 8),
        ("object key", obj + OBJECT_HEADER as u64),
        ("object length", obj),
        ("inner-root word", head + inner::ROOT_WORD),
        ("inner root magic", root),
        ("inner root level", root + 16),
        ("inner root child pointer", root + 32),
        ("inner node key", child + 32 + 12),
        ("inner node count", child + 18),
    ];
    for (what, at) in cases {
        assert_damage_found(&pool, OBJECTS_PM, what, at);
    }
}

/// A tree reopened with the other inner kind: PM inner nodes dropped (root word cleared, nodes
/// freed), then built again; the content, the checks and the PM bytes follow each time, and a
/// read-only open with DRAM inner nodes leaves the PM ones in place.
#[test]
fn the_inner_kind_can_change_at_open() {
    let (pool, t) = new_tree(OBJECTS_PM);
    let mut m = Model::new();
    for n in 0..300 {
        t.put(&key(n, n as usize % 7), b"value").unwrap();
        m.insert(key(n, n as usize % 7), b"value".to_vec());
    }
    assert!(t.stats().inner_nodes > 3);
    let img = pool.crash_image(CrashImage::Strict).unwrap();
    let p2 = PmPool::open_crash_image(img, &options()).unwrap();
    let ro = open_on(&p2, PmFsOpen::Existing(ID), false, OBJECTS_DRAM).unwrap();
    assert_eq!(
        (all(&ro), ro.inner_kind()),
        (model_entries(&m), InnerKind::Dram)
    );
    assert_eq!(ro.verify().unwrap(), 300);
    drop(ro);
    let again = open_on(&p2, PmFsOpen::Existing(ID), true, OBJECTS_PM).unwrap();
    assert_eq!(
        again.stats().inner_nodes,
        t.stats().inner_nodes,
        "adopted as they were"
    );
    drop(again);
    let dram = open_on(&p2, PmFsOpen::Existing(ID), true, OBJECTS_DRAM).unwrap();
    let s = dram.stats();
    assert_eq!((s.inner_nodes, s.inner_pm_bytes), (0, 0));
    assert_eq!(
        s.pm_bytes,
        expected_pm_bytes(Layout::Objects, &m, &s),
        "nodes freed"
    );
    assert_eq!(all(&dram), model_entries(&m));
    drop(dram);
    let pm = open_on(&p2, PmFsOpen::Existing(ID), true, OBJECTS_PM).unwrap();
    let s = pm.stats();
    assert!(s.inner_nodes > 3, "built again: {s:?}");
    assert_eq!(pm.verify().unwrap(), 300);
    assert_eq!(s.pm_bytes, expected_pm_bytes(Layout::Objects, &m, &s));
    assert_eq!(all(&pm), model_entries(&m));
}

/// The inline layout's checked parts: the leaf words, the tag, the padding after an inline
/// key, a long key's slot fields and its object. (An inline key byte and the payload word
/// carry no check of their own: module docs.)
#[test]
fn inline_damage_is_reported_as_corruption() {
    let layout = Layout::Inline;
    let (pool, t) = new_tree(INLINE_DRAM);
    for n in 0..40 {
        t.put(
            &key(n, if n % 2 == 0 { 0 } else { 30 }),
            &7u64.to_le_bytes(),
        )
        .unwrap();
    }
    let head = t.state.read().head;
    let leaf = t.pm.read_leaf(head).unwrap();
    let short = leaf
        .valid()
        .find(|&i| matches!(leaf.slots[i], Slot::Short { .. }))
        .unwrap();
    let long = leaf
        .valid()
        .find(|&i| matches!(leaf.slots[i], Slot::Long { .. }))
        .unwrap();
    let obj = leaf.slots[long].object().unwrap();
    let (s, l) = (layout.slot_at(head, short), layout.slot_at(head, long));
    let cases: Vec<(&str, u64)> = vec![
        ("bitmap", head),
        ("next link", head + 8),
        ("magic", head + 16),
        ("short tag", s + 8),
        ("padding after an inline key", s + 31),
        ("long tag", l + 8),
        ("long key crc", l + 12),
        ("long key length", l + 16),
        ("long key object pointer", l + 24),
        ("object key", obj + OBJECT_HEADER as u64),
        ("object length", obj),
    ];
    for (what, at) in cases {
        assert_damage_found(&pool, INLINE_DRAM, what, at);
    }
    // A tree opened with the other layout fails the leaf magic.
    assert_damage_found(&pool, OBJECTS_DRAM, "other layout's magic", head + 40);
}

/// `upsert_word` and `get_word`: any 64-bit word, the old word returned, Keep and Delete, an
/// update in place (one persisted line, no new PM), refused on the objects layout, and
/// payloads of another length refused on the inline layout.
#[test]
fn words_update_in_place() {
    let (pool, t) = new_tree(INLINE_DRAM);
    let long = key(1, 40);
    for (k, w) in [(b"short".to_vec(), 0u64), (long.clone(), u64::MAX)] {
        assert_eq!(
            t.upsert_word(&k, |old| {
                assert_eq!(old, None);
                WordOp::Put(w)
            })
            .unwrap(),
            None
        );
        assert_eq!(t.get_word(&k).unwrap(), Some(w));
    }
    let pm_before = t.stats().pm_bytes;
    t.take_persisted_bytes();
    for k in [b"short".to_vec(), long.clone()] {
        let old = t.get_word(&k).unwrap().unwrap();
        let new = old ^ 0x8000_0000_0000_0001;
        assert_eq!(t.upsert_word(&k, |_| WordOp::Put(new)).unwrap(), Some(old));
        assert_eq!(t.take_persisted_bytes(), 64, "one 8-byte store, persisted");
        assert_eq!(t.get_word(&k).unwrap(), Some(new));
        assert_eq!(t.upsert_word(&k, |_| WordOp::Keep).unwrap(), Some(new));
        assert_eq!(t.take_persisted_bytes(), 0, "Keep writes nothing");
    }
    assert_eq!(t.stats().pm_bytes, pm_before, "no new object for an update");
    let (_p2, t2) = reopen(&pool, CrashImage::Strict, INLINE_DRAM).unwrap();
    assert_eq!(t2.get_word(b"short").unwrap(), Some(0x8000_0000_0000_0001));
    assert_eq!(t2.get_word(&long).unwrap(), Some(0x7fff_ffff_ffff_fffe));
    assert_eq!(
        t.upsert_word(&long, |_| WordOp::Delete).unwrap(),
        Some(0x7fff_ffff_ffff_fffe)
    );
    assert_eq!(t.get_word(&long).unwrap(), None);
    assert_eq!(
        t.stats().pm_bytes,
        LEAF_BYTES,
        "the long key's object is freed"
    );
    assert_eq!(t.upsert_word(b"absent", |_| WordOp::Delete).unwrap(), None);
    assert!(matches!(
        t.put(b"x", b"seven b"),
        Err(Error::InvalidArgument(_))
    ));
    assert_eq!(t.get(b"x").unwrap(), None);
    assert_eq!(t.len(), 1);
    let (_p, objects) = new_tree(OBJECTS_PM);
    assert!(matches!(
        objects.upsert_word(b"k", |_| WordOp::Put(1)),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        objects.get_word(b"k"),
        Err(Error::InvalidArgument(_))
    ));
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

/// Keys of one number come in three lengths (sharing a prefix; Inline: one in the slot, two
/// as objects).
fn op_key(k: u32, x: usize) -> Vec<u8> {
    key(k, x % 3 * 50)
}

fn apply(t: &PbTree, m: &mut Model<Vec<u8>, Vec<u8>>, op: &Op) {
    match *op {
        Op::Put(k, x, v) => {
            let val = pay(t.layout(), &vec![v; 1 + x]);
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

    /// Any sequence of puts and deletes, in either layout: the tree matches a model map on
    /// gets, iteration and seeks, before and after a reopen, and holds exactly the PM bytes its
    /// content needs.
    #[test]
    fn matches_a_model(ops in prop::collection::vec(op(), 1..400), probe in 0..300u32) {
        for shape in SHAPES {
        let layout = shape.layout;
            let (pool, t) = new_tree(shape);
            let mut m = Model::new();
            for o in &ops {
                apply(&t, &mut m, o);
            }
            prop_assert_eq!(all(&t), model_entries(&m));
            prop_assert_eq!(t.verify().unwrap(), m.len() as u64);
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
            prop_assert_eq!(t.stats().pm_bytes, expected_pm_bytes(layout, &m, &t.stats()));
            let (_p2, t2) = reopen(&pool, CrashImage::Strict, shape).unwrap();
            prop_assert_eq!(all(&t2), model_entries(&m));
            prop_assert_eq!(t2.verify().unwrap(), m.len() as u64);
            prop_assert_eq!(
                t2.stats().pm_bytes,
                expected_pm_bytes(layout, &m, &t2.stats())
            );
        }
    }
}

/// What a step of a fence walk does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Kind {
    Insert,
    Split,
    Update,
    Delete,
    Unlink,
}

/// Crashes at every fence of inserts, splits, updates, deletes and unlinks in `shape` (keys
/// `key_of(0..inserts)`, inserted in order, then a few updated, then every key past the head
/// leaf deleted in order), in the strict, the all-pending and torn images: the reopened tree is
/// the content before or after the operation in flight (never a mix, never a lost
/// acknowledged key), checks clean (its inner nodes too), holds no leaked PM slot, and takes
/// further updates; with PM inner nodes, a read-only open of the strict image reads the same.
/// Every kind of step must have been seen both before and after in some image (so each kind's
/// publishing store was walked). Returns the images checked.
fn fence_walk(
    shape: Shape,
    key_of: fn(u32) -> Vec<u8>,
    inserts: u32,
    torn: u64,
    torn_lines: u64,
) -> u64 {
    let layout = shape.layout;
    let (pool, t) = new_tree(shape);
    let before: Arc<Mutex<Model<Vec<u8>, Vec<u8>>>> = Arc::default();
    let after: Arc<Mutex<Model<Vec<u8>, Vec<u8>>>> = Arc::default();
    let kind_now = Arc::new(Mutex::new(Kind::Insert));
    let seen: Arc<Mutex<Model<(Kind, bool), u64>>> = Arc::default();
    let checked = Arc::new(AtomicU64::new(0));
    {
        let (before, after, checked) = (before.clone(), after.clone(), checked.clone());
        let (kind_now, seen) = (kind_now.clone(), seen.clone());
        let weak = Arc::downgrade(&pool);
        pool.set_fence_hook(Some(Box::new(move |fence| {
            let Some(p) = weak.upgrade() else { return };
            let (b, a) = (
                before.lock().unwrap().clone(),
                after.lock().unwrap().clone(),
            );
            let kind = *kind_now.lock().unwrap();
            for image in CrashImage::at_fence(fence, torn, torn_lines) {
                if shape.inner == InnerKind::Pm && image == CrashImage::Strict {
                    let img = p.crash_image(image).unwrap();
                    let p2 = PmPool::open_crash_image(img, &options()).unwrap();
                    let ro = open_on(&p2, PmFsOpen::Existing(ID), false, shape).unwrap();
                    let got = all(&ro);
                    assert!(got == model_entries(&b) || got == model_entries(&a));
                    assert_eq!(ro.verify().unwrap(), got.len() as u64);
                }
                let (_p2, t2) = reopen(&p, image, shape)
                    .unwrap_or_else(|e| panic!("{shape:?} fence {fence} {image:?}: {e}"));
                let got = all(&t2);
                let (which, is_after) = if got == model_entries(&b) {
                    (&b, false)
                } else if got == model_entries(&a) {
                    (&a, true)
                } else {
                    panic!("{shape:?} fence {fence} {image:?}: neither before nor after");
                };
                *seen.lock().unwrap().entry((kind, is_after)).or_default() += 1;
                assert_eq!(t2.inner_kind(), shape.inner);
                assert_eq!(t2.verify().unwrap(), which.len() as u64);
                assert_eq!(
                    t2.stats().pm_bytes,
                    expected_pm_bytes(layout, which, &t2.stats()),
                    "{shape:?} fence {fence} {image:?}: leaked PM"
                );
                t2.put(b"after the crash", &pay(layout, b"1")).unwrap();
                checked.fetch_add(1, Ordering::SeqCst);
            }
        })));
    }
    let mut m = Model::new();
    let mut step = |t: &PbTree, k: Vec<u8>, v: Option<u8>| {
        // What the step will do to the tree's structure.
        let (sep, at) = t.sep_of(&k).unwrap();
        let filled = t.pm.read_leaf(at).unwrap().bits.count_ones() as usize;
        let kind = match (v.is_some(), m.contains_key(&k)) {
            (true, true) => Kind::Update,
            (true, false) if filled == layout.slots() => Kind::Split,
            (true, false) => Kind::Insert,
            (false, _) if filled == 1 && !sep.is_empty() => Kind::Unlink,
            (false, _) => Kind::Delete,
        };
        // Inline: a word using its top and bottom bytes; Objects: three bytes.
        let payload = v.map(|v| match layout {
            Layout::Inline => (u64::from(v) << 56 | u64::from(v)).to_le_bytes().to_vec(),
            Layout::Objects => vec![v; 3],
        });
        let mut next = m.clone();
        match &payload {
            Some(p) => next.insert(k.clone(), p.clone()),
            None => next.remove(&k),
        };
        *before.lock().unwrap() = m.clone();
        *after.lock().unwrap() = next.clone();
        *kind_now.lock().unwrap() = kind;
        let old = match (layout, payload) {
            // The inline layout through its word interface.
            (Layout::Inline, p) => t
                .upsert_word(&k, |_| {
                    p.map_or(WordOp::Delete, |p| WordOp::Put(word_of(&p)))
                })
                .unwrap()
                .map(|w| w.to_le_bytes().to_vec()),
            (Layout::Objects, Some(p)) => t.put(&k, &p).unwrap(),
            (Layout::Objects, None) => t.delete(&k).unwrap(),
        };
        assert_eq!(old.as_ref(), m.get(&k));
        m = next;
    };
    // Fill leaves and split them, update in the first two, delete everything past the head
    // leaf down to its unlinks.
    let slots = layout.slots() as u32;
    for n in 0..inserts {
        step(&t, key_of(n), Some(1));
    }
    assert!(t.stats().leaves >= 2);
    if shape.inner == InnerKind::Pm && shape.fanout == 2 {
        // A root over level-1 nodes: the walk crossed a root split.
        assert!(t.stats().inner_nodes >= 3, "{:?}", t.stats());
    }
    for n in [slots - 2, slots - 1, 5, 6] {
        step(&t, key_of(n), Some(2 + n as u8));
    }
    let upper: Vec<u32> = (0..inserts)
        .filter(|n| !t.sep_of(&key_of(*n)).unwrap().0.is_empty())
        .collect();
    for &n in &upper {
        step(&t, key_of(n), None);
    }
    assert_eq!(t.stats().leaves, 1, "the split-off leaves were unlinked");
    pool.set_fence_hook(None);
    let seen = seen.lock().unwrap().clone();
    for kind in [
        Kind::Insert,
        Kind::Split,
        Kind::Update,
        Kind::Delete,
        Kind::Unlink,
    ] {
        for is_after in [false, true] {
            assert!(
                seen.get(&(kind, is_after)).copied().unwrap_or(0) > 0,
                "{shape:?}: no image {} a {kind:?}: {seen:?}",
                if is_after { "after" } else { "before" }
            );
        }
    }
    checked.load(Ordering::SeqCst)
}

/// The objects layout's fence walk with DRAM inner nodes: one split.
#[test]
fn a_crash_at_any_fence_leaves_the_tree_before_or_after_the_operation() {
    let shape = OBJECTS_DRAM;
    let checked = fence_walk(shape, |n| key(n, 0), shape.layout.slots() as u32 + 1, 3, 2);
    assert!(checked >= 7 * 100, "too few fences walked: {checked}");
}

/// SLM-DB's global index: PM inner nodes of fanout 2, and keys enough for four leaves, so the
/// walk crosses leaf splits that split the level-1 node and the root (the tree grows a level),
/// and unlinks that empty inner nodes and collapse the root, with torn 8-byte words.
#[test]
fn pm_inner_nodes_a_crash_at_any_fence_leaves_the_tree_before_or_after_the_operation() {
    let shape = Shape {
        fanout: 2,
        ..OBJECTS_PM
    };
    let checked = fence_walk(
        shape,
        |n| key(n, 0),
        2 * shape.layout.slots() as u32 + 4,
        3,
        2,
    );
    assert!(checked >= 7 * 200, "too few fences walked: {checked}");
}

/// The inline layout's fence walk: keys of 11, 23 (the longest in a slot) and 24 bytes (an
/// object), so inserts, the split (slots re-encoded, long keys' objects shared), in-place word
/// updates of both kinds of slot and deletes are all walked, with torn 8-byte words.
#[test]
fn inline_a_crash_at_any_fence_leaves_the_tree_before_or_after_the_operation() {
    let shape = INLINE_DRAM;
    let checked = fence_walk(
        shape,
        |n| key(n, [0, INLINE_KEY - 11, INLINE_KEY - 10][n as usize % 3]),
        shape.layout.slots() as u32 + 1,
        3,
        2,
    );
    assert!(checked >= 7 * 60, "too few fences walked: {checked}");
}
