//! FluidKV's load detector (section 4.4 of "FluidKV: Seamlessly Bridging the Gap between
//! Indexing Performance and Memory-Footprint on Ultra-Fast Persistent Memory", PVLDB 2024): a
//! thread that sets the first group's compaction trigger from the mix of user requests.
//!
//! Every `compaction.load_window_ms` it compares the user gets and writes counted in the
//! window (`Counters::user_gets`, `Counters::user_writes`):
//!
//! * writes more than half of the requests: write-intensive, the trigger is
//!   `level0_compaction_trigger` (4 under `fluidkv`: buffer trees accumulate, each compaction
//!   merges more of them into the StableStore);
//! * otherwise read-intensive: the trigger is `read_compaction_trigger` (1: every buffer tree
//!   is merged at once, so gets search one sorted run plus what the memtables hold);
//! * gets and no writes (read-only): also a flush of the memtable whatever its fill (the
//!   paper's eager flush), so that the newest writes join the StableStore too;
//! * no requests: nothing changes.
//!
//! The paper gives the two modes and no formula; the 0.5 write ratio and the window come from
//! its artifact. Scans are not counted (the engine counts no user seeks); a scan-only load
//! reads as idle.

use crate::options::CompactionOptions;
use crate::pipeline::{BackgroundTask, StageHost};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The detector's verdict on one window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Load {
    /// No requests.
    Idle,
    /// Writes are more than half of the requests.
    WriteIntensive,
    /// Writes are at most half of the requests, and there are some.
    ReadIntensive,
    /// Gets and no writes.
    ReadOnly,
}

/// The load of a window with `gets` user gets and `writes` user writes.
pub(crate) fn classify(gets: u64, writes: u64) -> Load {
    match (gets, writes) {
        (0, 0) => Load::Idle,
        (_, 0) => Load::ReadOnly,
        (g, w) if w > g => Load::WriteIntensive,
        _ => Load::ReadIntensive,
    }
}

/// The detector for a stage whose first group's compaction trigger is `trigger`: a task that
/// sets it every window until the database shuts down.
pub(crate) fn load_detector(
    options: &CompactionOptions,
    trigger: Arc<AtomicUsize>,
) -> BackgroundTask {
    let window = Duration::from_millis(options.load_window_ms);
    let (write_trigger, read_trigger) = (
        options.level0_compaction_trigger,
        options.read_compaction_trigger,
    );
    BackgroundTask {
        name: "load",
        run: Box::new(move |host: &dyn StageHost| {
            detect(host, &trigger, window, write_trigger, read_trigger)
        }),
    }
}

/// The detector's loop ([`load_detector`]).
fn detect(
    host: &dyn StageHost,
    trigger: &AtomicUsize,
    window: Duration,
    write_trigger: usize,
    read_trigger: usize,
) {
    let counters = host.counters();
    counters
        .load_trigger
        .store(trigger.load(Relaxed) as u64, Relaxed);
    let mut last = (
        counters.user_gets.load(Relaxed),
        counters.user_writes.load(Relaxed),
    );
    let mut deadline = Instant::now() + window;
    while host.wait_until(deadline) {
        deadline = Instant::now() + window;
        let now_counts = (
            counters.user_gets.load(Relaxed),
            counters.user_writes.load(Relaxed),
        );
        let load = classify(now_counts.0 - last.0, now_counts.1 - last.1);
        last = now_counts;
        let wanted = match load {
            Load::Idle => continue,
            Load::WriteIntensive => write_trigger,
            Load::ReadIntensive | Load::ReadOnly => read_trigger,
        };
        if trigger.swap(wanted, Relaxed) != wanted {
            counters.load_mode_switches.fetch_add(1, Relaxed);
            counters.load_trigger.store(wanted as u64, Relaxed);
            // The compaction threads look again under the new trigger.
            host.wake();
        }
        if load == Load::ReadOnly && host.healthy() {
            // A failed rotation poisons the database (the writers see it); the detector only
            // stops asking.
            if host.rotate_front() {
                counters.eager_flushes.fetch_add(1, Relaxed);
            }
            host.wake();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_are_classified_by_their_write_share() {
        assert_eq!(classify(0, 0), Load::Idle);
        assert_eq!(classify(10, 0), Load::ReadOnly);
        assert_eq!(classify(10, 11), Load::WriteIntensive);
        assert_eq!(classify(0, 1), Load::WriteIntensive);
        assert_eq!(classify(10, 10), Load::ReadIntensive);
        assert_eq!(classify(10, 1), Load::ReadIntensive);
    }
}
