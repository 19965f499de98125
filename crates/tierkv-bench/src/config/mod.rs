//! The `tierkv bench` flags ([`BenchConfig`]), with db_bench's names, defaults and semantics,
//! and the benchmark names ([`Benchmark`]).
//!
//! Flags are accepted in db_bench's `--flag=value` style as well as `--flag value`; boolean flags
//! accept a bare `--sync` or `--sync=true|false|1|0`.
//!
//! The code is split by what it describes:
//!
//! * `benchmark`: the benchmark names and the default benchmark list.
//! * `design`: the entries of `--design` (designs, variants, the list of them).
//! * `flags`: the flags themselves, their defaults and value parsers.
//! * `validate`: derived values, the `-P` workload applied over the flags, and validation.
//! * `options`: the engine and write options the flags select.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use tierkv::{Design, Options, WriteOptions};

use crate::overrides::{apply_overrides, split_top_level, OptionOverride};
use crate::ycsb::{RequestDistribution, YcsbMix};

mod benchmark;
mod design;
mod flags;
mod options;
#[cfg(test)]
pub(crate) mod tests;
mod validate;

pub use benchmark::*;
pub use design::*;
pub use flags::*;
