//! Table-level tests: round trips, seek semantics, filters, the cache, and corruption handling.

use super::format::{Footer, FOOTER_LEN};
use super::table_builder::TableSummary;
use super::*;
use crate::format::{
    compare_internal, lookup_key, make_internal_key, user_key, ValueType, MAX_SEQUENCE,
};
use crate::fs::{FileSystem, PosixFs, RandomAccessFile};
use crate::iterator::InternalIterator;
use crate::options::TableOptions;
use crate::sst::table::TableIterator;
use crate::stats::{Counters, IoPurpose, Part};
use crate::{Error, Result};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// `n` user keys `k{i*2:08}` (odd numbers are absent); every 10th has three versions, every 7th
/// has a deletion as its newest version.
fn make_entries(n: usize) -> Entries {
    let mut v = Vec::new();
    for i in 0..n {
        let uk = format!("k{:08}", i * 2);
        let versions = if i % 10 == 0 { 3 } else { 1 };
        for s in 0..versions {
            let seq = 1000 - 10 * s as u64;
            if i % 7 == 0 && s == 0 {
                v.push((
                    make_internal_key(uk.as_bytes(), seq, ValueType::Deletion),
                    vec![],
                ));
            } else {
                let val = format!("value-{i}-{s}-{}", "x".repeat(i % 13)).into_bytes();
                v.push((make_internal_key(uk.as_bytes(), seq, ValueType::Value), val));
            }
        }
    }
    v
}

fn write_table(
    dir: &Path,
    name: &str,
    opts: &TableOptions,
    e: &Entries,
) -> (PathBuf, TableSummary) {
    let path = dir.join(name);
    let file = PosixFs.create(&path).unwrap();
    let mut b = TableBuilder::new(opts, file, path.clone());
    for (k, v) in e {
        b.add(k, v).unwrap();
    }
    assert_eq!(b.num_entries(), e.len() as u64);
    let est = b.file_size_estimate();
    let s = b.finish().unwrap();
    assert!(s.file_size >= est);
    (path, s)
}

fn open(path: &Path, cache: &Arc<BlockCache>, c: &Arc<Counters>) -> Result<Arc<Table>> {
    let f = PosixFs.open_readable(path)?;
    Table::open(
        f,
        7,
        path.to_path_buf(),
        cache.clone(),
        c.clone(),
        crate::tier::Tier::Ssd,
        Part::Stage(0),
        IoPurpose::UserRead,
    )
}

/// The reference answer of `Table::get`.
fn expected_get(e: &Entries, look: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let i = e.partition_point(|(k, _)| compare_internal(k, look).is_lt());
    e.get(i)
        .filter(|(k, _)| user_key(k) == user_key(look))
        .cloned()
}

fn collect(it: &mut TableIterator) -> Entries {
    let mut got = Vec::new();
    while it.valid() {
        got.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    got
}

fn check_round_trip(opts: &TableOptions, n: usize) {
    let dir = tempfile::tempdir().unwrap();
    let e = make_entries(n);
    let (path, s) = write_table(dir.path(), "000001.sst", opts, &e);
    assert_eq!(s.num_entries, e.len() as u64);
    assert_eq!(s.smallest, e[0].0);
    assert_eq!(s.largest, e.last().unwrap().0);
    assert_eq!(s.file_size, std::fs::metadata(&path).unwrap().len());

    let cache = BlockCache::new(1 << 20);
    let c = Arc::new(Counters::default());
    let t = open(&path, &cache, &c).unwrap();
    assert_eq!(t.file_size(), s.file_size);
    assert_eq!(t.file_number(), 7);
    assert!(t.index_bytes() > 0);
    assert!(
        t.num_data_blocks() > 20,
        "only {} blocks",
        t.num_data_blocks()
    );
    assert_eq!(t.verify().unwrap(), e.len() as u64);

    // Full iteration equals the input.
    let mut it = t.iter(IoPurpose::UserRead, true);
    it.seek_to_first();
    assert_eq!(collect(&mut it), e);
    it.status().unwrap();

    // Point lookups: present keys at the latest snapshot and at older ones, absent keys.
    for i in 0..n * 2 + 2 {
        let uk = format!("k{i:08}");
        for snap in [MAX_SEQUENCE, 1000, 995, 990, 985, 5] {
            let look = lookup_key(uk.as_bytes(), snap);
            let got = t.get(&look, IoPurpose::UserRead, true).unwrap();
            assert_eq!(got, expected_get(&e, &look), "{uk} @ {snap}");
        }
    }
    // Seek: before first, between keys, past last, exact.
    it.seek(&lookup_key(b"a", MAX_SEQUENCE));
    assert_eq!(it.key(), &e[0].0[..]);
    it.seek(&lookup_key(b"z", MAX_SEQUENCE));
    assert!(!it.valid());
    it.status().unwrap();
    for (j, (k, v)) in e.iter().enumerate().step_by(97) {
        it.seek(k);
        assert_eq!((it.key(), it.value()), (&k[..], &v[..]));
        let mut between = user_key(k).to_vec();
        between.push(b'!');
        let look = lookup_key(&between, MAX_SEQUENCE);
        it.seek(&look);
        let rest: Vec<_> = e[j + 1..]
            .iter()
            .filter(|(x, _)| compare_internal(x, &look).is_ge())
            .take(5)
            .cloned()
            .collect();
        let mut got = Vec::new();
        while it.valid() && got.len() < rest.len() {
            got.push((it.key().to_vec(), it.value().to_vec()));
            it.next();
        }
        assert_eq!(got, rest);
    }
}

#[test]
fn table_round_trip_default_options() {
    check_round_trip(&TableOptions::default(), 20_000);
}

#[test]
fn table_round_trip_small_blocks_restart_1_no_filter() {
    let opts = TableOptions {
        block_size: 256,
        restart_interval: 1,
        bloom_bits_per_key: 0,
        index_partition_blocks: 0,
        value_separation: 0,
    };
    check_round_trip(&opts, 3_000);
}

#[test]
fn table_round_trip_partitioned_index() {
    for (blocks, n) in [(4, 3_000), (1, 800), (32, 5_000)] {
        let opts = TableOptions {
            block_size: 256,
            restart_interval: 4,
            bloom_bits_per_key: 0,
            index_partition_blocks: blocks,
            value_separation: 0,
        };
        check_round_trip(&opts, n);
        // Only one index entry per partition stays in DRAM.
        let dir = tempfile::tempdir().unwrap();
        let (path, s) = write_table(dir.path(), "000002.sst", &opts, &make_entries(n));
        let c = Arc::new(Counters::default());
        let t = open(&path, &BlockCache::new(1 << 20), &c).unwrap();
        assert!(t.is_partitioned());
        assert_eq!(t.num_data_blocks(), s.data_blocks.len());
        assert_eq!(
            t.resident_index_entries(),
            s.data_blocks.len().div_ceil(blocks),
            "{blocks} blocks per partition"
        );
        // A lookup reads one partition and one data block: two block reads, no more.
        let before = c.block_cache_misses.load(Relaxed);
        let e = make_entries(n);
        let (k, _) = &e[e.len() / 2];
        assert!(t.get(k, IoPurpose::UserRead, false).unwrap().is_some());
        assert_eq!(c.block_cache_misses.load(Relaxed) - before, 2);
    }
}

#[test]
fn table_multiple_versions_and_deletions() {
    let dir = tempfile::tempdir().unwrap();
    let ik = |k: &[u8], s, t| make_internal_key(k, s, t);
    let e: Entries = vec![
        (ik(b"apple", 9, ValueType::Value), b"a9".to_vec()),
        (ik(b"apple", 7, ValueType::Deletion), vec![]),
        (ik(b"apple", 3, ValueType::Value), b"a3".to_vec()),
        (ik(b"banana", 5, ValueType::Deletion), vec![]),
        (ik(b"cherry", 2, ValueType::Value), b"c2".to_vec()),
    ];
    // Block size small enough that versions of "apple" straddle blocks.
    let opts = TableOptions {
        block_size: 1,
        restart_interval: 2,
        bloom_bits_per_key: 10,
        index_partition_blocks: 0,
        value_separation: 0,
    };
    let (path, _) = write_table(dir.path(), "000002.sst", &opts, &e);
    let t = open(
        &path,
        &BlockCache::new(1 << 20),
        &Arc::new(Counters::default()),
    )
    .unwrap();
    assert_eq!(t.num_data_blocks(), 5);
    let get = |k: &[u8], s| t.get(&lookup_key(k, s), IoPurpose::UserRead, true).unwrap();
    assert_eq!(get(b"apple", 100), Some(e[0].clone()));
    assert_eq!(get(b"apple", 8), Some(e[1].clone()));
    assert_eq!(get(b"apple", 7), Some(e[1].clone()));
    assert_eq!(get(b"apple", 6), Some(e[2].clone()));
    assert_eq!(get(b"apple", 2), None);
    assert_eq!(get(b"banana", 5), Some(e[3].clone()));
    assert_eq!(get(b"banana", 4), None);
    assert_eq!(get(b"cherry", 2), Some(e[4].clone()));
    assert_eq!(get(b"aardvark", 100), None);
    assert_eq!(get(b"zebra", 100), None);
    let mut it = t.iter(IoPurpose::UserRead, false);
    it.seek(&lookup_key(b"apple", 8));
    assert_eq!(collect(&mut it), e[1..].to_vec());
    assert!(t.get(b"short", IoPurpose::UserRead, true).is_err());
}

#[test]
fn empty_table() {
    let dir = tempfile::tempdir().unwrap();
    let (path, s) = write_table(dir.path(), "000003.sst", &TableOptions::default(), &vec![]);
    assert_eq!(s.num_entries, 0);
    assert!(s.smallest.is_empty() && s.largest.is_empty());
    let t = open(
        &path,
        &BlockCache::new(1 << 20),
        &Arc::new(Counters::default()),
    )
    .unwrap();
    assert_eq!(t.verify().unwrap(), 0);
    assert_eq!(
        t.get(&lookup_key(b"a", 1), IoPurpose::UserRead, true)
            .unwrap(),
        None
    );
    let mut it = t.iter(IoPurpose::UserRead, true);
    it.seek_to_first();
    assert!(!it.valid());
    it.seek(&lookup_key(b"a", 1));
    assert!(!it.valid());
    it.status().unwrap();
}

#[test]
fn bloom_filter_at_table_level() {
    let dir = tempfile::tempdir().unwrap();
    let e = make_entries(10_000);
    let mut fps = Vec::new();
    for bits in [10usize, 0] {
        let opts = TableOptions {
            bloom_bits_per_key: bits,
            ..TableOptions::default()
        };
        let (path, _) = write_table(dir.path(), &format!("f{bits}.sst"), &opts, &e);
        let c = Arc::new(Counters::default());
        let t = open(&path, &BlockCache::new(8 << 20), &c).unwrap();
        if bits == 0 {
            assert_eq!(t.filter_bytes(), 0);
        } else {
            // About bits/8 bytes per user key.
            assert!(t.filter_bytes() >= 10_000 * 10 / 8, "{}", t.filter_bytes());
        }
        // No false negatives.
        for (k, _) in &e {
            let got = t.get(k, IoPurpose::UserRead, true).unwrap();
            assert_eq!(got.as_ref().map(|g| &g.0), Some(k));
        }
        assert_eq!(c.bloom_useful.load(Relaxed), 0);
        // 10,000 absent user keys (odd numbers and other prefixes).
        for i in 0..10_000 {
            let uk = if i % 2 == 0 {
                format!("k{:08}", i * 2 + 1)
            } else {
                format!("absent{i}")
            };
            assert_eq!(
                t.get(
                    &lookup_key(uk.as_bytes(), MAX_SEQUENCE),
                    IoPurpose::UserRead,
                    true
                )
                .unwrap(),
                None
            );
        }
        let useful = c.bloom_useful.load(Relaxed);
        fps.push(10_000 - useful);
        if bits == 0 {
            assert_eq!(useful, 0);
        }
    }
    eprintln!(
        "table-level false positives at 10 bits/key: {} / 10000",
        fps[0]
    );
    assert!(fps[0] < 200, "false positives {} / 10000", fps[0]);
}

#[test]
fn cache_hits_misses_and_fill_cache() {
    let dir = tempfile::tempdir().unwrap();
    let e = make_entries(2_000);
    let (path, _) = write_table(dir.path(), "000004.sst", &TableOptions::default(), &e);
    let cache = BlockCache::new(8 << 20);
    let c = Arc::new(Counters::default());
    let t = open(&path, &cache, &c).unwrap();
    let opened = crate::stats::DbStats::from_counters(&c).ssd_read_user;
    assert!(opened > 0);
    let k = &e[100].0;
    t.get(k, IoPurpose::UserRead, false).unwrap().unwrap();
    assert_eq!(cache.usage_bytes(), 0);
    assert_eq!(c.block_cache_misses.load(Relaxed), 1);
    let after_one = crate::stats::DbStats::from_counters(&c).ssd_read_user;
    assert!(after_one > opened);
    t.get(k, IoPurpose::Compaction, true).unwrap().unwrap();
    assert_eq!(c.block_cache_misses.load(Relaxed), 2);
    assert!(crate::stats::DbStats::from_counters(&c).ssd_read_compaction > 0);
    assert!(cache.usage_bytes() > 0);
    t.get(k, IoPurpose::UserRead, true).unwrap().unwrap();
    assert_eq!(c.block_cache_hits.load(Relaxed), 1);
    assert_eq!(
        crate::stats::DbStats::from_counters(&c).ssd_read_user,
        after_one
    );
    // verify bypasses the cache and counts as recovery.
    t.verify().unwrap();
    assert_eq!(c.block_cache_hits.load(Relaxed), 1);
    assert!(crate::stats::DbStats::from_counters(&c).ssd_read_recovery >= t.file_size() - 4096);
    // Shared across threads.
    let handles: Vec<_> = (0..2)
        .map(|n| {
            let t = t.clone();
            let e = e.clone();
            std::thread::spawn(move || {
                for (k, v) in e.iter().skip(n).step_by(3) {
                    let got = t.get(k, IoPurpose::UserRead, true).unwrap().unwrap();
                    assert_eq!(&got.1, v);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

// ---- corruption ----

fn small_table(dir: &Path) -> (PathBuf, Entries, Vec<u8>) {
    let e = make_entries(300);
    let opts = TableOptions {
        block_size: 512,
        restart_interval: 4,
        bloom_bits_per_key: 10,
        index_partition_blocks: 0,
        value_separation: 0,
    };
    let (path, _) = write_table(dir, "000009.sst", &opts, &e);
    let bytes = std::fs::read(&path).unwrap();
    (path, e, bytes)
}

fn footer_of(bytes: &[u8]) -> Footer {
    Footer::decode(&bytes[bytes.len() - FOOTER_LEN..]).unwrap()
}

fn assert_corruption_naming(err: Error, path: &Path, offset: Option<u64>) {
    match err {
        Error::Corruption { location, .. } => {
            assert!(location.contains(&path.display().to_string()), "{location}");
            if let Some(o) = offset {
                assert!(location.contains(&format!("block at {o}")), "{location}");
            }
        }
        other => panic!("expected corruption, got {other}"),
    }
}

#[test]
fn corrupt_data_block() {
    let dir = tempfile::tempdir().unwrap();
    let (path, e, mut bytes) = small_table(dir.path());
    bytes[20] ^= 0x04; // inside the first data block
    std::fs::write(&path, &bytes).unwrap();
    let c = Arc::new(Counters::default());
    let t = open(&path, &BlockCache::new(1 << 20), &c).unwrap();
    let err = t.get(&e[0].0, IoPurpose::UserRead, true).unwrap_err();
    assert_corruption_naming(err, &path, Some(0));
    // Other blocks still answer correctly.
    let last = e.last().unwrap();
    assert_eq!(
        t.get(&last.0, IoPurpose::UserRead, true).unwrap(),
        Some(last.clone())
    );
    let mut it = t.iter(IoPurpose::UserRead, true);
    it.seek_to_first();
    assert!(!it.valid());
    assert_corruption_naming(it.status().unwrap_err(), &path, Some(0));
    assert_corruption_naming(t.verify().unwrap_err(), &path, Some(0));
}

#[test]
fn corrupt_index_filter_footer_and_truncation() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _, bytes) = small_table(dir.path());
    let f = footer_of(&bytes);
    let cache = BlockCache::new(1 << 20);
    let c = Arc::new(Counters::default());
    let cases = [
        ("index", f.index.offset + 3, Some(f.index.offset)),
        ("filter", f.filter.offset + 7, Some(f.filter.offset)),
        (
            "filter trailer",
            f.filter.offset + f.filter.size,
            Some(f.filter.offset),
        ),
        ("footer", bytes.len() as u64 - 20, None),
        ("magic", bytes.len() as u64 - 1, None),
    ];
    for (what, at, block) in cases {
        let mut bad = bytes.clone();
        bad[at as usize] ^= 0x01;
        std::fs::write(&path, &bad).unwrap();
        let err = open(&path, &cache, &c).expect_err(what);
        assert_corruption_naming(err, &path, block);
    }
    for len in [
        0,
        1,
        FOOTER_LEN - 1,
        FOOTER_LEN,
        bytes.len() / 2,
        bytes.len() - 1,
    ] {
        std::fs::write(&path, &bytes[..len]).unwrap();
        let err = open(&path, &cache, &c).expect_err("truncated");
        assert_corruption_naming(err, &path, None);
    }
}

/// A file held in memory, to run the byte-flip loop without thousands of file writes.
struct VecFile(Vec<u8>);

impl RandomAccessFile for VecFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let o = offset as usize;
        match self.0.get(o..o + buf.len()) {
            Some(s) => {
                buf.copy_from_slice(s);
                Ok(())
            }
            None => Err(Error::io(
                "read",
                "vecfile",
                std::io::Error::from(std::io::ErrorKind::UnexpectedEof),
            )),
        }
    }
    fn size(&self) -> u64 {
        self.0.len() as u64
    }
}

#[test]
fn every_byte_flip_is_detected_never_panics_never_lies() {
    byte_flips(0);
}

#[test]
fn every_byte_flip_of_a_partitioned_table_is_detected_never_panics_never_lies() {
    byte_flips(3);
}

/// Flips every byte of a small table (index partitions of `partition_blocks` data blocks; 0:
/// one index block): opening, gets, iteration and `verify` report corruption or answer right.
fn byte_flips(partition_blocks: usize) {
    let dir = tempfile::tempdir().unwrap();
    let e = make_entries(40);
    let opts = TableOptions {
        block_size: 200,
        restart_interval: 3,
        bloom_bits_per_key: 10,
        index_partition_blocks: partition_blocks,
        value_separation: 0,
    };
    let (path, _) = write_table(dir.path(), "000010.sst", &opts, &e);
    let bytes = std::fs::read(&path).unwrap();
    let probes: Vec<Vec<u8>> = (0..90)
        .map(|i| lookup_key(format!("k{i:08}").as_bytes(), MAX_SEQUENCE))
        .chain(e.iter().map(|(k, _)| k.clone()))
        .collect();
    let c = Arc::new(Counters::default());
    let mut opened = 0;
    for i in 0..bytes.len() {
        for x in [0x01u8, 0xff] {
            let mut bad = bytes.clone();
            bad[i] ^= x;
            let cache = BlockCache::new(1 << 20);
            let t = match Table::open(
                Arc::new(VecFile(bad)),
                1,
                path.clone(),
                cache,
                c.clone(),
                crate::tier::Tier::Ssd,
                Part::Stage(0),
                IoPurpose::UserRead,
            ) {
                Ok(t) => {
                    opened += 1;
                    t
                }
                Err(err) => {
                    assert!(err.is_corruption(), "byte {i}: {err}");
                    continue;
                }
            };
            for p in &probes {
                match t.get(p, IoPurpose::UserRead, true) {
                    Ok(got) => assert_eq!(got, expected_get(&e, p), "byte {i}"),
                    Err(err) => assert!(err.is_corruption(), "byte {i}: {err}"),
                }
            }
            let mut it = t.iter(IoPurpose::UserRead, false);
            it.seek_to_first();
            let got = collect(&mut it);
            assert_eq!(&got[..], &e[..got.len()], "byte {i}");
            if got.len() < e.len() {
                assert!(it.status().unwrap_err().is_corruption());
            }
            // Every byte is covered by a checksum, so verify must always notice.
            let err = t.verify().expect_err("verify accepted a damaged table");
            assert!(err.is_corruption(), "byte {i}: {err}");
        }
    }
    // Flips in data blocks leave the table openable: those exercised get/iter on damaged blocks.
    let f = footer_of(&bytes);
    assert!(
        f.filter.offset > 600,
        "table too small: {}",
        f.filter.offset
    );
    assert!(opened >= 2 * f.filter.offset as usize, "{opened} opened");
}

/// Every entry is found in the data block the builder said it went into, through that block
/// alone; a handle that is not one of the table's data blocks is corruption.
#[test]
fn entries_are_found_in_their_recorded_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let opts = TableOptions {
        block_size: 256,
        bloom_bits_per_key: 0,
        ..TableOptions::default()
    };
    let e = make_entries(400);
    let path = dir.path().join("located.sst");
    let file = PosixFs.create(&path).unwrap();
    let mut b = TableBuilder::new(&opts, file, path.clone());
    let mut block_of = Vec::new();
    for (k, v) in &e {
        block_of.push(b.next_block());
        b.add(k, v).unwrap();
    }
    let s = b.finish().unwrap();
    assert!(s.data_blocks.len() > 20, "small blocks: many of them");
    let cache = Arc::new(BlockCache::new(1 << 20));
    let c = Arc::new(Counters::default());
    let t = open(&path, &cache, &c).unwrap();
    assert_eq!(t.num_data_blocks(), s.data_blocks.len());
    for ((k, v), &blk) in e.iter().zip(&block_of) {
        let got = t
            .get_in_block(s.data_blocks[blk], k, IoPurpose::UserRead, true)
            .unwrap();
        assert_eq!(got, Some((k.clone(), v.clone())));
    }
    // Another block does not hold the key.
    let (k, _) = &e[0];
    let last = *s.data_blocks.last().unwrap();
    assert_eq!(
        t.get_in_block(last, k, IoPurpose::UserRead, true).unwrap(),
        None
    );
    // A handle off the table's blocks.
    let bad = crate::sst::format::BlockHandle {
        offset: s.data_blocks[1].offset + 1,
        size: s.data_blocks[1].size,
    };
    let err = t
        .get_in_block(bad, k, IoPurpose::UserRead, true)
        .unwrap_err();
    assert_corruption_naming(err, &path, Some(bad.offset));
}

/// Every entry of `t`, values resolved.
fn all(t: &Arc<Table>) -> Entries {
    let mut it = t.iter(IoPurpose::UserRead, false);
    it.seek_to_first();
    let got = collect(&mut it);
    it.status().unwrap();
    got
}

/// Writes `e` as separated table `number` (values of `threshold` bytes or more to its log).
fn write_separated(
    dir: &Path,
    number: u64,
    threshold: usize,
    e: &Entries,
) -> (PathBuf, TableSummary) {
    let path = dir.join(format!("{number:06}.sst"));
    let file = PosixFs.create(&path).unwrap();
    let mut b = TableBuilder::new(&TableOptions::default(), file, path.clone());
    b.separate_values(
        ValueLogWriter::new(Arc::new(PosixFs), dir, number),
        threshold,
    );
    for (k, v) in e {
        b.add(k, v).unwrap();
    }
    (path, b.finish().unwrap())
}

fn open_separated(path: &Path, number: u64, logs: &Arc<ValueLogs>) -> Result<Arc<Table>> {
    let f = PosixFs.open_readable(path)?;
    Table::open_with_values(
        f,
        number,
        path.to_path_buf(),
        BlockCache::new(1 << 20),
        Arc::new(Counters::default()),
        (crate::tier::Tier::Ssd, Part::Stage(0), IoPurpose::UserRead),
        Some(Arc::clone(logs)),
    )
}

fn logs_of(dir: &Path) -> Arc<ValueLogs> {
    Arc::new(ValueLogs::new(
        dir.to_path_buf(),
        Arc::new(PosixFs),
        None,
        Arc::new(Counters::default()),
        16,
    ))
}

#[test]
fn separated_values_round_trip_copy_and_collect() {
    let dir = tempfile::tempdir().unwrap();
    let e = make_entries(2_000);
    // Values are 12..30 bytes: about half go to the log.
    let (path, s) = write_separated(dir.path(), 1, 20, &e);
    let log = value_log::value_log_file_name(dir.path(), 1);
    let big: Vec<_> = e.iter().filter(|(_, v)| v.len() >= 20).collect();
    assert!(!big.is_empty() && big.len() < e.len());
    let log_bytes: u64 = big.iter().map(|(_, v)| v.len() as u64 + 4).sum();
    assert_eq!(s.value_log_bytes, log_bytes);
    assert_eq!(s.value_refs, vec![(1, log_bytes)]);
    assert_eq!(std::fs::metadata(&log).unwrap().len(), log_bytes);
    let logs = logs_of(dir.path());
    let t = open_separated(&path, 1, &logs).unwrap();
    assert!(t.is_separated());
    assert_eq!(all(&t), e);
    for (k, _) in e.iter().step_by(7) {
        assert_eq!(
            t.get(k, IoPurpose::UserRead, false).unwrap(),
            expected_get(&e, k)
        );
    }
    assert_eq!(t.verify().unwrap(), e.len() as u64);
    // Stored values: a tag, then the value or a pointer.
    let mut raw = t.iter_stored(IoPurpose::Compaction);
    raw.seek_to_first();
    let stored = collect(&mut raw);
    for ((k, v), (sk, sv)) in e.iter().zip(&stored) {
        assert_eq!(k, sk);
        match value_log::decode_stored(sv).unwrap() {
            value_log::Stored::Inline(x) => assert_eq!(x, &v[..]),
            value_log::Stored::Pointer(p) => {
                assert!(v.len() >= 20);
                assert_eq!((p.number, p.len as usize), (1, v.len()));
            }
        }
    }
    // A compaction copying stored values writes no value again: table 2 names log 1.
    let copy = |number: u64, rewrite: bool| {
        let path = dir.path().join(format!("{number:06}.sst"));
        let mut b = TableBuilder::new(
            &TableOptions::default(),
            PosixFs.create(&path).unwrap(),
            path.clone(),
        );
        b.separate_values(
            ValueLogWriter::new(Arc::new(PosixFs), dir.path(), number),
            20,
        );
        if rewrite {
            b.rewrite_value_logs(
                [1].into_iter().collect(),
                Arc::clone(&logs),
                crate::tier::Tier::Ssd,
                Part::Stage(0),
            );
        }
        for (k, v) in &stored {
            b.add_stored(k, v).unwrap();
        }
        (path, b.finish().unwrap())
    };
    let (p2, s2) = copy(2, false);
    assert_eq!(
        (s2.value_log_bytes, s2.value_refs.clone()),
        (0, vec![(1, log_bytes)])
    );
    assert!(!value_log::value_log_file_name(dir.path(), 2).exists());
    let t2 = open_separated(&p2, 2, &logs).unwrap();
    assert_eq!(all(&t2), e);
    // Collecting log 1: its values are copied into log 3, which table 3 alone names.
    let (p3, s3) = copy(3, true);
    assert_eq!(s3.value_refs, vec![(3, log_bytes)]);
    assert_eq!(s3.value_log_bytes, log_bytes);
    std::fs::remove_file(&log).unwrap();
    logs.evict(1);
    let t3 = open_separated(&p3, 3, &logs).unwrap();
    assert_eq!(all(&t3), e);
    assert_eq!(t3.verify().unwrap(), e.len() as u64);
    // Table 2 points into the removed log: corruption, never a value.
    let (k, _) = big[0];
    assert!(matches!(
        t2.get(k, IoPurpose::UserRead, false),
        Err(Error::Corruption { .. })
    ));
    assert!(t2.verify().is_err());
    // A table opened without the logs reports its pointers.
    let bare = open(
        &p3,
        &BlockCache::new(1 << 20),
        &Arc::new(Counters::default()),
    )
    .unwrap();
    assert!(matches!(
        bare.get(k, IoPurpose::UserRead, false),
        Err(Error::Corruption { .. })
    ));
    // A table without separation refuses stored values.
    let plain = dir.path().join("000009.sst");
    let mut b = TableBuilder::new(
        &TableOptions::default(),
        PosixFs.create(&plain).unwrap(),
        plain.clone(),
    );
    assert!(b.add_stored(&stored[0].0, &stored[0].1).is_err());
}

#[test]
fn every_value_log_byte_flip_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    let ik = |k: &[u8]| make_internal_key(k, 5, ValueType::Value);
    let e: Entries = vec![
        (ik(b"a"), vec![b'x'; 40]),
        (ik(b"b"), b"small".to_vec()),
        (ik(b"c"), (0..90u8).collect()),
    ];
    let (path, s) = write_separated(dir.path(), 4, 32, &e);
    let log = value_log::value_log_file_name(dir.path(), 4);
    let good = std::fs::read(&log).unwrap();
    assert_eq!(good.len() as u64, s.value_log_bytes);
    for i in 0..good.len() {
        let mut bad = good.clone();
        bad[i] ^= 0x04;
        std::fs::write(&log, &bad).unwrap();
        let logs = logs_of(dir.path());
        let t = open_separated(&path, 4, &logs).unwrap();
        let errors = [&e[0].0, &e[2].0]
            .iter()
            .filter(|k| {
                matches!(
                    t.get(k, IoPurpose::UserRead, false),
                    Err(Error::Corruption { .. })
                )
            })
            .count();
        assert_eq!(errors, 1, "flip at {i}");
        let mut it = t.iter(IoPurpose::UserRead, false);
        it.seek_to_first();
        let got = collect(&mut it);
        assert!(it.status().is_err() && got.len() < e.len(), "flip at {i}");
        assert!(t.verify().is_err());
    }
    // A short log: the pointer past its end is corruption.
    std::fs::write(&log, &good[..good.len() - 1]).unwrap();
    let t = open_separated(&path, 4, &logs_of(dir.path())).unwrap();
    assert!(matches!(
        t.get(&e[2].0, IoPurpose::UserRead, false),
        Err(Error::Corruption { .. })
    ));
}
