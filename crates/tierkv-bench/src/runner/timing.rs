//! Per-thread timing: the latency histograms ([`new_histogram`]) and operation types
//! ([`OpKind`]), the thread's operation counter on its own cache line, the operation timer with
//! open-loop pacing, and what one thread measured.

use super::*;

/// Largest latency the histograms hold exactly (longer ones are recorded as this): one hour.
const MAX_LATENCY_NANOS: u64 = 3_600_000_000_000;

/// A new, empty latency histogram (nanoseconds, 3 significant digits).
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_NANOS, 3).expect("constant bounds are valid")
}

/// The operation types that get their own latency histogram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// A db_bench put (fills, overwrite).
    Write,
    /// A point read.
    Read,
    /// One entry of readseq.
    Next,
    /// One seek (+ nexts) of seekrandom.
    Seek,
    /// A flush.
    Flush,
    /// A YCSB update (put of an existing key).
    Update,
    /// A YCSB insert (put of a new key).
    Insert,
    /// A YCSB scan.
    Scan,
    /// A YCSB read-modify-write.
    Rmw,
    /// A get of readrandomwriterandom.
    Get,
    /// A put of readrandomwriterandom.
    Put,
    /// A delete (deleterandom).
    Delete,
    /// A multiget of multireadrandom (one batch of keys).
    Multiget,
}

impl OpKind {
    /// Number of operation types.
    pub const COUNT: usize = 13;
    /// Every operation type, in report order.
    pub const ALL: [OpKind; OpKind::COUNT] = [
        OpKind::Write,
        OpKind::Read,
        OpKind::Next,
        OpKind::Seek,
        OpKind::Flush,
        OpKind::Update,
        OpKind::Insert,
        OpKind::Scan,
        OpKind::Rmw,
        OpKind::Get,
        OpKind::Put,
        OpKind::Delete,
        OpKind::Multiget,
    ];

    /// The name in reports.
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Write => "write",
            OpKind::Read => "read",
            OpKind::Next => "next",
            OpKind::Seek => "seek",
            OpKind::Flush => "flush",
            OpKind::Update => "update",
            OpKind::Insert => "insert",
            OpKind::Scan => "scan",
            OpKind::Rmw => "rmw",
            OpKind::Get => "get",
            OpKind::Put => "put",
            OpKind::Delete => "delete",
            OpKind::Multiget => "multiget",
        }
    }
}

/// A per-thread operation counter on its own cache line, read by the sampler.
#[repr(align(128))]
#[derive(Default)]
pub(super) struct Slot(pub(super) AtomicU64);

/// What one thread measured.
pub(super) struct ThreadOut {
    pub(super) hists: [Option<Histogram<u64>>; OpKind::COUNT],
    pub(super) ops: u64,
    pub(super) bytes: u64,
    pub(super) found: u64,
    pub(super) lookups: u64,
    /// YCSB updates of a record that does not exist (written nothing).
    pub(super) failed: u64,
    pub(super) start: Instant,
    pub(super) finish: Instant,
}

/// Times operations: one clock read per operation, a histogram per operation type, and the
/// thread's operation counter.
///
/// Paced (open loop, `--ops_per_sec`), operation `i` is due at `start + i x pace`: the thread
/// waits for it when early, and its latency counts from when it was due, so time an operation
/// spent waiting behind a slow one is part of its latency (no coordinated omission).
pub(super) struct OpTimer<'a> {
    hists: [Option<Histogram<u64>>; OpKind::COUNT],
    last: Instant,
    start: Instant,
    pub(super) ops: u64,
    slot: &'a AtomicU64,
    pace: Option<Duration>,
    /// `--duration`: no operation starts after this instant.
    deadline: Option<Instant>,
}

impl<'a> OpTimer<'a> {
    pub(super) fn start(slot: &'a AtomicU64, plan: &Plan) -> Self {
        Self::with_pace(slot, plan.pace, plan.duration)
    }

    fn with_pace(slot: &'a AtomicU64, pace: Option<Duration>, duration: Option<Duration>) -> Self {
        let now = Instant::now();
        OpTimer {
            hists: Default::default(),
            last: now,
            start: now,
            ops: 0,
            slot,
            pace,
            deadline: duration.map(|d| now + d),
        }
    }

    /// False once `--duration` is over (always true without it).
    #[inline]
    pub(super) fn more(&self) -> bool {
        self.deadline.is_none_or(|d| self.last < d)
    }

    #[inline]
    pub(super) fn done(&mut self, kind: OpKind) {
        self.done_n(kind, 1);
    }

    /// Records one timed operation that did `n` entries' work (a batch): one latency sample,
    /// `n` operations counted (db_bench's `FinishedOps(..., n)`).
    #[inline]
    pub(super) fn done_n(&mut self, kind: OpKind, n: u64) {
        let now = Instant::now();
        let nanos = u64::try_from(now.duration_since(self.last).as_nanos()).unwrap_or(u64::MAX);
        self.hists[kind as usize]
            .get_or_insert_with(new_histogram)
            .saturating_record(nanos);
        self.last = now;
        self.ops += n;
        self.slot.store(self.ops, Relaxed);
        if let Some(pace) = self.pace {
            let due = self.start + pace.saturating_mul(self.ops.min(u32::MAX as u64) as u32);
            wait_until(due);
            self.last = due;
        }
    }

    pub(super) fn finish(self, bytes: u64, found: u64, lookups: u64) -> ThreadOut {
        ThreadOut {
            hists: self.hists,
            ops: self.ops,
            bytes,
            found,
            lookups,
            failed: 0,
            start: self.start,
            finish: self.last,
        }
    }
}

/// Waits until `due`: sleeps while more than 200 us are left (the sleep's granularity), then
/// yields until it passes, so a paced thread starts each operation on time without holding a
/// core the engine's background threads need.
pub(super) fn wait_until(due: Instant) {
    loop {
        let now = Instant::now();
        if now >= due {
            return;
        }
        let left = due - now;
        if left > Duration::from_micros(200) {
            std::thread::sleep(left - Duration::from_micros(150));
        } else {
            std::thread::yield_now();
        }
    }
}
