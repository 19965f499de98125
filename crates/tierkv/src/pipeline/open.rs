//! What a stage is given when a database opens (to attach the structures it keeps in the PM
//! pool and rebuild their DRAM state) and when it is checked, and what a check reports.

use crate::fs::FileSystem;
use crate::options::Options;
use crate::pm_structures::{PmKinds, PmTier};
use crate::runs::TableCache;
use crate::sst::BlockCache;
use crate::stats::Counters;
use crate::version::VersionSet;
use std::path::Path;
use std::sync::Arc;

/// A structure a stage keeps in the PM pool besides files, opened with the pool
/// (`crate::pm_structures`) and attached to the stage at open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PoolStructure {
    /// SLM-DB's global index (a persistent B+ tree), its inner nodes in PM or in DRAM.
    GlobalIndex {
        /// The inner nodes live in PM (copy on write) rather than in DRAM.
        inner_in_pm: bool,
    },
    /// LAB-DB's two L0 trees.
    LabTrees,
    /// ListDB's heap: its shared log and its lists (the front end's, not a stage's).
    Lists,
}

impl PoolStructure {
    /// What the pool's open opens for a design whose stages and front end keep `structures`,
    /// each writable unless `writable` is false (an inspection: nothing is written).
    pub(crate) fn kinds(structures: &[PoolStructure], writable: bool) -> PmKinds {
        let mut kinds = PmKinds::default();
        for s in structures {
            match *s {
                PoolStructure::GlobalIndex { inner_in_pm } => {
                    kinds.index = Some(writable);
                    kinds.index_inner_in_pm = inner_in_pm;
                }
                PoolStructure::LabTrees => kinds.lab = Some(writable),
                PoolStructure::Lists => kinds.lists = Some(writable),
            }
        }
        kinds
    }
}

/// What a stage is given at open, after the manifest is read and before anything
/// unreferenced is swept: the structures it keeps in the pool are attached here, and what they
/// name that the manifest lacks is adopted (a manifest record through `versions`).
pub(crate) struct AttachContext<'a> {
    pub dir: &'a Path,
    pub options: &'a Options,
    /// The SSD tier's file system.
    pub fs: &'a Arc<dyn FileSystem>,
    pub pm: Option<&'a PmTier>,
    pub versions: &'a mut VersionSet,
    pub counters: &'a Arc<Counters>,
    /// The database's block cache: a stage's own value reads share its budget.
    pub block_cache: &'a Arc<BlockCache>,
}

/// What a stage is given by `tierkv check` (reads only: the pool is mapped private, the file
/// systems are overlays).
pub(crate) struct CheckContext<'a> {
    pub dir: &'a Path,
    pub options: &'a Options,
    pub pm: Option<&'a PmTier>,
    pub versions: &'a VersionSet,
    /// Opens the version's runs (their blocks are not cached).
    pub tables: &'a TableCache,
}

/// What [`crate::Db::check`] verified.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// Tables whose every block and checksum was read and verified (and LAB-DB's L0 trees,
    /// every leaf and the value record of every entry).
    pub tables_checked: usize,
    /// Entries in those tables.
    pub entries_checked: u64,
    /// Entries of Skip-Array Tree floors whose next pointer was checked against the floors
    /// below, and of rows whose cross-row hint was checked against the row below.
    pub pointers_checked: u64,
    /// Live WAL files read.
    pub wal_files_checked: usize,
    /// WAL records decoded.
    pub wal_records_checked: u64,
    /// Bytes of a torn WAL tail (an unacknowledged write, or unsynced writes a power failure
    /// cut, that recovery will drop).
    pub wal_torn_tail_bytes: u64,
    /// Keys of the global index (`slmdb`) whose place was read back: the exact version, in
    /// the data block the index names.
    pub index_keys_checked: u64,
    /// Tables the global index names that the manifest does not (a crash between a flush's or
    /// compaction's index updates and its manifest record): the next open adopts them.
    pub index_tables_to_adopt: usize,
    /// WALs that recovery will ignore (from the point where records are missing: the WAL
    /// with the gap in sequence numbers, and every WAL after a cut one), holding only writes
    /// acknowledged without sync.
    pub wal_files_ignored: usize,
    /// The PM pool's chunks (the header's excluded) and how many of them are free, after the
    /// structures were opened; 0 and 0 without a pool.
    pub pm_chunks: u64,
    /// See [`CheckReport::pm_chunks`].
    pub pm_free_chunks: u64,
    /// Why the next writable open cannot recover with write access and will open read-only
    /// (a full pool or disk: the recovery was tried, in memory, and ran out of space); `None`
    /// when it can.
    pub next_open_read_only: Option<String>,
}
