//! TierKV's persistent-memory layer (API skeleton; the implementation is being written).
//!
//! The only crate of the workspace allowed to contain `unsafe` code.

use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;

/// Errors of the PM layer.
#[derive(Debug, thiserror::Error)]
pub enum PmError {
    /// A file operation on the pool file failed.
    #[error("PM I/O error during {op} on {path}: {source}")]
    Io {
        /// Operation.
        op: &'static str,
        /// Pool file.
        path: String,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// The pool header or a structure failed its checks.
    #[error("PM corruption in {location}: {reason}")]
    Corruption {
        /// Pool file and offset.
        location: String,
        /// What failed.
        reason: String,
    },
    /// An access outside the pool, or a bad option.
    #[error("PM invalid argument: {0}")]
    InvalidArgument(String),
    /// No free chunk is left.
    #[error("PM pool is full ({0})")]
    NoSpace(String),
}

/// PM result type.
pub type PmResult<T> = Result<T, PmError>;

/// How persists are made durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DurabilityMode {
    /// DAX file system, `MAP_SYNC` mapping: flush + fence is power-fail durable.
    Dax,
    /// Regular file: persist also `msync`s the touched pages.
    Msync,
    /// Flush + fence only: survives a process crash, not a power failure.
    Emulated,
}

/// Emulated PM latency added per cache line written back and per read access.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LatencyModel {
    /// Nanoseconds added per read access.
    pub read_ns: u32,
    /// Nanoseconds added per cache line written back.
    pub write_ns: u32,
}

/// Options of a pool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PoolOptions {
    /// Pool size in bytes (a multiple of `chunk_size`).
    pub size: u64,
    /// Requested durability mode.
    pub mode: DurabilityMode,
    /// Emulated latency.
    pub latency: LatencyModel,
    /// Allocation unit.
    pub chunk_size: u64,
}

/// Counters of a pool.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PmStats {
    /// Cache lines written back.
    pub lines_written_back: u64,
    /// Fences.
    pub fences: u64,
    /// Bytes read through the read accessors.
    pub bytes_read: u64,
    /// Bytes in allocated chunks.
    pub bytes_allocated: u64,
}

/// Which crash image of a crash-simulation pool to take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrashImage {
    /// Only cache lines that were written back and then fenced.
    Strict,
    /// The strict image plus every pending (stored or written back, not fenced) line.
    AllPending,
    /// The strict image plus a random subset of pending 8-byte words (seeded).
    Torn(u64),
}

/// Number of 8-byte root slots in the pool header.
pub const ROOT_SLOTS: usize = 16;

/// A persistent-memory pool: one file (or, for tests, a crash-simulation buffer) addressed by
/// offsets from its base. Thread-safe; callers coordinate who writes which range.
pub struct PmPool {
    _private: (),
}

impl PmPool {
    /// Creates (or overwrites) a pool file of `options.size` bytes and maps it.
    pub fn create(_path: &Path, _options: &PoolOptions) -> PmResult<Arc<PmPool>> {
        todo!()
    }
    /// Opens an existing pool file, verifying its header.
    pub fn open(_path: &Path, _options: &PoolOptions) -> PmResult<Arc<PmPool>> {
        todo!()
    }
    /// A DRAM-backed pool with a shadow durable image (tests). With `check_stores`, every fence
    /// verifies that no line differs from the shadow image without having been written through
    /// the API.
    pub fn create_crash_sim(_options: &PoolOptions, _check_stores: bool) -> PmResult<Arc<PmPool>> {
        todo!()
    }
    /// Opens a crash image as a new crash-simulation pool.
    pub fn open_crash_image(_image: Vec<u8>, _options: &PoolOptions) -> PmResult<Arc<PmPool>> {
        todo!()
    }
    /// A crash image of a crash-simulation pool as of now (`None` for file pools).
    pub fn crash_image(&self, _kind: CrashImage) -> Option<Vec<u8>> {
        todo!()
    }
    /// Number of fences so far.
    pub fn fence_count(&self) -> u64 {
        todo!()
    }
    /// Calls `hook(fence_number)` right after every fence (crash-simulation tests).
    pub fn set_fence_hook(&self, _hook: Option<Box<dyn Fn(u64) + Send + Sync>>) {
        todo!()
    }
    /// The mode in force.
    pub fn mode(&self) -> DurabilityMode {
        todo!()
    }
    /// Pool size in bytes.
    pub fn size(&self) -> u64 {
        todo!()
    }
    /// Allocation unit.
    pub fn chunk_size(&self) -> u64 {
        todo!()
    }
    /// Copies `buf.len()` bytes at `offset` into `buf` (counted, with emulated read latency).
    pub fn read(&self, _offset: u64, _buf: &mut [u8]) -> PmResult<()> {
        todo!()
    }
    /// Stores `data` at `offset` (not durable until persisted).
    pub fn write(&self, _offset: u64, _data: &[u8]) -> PmResult<()> {
        todo!()
    }
    /// Non-temporal copy of `data` to `offset`: durable after the next fence.
    pub fn write_nt(&self, _offset: u64, _data: &[u8]) -> PmResult<()> {
        todo!()
    }
    /// Writes back every cache line of the range (no fence).
    pub fn flush(&self, _offset: u64, _len: u64) -> PmResult<()> {
        todo!()
    }
    /// Store fence: orders and completes earlier write-backs.
    pub fn fence(&self) {
        todo!()
    }
    /// `flush` + `fence` (+ msync of the pages in `Msync` mode).
    pub fn persist(&self, _offset: u64, _len: u64) -> PmResult<()> {
        todo!()
    }
    /// Forces `msync` of the range whatever the mode (`WriteOptions::sync`).
    pub fn msync(&self, _offset: u64, _len: u64) -> PmResult<()> {
        todo!()
    }
    /// Atomic 8-byte store at an 8-aligned offset, then persist.
    pub fn store_u64_persist(&self, _offset: u64, _value: u64) -> PmResult<()> {
        todo!()
    }
    /// 8-byte load at an 8-aligned offset.
    pub fn load_u64(&self, _offset: u64) -> PmResult<u64> {
        todo!()
    }
    /// Root slot `i` of the header.
    pub fn root(&self, _slot: usize) -> u64 {
        todo!()
    }
    /// Sets root slot `i` (atomic, persisted).
    pub fn set_root(&self, _slot: usize, _value: u64) -> PmResult<()> {
        todo!()
    }
    /// Allocates a chunk; returns its offset.
    pub fn allocate_chunk(&self) -> PmResult<u64> {
        todo!()
    }
    /// Frees a chunk.
    pub fn free_chunk(&self, _offset: u64) {
        todo!()
    }
    /// Marks exactly `live` as allocated and every other chunk free (after recovery).
    pub fn rebuild_allocator(&self, _live: &[u64]) -> PmResult<()> {
        todo!()
    }
    /// Counters.
    pub fn stats(&self) -> PmStats {
        todo!()
    }
}
