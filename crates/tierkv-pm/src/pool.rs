//! [`PmPool`]: a file-backed or crash-simulation pool with bounds-checked accessors.
//!
//! **Purpose.** Creates/opens pools (header verification), dispatches every access to the file
//! mapping or to the crash-simulation backend, applies the durability mode and the emulated
//! latency, owns the chunk allocator, the counters and the fence hook.
//!
//! **Thread safety.** `PmPool` is `Send + Sync` and every method takes `&self`. Every access is
//! bounds-checked (`offset + len <= size`, without overflow) before memory is touched; accessors
//! copy bytes in and out and never hand out references into PM. Callers write disjoint byte ranges
//! (or order their accesses with [`PmPool::store_u64_persist`] (Release) /
//! [`PmPool::load_u64`] (Acquire)); a read of a range that another thread is writing at the same
//! time returns unspecified (possibly torn) bytes, which the engine's checksums reject. Counters
//! are Relaxed atomics; the allocator has its own mutex; the crash-simulation backend serialises
//! its stores with one mutex.
//!
//! **Durability.** At each persist point:
//! * `create` returns: the header (magic, version, geometry, checksum, zeroed roots) and the
//!   empty root directory are durable (written back, fenced, msynced; the directory before the
//!   header, so a valid header implies a valid directory; the file length is fsynced with its
//!   directory).
//! * `persist(o, l)` returns: `[o, o + l)` is durable in the pool's mode (`dax`: power-fail
//!   durable; `msync`: power-fail durable through `msync` of the covering pages; `emulated`:
//!   survives a process crash; on non-x86_64 targets persists always `msync`).
//! * `flush` alone makes nothing durable; the next `fence` does. `write_nt` data is durable after
//!   the next `fence`.
//! * `store_u64_persist` / `set_root` return: the 8-byte value is durable, and it was never torn.
//! * `update_root_table` / `set_named_root` return: the root directory update is durable; it is
//!   failure-atomic (persist points in `roots.rs`).
//! * `msync(o, l)` returns: the pages covering the range are in the file (any mode).
//! * The chunk allocator is never durable (see [`PmPool::rebuild_allocator`]).

use crate::alloc::ChunkAllocator;
use crate::counter::{Padded, Striped};
use crate::crash::CrashSim;
use crate::header::ROOT_DIRECTORY_OFFSET;
use crate::header::{check_geometry, Header, HEADER_LEN, ROOTS_OFFSET};
use crate::latency::{iters_per_us, spin_ns};
use crate::mapping::{AlignedBuf, FileMapping};
use crate::options::{
    CrashImage, DurabilityMode, LatencyModel, PmError, PmResult, PmStats, PoolOptions,
};
use crate::persist::{self, lines_touched, FlushInsn};
use crate::roots::{initial_directory, Roots};
use crate::ROOT_SLOTS;
use parking_lot::RwLock;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

type FenceHook = Arc<dyn Fn(u64) + Send + Sync>;

pub(crate) enum Backend {
    File { map: FileMapping, _file: File },
    Crash(CrashSim),
}

/// How many free chunks to hold back from structures that are not logs (see
/// [`PmPool::set_held_back`]).
pub type HeldBack = Box<dyn Fn() -> u64 + Send + Sync>;

/// A persistent-memory pool: one file (or, for tests, a crash-simulation buffer) addressed by
/// offsets from its base. Thread-safe; callers coordinate who writes which range.
pub struct PmPool {
    /// Base of the mapping / buffer; valid for `size` bytes while `backend` lives.
    base: *mut u8,
    size: u64,
    chunk_size: u64,
    mode: DurabilityMode,
    latency: LatencyModel,
    pub(crate) location: String,
    pub(crate) backend: Backend,
    pub(crate) alloc: ChunkAllocator,
    /// The pool was created by this process: a chunk never handed out reads as zeros.
    created: bool,
    /// `fallocate` failed as unsupported once: chunks are no longer backed on allocation.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(crate) no_fallocate: AtomicBool,
    /// Give a freed chunk's file-system blocks back ([`PmPool::set_release_freed`]).
    pub(crate) release_freed: AtomicBool,
    /// Punching a hole failed as unsupported once: freed chunks are no longer released.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(crate) no_punch: AtomicBool,
    /// Bytes of freed chunks given back to the file system.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(crate) bytes_released: Striped,
    /// Tests: the room left on a simulated file system that replaces `fallocate` (`None`: the
    /// real call). Makes the full-file-system path testable without mounting a small one.
    #[cfg(all(test, target_os = "linux"))]
    pub(crate) simulated_fs_room: parking_lot::Mutex<Option<u64>>,
    lines_written_back: Striped,
    bytes_msynced: Striped,
    /// One counter (its values number the fences for the hook), alone on its line.
    fences: Padded,
    bytes_read: Striped,
    hook: RwLock<Option<FenceHook>>,
    /// How many free chunks [`PmPool::allocate_chunk_outside_reserve`] leaves (the owner of the
    /// pool's logs sets it); `None`: none.
    held_back: RwLock<Option<HeldBack>>,
    /// Whether `hook` is set: read on every fence without taking the lock.
    has_hook: AtomicBool,
    /// The root directory's update lock and validated table.
    roots: Roots,
}

// SAFETY: `base` points into memory owned by `backend` (a shared file mapping or a heap buffer)
// that lives exactly as long as the pool and is never reallocated. The API never hands out `&`
// or `&mut` references into it: bytes are copied in and out through bounds-checked methods, the
// 8-byte accessors are atomic, and the crash-simulation backend serialises its stores with a
// mutex. Callers write disjoint ranges (documented contract), so moving the pool to another
// thread or sharing it between threads cannot create aliasing `&mut` or use-after-free.
unsafe impl Send for PmPool {}
// SAFETY: see `Send` above; every method takes `&self` and synchronises its own state (atomics,
// mutexes), and memory accesses follow the disjoint-ranges contract.
unsafe impl Sync for PmPool {}

impl fmt::Debug for PmPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PmPool")
            .field("location", &self.location)
            .field("size", &self.size)
            .field("chunk_size", &self.chunk_size)
            .field("mode", &self.mode)
            .field("latency", &self.latency)
            .field("crash_sim", &self.is_crash_sim())
            .finish()
    }
}

pub(crate) fn io_err<'a>(
    op: &'static str,
    path: &'a str,
) -> impl FnOnce(std::io::Error) -> PmError + 'a {
    move |source| PmError::Io {
        op,
        path: path.to_string(),
        source,
    }
}

impl PmPool {
    pub(crate) fn build(
        base: *mut u8,
        header: Header,
        mode: DurabilityMode,
        latency: LatencyModel,
        location: String,
        backend: Backend,
        created: bool,
    ) -> PmPool {
        if !latency.is_zero() {
            iters_per_us(); // calibrate the spin loop now, not on the first access
        }
        PmPool {
            base,
            size: header.size,
            chunk_size: header.chunk_size,
            mode,
            latency,
            location,
            backend,
            alloc: ChunkAllocator::new(header.size, header.chunk_size),
            created,
            no_fallocate: AtomicBool::new(false),
            release_freed: AtomicBool::new(false),
            no_punch: AtomicBool::new(false),
            bytes_released: Striped::default(),
            #[cfg(all(test, target_os = "linux"))]
            simulated_fs_room: parking_lot::Mutex::new(None),
            lines_written_back: Striped::default(),
            bytes_msynced: Striped::default(),
            fences: Padded::default(),
            bytes_read: Striped::default(),
            hook: RwLock::new(None),
            held_back: RwLock::new(None),
            has_hook: AtomicBool::new(false),
            roots: Roots::default(),
        }
    }

    fn map_file(file: &File, size: u64, mode: DurabilityMode, path: &str) -> PmResult<FileMapping> {
        match mode {
            DurabilityMode::Dax => FileMapping::map_sync(file, size, path),
            DurabilityMode::Msync | DurabilityMode::Emulated => {
                FileMapping::map_shared(file, size, path)
            }
        }
    }

    /// Creates (or overwrites) a pool file of `options.size` bytes and maps it.
    ///
    /// `options.size` must be a multiple of `options.chunk_size` and hold at least 2 chunks;
    /// `options.chunk_size` must be a non-zero multiple of 4096. In `dax` mode the file must be
    /// on a DAX file system (`MAP_SYNC`), else `InvalidArgument`.
    pub fn create(path: &Path, options: &PoolOptions) -> PmResult<Arc<PmPool>> {
        check_geometry(options.size, options.chunk_size)?;
        let loc = path.display().to_string();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(io_err("create", &loc))?;
        file.set_len(options.size)
            .map_err(io_err("set_len", &loc))?;
        file.sync_all().map_err(io_err("fsync", &loc))?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io_err("fsync directory", &loc))?;
        let map = Self::map_file(&file, options.size, options.mode, &loc)?;
        let header = Header {
            size: options.size,
            chunk_size: options.chunk_size,
        };
        let pool = Self::build(
            map.base(),
            header,
            options.mode,
            options.latency,
            loc,
            Backend::File { map, _file: file },
            true,
        );
        pool.init_header(&header)?;
        Ok(Arc::new(pool))
    }

    /// Opens an existing pool file, verifying its header (`Corruption` naming the file).
    ///
    /// The geometry comes from the header (`options.size` and `options.chunk_size` are not
    /// used); `options.mode` and `options.latency` apply. Every chunk is free until
    /// [`PmPool::rebuild_allocator`] is called.
    pub fn open(path: &Path, options: &PoolOptions) -> PmResult<Arc<PmPool>> {
        let loc = path.display().to_string();
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(io_err("open", &loc))?;
        let (fixed, len) = crate::offline::read_line(&mut file, &loc)?;
        let header = Header::decode(&fixed, len, &loc)?;
        let map = Self::map_file(&file, header.size, options.mode, &loc)?;
        Ok(Arc::new(Self::build(
            map.base(),
            header,
            options.mode,
            options.latency,
            loc,
            Backend::File { map, _file: file },
            false,
        )))
    }

    /// A DRAM-backed pool with a shadow durable image (tests). With `check_stores`, every fence
    /// verifies that no line differs from the shadow image without having been written through
    /// the API.
    ///
    /// The reported mode is always `emulated`; `msync` is a no-op that still persists.
    pub fn create_crash_sim(options: &PoolOptions, check_stores: bool) -> PmResult<Arc<PmPool>> {
        check_geometry(options.size, options.chunk_size)?;
        let buf = AlignedBuf::zeroed(options.size as usize)?;
        let base = buf.base();
        let sim = CrashSim::new(buf, vec![0u8; options.size as usize], check_stores);
        let header = Header {
            size: options.size,
            chunk_size: options.chunk_size,
        };
        let pool = Self::build(
            base,
            header,
            DurabilityMode::Emulated,
            options.latency,
            "crash-sim pool".to_string(),
            Backend::Crash(sim),
            true,
        );
        pool.init_header(&header)?;
        Ok(Arc::new(pool))
    }

    /// Opens a crash image as a new crash-simulation pool.
    ///
    /// Memory and durable image are both `image`; the header is verified like [`PmPool::open`]
    /// (`Corruption` naming "crash image"). Stores are not checked (see
    /// [`PmPool::open_crash_image_checked`]); every chunk is free until
    /// [`PmPool::rebuild_allocator`].
    pub fn open_crash_image(image: Vec<u8>, options: &PoolOptions) -> PmResult<Arc<PmPool>> {
        Self::open_crash_image_checked(image, options, false)
    }

    /// [`PmPool::open_crash_image`] with the `check_stores` verification of
    /// [`PmPool::create_crash_sim`].
    pub fn open_crash_image_checked(
        image: Vec<u8>,
        options: &PoolOptions,
        check_stores: bool,
    ) -> PmResult<Arc<PmPool>> {
        let header = Header::decode(&image, image.len() as u64, "crash image")?;
        let buf = AlignedBuf::from_bytes(&image)?;
        let base = buf.base();
        let sim = CrashSim::new(buf, image, check_stores);
        Ok(Arc::new(Self::build(
            base,
            header,
            DurabilityMode::Emulated,
            options.latency,
            "crash image".to_string(),
            Backend::Crash(sim),
            false,
        )))
    }

    /// Writes and persists the empty root directory, then the checksummed header line (not
    /// counted in the statistics): a valid header implies a valid directory.
    fn init_header(&self, header: &Header) -> PmResult<()> {
        let directory = initial_directory();
        let line = header.encode();
        for (offset, bytes) in [(ROOT_DIRECTORY_OFFSET, &directory[..]), (0, &line[..])] {
            match &self.backend {
                Backend::File { map, .. } => {
                    // SAFETY: `[offset, offset + bytes.len())` lies in `[0, HEADER_LEN)`, inside
                    // chunk 0 and so inside the mapping (size >= 2 chunks >= 8 KiB >=
                    // HEADER_LEN); `bytes` is a local buffer; the pool is not shared with any
                    // other thread yet.
                    unsafe {
                        let at = self.base.add(offset as usize);
                        std::ptr::copy_nonoverlapping(bytes.as_ptr(), at, bytes.len());
                        persist::write_back(at, bytes.len());
                    }
                    persist::fence();
                    map.msync(offset, bytes.len() as u64)
                        .map_err(io_err("msync header", &self.location))?;
                }
                Backend::Crash(sim) => {
                    sim.write(offset, bytes);
                    sim.flush(offset, bytes.len() as u64);
                    sim.fence();
                }
            }
        }
        Ok(())
    }

    /// The root directory's state (`roots.rs`).
    pub(crate) fn roots(&self) -> &Roots {
        &self.roots
    }

    /// Checks that `[offset, offset + len)` lies inside the root directory.
    fn check_reserved(&self, what: &str, offset: u64, len: u64) -> PmResult<()> {
        if offset < ROOT_DIRECTORY_OFFSET || offset.saturating_add(len) > HEADER_LEN {
            return Err(PmError::InvalidArgument(format!(
                "{what}: range at offset {offset} of {len} bytes is outside the root directory"
            )));
        }
        Ok(())
    }

    /// Stores `data` into the root directory (`roots.rs` only; not durable until persisted).
    pub(crate) fn write_reserved(&self, offset: u64, data: &[u8]) -> PmResult<()> {
        self.check_reserved("write_reserved", offset, data.len() as u64)?;
        self.write_checked(offset, data);
        Ok(())
    }

    /// Persists a range of the root directory (`roots.rs` only).
    pub(crate) fn persist_reserved(&self, offset: u64, len: u64) -> PmResult<()> {
        self.check_reserved("persist_reserved", offset, len)?;
        self.flush_checked(offset, len);
        self.fence();
        if self.msync_on_persist() {
            self.msync_checked(offset, len)?;
        }
        Ok(())
    }

    /// Atomic 8-byte store into the root directory, persisted (`roots.rs` only).
    pub(crate) fn store_reserved_u64_persist(&self, offset: u64, value: u64) -> PmResult<()> {
        self.check_u64("store_reserved_u64_persist", offset)?;
        self.check_reserved("store_reserved_u64_persist", offset, 8)?;
        self.store_u64_persist_checked(offset, value)
    }

    /// A crash image of a crash-simulation pool as of now (`None` for file pools).
    pub fn crash_image(&self, kind: CrashImage) -> Option<Vec<u8>> {
        match &self.backend {
            Backend::File { .. } => None,
            Backend::Crash(sim) => Some(sim.image(kind)),
        }
    }

    /// Number of fences so far.
    pub fn fence_count(&self) -> u64 {
        self.fences.0.load(Ordering::Relaxed)
    }

    /// Calls `hook(fence_number)` at every fence (crash-simulation tests): on a crash-simulation
    /// pool just BEFORE the fence takes effect, so crash images taken in the hook hold the lines
    /// this fence is about to make durable as pending (the strict image is the state before
    /// the fence, the all-pending image roughly the state after it, torn images the instants in
    /// between); on a file pool just after it.
    ///
    /// Fence numbers start at 1 and increase by one per fence. The hook runs on the fencing
    /// thread after every internal lock is released, so it may take crash images.
    pub fn set_fence_hook(&self, hook: Option<Box<dyn Fn(u64) + Send + Sync>>) {
        let mut slot = self.hook.write();
        self.has_hook.store(hook.is_some(), Ordering::Release);
        *slot = hook.map(Arc::from);
    }

    /// The mode in force.
    pub fn mode(&self) -> DurabilityMode {
        self.mode
    }

    /// Pool size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Allocation unit.
    pub fn chunk_size(&self) -> u64 {
        self.chunk_size
    }

    /// The emulated latency in force.
    pub fn latency(&self) -> LatencyModel {
        self.latency
    }

    /// The pool file's path (or "crash-sim pool" / "crash image"), for error messages.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// Whether this is a crash-simulation pool.
    pub fn is_crash_sim(&self) -> bool {
        matches!(self.backend, Backend::Crash(_))
    }

    /// The base pointer, for tests that must bypass the API on purpose.
    #[cfg(test)]
    pub(crate) fn raw_base(&self) -> *mut u8 {
        self.base
    }

    /// Whether `[offset, offset + len)` lies inside the pool (without overflow).
    pub fn slice_len_ok(&self, offset: u64, len: u64) -> bool {
        offset.checked_add(len).is_some_and(|end| end <= self.size)
    }

    fn check(&self, what: &str, offset: u64, len: u64) -> PmResult<()> {
        if self.slice_len_ok(offset, len) {
            Ok(())
        } else {
            Err(PmError::InvalidArgument(format!(
                "{what}: range at offset {offset} of {len} bytes is outside the {}-byte pool {}",
                self.size, self.location
            )))
        }
    }

    fn check_writable(&self, what: &str, offset: u64, len: u64) -> PmResult<()> {
        self.check(what, offset, len)?;
        if len > 0 && offset < HEADER_LEN {
            return Err(PmError::InvalidArgument(format!(
                "{what}: range at offset {offset} of {len} bytes overlaps the pool header \
                 [0, {HEADER_LEN}) (use set_root for root slots, update_root_table for the \
                 root directory)"
            )));
        }
        Ok(())
    }

    fn check_u64(&self, what: &str, offset: u64) -> PmResult<()> {
        if !offset.is_multiple_of(8) {
            return Err(PmError::InvalidArgument(format!(
                "{what}: offset {offset} is not 8-byte aligned"
            )));
        }
        self.check(what, offset, 8)
    }

    /// The `AtomicU64` at an 8-aligned, in-bounds offset (checked by the caller).
    fn atomic_at(&self, offset: u64) -> &AtomicU64 {
        debug_assert!(offset.is_multiple_of(8) && offset + 8 <= self.size);
        // SAFETY: `offset` is 8-aligned and `offset + 8 <= size` (checked by every caller), and
        // `base` is page- or 64-aligned, so the pointer is aligned and valid for 8 bytes for as
        // long as `self` (which owns the memory) lives. Accesses to 8-byte words through the
        // pool's u64 accessors are all atomic; other accesses to the same bytes follow the
        // disjoint-ranges contract.
        unsafe { AtomicU64::from_ptr(self.base.add(offset as usize).cast::<u64>()) }
    }

    fn add_read(&self, bytes: u64) {
        self.bytes_read.add(bytes);
        if self.latency.read_ns != 0 {
            spin_ns(u64::from(self.latency.read_ns));
        }
    }

    /// Spins the emulated write latency of `lines` written-back cache lines.
    fn add_write_latency(&self, lines: u64) {
        if self.latency.write_ns != 0 {
            spin_ns(lines.saturating_mul(u64::from(self.latency.write_ns)));
        }
    }

    /// Copies `buf.len()` bytes at `offset` into `buf` (counted, with emulated read latency).
    pub fn read(&self, offset: u64, buf: &mut [u8]) -> PmResult<()> {
        self.check("read", offset, buf.len() as u64)?;
        if !buf.is_empty() {
            // SAFETY: `[offset, offset + buf.len())` is inside the pool memory (checked above),
            // which lives as long as `self`; `buf` is a distinct `&mut` owned by the caller and
            // cannot alias pool memory (the pool never hands out references into it).
            unsafe {
                std::ptr::copy_nonoverlapping(
                    self.base.add(offset as usize),
                    buf.as_mut_ptr(),
                    buf.len(),
                )
            };
        }
        self.add_read(buf.len() as u64);
        Ok(())
    }

    /// Stores `data` at `offset` (not durable until persisted). The header `[0, HEADER_LEN)`
    /// (header line, root slots, root directory) is not writable.
    pub fn write(&self, offset: u64, data: &[u8]) -> PmResult<()> {
        self.check_writable("write", offset, data.len() as u64)?;
        self.write_checked(offset, data);
        Ok(())
    }

    /// Stores `data` at a range checked by the caller: inside the pool, and either outside the
    /// header (`write`) or inside the root directory under its update lock (`write_reserved`).
    fn write_checked(&self, offset: u64, data: &[u8]) {
        debug_assert!(self.slice_len_ok(offset, data.len() as u64));
        if data.is_empty() {
            return;
        }
        match &self.backend {
            // SAFETY: the range is inside the mapping (checked by both callers); `data` cannot
            // alias the mapping (no references into it are handed out); concurrent writers of the
            // same range are excluded by the pool's contract outside the header, and by the root
            // directory's update lock inside it (the only writer there after create).
            Backend::File { .. } => unsafe {
                std::ptr::copy_nonoverlapping(
                    data.as_ptr(),
                    self.base.add(offset as usize),
                    data.len(),
                )
            },
            Backend::Crash(sim) => sim.write(offset, data),
        }
    }

    /// Non-temporal copy of `data` to `offset`: durable after the next fence.
    ///
    /// Every line the range touches counts as written back (and pays the write latency).
    pub fn write_nt(&self, offset: u64, data: &[u8]) -> PmResult<()> {
        self.check_writable("write_nt", offset, data.len() as u64)?;
        if data.is_empty() {
            return Ok(());
        }
        // Counted before the copy, for the reason given in `write_back_ranges_checked`.
        let lines = lines_touched(offset, data.len() as u64);
        self.lines_written_back.add(lines);
        match &self.backend {
            // SAFETY: the range is inside the mapping and outside the header (checked above);
            // the mapping's base is page-aligned and its size a multiple of 4096, so the cache
            // lines of the range are inside it; `data` does not alias it; concurrent access to
            // the range is excluded by the pool's contract.
            Backend::File { .. } => unsafe {
                persist::copy_nt(self.base.add(offset as usize), data)
            },
            Backend::Crash(sim) => sim.write_nt(offset, data),
        }
        self.add_write_latency(lines);
        Ok(())
    }

    /// Write-back of a checked range (counted, with write latency).
    fn flush_checked(&self, offset: u64, len: u64) {
        self.write_back_ranges_checked(&[(offset, len)]);
    }

    /// Writes back checked ranges, counting their lines first: the counter's locked add orders
    /// after earlier write-backs on x86 (as a fence would), so after them it would wait for them
    /// to finish.
    fn write_back_ranges_checked(&self, ranges: &[(u64, u64)]) {
        let lines: u64 = ranges
            .iter()
            .filter(|r| r.1 > 0)
            .map(|&(offset, len)| lines_touched(offset, len))
            .sum();
        self.lines_written_back.add(lines);
        for &(offset, len) in ranges {
            self.write_back_checked(offset, len);
        }
        self.add_write_latency(lines);
    }

    /// Writes back the lines of a checked range; counts nothing.
    fn write_back_checked(&self, offset: u64, len: u64) {
        if len == 0 {
            return;
        }
        match &self.backend {
            // SAFETY: the range is inside the mapping (checked by the caller); the mapping is
            // page-aligned with a size that is a multiple of 4096, so every line of the range is
            // inside it. Write-back does not modify memory.
            Backend::File { .. } => unsafe {
                persist::write_back(self.base.add(offset as usize), len as usize)
            },
            Backend::Crash(sim) => sim.flush(offset, len),
        }
    }

    /// Writes back every cache line of the range (no fence).
    pub fn flush(&self, offset: u64, len: u64) -> PmResult<()> {
        self.check("flush", offset, len)?;
        self.flush_checked(offset, len);
        Ok(())
    }

    /// Writes back every cache line of several ranges (no fence), counting them all before the
    /// first write-back. Prefer it to several [`PmPool::flush`] calls before one fence: each
    /// call's counter update is a locked instruction, which on x86 waits for the write-backs
    /// issued before it, as a fence would.
    pub fn flush_ranges(&self, ranges: &[(u64, u64)]) -> PmResult<()> {
        for &(offset, len) in ranges {
            self.check("flush", offset, len)?;
        }
        self.write_back_ranges_checked(ranges);
        Ok(())
    }

    /// Store fence: orders and completes earlier write-backs.
    ///
    /// Counts the fence and calls the fence hook (if any) with the fence number (see
    /// [`PmPool::set_fence_hook`] for when).
    pub fn fence(&self) {
        match &self.backend {
            Backend::File { .. } => {
                persist::fence();
                let n = self.fences.0.fetch_add(1, Ordering::Relaxed) + 1;
                self.call_fence_hook(n);
            }
            Backend::Crash(sim) => {
                let n = self.fences.0.fetch_add(1, Ordering::Relaxed) + 1;
                self.call_fence_hook(n);
                sim.fence();
            }
        }
    }

    fn call_fence_hook(&self, n: u64) {
        if !self.has_hook.load(Ordering::Acquire) {
            return;
        }
        let hook = self.hook.read().clone();
        if let Some(hook) = hook {
            hook(n);
        }
    }

    fn msync_checked(&self, offset: u64, len: u64) -> PmResult<()> {
        self.bytes_msynced.add(len);
        match &self.backend {
            Backend::File { map, .. } => map
                .msync(offset, len)
                .map_err(io_err("msync", &self.location)),
            Backend::Crash(_) => Ok(()),
        }
    }

    /// `flush` + `fence` (+ msync of the pages in `Msync` mode).
    pub fn persist(&self, offset: u64, len: u64) -> PmResult<()> {
        self.check("persist", offset, len)?;
        self.flush_checked(offset, len);
        self.fence();
        if self.msync_on_persist() {
            self.msync_checked(offset, len)?;
        }
        Ok(())
    }

    /// Forces `msync` of the range whatever the mode (`WriteOptions::sync`).
    ///
    /// On a crash-simulation pool this is a persist (flush + fence) of the range.
    pub fn msync(&self, offset: u64, len: u64) -> PmResult<()> {
        self.check("msync", offset, len)?;
        match &self.backend {
            Backend::File { .. } => self.msync_checked(offset, len),
            Backend::Crash(_) => {
                self.flush_checked(offset, len);
                self.fence();
                Ok(())
            }
        }
    }

    /// Store + write-back + fence (+ msync) of an 8-byte word at a checked, aligned offset.
    fn store_u64_persist_checked(&self, offset: u64, value: u64) -> PmResult<()> {
        self.store_u64_checked(offset, value);
        self.flush_checked(offset, 8);
        self.fence();
        if self.msync_on_persist() {
            self.msync_checked(offset, 8)?;
        }
        Ok(())
    }

    /// Atomic 8-byte store at an 8-aligned offset, then persist.
    ///
    /// The store is a Release store: a thread that reads `value` with [`PmPool::load_u64`]
    /// (Acquire) also sees every store this thread made before.
    pub fn store_u64_persist(&self, offset: u64, value: u64) -> PmResult<()> {
        self.check_u64("store_u64_persist", offset)?;
        self.check_writable("store_u64_persist", offset, 8)?;
        self.store_u64_persist_checked(offset, value)
    }

    /// Atomic 8-byte Release store at an 8-aligned offset, NOT persisted: the caller writes the
    /// line back ([`PmPool::flush`]) and fences, so one fence can cover the word and other lines.
    ///
    /// Until that fence the word may or may not be durable, independently of any other line.
    pub fn store_u64(&self, offset: u64, value: u64) -> PmResult<()> {
        self.check_u64("store_u64", offset)?;
        self.check_writable("store_u64", offset, 8)?;
        self.store_u64_checked(offset, value);
        Ok(())
    }

    /// Atomic Release store of an 8-byte word at a checked, aligned offset.
    fn store_u64_checked(&self, offset: u64, value: u64) {
        match &self.backend {
            Backend::File { .. } => self.atomic_at(offset).store(value, Ordering::Release),
            Backend::Crash(sim) => sim.store_u64(offset, value),
        }
    }

    /// Whether a persist in this pool's mode must also `msync` the touched pages (`msync` mode,
    /// or no cache-line write-back instruction): callers that combine [`PmPool::flush`] and
    /// [`PmPool::fence`] themselves must then call [`PmPool::msync`] on what they persisted.
    pub fn msync_on_persist(&self) -> bool {
        matches!(self.backend, Backend::File { .. })
            && (self.mode == DurabilityMode::Msync || persist::flush_insn() == FlushInsn::Msync)
    }

    /// 8-byte load at an 8-aligned offset (atomic, Acquire; counted as a read access).
    pub fn load_u64(&self, offset: u64) -> PmResult<u64> {
        self.check_u64("load_u64", offset)?;
        let v = self.atomic_at(offset).load(Ordering::Acquire);
        self.add_read(8);
        Ok(v)
    }

    /// Raw root slot `i` of the header (atomic, Acquire). A slot `>= ROOT_SLOTS` reads as 0.
    ///
    /// Raw slots are not checksummed; the engine's structures are found through the checksummed
    /// named roots of the root directory instead ([`PmPool::named_root`]).
    pub fn root(&self, slot: usize) -> u64 {
        if slot >= ROOT_SLOTS {
            return 0;
        }
        self.atomic_at(ROOTS_OFFSET + 8 * slot as u64)
            .load(Ordering::Acquire)
    }

    /// Sets root slot `i` (atomic, persisted).
    pub fn set_root(&self, slot: usize, value: u64) -> PmResult<()> {
        if slot >= ROOT_SLOTS {
            return Err(PmError::InvalidArgument(format!(
                "set_root: slot {slot} out of range (0..{ROOT_SLOTS})"
            )));
        }
        self.store_u64_persist_checked(ROOTS_OFFSET + 8 * slot as u64, value)
    }

    /// Allocates a chunk; returns its offset.
    ///
    /// Chunk 0 (the header) is never handed out; `NoSpace` when every chunk is in use.
    ///
    /// The first time a chunk is handed out, its range of the pool file is allocated in the
    /// file system (`fallocate`): the pool file is sparse, and a store into a hole of a full
    /// file system would kill the process with `SIGBUS`; backing the chunk first turns that into
    /// `NoSpace` here. File systems without `fallocate` keep the sparse behaviour.
    pub fn allocate_chunk(&self) -> PmResult<u64> {
        self.allocate_chunk_tracked().map(|a| a.offset)
    }

    /// Sets what [`PmPool::allocate_chunk_outside_reserve`] leaves free: `held_back()` chunks,
    /// asked at each call (the logs' reserve changes as they grow and shrink).
    pub fn set_held_back(&self, held_back: Option<HeldBack>) {
        *self.held_back.write() = held_back;
    }

    /// [`PmPool::allocate_chunk`] for a structure that must leave the held-back chunks to the
    /// logs and manifests (a tree's leaves): `NoSpace` once only those are free, so a full
    /// pool stops the structure before the log that would record its loss.
    pub fn allocate_chunk_outside_reserve(&self) -> PmResult<u64> {
        let keep = self.held_back.read().as_ref().map_or(0, |f| f());
        let free = self.free_chunks();
        if free <= keep {
            return Err(PmError::NoSpace(format!(
                "{}: no PM chunk outside the reserve ({free} of {} chunks free, {keep} held \
                 back for logs and manifests)",
                self.location,
                self.chunk_count() - 1
            )));
        }
        self.allocate_chunk()
    }

    /// Allocates a chunk whose bytes from `header_bytes` to its end are zero (durable at the
    /// next fence); its first `header_bytes` are left to the caller (not written here, so no
    /// non-temporal store overlaps the caller's own stores to them).
    ///
    /// A chunk handed out for the first time since this process created the pool is known to
    /// be zero (a never-written part of a new file) and is not written; any other chunk is
    /// zeroed with non-temporal stores. `header_bytes` larger than a chunk is `InvalidArgument`.
    ///
    /// "Known to be zero" rests on the pool's contract that, outside the header chunk, bytes are
    /// written only inside allocated chunks (chunks listed live in
    /// [`PmPool::rebuild_allocator`] count as handed out).
    pub fn allocate_zeroed_chunk(&self, header_bytes: u64) -> PmResult<u64> {
        if header_bytes > self.chunk_size {
            return Err(PmError::InvalidArgument(format!(
                "allocate_zeroed_chunk: {header_bytes} header bytes exceed the chunk size {}",
                self.chunk_size
            )));
        }
        let a = self.allocate_chunk_tracked()?;
        if !(self.created && a.first_use) {
            self.zero_nt_checked(a.offset + header_bytes, self.chunk_size - header_bytes);
        }
        Ok(a.offset)
    }

    fn allocate_chunk_tracked(&self) -> PmResult<crate::alloc::Allocated> {
        let a = self.alloc.allocate_tracked()?;
        if a.first_use {
            if let Err(e) = self.back_range(a.offset, self.chunk_size) {
                // Still unbacked: its next allocation must try to back it again.
                let r = self.alloc.free_unused_first(a);
                debug_assert!(r.is_ok(), "the chunk was just allocated");
                return Err(e);
            }
        }
        Ok(a)
    }

    /// Zeroes a checked range with non-temporal stores (durable at the next fence).
    fn zero_nt_checked(&self, offset: u64, len: u64) {
        static ZEROS: [u8; 1 << 16] = [0; 1 << 16];
        let end = offset + len;
        let mut off = offset;
        while off < end {
            let n = (end - off).min(ZEROS.len() as u64);
            let r = self.write_nt(off, &ZEROS[..n as usize]);
            debug_assert!(r.is_ok(), "a chunk is inside the pool");
            off += n;
        }
    }

    /// Frees a chunk (and, with [`PmPool::set_release_freed`], gives its blocks back).
    ///
    /// A bad offset or a double free is a caller bug: it trips a `debug_assert` and is
    /// otherwise ignored (the free list is never corrupted). See [`PmPool::try_free_chunk`].
    pub fn free_chunk(&self, offset: u64) {
        let r = self.try_free_chunk(offset);
        debug_assert!(r.is_ok(), "{}", r.unwrap_err());
    }

    /// Frees a chunk, reporting a bad offset (unaligned, out of range, the header chunk) or a
    /// double free as `InvalidArgument` (and leaving the allocator unchanged).
    pub fn try_free_chunk(&self, offset: u64) -> PmResult<()> {
        if self.release_freed.load(Ordering::Relaxed) {
            self.alloc
                .free_with(offset, |off| self.release_range(off, self.chunk_size))
        } else {
            self.alloc.free(offset)
        }
    }

    /// Marks exactly `live` as allocated and every other chunk free (after recovery).
    ///
    /// The allocator is volatile: after [`PmPool::open`] every chunk is free until this is
    /// called, ONCE, with every chunk the pool's recovered, published structures reference: the
    /// union over every owner of chunks in the pool (the engine's open protocol gathers it), so
    /// that no structure's chunks are handed out again. A chunk that was
    /// allocated but not yet published when the process stopped is therefore free again:
    /// nothing leaks across a crash. Offsets that are not chunk-aligned, out of range, the
    /// header chunk (0) or listed twice are `InvalidArgument` (allocator unchanged).
    ///
    /// With [`PmPool::set_release_freed`] set before, the free chunks' blocks are given back
    /// here too (a pool grown by an earlier process shrinks to its live chunks).
    pub fn rebuild_allocator(&self, live: &[u64]) -> PmResult<()> {
        self.alloc.rebuild(live)?;
        if self.release_freed.load(Ordering::Relaxed) {
            for (offset, len) in self.alloc.free_runs() {
                self.release_range(offset, len);
            }
        }
        Ok(())
    }

    /// Chunks that can be allocated now.
    pub fn free_chunks(&self) -> u64 {
        self.alloc.free_chunks()
    }

    /// Chunks of the pool, the header chunk included (`size / chunk_size`).
    pub fn chunk_count(&self) -> u64 {
        self.alloc.chunk_count()
    }

    /// Counters.
    pub fn stats(&self) -> PmStats {
        PmStats {
            lines_written_back: self.lines_written_back.load(),
            fences: self.fences.0.load(Ordering::Relaxed),
            bytes_read: self.bytes_read.load(),
            bytes_allocated: self.alloc.live_chunks() * self.chunk_size,
            bytes_msynced: self.bytes_msynced.load(),
            bytes_released: self.bytes_released.load(),
        }
    }
}
