//! The front end: the part of a design that takes writes, makes them durable and readable, and
//! hands over write buffers that are ready to flush into the first stage.
//!
//! The trait is shaped so that every front end of the papers fits; `docs/ARCHITECTURE.md`
//! describes them: LevelDB's WAL and memtable, SLM-DB's persistent skiplist memtable without a
//! WAL, FluidKV's thread-exclusive PM logs under a concurrent DRAM index, LAB-DB's PM WAL
//! buffer in front of an SSD value log, and ListDB's shared log whose entries become skiplist
//! nodes.
//!
//! Locking: the database calls [`FrontEnd::view`], [`FrontEnd::next_flush`],
//! [`FrontEnd::retire_flushed`] and [`FrontEnd::flushed`] with its state mutex held (so a flush
//! and the super version that readers see change together); a front end takes its own locks
//! only below that mutex, and takes the state mutex itself (through `DbInner`) only when it
//! holds none of its internal leaf locks.

use crate::db::{DbInner, Present};
use crate::iterator::InternalIterator;
use crate::memtable::LookupResult;
use crate::options::WriteOptions;
use crate::tier::Tier;
use crate::version::{FileKind, VersionEdit, VersionSet};
use crate::{Result, WriteBatch};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The front ends the engine has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FrontEndKind {
    /// LevelDB's: a write-ahead log (SSD or PM) and a DRAM memtable, writers grouped by a
    /// leader into one log append (`front_ends/wal_memtable/mod.rs`).
    WalMemtable,
    /// SLM-DB's: the same write path with a persistent skiplist memtable in PM and no WAL
    /// (`front_ends/wal_memtable/mod.rs`, `pmtable`).
    PmMemtable,
    /// LAB-DB's: the same write path with LAB-DB's log in place of the WAL (a PM WAL buffer
    /// draining into a key array and a value array on SSD, `front_ends/wal_memtable/lab_log.rs`) unless
    /// `labdb.split_log` is off or `pm.wal_on_pm` is on (then the engine's WAL, the paper's
    /// variants).
    LabLog,
    /// ListDB's: one shared PM log whose entries become the nodes of persistent skiplists
    /// (L0 lists, then one L1 list), under a DRAM memtable (`front_ends/list_front.rs`,
    /// `plist`).
    Lists,
}

impl FrontEndKind {
    /// The structure the front end keeps in the PM pool besides files (opened with the pool),
    /// if any.
    pub(crate) fn pool_structure(self) -> Option<super::PoolStructure> {
        (self == FrontEndKind::Lists).then_some(super::PoolStructure::Lists)
    }
}

/// What readers see of the write buffers at one instant (part of a super version).
pub(crate) trait FrontView: Send + Sync {
    /// The newest version of `key` visible at `snapshot` in the write buffers (an error for a
    /// PM-resident buffer found damaged).
    fn get(&self, key: &[u8], snapshot: u64) -> Result<LookupResult>;
    /// Iterators over the write buffers, newest first.
    fn iterators(&self, out: &mut Vec<Box<dyn InternalIterator>>);
    /// DRAM the buffers hold: (bytes of their entries, resident bytes of reused memory not yet
    /// used again).
    fn dram_bytes(&self) -> (u64, u64);
}

/// A write buffer ready to be written into the first stage.
pub(crate) trait FlushSource: Send + Sync {
    /// Its entries in internal-key order.
    fn iter(&self) -> Box<dyn InternalIterator>;
    /// True if it holds nothing.
    fn is_empty(&self) -> bool;
    /// What the front end's log recorded of the buffer's values for the first stage, if
    /// anything (LAB-DB's log: each value's address in the value array it wrote, which LAB-DB's
    /// stage inserts instead of writing the values again); the stage that understands it
    /// downcasts it.
    fn log_payload(&self) -> Option<Arc<dyn std::any::Any + Send + Sync>> {
        None
    }

    /// Makes the buffer durable in the front end's own structures instead of a run (ListDB:
    /// its log entries are linked into an L0 list); `true` if it did, so the flush writes no
    /// run. Called by the flush thread without the state mutex, given the engine's narrow
    /// host (the oldest snapshot, the counters).
    fn absorb(&self, host: &dyn super::StageHost) -> Result<bool> {
        let _ = host;
        Ok(false)
    }
}

/// The front end of a design.
pub(crate) trait FrontEnd: Send + Sync {
    /// Applies a validated, non-empty `batch` atomically: durable as `options` asks and visible
    /// to readers when this returns. Applies the stages' write pressure (slowdowns, stops).
    fn write(&self, db: &DbInner, options: &WriteOptions, batch: WriteBatch) -> Result<()>;

    /// What readers see now. REQUIRES: the database's state mutex held.
    fn view(&self) -> Arc<dyn FrontView>;

    /// Makes the active buffer immutable if it holds anything, so that it gets flushed.
    fn rotate(&self, db: &DbInner) -> Result<()>;

    /// The oldest immutable buffer, if any. REQUIRES: the state mutex held.
    fn next_flush(&self) -> Option<Arc<dyn FlushSource>>;

    /// Adds to `edit` what retires the oldest immutable buffer once its flush is installed (the
    /// WAL front end: the log number of the next buffer). REQUIRES: the state mutex held.
    fn retire_flushed(&self, edit: &mut VersionEdit);

    /// Forgets the oldest immutable buffer: its flush is installed. Returns the files that
    /// became obsolete with it (the WAL front end: that buffer's log, on the WAL's tier), so
    /// that a flush deletes them without listing the directories. REQUIRES: the state mutex
    /// held.
    fn flushed(&self, dir: &Path) -> Vec<(Tier, PathBuf)>;

    /// Immutable buffers waiting for their flush.
    fn pending_flushes(&self) -> usize;

    /// Checks at open that the files the front end's durable state needs are present
    /// (`Corruption` otherwise; nothing is changed).
    fn verify(&self, dir: &Path, versions: &VersionSet, present: &Present) -> Result<()>;

    /// Verifies, for `tierkv check`, what the front end keeps besides its log files (the check
    /// decodes the live logs of every front end afterwards, `front_ends/log_check.rs`); adds
    /// what it verified to `report`. Default: nothing more.
    fn check(&self, cx: &super::CheckContext<'_>, report: &mut super::CheckReport) -> Result<()> {
        let _ = (cx, report);
        Ok(())
    }

    /// Whether a front-end file found in the directory is obsolete under `versions`; `None` for
    /// a kind the front end does not own.
    fn is_obsolete(&self, kind: FileKind, number: u64, versions: &VersionSet) -> Option<bool>;

    /// Background durability work the flush thread does before each flush (the WAL front end:
    /// syncing closed WALs). An error poisons the database.
    fn sync_closed_logs(&self, db: &DbInner) -> Result<()> {
        let _ = db;
        Ok(())
    }

    /// DRAM kept for reuse by the next write buffers (flushed memtables' memory).
    fn kept_bytes(&self) -> u64;

    /// True if writes that skipped the log (`WriteOptions::disable_wal`) may be in the write
    /// buffers: closing the database flushes them first, so that a clean close loses none.
    fn holds_unlogged_writes(&self) -> bool {
        false
    }

    /// True while the front end's own background work (ListDB's zipper) runs or is due:
    /// `wait_for_background_work` waits for it too.
    fn background_busy(&self) -> bool {
        false
    }

    /// Adds the front end's own figures to `stats`, whose stages' groups are filled (a front
    /// end that keeps the data itself, ListDB's lists, shows them in place of its empty
    /// stage's groups). Default: nothing.
    fn add_stats(&self, stats: &mut crate::stats::DbStats) {
        let _ = stats;
    }

    /// Memory regions kept for reuse (tests of the reuse).
    #[cfg(test)]
    fn kept_regions(&self) -> usize {
        0
    }

    /// Recovers the front end at open from what it left (its logs in `present`): the data is
    /// made durable in the first stage or in new buffers, and the front end is ready to write.
    fn recover(&self, db: &DbInner, present: &Present) -> Result<()>;
}
