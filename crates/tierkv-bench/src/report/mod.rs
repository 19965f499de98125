//! Reports: db_bench-style result lines, the engine-figures block, and the JSON document.
//!
//! A result prints as
//! `fillrandom   :       3.123 micros/op 320184 ops/sec;   45.9 MB/s (1000 of 1000 found)`
//! followed by `latency (micros): avg .. p50 .. p99 .. p99.9 .. max ..`. MB/s counts key + value
//! bytes written, or returned by reads, per second, with MB = 2^20 bytes as db_bench does.

use crate::config::{BenchConfig, Benchmark};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::Path;
use std::str::FromStr;
use tierkv::DbStats;

mod compare;
mod json;
mod model;
#[cfg(test)]
mod tests;
mod text;

pub use compare::*;
pub use json::*;
pub use model::*;
pub use text::*;
