//! Several owners of one PM pool: `PmFs` next to a second structure (a chunk list written by
//! this test), opened together by the pool's open protocol (`open_pm_owners`).
//!
//! The chunk list keeps a head chunk (magic, count, the offsets of its data chunks, a crc)
//! under its own named root, and a known pattern in each data chunk. The tests check that its
//! chunks survive reopens and crash images taken at every fence of its creation and of `PmFs`
//! activity, that nothing leaks, that a chunk claimed twice is corruption naming both owners,
//! that a missing owner is created after the allocator was rebuilt (so it never takes another
//! owner's chunk), that damage to the root directory is corruption, and that a pool of another
//! database is refused before anything but the root directory is read.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tierkv::fs::{
    open_pm_owners, FileSystem, PmFs, PmFsOpen, PmFsOwner, PmOpenReport, PmOwner, PMFS_ROOT_NAME,
};
use tierkv::pm::{CrashImage, PmPool, PoolOptions};
use tierkv::{Error, Result};

const CHUNK: u64 = 64 << 10;
const ID: u128 = 0x5eed_0000_0000_0000_0000_0000_0000_0001;
const LIST: &str = "chunk-list";
const LIST_MAGIC: u64 = u64::from_le_bytes(*b"TESTLIST");
/// Bytes of each data chunk that hold the pattern (the rest is not written).
const PATTERN_BYTES: usize = 4096;

fn pool_options(chunks: u64) -> PoolOptions {
    PoolOptions {
        size: chunks * CHUNK,
        chunk_size: CHUNK,
        ..PoolOptions::default()
    }
}

fn pattern(index: u64) -> Vec<u8> {
    (0..PATTERN_BYTES)
        .map(|j| (index as usize * 31 + j * 7) as u8)
        .collect()
}

/// The test's second owner: a head chunk listing `data_chunks` data chunks, each holding
/// `pattern(i)`.
struct ChunkList {
    pool: Arc<PmPool>,
    data_chunks: u64,
    /// The chunks found at open or made at create (head first).
    chunks: Vec<u64>,
    /// The pool's free chunks when `create` was called.
    free_at_create: Option<u64>,
    /// `open` checks the data chunks' pattern.
    verify: bool,
}

impl ChunkList {
    fn new(pool: &Arc<PmPool>, data_chunks: u64) -> ChunkList {
        ChunkList {
            pool: Arc::clone(pool),
            data_chunks,
            chunks: Vec::new(),
            free_at_create: None,
            verify: true,
        }
    }

    fn bad(&self, why: String) -> Error {
        Error::corruption(format!("{LIST} in {}", self.pool.location()), why)
    }

    /// The head chunk's bytes for `data`.
    fn head(data: &[u64]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&LIST_MAGIC.to_le_bytes());
        b.extend_from_slice(&(data.len() as u64).to_le_bytes());
        for c in data {
            b.extend_from_slice(&c.to_le_bytes());
        }
        let crc = crc32c::crc32c(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        b
    }
}

impl PmOwner for ChunkList {
    fn root_name(&self) -> &str {
        LIST
    }

    fn open(&mut self, root: u64) -> Result<Vec<u64>> {
        let p = &self.pool;
        if !root.is_multiple_of(CHUNK) || root == 0 || root >= p.size() {
            return Err(self.bad(format!("root {root} is not a chunk")));
        }
        let mut fixed = [0u8; 16];
        p.read(root, &mut fixed)?;
        let count = u64::from_le_bytes(fixed[8..].try_into().unwrap());
        if u64::from_le_bytes(fixed[..8].try_into().unwrap()) != LIST_MAGIC || count > 100 {
            return Err(self.bad("bad head".into()));
        }
        let mut head = vec![0u8; 16 + 8 * count as usize + 4];
        p.read(root, &mut head)?;
        let data: Vec<u64> = (0..count as usize)
            .map(|i| u64::from_le_bytes(head[16 + 8 * i..24 + 8 * i].try_into().unwrap()))
            .collect();
        if head != Self::head(&data) {
            return Err(self.bad("head fails its checksum".into()));
        }
        for (i, &c) in data.iter().enumerate().filter(|_| self.verify) {
            let mut got = vec![0u8; PATTERN_BYTES];
            p.read(c, &mut got)
                .map_err(|_| self.bad(format!("data chunk {c} out of the pool")))?;
            if got != pattern(i as u64) {
                return Err(self.bad(format!("data chunk {i} at {c} lost its pattern")));
            }
        }
        self.chunks = std::iter::once(root).chain(data).collect();
        Ok(self.chunks.clone())
    }

    fn holdings(&self) -> Option<String> {
        (self.chunks.len() > 1).then(|| format!("{} data chunks", self.chunks.len() - 1))
    }

    fn create(&mut self) -> Result<u64> {
        let p = &self.pool;
        self.free_at_create = Some(p.free_chunks());
        let head = p.allocate_chunk()?;
        let mut data = Vec::new();
        for i in 0..self.data_chunks {
            let c = p.allocate_chunk()?;
            p.write(c, &pattern(i))?;
            p.persist(c, PATTERN_BYTES as u64)?;
            data.push(c);
        }
        let bytes = Self::head(&data);
        p.write(head, &bytes)?;
        p.persist(head, bytes.len() as u64)?;
        self.chunks = std::iter::once(head).chain(data).collect();
        Ok(head)
    }
}

/// Opens `pool` with `PmFs` and a chunk list of `data_chunks`.
fn open_both(
    pool: &Arc<PmPool>,
    how: PmFsOpen,
    data_chunks: u64,
) -> Result<(PmFs, ChunkList, PmOpenReport)> {
    open_with(pool, how, ChunkList::new(pool, data_chunks))
}

/// Opens `pool` with `PmFs` and `list`.
fn open_with(
    pool: &Arc<PmPool>,
    how: PmFsOpen,
    mut list: ChunkList,
) -> Result<(PmFs, ChunkList, PmOpenReport)> {
    let mut fs = PmFsOwner::new(Arc::clone(pool), "test pool", how.identity())?;
    let report = open_pm_owners(pool, "test pool", how, &mut [&mut fs, &mut list])?;
    Ok((fs.into_fs(), list, report))
}

fn reopen_image(image: Vec<u8>) -> Arc<PmPool> {
    let chunks = image.len() as u64 / CHUNK;
    PmPool::open_crash_image(image, &pool_options(chunks)).unwrap()
}

fn write_file(fs: &PmFs, name: &str, data: &[u8]) {
    let mut w = fs.create(&Path::new("/db").join(name)).unwrap();
    w.append(data).unwrap();
    w.sync().unwrap();
}

fn read_file(fs: &PmFs, name: &str) -> Vec<u8> {
    fs.read_all(&Path::new("/db").join(name)).unwrap()
}

/// Removes every file of `fs`; then only the directory chunk, the chunk list's chunks and
/// whatever leaked stay allocated. Asserts that nothing leaked.
fn assert_nothing_leaks(pool: &PmPool, fs: &PmFs, list: &ChunkList, ctx: &str) {
    for name in fs.file_names() {
        fs.remove(&Path::new("/db").join(name)).unwrap();
    }
    assert_eq!(
        pool.free_chunks(),
        pool.chunk_count() - 1 - 1 - list.chunks.len() as u64,
        "{ctx}: after removing every file, only the header, the PmFs directory and the chunk \
         list's {} chunks may be allocated",
        list.chunks.len()
    );
}

#[test]
fn a_second_owner_survives_reopens_next_to_pmfs_and_nothing_leaks() {
    let pool = PmPool::create_crash_sim(&pool_options(32), true).unwrap();
    let (fs, list, report) = open_both(&pool, PmFsOpen::Create(ID), 3).unwrap();
    assert_eq!(report.created, vec![PMFS_ROOT_NAME, LIST]);
    assert_eq!(list.chunks.len(), 4);
    // Created after the rebuild (and after PmFs made its directory): every chunk but the
    // header and the directory was free.
    assert_eq!(list.free_at_create, Some(32 - 2));
    let a: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    write_file(&fs, "000001.sst", &a);
    write_file(&fs, "000002.sst", b"small");
    let mut log = fs.create_log(Path::new("/db/000003.log")).unwrap();
    log.append(b"logged").unwrap();
    log.flush().unwrap();
    drop(log);
    let pmfs_chunks = 1 + 4 + 1 + 1; // directory, 200,000 bytes in 4 chunks, 2 small files
    assert_eq!(pool.free_chunks(), 32 - 1 - pmfs_chunks - 4);
    drop((fs, list));

    for (what, p) in [
        ("the same pool", Arc::clone(&pool)),
        (
            "the strict image",
            reopen_image(pool.crash_image(CrashImage::Strict).unwrap()),
        ),
    ] {
        let (fences, written) = (p.fence_count(), p.stats().lines_written_back);
        let (fs, list, report) = open_both(&p, PmFsOpen::Existing(ID), 3).unwrap();
        assert!(report.created.is_empty(), "{what}");
        assert_eq!(
            report.chunks,
            vec![
                (PMFS_ROOT_NAME.to_string(), pmfs_chunks),
                (LIST.to_string(), 4)
            ]
        );
        assert_eq!(
            (p.fence_count(), p.stats().lines_written_back),
            (fences, written),
            "{what}: opening an existing pool writes nothing"
        );
        assert_eq!(read_file(&fs, "000001.sst"), a, "{what}");
        assert_eq!(read_file(&fs, "000002.sst"), b"small", "{what}");
        assert_eq!(read_file(&fs, "000003.log"), b"logged", "{what}");
        assert_eq!(p.free_chunks(), 32 - 1 - pmfs_chunks - 4, "{what}");
        // The file system alone may not open a pool holding another structure: the chunk
        // list's chunks would be freed.
        let err = PmFs::open(Arc::clone(&p), "test pool", PmFsOpen::Existing(ID))
            .err()
            .unwrap();
        assert!(
            matches!(&err, Error::InvalidArgument(m) if m.contains(LIST)),
            "{what}: {err}"
        );
        assert_nothing_leaks(&p, &fs, &list, what);
    }
}

/// What the crash-image check needs to know at each fence.
#[derive(Default)]
struct Progress {
    /// Both owners were published (images are opened as an existing database).
    created: bool,
    /// Files whose last flush returned, with their content then (a prefix of the content of a
    /// file still being appended to).
    durable: Vec<(String, Vec<u8>)>,
}

/// Crash images taken at every fence (strict, all-pending, word- and line-torn) of the
/// creation of both owners and of PmFs activity afterwards (tables, a log, removals): each
/// reopens with the chunk list intact (or, before its root was published, created anew),
/// every durable file intact, and no chunk leaked.
#[test]
fn crash_images_at_every_fence_keep_both_owners_and_leak_nothing() {
    let pool = PmPool::create_crash_sim(&pool_options(24), true).unwrap();
    let progress = Arc::new(Mutex::new(Progress::default()));
    let checked = Arc::new(AtomicU64::new(0));
    {
        let (progress, checked) = (Arc::clone(&progress), Arc::clone(&checked));
        let weak = Arc::downgrade(&pool);
        pool.set_fence_hook(Some(Box::new(move |fence| {
            let Some(pool) = weak.upgrade() else { return };
            let progress = progress.lock().unwrap();
            let kinds = [CrashImage::Strict, CrashImage::AllPending]
                .into_iter()
                .chain((0..3).map(|s| CrashImage::Torn(fence * 10 + s)))
                .chain((0..3).map(|s| CrashImage::TornLines(fence * 10 + s)));
            for kind in kinds {
                let ctx = format!("fence {fence} {kind:?}");
                let p = reopen_image(pool.crash_image(kind).unwrap());
                let how = if progress.created {
                    PmFsOpen::Existing(ID)
                } else {
                    PmFsOpen::Create(ID)
                };
                let (fs, list, report) =
                    open_both(&p, how, 2).unwrap_or_else(|e| panic!("{ctx}: {e}"));
                if progress.created {
                    assert!(report.created.is_empty(), "{ctx}: {report:?}");
                }
                assert_eq!(list.chunks.len(), 3, "{ctx}");
                for (name, data) in &progress.durable {
                    let got = read_file(&fs, name);
                    assert!(
                        got.len() >= data.len() && got[..data.len()] == data[..],
                        "{ctx}: {name} lost durable bytes"
                    );
                }
                assert_nothing_leaks(&p, &fs, &list, &ctx);
                checked.fetch_add(1, Ordering::Relaxed);
            }
        })));
    }
    let (fs, list, _) = open_both(&pool, PmFsOpen::Create(ID), 2).unwrap();
    progress.lock().unwrap().created = true;
    let fences_at_creation = checked.load(Ordering::Relaxed);
    let durable = |name: &str, data: Vec<u8>| {
        let mut p = progress.lock().unwrap();
        p.durable.retain(|(n, _)| n != name);
        p.durable.push((name.to_string(), data));
    };
    let table: Vec<u8> = (0..150_000u32).map(|i| (i * 13 % 256) as u8).collect();
    write_file(&fs, "000004.sst", &table);
    durable("000004.sst", table.clone());
    let mut log = fs.create_log(Path::new("/db/000005.log")).unwrap();
    let mut logged = Vec::new();
    for i in 0..6u8 {
        let piece = vec![i; 700 + 900 * i as usize];
        log.append(&piece).unwrap();
        log.flush().unwrap();
        logged.extend_from_slice(&piece);
        durable("000005.log", logged.clone());
    }
    drop(log);
    progress
        .lock()
        .unwrap()
        .durable
        .retain(|(n, _)| n != "000004.sst");
    fs.remove(Path::new("/db/000004.sst")).unwrap();
    write_file(&fs, "000006.sst", &table[..70_000]);
    durable("000006.sst", table[..70_000].to_vec());
    pool.set_fence_hook(None);
    let n = checked.load(Ordering::Relaxed);
    assert!(
        fences_at_creation >= 4 * 8 && n >= fences_at_creation + 20 * 8,
        "{fences_at_creation} images during creation, {n} in all"
    );
    assert_nothing_leaks(&pool, &fs, &list, "the live pool");
}

/// A chunk reported by two owners (or twice by one) is corruption naming both claims, and the
/// allocator is not rebuilt from it.
#[test]
fn a_chunk_claimed_twice_is_corruption_naming_both_owners() {
    let pool = PmPool::create_crash_sim(&pool_options(16), false).unwrap();
    let (fs, list, _) = open_both(&pool, PmFsOpen::Create(ID), 1).unwrap();
    write_file(&fs, "000001.sst", &[9u8; 1000]);
    let dir = pool.named_root(PMFS_ROOT_NAME).unwrap().unwrap();
    let head = list.chunks[0];
    let file_chunk = {
        // The file is the only one: its first chunk is the one allocated after the list's.
        list.chunks.iter().max().unwrap() + CHUNK
    };
    assert_eq!(read_file(&fs, "000001.sst"), vec![9u8; 1000]);
    let image = pool.crash_image(CrashImage::Strict).unwrap();
    for (stolen, other) in [
        (dir, PMFS_ROOT_NAME),
        (file_chunk, PMFS_ROOT_NAME),
        (head, LIST),
    ] {
        let p = reopen_image(image.clone());
        // The list now also claims `stolen`: a chunk of PmFs, or its own head.
        let mut data = list.chunks[1..].to_vec();
        data.push(stolen);
        let bytes = ChunkList::head(&data);
        p.write(head, &bytes).unwrap();
        let mut list = ChunkList::new(&p, 1);
        list.verify = false; // the stolen chunk holds no pattern
        let err = open_with(&p, PmFsOpen::Existing(ID), list).err().unwrap();
        let msg = err.to_string();
        assert!(
            err.is_corruption()
                && msg.contains(&format!("offset {stolen}"))
                && msg.contains(&format!("{other:?}"))
                && msg.contains(&format!("{LIST:?}")),
            "{msg}"
        );
    }
}

/// An owner whose root is absent is created after the allocator was rebuilt from the other
/// owners' chunks: it takes only free chunks, and every other owner's data stays intact. An
/// existing database's missing file system is corruption.
#[test]
fn a_missing_owner_is_created_after_the_rebuild_without_touching_other_chunks() {
    let pool = PmPool::create_crash_sim(&pool_options(24), true).unwrap();
    let fs = PmFs::open(Arc::clone(&pool), "test pool", PmFsOpen::Create(ID)).unwrap();
    let data: Vec<u8> = (0..300_000u32).map(|i| (i % 253) as u8).collect();
    write_file(&fs, "000001.sst", &data);
    drop(fs);
    let pmfs_chunks = 1 + 5;
    let (fs, list, report) = open_both(&pool, PmFsOpen::Existing(ID), 4).unwrap();
    assert_eq!(report.created, vec![LIST]);
    assert_eq!(list.free_at_create, Some(24 - 1 - pmfs_chunks));
    assert_eq!(read_file(&fs, "000001.sst"), data);
    let img = pool.crash_image(CrashImage::Strict).unwrap();
    let p = reopen_image(img);
    let (fs, list, report) = open_both(&p, PmFsOpen::Existing(ID), 4).unwrap();
    assert!(report.created.is_empty());
    assert_eq!(read_file(&fs, "000001.sst"), data);
    assert_nothing_leaks(&p, &fs, &list, "reopened");

    // The other way round: a pool holding only the chunk list.
    let pool = PmPool::create_crash_sim(&pool_options(16), true).unwrap();
    let mut only = ChunkList::new(&pool, 2);
    open_pm_owners(&pool, "test pool", PmFsOpen::Create(ID), &mut [&mut only]).unwrap();
    let err = open_both(&pool, PmFsOpen::Existing(ID), 2).err().unwrap();
    assert!(
        err.is_corruption() && err.to_string().contains("no TierKV file system"),
        "{err}"
    );
    let (fs, list, report) = open_both(&pool, PmFsOpen::Create(ID), 2).unwrap();
    assert_eq!(report.created, vec![PMFS_ROOT_NAME]);
    assert_eq!(list.chunks, only.chunks);
    write_file(&fs, "000002.sst", &data[..100_000]);
    let p = reopen_image(pool.crash_image(CrashImage::Strict).unwrap());
    let (fs, list, _) = open_both(&p, PmFsOpen::Existing(ID), 2).unwrap();
    assert_eq!(read_file(&fs, "000002.sst"), data[..100_000]);
    assert_nothing_leaks(&p, &fs, &list, "reopened");
}

/// A flipped bit anywhere in the root directory's header, its selector or its current copy
/// (flags, count, identity, every entry's name and root, the checksum) is corruption naming
/// the root directory.
#[test]
fn damage_to_the_root_directory_is_corruption() {
    use tierkv::pm::{ROOT_COPY_OFFSETS, ROOT_DIRECTORY_OFFSET, ROOT_SELECTOR_OFFSET};
    let pool = PmPool::create_crash_sim(&pool_options(8), false).unwrap();
    let (fs, _, _) = open_both(&pool, PmFsOpen::Create(ID), 1).unwrap();
    write_file(&fs, "000001.sst", b"data");
    let image = pool.crash_image(CrashImage::Strict).unwrap();
    let selector = u64::from_le_bytes(
        image[ROOT_SELECTOR_OFFSET as usize..ROOT_SELECTOR_OFFSET as usize + 8]
            .try_into()
            .unwrap(),
    );
    let copy = ROOT_COPY_OFFSETS[(selector & 1) as usize] as usize;
    let header = ROOT_DIRECTORY_OFFSET as usize;
    let sel = ROOT_SELECTOR_OFFSET as usize;
    // Copy header (crc, generation, flags, count, identity) and both entries.
    let ranges = [header..header + 20, sel..sel + 8, copy..copy + 32 + 2 * 32];
    let mut flips = 0;
    for range in ranges {
        for byte in range {
            for bit in 0..8 {
                let mut img = image.clone();
                img[byte] ^= 1 << bit;
                let p = reopen_image(img);
                let err = open_both(&p, PmFsOpen::Existing(ID), 1)
                    .err()
                    .unwrap_or_else(|| panic!("byte {byte} bit {bit} flipped unnoticed"));
                assert!(
                    err.is_corruption() && err.to_string().contains("root directory"),
                    "byte {byte} bit {bit}: {err}"
                );
                flips += 1;
            }
        }
    }
    assert_eq!(flips, (20 + 8 + 96) * 8);
    let (fs, _, _) = open_both(&reopen_image(image), PmFsOpen::Existing(ID), 1).unwrap();
    assert_eq!(read_file(&fs, "000001.sst"), b"data");
}

/// A pool of another database is refused before anything but its root directory is read, in
/// both open modes while it holds something; once none of its owners holds anything, a
/// database being created takes it over, and it is then bound to that database.
#[test]
fn a_pool_of_another_database_is_refused_or_taken_over_when_empty() {
    let pool = PmPool::create_crash_sim(&pool_options(16), false).unwrap();
    let (fs, _, _) = open_both(&pool, PmFsOpen::Create(ID), 2).unwrap();
    write_file(&fs, "000001.sst", b"kept");
    drop(fs);
    let image = pool.crash_image(CrashImage::Strict).unwrap();
    let other = ID + 1;
    let p = reopen_image(image.clone());
    let (read, fences) = (p.stats().bytes_read, p.fence_count());
    let err = open_both(&p, PmFsOpen::Existing(other), 2).err().unwrap();
    assert!(
        matches!(&err, Error::InvalidArgument(m) if m.contains("another database")),
        "{err}"
    );
    assert!(
        p.stats().bytes_read - read <= tierkv::pm::HEADER_LEN,
        "only the root directory was read"
    );
    assert_eq!(p.fence_count(), fences, "nothing was written");
    // A database being created may not take over a pool holding something of another one.
    let err = open_both(&p, PmFsOpen::Create(other), 2).err().unwrap();
    let msg = err.to_string();
    assert!(
        matches!(err, Error::InvalidArgument(_))
            && msg.contains("another database")
            && msg.contains("pmfs: 1 file")
            && msg.contains("chunk-list: 2 data chunks"),
        "{msg}"
    );
    assert_eq!(p.fence_count(), fences, "nothing was written");
    let (fs, _, _) = open_both(&p, PmFsOpen::Existing(ID), 2).unwrap();
    assert_eq!(read_file(&fs, "000001.sst"), b"kept");

    // A pool whose owners hold nothing (a creation that stopped before its manifest) is
    // taken over: bound to the new database, every structure created anew.
    let p = PmPool::create_crash_sim(&pool_options(16), false).unwrap();
    open_both(&p, PmFsOpen::Create(ID), 0).unwrap();
    let (fs, list, report) = open_both(&p, PmFsOpen::Create(other), 0).unwrap();
    assert!(report.took_over);
    assert_eq!(report.created, vec![PMFS_ROOT_NAME, LIST]);
    assert_eq!(p.root_table().unwrap().identity, Some(other));
    assert_nothing_leaks(&p, &fs, &list, "taken over");
    let err = open_both(&p, PmFsOpen::Existing(ID), 0).err().unwrap();
    assert!(err.to_string().contains("another database"), "{err}");
    // A pool bound to no database is not an existing database's pool.
    let fresh = PmPool::create_crash_sim(&pool_options(16), false).unwrap();
    let err = open_both(&fresh, PmFsOpen::Existing(ID), 0).err().unwrap();
    assert!(err.is_corruption(), "{err}");
}
