//! Tests of the sorted array and the Skip-Array Tree cascade: round trips against a sorted
//! `Vec` model, corruption and truncation, property tests of pointers and searches against
//! brute force, the paper's Fig. 5 and Fig. 7, the reads a cascading search saves, and row
//! chains (TriangleKV's cross-row hints) against brute force.

use super::builder::ArraySummary;
use super::cascade::{
    cascade_get_traced, chain_get, chain_get_traced, chain_seek, verify_row_hints, Step,
};
use super::live::{first_live, window, RowDead, Window};
use super::*;
use crate::format::{
    compare_internal, lookup_key, make_internal_key, user_key, ValueType, MAX_SEQUENCE,
};
use crate::fs::{FileSystem, MemFs, WritableFile};
use crate::iterator::InternalIterator;
use crate::stats::{Counters, IoPurpose, Part};
use crate::tier::Tier;
use crate::version::{KeyRange, RowInfo};
use crate::{Error, Result};
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::path::{Path, PathBuf};
use std::sync::Arc;

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

const READ: IoPurpose = IoPurpose::UserRead;

fn mem_fs() -> MemFs {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/a")).unwrap();
    fs
}

/// Writes `entries` (sorted, with their pointers) as an array at `path`.
fn build(
    fs: &MemFs,
    path: &Path,
    entries: &[(Vec<u8>, Vec<u8>, Option<NextPtr>)],
    bits_per_key: usize,
    floor_slot: Option<u8>,
) -> ArraySummary {
    let file = fs.create(path).unwrap();
    let mut b = ArrayBuilder::new(file, path.to_path_buf(), bits_per_key, floor_slot);
    for (k, v, n) in entries {
        b.add(k, v, *n).unwrap();
    }
    assert_eq!(b.num_entries(), entries.len() as u64);
    let estimate = b.file_size_estimate();
    let s = b.finish().unwrap();
    assert_eq!(s.file_size, estimate, "the estimate is exact at the end");
    assert_eq!(s.file_size, fs.file_size(path).unwrap());
    s
}

fn open(fs: &MemFs, path: &Path, counters: &Arc<Counters>) -> Result<Arc<PmArray>> {
    let file = fs.open_readable(path)?;
    PmArray::open(
        file,
        path.to_path_buf(),
        counters.clone(),
        Tier::Pm,
        Part::Stage(1),
        IoPurpose::UserRead,
    )
}

fn no_pointers(e: &Entries) -> Vec<(Vec<u8>, Vec<u8>, Option<NextPtr>)> {
    e.iter()
        .map(|(k, v)| (k.clone(), v.clone(), None))
        .collect()
}

fn lower_bound_model(e: &Entries, target: &[u8]) -> u32 {
    e.partition_point(|(k, _)| compare_internal(k, target).is_lt()) as u32
}

fn bytes_read(c: &Counters, purpose: IoPurpose) -> u64 {
    c.io_counts()
        .iter()
        .filter(|x| x.tier == Tier::Pm && x.purpose == purpose.name())
        .map(|x| x.read)
        .sum()
}

fn collect(it: &mut ArrayIterator) -> Entries {
    let mut got = Vec::new();
    while it.valid() {
        got.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    got
}

/// Random user keys of 0..=40 bytes: plain random bytes, keys sharing one of a few 16- to
/// 24-byte prefixes (equal heads, decided by the data area), keys that are prefixes of each
/// other, and the empty key; 1..=3 versions each with distinct sequences, some deletions,
/// values of 0..300 bytes.
fn random_entries(rng: &mut StdRng, n_keys: usize) -> Entries {
    let prefixes: Vec<Vec<u8>> = (0..4)
        .map(|i| {
            (0..16 + 3 * i)
                .map(|_| rng.gen_range(b'a'..=b'c'))
                .collect()
        })
        .collect();
    let mut user_keys = vec![Vec::new()];
    while user_keys.len() < n_keys {
        let k: Vec<u8> = match rng.gen_range(0..4) {
            0 => (0..rng.gen_range(0..=40)).map(|_| rng.gen()).collect(),
            1 => (0..rng.gen_range(0..=16))
                .map(|_| rng.gen_range(0..4))
                .collect(),
            _ => {
                let mut k = prefixes[rng.gen_range(0..prefixes.len())].clone();
                let extra = rng.gen_range(0..=(40 - k.len()));
                k.extend((0..extra).map(|_| rng.gen_range(b'a'..=b'b')));
                k
            }
        };
        user_keys.push(k);
    }
    let mut e = Vec::new();
    for uk in user_keys {
        for _ in 0..rng.gen_range(1..=3) {
            let seq = rng.gen_range(1..1_000_000);
            if rng.gen_bool(0.2) {
                e.push((make_internal_key(&uk, seq, ValueType::Deletion), vec![]));
            } else {
                let v = (0..rng.gen_range(0..300)).map(|_| rng.gen()).collect();
                e.push((make_internal_key(&uk, seq, ValueType::Value), v));
            }
        }
    }
    e.sort_by(|a, b| compare_internal(&a.0, &b.0));
    e.dedup_by(|a, b| a.0 == b.0);
    e
}

/// Search targets for `e`: every key, lookups of every user key at several snapshots, keys
/// between and around the user keys.
fn targets(e: &Entries) -> Vec<Vec<u8>> {
    let mut t = Vec::new();
    for (k, _) in e {
        let uk = user_key(k);
        t.push(k.clone());
        for snap in [MAX_SEQUENCE, 500_000, 0] {
            t.push(lookup_key(uk, snap));
        }
        let mut after = uk.to_vec();
        after.push(0);
        t.push(lookup_key(&after, MAX_SEQUENCE));
        if let Some((last, init)) = uk.split_last() {
            let mut before = init.to_vec();
            before.push(last.wrapping_sub(1));
            t.push(lookup_key(&before, 7));
        }
    }
    t.push(lookup_key(&[0xff; 41], MAX_SEQUENCE));
    t
}

#[test]
fn parray_round_trip_matches_sorted_model() {
    for (seed, bits) in [(1u64, 10usize), (2, 0), (3, 1)] {
        let mut rng = StdRng::seed_from_u64(seed);
        let e = random_entries(&mut rng, 300);
        let fs = mem_fs();
        let path = PathBuf::from("/a/000001.arr");
        let s = build(&fs, &path, &no_pointers(&e), bits, None);
        assert_eq!(s.num_entries, e.len() as u64);
        assert_eq!((&s.smallest, &s.largest), (&e[0].0, &e[e.len() - 1].0));
        let c = Arc::new(Counters::default());
        let a = open(&fs, &path, &c).unwrap();
        let opened = bytes_read(&c, READ);
        // Footer, index and filter: nothing else is read at open.
        let data_len: u64 = e.iter().map(|(k, v)| (k.len() + v.len()) as u64).sum();
        assert_eq!(opened, s.file_size - data_len);
        assert_eq!(a.len() as usize, e.len());
        assert_eq!(a.floor_slot(), None);
        assert!(!a.has_pointers());
        assert_eq!(a.file_size(), s.file_size);
        assert_eq!(a.path(), path);
        assert_eq!(a.filter_bytes() > 0, bits > 0);
        assert_eq!(a.verify(IoPurpose::Recovery).unwrap(), e.len() as u64);

        let mut data_offset = 0u32;
        for (i, (k, v)) in e.iter().enumerate() {
            let i = i as u32;
            assert_eq!(a.read(i, READ).unwrap(), (k.clone(), v.clone()));
            let ent = a.entry(i, READ).unwrap();
            let uk = user_key(k);
            assert_eq!(ent.head, pad_head(uk));
            assert_eq!(ent.user_key_len as usize, uk.len());
            assert_eq!(ent.trailer, crate::format::trailer(k));
            assert_eq!(
                (ent.data_offset, ent.value_len),
                (data_offset, v.len() as u32)
            );
            assert_eq!(ent.next, None);
            data_offset += (k.len() + v.len()) as u32;
            assert!(a.may_contain(uk));
        }
        assert!(matches!(
            a.entry(e.len() as u32, READ),
            Err(Error::InvalidArgument(_))
        ));

        let mut it = a.iter(READ);
        it.seek_to_first();
        assert_eq!(collect(&mut it), e);
        it.status().unwrap();
        let len = a.len();
        let all_targets = targets(&e);
        let mut decided_by_data = 0;
        for (j, t) in all_targets.iter().enumerate() {
            let want = lower_bound_model(&e, t);
            let before = bytes_read(&c, READ);
            assert_eq!(a.lower_bound(t, 0, len, READ).unwrap(), want);
            // A search reads whole entries unless some head could not decide.
            if !(bytes_read(&c, READ) - before).is_multiple_of(ENTRY_LEN as u64) {
                decided_by_data += 1;
            }
            // Sub-ranges: the answer is clamped to [lo, hi].
            let lo = rng.gen_range(0..=len);
            let hi = rng.gen_range(lo..=len);
            assert_eq!(a.lower_bound(t, lo, hi, READ).unwrap(), want.clamp(lo, hi));
            let i = (j as u32) % len;
            assert_eq!(
                a.compare(i, t, READ).unwrap(),
                compare_internal(&e[i as usize].0, t)
            );
            if j % 5 == 0 {
                it.seek(t);
                let rest: Entries = e[want as usize..].iter().take(4).cloned().collect();
                let got: Entries = (0..rest.len())
                    .map(|_| {
                        let kv = (it.key().to_vec(), it.value().to_vec());
                        it.next();
                        kv
                    })
                    .collect();
                assert_eq!(got, rest);
                if want == len {
                    assert!(!it.valid());
                }
            }
        }
        // Both kinds of comparison were exercised.
        assert!(decided_by_data > 0 && decided_by_data < all_targets.len());
        it.seek_to_index(len - 1, None);
        assert_eq!((it.key(), it.position()), (&e[e.len() - 1].0[..], len - 1));
        it.next();
        assert!(!it.valid());
        it.seek_to_index(len, None);
        assert!(!it.valid());
        it.status().unwrap();
        assert!(a.lower_bound(b"short", 0, len, READ).is_err());
        assert!(a.lower_bound(&e[0].0, 1, 0, READ).is_err());
        it.seek_to_index(len + 1, None);
        assert!(it.status().is_err());
    }
}

#[test]
fn parray_builder_refuses_bad_input() {
    let fs = mem_fs();
    let k = |s: &[u8]| make_internal_key(s, 1, ValueType::Value);
    let new = |slot| {
        let p = PathBuf::from("/a/x.arr");
        ArrayBuilder::new(fs.create(&p).unwrap(), p, 10, slot)
    };
    let invalid = |r: Result<()>| assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
    let empty = new(Some(1)).finish();
    assert!(matches!(empty, Err(Error::InvalidArgument(_))));
    let mut b = new(None);
    invalid(b.add(b"short", b"", None));
    invalid(b.add(
        &k(b"a"),
        b"",
        Some(NextPtr {
            floor: 0,
            offset: 0,
        }),
    ));
    let mut b = new(Some(2));
    invalid(b.add(
        &k(b"a"),
        b"",
        Some(NextPtr {
            floor: 2,
            offset: 0,
        }),
    ));
    b.add(
        &k(b"a"),
        b"",
        Some(NextPtr {
            floor: 1,
            offset: 5,
        }),
    )
    .unwrap();
    invalid(new(Some(NO_FLOOR)).add(&k(b"a"), b"", None));
}

/// A file that keeps only its size: for the 4 GiB limit without 4 GiB of memory.
struct NullFile(u64);

impl WritableFile for NullFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.0 += data.len() as u64;
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
    fn size(&self) -> u64 {
        self.0
    }
}

#[test]
fn parray_builder_refuses_data_past_4_gib() {
    let value = vec![0u8; 256 << 20];
    let mut b = ArrayBuilder::new(Box::new(NullFile(0)), PathBuf::from("/big"), 0, None);
    let mut added = 0u64;
    for i in 0u32.. {
        let key = make_internal_key(&i.to_be_bytes(), 1, ValueType::Value);
        match b.add(&key, &value, None) {
            Ok(()) => added += (key.len() + value.len()) as u64,
            Err(Error::InvalidArgument(m)) => {
                assert!(m.contains("4 GiB"), "{m}");
                break;
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert!(added <= u32::MAX as u64 && added + (256 << 20) > u32::MAX as u64);
    assert_eq!(b.num_entries(), 15);
    let s = b.finish().unwrap();
    assert_eq!(s.num_entries, 15);
}

/// A small array with every feature: short keys, long keys sharing their 16-byte head (whose
/// comparisons read the data area), several versions, a deletion, pointers, a filter.
fn small_array_entries() -> Vec<(Vec<u8>, Vec<u8>, Option<NextPtr>)> {
    let long = |s: &str| format!("a-long-shared-head-{s}").into_bytes();
    let mut e = vec![
        (
            make_internal_key(b"", 4, ValueType::Value),
            b"empty".to_vec(),
        ),
        (make_internal_key(b"b", 9, ValueType::Value), b"b9".to_vec()),
        (make_internal_key(b"b", 3, ValueType::Deletion), vec![]),
        (
            make_internal_key(&long("x"), 8, ValueType::Value),
            b"lx8".to_vec(),
        ),
        (
            make_internal_key(&long("x"), 2, ValueType::Value),
            b"lx2".to_vec(),
        ),
        (
            make_internal_key(&long("y"), 5, ValueType::Value),
            b"ly5".to_vec(),
        ),
        (
            make_internal_key(&long("yy"), 5, ValueType::Value),
            b"lyy".to_vec(),
        ),
        (
            make_internal_key(b"zz", 1, ValueType::Value),
            b"zz".to_vec(),
        ),
    ];
    e.sort_by(|a, b| compare_internal(&a.0, &b.0));
    e.into_iter()
        .enumerate()
        .map(|(i, (k, v))| {
            let next = (i % 3 != 2).then_some(NextPtr {
                floor: (i % 2) as u8,
                offset: i as u32 * 7,
            });
            (k, v, next)
        })
        .collect()
}

/// Every read of a (possibly damaged) array: each either fails with `Corruption` or returns
/// exactly the original data.
fn check_reads_exact_or_corruption(a: &Arc<PmArray>, orig: &Entries) {
    let ok_or_corrupt = |r: Result<()>| {
        if let Err(e) = r {
            assert!(e.is_corruption(), "{e}");
        }
    };
    assert_eq!(a.len() as usize, orig.len());
    for i in 0..a.len() {
        ok_or_corrupt(a.read(i, READ).map(|kv| assert_eq!(kv, orig[i as usize])));
    }
    for t in targets(orig) {
        let want = lower_bound_model(orig, &t);
        ok_or_corrupt(
            a.lower_bound(&t, 0, a.len(), READ)
                .map(|p| assert_eq!(p, want)),
        );
        let mut it = a.iter(READ);
        it.seek(&t);
        let got = collect(&mut it);
        match it.status() {
            Ok(()) => assert_eq!(&got[..], &orig[want as usize..]),
            Err(e) => {
                assert!(e.is_corruption(), "{e}");
                assert_eq!(&got[..], &orig[want as usize..want as usize + got.len()]);
            }
        }
    }
    ok_or_corrupt(a.verify(READ).map(|n| assert_eq!(n, orig.len() as u64)));
}

#[test]
fn parray_damaged_bytes_are_corruption_never_wrong_data() {
    let fs = mem_fs();
    let path = PathBuf::from("/a/000002.arr");
    let entries = small_array_entries();
    let orig: Entries = entries
        .iter()
        .map(|(k, v, _)| (k.clone(), v.clone()))
        .collect();
    let size = build(&fs, &path, &entries, 10, Some(2)).file_size;
    let c = Arc::new(Counters::default());
    let a = open(&fs, &path, &c).unwrap();
    for (i, (_, _, next)) in entries.iter().enumerate() {
        assert_eq!(a.entry(i as u32, READ).unwrap().next, *next);
    }
    check_reads_exact_or_corruption(&a, &orig);
    let data_len = orig.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>() as u64;
    let (mut refused, mut opened) = (0, 0);
    for offset in 0..size {
        for xor in [0x01u8, 0x80, 0xff] {
            fs.corrupt_byte(&path, offset, xor);
            match open(&fs, &path, &c) {
                Err(e) => {
                    assert!(e.is_corruption(), "offset {offset}: {e}");
                    refused += 1;
                }
                Ok(a) => {
                    // Only the data area is not checked at open.
                    assert!(offset < data_len, "damage at {offset} not found at open");
                    check_reads_exact_or_corruption(&a, &orig);
                    assert!(a.verify(READ).unwrap_err().is_corruption());
                    opened += 1;
                }
            }
            fs.corrupt_byte(&path, offset, xor);
        }
    }
    assert_eq!(opened, 3 * data_len);
    assert_eq!(refused, 3 * (size - data_len));
}

#[test]
fn parray_truncated_or_extended_file_fails_open() {
    let fs = mem_fs();
    let path = PathBuf::from("/a/000003.arr");
    build(&fs, &path, &small_array_entries(), 10, Some(2));
    let bytes = fs.file_data(&path).unwrap();
    let c = Arc::new(Counters::default());
    let damaged = PathBuf::from("/a/damaged.arr");
    let mut cases: Vec<Vec<u8>> = (0..bytes.len()).map(|n| bytes[..n].to_vec()).collect();
    cases.push([&bytes[..], &[0u8; 7][..]].concat());
    for case in cases {
        let n = case.len();
        fs.set_file_data(&damaged, case);
        let e = open(&fs, &damaged, &c).unwrap_err();
        assert!(e.is_corruption(), "{n} bytes: {e}");
        assert!(e.to_string().contains("damaged.arr"), "{e}");
    }
}

// ---- Skip-Array Trees ----

/// A SAT under construction with its model: `model[f]` is floor f's entries.
struct Sat {
    fs: MemFs,
    counters: Arc<Counters>,
    floors: Vec<Arc<PmArray>>,
    model: Vec<Entries>,
}

impl Sat {
    fn new() -> Sat {
        Sat {
            fs: mem_fs(),
            counters: Arc::new(Counters::default()),
            floors: Vec::new(),
            model: Vec::new(),
        }
    }

    /// Adds a top floor as compaction will: `PointerBuilder` over the floors below feeding
    /// `ArrayBuilder`. Returns the pointers given.
    fn add_floor(&mut self, entries: Entries) -> Vec<Option<NextPtr>> {
        let slot = self.floors.len() as u8;
        let path = PathBuf::from(format!("/a/floor{slot:03}.arr"));
        let mut pb = PointerBuilder::new(self.floors.clone(), IoPurpose::Compaction).unwrap();
        assert_eq!(pb.floor_slot(), slot);
        let mut b = ArrayBuilder::new(self.fs.create(&path).unwrap(), path.clone(), 10, Some(slot));
        let mut ptrs = Vec::new();
        let before = bytes_read(&self.counters, IoPurpose::Compaction);
        for (k, v) in &entries {
            let next = pb.next_for(k).unwrap();
            b.add(k, v, next).unwrap();
            ptrs.push(next);
        }
        // The co-scan reads every entry of the old floors at most once, with its key and
        // value at most once.
        let scanned = bytes_read(&self.counters, IoPurpose::Compaction) - before;
        let old_bytes: u64 = (self.model.iter())
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (ENTRY_LEN + k.len() + v.len()) as u64)
                    .sum::<u64>()
            })
            .sum();
        assert!(
            scanned <= old_bytes,
            "co-scan read {scanned} bytes of {old_bytes}"
        );
        b.finish().unwrap();
        self.floors
            .push(open(&self.fs, &path, &self.counters).unwrap());
        self.model.push(entries);
        ptrs
    }

    /// The pointer of `key` on top of floors `0..f` by the definition: the highest floor below
    /// `f` whose last key is `>= key`, at its lower bound.
    fn pointer_by_definition(&self, f: usize, key: &[u8]) -> Option<NextPtr> {
        (0..f).rev().find_map(|g| {
            let last = &self.model[g].last()?.0;
            (compare_internal(last, key).is_ge()).then(|| NextPtr {
                floor: g as u8,
                offset: lower_bound_model(&self.model[g], key),
            })
        })
    }

    /// The brute-force get: highest floor first, lower bound per floor.
    fn get_brute(&self, uk: &[u8], look: &[u8]) -> Option<KeyValue> {
        self.model.iter().rev().find_map(|m| {
            m.get(lower_bound_model(m, look) as usize)
                .filter(|(k, _)| user_key(k) == uk)
                .cloned()
        })
    }

    fn check_pointers(&self) {
        for (f, floor) in self.floors.iter().enumerate() {
            for (i, (k, _)) in self.model[f].iter().enumerate() {
                let got = floor.entry(i as u32, READ).unwrap().next;
                assert_eq!(got, self.pointer_by_definition(f, k), "floor {f} entry {i}");
            }
        }
    }

    fn check_get(&self, uk: &[u8], snapshot: u64) {
        let look = lookup_key(uk, snapshot);
        let got = cascade_get(&self.floors, uk, &look, READ).unwrap();
        assert_eq!(got, self.get_brute(uk, &look), "get {uk:?} @ {snapshot}");
    }

    fn check_seek(&self, target: &[u8]) {
        let got = cascade_seek(&self.floors, target, READ).unwrap();
        let want: Vec<u32> = self
            .model
            .iter()
            .map(|m| lower_bound_model(m, target))
            .collect();
        let positions: Vec<u32> = got.iter().map(|(p, _)| *p).collect();
        assert_eq!(positions, want, "seek {target:?}");
        // Every entry the seek lands on comes with its key and value, read in the descent.
        for (f, (p, kv)) in got.iter().enumerate() {
            assert_eq!(
                kv.as_ref(),
                self.model[f].get(*p as usize),
                "seek {target:?}: floor {f}"
            );
        }
    }
}

/// Entries of user keys `key(k)` for `k` in `keys`, at sequences above `base`, with 1..=3
/// versions chosen by `rng` and some deletions.
fn floor_entries(
    keys: &[u32],
    key: &dyn Fn(u32) -> Vec<u8>,
    base: u64,
    rng: &mut StdRng,
) -> Entries {
    let mut e = Vec::new();
    for (i, &k) in keys.iter().enumerate() {
        for j in 0..rng.gen_range(1..=3u64) {
            let seq = base + 10 * i as u64 + j;
            if rng.gen_bool(0.15) {
                e.push((make_internal_key(&key(k), seq, ValueType::Deletion), vec![]));
            } else {
                let v = format!("{k}@{seq}").into_bytes();
                e.push((make_internal_key(&key(k), seq, ValueType::Value), v));
            }
        }
    }
    e.sort_by(|a, b| compare_internal(&a.0, &b.0));
    e
}

/// The key encodings of the property test: short keys (decided by the head), keys whose
/// 16-byte heads are all equal (decided by the data area), 18-byte keys whose heads differ
/// in their last byte only for some keys.
fn key_of(mode: u8, k: u32) -> Vec<u8> {
    match mode {
        0 => format!("{k:03}"),
        1 => format!("shared-prefix-16{k:03}"),
        _ => format!("shared-prefix-1{k:03}"),
    }
    .into_bytes()
}

fn floor_keys() -> impl Strategy<Value = Vec<u32>> {
    prop_oneof![
        // Scattered over the key space: overlaps older floors.
        3 => prop::collection::btree_set(0u32..120, 1..25).prop_map(|s| s.into_iter().collect()),
        // A dense range anywhere: often entirely above, below or inside older floors.
        2 => (0u32..140, 0u32..25).prop_map(|(lo, w)| (lo..=lo + w).collect()),
        // One entry.
        1 => (0u32..140).prop_map(|k| vec![k]),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn parray_sat_pointers_gets_and_seeks_match_brute_force(
        mode in 0u8..3,
        floors in prop::collection::vec((floor_keys(), any::<u64>()), 1..=10),
    ) {
        let key = |k| key_of(mode, k);
        let mut sat = Sat::new();
        for (f, (keys, seed)) in floors.iter().enumerate() {
            let mut rng = StdRng::seed_from_u64(*seed);
            // Newer floors get higher sequences, so repeated keys are newer versions above.
            sat.add_floor(floor_entries(keys, &key, 1000 * (f as u64 + 1), &mut rng));
        }
        sat.check_pointers();
        // `tierkv check`'s verification agrees: every entry above the bottom floor checked.
        let above: u64 = sat.model[1..].iter().map(|m| m.len() as u64).sum();
        let verified = verify_pointers(&sat.floors, READ).unwrap();
        prop_assert!(verified == above || (verified == 0 && !sat.floors.iter().any(|f| f.has_pointers())));
        let mut snapshots = vec![MAX_SEQUENCE, 0];
        snapshots.extend((1..=floors.len() as u64).flat_map(|f| [1000 * f, 1000 * f + 15]));
        for k in 0..=141u32 {
            for &snap in &snapshots {
                sat.check_get(&key(k), snap);
            }
            let mut between = key(k);
            between.push(b'!');
            sat.check_get(&between, MAX_SEQUENCE);
            sat.check_seek(&lookup_key(&key(k), MAX_SEQUENCE));
            sat.check_seek(&lookup_key(&between, 0));
        }
        for outside in [&b""[..], b"!", b"~~~~~~~~~~~~~~~~~~~~~"] {
            sat.check_get(outside, MAX_SEQUENCE);
            sat.check_seek(&lookup_key(outside, MAX_SEQUENCE));
        }
        for m in &sat.model {
            for (k, _) in m {
                sat.check_seek(k);
            }
        }
    }
}

// ---- Row chains ----

/// A chain of rows with its model: `model[f]` is row f's entries, row 0 oldest; `dead[f]`
/// row f's dead ranges with their entry intervals.
struct Chain {
    sat: Sat,
    dead: Vec<RowDead>,
}

/// Every row of `rows` live everywhere.
fn all_live(rows: &[Arc<PmArray>]) -> Vec<Window> {
    rows.iter()
        .map(|a| Window::Live {
            lo: 0,
            hi: a.len(),
            hi_dead: false,
        })
        .collect()
}

impl Chain {
    /// Adds a newest row as a flush will: `PointerBuilder::over_row` over the newest row so far
    /// (none for the first), the row built for slot 1.
    fn add_row(&mut self, entries: Entries) {
        let sat = &mut self.sat;
        let n = sat.floors.len();
        let path = PathBuf::from(format!("/a/row{n:03}.arr"));
        let over_dead = self.dead.last().cloned().unwrap_or_default();
        let mut pb = sat
            .floors
            .last()
            .map(|older| PointerBuilder::over_row(Arc::clone(older), over_dead, IoPurpose::Flush));
        let slot = pb.as_ref().map(|_| 1);
        let mut b = ArrayBuilder::new(sat.fs.create(&path).unwrap(), path.clone(), 10, slot);
        let before = bytes_read(&sat.counters, IoPurpose::Flush);
        for (k, v) in &entries {
            let next = match &mut pb {
                Some(pb) => pb.next_for(k).unwrap(),
                None => None,
            };
            b.add(k, v, next).unwrap();
        }
        // One merge pass: every entry of the older row read at most once (48 bytes, plus its
        // key and value at most once).
        let scanned = bytes_read(&sat.counters, IoPurpose::Flush) - before;
        let older: u64 = sat.model.last().map_or(0, |m| {
            m.iter()
                .map(|(k, v)| (ENTRY_LEN + k.len() + v.len()) as u64)
                .sum()
        });
        assert!(
            scanned <= older,
            "merge pass read {scanned} bytes of {older}"
        );
        b.finish().unwrap();
        sat.floors
            .push(open(&sat.fs, &path, &sat.counters).unwrap());
        sat.model.push(entries);
        self.dead.push(RowDead::default());
    }

    /// Every row's hints against their definition: the lower bound of the entry in the row
    /// below, none when that is the row's end.
    fn check_hints(&self, from: usize) {
        let sat = &self.sat;
        for f in from.max(1)..sat.floors.len() {
            for (i, (k, _)) in sat.model[f].iter().enumerate() {
                let below = &sat.model[f - 1];
                let at = lower_bound_model(below, k);
                let want = (at < below.len() as u32).then_some(NextPtr {
                    floor: 0,
                    offset: at,
                });
                let got = sat.floors[f].entry(i as u32, READ).unwrap().next;
                assert_eq!(got, want, "row {f} entry {i}");
            }
        }
    }

    /// Gets and seeks over the rows `from..` (the older ones gone) against brute force.
    fn check(&self, from: usize, uk: &[u8], snapshot: u64) {
        let rows = &self.sat.floors[from..];
        let model = &self.sat.model[from..];
        let look = lookup_key(uk, snapshot);
        let want = model.iter().rev().find_map(|m| {
            m.get(lower_bound_model(m, &look) as usize)
                .filter(|(k, _)| user_key(k) == uk)
                .cloned()
        });
        assert_eq!(
            chain_get(rows, &all_live(rows), uk, &look, READ).unwrap(),
            want,
            "get {uk:?} @ {snapshot}"
        );
        let got = chain_seek(rows, &all_live(rows), &look, READ).unwrap();
        for (f, (p, kv)) in got.iter().enumerate() {
            assert_eq!(
                *p,
                lower_bound_model(&model[f], &look),
                "seek {uk:?} row {f}"
            );
            assert_eq!(
                kv.as_ref(),
                model[f].get(*p as usize),
                "seek {uk:?} row {f}"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    /// Rows of any key ranges (overlapping, disjoint, above or below the row before): hints as
    /// defined, and gets and seeks over the whole chain and over every suffix of it (the rows
    /// below gone, as compaction retires the oldest rows; the new bottom row's hints then point
    /// into a row that is not there and are not followed) equal brute force.
    #[test]
    fn parray_row_chain_hints_gets_and_seeks_match_brute_force(
        mode in 0u8..3,
        rows in prop::collection::vec((floor_keys(), any::<u64>()), 1..=8),
    ) {
        let key = |k| key_of(mode, k);
        let mut chain = Chain { sat: Sat::new(), dead: Vec::new() };
        for (f, (keys, seed)) in rows.iter().enumerate() {
            let mut rng = StdRng::seed_from_u64(*seed);
            chain.add_row(floor_entries(keys, &key, 1000 * (f as u64 + 1), &mut rng));
        }
        chain.check_hints(0);
        let snapshots: Vec<u64> =
            [MAX_SEQUENCE, 0, 1500, 3015].into_iter().collect();
        for from in 0..rows.len() {
            for k in 0..=141u32 {
                for &snap in &snapshots {
                    chain.check(from, &key(k), snap);
                }
                let mut between = key(k);
                between.push(b'!');
                chain.check(from, &between, MAX_SEQUENCE);
            }
            for outside in [&b""[..], b"!", b"~~~~~~~~~~~~~~~~~~~~~"] {
                chain.check(from, outside, MAX_SEQUENCE);
            }
        }
    }
}

impl Chain {
    /// Makes `range` dead in rows `0..=newest` (the triangle's rule: a range dead in a row is
    /// dead in every older one), recording each row's entry interval of it (by brute force).
    fn kill(&mut self, range: &KeyRange, newest: usize) {
        for f in 0..=newest.min(self.dead.len() - 1) {
            let m = &self.sat.model[f];
            let bound = |k: Option<&Vec<u8>>| {
                k.map_or(m.len() as u32, |k| {
                    lower_bound_model(m, &lookup_key(k, MAX_SEQUENCE))
                })
            };
            let (first, end) = (bound(Some(&range.start)), bound(range.end.as_ref()));
            let mut info = RowInfo {
                dead: self.dead[f].0.clone(),
                dead_entries: self.dead[f].1.clone(),
                ..RowInfo::default()
            };
            info.add_dead(range, (first, end));
            self.dead[f] = (info.dead, info.dead_entries);
        }
    }

    /// Overwrites the key and value bytes of every dead entry, as if their pages were freed
    /// and reused: a read of them fails its checksum.
    fn wipe_dead(&self) {
        for (f, (_, intervals)) in self.dead.iter().enumerate() {
            let array = &self.sat.floors[f];
            let mut data = self.sat.fs.file_data(array.path()).unwrap();
            for &(a, b) in intervals {
                for i in a..b {
                    let e = array.entry(i, READ).unwrap();
                    let span = e.data_offset as usize..e.data_end() as usize;
                    data[span].fill(0xEE);
                }
            }
            self.sat.fs.set_file_data(array.path(), data);
        }
    }

    /// True if user key `uk` is in a dead range of row `f`.
    fn dead_in(&self, f: usize, uk: &[u8]) -> bool {
        self.dead[f].0.iter().any(|r| r.contains(uk))
    }

    /// Gets (over the rows where the key is live) and seeks (over every row, each position
    /// moved to the first live entry) against brute force over the live entries.
    fn check_live(&self, uk: &[u8], snapshot: u64) {
        let rows = &self.sat.floors;
        let model = &self.sat.model;
        let look = lookup_key(uk, snapshot);
        let windows = |from: usize| -> Vec<Window> {
            (from..rows.len())
                .map(|f| window(&self.dead[f].0, &self.dead[f].1, rows[f].len(), uk))
                .collect()
        };
        let from = (0..rows.len())
            .rposition(|f| self.dead_in(f, uk))
            .map_or(0, |f| f + 1);
        let want = model[from..].iter().rev().find_map(|m| {
            m.get(lower_bound_model(m, &look) as usize)
                .filter(|(k, _)| user_key(k) == uk)
                .cloned()
        });
        let got = chain_get(&rows[from..], &windows(from), uk, &look, READ).unwrap();
        assert_eq!(got, want, "get {uk:?} @ {snapshot}");
        let positions = chain_seek(rows, &windows(0), &look, READ).unwrap();
        for (f, (p, kv)) in positions.into_iter().enumerate() {
            let live = |i: usize| !self.dead_in(f, user_key(&model[f][i].0));
            let want = (lower_bound_model(&model[f], &look) as usize..model[f].len())
                .find(|&i| live(i))
                .unwrap_or(model[f].len());
            assert_eq!(
                first_live(&self.dead[f].1, p) as usize,
                want,
                "seek {uk:?} row {f}"
            );
            if let Some(kv) = kv {
                assert_eq!(Some(&kv), model[f].get(p as usize), "seek {uk:?} row {f}");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    /// Rows with dead ranges whose entries' bytes are gone (TriangleKV frees their pages):
    /// gets, seeks, a new row's hints built over the newest row, `verify_live` and
    /// `verify_row_hints` never read a dead entry (each read of one would fail its checksum)
    /// and agree with brute force over the live entries.
    #[test]
    fn parray_row_chain_with_freed_dead_entries_matches_brute_force(
        mode in 0u8..3,
        rows in prop::collection::vec((floor_keys(), any::<u64>()), 1..=6),
        kills in prop::collection::vec((0u32..150, 0u32..40, any::<bool>(), 0usize..6), 0..4),
        last in (floor_keys(), any::<u64>()),
    ) {
        let key = |k| key_of(mode, k);
        let mut chain = Chain { sat: Sat::new(), dead: Vec::new() };
        for (f, (keys, seed)) in rows.iter().enumerate() {
            let mut rng = StdRng::seed_from_u64(*seed);
            chain.add_row(floor_entries(keys, &key, 1000 * (f as u64 + 1), &mut rng));
        }
        for &(lo, width, open_end, newest) in &kills {
            let range = KeyRange {
                start: key(lo),
                end: (!open_end).then(|| key(lo + width)),
            };
            if !range.is_empty() {
                chain.kill(&range, newest);
            }
        }
        chain.wipe_dead();
        // A flush after the compactions: hints over the newest row, stepping over its dead
        // entries.
        let mut rng = StdRng::seed_from_u64(last.1);
        chain.add_row(floor_entries(&last.0, &key, 100_000, &mut rng));
        let floors = &chain.sat.floors;
        for f in 0..floors.len() {
            let (ranges, intervals) = &chain.dead[f];
            let mut seen = 0;
            let n = floors[f]
                .verify_live(intervals, &mut |_, k| {
                    assert!(!ranges.iter().any(|r| r.contains(user_key(k))));
                    seen += 1;
                    Ok(())
                }, READ)
                .unwrap();
            prop_assert_eq!(n, floors[f].len() as u64);
            let live = chain.sat.model[f]
                .iter()
                .filter(|(k, _)| !chain.dead_in(f, user_key(k)))
                .count();
            prop_assert_eq!(seen, live);
            if f > 0 {
                verify_row_hints(&floors[f - 1], &chain.dead[f - 1], &floors[f], intervals, READ)
                    .unwrap();
            }
        }
        let snapshots = [MAX_SEQUENCE, 1500, 100_005];
        for k in 0..=160u32 {
            for &snap in &snapshots {
                chain.check_live(&key(k), snap);
            }
            let mut between = key(k);
            between.push(b'!');
            chain.check_live(&between, MAX_SEQUENCE);
        }
    }
}

/// A key `k` as five digits.
fn five_digits(k: u32) -> Vec<u8> {
    format!("{k:05}").into_bytes()
}

/// A chain of one row per entry of `rows` (oldest first), row `f` holding the keys it lists
/// (`five_digits`) at sequence `10 + f`, each key its own value.
fn chain_of(rows: &[Vec<u32>]) -> Chain {
    let mut chain = Chain {
        sat: Sat::new(),
        dead: Vec::new(),
    };
    for (f, keys) in rows.iter().enumerate() {
        let e: Entries = keys
            .iter()
            .map(|&k| {
                let kk = five_digits(k);
                (make_internal_key(&kk, 10 + f as u64, ValueType::Value), kk)
            })
            .collect();
        chain.add_row(e);
    }
    chain
}

/// A get over a chain narrows each older row to the window between the hints of the keys
/// bracketing the target: over rows of every key 0..400 (even keys in the older row, odd in
/// the newer), a get of an absent key searches the older row in a window of at most two
/// entries, not the whole row.
#[test]
fn parray_row_hints_narrow_the_older_row_to_a_window() {
    let chain = chain_of(&[(0..400).step_by(2).collect(), (1..400).step_by(2).collect()]);
    let key = five_digits;
    chain.check_hints(0);
    for k in [0u32, 1, 150, 151, 398, 399, 400] {
        let look = lookup_key(&key(k), MAX_SEQUENCE);
        let floors = &chain.sat.floors;
        let (got, steps) =
            chain_get_traced(floors, &all_live(floors), &key(k), &look, READ).unwrap();
        assert_eq!(got.map(|kv| kv.1), (k < 400).then(|| key(k)), "{k}");
        if k % 2 == 0 {
            // Not in the newer row: the older row searched in a window of at most 2 entries.
            let older = steps.iter().find(|s| s.floor == 0).unwrap();
            assert!(older.hi - older.lo <= 2, "{k}: {steps:?}");
        }
    }
}

/// `check`'s verification of a row's hints accepts the hints a flush builds and reports a
/// hint one entry off (well-formed, its checksum right) as corruption naming the entry.
#[test]
fn parray_verify_row_hints_finds_wrong_hints() {
    let chain = chain_of(&[(0..100).step_by(2).collect(), (1..100).step_by(3).collect()]);
    let floors = &chain.sat.floors;
    assert_eq!(
        verify_row_hints(&floors[0], &RowDead::default(), &floors[1], &[], READ).unwrap(),
        floors[1].len() as u64
    );
    // The same row with one hint moved by one entry.
    let path = PathBuf::from("/a/wrong.arr");
    let mut b = ArrayBuilder::new(
        chain.sat.fs.create(&path).unwrap(),
        path.clone(),
        0,
        Some(1),
    );
    for i in 0..floors[1].len() {
        let (k, v) = floors[1].read(i, READ).unwrap();
        let mut next = floors[1].entry(i, READ).unwrap().next;
        if i == 7 {
            next = next.map(|p| NextPtr {
                offset: p.offset + 1,
                ..p
            });
        }
        b.add(&k, &v, next).unwrap();
    }
    b.finish().unwrap();
    let wrong = open(&chain.sat.fs, &path, &chain.sat.counters).unwrap();
    let e = verify_row_hints(&floors[0], &RowDead::default(), &wrong, &[], READ).unwrap_err();
    assert!(
        e.is_corruption() && e.to_string().contains("wrong.arr"),
        "{e}"
    );
}

/// An array built for another floor than a row's (slot 1) is refused as a row of a chain: its
/// pointers would name floors the chain does not have.
#[test]
fn parray_array_of_another_floor_is_refused_as_a_row() {
    let fs = mem_fs();
    let counters = Arc::new(Counters::default());
    let key = |k: u32| make_internal_key(format!("{k:03}").as_bytes(), 5, ValueType::Value);
    let mut rows = Vec::new();
    for (n, next) in [
        (0u8, None),
        (
            1,
            Some(NextPtr {
                floor: 1,
                offset: 0,
            }),
        ),
    ] {
        let path = PathBuf::from(format!("/a/bad{n}.arr"));
        let slot = (n > 0).then_some(2);
        let mut b = ArrayBuilder::new(fs.create(&path).unwrap(), path.clone(), 10, slot);
        for k in 0..4 {
            b.add(&key(k * 2 + n as u32), b"v", next).unwrap();
        }
        b.finish().unwrap();
        rows.push(open(&fs, &path, &counters).unwrap());
    }
    // Built for slot 2: not a row of a chain.
    let look = lookup_key(b"003", MAX_SEQUENCE);
    assert!(matches!(
        chain_get(&rows, &all_live(&rows), b"003", &look, READ),
        Err(Error::InvalidArgument(_))
    ));
}

/// The co-scan continues where the exhausted floor's last pointer goes, not from the start
/// of the lower floor: over a floor of keys 0..1000 and a floor of keys 900..=910, a new floor
/// of keys 995..=999 reads the 11 entries of the old top floor, then the bottom floor from
/// 910 (the pointer of 910) to 999 only.
#[test]
fn parray_pointer_builder_scans_on_from_pointers() {
    let key = |k: u32| format!("{k:04}").into_bytes();
    let floor = |f: u64, keys: std::ops::Range<u32>| -> Entries {
        keys.map(|k| (make_internal_key(&key(k), f + 1, ValueType::Value), vec![]))
            .collect()
    };
    let mut sat = Sat::new();
    sat.add_floor(floor(0, 0..1000));
    sat.add_floor(floor(1, 900..911));
    let before = bytes_read(&sat.counters, IoPurpose::Compaction);
    let ptrs = sat.add_floor(floor(2, 995..1000));
    let reads = (bytes_read(&sat.counters, IoPurpose::Compaction) - before) / ENTRY_LEN as u64;
    assert_eq!(reads, 11 + (910..1000).len() as u64);
    assert_eq!(ptrs, (995..1000).map(|k| ptr(0, k)).collect::<Vec<_>>());
    sat.check_pointers();
}

// ---- The paper's figures ----

/// An entry of the figures: the integer user key as two digits, one sequence per floor.
fn fig_entries(floor: usize, keys: &[u32]) -> Entries {
    keys.iter()
        .map(|k| {
            let ik = make_internal_key(
                format!("{k:02}").as_bytes(),
                10 + floor as u64,
                ValueType::Value,
            );
            (ik, format!("{k}@floor{floor}").into_bytes())
        })
        .collect()
}

fn fig_sat(floors: &[&[u32]]) -> Sat {
    let mut sat = Sat::new();
    for (f, keys) in floors.iter().enumerate() {
        sat.add_floor(fig_entries(f, keys));
    }
    sat
}

fn ptr(floor: u8, offset: u32) -> Option<NextPtr> {
    Some(NextPtr { floor, offset })
}

fn fig_get(sat: &Sat, k: u32) -> (Option<KeyValue>, Vec<Step>) {
    let uk = format!("{k:02}").into_bytes();
    cascade_get_traced(&sat.floors, &uk, &lookup_key(&uk, MAX_SEQUENCE), READ).unwrap()
}

fn check_all_fig_gets(sat: &Sat) {
    sat.check_pointers();
    for k in 0..=40 {
        sat.check_get(format!("{k:02}").as_bytes(), MAX_SEQUENCE);
        sat.check_seek(&lookup_key(format!("{k:02}").as_bytes(), MAX_SEQUENCE));
    }
}

/// Fig. 5: adding a floor that overlaps the old top floor, overlaps it partially, or lies
/// entirely above it (the virtual min keeps the old top floor reachable).
#[test]
fn parray_paper_fig5_adding_a_floor() {
    let bottom: &[u32] = &[4, 12, 24, 26];

    // Overlapped: {6, 7, 20} over a top floor ending at 25: every pointer stays on that floor,
    // 6 and 7 both point to 9.
    let mut sat = fig_sat(&[bottom, &[2, 9, 25]]);
    assert_eq!(
        sat.add_floor(fig_entries(2, &[6, 7, 20])),
        [ptr(1, 1), ptr(1, 1), ptr(1, 2)]
    );
    check_all_fig_gets(&sat);

    // Partially overlapped: {1, 6, 20, 25} over a top floor ending at 9: 1 -> 2 and 6 -> 9 on
    // it, then the scan continues where 9's pointer goes: 20 -> 24 and 25 -> 26 below.
    let mut sat = fig_sat(&[bottom, &[2, 9]]);
    assert_eq!(
        sat.floors[1].entry(1, READ).unwrap().next,
        ptr(0, 1),
        "9 -> 12"
    );
    let got = sat.add_floor(fig_entries(2, &[1, 6, 20, 25]));
    assert_eq!(got, [ptr(1, 0), ptr(1, 1), ptr(0, 2), ptr(0, 3)]);
    check_all_fig_gets(&sat);

    // Partially overlapped with a first key above the old top floor's first key: the paper
    // adds its virtual min only in the non-overlapped case, but here too key 2 of floor 1 is
    // below every pointer of the new floor ({6, 20}: 6 -> 9); only the virtual min reaches it.
    let mut sat = fig_sat(&[bottom, &[2, 9]]);
    assert_eq!(
        sat.add_floor(fig_entries(2, &[6, 20])),
        [ptr(1, 1), ptr(0, 2)]
    );
    let (found, steps) = fig_get(&sat, 2);
    assert_eq!(found.unwrap().1, b"2@floor1");
    assert_eq!(
        steps[1],
        Step {
            floor: 1,
            lo: 0,
            hi: 1,
            index: 0
        }
    );
    check_all_fig_gets(&sat);

    // Non-overlapped: {20, 25} above a top floor ending at 9: 20 -> 24, 25 -> 26 on the bottom
    // floor; a key above every existing key (30) gets no pointer.
    let mut sat = fig_sat(&[bottom, &[2, 9]]);
    let got = sat.add_floor(fig_entries(2, &[20, 25, 30]));
    assert_eq!(got, [ptr(0, 2), ptr(0, 3), None]);
    // Only the virtual min (2's first entry has no stored pointer to floor 1) leads to floor 1.
    let (found, steps) = fig_get(&sat, 2);
    assert_eq!(found.unwrap().1, b"2@floor1");
    assert_eq!(
        steps,
        [
            Step {
                floor: 2,
                lo: 0,
                hi: 3,
                index: 0
            },
            Step {
                floor: 1,
                lo: 0,
                hi: 2,
                index: 0
            },
        ]
    );
    check_all_fig_gets(&sat);
}

/// Fig. 7: Get(15) over five floors, the paper's critical path: floor 4 stops at 5, floor 3
/// at 6, floor 2 at 5, floor 1 at its end key 9, and floor 0 is searched from 15 (9's pointer)
/// to its end key 31, where 15 is found.
#[test]
fn parray_paper_fig7_get_15() {
    let sat = fig_sat(&[
        &[3, 8, 15, 24, 31],
        &[2, 9],
        &[5, 20],
        &[1, 6, 16],
        &[5, 16],
    ]);
    let p = |f: usize| -> Vec<Option<NextPtr>> {
        (0..sat.floors[f].len())
            .map(|i| sat.floors[f].entry(i, READ).unwrap().next)
            .collect()
    };
    assert_eq!(p(0), [None; 5]);
    assert_eq!(p(1), [ptr(0, 0), ptr(0, 2)], "2 -> 3, 9 -> 15");
    assert_eq!(p(2), [ptr(1, 1), ptr(0, 3)], "5 -> 9, 20 -> 24");
    assert_eq!(
        p(3),
        [ptr(2, 0), ptr(2, 1), ptr(2, 1)],
        "1 -> 5, 6 -> 20, 16 -> 20"
    );
    assert_eq!(p(4), [ptr(3, 1), ptr(3, 2)], "5 -> 6, 16 -> 16");
    let (found, steps) = fig_get(&sat, 15);
    assert_eq!(found.unwrap(), fig_entries(0, &[15])[0]);
    let s = |floor, lo, hi, index| Step {
        floor,
        lo,
        hi,
        index,
    };
    assert_eq!(
        steps,
        [
            s(4, 0, 2, 1), // a = 5 (the paper's stop), b = 16
            s(3, 1, 2, 2), // [next(5), next(16)] = [6, 16]: a = 6
            s(2, 1, 1, 1), // next(6) = next(16) = 20: a = 5, found without a probe
            s(1, 1, 2, 2), // next(20) is on floor 0, so [next(5), end] = [9, end]: a = 9
            s(0, 2, 5, 2), // [next(9), end] = [15, 31]: 15
        ]
    );
    check_all_fig_gets(&sat);
}

// ---- What the cascade saves ----

fn ceil_log2(x: u32) -> u32 {
    u32::BITS - (x - 1).leading_zeros()
}

/// 10 floors of 1000 entries, perfectly interleaved (floor f holds the keys `10 j + f`), so
/// between two adjacent keys of a floor the floor below has exactly one key.
///
/// Derived bound: below the top floor every descent range `[next(a), next(b)]` has width at
/// most 1 (checked on every path), so a floor costs at most one probe plus the one of `a`, `b`
/// the probe did not read: 2 entry reads. The top floor costs a full binary search, at most
/// `ceil(log2(1001)) = 10` probes, whose last probes read `a` and `b`. So a cascading get
/// reads at most 10 + 9 * 2 = 28 entries, where a plain binary search of every floor it
/// visits reads at least `floor(log2(1000)) = 9` per floor (90 for a key in no floor).
#[test]
fn parray_cascade_reads_far_fewer_entries_than_binary_searches() {
    const FLOORS: u32 = 10;
    const N: u32 = 1000;
    let key = |k: u32| format!("{k:05}").into_bytes();
    let mut sat = Sat::new();
    for f in 0..FLOORS {
        let e = (0..N)
            .map(|j| {
                let k = 10 * j + f;
                (
                    make_internal_key(&key(k), 100 + f as u64, ValueType::Value),
                    vec![b'v'; 8],
                )
            })
            .collect();
        sat.add_floor(e);
    }
    let bound = ceil_log2(N + 1) + (FLOORS - 1) * 2;
    assert_eq!(bound, 28);
    let c = sat.counters.clone();
    // [present, absent]: (cascade entry reads, plain entry reads, lookups).
    let mut totals = [(0u64, 0u64, 0u64); 2];
    for k in (0..FLOORS * N).step_by(7) {
        for absent in [false, true] {
            let mut uk = key(k);
            if absent {
                uk.push(b'!');
            }
            let look = lookup_key(&uk, MAX_SEQUENCE);
            let before = bytes_read(&c, READ);
            let (got, steps) = cascade_get_traced(&sat.floors, &uk, &look, READ).unwrap();
            let data = got.as_ref().map_or(0, |(k, v)| (k.len() + v.len()) as u64);
            let bytes = bytes_read(&c, READ) - before - data;
            assert_eq!(
                bytes % ENTRY_LEN as u64,
                0,
                "only entries besides the answer"
            );
            let entries = bytes / ENTRY_LEN as u64;
            assert_eq!(got, sat.get_brute(&uk, &look));
            assert_eq!(got.is_some(), !absent);
            for s in &steps[1..] {
                assert!(s.hi - s.lo <= 1, "range {s:?} wider than derived");
            }
            assert!(entries <= bound as u64, "{entries} entry reads for {uk:?}");

            // The same lookup by a full binary search of every floor it visits, newest first.
            let before = bytes_read(&c, READ);
            let visited = if absent { FLOORS } else { FLOORS - k % 10 };
            for f in (FLOORS - visited..FLOORS).rev() {
                sat.floors[f as usize]
                    .lower_bound(&look, 0, N, READ)
                    .unwrap();
            }
            let plain = (bytes_read(&c, READ) - before) / ENTRY_LEN as u64;
            assert!(plain >= visited as u64 * (N.ilog2() as u64));
            assert!(entries < plain || visited == 1, "{entries} vs {plain}");
            let t = &mut totals[absent as usize];
            (t.0, t.1, t.2) = (t.0 + entries, t.1 + plain, t.2 + 1);
        }
    }
    for ((cascade, plain, lookups), what) in totals.iter().zip(["present", "absent"]) {
        eprintln!(
            "{what} keys: cascade_get {:.1} entry reads per lookup, binary search of each \
             visited floor {:.1} ({lookups} lookups, 10 floors x 1000 entries)",
            *cascade as f64 / *lookups as f64,
            *plain as f64 / *lookups as f64
        );
        // A key in no floor visits all 10: at most 28 reads against at least 90.
        let factor = if what == "absent" { 3 } else { 1 };
        assert!(cascade * factor < *plain, "{what}: {cascade} vs {plain}");
    }
}

/// `verify_pointers` reports a pointer that is off by one entry, or missing, as corruption
/// naming the entry, and accepts the pointers the builder wrote.
#[test]
fn parray_verify_pointers_finds_wrong_pointers() {
    let sat = fig_sat(&[&[1, 3, 5, 7, 9, 11, 13], &[2, 6, 10, 14]]);
    assert_eq!(verify_pointers(&sat.floors, READ).unwrap(), 4);
    for (i, damage) in [(1usize, 1i64), (2, -1), (0, 0)] {
        let mut entries: Vec<_> = sat.model[1]
            .iter()
            .map(|(k, v)| (k.clone(), v.clone(), sat.pointer_by_definition(1, k)))
            .collect();
        entries[i].2 = if damage == 0 {
            None
        } else {
            entries[i].2.map(|p| NextPtr {
                offset: (p.offset as i64 + damage) as u32,
                ..p
            })
        };
        let path = PathBuf::from(format!("/a/bad{i}.arr"));
        build(&sat.fs, &path, &entries, 10, Some(1));
        let bad = open(&sat.fs, &path, &sat.counters).unwrap();
        let floors = vec![Arc::clone(&sat.floors[0]), bad];
        match verify_pointers(&floors, READ) {
            Err(Error::Corruption { .. }) => {}
            other => panic!("entry {i} damaged by {damage}: {other:?}"),
        }
    }
}
