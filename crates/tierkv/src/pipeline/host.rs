//! What a stage's own background work is given of the engine ([`StageHost`]): a narrow view
//! (waiting for background events, the figures, waking the background threads, rotating the
//! front end's buffer), never the database itself.
//!
//! A stage that runs work on a thread of its own (FluidKV's load detector) returns it from
//! [`crate::pipeline::Stage::background_tasks`]; the engine starts one thread per task at open
//! and stops them at shutdown, and a task that panics poisons the database like any background
//! thread.

use crate::stats::Counters;
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
