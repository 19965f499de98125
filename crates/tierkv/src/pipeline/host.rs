//! What a stage's own work is given of the engine ([`StageHost`]): a narrow view (waiting for
//! background events, the figures, waking the background threads, rotating the front end's
//! buffer, the snapshots, the file systems, the versions under the state lock), never the
//! database itself. A stage's background tasks, its flush upkeep and a flush it takes itself
//! are given it.
//!
//! A stage that runs work on a thread of its own (FluidKV's load detector) returns it from
//! [`crate::pipeline::Stage::background_tasks`]; the engine starts one thread per task at open
//! and stops them at shutdown, and a task that panics poisons the database like any background
//! thread.

use crate::fs::FileSystem;
use crate::stats::Counters;
use crate::tier::Tier;
use crate::version::{Version, VersionEdit};
use crate::{Error, Result};
use std::path::Path;
use std::sync::{Arc, Weak};
use std::time::Instant;

/// The engine as a stage's background task sees it.
pub(crate) trait StageHost: Send + Sync {
    /// Waits until `deadline` (woken early by background events, then waiting on). False once
    /// the database shuts down: the task returns.
    fn wait_until(&self, deadline: Instant) -> bool;
    /// The database's counters (user requests, the stage's own figures).
    fn counters(&self) -> &Counters;
    /// Wakes the background threads: the compaction threads look again for work (a change
    /// they read under the state lock, made before this call, is seen: no wakeup is lost).
    fn wake(&self);
    /// False once a background error poisoned the database.
    fn healthy(&self) -> bool;
    /// Rotates the front end's write buffer if it holds anything (a failure poisons the
    /// database, and the writers see it); true if that queued a flush.
    fn rotate_front(&self) -> bool;
    /// The sequence of the oldest live snapshot (the last sequence when none is taken): a
    /// version older than a newer one at or below it is seen by no reader.
    fn smallest_snapshot(&self) -> u64;
    /// The sequences of the live snapshots, oldest first.
    fn live_snapshots(&self) -> Vec<u64>;
    /// The database's directory.
    fn dir(&self) -> &Path;
    /// The database's options.
    fn options(&self) -> &crate::options::Options;
    /// The table cache: opens the database's runs (and caches their blocks).
    fn tables(&self) -> &Arc<crate::runs::TableCache>;
    /// The file system of `tier` (the PM tier only for a design that has one).
    fn fs_for(&self, tier: Tier) -> &Arc<dyn FileSystem>;
    /// True if the database has a PM pool.
    fn has_pool(&self) -> bool;
    /// Frees the pool's chunks of the finished pool file at `path` whose data lies wholly
    /// inside the file offsets `[start, end)`, never its first or last chunk; returns the
    /// bytes freed (none without a pool). REQUIRES: no reader will read the range again.
    fn punch_pool_file(&self, path: &Path, start: u64, end: u64) -> Result<u64>;
    /// Runs `f` under the engine's state lock, given the versions ([`LockedVersions`]); what
    /// `f` reads and changes there is one atomic step for every other thread.
    fn with_versions(&self, f: &mut dyn FnMut(&mut dyn LockedVersions));
}

/// The engine's versions as a stage's own work sees them under the state lock
/// ([`StageHost::with_versions`]).
pub(crate) trait LockedVersions {
    /// The current version.
    fn current(&self) -> Arc<Version>;
    /// The versions handed out that a reader may still hold (those dropped are forgotten).
    fn live_versions(&mut self) -> Vec<Weak<Version>>;
    /// The number of the oldest log the manifest still names (older ones are flushed).
    fn log_number(&self) -> u64;
    /// The older metadata of run `number` that something still holds (a run re-added to the
    /// version with other metadata: an older version, a reader or a flush may hold the old).
    fn held_metadata(&self, number: u64) -> Vec<Arc<crate::version::FileMetaData>>;
    /// Records `edit` in the manifest and installs the version it makes for readers; a
    /// failure poisons the database (`what`: the step that failed) and is returned.
    fn apply(&mut self, edit: VersionEdit, what: &str) -> Result<()>;
    /// Poisons the database with `e` (`what`: the step that failed): writes fail from now on.
    fn poison(&mut self, what: &str, e: Error);
}

/// The body of a [`BackgroundTask`].
pub(crate) type TaskBody = Box<dyn FnOnce(&dyn StageHost) + Send>;

/// Work a stage runs on a thread of its own for the life of the database.
pub(crate) struct BackgroundTask {
    /// The thread's name (`tierkv-NAME`) and what a panic report calls it.
    pub name: &'static str,
    /// The work: returns when [`StageHost::wait_until`] says the database shuts down.
    pub run: TaskBody,
}
