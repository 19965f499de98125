//! How the pool's chunks are shared: the reserves that keep a log, the manifests and the
//! recovery WAL writable when tables have filled the rest.

use super::*;

/// How chunks are shared between logs and tables (see the module docs). Both counts are in
/// chunks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PmSpacePolicy {
    /// Chunks kept free in steady state: only a log created with
    /// [`PmFs::create_log_using_spare`] may take them.
    pub spare_chunks: u64,
    /// Chunks the logs together may hold; tables leave the part of it the logs do not hold
    /// free.
    pub log_quota_chunks: u64,
    /// The part of `spare_chunks` a manifest (`MANIFEST-NNNNNN`, a record log whose chunks
    /// are not log space) may take: with the manifest in the pool, tables and logs keep room
    /// for it to grow and for the next one an open or a rollover starts, so a commit never
    /// finds a pool the tables filled.
    pub manifest_chunks: u64,
    /// Chunks the pool's structures that are not files (a tree's leaves) leave free besides
    /// what a log must leave: the next log's worth, so that a tree filling the pool never
    /// takes the chunk the log that records its writes needs next.
    pub structure_keep_chunks: u64,
}

/// What a chunk is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ChunkClass {
    Table,
    Log,
    LogUsingSpare,
    /// A persistent memtable: log space (it is the design's log), chunks not zeroed (nothing
    /// reads it as a record log).
    Buffer,
    /// A manifest: zeroed as a log's (it is read as a record log), not log space; may take the
    /// spare chunks set aside for manifests.
    Manifest,
}

/// True for a manifest's file name: its chunks are [`ChunkClass::Manifest`], also when the
/// file system is opened again (the entry's flags say "log"; the name says which).
pub(crate) fn is_manifest_name(name: &str) -> bool {
    matches!(
        crate::filename::parse_file_name(name),
        Some((crate::filename::FileKind::Manifest, _))
    )
}

impl ChunkClass {
    /// Counted in the logs' share of the pool ([`PmSpacePolicy::log_quota_chunks`]).
    pub(super) fn is_log_space(self) -> bool {
        matches!(
            self,
            ChunkClass::Log | ChunkClass::LogUsingSpare | ChunkClass::Buffer
        )
    }
}

/// A snapshot of the pool's space as `PmFs` accounts it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PmSpace {
    /// Chunks free in the pool.
    pub free_chunks: u64,
    /// Chunks held by log files.
    pub log_chunks: u64,
    /// Chunks held by manifests.
    pub manifest_chunks: u64,
    /// The policy in force.
    pub policy: PmSpacePolicy,
}

impl PmSpace {
    /// Chunks a log may still take (all free chunks but the spare).
    pub fn chunks_for_logs(&self) -> u64 {
        self.free_chunks
            .saturating_sub(log_reserve(&self.policy, self.manifest_chunks))
    }
}

pub(crate) struct SpaceState {
    pub(super) policy: PmSpacePolicy,
    /// Chunks held by log files (live or removed but still read).
    pub(super) log_chunks: Arc<AtomicU64>,
    /// Chunks held by manifests (live or removed but still read).
    pub(super) manifest_chunks: Arc<AtomicU64>,
}

/// Chunks a manifest must leave free: the spare that is not the manifests' (recovery's WAL's).
pub(crate) fn manifest_keep(policy: &PmSpacePolicy) -> u64 {
    policy.spare_chunks.saturating_sub(policy.manifest_chunks)
}

/// Chunks a log must leave free: the WAL's spare plus the part of the manifests' chunks they
/// do not hold yet.
pub(crate) fn log_reserve(policy: &PmSpacePolicy, manifest_held: u64) -> u64 {
    manifest_keep(policy) + policy.manifest_chunks.saturating_sub(manifest_held)
}

/// Chunks a table (or the directory) must leave free: what a log must, plus what the logs may
/// yet grow into.
pub(crate) fn table_reserve(space: &SpaceState) -> u64 {
    let logs = space.log_chunks.load(Ordering::Acquire);
    let manifests = space.manifest_chunks.load(Ordering::Acquire);
    log_reserve(&space.policy, manifests) + space.policy.log_quota_chunks.saturating_sub(logs)
}

/// Chunks of a pool that hold no data: the header chunk and the `PmFs` directory chunk.
pub(crate) const POOL_OVERHEAD_CHUNKS: u64 = 2;
/// Chunks kept free in steady state for recovery's new WAL.
pub(crate) const SPARE_CHUNKS: u64 = 1;
/// Chunks kept free for the manifest when it is in the pool: the live one's growth and the
/// next one an open or a rollover writes before the old one is deleted.
pub(crate) const MANIFEST_CHUNKS: u64 = 2;

/// The smallest pool, in chunks, that a design with its WAL on PM can run in: the header and
/// directory chunks, one chunk for each WAL of `max_write_buffer_number` memtables, and the
/// spare (and the manifest's chunks with `manifest_on_pm`).
pub(crate) fn min_pool_chunks(max_write_buffer_number: usize, manifest_on_pm: bool) -> u64 {
    POOL_OVERHEAD_CHUNKS
        + SPARE_CHUNKS
        + max_write_buffer_number as u64
        + if manifest_on_pm { MANIFEST_CHUNKS } else { 0 }
}
