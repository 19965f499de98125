//! Emulated PM latency: a calibrated busy spin.
//!
//! **Purpose.** [`crate::LatencyModel`] adds `write_ns` per cache line written back and
//! `read_ns` per read access. Short delays spin a loop whose speed is measured once per process
//! (iterations per microsecond, in a `OnceLock`); delays of 20 µs or more spin on
//! `Instant::now()` instead, which is exact for long waits. A zero latency costs one branch.
//!
//! **Thread safety.** The calibration is computed once (`OnceLock`) and read-only afterwards;
//! spinning is per calling thread, as a slow PM access stalls only the thread that makes it.
//!
//! **Durability.** Nothing here touches PM.

use std::hint::black_box;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

static ITERS_PER_US: OnceLock<u64> = OnceLock::new();

/// Delays at or above this are timed with `Instant` rather than a counted loop.
const CLOCK_SPIN_NS: u64 = 20_000;

fn spin_iters(n: u64) {
    let mut i = 0u64;
    while i < n {
        i = black_box(i) + 1;
    }
}

fn calibrate() -> u64 {
    const ITERS: u64 = 200_000;
    spin_iters(ITERS); // warm up
    let mut best = Duration::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        spin_iters(ITERS);
        best = best.min(t.elapsed());
    }
    let ns = best.as_nanos().max(1) as u64;
    (ITERS * 1000 / ns).max(1)
}

/// Spin-loop iterations per microsecond on this machine (measured once).
pub(crate) fn iters_per_us() -> u64 {
    *ITERS_PER_US.get_or_init(calibrate)
}

/// Busy-waits for about `ns` nanoseconds (at least `ns` for waits of 20 µs or more).
#[inline]
pub(crate) fn spin_ns(ns: u64) {
    if ns == 0 {
        return;
    }
    if ns >= CLOCK_SPIN_NS {
        let deadline = Instant::now() + Duration::from_nanos(ns);
        while Instant::now() < deadline {
            std::hint::spin_loop();
        }
    } else {
        spin_iters(ns.saturating_mul(iters_per_us()) / 1000);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_spins_last_at_least_their_duration() {
        let t = Instant::now();
        spin_ns(2_000_000);
        assert!(t.elapsed() >= Duration::from_millis(2));
    }

    #[test]
    fn calibration_is_positive_and_stable() {
        let a = iters_per_us();
        assert!(a >= 1);
        assert_eq!(a, iters_per_us());
        spin_ns(0);
        spin_ns(500);
    }
}
