use super::*;
use crate::fs::{FileSystem, PmFsOpen};
use proptest::prelude::*;
use std::collections::BTreeMap as Model;
use std::sync::atomic::AtomicU64;
use tierkv_pm::{CrashImage, PmPool, PoolOptions};

const ID: u128 = 0x51;

fn options() -> PoolOptions {
    PoolOptions {
        size: 8 << 20,
        chunk_size: 64 << 10,
        ..PoolOptions::default()
    }
}

fn path() -> PathBuf {
    PathBuf::from("/db/000007.log")
}

fn new_table() -> (Arc<PmPool>, PmFs, Arc<PmTable>) {
    let pool = PmPool::create_crash_sim(&options(), true).unwrap();
    let fs = PmFs::open(Arc::clone(&pool), "test", PmFsOpen::Create(ID)).unwrap();
    let t = Arc::new(PmTable::create(&fs, &path(), 7).unwrap());
    (pool, fs, t)
}

/// The memtable in a crash image of `pool`, opened writable.
fn reopen(pool: &PmPool, kind: CrashImage) -> Result<(Arc<PmTable>, PmTableRecovery)> {
    let img = pool.crash_image(kind).unwrap();
    let p2 = PmPool::open_crash_image_checked(img, &options(), true).unwrap();
    let fs = PmFs::open(p2, "img", PmFsOpen::Existing(ID))?;
    let (t, rec) = PmTable::open(&fs, &path(), 7, true)?;
    Ok((Arc::new(t), rec))
}

/// Every entry, in order: (internal key, value).
fn all(t: &Arc<PmTable>) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = t.iter();
    it.seek_to_first();
    let mut out = Vec::new();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().unwrap();
    out
}

fn ikey(key: &[u8], seq: u64, t: ValueType) -> Vec<u8> {
    let mut k = key.to_vec();
    k.extend_from_slice(&pack_trailer(seq, t).to_le_bytes());
    k
}

/// The model: internal key -> value, in the engine's order.
type Entries = Model<IKey, Vec<u8>>;

fn model_all(m: &Entries) -> Vec<(Vec<u8>, Vec<u8>)> {
    m.iter().map(|(k, v)| (k.0.clone(), v.clone())).collect()
}

fn model_get(m: &Entries, key: &[u8], snapshot: u64) -> LookupResult {
    let target = crate::format::OrderedKey(ikey(key, snapshot, ValueType::Value));
    match m.range(target..).next() {
        Some((k, v)) if &k.0[..k.0.len() - TRAILER_LEN] == key => {
            match ValueType::from_u8(k.0[k.0.len() - TRAILER_LEN]) {
                Some(ValueType::Value) => LookupResult::Found(v.clone()),
                _ => LookupResult::Deleted,
            }
        }
        _ => LookupResult::Absent,
    }
}

#[test]
fn adds_gets_and_iterates_in_internal_key_order() {
    let (_pool, _fs, t) = new_table();
    t.add(1, ValueType::Value, b"b", b"b1", false).unwrap();
    t.add(2, ValueType::Value, b"a", b"a2", false).unwrap();
    t.add(3, ValueType::Deletion, b"b", b"", false).unwrap();
    t.add(4, ValueType::Value, b"b", b"b4", false).unwrap();
    t.commit(4, false).unwrap();
    assert_eq!(t.get(b"b", 4).unwrap(), LookupResult::Found(b"b4".to_vec()));
    assert_eq!(t.get(b"b", 3).unwrap(), LookupResult::Deleted);
    assert_eq!(t.get(b"b", 2).unwrap(), LookupResult::Found(b"b1".to_vec()));
    assert_eq!(t.get(b"b", 0).unwrap(), LookupResult::Absent);
    assert_eq!(t.get(b"c", 9).unwrap(), LookupResult::Absent);
    let keys: Vec<Vec<u8>> = all(&t).into_iter().map(|e| e.0).collect();
    assert_eq!(
        keys,
        vec![
            ikey(b"a", 2, ValueType::Value),
            ikey(b"b", 4, ValueType::Value),
            ikey(b"b", 3, ValueType::Deletion),
            ikey(b"b", 1, ValueType::Value),
        ]
    );
    let mut it = t.iter();
    it.seek(&ikey(b"b", 3, ValueType::Value));
    assert_eq!(it.key(), ikey(b"b", 3, ValueType::Deletion));
    assert_eq!((t.len(), t.verify().unwrap()), (4, 4));
    t.freeze();
    assert!(t.add(5, ValueType::Value, b"c", b"", false).is_err());
}

#[derive(Clone, Debug)]
struct Batch(Vec<(u16, bool, usize)>);

fn batch() -> impl Strategy<Value = Batch> {
    prop::collection::vec((0..200u16, any::<bool>(), 0..300usize), 1..6).prop_map(Batch)
}

/// The writes of `b` from sequence `seq` on: (user key, sequence, type, value).
fn writes(b: &Batch, seq: u64) -> Vec<(Vec<u8>, u64, ValueType, Vec<u8>)> {
    (seq..)
        .zip(&b.0)
        .map(|(s, &(k, del, vlen))| {
            let key = format!("user-key-{k:05}").into_bytes();
            if del {
                (key, s, ValueType::Deletion, Vec::new())
            } else {
                (key, s, ValueType::Value, vec![k as u8; vlen])
            }
        })
        .collect()
}

/// Applies `b` from sequence `seq` on; returns the next sequence.
fn apply(t: &PmTable, m: &mut Entries, b: &Batch, seq: u64) -> u64 {
    let w = writes(b, seq);
    for (key, s, ty, val) in &w {
        t.add(*s, *ty, key, val, false).unwrap();
        m.insert(crate::format::OrderedKey(ikey(key, *s, *ty)), val.clone());
    }
    let last = seq + w.len() as u64 - 1;
    t.commit(last, false).unwrap();
    last + 1
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Batches of puts and deletes: gets at every snapshot and the iteration match a model,
    /// before and after a reopen.
    #[test]
    fn matches_a_model(batches in prop::collection::vec(batch(), 1..60), probe in 0..200u16) {
        let (pool, _fs, t) = new_table();
        let mut m = Entries::new();
        let mut seq = 1;
        for b in &batches {
            seq = apply(&t, &mut m, b, seq);
        }
        prop_assert_eq!(all(&t), model_all(&m));
        let key = format!("user-key-{probe:05}").into_bytes();
        for snap in [0, seq / 3, seq / 2, seq] {
            prop_assert_eq!(t.get(&key, snap).unwrap(), model_get(&m, &key, snap));
        }
        let (t2, rec) = reopen(&pool, CrashImage::Strict).unwrap();
        prop_assert_eq!(rec.dropped, 0);
        prop_assert_eq!(rec.committed, seq - 1);
        prop_assert_eq!(all(&t2), model_all(&m));
        prop_assert_eq!(t2.get(&key, seq).unwrap(), model_get(&m, &key, seq));
        prop_assert_eq!(t2.len(), t.len());
    }
}

/// A crash at every fence of a run of batches, in the strict, all-pending and torn images: the
/// reopened memtable holds exactly the batches committed before the crash, or those and the
/// batch in flight, never part of a batch; it checks clean.
#[test]
fn a_crash_at_any_fence_keeps_whole_batches() {
    let (pool, _fs, t) = new_table();
    let before: Arc<Mutex<Entries>> = Arc::default();
    let after: Arc<Mutex<Entries>> = Arc::default();
    let checked = Arc::new(AtomicU64::new(0));
    let dropped = Arc::new(AtomicU64::new(0));
    {
        let (before, after, checked, dropped) = (
            before.clone(),
            after.clone(),
            checked.clone(),
            dropped.clone(),
        );
        let weak = Arc::downgrade(&pool);
        pool.set_fence_hook(Some(Box::new(move |fence| {
            let Some(p) = weak.upgrade() else { return };
            let (b, a) = (before.lock().clone(), after.lock().clone());
            let kinds = CrashImage::at_fence(fence, 3, 2);
            for kind in kinds {
                let (t2, rec) =
                    reopen(&p, kind).unwrap_or_else(|e| panic!("fence {fence} {kind:?}: {e}"));
                let got = all(&t2);
                assert!(
                    got == model_all(&b) || got == model_all(&a),
                    "fence {fence} {kind:?}: part of a batch"
                );
                assert_eq!(t2.verify().unwrap(), got.len() as u64);
                dropped.fetch_add(rec.dropped, std::sync::atomic::Ordering::SeqCst);
                checked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        })));
    }
    let mut m = Entries::new();
    let mut seq = 1;
    for i in 0..12u16 {
        let b = Batch(
            (0..4)
                .map(|j| ((i * 7 + j * 13) % 20, j == 2, 40))
                .collect(),
        );
        *before.lock() = m.clone();
        let mut next = m.clone();
        for (key, seq, ty, val) in writes(&b, seq) {
            next.insert(crate::format::OrderedKey(ikey(&key, seq, ty)), val);
        }
        *after.lock() = next;
        seq = apply(&t, &mut m, &b, seq);
    }
    pool.set_fence_hook(None);
    assert!(checked.load(std::sync::atomic::Ordering::SeqCst) >= 12 * 9 * 7);
    assert!(
        dropped.load(std::sync::atomic::Ordering::SeqCst) > 0,
        "no image had a half-linked batch to drop"
    );
}

/// Damage to the head, a next word, a key or a value is corruption naming the file.
#[test]
fn damage_is_reported_as_corruption() {
    let (pool, fs, t) = new_table();
    let mut m = Entries::new();
    apply(
        &t,
        &mut m,
        &Batch(vec![(1, false, 100), (2, false, 100)]),
        1,
    );
    let first = t.next_of(0).unwrap();
    let h = t.head_of(first).unwrap();
    let cases = [
        ("magic", 16),
        ("commit word", COMMIT_AT),
        ("next word", first + 2),
        ("key", first + NODE_HEADER as u64),
        (
            "value",
            first + NODE_HEADER as u64 + u64::from(h.key_len) + 3,
        ),
    ];
    drop(fs);
    for (what, file_offset) in cases {
        let mut img = pool.crash_image(CrashImage::Strict).unwrap();
        // The file's first chunk: find it through a fresh open of the image.
        let p2 = PmPool::open_crash_image(img.clone(), &options()).unwrap();
        let fs2 = PmFs::open(Arc::clone(&p2), "img", PmFsOpen::Existing(ID)).unwrap();
        let at = fs2.pool_offset_of(&path(), file_offset).unwrap();
        drop(fs2);
        img[at as usize] ^= 0x04;
        let p3 = PmPool::open_crash_image(img, &options()).unwrap();
        let fs3 = PmFs::open(p3, "img", PmFsOpen::Existing(ID)).unwrap();
        match PmTable::open(&fs3, &path(), 7, false) {
            Err(Error::Corruption { location, .. }) => {
                assert!(location.contains("000007.log"), "{what}: {location}")
            }
            Err(e) => panic!("{what}: {e}"),
            Ok(_) => panic!("{what}: damage not found"),
        }
        assert!(fs3.exists(&path()));
    }
}

/// A crash at any fence of the memtable's creation leaves no file, or a file that opens as an
/// empty memtable.
#[test]
fn a_crash_inside_create_leaves_an_empty_memtable() {
    let pool = PmPool::create_crash_sim(&options(), true).unwrap();
    let _fs = PmFs::open(Arc::clone(&pool), "test", PmFsOpen::Create(ID)).unwrap();
    let checked = Arc::new(AtomicU64::new(0));
    {
        let checked = checked.clone();
        let weak = Arc::downgrade(&pool);
        pool.set_fence_hook(Some(Box::new(move |fence| {
            let Some(p) = weak.upgrade() else { return };
            let kinds = CrashImage::at_fence(fence, 6, 0);
            for kind in kinds {
                let img = p.crash_image(kind).unwrap();
                let p2 = PmPool::open_crash_image(img, &options()).unwrap();
                let fs = PmFs::open(p2, "img", PmFsOpen::Existing(ID)).unwrap();
                if !fs.exists(&path()) {
                    continue;
                }
                let (t, rec) = PmTable::open(&fs, &path(), 7, true)
                    .unwrap_or_else(|e| panic!("fence {fence} {kind:?}: {e}"));
                assert_eq!((rec.entries, t.verify().unwrap()), (0, 0));
                assert!(all(&Arc::new(t)).is_empty());
                checked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        })));
    }
    let t = PmTable::create(&_fs, &path(), 7).unwrap();
    pool.set_fence_hook(None);
    assert!(t.is_empty());
    assert!(checked.load(std::sync::atomic::Ordering::SeqCst) > 0);
}
