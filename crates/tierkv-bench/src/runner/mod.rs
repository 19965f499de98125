//! Runs benchmarks: N threads per benchmark over one [`KvEngine`], a latency histogram per
//! thread (merged at the end), and an optional progress bar.
//!
//! Timing follows db_bench: each thread reads the clock once per operation and charges the time
//! since its previous operation ended to the operation just finished, recording it in
//! nanoseconds in an HDR histogram. Threads start together behind a barrier. `seconds` is the
//! wall time from the earliest thread start to the latest thread finish; `ops_per_sec` is total
//! operations / `seconds`; `micros_per_op` is (sum of per-thread times) / total operations, i.e.
//! the average time one thread spends per operation (db_bench's definition).
//!
//! Each operation type (write, read, update, insert, scan, rmw, ...) has its own histogram;
//! the benchmark's overall latency is their merge.
//!
//! The loops allocate nothing per operation themselves: keys are encoded into a per-thread
//! buffer, values are slices of a pre-generated buffer, reads reuse one value buffer. Each
//! thread publishes its operation count to its own cache line after every operation; the
//! calling thread wakes every `--sample_interval_ms` to record a throughput sample (with the
//! engine's stall time over the interval, from `DbStats::stall_micros` deltas) and ten times a
//! second to draw the progress bar (only when stderr is a terminal and the benchmark has at
//! least [`PROGRESS_MIN_OPS`] operations).
//!
//! The code is split by what it does:
//!
//! * `suite`: a run's benchmark list on one engine, and the engine's final figures.
//! * `run`: one benchmark: its threads, the background writer, the progress bar, and the merge
//!   of the threads' figures.
//! * `plan`: what the threads of a benchmark are given.
//! * `timing`: per-thread timing, histograms and pacing.
//! * `db_bench_thread`: the body of a db_bench benchmark's thread.
//! * `ycsb_thread`: the body of a YCSB benchmark's thread.
//! * `sampling`: throughput samples and interval reports while a benchmark runs.

use crate::config::{BenchConfig, Benchmark};
use crate::engine::{EngineError, EngineResult, KvBatch, KvEngine};
use crate::report::{self, BenchResult, LatencySummary, OpLatency, Sample, StatsSummary};
use crate::verify;
use crate::workload::{encode_key, thread_seed, KeyGen, ValueGen};
use crate::ycsb::{
    merge_update, next_below, zeta, AckCounter, KeyChooser, LoadOrder, OpChooser,
    RequestDistribution, UpdateMode, YcsbOp, ZIPFIAN_CONSTANT,
};
use hdrhistogram::Histogram;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rand::rngs::SmallRng;
use rand::SeedableRng;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{mpsc, Barrier, OnceLock};
use std::time::{Duration, Instant};

mod db_bench_thread;
mod plan;
mod run;
mod sampling;
mod suite;
#[cfg(test)]
mod tests;
mod timing;
mod ycsb_thread;

pub use db_bench_thread::*;
pub use plan::*;
pub use run::*;
pub use sampling::*;
pub use suite::*;
pub use timing::*;
use ycsb_thread::*;
