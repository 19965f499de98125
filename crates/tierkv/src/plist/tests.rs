use super::*;
use crate::format::{make_internal_key, ValueType};
use crate::fs::open_pm_owners;
use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::Mutex as StdMutex;
use tierkv_pm::{CrashImage, PoolOptions};

const ID: u128 = 0x15d;

fn options() -> PoolOptions {
    PoolOptions {
        size: 4 << 20,
        chunk_size: 64 << 10,
        ..PoolOptions::default()
    }
}

fn open_on(pool: &Arc<PmPool>, how: PmFsOpen, writable: bool) -> Result<(Arc<ListHeap>, Vec<u64>)> {
    let mut owner = HeapOwner::new(Arc::clone(pool), "test pool");
    open_pm_owners(pool, "test pool", how, &mut [&mut owner])?;
    owner.into_heap(writable)
}

type Content = BTreeMap<Vec<u8>, Vec<u8>>;

/// What the heap holds: every list's entries and the log entries to replay, as internal key
/// -> value (a node reached from two chains counts once). Each list iterates in order.
fn content(heap: &Arc<ListHeap>, log: &[u64]) -> Content {
    let mut out = Content::new();
    let set = heap.lists();
    for l in set.l0.iter().chain(std::iter::once(&set.l1)) {
        let mut it = ListIter::new(Arc::clone(heap), Arc::clone(l));
        it.seek_to_first();
        let mut prev: Option<Vec<u8>> = None;
        while it.valid() {
            if let Some(p) = &prev {
                assert_eq!(
                    compare_internal(p, it.key()),
                    Cmp::Less,
                    "list out of order"
                );
            }
            prev = Some(it.key().to_vec());
            out.insert(it.key().to_vec(), it.value().to_vec());
            it.next();
        }
        it.status().unwrap();
    }
    for &at in log {
        let (k, v) = heap.entry_of(at).unwrap();
        out.insert(k, v);
    }
    out
}

/// A test driver: the heap, its unflushed log entries (the memtable) and the model.
struct Driver {
    heap: Arc<ListHeap>,
    mem: Vec<(Vec<u8>, u64)>,
    seq: u64,
}

impl Driver {
    fn put(&mut self, batch: &[(Vec<u8>, Vec<u8>)]) -> Content {
        let entries: Vec<NewEntry<'_>> = batch
            .iter()
            .enumerate()
            .map(|(i, (k, v))| NewEntry {
                seq: self.seq + 1 + i as u64,
                kind: ValueType::Value as u8,
                key: k,
                value: v,
            })
            .collect();
        let ats = self.heap.append(&entries).unwrap();
        let mut added = Content::new();
        for (i, ((k, v), at)) in batch.iter().zip(ats).enumerate() {
            let ikey = make_internal_key(k, self.seq + 1 + i as u64, ValueType::Value);
            added.insert(ikey.clone(), v.clone());
            self.mem.push((ikey, at));
        }
        self.seq += batch.len() as u64;
        added
    }

    fn flush(&mut self) {
        let mut nodes = std::mem::take(&mut self.mem);
        nodes.sort_by(|a, b| compare_internal(&a.0, &b.0));
        let end = self.heap.tail_position();
        self.heap.publish_l0(&nodes, end, 0).unwrap();
    }
}

/// A new crash-simulation pool holding a new, empty heap, and a driver over it.
fn new_heap() -> (Arc<PmPool>, Driver) {
    let pool = PmPool::create_crash_sim(&options(), true).unwrap();
    let (heap, _) = open_on(&pool, PmFsOpen::Create(ID), true).unwrap();
    let d = Driver {
        heap,
        mem: Vec::new(),
        seq: 0,
    };
    (pool, d)
}

fn key(i: u32) -> Vec<u8> {
    format!("key{:05}", (i * 7919) % 1000).into_bytes()
}

#[test]
fn flushes_and_zips_keep_every_version_in_order_and_survive_reopen() {
    let (pool, mut d) = new_heap();
    assert!(d.heap.log_entries(0).unwrap().is_empty());
    let mut model = Content::new();
    for round in 0..6u32 {
        for i in 0..150u32 {
            let v = vec![round as u8; 40 + (i as usize % 300)];
            model.extend(d.put(&[(key(i + round * 37), v)]));
        }
        d.flush();
        if round % 2 == 1 {
            assert_eq!(d.heap.zip_all().unwrap().len(), 2);
            assert!(d.heap.lists().l0.is_empty());
        }
        assert_eq!(content(&d.heap, &[]), model);
    }
    // Unflushed writes are in the log; more than one chunk was filled.
    for i in 0..20u32 {
        model.extend(d.put(&[
            (key(i), b"late".to_vec()),
            (key(i + 500), b"late2".to_vec()),
        ]));
    }
    assert!(d.heap.chunk_count() > 3);
    // A get at a sequence finds the version visible at it.
    let l1 = d.heap.lists().l1;
    let probe = key(37);
    let (_, k, _) = d
        .heap
        .seek(&l1, &crate::format::lookup_key(&probe, 200))
        .unwrap()
        .unwrap();
    let newest_at_200 = model
        .keys()
        .filter(|k| crate::format::user_key(k) == probe)
        .filter(|k| crate::format::parse_internal_key(k).unwrap().sequence <= 200)
        .max_by_key(|k| crate::format::parse_internal_key(k).unwrap().sequence)
        .cloned();
    assert_eq!(Some(k), newest_at_200);
    let seq = d.seq;
    drop(d);
    let img = pool.crash_image(CrashImage::Strict).unwrap();
    let p2 = PmPool::open_crash_image_checked(img, &options(), true).unwrap();
    let (h2, log2) = open_on(&p2, PmFsOpen::Existing(ID), true).unwrap();
    assert_eq!(log2.len(), 40);
    assert_eq!(h2.max_seq_at_open(), seq);
    assert_eq!(content(&h2, &log2), model);
    assert_eq!(h2.verify().unwrap(), (model.len() - 40) as u64);
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    Append,
    NewChunk,
    Publish,
    Zip,
}

/// Crashes at every fence of appends (one of them opening a new chunk), a flush into an L0
/// list and a zipper compaction, in the strict, all-pending and torn images: the reopened
/// heap holds exactly the content before or after the step in flight (appends: all of a
/// batch or none of it; a flush or a zip moves entries without changing the content), its
/// lists iterate in order and verify, and it takes more writes, a flush and a zip.
#[test]
fn a_crash_at_any_fence_leaves_the_content_before_or_after_the_step() {
    let (pool, mut d) = new_heap();
    let before: Arc<StdMutex<Content>> = Arc::default();
    let after: Arc<StdMutex<Content>> = Arc::default();
    let step_now = Arc::new(StdMutex::new(Step::Append));
    let seen: Arc<StdMutex<BTreeMap<(Step, bool), u64>>> = Arc::default();
    let checked = Arc::new(AtomicU64::new(0));
    // A first L1 and a first L0 list, written before the walk.
    let mut model = Content::new();
    for i in 0..40u32 {
        model.extend(d.put(&[(key(i * 3), vec![1; 100])]));
    }
    d.flush();
    d.heap.zip_all().unwrap();
    for i in 0..30u32 {
        model.extend(d.put(&[(key(i * 5 + 1), vec![2; 100])]));
    }
    d.flush();
    {
        let (before, after, step_now) = (before.clone(), after.clone(), step_now.clone());
        let (seen, checked) = (seen.clone(), checked.clone());
        let weak = Arc::downgrade(&pool);
        pool.set_fence_hook(Some(Box::new(move |fence| {
            let Some(p) = weak.upgrade() else { return };
            let (b, a) = (
                before.lock().unwrap().clone(),
                after.lock().unwrap().clone(),
            );
            let step = *step_now.lock().unwrap();
            for image in CrashImage::at_fence(fence, 2, 1) {
                let img = p.crash_image(image).unwrap();
                let p2 = PmPool::open_crash_image_checked(img, &options(), true).unwrap();
                let (h2, log) = open_on(&p2, PmFsOpen::Existing(ID), true)
                    .unwrap_or_else(|e| panic!("{step:?} fence {fence} {image:?}: {e}"));
                let got = content(&h2, &log);
                let is_after = if got == b {
                    false
                } else if got == a {
                    true
                } else {
                    panic!("{step:?} fence {fence} {image:?}: neither before nor after");
                };
                *seen.lock().unwrap().entry((step, is_after)).or_default() += 1;
                h2.verify().unwrap();
                // It takes more: a write, its flush, a zip.
                let mut d2 = Driver {
                    heap: Arc::clone(&h2),
                    mem: Vec::new(),
                    seq: h2.max_seq_at_open(),
                };
                for &at in &log {
                    let (k, _) = h2.entry_of(at).unwrap();
                    d2.mem.push((k, at));
                }
                let mut want = got.clone();
                want.extend(d2.put(&[(b"after".to_vec(), vec![9; 600])]));
                d2.flush();
                h2.zip_all().unwrap();
                assert_eq!(content(&h2, &[]), want, "{step:?} fence {fence} {image:?}");
                h2.verify().unwrap();
                checked.fetch_add(1, Ordering::SeqCst);
            }
        })));
    }
    // An append's content after it is known before its fences: the batch is staged first.
    let seq_stage =
        |d: &mut Driver, batch: Vec<(Vec<u8>, Vec<u8>)>, step: Step, model: &Content| {
            let mut next = model.clone();
            for (i, (k, v)) in batch.iter().enumerate() {
                next.insert(
                    make_internal_key(k, d.seq + 1 + i as u64, ValueType::Value),
                    v.clone(),
                );
            }
            *before.lock().unwrap() = model.clone();
            *after.lock().unwrap() = next.clone();
            *step_now.lock().unwrap() = step;
            let got = d.put(&batch);
            let mut check = model.clone();
            check.extend(got);
            assert_eq!(check, next);
            next
        };
    let mut m = model;
    m = seq_stage(
        &mut d,
        vec![(b"a1".to_vec(), vec![3; 50]), (b"a2".to_vec(), vec![4; 70])],
        Step::Append,
        &m,
    );
    // Fill the chunk until the next batch opens a new one.
    let chunks = d.heap.chunk_count();
    let mut i = 0u32;
    while d.heap.chunk_count() == chunks {
        let batch = vec![
            (key(i * 11 + 2), vec![5; 900]),
            (key(i * 13 + 3), vec![6; 900]),
        ];
        let step = if i > 200 {
            Step::Append
        } else {
            Step::NewChunk
        };
        m = seq_stage(&mut d, batch, step, &m);
        i += 1;
    }
    // A flush and a zip: the content stays.
    *before.lock().unwrap() = m.clone();
    *after.lock().unwrap() = m.clone();
    *step_now.lock().unwrap() = Step::Publish;
    d.flush();
    *step_now.lock().unwrap() = Step::Zip;
    assert_eq!(d.heap.zip_all().unwrap().len(), 2);
    pool.set_fence_hook(None);
    assert_eq!(content(&d.heap, &[]), m);
    let seen = seen.lock().unwrap().clone();
    for step in [Step::Append, Step::NewChunk] {
        assert!(
            seen.contains_key(&(step, false)),
            "{step:?} before: {seen:?}"
        );
        assert!(seen.contains_key(&(step, true)), "{step:?} after: {seen:?}");
    }
    assert!(seen.contains_key(&(Step::Publish, false)), "{seen:?}");
    assert!(seen.contains_key(&(Step::Zip, false)), "{seen:?}");
    assert!(checked.load(Ordering::SeqCst) > 50);
}

/// A damaged byte of a node, of a chunk header or of the meta chunk is reported at open as
/// corruption naming the heap, never returned as data.
#[test]
fn damage_is_reported_at_open() {
    let (pool, mut d) = new_heap();
    for i in 0..50u32 {
        d.put(&[(key(i), vec![7; 30])]);
    }
    d.flush();
    d.heap.zip_all().unwrap();
    for i in 0..10u32 {
        d.put(&[(key(i + 100), vec![8; 30])]);
    }
    let first_chunk = {
        let chunks = d.heap.chunks.read();
        *chunks.values().next().unwrap()
    };
    let meta = d.heap.meta;
    let l1_first = d.heap.next_of(meta + L1_HEAD_AT).unwrap();
    drop(d);
    let img = pool.crash_image(CrashImage::Strict).unwrap();
    // Bytes to flip: the meta chunk's magic, the L1 head word, a chunk header, a node's key,
    // its value, a log entry's value (the last entry written).
    let last = {
        let p = PmPool::open_crash_image_checked(img.clone(), &options(), true).unwrap();
        let (h, log) = open_on(&p, PmFsOpen::Existing(ID), false).unwrap();
        assert_eq!(log.len(), 10);
        let _ = h;
        *log.last().unwrap()
    };
    for at in [
        meta + 3,
        meta + L1_HEAD_AT + 2,
        first_chunk + 9,
        l1_first + NODE_HEADER as u64 + 1,
        l1_first + NODE_HEADER as u64 + 12,
        last + NODE_HEADER as u64 + 15,
    ] {
        let mut bad = img.clone();
        bad[at as usize] ^= 0x20;
        let p = PmPool::open_crash_image_checked(bad, &options(), true).unwrap();
        match open_on(&p, PmFsOpen::Existing(ID), false).and_then(|(h, log)| {
            h.verify()?;
            for at in log {
                h.entry_of(at)?;
            }
            Ok(())
        }) {
            Err(Error::Corruption { .. }) => {}
            other => panic!("flip at {at}: {:?}", other.err()),
        }
    }
}
