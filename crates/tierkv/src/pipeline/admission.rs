//! Write admission: one rule, for every front end, that says whether a write may go into the
//! active write buffer now, must be delayed once, must wait for background work, or needs the
//! buffer rotated first.
//!
//! The rule is LevelDB's `MakeRoomForWrite`, given the strongest write pressure of the stages
//! ([`WritePressure`], with the stage that asks for it) and the front end's fill ([`Fill`]):
//!
//! 1. a stage asks for a slowdown and this write was not delayed yet: **delay** it once (1 ms,
//!    rather than stopping later for seconds);
//! 2. the active buffer has room: **proceed**;
//! 3. it is full, and as many buffers exist as `max_write_buffer_number` allows: **wait** for a
//!    flush;
//! 4. it is full, and a stage asks writes to stop: **wait** for compaction;
//! 5. otherwise **rotate**: the full buffer becomes immutable and a new one takes the write.
//!
//! A stage's stop therefore holds writes back once the active buffer is full, not before: the
//! writes the buffer still takes cost the stage nothing until they are flushed, and the flush
//! is what the stop keeps from happening. The front end measures its own fill (a memtable's
//! bytes, a PM log's share of the pool, a generation's index) and does what the answer says;
//! what it does beyond that (a WAL record's PM space, ListDB's L0 list count as pressure) is its
//! own.

use super::WritePressure;
use crate::stats::StallReason;

/// How full the front end's active write buffer is, for [`admit`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fill {
    /// The active buffer takes no more writes (its size, or its log's share of the pool), or
    /// the caller asks it rotated anyway (`flush`).
    pub full: bool,
    /// Rotating would exceed `max_write_buffer_number` buffers (active and immutable).
    pub at_limit: bool,
}

/// What a write must do before it enters the active buffer ([module docs](self)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Go ahead.
    Proceed,
    /// Sleep 1 ms once, counted as a slowdown stall for the reason, then ask again.
    Delay(StallReason),
    /// Wait for background work, counted as a stop stall for the reason, then ask again.
    Wait(StallReason),
    /// Rotate the full buffer, then ask again (or go ahead, if the front end's rotation leaves
    /// an empty active buffer).
    Rotate,
}

/// The admission of one write given the stages' strongest `pressure` (and the stage asking),
/// whether the write `may_delay` (not delayed yet), and the front end's `fill`.
pub(crate) fn admit(pressure: (WritePressure, usize), may_delay: bool, fill: Fill) -> Admission {
    let (pressure, stage) = pressure;
    if may_delay && pressure == WritePressure::Slowdown {
        return Admission::Delay(StallReason::Slowdown(stage));
    }
    if !fill.full {
        return Admission::Proceed;
    }
    if fill.at_limit {
        return Admission::Wait(StallReason::MemtableLimit);
    }
    if pressure == WritePressure::Stop {
        return Admission::Wait(StallReason::Stop(stage));
    }
    Admission::Rotate
}

#[cfg(test)]
mod tests {
    use super::*;
    use WritePressure::{None as Free, Slowdown, Stop};

    fn fill(full: bool, at_limit: bool) -> Fill {
        Fill { full, at_limit }
    }

    /// Every combination of pressure, delay and fill, against the rule written out.
    #[test]
    fn admission_follows_the_rule_in_every_case() {
        let cases = [
            // (pressure, may_delay, full, at_limit) -> answer
            ((Free, 0), true, false, false, Admission::Proceed),
            ((Free, 0), true, true, false, Admission::Rotate),
            (
                (Free, 0),
                true,
                true,
                true,
                Admission::Wait(StallReason::MemtableLimit),
            ),
            ((Free, 0), false, false, true, Admission::Proceed),
            (
                (Slowdown, 2),
                true,
                false,
                false,
                Admission::Delay(StallReason::Slowdown(2)),
            ),
            (
                (Slowdown, 2),
                true,
                true,
                true,
                Admission::Delay(StallReason::Slowdown(2)),
            ),
            ((Slowdown, 2), false, false, false, Admission::Proceed),
            ((Slowdown, 2), false, true, false, Admission::Rotate),
            (
                (Slowdown, 2),
                false,
                true,
                true,
                Admission::Wait(StallReason::MemtableLimit),
            ),
            // A stop holds writes back once the buffer is full, not before.
            ((Stop, 1), true, false, false, Admission::Proceed),
            (
                (Stop, 1),
                true,
                true,
                false,
                Admission::Wait(StallReason::Stop(1)),
            ),
            (
                (Stop, 1),
                false,
                true,
                false,
                Admission::Wait(StallReason::Stop(1)),
            ),
            // Both: the buffer limit is named (a flush is what frees it first).
            (
                (Stop, 1),
                true,
                true,
                true,
                Admission::Wait(StallReason::MemtableLimit),
            ),
        ];
        for (pressure, may_delay, full, at_limit, want) in cases {
            assert_eq!(
                admit(pressure, may_delay, fill(full, at_limit)),
                want,
                "{pressure:?} may_delay={may_delay} full={full} at_limit={at_limit}"
            );
        }
    }
}
