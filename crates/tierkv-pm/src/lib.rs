//! TierKV's persistent-memory (PM) layer.
//!
//! **Purpose.** A [`PmPool`] is one file mapped into the address space (or, for tests, a
//! crash-simulation buffer with a shadow durable image). Everything in it is addressed by byte
//! offsets from the pool base, never by raw pointers, so a pool reopens at any address. The crate
//! provides the persist primitives (`clwb`/`clflushopt`/`clflush` + `sfence`, non-temporal
//! copies, 8-byte atomic publishing stores), the three durability modes of the design
//! (`dax`, `msync`, `emulated`), emulated PM latency, a coarse chunk allocator, the root
//! directory (named roots and the identity of the database a pool belongs to, failure-atomic
//! in chunk 0: [`PmPool::root_table`], [`PmPool::update_root_table`]) and the
//! crash-simulation backend used by the engine's crash tests.
//!
//! Because it is the workspace's only crate allowed `unsafe`, it also holds the engine's DRAM
//! primitives, kept apart from the PM modules in [`dram`]: [`dram::AtomicWords`], zeroed
//! anonymous memory viewed as `&[AtomicU64]` (the arena of the memtable skiplist), and
//! [`dram::prefetch`]. Nothing in `dram` is persistent; it shares only the unsafe audit.
//!
//! **Thread safety.** `PmPool` is `Send + Sync`; every method takes `&self`. The pool never hands
//! out references into PM: data is copied in ([`PmPool::write`]) and out ([`PmPool::read`]).
//! Callers coordinate who writes which byte range (as with a shared file); 8-byte publishing
//! stores ([`PmPool::store_u64_persist`], Release) and loads ([`PmPool::load_u64`], Acquire) are
//! atomic and are how a writer hands a range over to concurrent readers.
//!
//! **Durability.** Nothing is durable before the persist that covers it returns:
//! [`PmPool::persist`] (or [`PmPool::flush`] followed by [`PmPool::fence`], or
//! [`PmPool::write_nt`] followed by a fence). Stores larger than 8 aligned bytes are never atomic
//! with respect to a crash. The pool header (magic, version, geometry, checksum) and the empty
//! root directory are durable when [`PmPool::create`] returns; a root slot is durable when
//! [`PmPool::set_root`] returns, a root-directory update when [`PmPool::update_root_table`]
//! returns (and it is failure-atomic). The chunk allocator is volatile by design (see
//! [`PmPool::rebuild_allocator`]).
//!
//! This is the only crate of the workspace allowed to contain `unsafe` code; every unsafe site is
//! listed with its justification in `UNSAFE.md` next to `Cargo.toml`.

#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

mod alloc;
mod backing;
mod counter;
mod crash;
pub mod dram;
mod header;
mod latency;
mod mapping;
mod offline;
mod options;
mod persist;
mod pool;
mod roots;

#[cfg(test)]
mod tests;

pub use backing::RELEASE_RESERVE_BYTES;
pub use header::{FORMAT_VERSION, HEADER_LEN, POOL_MAGIC, ROOTS_OFFSET, ROOT_DIRECTORY_OFFSET};
pub use options::{
    CrashImage, DurabilityMode, LatencyModel, PmError, PmResult, PmStats, PoolOptions,
};
pub use persist::{flush_instruction, CACHE_LINE};
pub use pool::{HeldBack, PmPool};
pub use roots::{
    check_root_name, RootTable, ROOT_CAPACITY, ROOT_COPY_BYTES, ROOT_COPY_OFFSETS, ROOT_NAME_MAX,
    ROOT_SELECTOR_OFFSET,
};

/// Number of 8-byte root slots in the pool header.
pub const ROOT_SLOTS: usize = 16;
