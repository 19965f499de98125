use super::*;
use tierkv_pm::{PmPool, PoolOptions};

/// The identity of the database the test file systems belong to.
const ID: u128 = 0x1d;

fn pool() -> Arc<PmPool> {
    let o = PoolOptions {
        size: 1 << 20,
        chunk_size: 64 << 10,
        ..PoolOptions::default()
    };
    PmPool::create_crash_sim(&o, true).unwrap()
}

/// Entries a 64 KiB directory chunk holds.
const PER_CHUNK: u64 = ((64 << 10) - DIR_HEADER_BYTES) / ENTRY_BYTES;

fn growth_pool_options(size: u64) -> PoolOptions {
    PoolOptions {
        size,
        chunk_size: 64 << 10,
        ..PoolOptions::default()
    }
}

/// Chunks in use: all but the free ones and the pool's header chunk.
fn used_chunks(p: &PmPool) -> u64 {
    p.chunk_count() - p.free_chunks() - 1
}

/// The directory grows a chunk at a time past what one chunk holds; the files of every
/// directory chunk survive a reopen; removed entries are reused before the directory grows
/// again; a pool with no chunk left to grow into says so.
#[test]
fn the_directory_grows_past_one_chunk_and_survives_reopen() {
    let o = growth_pool_options(80 << 20);
    let p = PmPool::create_crash_sim(&o, false).unwrap();
    let fs = PmFs::open(Arc::clone(&p), "test", PmFsOpen::Create(ID)).unwrap();
    let per_chunk = PER_CHUNK;
    let n = per_chunk * 2 + 7;
    for i in 0..n {
        let mut w = fs.create(Path::new(&format!("/db/{i:06}.arr"))).unwrap();
        w.append(&i.to_le_bytes()).unwrap();
        w.flush().unwrap();
    }
    // Three directory chunks and one chunk per file.
    assert_eq!(fs.dir.lock().chunks.len(), 3);
    assert_eq!(used_chunks(&p), 3 + n);
    let img = p.crash_image(tierkv_pm::CrashImage::Strict).unwrap();
    let p2 = PmPool::open_crash_image(img, &o).unwrap();
    let fs2 = PmFs::open(Arc::clone(&p2), "test2", PmFsOpen::Existing(ID)).unwrap();
    assert_eq!(fs2.file_names().len() as u64, n);
    for i in [0, per_chunk - 1, per_chunk, 2 * per_chunk, n - 1] {
        let data = fs2.read_all(Path::new(&format!("/db/{i:06}.arr"))).unwrap();
        assert_eq!(data, i.to_le_bytes());
    }
    assert_eq!(used_chunks(&p2), 3 + n);
    // A removed entry is reused: no fourth directory chunk.
    for i in 0..10 {
        fs2.remove(Path::new(&format!("/db/{i:06}.arr"))).unwrap();
    }
    for i in 0..10 {
        fs2.create(Path::new(&format!("/db/new{i}.arr"))).unwrap();
    }
    assert_eq!(fs2.dir.lock().chunks.len(), 3);
    // Fill the pool: the create that needs a directory chunk and finds none is NoSpace
    // naming the directory.
    let small = growth_pool_options(1 << 20);
    let p3 = PmPool::create_crash_sim(&small, false).unwrap();
    let fs3 = PmFs::open(Arc::clone(&p3), "small", PmFsOpen::Create(ID)).unwrap();
    let mut created = 0;
    let err = loop {
        match fs3.create(Path::new(&format!("/db/{created:06}.arr"))) {
            Ok(_) => created += 1,
            Err(e) => break e,
        }
    };
    assert!(matches!(err, Error::NoSpace(_)), "{err}");
    assert_eq!(used_chunks(&p3), p3.chunk_count() - 1, "{created} files");
}

/// A crash at any fence while the directory grows loses no file created before and leaks
/// no chunk: the new directory chunk is either linked (and reported) or free at the next
/// open.
#[test]
fn a_crash_while_the_directory_grows_leaks_nothing() {
    use tierkv_pm::CrashImage;
    let o = growth_pool_options(40 << 20);
    let p = PmPool::create_crash_sim(&o, true).unwrap();
    let fs = PmFs::open(Arc::clone(&p), "test", PmFsOpen::Create(ID)).unwrap();
    let per_chunk = PER_CHUNK;
    // Tables of 0 bytes take one chunk each: fill the first directory chunk but for one
    // entry, then walk the fences of the last two creates (the second grows the directory).
    for i in 0..per_chunk - 1 {
        fs.create(Path::new(&format!("/db/{i:06}.arr"))).unwrap();
    }
    let done = Arc::new(AtomicU64::new(per_chunk - 1));
    let checked = Arc::new(AtomicU64::new(0));
    {
        let (done, checked) = (Arc::clone(&done), Arc::clone(&checked));
        let weak = Arc::downgrade(&p);
        let o = o.clone();
        p.set_fence_hook(Some(Box::new(move |fence| {
            let Some(p) = weak.upgrade() else { return };
            let done = done.load(Ordering::SeqCst);
            let kinds = [CrashImage::Strict, CrashImage::AllPending]
                .into_iter()
                .chain((0..4).map(|t| CrashImage::Torn(fence * 10 + t)));
            for kind in kinds {
                let img = p.crash_image(kind).unwrap();
                let p2 = PmPool::open_crash_image(img, &o).unwrap();
                let fs2 = PmFs::open(Arc::clone(&p2), "img", PmFsOpen::Existing(ID))
                    .unwrap_or_else(|e| panic!("fence {fence} {kind:?}: {e}"));
                let files = fs2.file_names().len() as u64;
                assert!(
                    files == done || files == done + 1,
                    "fence {fence} {kind:?}: {files} files, {done} created"
                );
                let dir_chunks = fs2.dir.lock().chunks.len() as u64;
                assert_eq!(
                    used_chunks(&p2),
                    dir_chunks + files,
                    "fence {fence} {kind:?}: a chunk leaked"
                );
                checked.fetch_add(1, Ordering::SeqCst);
            }
        })));
    }
    for i in per_chunk - 1..per_chunk + 1 {
        fs.create(Path::new(&format!("/db/{i:06}.arr"))).unwrap();
        done.fetch_add(1, Ordering::SeqCst);
    }
    p.set_fence_hook(None);
    assert_eq!(fs.dir.lock().chunks.len(), 2);
    assert!(
        checked.load(Ordering::SeqCst) >= 6 * 4,
        "too few fences walked"
    );
}

/// A file of `chunks` full chunks plus 100 bytes, each byte a function of its offset.
fn spanning_file(fs: &PmFs, path: &Path, chunks: u64) -> Vec<u8> {
    let n = fs.data_per_chunk() * chunks + 100;
    let data: Vec<u8> = (0..n).map(|i| (i * 13 % 251) as u8).collect();
    let mut w = fs.create(path).unwrap();
    w.append(&data).unwrap();
    w.sync().unwrap();
    data
}

/// Reads `len` bytes at `at` of `path`.
fn read_at(fs: &PmFs, path: &Path, at: u64, len: u64) -> Result<Vec<u8>> {
    let f = fs.open_readable(path)?;
    let mut b = vec![0u8; len as usize];
    f.read_exact_at(at, &mut b)?;
    Ok(b)
}

/// Chunk `i` of `data` (file offsets `[i * dpc, (i + 1) * dpc)`, cut at the end).
fn chunk_of(data: &[u8], dpc: u64, i: u64) -> (u64, &[u8]) {
    let (a, b) = (i * dpc, ((i + 1) * dpc).min(data.len() as u64));
    (a, &data[a as usize..b as usize])
}

/// Punching frees the chunks wholly inside the range (never the first or the last), keeps
/// every other byte where it was, makes a read of a hole corruption naming the file, grows
/// holes, survives reopening, and a removal then frees each remaining chunk once.
#[test]
fn punched_chunks_are_freed_and_the_rest_survives_reopen() {
    let o = growth_pool_options(4 << 20);
    let p = PmPool::create_crash_sim(&o, false).unwrap();
    let fs = PmFs::open(Arc::clone(&p), "test", PmFsOpen::Create(ID)).unwrap();
    let path = Path::new("/db/000007.arr");
    let dpc = fs.data_per_chunk();
    let data = spanning_file(&fs, path, 8); // chunks 0..=8
    let used = used_chunks(&p);
    assert_eq!(used, 1 + 9);
    // Chunks 2, 3 and 4 lie wholly inside; 1 and 5 only partly.
    let freed = fs.punch(path, dpc + 10, 5 * dpc + 3).unwrap();
    assert_eq!(freed, 3 * p.chunk_size());
    assert_eq!(used_chunks(&p), used - 3);
    let check = |fs: &PmFs, holes: &[u64]| {
        for i in 0..9 {
            let (at, want) = chunk_of(&data, dpc, i);
            let got = read_at(fs, path, at, want.len() as u64);
            if holes.contains(&i) {
                let e = got.unwrap_err();
                assert!(e.is_corruption() && e.to_string().contains("000007"), "{e}");
            } else {
                assert_eq!(got.unwrap(), want, "chunk {i}");
            }
        }
        assert_eq!(fs.file_size(path).unwrap(), data.len() as u64);
    };
    check(&fs, &[2, 3, 4]);
    // A read across a hole's edge fails too; punching again frees nothing.
    assert!(read_at(&fs, path, 2 * dpc - 5, 10).is_err());
    assert_eq!(fs.punch(path, dpc + 10, 5 * dpc + 3).unwrap(), 0);
    // The whole file: every chunk but the first and the last.
    let freed = fs.punch(path, 0, data.len() as u64).unwrap();
    assert_eq!(freed, 4 * p.chunk_size(), "chunks 1, 5, 6, 7");
    check(&fs, &[1, 2, 3, 4, 5, 6, 7]);
    let img = p.crash_image(tierkv_pm::CrashImage::Strict).unwrap();
    let p2 = PmPool::open_crash_image(img, &o).unwrap();
    let fs2 = PmFs::open(Arc::clone(&p2), "test2", PmFsOpen::Existing(ID)).unwrap();
    check(&fs2, &[1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(used_chunks(&p2), 1 + 2);
    fs2.remove(path).unwrap();
    assert_eq!(used_chunks(&p2), 1);
    // A file of the format before position words (its entry without the flag; a stale
    // position word in a chunk means nothing there) is read as a plain chain and never
    // punched.
    let data = spanning_file(&fs2, path, 3);
    let file = fs2.get(path).unwrap();
    let (entry, first) = (file.entry, file.chunks.read()[0]);
    let second = file.chunks.read()[1];
    drop(file);
    p2.store_u64_persist(second + CHUNK_POSITION_OFFSET, 0xdead_beef)
        .unwrap();
    let name = b"000007.arr";
    p2.write(entry + 28, &0u32.to_le_bytes()).unwrap();
    p2.persist(entry + 28, 4).unwrap();
    p2.store_u64_persist(entry, live_state(entry, first, 0, name))
        .unwrap();
    let fs3 = PmFs::open(Arc::clone(&p2), "test3", PmFsOpen::Existing(ID)).unwrap();
    assert_eq!(fs3.read_all(path).unwrap(), data);
    assert_eq!(fs3.punch(path, 0, data.len() as u64).unwrap(), 0);
    assert_eq!(fs3.read_all(path).unwrap(), data);
}

/// A crash at any fence of a punch leaves the file whole or with its hole, every byte
/// outside the hole as written, and no chunk leaked.
#[test]
fn a_crash_while_punching_loses_nothing_and_leaks_nothing() {
    use tierkv_pm::CrashImage;
    let o = growth_pool_options(4 << 20);
    let p = PmPool::create_crash_sim(&o, true).unwrap();
    let fs = PmFs::open(Arc::clone(&p), "test", PmFsOpen::Create(ID)).unwrap();
    let path = Path::new("/db/000009.arr");
    let dpc = fs.data_per_chunk();
    let data = spanning_file(&fs, path, 6);
    // Punched once already, so that the second punch extends a hole.
    fs.punch(path, dpc, 2 * dpc).unwrap();
    let checked = Arc::new(AtomicU64::new(0));
    {
        let checked = Arc::clone(&checked);
        let weak = Arc::downgrade(&p);
        let (o, data) = (o.clone(), data.clone());
        p.set_fence_hook(Some(Box::new(move |fence| {
            let Some(p) = weak.upgrade() else { return };
            let kinds = [CrashImage::Strict, CrashImage::AllPending]
                .into_iter()
                .chain((0..4).map(|t| CrashImage::Torn(fence * 10 + t)));
            for kind in kinds {
                let img = p.crash_image(kind).unwrap();
                let p2 = PmPool::open_crash_image(img, &o).unwrap();
                let fs2 = PmFs::open(Arc::clone(&p2), "img", PmFsOpen::Existing(ID))
                    .unwrap_or_else(|e| panic!("fence {fence} {kind:?}: {e}"));
                let chunks = fs2.get(path).unwrap().chunks.read().clone();
                let held = chunks.iter().filter(|&&c| c != 0).count() as u64;
                assert_eq!(
                    used_chunks(&p2),
                    1 + held,
                    "fence {fence} {kind:?}: a chunk leaked"
                );
                assert!(held == 6 || held == 4, "fence {fence} {kind:?}: {chunks:?}");
                for (i, &c) in chunks.iter().enumerate() {
                    let (at, want) = chunk_of(&data, dpc, i as u64);
                    let got = read_at(&fs2, path, at, want.len() as u64);
                    if c == 0 {
                        assert!(got.is_err(), "fence {fence} {kind:?}: hole {i} read");
                    } else {
                        assert_eq!(got.unwrap(), want, "fence {fence} {kind:?}: chunk {i}");
                    }
                }
                checked.fetch_add(1, Ordering::SeqCst);
            }
        })));
    }
    assert_eq!(fs.punch(path, dpc, 4 * dpc).unwrap(), 2 * p.chunk_size());
    p.set_fence_hook(None);
    assert!(
        checked.load(Ordering::SeqCst) >= 2 * 6,
        "too few fences walked"
    );
}

/// A damaged link between directory chunks is corruption, never a shorter directory.
#[test]
fn a_damaged_directory_link_is_corruption() {
    let o = growth_pool_options(48 << 20);
    let p = PmPool::create_crash_sim(&o, false).unwrap();
    let fs = PmFs::open(Arc::clone(&p), "test", PmFsOpen::Create(ID)).unwrap();
    let per_chunk = PER_CHUNK;
    for i in 0..per_chunk + 1 {
        fs.create(Path::new(&format!("/db/{i:06}.arr"))).unwrap();
    }
    let root = p.named_root(PMFS_ROOT_NAME).unwrap().unwrap();
    let link = p.load_u64(root + DIR_NEXT_OFFSET).unwrap();
    assert_ne!(link, 0);
    for bit in 0..64 {
        p.store_u64_persist(root + DIR_NEXT_OFFSET, link ^ (1 << bit))
            .unwrap();
        let err = PmFs::open(Arc::clone(&p), "pool.pm", PmFsOpen::Existing(ID))
            .err()
            .unwrap_or_else(|| panic!("bit {bit} of the directory link flipped unnoticed"));
        assert!(err.is_corruption(), "bit {bit}: {err}");
    }
    p.store_u64_persist(root + DIR_NEXT_OFFSET, link).unwrap();
    let fs2 = PmFs::open(Arc::clone(&p), "pool.pm", PmFsOpen::Existing(ID)).unwrap();
    assert_eq!(fs2.file_names().len() as u64, per_chunk + 1);
}

#[test]
fn files_span_chunks_survive_reopen_and_free_their_chunks() {
    let p = pool();
    let fs = PmFs::open(Arc::clone(&p), "test", PmFsOpen::Create(ID)).unwrap();
    let free0 = p.free_chunks();
    let data: Vec<u8> = (0..200_000u32).map(|i| (i * 7) as u8).collect();
    let mut w = fs.create(Path::new("/db/000001.sst")).unwrap();
    for piece in data.chunks(3000) {
        w.append(piece).unwrap();
    }
    w.sync().unwrap();
    assert_eq!(
        fs.file_size(Path::new("/db/000001.sst")).unwrap(),
        data.len() as u64
    );
    let r = fs.open_readable(Path::new("/db/000001.sst")).unwrap();
    let mut buf = vec![0u8; data.len()];
    r.read_exact_at(0, &mut buf).unwrap();
    assert_eq!(buf, data);
    assert!(r.read_exact_at(1, &mut buf).is_err(), "read past the end");
    drop((w, r));
    // Reopen from a crash image: the file is exactly what was persisted.
    let img = p.crash_image(tierkv_pm::CrashImage::Strict).unwrap();
    let p2 = PmPool::open_crash_image(
        img,
        &PoolOptions {
            chunk_size: 64 << 10,
            ..PoolOptions::default()
        },
    )
    .unwrap();
    let fs2 = PmFs::open(Arc::clone(&p2), "test2", PmFsOpen::Existing(ID)).unwrap();
    assert_eq!(fs2.file_names(), vec!["000001.sst".to_string()]);
    let mut buf2 = vec![0u8; data.len()];
    fs2.open_readable(Path::new("/x/000001.sst"))
        .unwrap()
        .read_exact_at(0, &mut buf2)
        .unwrap();
    assert_eq!(buf2, data);
    // Remove frees the chunks.
    fs.remove(Path::new("/db/000001.sst")).unwrap();
    assert_eq!(p.free_chunks(), free0);
    assert!(!fs.exists(Path::new("/db/000001.sst")));
    // A second create of a name replaces the first.
    let mut w = fs.create(Path::new("/db/a.log")).unwrap();
    w.append(b"one").unwrap();
    w.flush().unwrap();
    let mut w2 = fs.create(Path::new("/db/a.log")).unwrap();
    w2.append(b"twotwo").unwrap();
    w2.flush().unwrap();
    assert_eq!(fs.file_size(Path::new("/db/a.log")).unwrap(), 6);
    drop(w);
}

#[test]
fn unpublished_files_vanish_and_leak_nothing() {
    let p = pool();
    let fs = PmFs::open(Arc::clone(&p), "test", PmFsOpen::Create(ID)).unwrap();
    let mut w = fs.create(Path::new("/db/000002.log")).unwrap();
    w.append(&[7u8; 1000]).unwrap();
    // Not flushed: after a crash the file exists (published at create) but holds nothing.
    let img = p.crash_image(tierkv_pm::CrashImage::Strict).unwrap();
    let o = PoolOptions {
        chunk_size: 64 << 10,
        ..PoolOptions::default()
    };
    let p2 = PmPool::open_crash_image(img, &o).unwrap();
    let fs2 = PmFs::open(Arc::clone(&p2), "t", PmFsOpen::Existing(ID)).unwrap();
    assert_eq!(fs2.file_size(Path::new("/db/000002.log")).unwrap(), 0);
    // Only the directory chunk and the file's chunk are allocated.
    assert_eq!(p2.chunk_count() - p2.free_chunks(), 2 + 1);
    drop(w);
}

#[test]
fn damaged_directory_entries_and_chunk_chains_are_corruption() {
    let o = PoolOptions {
        size: 1 << 20,
        chunk_size: 64 << 10,
        ..PoolOptions::default()
    };
    let setup = || {
        let p = PmPool::create_crash_sim(&o, false).unwrap();
        let fs = PmFs::open(Arc::clone(&p), "test", PmFsOpen::Create(ID)).unwrap();
        let mut w = fs.create(Path::new("/db/000007.sst")).unwrap();
        w.append(&vec![1u8; 100_000]).unwrap();
        w.sync().unwrap();
        let dir = p.named_root(PMFS_ROOT_NAME).unwrap().unwrap();
        let entry = dir + DIR_HEADER_BYTES; // the first entry: the file above
        (p, entry)
    };
    // A flipped name byte fails the entry checksum.
    let (p, entry) = setup();
    let mut b = [0u8; 1];
    p.read(entry + 33, &mut b).unwrap();
    p.write(entry + 33, &[b[0] ^ 0x20]).unwrap();
    let err = PmFs::open(Arc::clone(&p), "pool.pm", PmFsOpen::Existing(ID))
        .err()
        .unwrap();
    assert!(
        err.is_corruption() && err.to_string().contains("checksum"),
        "{err}"
    );
    // A chunk pointer into the middle of a chunk is reported, not followed.
    let (p, entry) = setup();
    let first = p.load_u64(entry + 16).unwrap();
    p.store_u64_persist(first, first + 100).unwrap();
    let err = PmFs::open(Arc::clone(&p), "pool.pm", PmFsOpen::Existing(ID))
        .err()
        .unwrap();
    assert!(
        err.is_corruption() && err.to_string().contains("chunk"),
        "{err}"
    );
    // A size beyond the file's chunks is reported, and so is a size word that fails its
    // check.
    for word in [encode_checked(entry_of_first_file(), 10 << 20), 10 << 20] {
        let (p, entry) = setup();
        assert_eq!(entry, entry_of_first_file());
        p.store_u64_persist(entry + 8, word).unwrap();
        let err = PmFs::open(Arc::clone(&p), "pool.pm", PmFsOpen::Existing(ID))
            .err()
            .unwrap();
        assert!(
            err.is_corruption() && err.to_string().contains("size"),
            "{err}"
        );
    }
    // Every single-bit flip of the state, size, chunk, length, flags and name fields is
    // corruption: never a free entry (a vanished file), a shorter file or another file.
    let (p, entry) = setup();
    let mut raw = [0u8; 40];
    p.read(entry, &mut raw).unwrap();
    for bit in 0..40 * 8 {
        let mut damaged = raw;
        damaged[bit / 8] ^= 1 << (bit % 8);
        p.write(entry, &damaged).unwrap();
        let err = PmFs::open(Arc::clone(&p), "pool.pm", PmFsOpen::Existing(ID))
            .err()
            .unwrap_or_else(|| panic!("bit {bit} of the entry flipped unnoticed"));
        assert!(err.is_corruption(), "bit {bit}: {err}");
    }
    p.write(entry, &raw).unwrap();
    assert!(PmFs::open(Arc::clone(&p), "pool.pm", PmFsOpen::Existing(ID)).is_ok());
    // A pool without a file system is refused when not creating.
    let empty = PmPool::create_crash_sim(&o, false).unwrap();
    assert!(PmFs::open(empty, "empty.pm", PmFsOpen::Existing(ID)).is_err());
}

/// The offset of the first directory entry of a pool formatted by `setup`-like code: the
/// directory is the first chunk handed out.
fn entry_of_first_file() -> u64 {
    (64 << 10) + DIR_HEADER_BYTES
}

/// A pool belongs to the database that formatted it: another identity is refused, unless
/// it is creating a database and the pool holds no file (a creation that stopped early);
/// a pool of the first format is refused with an error naming it.
#[test]
fn a_pool_is_bound_to_its_database() {
    let p = pool();
    let fs = PmFs::open(Arc::clone(&p), "a.pool", PmFsOpen::Create(ID)).unwrap();
    assert_eq!(fs.identity(), ID);
    let mut w = fs.create_log(Path::new("/db/000003.log")).unwrap();
    w.append(b"acknowledged").unwrap();
    w.flush().unwrap();
    drop((w, fs));
    for how in [PmFsOpen::Existing(ID + 1), PmFsOpen::Create(ID + 1)] {
        let err = PmFs::open(Arc::clone(&p), "a.pool", how).err().unwrap();
        assert!(
            matches!(err, Error::InvalidArgument(_))
                && err.to_string().contains("another database"),
            "{how:?}: {err}"
        );
    }
    let fs = PmFs::open(Arc::clone(&p), "a.pool", PmFsOpen::Existing(ID)).unwrap();
    assert_eq!(
        fs.read_all(Path::new("/db/000003.log")).unwrap(),
        b"acknowledged"
    );
    // Emptied, the pool may be taken over by a new database, and is then bound to it.
    fs.remove(Path::new("/db/000003.log")).unwrap();
    drop(fs);
    let fs = PmFs::open(Arc::clone(&p), "a.pool", PmFsOpen::Create(ID + 1)).unwrap();
    assert_eq!(fs.identity(), ID + 1);
    drop(fs);
    assert!(PmFs::open(Arc::clone(&p), "a.pool", PmFsOpen::Existing(ID)).is_err());
    // A flipped bit in the directory header is corruption (damage to the identity, in the
    // pool's root directory, is tested in `pm_open.rs`).
    let root = p.named_root(PMFS_ROOT_NAME).unwrap().unwrap();
    let mut header = [0u8; 20];
    p.read(root, &mut header).unwrap();
    for at in [3u64, 9, 17] {
        let mut b = header;
        b[at as usize] ^= 4;
        p.write(root, &b).unwrap();
        let err = PmFs::open(Arc::clone(&p), "a.pool", PmFsOpen::Existing(ID + 1))
            .err()
            .unwrap();
        assert!(err.is_corruption(), "byte {at}: {err}");
    }
    // Older formats are refused by name.
    for (magic, name) in DIR_MAGIC_OLD {
        p.write(root, &magic.to_le_bytes()).unwrap();
        let err = PmFs::open(Arc::clone(&p), "a.pool", PmFsOpen::Existing(ID + 1))
            .err()
            .unwrap();
        assert!(
            matches!(err, Error::InvalidArgument(_)) && err.to_string().contains(name),
            "{err}"
        );
    }
}

/// Tables leave the spare chunk and the part of the log quota the logs do not hold free;
/// logs leave the spare; only `create_log_using_spare` takes the spare; `reserve` links a
/// log's chunks ahead, and a failed reservation appends nothing.
#[test]
fn tables_and_logs_share_the_pool_by_the_space_policy() {
    let p = pool(); // 16 chunks: the header, the directory, 14 free
    let fs = PmFs::open(Arc::clone(&p), "s.pool", PmFsOpen::Create(ID)).unwrap();
    fs.set_space_policy(PmSpacePolicy {
        structure_keep_chunks: 0,
        spare_chunks: 1,
        log_quota_chunks: 4,
        manifest_chunks: 0,
    });
    assert_eq!(fs.space().free_chunks, 14);
    let mut log = fs.create_log(Path::new("/db/000001.log")).unwrap();
    assert_eq!(fs.space().log_chunks, 1);
    // Tables may take 14 - 1 (log) - 1 (spare) - 3 (rest of the log quota) = 9 chunks.
    let dpc = fs.data_per_chunk() as usize;
    let mut table = fs.create(Path::new("/db/000002.sst")).unwrap();
    table.append(&vec![7u8; 9 * dpc]).unwrap();
    let err = table.append(&[7u8]).unwrap_err();
    assert!(matches!(err, Error::NoSpace(_)), "{err}");
    assert_eq!(fs.space().free_chunks, 4);
    // The log may grow into the 3 chunks of the quota, not into the spare.
    log.reserve(4 * dpc as u64).unwrap();
    assert_eq!((fs.space().free_chunks, fs.space().log_chunks), (1, 4));
    let err = log.reserve(4 * dpc as u64 + 1).unwrap_err();
    assert!(matches!(err, Error::NoSpace(_)), "{err}");
    assert_eq!(log.size(), 0, "a failed reservation appends nothing");
    log.append(&vec![1u8; 4 * dpc]).unwrap();
    log.flush().unwrap();
    assert_eq!(fs.space().free_chunks, 1, "the reserved chunks were used");
    let err = fs.create_log(Path::new("/db/000003.log")).err().unwrap();
    assert!(matches!(err, Error::NoSpace(_)), "{err}");
    let spare = fs
        .create_log_using_spare(Path::new("/db/000003.log"))
        .unwrap();
    assert_eq!(fs.space().free_chunks, 0);
    drop((spare, log, table));
    // Removing files gives their chunks back, and the log count follows.
    fs.remove(Path::new("/db/000001.log")).unwrap();
    fs.remove(Path::new("/db/000002.sst")).unwrap();
    assert_eq!(fs.space().log_chunks, 1);
    assert_eq!(fs.space().free_chunks, 13);
    // Log chunks are recognised again after a reopen (the flag is in the entry).
    let img = p.crash_image(tierkv_pm::CrashImage::Strict).unwrap();
    let p2 = PmPool::open_crash_image(img, &log_pool_options()).unwrap();
    let fs2 = PmFs::open(p2, "s2", PmFsOpen::Existing(ID)).unwrap();
    assert_eq!(fs2.space().log_chunks, 1);
}

/// A manifest's chunks are zeroed like a log's but are not log space, also after a reopen
/// (the name says so); tables and logs leave the manifest's chunks free, and a manifest
/// may take them (not the WAL's spare).
#[test]
fn manifests_take_the_chunks_set_aside_for_them() {
    let p = pool(); // 16 chunks: the header, the directory, 14 free
    let fs = PmFs::open(Arc::clone(&p), "m.pool", PmFsOpen::Create(ID)).unwrap();
    fs.set_space_policy(PmSpacePolicy {
        structure_keep_chunks: 0,
        spare_chunks: 3,
        log_quota_chunks: 0,
        manifest_chunks: 2,
    });
    let dpc = fs.data_per_chunk() as usize;
    let mut table = fs.create(Path::new("/db/000002.sst")).unwrap();
    table.append(&vec![7u8; 11 * dpc]).unwrap();
    assert!(matches!(table.append(&[7u8]), Err(Error::NoSpace(_))));
    let err = fs.create_log(Path::new("/db/000003.log")).err().unwrap();
    assert!(matches!(err, Error::NoSpace(_)), "{err}");
    let mut manifest = fs.create_log(Path::new("/db/MANIFEST-000004")).unwrap();
    manifest.append(&vec![1u8; 2 * dpc]).unwrap();
    manifest.flush().unwrap();
    assert_eq!(fs.space().log_chunks, 0, "a manifest is not log space");
    assert_eq!(fs.space().manifest_chunks, 2);
    assert_eq!(fs.space().free_chunks, 1, "the WAL's spare is left");
    assert_eq!(fs.space().chunks_for_logs(), 0);
    let err = manifest.append(&vec![1u8; dpc]).unwrap_err();
    assert!(
        matches!(&err, Error::NoSpace(m) if m.contains("manifest")),
        "{err}"
    );
    drop((manifest, table));
    let img = p.crash_image(tierkv_pm::CrashImage::Strict).unwrap();
    let p2 = PmPool::open_crash_image(img, &log_pool_options()).unwrap();
    let fs2 = PmFs::open(p2, "m2", PmFsOpen::Existing(ID)).unwrap();
    assert_eq!(fs2.space().log_chunks, 0);
    assert_eq!(
        fs2.space().manifest_chunks,
        2,
        "recognised by its name after a reopen"
    );
    let data = fs2.read_all(Path::new("/db/MANIFEST-000004")).unwrap();
    assert_eq!(data, vec![1u8; 2 * dpc]);
    fs2.remove(Path::new("/db/MANIFEST-000004")).unwrap();
    assert_eq!(fs2.space().log_chunks, 0);
    assert_eq!(fs2.space().manifest_chunks, 0);
    // While the manifests hold their chunks, logs keep only the WAL's spare: the chunks the
    // manifests took do not come out of the logs' room a second time.
    let fs = PmFs::open(pool(), "m3.pool", PmFsOpen::Create(ID)).unwrap();
    fs.set_space_policy(PmSpacePolicy {
        structure_keep_chunks: 0,
        spare_chunks: 3,
        log_quota_chunks: 4,
        manifest_chunks: 2,
    });
    let mut manifest = fs.create_log(Path::new("/db/MANIFEST-000005")).unwrap();
    manifest.append(&vec![1u8; dpc + 1]).unwrap();
    manifest.flush().unwrap();
    assert_eq!(fs.space().manifest_chunks, 2);
    // 14 - 2 (manifest) = 12 free; tables leave the WAL's spare and the log quota: 7.
    let mut table = fs.create(Path::new("/db/000006.sst")).unwrap();
    table.append(&vec![7u8; 7 * dpc]).unwrap();
    assert!(matches!(table.append(&[7u8]), Err(Error::NoSpace(_))));
    let mut log = fs.create_log(Path::new("/db/000007.log")).unwrap();
    log.reserve(4 * dpc as u64).unwrap();
    assert_eq!(fs.space().log_chunks, 4, "the whole log quota");
    assert_eq!(fs.space().free_chunks, 1);
}

/// One fence per flushed PM log append (data and size together), whatever the record
/// size and whether its pieces are stored non-temporally: the design's write path depends
/// on it.
#[test]
fn a_flushed_log_append_takes_one_fence() {
    use crate::log::LogWriter;
    let p = pool();
    let fs = PmFs::open(Arc::clone(&p), "f.pool", PmFsOpen::Create(ID)).unwrap();
    let mut log = LogWriter::new(fs.create_log(Path::new("/db/000001.log")).unwrap());
    log.reserve_record(0).unwrap();
    for len in [0usize, 1, 100, 144, 1023, 1024, 5000, 40_000] {
        let before = p.fence_count();
        log.add_record(&vec![3u8; len]).unwrap();
        assert_eq!(p.fence_count() - before, 1, "a {len}-byte record");
    }
}

fn log_pool_options() -> PoolOptions {
    PoolOptions {
        size: 1 << 20,
        chunk_size: 64 << 10,
        ..PoolOptions::default()
    }
}

/// Records of varied sizes (up to 3000 bytes, so some span log blocks as several fragments);
/// `tag` varies the content, not the sizes.
fn log_records(n: u32, tag: u8) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| vec![(i as u8) ^ tag; (i as usize * 37) % 3000 + 1])
        .collect()
}

type CreateFn = fn(&PmFs, &Path) -> Result<Box<dyn WritableFile>>;

/// Appends `records` to a new log made by `create` and, at every fence of the run (just
/// before it takes effect, i.e. with that persist in flight), recovers the log from the
/// all-pending image, 4 word-torn and 8 line-torn images: each must read back, without error, as a prefix of
/// `records` holding every acknowledged record. Returns the number of images checked.
fn check_in_flight_log_images(
    p: &Arc<PmPool>,
    fs: &PmFs,
    create: CreateFn,
    records: Arc<Vec<Vec<u8>>>,
) -> u64 {
    use crate::log::{LogReader, LogWriter};
    use tierkv_pm::CrashImage;
    let acked = Arc::new(AtomicU64::new(0));
    let checked = Arc::new(AtomicU64::new(0));
    {
        let (acked, checked, records) = (
            Arc::clone(&acked),
            Arc::clone(&checked),
            Arc::clone(&records),
        );
        let weak = Arc::downgrade(p);
        p.set_fence_hook(Some(Box::new(move |fence| {
            let Some(p) = weak.upgrade() else { return };
            let acked = acked.load(Ordering::SeqCst) as usize;
            let kinds = std::iter::once(CrashImage::AllPending)
                .chain((0..4).map(|t| CrashImage::Torn(fence * 100 + t)))
                .chain((0..8).map(|t| CrashImage::TornLines(fence * 100 + t)));
            for kind in kinds {
                let img = p.crash_image(kind).unwrap();
                let fs2 = PmFs::open(
                    PmPool::open_crash_image(img, &log_pool_options()).unwrap(),
                    "img",
                    PmFsOpen::Existing(ID),
                )
                .unwrap();
                let path = Path::new("/db/000009.log");
                let data = if fs2.exists(path) {
                    fs2.read_all(path).unwrap()
                } else {
                    Vec::new()
                };
                let mut reader = LogReader::new(data, "000009.log");
                let mut got = Vec::new();
                while let Some(r) = reader
                    .next_record()
                    .unwrap_or_else(|e| panic!("fence {fence} {kind:?}: {e}"))
                {
                    got.push(r);
                }
                assert!(
                    got.len() >= acked && got.len() <= acked + 1,
                    "fence {fence} {kind:?}: {} records recovered, {acked} acknowledged",
                    got.len()
                );
                assert!(
                    got[..] == records[..got.len()],
                    "fence {fence} {kind:?}: a recovered record is not the one written"
                );
                checked.fetch_add(1, Ordering::SeqCst);
            }
        })));
    }
    let mut log = LogWriter::new(create(fs, Path::new("/db/000009.log")).unwrap());
    for r in records.iter() {
        log.add_record(r).unwrap();
        acked.fetch_add(1, Ordering::SeqCst);
    }
    p.set_fence_hook(None);
    checked.load(Ordering::SeqCst)
}

#[test]
fn pm_log_recovers_every_acknowledged_record_at_every_fence() {
    let p = PmPool::create_crash_sim(&log_pool_options(), true).unwrap();
    let fs = PmFs::open(Arc::clone(&p), "test", PmFsOpen::Create(ID)).unwrap();
    let records = Arc::new(log_records(120, 0));
    let n = check_in_flight_log_images(&p, &fs, |fs, p| fs.create_log(p), records);
    assert!(n >= 120 * 13, "only {n} images checked");
}

/// A log whose chunks held another log's records: an interrupted append must never expose
/// the old records (same sizes, hence at the same offsets) as if they were new ones.
#[test]
fn reused_log_chunks_never_expose_stale_records() {
    use crate::log::LogWriter;
    let p = PmPool::create_crash_sim(&log_pool_options(), true).unwrap();
    let fs = PmFs::open(Arc::clone(&p), "test", PmFsOpen::Create(ID)).unwrap();
    // Fixed-size records (a fillrandom WAL), 300 of which fit in one chunk: the old log's
    // only chunk is the next one handed out, and its records sit at the offsets where the
    // new log's records go.
    let sized =
        |tag: u8| -> Vec<Vec<u8>> { (0..300u32).map(|i| vec![i as u8 ^ tag; 144]).collect() };
    let free = p.free_chunks();
    let mut w = LogWriter::new(fs.create_log(Path::new("/db/000002.log")).unwrap());
    for r in sized(0xa5) {
        w.add_record(&r).unwrap();
    }
    assert_eq!(p.free_chunks(), free - 1, "the old log fits in one chunk");
    drop(w);
    fs.remove(Path::new("/db/000002.log")).unwrap();
    assert_eq!(p.free_chunks(), free);
    let n = check_in_flight_log_images(&p, &fs, |fs, p| fs.create_log(p), Arc::new(sized(0)));
    assert!(n >= 300 * 13, "only {n} images checked");
}

/// In `msync` mode every flush msyncs what it persisted (data and entry), not only `sync`:
/// the mode promises power-fail durability for every persisted append.
#[test]
fn msync_mode_msyncs_every_flushed_append() {
    let dir = tempfile::tempdir().unwrap();
    let o = PoolOptions {
        size: 1 << 20,
        chunk_size: 64 << 10,
        mode: tierkv_pm::DurabilityMode::Msync,
        ..PoolOptions::default()
    };
    let p = PmPool::create(&dir.path().join("m.pool"), &o).unwrap();
    let fs = PmFs::open(Arc::clone(&p), "test", PmFsOpen::Create(ID)).unwrap();
    let mut w = fs.create_log(Path::new("/db/000001.log")).unwrap();
    let data = vec![7u8; 3000];
    for _ in 0..10 {
        let before = p.stats().bytes_msynced;
        w.append(&data[..150]).unwrap();
        w.append(&data).unwrap(); // non-temporal piece
        w.flush().unwrap();
        let msynced = p.stats().bytes_msynced - before;
        assert!(
            msynced >= 3150 + ENTRY_BYTES,
            "a flush msynced only {msynced} bytes"
        );
    }
    // Emulated mode: a flush does not msync, a sync does.
    let p = PmPool::create(
        &dir.path().join("e.pool"),
        &PoolOptions {
            mode: tierkv_pm::DurabilityMode::Emulated,
            ..o
        },
    )
    .unwrap();
    let fs = PmFs::open(Arc::clone(&p), "test", PmFsOpen::Create(ID)).unwrap();
    let mut w = fs.create_log(Path::new("/db/000001.log")).unwrap();
    w.append(&data).unwrap();
    w.flush().unwrap();
    assert_eq!(p.stats().bytes_msynced, 0);
    w.sync().unwrap();
    assert!(p.stats().bytes_msynced >= 3000);
}

/// Micro-benchmark of the PM WAL append: a 144-byte record through the record log writer
/// into a `PmFs` log on /dev/shm (emulated mode), persisted before `add_record` returns.
/// Three logs of 1M records one after another, each deleted before the next: pass 0 uses
/// new chunks of a new pool, passes 1 and 2 reuse the chunks freed by the one before.
#[test]
#[ignore = "micro benchmark: cargo test --release -p tierkv --lib -- --ignored --nocapture"]
fn bench_pm_log_append_144_bytes() {
    use crate::log::LogWriter;
    let dir = if Path::new("/dev/shm").is_dir() {
        tempfile::tempdir_in("/dev/shm").unwrap()
    } else {
        tempfile::tempdir().unwrap()
    };
    let o = PoolOptions {
        size: 1 << 30,
        ..PoolOptions::default()
    };
    let p = PmPool::create(&dir.path().join("bench.pool"), &o).unwrap();
    let fs = PmFs::open(Arc::clone(&p), "bench", PmFsOpen::Create(ID)).unwrap();
    let rec = [0x5au8; 144];
    let n = 1_000_000u64;
    for pass in 0..3 {
        let name = format!("/db/{:06}.log", pass + 1);
        let fences = p.fence_count();
        let mut log = LogWriter::new(fs.create_log(Path::new(&name)).unwrap());
        let t = std::time::Instant::now();
        for _ in 0..n {
            log.add_record(&rec).unwrap();
        }
        let ns = t.elapsed().as_nanos() as f64 / n as f64;
        println!(
            "pass {pass}: {ns:.0} ns per persisted 144-byte PM log append ({:.3} fences per append, {})",
            (p.fence_count() - fences) as f64 / n as f64,
            tierkv_pm::flush_instruction()
        );
        drop(log);
        fs.remove(Path::new(&name)).unwrap();
    }
}
