//! TierKV's benchmark harness and command-line tool, as a library with a thin binary
//! (`src/main.rs`, the `tierkv` command), in the manner of Pebble's bench package.
//!
//! * [`config`]: the `tierkv bench` flags, with db_bench's names and defaults.
//! * [`workload`]: db_bench's key and value generation.
//! * [`engine`]: the narrow [`engine::KvEngine`] seam the runner drives, implemented for
//!   [`tierkv::Db`] and for test engines.
//! * [`runner`]: runs each benchmark on N threads with per-thread HDR latency histograms.
//! * [`report`]: result lines, the engine-figures block, and the JSON report.
//! * [`figures`]: the amplification, footprint and stall figures per tier and pipeline part.
//! * [`ycsb`]: the YCSB core workloads and YCSB's request-distribution generators.
//! * [`ycsb_workload`]: YCSB workload property files (`-P`) and `-p` overrides.
//! * [`verify`]: `--verify`, an engine wrapper that checks every read against the last write.
//! * [`plot`]: `--plot`, SVG charts.
//! * [`rocks`]: RocksDB behind the same seam (cargo feature `rocksdb`).
//! * [`reproduce`] and [`experiments`]: `tierkv reproduce`, scaled-down paper experiments
//!   with checks judged over rounds ([`verdict`]).
//! * [`overrides`]: `--set PATH=VALUE` and design variants' option overrides.
//! * [`snapshot`]: copies of databases and sparse PM pools, for experiment phases that start
//!   from an earlier phase's load.
//! * [`simulate`]: `tierkv simulate-compaction`, a design's compaction policies over a key
//!   stream without I/O.
//! * [`text`]: keys and values as command-line text (hex with `0x`).
//! * [`commands`]: the subcommands (`bench`, `reproduce`, `put`, `get`, `delete`, `scan`,
//!   `stats`, `check`).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod commands;
pub mod config;
pub mod engine;
pub mod experiments;
pub mod figures;
pub mod overrides;
pub mod plot;
pub mod report;
pub mod reproduce;
pub mod results;
pub mod rocks;
pub mod runner;
pub mod scaling;
pub mod simulate;
pub mod snapshot;
pub mod text;
pub mod verdict;
pub mod verify;
pub mod workload;
pub mod ycsb;
pub mod ycsb_workload;

pub use config::{BenchConfig, Benchmark, DesignChoice, DesignEntry, DesignList};
pub use engine::{EngineError, EngineResult, KvCursor, KvEngine};
