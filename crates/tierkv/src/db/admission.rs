//! The engine's write admission loop: one loop, for every front end, that applies the admission
//! rule ([`crate::pipeline::admit`]) until a write may enter the active write buffer.
//!
//! The loop owns what is the same for every front end: the background error, the stages' write
//! pressure, the one delay a write may take, waiting for background work, and counting each as
//! a stall. The front end answers what only it knows through [`AdmitBuffer`]: how full its
//! active buffer is, any pressure of its own (ListDB's L0 lists), what a write takes before it
//! enters (a WAL record's space), and how it rotates a full buffer.
//!
//! **Locking.** The loop holds the state lock while it decides; it releases it to delay and
//! while it waits. The front end's `proceed` and `rotate` get the guard and release it
//! themselves around their I/O (`MutexGuard::unlocked`), so that what they decide after the
//! I/O is decided under the lock again, as the waits that follow need.

use super::{DbInner, State};
use crate::pipeline::{admit, Admission, Fill, WritePressure};
use crate::stats::{StallReason, StallTracker};
use crate::Result;
use parking_lot::MutexGuard;
use std::time::Instant;

/// What a front end does next after [`AdmitBuffer::proceed`] or [`AdmitBuffer::rotate`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// The write may enter the buffer.
    Done,
    /// Ask the rule again.
    Again,
    /// Wait for background work to free something (counted as a stop stall for the reason),
    /// then ask again.
    Wait(StallReason),
}

/// A front end's active write buffer, as the admission loop sees it. Every method but
/// [`AdmitBuffer::wait_own`] is called with the state lock held.
pub(crate) trait AdmitBuffer {
    /// How full the active buffer is; `None`: there is nothing to admit (a rotation asked for
    /// an empty buffer).
    fn fill(&mut self, db: &DbInner) -> Option<Fill>;

    /// Pressure of the front end's own, on top of the stages' (`Stop`: the loop calls
    /// [`AdmitBuffer::wait_own`] before it asks again). Default: none.
    fn own_pressure(&self) -> WritePressure {
        WritePressure::None
    }

    /// Without the state lock: waits until the front end's own stop is lifted.
    fn wait_own(&mut self, _db: &DbInner) -> Result<()> {
        Ok(())
    }

    /// The rule let the write in: takes what the write needs before it enters the buffer
    /// (a WAL record's space). Default: nothing.
    fn proceed(&mut self, _db: &DbInner, _state: &mut MutexGuard<'_, State>) -> Result<Step> {
        Ok(Step::Done)
    }

    /// The rule asks the full buffer rotated.
    fn rotate(&mut self, db: &DbInner, state: &mut MutexGuard<'_, State>) -> Result<Step>;
}

impl DbInner {
    /// Admits one write (or, with `may_delay` false, a flush's rotation) into `buffer`:
    /// delays it once, waits, and rotates as the admission rule says, until `buffer` says the
    /// write may enter. Fails with the background error, or with what `buffer` fails with.
    /// Generic, not `dyn`: each front end's write path gets its own copy with its answers
    /// inlined, as when it wrote its own loop.
    pub(crate) fn admit_write<B: AdmitBuffer>(
        &self,
        buffer: &mut B,
        may_delay: bool,
    ) -> Result<()> {
        let mut allow_delay = may_delay;
        let mut stalled = StallTracker::default();
        let mut state = self.state.lock();
        loop {
            if let Some(e) = &state.bg_error {
                return Err(e.duplicate());
            }
            let Some(fill) = buffer.fill(self) else {
                return Ok(());
            };
            let own = buffer.own_pressure();
            if own == WritePressure::Stop {
                let t = Instant::now();
                MutexGuard::unlocked(&mut state, || buffer.wait_own(self))?;
                self.add_stall(t, StallReason::Stop(0), &mut stalled);
                continue;
            }
            let (pressure, stage) = self.write_pressure(&state);
            let step = match admit((pressure.max(own), stage), allow_delay, fill) {
                Admission::Delay(reason) => {
                    MutexGuard::unlocked(&mut state, || self.delay_write(reason, &mut stalled));
                    allow_delay = false;
                    continue;
                }
                Admission::Wait(reason) => Step::Wait(reason),
                Admission::Proceed => buffer.proceed(self, &mut state)?,
                Admission::Rotate => buffer.rotate(self, &mut state)?,
            };
            match step {
                Step::Done => return Ok(()),
                Step::Again => {}
                Step::Wait(reason) => self.wait_for_background(&mut state, reason, &mut stalled),
            }
        }
    }
}
