//! Pool-level tests: file pools in every mode, bounds checks, allocator (a full file system
//! included, simulated and, with root, real), latency and the crash-simulation backend (the
//! images it yields for every state a line can be in).
//!
//! **Thread safety / durability.** Tests only; each test owns its pools and temp files.

use crate::*;
use std::collections::BTreeSet;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const KB: u64 = 1024;

fn small_opts(mode: DurabilityMode) -> PoolOptions {
    PoolOptions {
        size: 256 * KB,
        mode,
        latency: LatencyModel::DRAM,
        chunk_size: 16 * KB,
    }
}

fn sim(check: bool) -> Arc<PmPool> {
    PmPool::create_crash_sim(&small_opts(DurabilityMode::Emulated), check).unwrap()
}

fn is_invalid<T: std::fmt::Debug>(r: PmResult<T>) -> bool {
    matches!(r, Err(PmError::InvalidArgument(_)))
}

fn corruption_reason<T: std::fmt::Debug>(r: PmResult<T>) -> String {
    match r {
        Err(e @ PmError::Corruption { .. }) => e.to_string(),
        other => panic!("expected Corruption, got {other:?}"),
    }
}

// ---------------------------------------------------------------- header / create / open

#[test]
fn a_private_open_reads_the_pool_and_never_writes_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pool.pm");
    let opts = small_opts(DurabilityMode::Msync);
    let chunk = {
        let p = PmPool::create(&path, &opts).unwrap();
        let c = p.allocate_chunk().unwrap();
        p.write(c, b"durable").unwrap();
        p.persist(c, 7).unwrap();
        p.set_root(0, c).unwrap();
        c
    };
    let before = std::fs::read(&path).unwrap();
    // A file nobody may write (as on a read-only mount) still opens.
    let mut perms = std::fs::metadata(&path).unwrap().permissions();
    perms.set_readonly(true);
    std::fs::set_permissions(&path, perms).unwrap();
    {
        let p = PmPool::open_private(&path, &opts, 4 * 16 * KB + 5).unwrap();
        // Four chunks of headroom after the file's sixteen.
        assert_eq!(p.size(), 20 * 16 * KB);
        assert_eq!(p.root(0), chunk);
        let mut buf = [0u8; 7];
        p.read(chunk, &mut buf).unwrap();
        assert_eq!(&buf, b"durable");
        // Stores, persists, msyncs and new chunks all work, in this process only.
        p.rebuild_allocator(&[chunk]).unwrap();
        let c2 = p.allocate_chunk().unwrap();
        p.write(c2, b"private").unwrap();
        p.persist(c2, 7).unwrap();
        p.msync(c2, 7).unwrap();
        p.set_root(1, c2).unwrap();
        // Every chunk, the headroom's included, can be allocated and written.
        while let Ok(c) = p.allocate_zeroed_chunk(0) {
            p.write(c + 16 * KB - 8, b"headroom").unwrap();
            p.persist(c + 16 * KB - 8, 8).unwrap();
        }
        assert_eq!(p.free_chunks(), 0);
        p.write(chunk, b"changed").unwrap();
        p.persist(chunk, 7).unwrap();
        p.read(chunk, &mut buf).unwrap();
        assert_eq!(&buf, b"changed");
        assert_eq!(p.root(1), c2);
    }
    assert!(
        std::fs::read(&path).unwrap() == before,
        "a private open changed the pool file"
    );
    // A damaged header is refused as by a writable open.
    let bad = dir.path().join("bad.pm");
    std::fs::write(&bad, vec![0u8; 256 * KB as usize]).unwrap();
    corruption_reason(PmPool::open_private(&bad, &opts, 0));
}

#[test]
fn a_grown_pool_keeps_its_data_and_gains_free_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pool.pm");
    let opts = small_opts(DurabilityMode::Msync);
    let chunks: Vec<u64> = {
        let p = PmPool::create(&path, &opts).unwrap();
        let all: Vec<u64> = std::iter::from_fn(|| p.allocate_chunk().ok()).collect();
        for &c in &all {
            p.write(c, &c.to_le_bytes()).unwrap();
            p.persist(c, 8).unwrap();
        }
        all
    };
    assert_eq!(chunks.len(), 15);
    // Not smaller, not the same, not between chunks.
    for bad in [128 * KB, 256 * KB, 300 * KB] {
        assert!(is_invalid(PmPool::grow(&path, bad)), "{bad}");
    }
    assert_eq!(PmPool::grow(&path, 512 * KB).unwrap(), 256 * KB);
    let p = PmPool::open(&path, &opts).unwrap();
    assert_eq!((p.size(), p.chunk_count()), (512 * KB, 32));
    p.rebuild_allocator(&chunks).unwrap();
    assert_eq!(p.free_chunks(), 16);
    for &c in &chunks {
        assert_eq!(p.load_u64(c).unwrap(), c);
    }
    let fresh = p.allocate_chunk().unwrap();
    assert!(fresh >= 256 * KB);
    drop(p);
    // Grown again; then an interrupted grow (the file lengthened, the header not yet) is
    // refused by name and finished by running grow again.
    PmPool::grow(&path, 768 * KB).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(1024 * KB).unwrap();
    let err = PmPool::open(&path, &opts).unwrap_err().to_string();
    assert!(err.contains("grow-pool"), "{err}");
    assert_eq!(PmPool::grow(&path, 1024 * KB).unwrap(), 768 * KB);
    let p = PmPool::open(&path, &opts).unwrap();
    assert_eq!(p.size(), 1024 * KB);
    assert_eq!(p.load_u64(chunks[3]).unwrap(), chunks[3]);
    drop(p);
    // A file shorter than its header records is damage, never grown over.
    f.set_len(512 * KB).unwrap();
    corruption_reason(PmPool::grow(&path, 2048 * KB));
}

#[test]
fn header_round_trip_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pool.pm");
    let opts = small_opts(DurabilityMode::Emulated);
    {
        let p = PmPool::create(&path, &opts).unwrap();
        assert_eq!(p.size(), 256 * KB);
        assert_eq!(p.chunk_size(), 16 * KB);
        assert_eq!(p.mode(), DurabilityMode::Emulated);
        assert_eq!(p.chunk_count(), 16);
        assert!(!p.is_crash_sim());
        for s in 0..ROOT_SLOTS {
            assert_eq!(p.root(s), 0);
        }
        p.set_root(0, 0xdead_beef).unwrap();
        p.set_root(ROOT_SLOTS - 1, 42).unwrap();
    }
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 256 * KB);
    // Geometry comes from the header, not from the options given to open.
    let other = PoolOptions {
        size: 1 << 30,
        chunk_size: 4 << 20,
        ..opts.clone()
    };
    let p = PmPool::open(&path, &other).unwrap();
    assert_eq!(p.size(), 256 * KB);
    assert_eq!(p.chunk_size(), 16 * KB);
    assert_eq!(p.root(0), 0xdead_beef);
    assert_eq!(p.root(ROOT_SLOTS - 1), 42);
    assert_eq!(p.root(1), 0);
    let mut magic = [0u8; 8];
    p.read(0, &mut magic).unwrap();
    assert_eq!(u64::from_le_bytes(magic), POOL_MAGIC);
}

#[test]
fn damaged_header_is_corruption_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("damaged.pm");
    let opts = small_opts(DurabilityMode::Emulated);
    drop(PmPool::create(&path, &opts).unwrap());
    let good = std::fs::read(&path).unwrap();
    // Any byte of the checksummed fields (magic, version, sizes, crc).
    for at in [3usize, 8, 12, 17, 25, 33] {
        let mut bytes = good.clone();
        bytes[at] ^= 0x01;
        std::fs::write(&path, &bytes).unwrap();
        let msg = corruption_reason(PmPool::open(&path, &opts));
        assert!(msg.contains("damaged.pm"), "{msg}");
    }
    // Root slots are not checksummed: changing one is not corruption.
    let mut bytes = good.clone();
    bytes[ROOTS_OFFSET as usize] = 7;
    std::fs::write(&path, &bytes).unwrap();
    assert_eq!(PmPool::open(&path, &opts).unwrap().root(0), 7);
}

#[test]
fn wrong_magic_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("magic.pm");
    let opts = small_opts(DurabilityMode::Emulated);
    drop(PmPool::create(&path, &opts).unwrap());
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[..8].copy_from_slice(b"NOTAPOOL");
    std::fs::write(&path, &bytes).unwrap();
    let msg = corruption_reason(PmPool::open(&path, &opts));
    assert!(msg.contains("magic") && msg.contains("magic.pm"), "{msg}");
    // A file of zeros is not a pool either.
    std::fs::write(&path, vec![0u8; 256 * KB as usize]).unwrap();
    corruption_reason(PmPool::open(&path, &opts));
}

#[test]
fn too_small_or_truncated_file_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("small.pm");
    let opts = small_opts(DurabilityMode::Emulated);
    for len in [0usize, 10, HEADER_LEN as usize - 1] {
        std::fs::write(&path, vec![0u8; len]).unwrap();
        let msg = corruption_reason(PmPool::open(&path, &opts));
        assert!(msg.contains("small.pm"), "{msg}");
    }
    // A valid header whose file was truncated.
    drop(PmPool::create(&path, &opts).unwrap());
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(128 * KB).unwrap();
    drop(f);
    let msg = corruption_reason(PmPool::open(&path, &opts));
    assert!(msg.contains("bytes"), "{msg}");
    // Missing file: an I/O error, not a panic.
    assert!(matches!(
        PmPool::open(&dir.path().join("missing.pm"), &opts),
        Err(PmError::Io { .. })
    ));
}

#[test]
fn bad_create_options_are_invalid_argument() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.pm");
    let base = small_opts(DurabilityMode::Emulated);
    let cases = [
        (16 * KB, 16 * KB),  // one chunk only
        (100 * KB, 16 * KB), // not a multiple
        (256 * KB, 0),       // zero chunk
        (256 * KB, 1000),    // chunk not a multiple of 4096
        (0, 16 * KB),        // empty
    ];
    for (size, chunk_size) in cases {
        let o = PoolOptions {
            size,
            chunk_size,
            ..base.clone()
        };
        assert!(is_invalid(PmPool::create(&path, &o)), "{size} {chunk_size}");
        assert!(is_invalid(PmPool::create_crash_sim(&o, false)));
    }
}

#[test]
fn dax_on_a_regular_file_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dax.pm");
    match PmPool::create(&path, &small_opts(DurabilityMode::Dax)) {
        Err(PmError::InvalidArgument(msg)) => {
            eprintln!("{msg}");
            assert!(msg.contains("DAX"), "{msg}");
            assert!(msg.contains("dax.pm"), "{msg}");
        }
        Err(other) => panic!("unexpected error {other:?}"),
        // A real DAX file system: then it must work.
        Ok(p) => {
            assert_eq!(p.mode(), DurabilityMode::Dax);
            p.write(4096, b"dax").unwrap();
            p.persist(4096, 3).unwrap();
        }
    }
}

// ---------------------------------------------------------------- bounds

fn assert_all_accessors_reject_bad_ranges(p: &PmPool) {
    let size = p.size();
    let mut buf = [0u8; 16];
    let bad: [(u64, u64); 5] = [
        (size, 1),
        (size - 1, 2),
        (u64::MAX, 1),
        (1, u64::MAX),
        (u64::MAX - 3, 8),
    ];
    for (off, len) in bad {
        assert!(!p.slice_len_ok(off, len));
        assert!(is_invalid(p.flush(off, len)), "flush {off} {len}");
        assert!(is_invalid(p.persist(off, len)), "persist {off} {len}");
        assert!(is_invalid(p.msync(off, len)), "msync {off} {len}");
        if len <= 16 {
            assert!(is_invalid(p.read(off, &mut buf[..len as usize])));
            assert!(is_invalid(p.write(off, &buf[..len as usize])));
            assert!(is_invalid(p.write_nt(off, &buf[..len as usize])));
        }
    }
    for off in [size, size - 4, u64::MAX - 7, u64::MAX] {
        assert!(is_invalid(p.load_u64(off)), "load_u64 {off}");
        assert!(is_invalid(p.store_u64_persist(off, 1)), "store {off}");
    }
    // Misaligned u64 accesses.
    for off in [4097u64, 4100, 4103] {
        assert!(is_invalid(p.load_u64(off)));
        assert!(is_invalid(p.store_u64_persist(off, 1)));
    }
    // The header is not writable through the byte API.
    assert!(is_invalid(p.write(0, b"x")));
    assert!(is_invalid(p.write(HEADER_LEN - 1, b"xy")));
    assert!(is_invalid(p.write_nt(8, &[0u8; 8])));
    assert!(is_invalid(p.store_u64_persist(ROOTS_OFFSET, 5)));
    assert!(is_invalid(p.set_root(ROOT_SLOTS, 5)));
    assert_eq!(p.root(ROOT_SLOTS), 0);
    assert_eq!(p.root(usize::MAX), 0);
    // Edges that are in range succeed.
    assert!(p.slice_len_ok(size, 0));
    p.read(size, &mut []).unwrap();
    p.write(size, &[]).unwrap();
    p.flush(size, 0).unwrap();
    p.persist(size, 0).unwrap();
    p.write(size - 8, &[9u8; 8]).unwrap();
    p.persist(size - 8, 8).unwrap();
    p.store_u64_persist(size - 8, 77).unwrap();
    assert_eq!(p.load_u64(size - 8).unwrap(), 77);
    p.write(HEADER_LEN, b"ok").unwrap();
    p.read(0, &mut buf).unwrap(); // the header is readable
}

#[test]
fn every_accessor_rejects_out_of_range_and_misaligned_accesses() {
    assert_all_accessors_reject_bad_ranges(&sim(true));
    let dir = tempfile::tempdir().unwrap();
    for mode in [DurabilityMode::Emulated, DurabilityMode::Msync] {
        let p = PmPool::create(&dir.path().join("b.pm"), &small_opts(mode)).unwrap();
        assert_all_accessors_reject_bad_ranges(&p);
    }
}

// ---------------------------------------------------------------- file pools

fn file_round_trip(mode: DurabilityMode) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rt.pm");
    let opts = small_opts(mode);
    let data: Vec<u8> = (0..5000u32).map(|i| (i * 7 + 3) as u8).collect();
    let nt: Vec<u8> = (0..3001u32).map(|i| (i * 13 + 1) as u8).collect();
    {
        let p = PmPool::create(&path, &opts).unwrap();
        assert_eq!(p.mode(), mode);
        let c = p.allocate_chunk().unwrap();
        p.write(c + 5, &data).unwrap();
        p.persist(c + 5, data.len() as u64).unwrap();
        p.write_nt(c + 8000 + 3, &nt).unwrap();
        p.fence();
        p.store_u64_persist(c + 12000, 0x0123_4567_89ab_cdef)
            .unwrap();
        p.set_root(3, c).unwrap();
        p.msync(c, 16 * KB).unwrap();
        let mut back = vec![0u8; data.len()];
        p.read(c + 5, &mut back).unwrap();
        assert_eq!(back, data);
        let s = p.stats();
        assert!(s.fences >= 3);
        assert!(s.lines_written_back >= 5000 / 64);
        assert_eq!(s.bytes_allocated, 16 * KB);
    }
    let p = PmPool::open(&path, &opts).unwrap();
    let c = p.root(3);
    assert_eq!(c, 16 * KB);
    let mut back = vec![0u8; data.len()];
    p.read(c + 5, &mut back).unwrap();
    assert_eq!(back, data);
    let mut back = vec![0u8; nt.len()];
    p.read(c + 8003, &mut back).unwrap();
    assert_eq!(back, nt);
    assert_eq!(p.load_u64(c + 12000).unwrap(), 0x0123_4567_89ab_cdef);
    assert_eq!(p.stats().bytes_read, (data.len() + nt.len() + 8) as u64);
}

#[test]
fn emulated_file_pool_round_trip_and_reopen() {
    file_round_trip(DurabilityMode::Emulated);
}

#[test]
fn msync_file_pool_round_trip_and_reopen() {
    file_round_trip(DurabilityMode::Msync);
}

#[test]
fn create_overwrites_an_existing_pool() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ow.pm");
    let opts = small_opts(DurabilityMode::Emulated);
    {
        let p = PmPool::create(&path, &opts).unwrap();
        p.set_root(0, 9).unwrap();
        p.write(HEADER_LEN, b"old").unwrap();
        p.persist(HEADER_LEN, 3).unwrap();
    }
    let p = PmPool::create(&path, &opts).unwrap();
    assert_eq!(p.root(0), 0);
    let mut b = [1u8; 3];
    p.read(HEADER_LEN, &mut b).unwrap();
    assert_eq!(b, [0, 0, 0]);
}

#[test]
fn flush_instruction_is_detected_and_persist_works() {
    let insn = flush_instruction();
    assert!(["clwb", "clflushopt", "clflush", "msync"].contains(&insn));
    #[cfg(target_arch = "x86_64")]
    assert_ne!(insn, "msync");
    let dir = tempfile::tempdir().unwrap();
    let p = PmPool::create(
        &dir.path().join("f.pm"),
        &small_opts(DurabilityMode::Emulated),
    )
    .unwrap();
    let before = p.stats();
    p.write(4096 + 10, &[0xaa; 200]).unwrap();
    p.persist(4096 + 10, 200).unwrap();
    let after = p.stats();
    assert_eq!(after.lines_written_back - before.lines_written_back, 4);
    assert_eq!(after.fences - before.fences, 1);
    assert_eq!(p.fence_count(), after.fences);
    let mut b = [0u8; 200];
    p.read(4096 + 10, &mut b).unwrap();
    assert!(b.iter().all(|&x| x == 0xaa));
}

#[test]
fn concurrent_writers_on_disjoint_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let p = PmPool::create(
        &dir.path().join("c.pm"),
        &small_opts(DurabilityMode::Emulated),
    )
    .unwrap();
    let s = sim(true);
    for pool in [p, s] {
        let chunks: Vec<u64> = (0..4).map(|_| pool.allocate_chunk().unwrap()).collect();
        std::thread::scope(|sc| {
            for (t, &c) in chunks.iter().enumerate() {
                let pool = &pool;
                sc.spawn(move || {
                    for i in 0..200u64 {
                        let rec = [(t as u8) ^ (i as u8); 72];
                        let off = c + i * 72;
                        pool.write(off, &rec).unwrap();
                        pool.persist(off, 72).unwrap();
                    }
                    pool.store_u64_persist(c + 16 * KB - 8, t as u64 + 1)
                        .unwrap();
                });
            }
        });
        for (t, &c) in chunks.iter().enumerate() {
            for i in 0..200u64 {
                let mut rec = [0u8; 72];
                pool.read(c + i * 72, &mut rec).unwrap();
                assert!(rec.iter().all(|&b| b == (t as u8) ^ (i as u8)));
            }
            assert_eq!(pool.load_u64(c + 16 * KB - 8).unwrap(), t as u64 + 1);
        }
        if pool.is_crash_sim() {
            let strict = pool.crash_image(CrashImage::Strict).unwrap();
            let c = chunks[2] as usize;
            assert!(strict[c..c + 72].iter().all(|&b| b == 2));
        }
    }
}

// ---------------------------------------------------------------- allocator

#[test]
fn allocator_exhaustion_free_and_reuse() {
    let p = sim(false);
    let mut got = Vec::new();
    loop {
        match p.allocate_chunk() {
            Ok(c) => got.push(c),
            Err(PmError::NoSpace(msg)) => {
                assert!(!msg.is_empty());
                break;
            }
            Err(e) => panic!("{e:?}"),
        }
    }
    assert_eq!(got.len(), 15); // 16 chunks, chunk 0 is the header
    assert!(got
        .iter()
        .all(|&c| c != 0 && c % p.chunk_size() == 0 && c < p.size()));
    let mut sorted = got.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), 15);
    assert_eq!(p.stats().bytes_allocated, 15 * 16 * KB);
    assert_eq!(p.free_chunks(), 0);
    p.free_chunk(got[4]);
    assert_eq!(p.stats().bytes_allocated, 14 * 16 * KB);
    assert_eq!(p.allocate_chunk().unwrap(), got[4]);
    assert!(matches!(p.allocate_chunk(), Err(PmError::NoSpace(_))));
}

#[test]
fn bad_frees_never_corrupt_the_free_list() {
    let p = sim(false);
    let a = p.allocate_chunk().unwrap();
    assert!(is_invalid(p.try_free_chunk(0)));
    assert!(is_invalid(p.try_free_chunk(a + 1)));
    assert!(is_invalid(p.try_free_chunk(p.size())));
    assert!(is_invalid(p.try_free_chunk(u64::MAX - 15)));
    assert!(is_invalid(p.try_free_chunk(a + p.chunk_size()))); // never allocated
    p.try_free_chunk(a).unwrap();
    assert!(is_invalid(p.try_free_chunk(a))); // double free
    assert_eq!(p.free_chunks(), 15);
    assert_eq!(p.stats().bytes_allocated, 0);
    let all: Vec<u64> = (0..15).map(|_| p.allocate_chunk().unwrap()).collect();
    let mut s = all.clone();
    s.sort_unstable();
    s.dedup();
    assert_eq!(s.len(), 15);
}

#[test]
#[cfg_attr(debug_assertions, should_panic(expected = "double free"))]
fn free_chunk_double_free_asserts_in_debug() {
    let p = sim(false);
    let a = p.allocate_chunk().unwrap();
    p.free_chunk(a);
    p.free_chunk(a);
    // Release builds ignore it: the chunk is handed out once only.
    assert_eq!(p.free_chunks(), 15);
}

#[test]
fn rebuild_allocator_after_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rb.pm");
    let opts = small_opts(DurabilityMode::Emulated);
    let (published, unpublished) = {
        let p = PmPool::create(&path, &opts).unwrap();
        let a = p.allocate_chunk().unwrap();
        let b = p.allocate_chunk().unwrap();
        let c = p.allocate_chunk().unwrap();
        p.set_root(0, b).unwrap(); // only b is published
        ((a, b), c)
    };
    let p = PmPool::open(&path, &opts).unwrap();
    // Volatile allocator: everything is free after open.
    assert_eq!(p.free_chunks(), 15);
    assert_eq!(p.stats().bytes_allocated, 0);
    let live = [published.0, published.1];
    // Rejected lists leave the allocator unchanged.
    assert!(is_invalid(p.rebuild_allocator(&[published.0, 100])));
    assert!(is_invalid(p.rebuild_allocator(&[0])));
    assert!(is_invalid(p.rebuild_allocator(&[p.size()])));
    assert!(is_invalid(p.rebuild_allocator(&[u64::MAX - 16 * KB + 1])));
    assert!(is_invalid(p.rebuild_allocator(&[published.1, published.1])));
    assert_eq!(p.free_chunks(), 15);
    p.rebuild_allocator(&live).unwrap();
    assert_eq!(p.free_chunks(), 13);
    assert_eq!(p.stats().bytes_allocated, 2 * 16 * KB);
    let mut handed = Vec::new();
    while let Ok(c) = p.allocate_chunk() {
        handed.push(c);
    }
    assert_eq!(handed.len(), 13);
    assert!(!handed.contains(&published.0) && !handed.contains(&published.1));
    assert!(handed.contains(&unpublished)); // the unpublished chunk did not leak
    assert!(!handed.contains(&0));
    // Rebuilding again resets to exactly `live`.
    p.rebuild_allocator(&[]).unwrap();
    assert_eq!(p.free_chunks(), 15);
}

// ---------------------------------------------------------------- latency

#[test]
fn write_latency_slows_persist() {
    let slow = LatencyModel {
        read_ns: 0,
        write_ns: 1000,
    };
    let opts = PoolOptions {
        size: 2048 * KB,
        latency: slow,
        chunk_size: 1024 * KB,
        ..small_opts(DurabilityMode::Emulated)
    };
    let p = PmPool::create_crash_sim(&opts, false).unwrap();
    assert_eq!(p.latency(), slow);
    let t = Instant::now();
    p.persist(1024 * KB, 10_000 * 64).unwrap();
    let elapsed = t.elapsed();
    assert_eq!(p.stats().lines_written_back, 10_000);
    // 10,000 lines x 1000 ns = 10 ms of added latency; 5 ms is a safe lower bound.
    assert!(elapsed >= Duration::from_millis(5), "{elapsed:?}");

    let fast = PmPool::create_crash_sim(&small_opts(DurabilityMode::Emulated), false).unwrap();
    fast.persist(0, 256 * KB).unwrap();
    assert_eq!(fast.stats().lines_written_back, 4096);
}

#[test]
fn read_latency_applies_per_read_access() {
    let opts = PoolOptions {
        latency: LatencyModel {
            read_ns: 50_000,
            write_ns: 0,
        },
        ..small_opts(DurabilityMode::Emulated)
    };
    let p = PmPool::create_crash_sim(&opts, false).unwrap();
    let t = Instant::now();
    let mut b = [0u8; 8];
    for _ in 0..100 {
        p.read(4096, &mut b).unwrap();
    }
    assert!(t.elapsed() >= Duration::from_millis(5));
    assert_eq!(p.stats().bytes_read, 800);
}

// ---------------------------------------------------------------- crash simulation

fn word(img: &[u8], off: u64) -> u64 {
    u64::from_le_bytes(img[off as usize..off as usize + 8].try_into().unwrap())
}

#[test]
fn crash_sim_dirty_pending_and_fenced_lines() {
    let p = sim(true);
    assert_eq!(p.mode(), DurabilityMode::Emulated);
    let c = p.allocate_chunk().unwrap();
    // Never flushed: absent from Strict, present in AllPending.
    p.write(c, &[1u8; 64]).unwrap();
    let strict = p.crash_image(CrashImage::Strict).unwrap();
    let all = p.crash_image(CrashImage::AllPending).unwrap();
    assert_eq!(&strict[c as usize..c as usize + 64], &[0u8; 64]);
    assert_eq!(&all[c as usize..c as usize + 64], &[1u8; 64]);
    // Flushed, not fenced: still absent from Strict, present in AllPending.
    p.flush(c, 64).unwrap();
    let strict = p.crash_image(CrashImage::Strict).unwrap();
    let all = p.crash_image(CrashImage::AllPending).unwrap();
    assert_eq!(&strict[c as usize..c as usize + 64], &[0u8; 64]);
    assert_eq!(&all[c as usize..c as usize + 64], &[1u8; 64]);
    // A store after the flush is not covered by the pending write-back.
    p.write(c, &[2u8; 8]).unwrap();
    p.fence();
    let strict = p.crash_image(CrashImage::Strict).unwrap();
    assert_eq!(&strict[c as usize..c as usize + 64], &[1u8; 64]);
    let all = p.crash_image(CrashImage::AllPending).unwrap();
    assert_eq!(&all[c as usize..c as usize + 8], &[2u8; 8]);
    // Persisted: in Strict.
    p.persist(c, 8).unwrap();
    let strict = p.crash_image(CrashImage::Strict).unwrap();
    assert_eq!(&strict[c as usize..c as usize + 8], &[2u8; 8]);
    assert_eq!(&strict[c as usize + 8..c as usize + 64], &[1u8; 56]);
    // The header is durable from creation on.
    assert_eq!(word(&strict, 0), POOL_MAGIC);
}

#[test]
fn crash_sim_non_temporal_writes() {
    let p = sim(true);
    let c = p.allocate_chunk().unwrap();
    let data: Vec<u8> = (1..=150u8).collect();
    // Unaligned head (3 bytes), 18 streamed words, tail (3 bytes).
    p.write_nt(c + 5, &data).unwrap();
    let strict = p.crash_image(CrashImage::Strict).unwrap();
    assert!(strict[c as usize..c as usize + 256].iter().all(|&b| b == 0));
    let all = p.crash_image(CrashImage::AllPending).unwrap();
    assert_eq!(&all[c as usize + 5..c as usize + 155], &data[..]);
    p.fence();
    let strict = p.crash_image(CrashImage::Strict).unwrap();
    assert_eq!(&strict[c as usize + 5..c as usize + 155], &data[..]);
    // Streamed words on a line with other unflushed stores: only the streamed words are pending.
    p.write(c + 1024, &[7u8; 8]).unwrap();
    p.write_nt(c + 1032, &[9u8; 16]).unwrap();
    p.fence();
    let strict = p.crash_image(CrashImage::Strict).unwrap();
    assert_eq!(&strict[c as usize + 1024..c as usize + 1032], &[0u8; 8]);
    assert_eq!(&strict[c as usize + 1032..c as usize + 1048], &[9u8; 16]);
    p.persist(c + 1024, 8).unwrap();
    let strict = p.crash_image(CrashImage::Strict).unwrap();
    assert_eq!(&strict[c as usize + 1024..c as usize + 1032], &[7u8; 8]);
}

#[test]
fn store_u64_persist_and_set_root_are_in_strict_when_they_return() {
    let p = sim(true);
    let c = p.allocate_chunk().unwrap();
    p.store_u64_persist(c + 8, 0x1122_3344_5566_7788).unwrap();
    p.set_root(5, c).unwrap();
    let strict = p.crash_image(CrashImage::Strict).unwrap();
    assert_eq!(word(&strict, c + 8), 0x1122_3344_5566_7788);
    assert_eq!(word(&strict, ROOTS_OFFSET + 40), c);
    assert_eq!(p.load_u64(c + 8).unwrap(), 0x1122_3344_5566_7788);
    // msync on a crash-sim pool persists.
    p.write(c + 100, b"hello").unwrap();
    p.msync(c + 100, 5).unwrap();
    let strict = p.crash_image(CrashImage::Strict).unwrap();
    assert_eq!(&strict[c as usize + 100..c as usize + 105], b"hello");
}

#[test]
fn torn_line_images_keep_every_line_whole() {
    let p = sim(true);
    let c = p.allocate_chunk().unwrap();
    p.write(c, &[0x11; 4096]).unwrap();
    p.persist(c, 4096).unwrap();
    p.write(c, &[0x22; 2048]).unwrap(); // dirty
    p.write(c + 2048, &[0x33; 2048]).unwrap();
    p.flush(c + 2048, 2048).unwrap(); // pending
    let strict = p.crash_image(CrashImage::Strict).unwrap();
    let mut line_kinds = std::collections::HashSet::new();
    let mut distinct = std::collections::HashSet::new();
    for seed in 0..8u64 {
        let t = p.crash_image(CrashImage::TornLines(seed)).unwrap();
        assert_eq!(t, p.crash_image(CrashImage::TornLines(seed)).unwrap());
        assert_eq!(&t[..c as usize], &strict[..c as usize]);
        assert_eq!(&t[c as usize + 4096..], &strict[c as usize + 4096..]);
        for line in t[c as usize..c as usize + 4096].chunks(64) {
            assert!(
                line.iter().all(|&b| b == line[0]),
                "TornLines({seed}) tore a line: {line:?}"
            );
            line_kinds.insert(line[0]);
        }
        distinct.insert(t);
    }
    // Old lines, dirty lines and written-back lines all appear, whole.
    assert_eq!(
        line_kinds,
        [0x11u8, 0x22, 0x33]
            .into_iter()
            .collect::<std::collections::HashSet<_>>()
    );
    assert!(distinct.len() > 1, "different seeds give different images");
}

#[test]
fn torn_images_mix_old_and_new_words_deterministically() {
    let p = sim(true);
    let c = p.allocate_chunk().unwrap();
    let old: Vec<u8> = vec![0x11; 4096];
    p.write(c, &old).unwrap();
    p.persist(c, 4096).unwrap();
    let new: Vec<u8> = vec![0x22; 4096];
    p.write(c, &new[..2048]).unwrap(); // dirty
    p.write(c + 2048, &new[2048..]).unwrap();
    p.flush(c + 2048, 2048).unwrap(); // pending
    let strict = p.crash_image(CrashImage::Strict).unwrap();
    let all = p.crash_image(CrashImage::AllPending).unwrap();
    let mut saw_old = false;
    let mut saw_new = false;
    let mut distinct = std::collections::HashSet::new();
    for seed in 0..8u64 {
        let t1 = p.crash_image(CrashImage::Torn(seed)).unwrap();
        let t2 = p.crash_image(CrashImage::Torn(seed)).unwrap();
        assert_eq!(t1, t2, "Torn({seed}) is not deterministic");
        // Outside the written range, identical to Strict.
        assert_eq!(&t1[..c as usize], &strict[..c as usize]);
        assert_eq!(&t1[c as usize + 4096..], &strict[c as usize + 4096..]);
        for w in 0..512u64 {
            let v = word(&t1, c + 8 * w);
            assert!(v == word(&strict, c + 8 * w) || v == word(&all, c + 8 * w));
            saw_old |= v == 0x1111_1111_1111_1111;
            saw_new |= v == 0x2222_2222_2222_2222;
        }
        distinct.insert(t1);
    }
    assert!(saw_old && saw_new);
    assert!(distinct.len() > 1, "different seeds give different images");
    // Once everything is fenced, every image is the strict one.
    p.persist(c, 4096).unwrap();
    let strict = p.crash_image(CrashImage::Strict).unwrap();
    assert_eq!(p.crash_image(CrashImage::Torn(3)).unwrap(), strict);
    assert_eq!(p.crash_image(CrashImage::AllPending).unwrap(), strict);
}

// The simulator's images, region by region. One chunk holds 16-line regions in every state a
// line can be in when the image is taken; each region first held version 1 (durable).

/// Lines (relative to the chunk) written, written back and fenced: version 2 is durable.
const FENCED: Range<u64> = 0..16;
/// Written (version 2) and written back, not fenced: pending.
const FLUSHED: Range<u64> = 16..32;
/// Version 2 stored with `write_nt` (whole, aligned lines), not fenced: pending.
const STREAMED: Range<u64> = 32..48;
/// Version 2 stored, never written back: dirty.
const DIRTY: Range<u64> = 48..64;
/// Version 2 written back (pending), then version 3 stored over it (dirty again).
const REWRITTEN: Range<u64> = 64..80;
/// Never written after version 1.
const UNTOUCHED: Range<u64> = 80..96;
const REGION_LINES: u64 = 96;

/// Version `v` of the bytes at `[at, at + len)` (8-aligned): word `i` of the pool holds
/// `v << 56 | i`, distinct for every word and version, so an image tells which version each
/// word holds.
fn versioned(v: u64, at: u64, len: u64) -> Vec<u8> {
    (at / 8..(at + len) / 8)
        .flat_map(|i| ((v << 56) | i).to_le_bytes())
        .collect()
}

/// The version the word at `off` holds in `img` (panics on a value no version ever stored).
fn version_at(img: &[u8], off: u64) -> u64 {
    let w = word(img, off);
    assert_eq!(
        w & ((1 << 56) - 1),
        off / 8,
        "foreign value {w:#x} at {off}"
    );
    w >> 56
}

/// Byte range of `lines` of the chunk at `c`.
fn line_bytes(c: u64, lines: &Range<u64>) -> (u64, u64) {
    (c + lines.start * 64, (lines.end - lines.start) * 64)
}

/// A crash-sim pool and its chunk with the regions above; with `unfenced` false, only what is
/// fenced (the reference the strict image must equal).
fn region_pool(unfenced: bool) -> (Arc<PmPool>, u64) {
    let p = sim(true);
    let c = p.allocate_chunk().unwrap();
    let put = |lines: &Range<u64>, v: u64| {
        let (at, len) = line_bytes(c, lines);
        p.write(at, &versioned(v, at, len)).unwrap();
        (at, len)
    };
    let (at, len) = put(&(0..REGION_LINES), 1);
    p.persist(at, len).unwrap();
    let (at, len) = put(&FENCED, 2);
    p.persist(at, len).unwrap();
    if unfenced {
        let (at, len) = put(&FLUSHED, 2);
        p.flush(at, len).unwrap();
        let (at, len) = line_bytes(c, &STREAMED);
        p.write_nt(at, &versioned(2, at, len)).unwrap();
        put(&DIRTY, 2);
        let (at, len) = put(&REWRITTEN, 2);
        p.flush(at, len).unwrap();
        put(&REWRITTEN, 3);
    }
    (p, c)
}

/// The region of a line (relative to the chunk) and the versions PM could hold for its words
/// after a crash, oldest first: the durable one, then any written-back or stored one (the
/// module doc of `crash.rs`: a dirty line may or may not have been evicted to PM).
fn region_of(line: u64) -> (&'static str, &'static [u64]) {
    let regions: [(Range<u64>, &str, &[u64]); 6] = [
        (FENCED, "fenced", &[2]),
        (FLUSHED, "written back, not fenced", &[1, 2]),
        (STREAMED, "write_nt, not fenced", &[1, 2]),
        (DIRTY, "stored, never written back", &[1, 2]),
        (REWRITTEN, "written back, then stored again", &[1, 2, 3]),
        (UNTOUCHED, "untouched", &[1]),
    ];
    let (_, name, versions) = regions.into_iter().find(|r| r.0.contains(&line)).unwrap();
    (name, versions)
}

/// Seeds each torn-image test draws: enough that a 1-in-2 (or 1-in-3) choice shows every
/// outcome for every word.
const SEEDS: Range<u64> = 0..64;

#[test]
fn strict_image_is_only_fenced_data_and_all_pending_holds_every_unfenced_line() {
    let (p, c) = region_pool(true);
    let (reference, _) = region_pool(false);
    assert_eq!(
        p.crash_image(CrashImage::Strict).unwrap(),
        reference.crash_image(CrashImage::Strict).unwrap(),
        "the strict image must be exactly the fenced data"
    );
    // AllPending: every pending and dirty line with its newest content, i.e. the memory.
    let all = p.crash_image(CrashImage::AllPending).unwrap();
    let mut memory = vec![0u8; p.size() as usize];
    p.read(0, &mut memory).unwrap();
    assert!(
        all == memory,
        "the all-pending image must hold every unfenced line"
    );
    for line in 0..REGION_LINES {
        let (name, versions) = region_of(line);
        let v = version_at(&all, c + line * 64);
        assert_eq!(
            v,
            *versions.last().unwrap(),
            "AllPending, {name} line {line}"
        );
    }
}

#[test]
fn torn_images_draw_old_or_new_per_word_for_every_unfenced_word() {
    let (p, c) = region_pool(true);
    let strict = p.crash_image(CrashImage::Strict).unwrap();
    let (lo, hi) = (c as usize, (c + REGION_LINES * 64) as usize);
    let words = REGION_LINES as usize * 8;
    let mut seen = vec![BTreeSet::new(); words];
    let mut mixed = BTreeSet::new();
    for seed in SEEDS {
        let img = p.crash_image(CrashImage::Torn(seed)).unwrap();
        assert_eq!(img, p.crash_image(CrashImage::Torn(seed)).unwrap());
        assert!(img[..lo] == strict[..lo] && img[hi..] == strict[hi..]);
        for line in 0..REGION_LINES {
            let mut in_line = BTreeSet::new();
            for w in 0..8 {
                let v = version_at(&img, c + line * 64 + w * 8);
                seen[(line * 8 + w) as usize].insert(v);
                in_line.insert(v);
            }
            if in_line.len() > 1 {
                mixed.insert(region_of(line).0);
            }
        }
    }
    for (i, seen) in seen.iter().enumerate() {
        let (name, versions) = region_of(i as u64 / 8);
        assert_eq!(
            seen.iter().copied().collect::<Vec<_>>(),
            versions,
            "Torn: over seeds {SEEDS:?}, word {} of line {} ({name}) held versions {seen:?}: \
             every version PM could hold must be drawn by some seed, and no other",
            i % 8,
            i / 8
        );
    }
    for name in [
        "written back, not fenced",
        "write_nt, not fenced",
        "stored, never written back",
        "written back, then stored again",
    ] {
        assert!(
            mixed.contains(name),
            "Torn: no image mixed old and new words in one {name} line"
        );
    }
}

#[test]
fn torn_line_images_draw_old_or_new_per_line_and_never_mix_a_line() {
    let (p, c) = region_pool(true);
    let strict = p.crash_image(CrashImage::Strict).unwrap();
    let (lo, hi) = (c as usize, (c + REGION_LINES * 64) as usize);
    let mut seen = vec![BTreeSet::new(); REGION_LINES as usize];
    for seed in SEEDS {
        let img = p.crash_image(CrashImage::TornLines(seed)).unwrap();
        assert_eq!(img, p.crash_image(CrashImage::TornLines(seed)).unwrap());
        assert!(img[..lo] == strict[..lo] && img[hi..] == strict[hi..]);
        for line in 0..REGION_LINES {
            let v = version_at(&img, c + line * 64);
            for w in 1..8 {
                assert_eq!(
                    version_at(&img, c + line * 64 + w * 8),
                    v,
                    "TornLines({seed}) mixed versions in line {line} ({})",
                    region_of(line).0
                );
            }
            seen[line as usize].insert(v);
        }
    }
    for (line, seen) in seen.iter().enumerate() {
        let (name, versions) = region_of(line as u64);
        assert_eq!(
            seen.iter().copied().collect::<Vec<_>>(),
            versions,
            "TornLines: over seeds {SEEDS:?}, line {line} ({name}) held versions {seen:?}: \
             every version PM could hold must be drawn by some seed, and no other"
        );
    }
}

#[test]
fn persisting_a_range_that_ends_mid_line_makes_all_of_it_durable() {
    // check_stores off: a line the write-back misses must show up as missing durable bytes
    // (what this test checks), not as the checker's panic.
    let p = sim(false);
    for misalign in [0u64, 1, 8, 31, 63] {
        let c = p.allocate_chunk().unwrap();
        for (i, len) in [1u64, 7, 8, 57, 63, 64, 65, 100, 127, 129, 200]
            .into_iter()
            .enumerate()
        {
            // Each case in its own 5 lines; the range ends mid-line unless
            // `misalign + len` is a multiple of 64.
            let off = c + i as u64 * 320 + misalign;
            let lines = (off..off + len).map(|b| b / 64).collect::<BTreeSet<_>>();
            let (data, nt): (Vec<u8>, Vec<u8>) = (0..len as u8)
                .map(|b| (b | 0x80, b.wrapping_mul(3) | 0x81))
                .unzip();
            let written_back = p.stats().lines_written_back;
            p.write(off, &data).unwrap();
            p.persist(off, len).unwrap();
            let strict = p.crash_image(CrashImage::Strict).unwrap();
            assert_eq!(
                &strict[off as usize..(off + len) as usize],
                &data[..],
                "write + persist of {len} bytes at {misalign} mod 64: not all durable"
            );
            assert_eq!(
                p.stats().lines_written_back - written_back,
                lines.len() as u64,
                "persist of {len} bytes at {misalign} mod 64 counts every line it touches"
            );
            // Again with non-temporal stores (an unaligned tail is stored and written back).
            p.write_nt(off, &nt).unwrap();
            p.fence();
            let strict = p.crash_image(CrashImage::Strict).unwrap();
            assert_eq!(
                &strict[off as usize..(off + len) as usize],
                &nt[..],
                "write_nt + fence of {len} bytes at {misalign} mod 64: not all durable"
            );
        }
    }
}

#[test]
fn fence_hook_sees_increasing_numbers_and_may_take_images() {
    let p = sim(true);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let images = Arc::new(AtomicU64::new(0));
    {
        let seen = seen.clone();
        let images = images.clone();
        let weak = Arc::downgrade(&p);
        p.set_fence_hook(Some(Box::new(move |n| {
            seen.lock().unwrap().push(n);
            if let Some(p) = weak.upgrade() {
                // Taking an image inside the hook must not deadlock.
                p.crash_image(CrashImage::Strict).unwrap();
                images.fetch_add(1, Ordering::Relaxed);
            }
        })));
    }
    let start = p.fence_count();
    let c = p.allocate_chunk().unwrap();
    p.write(c, b"abc").unwrap();
    p.persist(c, 3).unwrap();
    p.fence();
    p.store_u64_persist(c + 64, 1).unwrap();
    p.set_root(0, c).unwrap();
    let v = seen.lock().unwrap().clone();
    assert_eq!(v, vec![start + 1, start + 2, start + 3, start + 4]);
    assert_eq!(p.fence_count(), start + 4);
    assert_eq!(images.load(Ordering::Relaxed), 4);
    p.set_fence_hook(None);
    p.fence();
    assert_eq!(seen.lock().unwrap().len(), 4);
}

#[test]
fn open_crash_image_round_trip() {
    let opts = small_opts(DurabilityMode::Emulated);
    let p = sim(true);
    let c = p.allocate_chunk().unwrap();
    p.write(c, b"durable").unwrap();
    p.persist(c, 7).unwrap();
    p.set_root(1, c).unwrap();
    p.write(c + 64, b"lost").unwrap(); // never persisted
    let img = p.crash_image(CrashImage::Strict).unwrap();
    let q = PmPool::open_crash_image(img.clone(), &opts).unwrap();
    assert!(q.is_crash_sim());
    assert_eq!(q.size(), p.size());
    assert_eq!(q.root(1), c);
    let mut b = [0u8; 7];
    q.read(c, &mut b).unwrap();
    assert_eq!(&b, b"durable");
    let mut b = [0u8; 4];
    q.read(c + 64, &mut b).unwrap();
    assert_eq!(b, [0u8; 4]);
    // The reopened pool's durable image is the image itself, and it keeps simulating.
    assert_eq!(q.crash_image(CrashImage::Strict).unwrap(), img);
    assert_eq!(q.free_chunks(), 15);
    q.rebuild_allocator(&[c]).unwrap();
    assert_ne!(q.allocate_chunk().unwrap(), c);
    let q2 = PmPool::open_crash_image_checked(img.clone(), &opts, true).unwrap();
    q2.write(c + 64, b"new").unwrap();
    q2.persist(c + 64, 3).unwrap();
    // A damaged image is corruption; so are truncated ones.
    let mut bad = img.clone();
    bad[20] ^= 0xff;
    let msg = corruption_reason(PmPool::open_crash_image(bad, &opts));
    assert!(msg.contains("crash image"), "{msg}");
    corruption_reason(PmPool::open_crash_image(
        img[..128 * KB as usize].to_vec(),
        &opts,
    ));
    corruption_reason(PmPool::open_crash_image(Vec::new(), &opts));
    // File pools have no crash images.
    let dir = tempfile::tempdir().unwrap();
    let f = PmPool::create(&dir.path().join("x.pm"), &opts).unwrap();
    assert!(f.crash_image(CrashImage::Strict).is_none());
}

#[test]
fn check_stores_passes_on_normal_use() {
    let p = sim(true);
    let c = p.allocate_chunk().unwrap();
    for i in 0..50u64 {
        p.write(c + i * 37, &[i as u8; 37]).unwrap();
        if i % 3 == 0 {
            p.persist(c + i * 37, 37).unwrap();
        }
        if i % 5 == 0 {
            p.write_nt(c + 4096 + i * 19, &[i as u8; 19]).unwrap();
            p.fence();
        }
        if i % 7 == 0 {
            p.store_u64_persist(c + 8192 + i * 8, i).unwrap();
        }
        p.fence();
    }
    p.msync(c, 16 * KB).unwrap();
    assert_eq!(
        p.crash_image(CrashImage::Strict).unwrap(),
        p.crash_image(CrashImage::AllPending).unwrap()
    );
}

#[test]
#[should_panic(expected = "never stored through the PmPool API")]
fn check_stores_catches_a_store_that_bypassed_the_api() {
    let p = sim(true);
    // SAFETY: offset 8192 is inside the 256 KiB crash-sim buffer, and this test is the only
    // user of the pool. Deliberately bypasses the bookkeeping to exercise the checker.
    unsafe { p.raw_base().add(8192).write(0x5a) };
    p.fence();
}

#[test]
#[ignore = "micro benchmark: cargo test -p tierkv-pm --release -- --ignored --nocapture"]
fn bench_persisted_144_byte_appends() {
    let dir = if std::path::Path::new("/dev/shm").is_dir() {
        tempfile::tempdir_in("/dev/shm").unwrap()
    } else {
        tempfile::tempdir().unwrap()
    };
    let opts = PoolOptions {
        size: 64 << 20,
        chunk_size: 4 << 20,
        ..small_opts(DurabilityMode::Emulated)
    };
    let p = PmPool::create(&dir.path().join("bench.pm"), &opts).unwrap();
    let rec = [0x5au8; 144];
    let mut off = opts.chunk_size;
    let n = 200_000u64;
    let t = Instant::now();
    for _ in 0..n {
        if off + 144 > opts.size {
            off = opts.chunk_size;
        }
        p.write(off, &rec).unwrap();
        p.persist(off, 144).unwrap();
        off += 144;
    }
    let ns = t.elapsed().as_nanos() as f64 / n as f64;
    println!(
        "{} ns per persisted 144-byte append ({}, emulated, /dev/shm)",
        ns,
        flush_instruction()
    );
}

fn file_blocks_bytes(path: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).unwrap().blocks() * 512
}

#[test]
fn chunks_are_backed_by_the_file_system_when_first_allocated() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.pm");
    let o = small_opts(DurabilityMode::Emulated);
    let p = PmPool::create(&path, &o).unwrap();
    let before = file_blocks_bytes(&path);
    assert!(
        before < 4 * o.chunk_size,
        "a new pool is sparse ({before} bytes)"
    );
    let a = p.allocate_chunk().unwrap();
    let b = p.allocate_zeroed_chunk(0).unwrap();
    assert_ne!(a, b);
    let after = file_blocks_bytes(&path);
    assert!(
        after >= before + 2 * o.chunk_size,
        "two chunks backed: {before} -> {after} bytes"
    );
}

#[test]
fn zeroed_chunks_read_as_zeros_whether_new_or_reused() {
    for crash_sim in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let o = small_opts(DurabilityMode::Emulated);
        let p = if crash_sim {
            PmPool::create_crash_sim(&o, true).unwrap()
        } else {
            PmPool::create(&dir.path().join("p.pm"), &o).unwrap()
        };
        let zeros = vec![0u8; o.chunk_size as usize];
        let mut buf = vec![1u8; o.chunk_size as usize];
        let lines = p.stats().lines_written_back;
        let fresh = p.allocate_zeroed_chunk(0).unwrap();
        p.read(fresh, &mut buf).unwrap();
        assert!(buf == zeros, "a new chunk reads as zeros");
        assert_eq!(
            p.stats().lines_written_back,
            lines,
            "a new chunk of a new pool is not zeroed again"
        );
        // Dirty it, free it, and get it back (the free list is LIFO): zeroed again.
        p.write(fresh, &vec![0xa5; o.chunk_size as usize]).unwrap();
        p.persist(fresh, o.chunk_size).unwrap();
        p.free_chunk(fresh);
        let reused = p.allocate_zeroed_chunk(64).unwrap();
        assert_eq!(reused, fresh);
        p.fence();
        p.read(reused, &mut buf).unwrap();
        assert!(
            buf[..64].iter().all(|&b| b == 0xa5),
            "the header bytes are left alone"
        );
        assert!(
            buf[64..] == zeros[64..],
            "a reused chunk is zeroed (crash_sim {crash_sim})"
        );
        assert!(matches!(
            p.allocate_zeroed_chunk(o.chunk_size + 1),
            Err(PmError::InvalidArgument(_))
        ));
        if crash_sim {
            // The zeroing is durable after the fence.
            let image = p.crash_image(CrashImage::Strict).unwrap();
            assert!(
                image[(reused + 64) as usize..(reused + o.chunk_size) as usize]
                    .iter()
                    .all(|&b| b == 0)
            );
        }
    }
}

/// Options of the full-file-system tests: a 4 MiB sparse pool of 256 KiB chunks, on a file
/// system with room for 3 chunks and a half (the pool's header page included).
fn full_fs_opts() -> PoolOptions {
    PoolOptions {
        size: 4 << 20,
        chunk_size: 256 * KB,
        ..small_opts(DurabilityMode::Emulated)
    }
}

/// Allocates chunks of `p` (whose file system fills up) until allocation fails, storing into
/// each one, and checks that the failure is a clean `NoSpace` that leaves the allocator usable.
/// Returns the chunks it got.
fn fill_until_allocation_fails(p: &PmPool) -> Vec<u64> {
    let chunk_size = p.chunk_size();
    let mut got = Vec::new();
    let err = loop {
        match p.allocate_chunk() {
            Ok(c) => {
                // Every store into a handed-out chunk succeeds (no SIGBUS).
                p.write(c, &vec![7u8; chunk_size as usize]).unwrap();
                p.persist(c, chunk_size).unwrap();
                got.push(c);
            }
            Err(e) => break e,
        }
    };
    assert!(matches!(err, PmError::NoSpace(_)), "{err}");
    assert!(err.to_string().contains("no room"), "{err}");
    assert!(!got.is_empty() && got.len() < 15, "{} chunks", got.len());
    // The failed chunk went back to the free list, still unbacked: asking again fails again
    // (it is not handed out as if it were backed).
    assert_eq!(p.free_chunks(), 15 - got.len() as u64);
    assert!(matches!(p.allocate_chunk(), Err(PmError::NoSpace(_))));
    assert!(matches!(
        p.allocate_zeroed_chunk(0),
        Err(PmError::NoSpace(_))
    ));
    assert_eq!(p.free_chunks(), 15 - got.len() as u64);
    // Freeing a used chunk makes room again: it is backed already.
    p.free_chunk(got[0]);
    assert_eq!(p.allocate_chunk().unwrap(), got[0]);
    got
}

/// A pool whose file system fills up: allocation fails with `NoSpace` instead of a later store
/// dying with `SIGBUS`. The file system is simulated (`PmPool::simulate_fs_room` replaces
/// `fallocate`), so this runs everywhere; the ignored test below does the same on a real one.
#[cfg(target_os = "linux")]
#[test]
fn a_full_file_system_fails_chunk_allocation_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let o = full_fs_opts();
    let p = PmPool::create(&dir.path().join("p.pm"), &o).unwrap();
    p.simulate_fs_room(Some(3 * o.chunk_size + o.chunk_size / 2));
    let got = fill_until_allocation_fails(&p);
    assert_eq!(got.len(), 3, "3 chunks and a half of room hold 3 chunks");
    // Once the file system has room again, the chunk that failed is backed and handed out.
    p.simulate_fs_room(Some(o.chunk_size));
    let next = p.allocate_chunk().unwrap();
    assert!(!got.contains(&next));
    assert!(matches!(p.allocate_chunk(), Err(PmError::NoSpace(_))));
    // Without the simulation, the real `fallocate` backs chunks again.
    p.simulate_fs_room(None);
    p.allocate_chunk().unwrap();
}

/// [`a_full_file_system_fails_chunk_allocation_cleanly`] on a real full file system: a 1 MiB
/// tmpfs, which only root may mount.
#[test]
#[ignore = "needs root to mount a small tmpfs: run with sudo cargo test -p tierkv-pm -- --ignored"]
fn a_full_tmpfs_fails_chunk_allocation_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("small");
    std::fs::create_dir(&mnt).unwrap();
    let mount = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(&mnt)
        .status();
    assert!(
        mount.as_ref().is_ok_and(|s| s.success()),
        "cannot mount a 1 MiB tmpfs on {} (this test needs root): {mount:?}",
        mnt.display()
    );
    let result = std::panic::catch_unwind(|| {
        // Creation succeeds (the pool is sparse), and chunks can be allocated until the file
        // system is full.
        let p = PmPool::create(&mnt.join("p.pm"), &full_fs_opts()).unwrap();
        fill_until_allocation_fails(&p);
    });
    let _ = std::process::Command::new("umount").arg(&mnt).status();
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}

#[test]
fn a_reopened_pool_zeroes_chunks_it_cannot_know_are_zero() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.pm");
    let o = small_opts(DurabilityMode::Emulated);
    let (a, b) = {
        let p = PmPool::create(&path, &o).unwrap();
        let a = p.allocate_chunk().unwrap();
        let b = p.allocate_chunk().unwrap();
        for c in [a, b] {
            p.write(c, &vec![0xa5; o.chunk_size as usize]).unwrap();
            p.persist(c, o.chunk_size).unwrap();
        }
        (a, b)
    };
    let p = PmPool::open(&path, &o).unwrap();
    // `b` is live, `a` was freed by the crash/restart: both hold 0xa5 bytes.
    p.rebuild_allocator(&[b]).unwrap();
    let lines = p.stats().lines_written_back;
    let c = p.allocate_zeroed_chunk(0).unwrap();
    assert_eq!(c, a, "the lowest free chunk comes first");
    p.fence();
    let mut buf = vec![1u8; o.chunk_size as usize];
    p.read(c, &mut buf).unwrap();
    assert!(
        buf.iter().all(|&x| x == 0),
        "a dirty chunk of a reopened pool is zeroed"
    );
    assert!(p.stats().lines_written_back >= lines + o.chunk_size / 64);
    // The same from a crash image.
    let sim = PmPool::create_crash_sim(&o, true).unwrap();
    let d = sim.allocate_chunk().unwrap();
    sim.write(d, &vec![0xa5; o.chunk_size as usize]).unwrap();
    sim.persist(d, o.chunk_size).unwrap();
    let image = sim.crash_image(CrashImage::Strict).unwrap();
    let reopened = PmPool::open_crash_image(image, &o).unwrap();
    reopened.rebuild_allocator(&[]).unwrap();
    let e = reopened.allocate_zeroed_chunk(0).unwrap();
    assert_eq!(e, d);
    reopened.fence();
    reopened.read(e, &mut buf).unwrap();
    assert!(
        buf.iter().all(|&x| x == 0),
        "a dirty chunk of a crash image is zeroed"
    );
}

// ---------------------------------------------------------------- root directory

/// A new pool's root directory is empty and unbound; named roots and the identity survive a
/// reopen of a file pool in every mode and of a crash image; the directory is not writable
/// through the byte API.
#[test]
fn named_roots_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    for mode in [DurabilityMode::Emulated, DurabilityMode::Msync] {
        let path = dir.path().join("roots.pm");
        let opts = small_opts(mode);
        {
            let p = PmPool::create(&path, &opts).unwrap();
            assert_eq!(p.root_table().unwrap(), RootTable::default());
            assert_eq!(p.named_root("pmfs").unwrap(), None);
            p.update_root_table(|t| t.identity = Some(77)).unwrap();
            p.set_named_root("pmfs", 16 * KB).unwrap();
            p.set_named_root("tree", 32 * KB).unwrap();
            p.set_named_root("pmfs", 48 * KB).unwrap();
            let msynced = p.stats().bytes_msynced;
            if mode == DurabilityMode::Msync {
                assert!(msynced >= 3 * (ROOT_COPY_BYTES + 8), "{msynced}");
            }
            // An update that changes nothing writes nothing.
            let fences = p.fence_count();
            p.set_named_root("tree", 32 * KB).unwrap();
            assert_eq!(p.fence_count(), fences);
            for (at, len) in [(ROOT_DIRECTORY_OFFSET, 1), (ROOT_SELECTOR_OFFSET, 8)] {
                assert!(is_invalid(p.write(at, &vec![0u8; len])));
                assert!(is_invalid(p.write_nt(at, &vec![0u8; len])));
            }
            assert!(is_invalid(p.store_u64_persist(ROOT_SELECTOR_OFFSET, 0)));
            assert!(is_invalid(p.set_named_root("no spaces", 1)));
            assert!(is_invalid(
                p.set_named_root(&"n".repeat(ROOT_NAME_MAX + 1), 1)
            ));
        }
        let p = PmPool::open(&path, &opts).unwrap();
        let t = p.root_table().unwrap();
        assert_eq!(t.identity, Some(77));
        let roots: Vec<_> = t.roots.into_iter().collect();
        assert_eq!(
            roots,
            vec![("pmfs".to_string(), 48 * KB), ("tree".to_string(), 32 * KB)]
        );
    }
    let p = sim(true);
    p.set_named_root("a", 1).unwrap();
    let q = PmPool::open_crash_image(
        p.crash_image(CrashImage::Strict).unwrap(),
        &small_opts(DurabilityMode::Emulated),
    )
    .unwrap();
    assert_eq!(q.named_root("a").unwrap(), Some(1));
    // The capacity is enforced and a refused update changes nothing.
    let err = p.update_root_table(|t| {
        for i in 0..ROOT_CAPACITY {
            t.roots.insert(format!("r{i}"), i as u64);
        }
    });
    assert!(matches!(err, Err(PmError::NoSpace(_))), "{err:?}");
    assert_eq!(p.root_table().unwrap().roots.len(), 1);
}

/// Damage in the root directory of a pool is corruption naming the directory when the table
/// is first read (not when the pool opens: the pool itself is sound).
#[test]
fn a_damaged_root_directory_is_corruption_naming_it() {
    let p = sim(false);
    p.update_root_table(|t| {
        t.identity = Some(5);
        t.roots.insert("pmfs".into(), 16 * KB);
    })
    .unwrap();
    let img = p.crash_image(CrashImage::Strict).unwrap();
    let current = ROOT_COPY_OFFSETS[1]; // generation 1
    for at in [
        ROOT_DIRECTORY_OFFSET + 3,
        ROOT_SELECTOR_OFFSET,
        current + 5,
        current + 17,
        current + 32,
        current + 32 + 24,
    ] {
        let mut bad = img.clone();
        bad[at as usize] ^= 0x10;
        let q = PmPool::open_crash_image(bad, &small_opts(DurabilityMode::Emulated)).unwrap();
        let msg = corruption_reason(q.root_table());
        assert!(msg.contains("root directory at offset 192"), "{msg}");
        corruption_reason(q.named_root("pmfs"));
    }
}

/// Every root-directory update is failure-atomic: at every fence of a run of updates (with
/// that fence's persist in flight), the strict, all-pending, word-torn and line-torn images
/// each hold the table before or after the update in flight, never a mix or damage.
#[test]
fn root_directory_updates_are_failure_atomic_at_every_fence() {
    type Change = fn(&mut RootTable);
    let changes: [Change; 7] = [
        |t| t.identity = Some(0xaaaa_bbbb_cccc_dddd_eeee_ffff_0000_1111),
        |t| {
            t.roots.insert("pmfs".into(), 16 * KB);
        },
        |t| {
            t.roots.insert("btree".into(), 32 * KB);
        },
        |t| {
            t.roots.insert("pmfs".into(), 64 * KB);
        },
        |t| {
            t.roots.remove("btree");
        },
        |t| {
            for i in 0..ROOT_CAPACITY - 1 {
                t.roots.insert(format!("owner-{i:02}"), i as u64 * 8);
            }
        },
        |t| {
            t.identity = Some(3);
            t.roots.clear();
        },
    ];
    let p = sim(true);
    let expected = Arc::new(Mutex::new((RootTable::default(), RootTable::default())));
    let checked = Arc::new(AtomicU64::new(0));
    {
        let (expected, checked) = (Arc::clone(&expected), Arc::clone(&checked));
        let weak = Arc::downgrade(&p);
        p.set_fence_hook(Some(Box::new(move |fence| {
            let Some(p) = weak.upgrade() else { return };
            let (before, after) = expected.lock().unwrap().clone();
            // The hook may read its own pool's table during an update: the old one.
            assert_eq!(p.root_table().unwrap(), before, "fence {fence}");
            let kinds = [CrashImage::Strict, CrashImage::AllPending]
                .into_iter()
                .chain((0..16).map(|s| CrashImage::Torn(fence * 100 + s)))
                .chain((0..8).map(|s| CrashImage::TornLines(fence * 100 + s)));
            for kind in kinds {
                let img = p.crash_image(kind).unwrap();
                let q =
                    PmPool::open_crash_image(img, &small_opts(DurabilityMode::Emulated)).unwrap();
                let t = q
                    .root_table()
                    .unwrap_or_else(|e| panic!("fence {fence} {kind:?}: {e}"));
                assert!(
                    t == before || t == after,
                    "fence {fence} {kind:?}: {t:?} is neither {before:?} nor {after:?}"
                );
                checked.fetch_add(1, Ordering::Relaxed);
            }
        })));
    }
    for change in changes {
        let before = p.root_table().unwrap();
        let mut after = before.clone();
        change(&mut after);
        *expected.lock().unwrap() = (before, after.clone());
        p.update_root_table(change).unwrap();
        let strict = PmPool::open_crash_image(
            p.crash_image(CrashImage::Strict).unwrap(),
            &small_opts(DurabilityMode::Emulated),
        )
        .unwrap();
        assert_eq!(
            strict.root_table().unwrap(),
            after,
            "durable when it returns"
        );
        assert_eq!(p.root_table().unwrap(), after);
    }
    p.set_fence_hook(None);
    // Two fences per update, 26 images each.
    assert_eq!(checked.load(Ordering::Relaxed), 7 * 2 * 26);
}

/// A file written by an older TierKV (pool format version 1) is refused by name.
#[test]
fn a_pool_of_format_version_1_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.pm");
    let opts = small_opts(DurabilityMode::Emulated);
    drop(PmPool::create(&path, &opts).unwrap());
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[8..12].copy_from_slice(&1u32.to_le_bytes());
    let crc = crc32c::crc32c(&bytes[..32]);
    bytes[32..36].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    match PmPool::open(&path, &opts) {
        Err(PmError::InvalidArgument(m)) => {
            assert!(m.contains("format version 1") && m.contains("v1.pm"), "{m}")
        }
        other => panic!("{other:?}"),
    }
}
