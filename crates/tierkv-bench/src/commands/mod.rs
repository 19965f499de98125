//! The subcommands of the `tierkv` tool: `bench` (the whole benchmark run: open, header,
//! benchmarks, engine figures, JSON, close) and the tools that act on an existing database
//! (`put`, `get`, `delete`, `scan`, `stats`, `check`, `repair`).
//!
//! The tools open a database with what it recorded at creation (design, level count, WAL tier,
//! and the engine finds the PM pool at the path its manifest records), so an existing database
//! needs only `--db`. `bench` checks where its reports go before it runs, and removes its
//! temporary database when it is interrupted (Ctrl-C, SIGTERM, SIGHUP).
//!
//! Keys and values are read and shown as described in [`crate::text`].
//!
//! The code is split by subcommand: `db_args` opens an existing database from the tools' flags;
//! `kv` is `put`, `get`, `delete` and `scan`; `summary` is `stats`; `maintenance` is `check`,
//! `repair` and `grow-pool`; `bench_run` is `bench` (and the design list); `temp_files` removes
//! `bench`'s temporary database and pool files, at the end of a run or on an interrupt.

use crate::config::{BenchConfig, DesignChoice, DesignEntry, EngineKind};
use crate::engine::{EngineResult, KvEngine, MemEngine, NullEngine, TierKvEngine};
use crate::overrides::{apply_overrides, OptionOverride};
use crate::report::{self, format_bytes, BenchResult, DesignRun, JsonReport};
use crate::text::{display_bytes, parse_bytes_arg};
use crate::verify::VerifyingEngine;
use crate::{plot, runner};
use serde::Serialize;
use std::io::Write;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Mutex, OnceLock, PoisonError};
use tierkv::stats::{DbStats, GlobalIndexStats, LabStats, LevelStats};
use tierkv::{CheckReport, CreationFields, Db, Design, Options, ReadOptions};

mod bench_run;
mod db_args;
mod kv;
mod maintenance;
mod summary;
mod temp_files;
#[cfg(test)]
mod tests;

pub use bench_run::*;
pub use db_args::*;
pub use kv::*;
pub use maintenance::*;
pub use summary::*;
use temp_files::*;
