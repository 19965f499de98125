//! Measurement: byte counters per tier, pipeline part and purpose, stall time, and the DRAM
//! footprint.
//!
//! [`Counters`] are atomics updated on the hot paths (relaxed ordering: they are statistics, not
//! synchronisation). Bytes are counted in one matrix keyed by (tier, [`Part`], [`IoPurpose`],
//! read or written), so a design's stages report their write, read and space figures without a
//! field of their own. [`DbStats`] is a consistent-enough copy taken by [`crate::Db::stats`],
//! from which the amplification figures are derived.

use crate::tier::Tier;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

mod counters;
mod io;
mod snapshot;
#[cfg(test)]
mod tests;

pub use counters::*;
pub use io::*;
pub use snapshot::*;
