//! Statistics counters that many threads add to on the hot path (bytes read, lines written
//! back).
//!
//! One shared atomic makes every add move its cache line between the cores that add, and on
//! x86 its locked add also waits for the adding core's earlier cache-line write-backs, as a
//! fence would. A [`Striped`] counter gives each thread a stripe of its own cache line (threads
//! take stripes round-robin the first time they add; past [`STRIPES`] threads, stripes are
//! shared, still exact), and sums the stripes when read.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Stripes per counter.
pub(crate) const STRIPES: usize = 16;

/// A value alone on its cache line (two lines: adjacent-line prefetch pairs them).
#[repr(align(128))]
#[derive(Default)]
pub(crate) struct Padded(pub(crate) AtomicU64);

/// A counter summed over per-thread stripes (module docs).
#[derive(Default)]
pub(crate) struct Striped([Padded; STRIPES]);

static NEXT_STRIPE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static STRIPE: usize = NEXT_STRIPE.fetch_add(1, Ordering::Relaxed) % STRIPES;
}

impl Striped {
    /// Adds `n`.
    pub(crate) fn add(&self, n: u64) {
        let i = STRIPE.with(|s| *s);
        self.0[i].0.fetch_add(n, Ordering::Relaxed);
    }

    /// The sum of every add so far (adds racing with the call may or may not be in it).
    pub(crate) fn load(&self) -> u64 {
        self.0
            .iter()
            .fold(0u64, |sum, p| sum.wrapping_add(p.0.load(Ordering::Relaxed)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn adds_from_many_threads_sum_exactly() {
        let c = Arc::new(Striped::default());
        let threads: Vec<_> = (0..(STRIPES + 5) as u64)
            .map(|t| {
                let c = Arc::clone(&c);
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        c.add(t + 1);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let n = (STRIPES + 5) as u64;
        assert_eq!(c.load(), 1000 * n * (n + 1) / 2);
    }
}
