//! The `tierkv bench` flags ([`BenchConfig`]), with db_bench's names, defaults and semantics,
//! and the benchmark names ([`Benchmark`]).
//!
//! Flags are accepted in db_bench's `--flag=value` style as well as `--flag value`; boolean flags
//! accept a bare `--sync` or `--sync=true|false|1|0`.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use tierkv::{Design, Options, WriteOptions};

use crate::overrides::{apply_overrides, split_top_level, OptionOverride};
use crate::ycsb::{RequestDistribution, YcsbMix};

/// The benchmarks run when `--benchmarks` is not given.
///
/// Why this list: it covers the three write patterns and the two basic read patterns while
/// staying well under two minutes with the default `--num=1000000` on a 2-core machine.
/// Planning figures (~300k writes/s, ~300k reads/s): `fillseq`, `fillrandom` and `overwrite`
/// take ~3.3 s each (1M x 144 B = 144 MB of user data each, so a couple of 64 MiB memtable
/// flushes and some compaction work per fill, which may stall writers for a few seconds more),
/// `readrandom` ~3.3 s, `readseq` (one iterator, 1M `next` calls) ~1 s: ~15-25 s in all, plus
/// ~1 s for the final logical-size scan.
///
/// Measured on the 2-core development machine (release build, database in /tmp): fillseq 3.3 s,
/// fillrandom 5.4 s, overwrite 7.4 s, readrandom 6.6 s, readseq 0.3 s, seekrandom 18.5 s
/// (an iterator per seek, as db_bench does), 42 s in all. `readwhilewriting` is left out
/// because on 2 cores its writer thread, the readers and background compaction compete for the
/// CPUs, so its figures describe the machine more than the engine; ask for it explicitly.
pub const DEFAULT_BENCHMARKS: &str = "fillseq,fillrandom,overwrite,readrandom,readseq,seekrandom";

/// One benchmark, named as in db_bench.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Benchmark {
    /// Write keys `0..num` in order (per thread).
    Fillseq,
    /// Write `num` keys uniform in `[0, num)` (per thread).
    Fillrandom,
    /// Like `fillrandom`, meant to run over an existing database (never skipped).
    Overwrite,
    /// Read `reads` keys uniform in `[0, num)` (per thread); reports how many were found.
    Readrandom,
    /// Iterate `reads` entries from the first key with one iterator (per thread), stopping at
    /// the end of the database.
    Readseq,
    /// Seek `reads` random keys (a new iterator per seek), then `next` `seek_nexts` times.
    Seekrandom,
    /// `threads` readers doing `readrandom` while one extra writer thread writes random keys
    /// until the readers finish; reports the readers' figures.
    Readwhilewriting,
    /// Gets and puts of random keys uniform in `[0, num)`, `reads` operations per thread: in
    /// each run of 100 operations the first `--readwritepercent` are gets and the rest puts
    /// (db_bench's pattern); reports gets and puts separately.
    Readrandomwriterandom,
    /// Read-modify-write of `reads` random keys per thread: a get, then a put of a new value
    /// (db_bench's updaterandom); reports how many gets found their key.
    Updaterandom,
    /// Delete `num` random keys per thread (db_bench's deleterandom; `--batch_size` deletes
    /// per batch).
    Deleterandom,
    /// `threads` seekers doing `seekrandom` while one extra writer thread writes random keys
    /// until the seekers finish; reports the seekers' figures.
    Seekrandomwhilewriting,
    /// `reads` random keys per thread, read `--multiread_batch_size` at a time, each batch as
    /// of one snapshot (db_bench's multireadrandom); one timed operation per batch.
    Multireadrandom,
    /// Flush the memtable (one operation).
    Flush,
    /// Compact the whole key range (db_bench's compact: one manual compaction).
    Compact,
    /// Print the engine's complete figures now (db_bench's stats).
    Stats,
    /// Print each level's (each stage group's) files and bytes, and the per-level compaction
    /// statistics (db_bench's levelstats).
    Levelstats,
    /// Print every live table: stage, group, number, tier, size and key range (db_bench's
    /// sstables).
    Sstables,
    /// Wait until the engine has no background work left (no memtable to flush, no
    /// compaction running or due): db_bench's `waitforcompaction`, one operation.
    #[serde(rename = "waitforcompaction")]
    WaitForCompaction,
    /// YCSB load phase: insert records `0..num` (in a seeded random order, split between the
    /// threads).
    #[serde(rename = "ycsb-load")]
    YcsbLoad,
    /// YCSB workload A: 50% reads, 50% updates (zipfian).
    #[serde(rename = "ycsb-a")]
    YcsbA,
    /// YCSB workload B: 95% reads, 5% updates (zipfian).
    #[serde(rename = "ycsb-b")]
    YcsbB,
    /// YCSB workload C: 100% reads (zipfian).
    #[serde(rename = "ycsb-c")]
    YcsbC,
    /// YCSB workload D: 95% reads of the latest records, 5% inserts (latest).
    #[serde(rename = "ycsb-d")]
    YcsbD,
    /// YCSB workload E: 95% scans of 1..=100 records, 5% inserts (zipfian scan starts).
    #[serde(rename = "ycsb-e")]
    YcsbE,
    /// YCSB workload F: 50% reads, 50% read-modify-writes (zipfian).
    #[serde(rename = "ycsb-f")]
    YcsbF,
    /// The transaction phase of the YCSB workload file given with `-P` (YCSB's `run`).
    #[serde(rename = "ycsb-run")]
    YcsbRun,
}

impl Benchmark {
    /// Every benchmark, in documentation order.
    pub const ALL: &'static [Benchmark] = &[
        Benchmark::Fillseq,
        Benchmark::Fillrandom,
        Benchmark::Overwrite,
        Benchmark::Readrandom,
        Benchmark::Readseq,
        Benchmark::Seekrandom,
        Benchmark::Readwhilewriting,
        Benchmark::Readrandomwriterandom,
        Benchmark::Updaterandom,
        Benchmark::Deleterandom,
        Benchmark::Seekrandomwhilewriting,
        Benchmark::Multireadrandom,
        Benchmark::Flush,
        Benchmark::WaitForCompaction,
        Benchmark::Compact,
        Benchmark::Stats,
        Benchmark::Levelstats,
        Benchmark::Sstables,
        Benchmark::YcsbLoad,
        Benchmark::YcsbA,
        Benchmark::YcsbB,
        Benchmark::YcsbC,
        Benchmark::YcsbD,
        Benchmark::YcsbE,
        Benchmark::YcsbF,
        Benchmark::YcsbRun,
    ];

    /// The db_bench name.
    pub fn name(self) -> &'static str {
        match self {
            Benchmark::Fillseq => "fillseq",
            Benchmark::Fillrandom => "fillrandom",
            Benchmark::Overwrite => "overwrite",
            Benchmark::Readrandom => "readrandom",
            Benchmark::Readseq => "readseq",
            Benchmark::Seekrandom => "seekrandom",
            Benchmark::Readwhilewriting => "readwhilewriting",
            Benchmark::Readrandomwriterandom => "readrandomwriterandom",
            Benchmark::Updaterandom => "updaterandom",
            Benchmark::Deleterandom => "deleterandom",
            Benchmark::Seekrandomwhilewriting => "seekrandomwhilewriting",
            Benchmark::Multireadrandom => "multireadrandom",
            Benchmark::Flush => "flush",
            Benchmark::WaitForCompaction => "waitforcompaction",
            Benchmark::Compact => "compact",
            Benchmark::Stats => "stats",
            Benchmark::Levelstats => "levelstats",
            Benchmark::Sstables => "sstables",
            Benchmark::YcsbLoad => "ycsb-load",
            Benchmark::YcsbA => "ycsb-a",
            Benchmark::YcsbB => "ycsb-b",
            Benchmark::YcsbC => "ycsb-c",
            Benchmark::YcsbD => "ycsb-d",
            Benchmark::YcsbE => "ycsb-e",
            Benchmark::YcsbF => "ycsb-f",
            Benchmark::YcsbRun => "ycsb-run",
        }
    }

    /// True for the one-operation maintenance benchmarks (`flush`, `waitforcompaction`,
    /// `compact`).
    pub fn is_maintenance(self) -> bool {
        matches!(
            self,
            Benchmark::Flush | Benchmark::WaitForCompaction | Benchmark::Compact
        )
    }

    /// True for the benchmarks that only print the engine's state (`stats`, `levelstats`,
    /// `sstables`): no operation is timed and no result line is printed.
    pub fn is_report(self) -> bool {
        matches!(
            self,
            Benchmark::Stats | Benchmark::Levelstats | Benchmark::Sstables
        )
    }

    /// True for the benchmarks that run one background writer beside their threads.
    pub fn has_writer(self) -> bool {
        matches!(
            self,
            Benchmark::Readwhilewriting | Benchmark::Seekrandomwhilewriting
        )
    }

    /// True for the benchmarks whose every operation writes (paced by
    /// `--benchmark_write_rate_limit`, batched by `--batch_size`).
    pub fn is_write_only(self) -> bool {
        matches!(
            self,
            Benchmark::Fillseq
                | Benchmark::Fillrandom
                | Benchmark::Overwrite
                | Benchmark::Deleterandom
        )
    }

    /// True for benchmarks that fill a fresh database, which db_bench skips under
    /// `--use_existing_db`.
    pub fn is_fill(self) -> bool {
        matches!(
            self,
            Benchmark::Fillseq | Benchmark::Fillrandom | Benchmark::YcsbLoad
        )
    }

    /// The operation mix of a YCSB transaction workload (`ycsb-a` .. `ycsb-f`).
    pub fn ycsb_mix(self) -> Option<YcsbMix> {
        Some(match self {
            Benchmark::YcsbA => YcsbMix::A,
            Benchmark::YcsbB => YcsbMix::B,
            Benchmark::YcsbC => YcsbMix::C,
            Benchmark::YcsbD => YcsbMix::D,
            Benchmark::YcsbE => YcsbMix::E,
            Benchmark::YcsbF => YcsbMix::F,
            _ => return None,
        })
    }

    /// True for the YCSB benchmarks (load, A-F and the `-P` workload's run).
    pub fn is_ycsb(self) -> bool {
        matches!(self, Benchmark::YcsbLoad | Benchmark::YcsbRun) || self.ycsb_mix().is_some()
    }
}

impl fmt::Display for Benchmark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Benchmark {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if let Some(why) = refused_benchmark(s) {
            return Err(format!("benchmark {s:?} is not available: {why}"));
        }
        Benchmark::ALL
            .iter()
            .copied()
            .find(|b| b.name() == s)
            .ok_or_else(|| {
                let known: Vec<_> = Benchmark::ALL.iter().map(|b| b.name()).collect();
                format!(
                    "unknown benchmark {s:?}; known benchmarks: {}",
                    known.join(", ")
                )
            })
    }
}

/// Rewrites YCSB's single-dash long options (`-target N`, `-threads N`) to the flags they
/// mean (`--target`, `--threads`), so a YCSB command line works as typed; and gives `tierkv
/// bench` with a workload file (`-P`) and no `--benchmarks` the workload's two phases,
/// `--benchmarks=ycsb-load,ycsb-run`, as YCSB's `load` then `run` (not db_bench's default
/// list under a YCSB header). Everything else is passed through.
pub fn normalize_ycsb_args(
    args: impl IntoIterator<Item = std::ffi::OsString>,
) -> Vec<std::ffi::OsString> {
    let mut out: Vec<std::ffi::OsString> = args
        .into_iter()
        .map(|a| match a.to_str() {
            Some("-target") => "--target".into(),
            Some("-threads") => "--threads".into(),
            _ => a,
        })
        .collect();
    let text: Vec<&str> = out.iter().map(|a| a.to_str().unwrap_or("")).collect();
    let bench = (text.get(1) == Some(&"bench")).then_some(1);
    let workload = |a: &&str| {
        *a == "-P" || *a == "--workload" || a.starts_with("--workload=") || a.starts_with("-P")
    };
    let benchmarks = |a: &&str| *a == "--benchmarks" || a.starts_with("--benchmarks=");
    if let Some(b) = bench {
        let rest = &text[b + 1..];
        if rest.iter().any(workload) && !rest.iter().any(benchmarks) {
            out.push("--benchmarks=ycsb-load,ycsb-run".into());
        }
    }
    out
}

/// db_bench benchmarks TierKV does not run, with the reason.
fn refused_benchmark(name: &str) -> Option<&'static str> {
    Some(match name {
        "readreverse" | "readrandomreverse" | "seekrandomprev" => {
            "TierKV's iterators move forward only (no prev); reverse iteration is not \
             implemented in any design"
        }
        "mixgraph" => {
            "mixgraph's key-range and value-size models (its many --keyrange_*, --value_k/sigma, \
             --iter_* parameters) are not reproduced; use readrandomwriterandom, the YCSB \
             workloads or a -P workload file"
        }
        _ => return None,
    })
}

fn parse_pm_mode(s: &str) -> Result<tierkv::pm::DurabilityMode, String> {
    s.parse().map_err(|e: tierkv::pm::PmError| e.to_string())
}

fn parse_pm_latency(s: &str) -> Result<tierkv::pm::LatencyModel, String> {
    tierkv::pm::LatencyModel::from_name(s)
        .ok_or_else(|| format!("unknown PM latency preset {s:?}; known: dram, nvdimm, pcm, slmdb"))
}

/// Parses a comma-separated benchmark list (`"fillseq,readrandom"`); an unknown or empty name is
/// an error naming it and listing the known ones.
pub fn parse_benchmark_list(list: &str) -> Result<Vec<Benchmark>, String> {
    list.split(',').map(Benchmark::from_str).collect()
}

/// Which engine `tierkv bench` drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    /// A TierKV database (the default).
    Tierkv,
    /// An engine that stores nothing: measures the harness's own cost.
    Null,
    /// An in-memory map behind a lock: a reference for the harness.
    Memory,
}

/// A design `tierkv bench` can run: one of TierKV's [`Design`]s, or RocksDB (which needs the
/// `rocksdb` cargo feature to run). Named as on the command line (`leveled`, `rocksdb`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DesignChoice {
    /// A TierKV design.
    Tierkv(Design),
    /// RocksDB through the `rocksdb` crate.
    Rocksdb,
}

impl DesignChoice {
    /// The CLI name.
    pub fn name(self) -> &'static str {
        match self {
            DesignChoice::Tierkv(d) => d.name(),
            DesignChoice::Rocksdb => "rocksdb",
        }
    }
}

impl fmt::Display for DesignChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for DesignChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if s == "rocksdb" {
            return Ok(DesignChoice::Rocksdb);
        }
        Design::from_str(s).map(DesignChoice::Tierkv).map_err(|_| {
            let known: Vec<_> = Design::ALL.iter().map(|d| d.name()).collect();
            format!(
                "unknown design {s:?}; known designs: {}, rocksdb",
                known.join(", ")
            )
        })
    }
}

impl Serialize for DesignChoice {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for DesignChoice {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        DesignChoice::from_str(&s).map_err(serde::de::Error::custom)
    }
}

/// The parts of one `--design` entry as written, before the design is looked up: `DESIGN`, or
/// a variant `LABEL=DESIGN+PATH=VALUE+PATH=VALUE...`.
#[derive(Clone, Debug, PartialEq)]
pub struct EntrySyntax {
    /// The name the entry is reported under: LABEL, or the design's name.
    pub label: String,
    /// The design's name.
    pub design: String,
    /// The variant's overrides, in order.
    pub overrides: Vec<OptionOverride>,
}

/// True for a label usable as a directory and file-name part: letters, digits, `.`, `_`, `-`
/// (not `.` or `..`), at most 64 characters.
fn valid_label(label: &str) -> bool {
    !label.is_empty()
        && label.len() <= 64
        && label != "."
        && label != ".."
        && label
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// Splits a `--design` entry into its label, design name and overrides (nothing is looked up,
/// so this works for designs the build does not have).
pub fn parse_entry_syntax(entry: &str) -> Result<EntrySyntax, String> {
    let entry = entry.trim();
    let mut parts = split_top_level(entry, '+').into_iter();
    let head = parts.next().unwrap_or_default().trim();
    let overrides = parts
        .map(|p| {
            p.trim()
                .parse::<OptionOverride>()
                .map_err(|e| format!("design entry {entry:?}: {e}"))
        })
        .collect::<Result<Vec<_>, String>>()?;
    let (label, design) = match head.split_once('=') {
        Some((l, d)) => (l.trim(), d.trim()),
        None if overrides.is_empty() => (head, head),
        None => {
            return Err(format!(
                "design entry {entry:?} has overrides but no label: write \
                 LABEL={head}+PATH=VALUE..."
            ))
        }
    };
    if design.is_empty() {
        return Err(format!("design entry {entry:?} names no design"));
    }
    if !valid_label(label) {
        return Err(format!(
            "design entry {entry:?}: label {label:?} must be 1-64 letters, digits, '.', '_' or \
             '-' (it names the design's database directory and pool file)"
        ));
    }
    Ok(EntrySyntax {
        label: label.to_string(),
        design: design.to_string(),
        overrides,
    })
}

/// One entry of `--design`: a design, or a variant of one (the design with option overrides,
/// reported under its own label).
#[derive(Clone, Debug, PartialEq)]
pub struct DesignEntry {
    /// The name in every report, the database directory and the pool file suffix: the
    /// design's name, or the variant's LABEL.
    pub label: String,
    /// The design run.
    pub design: DesignChoice,
    /// The variant's overrides, applied after `--set`.
    pub overrides: Vec<OptionOverride>,
}

impl DesignEntry {
    /// The plain entry of `design`.
    pub fn plain(design: DesignChoice) -> Self {
        DesignEntry {
            label: design.name().to_string(),
            design,
            overrides: Vec::new(),
        }
    }

    /// True for an entry that is more than a design's name.
    pub fn is_variant(&self) -> bool {
        !self.overrides.is_empty() || self.label != self.design.name()
    }
}

impl fmt::Display for DesignEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.is_variant() {
            return f.write_str(self.design.name());
        }
        write!(f, "{}={}", self.label, self.design)?;
        for o in &self.overrides {
            write!(f, "+{o}")?;
        }
        Ok(())
    }
}

impl FromStr for DesignEntry {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let syntax = parse_entry_syntax(s)?;
        let design = DesignChoice::from_str(&syntax.design).map_err(|e| {
            if syntax.label == syntax.design && syntax.overrides.is_empty() {
                e
            } else {
                format!("design entry {:?}: {e}", s.trim())
            }
        })?;
        Ok(DesignEntry {
            label: syntax.label,
            design,
            overrides: syntax.overrides,
        })
    }
}

/// The entries of `--design`, in order. Serialized as an array of the entries as written
/// (`["leveled", "l0-8=leveled+compaction.level0_compaction_trigger=8"]`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DesignList(pub Vec<DesignEntry>);

impl DesignList {
    /// The plain entries of `designs`.
    pub fn of(designs: &[DesignChoice]) -> Self {
        DesignList(designs.iter().map(|d| DesignEntry::plain(*d)).collect())
    }
}

impl std::ops::Deref for DesignList {
    type Target = Vec<DesignEntry>;
    fn deref(&self) -> &Vec<DesignEntry> {
        &self.0
    }
}

impl std::ops::DerefMut for DesignList {
    fn deref_mut(&mut self) -> &mut Vec<DesignEntry> {
        &mut self.0
    }
}

impl FromStr for DesignList {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s.trim().is_empty() {
            return Ok(DesignList::default());
        }
        split_top_level(s, ',')
            .into_iter()
            .map(|e| {
                if e.trim().is_empty() {
                    Err(format!("empty entry in the design list {s:?}"))
                } else {
                    e.parse()
                }
            })
            .collect::<Result<Vec<_>, String>>()
            .map(DesignList)
    }
}

impl Serialize for DesignList {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|e| e.to_string()))
    }
}

impl<'de> Deserialize<'de> for DesignList {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let entries = Vec::<String>::deserialize(d)?;
        entries
            .iter()
            .map(|e| e.parse().map_err(serde::de::Error::custom))
            .collect::<Result<Vec<_>, _>>()
            .map(DesignList)
    }
}

/// `--cache_size`'s default, db_bench's 8 MiB.
pub const DEFAULT_CACHE_SIZE: u64 = 8_388_608;

/// Bytes in the MB of `--ssd_write_mbps` and `--ssd_read_mbps`.
pub const MB: u64 = 1_000_000;

/// The largest bandwidth cap accepted, in MB/s (1 TB/s: no device is faster, and a typo
/// is caught).
pub const MAX_SSD_MBPS: u64 = 1_000_000;

/// True when this build includes the RocksDB engine (the `rocksdb` cargo feature).
pub const ROCKSDB_ENABLED: bool = cfg!(feature = "rocksdb");

fn default_sample_interval() -> u64 {
    1000
}

fn default_readwritepercent() -> u32 {
    90
}

/// The flags of `tierkv bench`.
#[derive(clap::Args, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchConfig {
    /// Comma-separated benchmarks, run in order on one database: fillseq, fillrandom,
    /// overwrite, readrandom, readseq, seekrandom, readwhilewriting, readrandomwriterandom
    /// (see --readwritepercent), updaterandom, deleterandom, seekrandomwhilewriting,
    /// multireadrandom (see --multiread_batch_size), flush, waitforcompaction, compact, stats,
    /// levelstats, sstables; the YCSB core workloads ycsb-load, ycsb-a, ycsb-b, ycsb-c, ycsb-d,
    /// ycsb-e, ycsb-f; and ycsb-run, the workload of a -P file. readreverse and mixgraph are
    /// refused (the reason is printed).
    #[arg(long, value_delimiter = ',', default_value = DEFAULT_BENCHMARKS)]
    pub benchmarks: Vec<Benchmark>,

    /// Number of keys, and of writes per thread for the fill benchmarks; the YCSB record count
    /// (ycsb-load inserts this many records in all, split between the threads).
    #[arg(long, default_value_t = 1_000_000)]
    pub num: u64,

    /// Reads (or seeks, or iterated entries, or readrandomwriterandom's gets and puts) per
    /// thread; -1 means --num. For the YCSB workloads: the operation count of all threads
    /// together (alias --ops).
    #[arg(long, alias = "ops", default_value_t = -1, allow_negative_numbers = true)]
    pub reads: i64,

    /// Key size in bytes.
    #[arg(long = "key_size", default_value_t = 16)]
    pub key_size: usize,

    /// Value size in bytes.
    #[arg(long = "value_size", default_value_t = 128)]
    pub value_size: usize,

    /// Threads running each benchmark (plus one writer for readwhilewriting).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,

    /// `next` calls after each seek of seekrandom.
    #[arg(long = "seek_nexts", default_value_t = 0)]
    pub seek_nexts: u64,

    /// fillseq as this many interleaved sequential streams: stream `s` owns key numbers
    /// `[s * num / streams, (s + 1) * num / streams)` and appends to them in order, the streams
    /// taking turns (many appenders, as time series per device). `--num` must be a multiple of
    /// it. 1 (the default) is db_bench's fillseq.
    #[arg(long, default_value_t = 1)]
    pub streams: u64,

    /// Open-loop rate: start operations at this many per second in all (spread evenly over the
    /// threads) instead of as fast as the engine answers; each operation's latency counts from
    /// when it was due, so queueing behind a stall shows in the percentiles. 0: closed loop.
    #[arg(long = "ops_per_sec", alias = "target", default_value_t = 0)]
    pub ops_per_sec: u64,

    /// Block compression, as db_bench's flag: only `none` (TierKV writes its blocks
    /// uncompressed, as the papers' evaluations configure their stores); any other codec is
    /// refused rather than ignored.
    #[arg(long = "compression_type", default_value = "none")]
    pub compression_type: String,

    /// Sync the write-ahead log on every write.
    #[arg(long, num_args = 0..=1, require_equals = true, default_value_t = false,
          default_missing_value = "true", value_parser = clap::builder::BoolishValueParser::new())]
    pub sync: bool,

    /// Database directory, used and kept. Default: a fresh temporary directory, removed at the
    /// end.
    #[arg(long)]
    pub db: Option<PathBuf>,

    /// Comma-separated designs, each run on a fresh database with the same benchmarks and
    /// seeds and compared in one table: TierKV designs (`tierkv designs` lists them) and
    /// rocksdb (with the `rocksdb` cargo feature). With several designs and --db, each gets
    /// `DIR/<design>`.
    ///
    /// An entry may also be a variant, LABEL=DESIGN+PATH=VALUE+PATH=VALUE...: DESIGN with
    /// those option overrides (as --set, applied after it), run and reported under the name
    /// LABEL (in the tables, the side-by-side ratios, the JSON report and the charts), with its
    /// own database directory (`DIR/<LABEL>`) and pool file (`FILE-<LABEL>`). Example:
    /// --design 'leveled,l0-8=leveled+compaction.level0_compaction_trigger=8'. LABEL is
    /// letters, digits, '.', '_' and '-'. For rocksdb, overrides reach the options RocksDB
    /// takes from TierKV's (compaction, block size, memtable count, open files).
    #[arg(long, default_value = "leveled", value_parser = DesignList::from_str)]
    pub design: DesignList,

    /// Sets one field of the engine's options by its serde path: PATH=VALUE, repeatable, e.g.
    /// --set compaction.level0_compaction_trigger=8 --set pm.wal_on_pm=true.
    ///
    /// PATH is the field names of the options the run header prints, joined by dots. VALUE is
    /// JSON (8, true, "text", null, {"write_ns":400}); other text is a string
    /// (pm.path=/dev/shm/pool). Applied after every other flag and the design's defaults, to
    /// every design; an unknown path or a value of the wrong type is an error. The header and
    /// the JSON report show the options as set.
    #[arg(long = "set", value_name = "PATH=VALUE", value_parser = OptionOverride::from_str)]
    #[serde(default)]
    pub set: Vec<OptionOverride>,

    /// readrandomwriterandom: the percentage of operations that are gets (the rest are puts),
    /// 0..=100, as in db_bench.
    #[arg(long = "readwritepercent", default_value_t = 90)]
    #[serde(default = "default_readwritepercent")]
    pub readwritepercent: u32,

    /// readrandomwriterandom: the percentage of operations that are puts (the put ratio of the
    /// NVLSM paper): --put_ratio=P is --readwritepercent=100-P.
    #[arg(long = "put_ratio", conflicts_with = "readwritepercent")]
    #[serde(default)]
    pub put_ratio: Option<u32>,

    /// YCSB request distribution: zipfian (scrambled, 0.99), latest, uniform. Default: the
    /// workload's own (zipfian; latest for ycsb-d).
    #[arg(long, value_enum)]
    #[serde(default)]
    pub distribution: Option<RequestDistribution>,

    /// Throughput (and stall time) sampling interval in milliseconds, 100..=60000.
    #[arg(long = "sample_interval_ms", default_value_t = 1000)]
    #[serde(default = "default_sample_interval")]
    pub sample_interval_ms: u64,

    /// Draw SVG charts into this directory: throughput over time (stalled time shaded),
    /// latency by percentile on a log tail axis (benchmarks of 10 operations or more), and
    /// amplification per design and tier.
    #[arg(long)]
    #[serde(default)]
    pub plot: Option<PathBuf>,

    /// Check every read: wraps the engine in a verifier that keeps the last value written to
    /// each key and fails the run when a get returns anything else (or a scan returns a value
    /// that does not belong to its key). Slower; meant for tests.
    #[arg(long, num_args = 0..=1, require_equals = true, default_value_t = false,
          default_missing_value = "true", value_parser = clap::builder::BoolishValueParser::new())]
    #[serde(default)]
    pub verify: bool,

    /// The engine to drive: tierkv, or null / memory to measure the harness itself.
    #[arg(long, value_enum, default_value_t = EngineKind::Tierkv)]
    pub engine: EngineKind,

    /// Write a JSON report to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,

    /// Base seed of the key generators (each thread of each benchmark derives its own).
    #[arg(long, default_value_t = 301)]
    pub seed: u64,

    /// Block cache size in bytes.
    #[arg(long = "cache_size", default_value_t = DEFAULT_CACHE_SIZE)]
    pub cache_size: u64,

    /// Memtable size in bytes.
    #[arg(long = "write_buffer_size", default_value_t = 67_108_864)]
    pub write_buffer_size: u64,

    /// Bloom filter bits per key (0 disables filters).
    #[arg(long = "bloom_bits", default_value_t = 10)]
    pub bloom_bits: u64,

    /// The LSM shape as db_bench spells it; each, when given, overrides the design's default
    /// (as `--set` does). Background threads in all: one flush thread, the rest compaction
    /// threads (at least one).
    #[arg(long = "max_background_jobs")]
    pub max_background_jobs: Option<usize>,
    /// Size at which a compaction output table is cut (`compaction.target_file_size`).
    #[arg(long = "target_file_size_base")]
    pub target_file_size_base: Option<u64>,
    /// Target size of L1 (`compaction.max_bytes_for_level_base`).
    #[arg(long = "max_bytes_for_level_base")]
    pub max_bytes_for_level_base: Option<u64>,
    /// Ratio between adjacent levels' target sizes (`compaction.level_size_multiplier`).
    #[arg(long = "max_bytes_for_level_multiplier")]
    pub max_bytes_for_level_multiplier: Option<u64>,
    /// L0 files that trigger an L0 -> L1 compaction.
    #[arg(long = "level0_file_num_compaction_trigger")]
    pub level0_file_num_compaction_trigger: Option<usize>,
    /// L0 files at which each write is delayed.
    #[arg(long = "level0_slowdown_writes_trigger")]
    pub level0_slowdown_writes_trigger: Option<usize>,
    /// L0 files at which writes stop until compaction catches up.
    #[arg(long = "level0_stop_writes_trigger")]
    pub level0_stop_writes_trigger: Option<usize>,
    /// Levels, L0 included.
    #[arg(long = "num_levels")]
    pub num_levels: Option<usize>,
    /// Table block size in bytes.
    #[arg(long = "block_size")]
    pub block_size: Option<usize>,
    /// Write buffers (the active one and those waiting for their flush).
    #[arg(long = "max_write_buffer_number")]
    pub max_write_buffer_number: Option<usize>,

    /// The PM pool file of designs that use PM (default: `pm.pool` inside the database
    /// directory). Put it on /dev/shm for the papers' emulation, or on a DAX file system for real
    /// PM. A fresh run (no --use_existing_db) replaces the file. With several designs, each gets
    /// `FILE-<design>`.
    #[arg(long = "pm_path")]
    pub pm_path: Option<PathBuf>,

    /// PM pool size in bytes (a sparse file; it must hold the WAL and every L0 table).
    #[arg(long = "pm_size", default_value_t = 8 << 30)]
    pub pm_size: u64,

    /// PM durability mode: emulated (flush + fence), msync (also msync: power-fail durable),
    /// dax (MAP_SYNC on a DAX file system).
    #[arg(long = "pm_mode", default_value = "emulated", value_parser = parse_pm_mode)]
    pub pm_mode: tierkv::pm::DurabilityMode,

    /// Emulated PM latency preset: dram (none), nvdimm, pcm (100 ns read, 400 ns write per
    /// line), slmdb (500 ns write per line).
    #[arg(long = "pm_latency", default_value = "dram", value_parser = parse_pm_latency)]
    pub pm_latency: tierkv::pm::LatencyModel,

    /// For the leveled design: put its WAL on PM (isolates the log's effect).
    #[arg(long = "wal_on_pm", num_args = 0..=1, require_equals = true,
          default_value_t = false, default_missing_value = "true",
          value_parser = clap::builder::BoolishValueParser::new())]
    pub wal_on_pm: bool,

    /// SSD model: cap on SSD write bandwidth in MB/s (10^6 bytes per second), 0 = off. Every
    /// byte TierKV writes to the SSD tier (WAL, flushes, compactions, manifest) waits for a
    /// token bucket; the PM pool is not capped. For --design rocksdb: RocksDB's rate limiter,
    /// which caps flush and compaction writes but not the WAL.
    #[arg(long = "ssd_write_mbps", default_value_t = 0)]
    #[serde(default)]
    pub ssd_write_mbps: u64,

    /// SSD model: cap on SSD read bandwidth in MB/s, 0 = off (not applied to RocksDB).
    #[arg(long = "ssd_read_mbps", default_value_t = 0)]
    #[serde(default)]
    pub ssd_read_mbps: u64,

    /// Read SSD files with O_DIRECT, bypassing the page cache (db_bench's flag). Refused where
    /// there is no device: on tmpfs such as /dev/shm, or a file system without O_DIRECT.
    #[arg(long = "use_direct_reads", num_args = 0..=1, require_equals = true,
          default_value_t = false, default_missing_value = "true",
          value_parser = clap::builder::BoolishValueParser::new())]
    #[serde(default)]
    pub use_direct_reads: bool,

    /// Reuse the existing database in --db instead of creating one; fillseq and fillrandom are
    /// skipped.
    #[arg(long = "use_existing_db", num_args = 0..=1, require_equals = true,
          default_value_t = false, default_missing_value = "true",
          value_parser = clap::builder::BoolishValueParser::new())]
    pub use_existing_db: bool,

    /// Writes skip the write-ahead log (db_bench's --disable_wal): durable once their memtable
    /// is flushed (at the latest when the database closes), lost by a crash before that. No
    /// effect on designs whose memtable is itself persistent (leveled-pmtable, slmdb).
    /// Refused with --sync.
    #[arg(long = "disable_wal", num_args = 0..=1, require_equals = true, default_value_t = false,
          default_missing_value = "true", value_parser = clap::builder::BoolishValueParser::new())]
    #[serde(default)]
    pub disable_wal: bool,

    /// No automatic compactions (db_bench's --disable_auto_compactions): flushes go on,
    /// `compact` and waitforcompaction still work, and the L0 file-count stalls are off (as
    /// in RocksDB). Refused for designs whose PM stage only compaction can drain (nvlsm*,
    /// trianglekv, matrixkv).
    #[arg(long = "disable_auto_compactions", num_args = 0..=1, require_equals = true,
          default_value_t = false, default_missing_value = "true",
          value_parser = clap::builder::BoolishValueParser::new())]
    #[serde(default)]
    pub disable_auto_compactions: bool,

    /// Print the full engine options (JSON) in the run header; without it the header names
    /// only the options that differ from the design's defaults.
    #[arg(long, short = 'v', num_args = 0..=1, require_equals = true, default_value_t = false,
          default_missing_value = "true", value_parser = clap::builder::BoolishValueParser::new())]
    #[serde(default)]
    pub verbose: bool,

    /// Print the engine's complete figures after every benchmark (db_bench's --statistics),
    /// not only the one-line summary of what the benchmark made the engine do.
    #[arg(long, num_args = 0..=1, require_equals = true, default_value_t = false,
          default_missing_value = "true", value_parser = clap::builder::BoolishValueParser::new())]
    #[serde(default)]
    pub statistics: bool,

    /// Print each benchmark's latency histogram, bucket by bucket (db_bench's --histogram).
    #[arg(long, num_args = 0..=1, require_equals = true, default_value_t = false,
          default_missing_value = "true", value_parser = clap::builder::BoolishValueParser::new())]
    #[serde(default)]
    pub histogram: bool,

    /// Run each benchmark of operations for this many seconds instead of --num / --reads
    /// operations (0: counts decide, as in db_bench). fillseq goes on past --num keys;
    /// readseq still stops at the end of the database.
    #[arg(long, default_value_t = 0)]
    #[serde(default)]
    pub duration: u64,

    /// Every this many seconds, print a live line (throughput and stall time of the interval)
    /// to stderr and append a row to --report_file (0: off).
    #[arg(long = "report_interval_seconds", default_value_t = 0)]
    #[serde(default)]
    pub report_interval_seconds: u64,

    /// The CSV file of --report_interval_seconds (db_bench's default name).
    #[arg(long = "report_file", default_value = "report.csv")]
    #[serde(default = "default_report_file")]
    pub report_file: PathBuf,

    /// Writes per write batch (fills, overwrite, deleterandom): each batch is one atomic
    /// engine write and one timed operation, as in db_bench.
    #[arg(long = "batch_size", default_value_t = 1)]
    #[serde(default = "default_batch_size")]
    pub batch_size: u64,

    /// Keys per multiget of multireadrandom.
    #[arg(long = "multiread_batch_size", default_value_t = 1)]
    #[serde(default = "default_batch_size")]
    pub multiread_batch_size: u64,

    /// Cap on the key + value bytes written per second, all writer threads together (0: no
    /// cap): the fill benchmarks, overwrite, updaterandom, deleterandom and the writer of the
    /// *whilewriting benchmarks are paced to it (db_bench's --benchmark_write_rate_limit).
    #[arg(long = "benchmark_write_rate_limit", default_value_t = 0)]
    #[serde(default)]
    pub benchmark_write_rate_limit: u64,

    /// How YCSB updates (and read-modify-writes) write: merge (read the record, a missing one
    /// being a failed operation, overwrite one of its fields, all with writeallfields=true,
    /// and put it back, as YCSB's bindings do) or blind (put a whole new value unread).
    #[arg(long = "ycsb_update", value_enum, default_value_t = crate::ycsb::UpdateMode::Merge)]
    #[serde(default)]
    pub ycsb_update: crate::ycsb::UpdateMode,

    /// YCSB workload property file (YCSB's `-P workloads/workloada`): recordcount,
    /// operationcount, the operation proportions, requestdistribution, zipfianconstant,
    /// fieldcount x fieldlength (the value size), maxscanlength, insertorder. Its transaction
    /// phase runs as the `ycsb-run` benchmark, its load as `ycsb-load`.
    #[arg(short = 'P', long = "workload", value_name = "FILE")]
    #[serde(default)]
    pub workload: Option<PathBuf>,

    /// A YCSB property NAME=VALUE that overrides the workload file's (YCSB's `-p`), repeatable.
    #[arg(short = 'p', long = "property", value_name = "NAME=VALUE")]
    #[serde(default)]
    pub property: Vec<String>,

    /// The workload `-P` and `-p` describe, once [`resolve`](BenchConfig::resolve) read it.
    #[arg(skip)]
    #[serde(default)]
    pub ycsb: Option<crate::ycsb_workload::YcsbWorkload>,
}

fn default_report_file() -> PathBuf {
    PathBuf::from("report.csv")
}

fn default_batch_size() -> u64 {
    1
}

impl BenchConfig {
    /// Reads per thread: `--reads`, or `--num` when it is negative.
    pub fn reads_per_thread(&self) -> u64 {
        u64::try_from(self.reads).unwrap_or(self.num)
    }

    /// The percentage of readrandomwriterandom's operations that are gets: 100 - --put_ratio,
    /// else --readwritepercent.
    pub fn read_percent(&self) -> u32 {
        match self.put_ratio {
            Some(p) => 100u32.saturating_sub(p),
            None => self.readwritepercent,
        }
    }

    /// Reads the YCSB workload of `-P` / `-p` (when given) and applies its record count,
    /// operation count, value size (fieldcount x fieldlength), thread count and target rate
    /// over the flags', as YCSB's command line does with its property file. Idempotent.
    pub fn resolve(&mut self) -> Result<(), String> {
        if self.workload.is_none() && self.property.is_empty() {
            return Ok(());
        }
        let w = crate::ycsb_workload::YcsbWorkload::load(self.workload.as_deref(), &self.property)?;
        if let Some(n) = w.record_count {
            self.num = n;
        }
        if let Some(n) = w.operation_count {
            self.reads =
                i64::try_from(n).map_err(|_| format!("operationcount={n} is too large"))?;
        }
        if let Some(t) = w.threads {
            self.threads = t;
        }
        if let Some(t) = w.target {
            self.ops_per_sec = t;
        }
        self.value_size = w.value_size;
        self.ycsb = Some(w);
        Ok(())
    }

    /// The operation mix `bench` runs: a core workload's, or the `-P` workload's for
    /// `ycsb-run` (None for other benchmarks, and for `ycsb-run` before [`resolve`](Self::resolve)).
    pub fn mix_for(&self, bench: Benchmark) -> Option<YcsbMix> {
        match bench {
            Benchmark::YcsbRun => self.ycsb.as_ref().map(|w| w.mix),
            b => b.ycsb_mix(),
        }
    }

    /// The fields of a YCSB record and whether an update writes them all: the `-P`
    /// workload's `fieldcount` and `writeallfields`, else YCSB's defaults (10, false).
    pub fn ycsb_fields(&self) -> (u64, bool) {
        self.ycsb
            .as_ref()
            .map_or((crate::ycsb::FIELD_COUNT, false), |w| {
                (w.field_count, w.write_all_fields)
            })
    }

    /// Whether `ycsb-load` inserts records in key order (`-P` workload with
    /// `insertorder=ordered`) rather than in a seeded random order.
    pub fn ordered_inserts(&self) -> bool {
        self.ycsb
            .as_ref()
            .is_some_and(|w| w.insert_order == crate::ycsb_workload::InsertOrder::Ordered)
    }

    /// Checks the flags together; the error says which flag is wrong.
    pub fn validate(&self) -> Result<(), String> {
        if self.benchmarks.contains(&Benchmark::YcsbRun) && self.ycsb.is_none() {
            return Err(
                "benchmark ycsb-run runs the workload of a YCSB property file: give -P FILE \
                 (e.g. -P workloads/workloada) or -p NAME=VALUE properties"
                    .into(),
            );
        }
        if self.sync && self.disable_wal {
            return Err(
                "--sync and --disable_wal together: a write that skips the WAL has no log to \
                 sync"
                    .into(),
            );
        }
        if self.disable_auto_compactions {
            for d in self.tierkv_designs() {
                if let Some(why) = d.needs_auto_compactions() {
                    return Err(format!(
                        "--disable_auto_compactions is refused for design {d}: {why}"
                    ));
                }
            }
        }
        if self.batch_size == 0 || self.batch_size > 1_000_000 {
            return Err(format!(
                "--batch_size={} must be in 1..=1000000",
                self.batch_size
            ));
        }
        if self.multiread_batch_size == 0 || self.multiread_batch_size > 1_000_000 {
            return Err(format!(
                "--multiread_batch_size={} must be in 1..=1000000",
                self.multiread_batch_size
            ));
        }
        if self.report_interval_seconds > 0 {
            if let Some(parent) = self
                .report_file
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
            {
                if !parent.is_dir() {
                    return Err(format!(
                        "--report_file={}: directory {} does not exist",
                        self.report_file.display(),
                        parent.display()
                    ));
                }
            }
        }
        if self.benchmarks.is_empty() {
            return Err("--benchmarks is empty".into());
        }
        if self.num == 0 {
            return Err("--num must be at least 1".into());
        }
        if self.streams == 0 || !self.num.is_multiple_of(self.streams) {
            return Err(format!(
                "--streams={} must be at least 1 and divide --num={}",
                self.streams, self.num
            ));
        }
        if self.reads < -1 {
            return Err(format!(
                "--reads={} must be -1 (= --num) or >= 0",
                self.reads
            ));
        }
        if self.key_size == 0 || self.key_size > (1 << 24) {
            return Err(format!(
                "--key_size={} must be in 1..=16777216",
                self.key_size
            ));
        }
        if self.key_size < 8 {
            // Keys are the key number's low `key_size` bytes: fewer distinct keys than --num
            // would silently overwrite instead of filling.
            let space = 1u64 << (8 * self.key_size);
            if self.num > space {
                return Err(format!(
                    "--key_size={} makes at most {space} distinct keys, fewer than --num={}: \
                     use --key_size=8 or more (keys are the key number's big-endian bytes)",
                    self.key_size, self.num
                ));
            }
        }
        if !matches!(
            self.compression_type.as_str(),
            "none" | "kNoCompression" | "no"
        ) {
            return Err(format!(
                "--compression_type={}: TierKV writes blocks uncompressed and has no codec \
                 built in; use --compression_type=none (the setting of every paper's evaluation)",
                self.compression_type
            ));
        }
        if self.value_size > (1 << 30) {
            return Err(format!(
                "--value_size={} must be at most 1 GiB",
                self.value_size
            ));
        }
        if self.threads == 0 || self.threads > 1024 {
            return Err(format!("--threads={} must be in 1..=1024", self.threads));
        }
        if self.use_existing_db && self.db.is_none() {
            return Err("--use_existing_db needs --db=DIR".into());
        }
        if self.readwritepercent > 100 {
            return Err(format!(
                "--readwritepercent={} must be in 0..=100",
                self.readwritepercent
            ));
        }
        if let Some(p) = self.put_ratio.filter(|&p| p > 100) {
            return Err(format!("--put_ratio={p} must be in 0..=100"));
        }
        if self.design.is_empty() {
            return Err("--design is empty".into());
        }
        for (i, d) in self.design.iter().enumerate() {
            if self.design[..i].iter().any(|o| o.label == d.label) {
                return Err(format!("--design names {} twice", d.label));
            }
        }
        if self
            .design
            .iter()
            .any(|d| d.design == DesignChoice::Rocksdb)
            && !ROCKSDB_ENABLED
            && self.engine == EngineKind::Tierkv
        {
            return Err(
                "--design=rocksdb needs a build with the `rocksdb` cargo feature \
                        (cargo build --release -p tierkv-bench --features rocksdb)"
                    .into(),
            );
        }
        if !(100..=60_000).contains(&self.sample_interval_ms) {
            return Err(format!(
                "--sample_interval_ms={} must be in 100..=60000",
                self.sample_interval_ms
            ));
        }
        for (flag, mbps) in [
            ("--ssd_write_mbps", self.ssd_write_mbps),
            ("--ssd_read_mbps", self.ssd_read_mbps),
        ] {
            if mbps > MAX_SSD_MBPS {
                return Err(format!(
                    "{flag}={mbps} must be 0 (off) or 1..={MAX_SSD_MBPS} MB/s"
                ));
            }
        }
        for entry in self.design.iter() {
            let o = self.entry_options(entry)?;
            o.validate().map_err(|e| {
                if entry.is_variant() {
                    format!("design {}: {e}", entry.label)
                } else {
                    e.to_string()
                }
            })?;
        }
        Ok(())
    }

    /// The TierKV designs among `--design` (a design once per entry that runs it).
    pub fn tierkv_designs(&self) -> impl Iterator<Item = Design> + '_ {
        self.design.iter().filter_map(|d| match d.design {
            DesignChoice::Tierkv(d) => Some(d),
            DesignChoice::Rocksdb => None,
        })
    }

    /// The engine options of the first TierKV entry of `--design` (leveled when there is
    /// none), with every override.
    pub fn options(&self) -> Options {
        let first = self
            .design
            .iter()
            .find(|e| matches!(e.design, DesignChoice::Tierkv(_)));
        match first {
            Some(e) => self
                .entry_options(e)
                .unwrap_or_else(|_| self.base_options(self.tierkv_design_of(e), &e.label)),
            None => self.options_for(Design::LEVELED),
        }
    }

    /// The YCSB request distribution of a workload: `--distribution`, else the workload's own.
    pub fn distribution_for(&self, mix: &YcsbMix) -> RequestDistribution {
        self.distribution.unwrap_or(mix.distribution)
    }

    /// The TierKV design whose options an entry runs with (RocksDB takes leveled's).
    fn tierkv_design_of(&self, entry: &DesignEntry) -> Design {
        match entry.design {
            DesignChoice::Tierkv(d) => d,
            DesignChoice::Rocksdb => Design::LEVELED,
        }
    }

    /// The options the flags select for `design` and its defaults, before any override; the
    /// pool file is the one of the entry labelled `label`.
    fn base_options(&self, design: Design, label: &str) -> Options {
        let mut o = Options {
            design,
            create_if_missing: !self.use_existing_db,
            error_if_exists: !self.use_existing_db,
            write_buffer_size: usize::try_from(self.write_buffer_size).unwrap_or(usize::MAX),
            block_cache_bytes: usize::try_from(self.cache_size).unwrap_or(usize::MAX),
            ..Options::default()
        };
        o.table.bloom_bits_per_key = usize::try_from(self.bloom_bits).unwrap_or(usize::MAX);
        o.pm.path = self.pm_path_for(label);
        o.pm.size_bytes = self.pm_size;
        o.pm.mode = self.pm_mode;
        o.pm.latency = self.pm_latency;
        o.pm.wal_on_pm = self.wal_on_pm;
        o.ssd.write_bytes_per_sec = self.ssd_write_mbps * MB;
        o.ssd.read_bytes_per_sec = self.ssd_read_mbps * MB;
        o.ssd.direct_reads = self.use_direct_reads;
        // Benchmark keys and values must be accepted whatever their configured sizes.
        o.max_key_size = o.max_key_size.max(self.key_size);
        o.max_value_size = o.max_value_size.max(self.value_size);
        let mut o = design.options(o);
        self.apply_shape_flags(&mut o);
        o
    }

    /// The db_bench LSM-shape flags given, over the design's defaults.
    fn apply_shape_flags(&self, o: &mut Options) {
        let c = &mut o.compaction;
        if let Some(jobs) = self.max_background_jobs {
            c.background_compactions = jobs.saturating_sub(1).max(1);
        }
        let set = |to: &mut u64, from: Option<u64>| *to = from.unwrap_or(*to);
        set(&mut c.target_file_size, self.target_file_size_base);
        set(
            &mut c.max_bytes_for_level_base,
            self.max_bytes_for_level_base,
        );
        set(
            &mut c.level_size_multiplier,
            self.max_bytes_for_level_multiplier,
        );
        let set = |to: &mut usize, from: Option<usize>| *to = from.unwrap_or(*to);
        set(
            &mut c.level0_compaction_trigger,
            self.level0_file_num_compaction_trigger,
        );
        set(
            &mut c.level0_slowdown_trigger,
            self.level0_slowdown_writes_trigger,
        );
        set(&mut c.level0_stop_trigger, self.level0_stop_writes_trigger);
        set(&mut c.num_levels, self.num_levels);
        set(&mut o.table.block_size, self.block_size);
        set(&mut o.max_write_buffer_number, self.max_write_buffer_number);
        if self.disable_auto_compactions {
            o.compaction.disable_auto_compactions = true;
        }
    }

    /// The engine options these flags select for `design`: the flags, the design's defaults,
    /// then `--set` (everything else at its default). [`validate`](Self::validate) refuses
    /// overrides that do not apply; unchecked, they are left out here.
    pub fn options_for(&self, design: Design) -> Options {
        let base = self.base_options(design, design.name());
        apply_overrides(&base, &self.set).unwrap_or(base)
    }

    /// The engine options of one `--design` entry: the flags, the design's defaults, `--set`,
    /// then the variant's own overrides. For a rocksdb entry: the leveled options RocksDB's
    /// are taken from. The error names the override that does not apply.
    pub fn entry_options(&self, entry: &DesignEntry) -> Result<Options, String> {
        let base = self.base_options(self.tierkv_design_of(entry), &entry.label);
        let o = apply_overrides(&base, &self.set).map_err(|e| format!("--set {e}"))?;
        let mut o = apply_overrides(&o, &entry.overrides)
            .map_err(|e| format!("design {}: override {e}", entry.label))?;
        // A design that keeps nothing in PM under these options is not given a pool path: it
        // would never open it, and the header would show a flag with no effect.
        if !o.design.uses_pm(&o) {
            o.pm.path = None;
        }
        Ok(o)
    }

    /// The flags of one entry run alone, for engines configured from the flags (RocksDB): its
    /// overrides are appended to `--set`.
    pub fn entry_config(&self, entry: &DesignEntry) -> BenchConfig {
        let mut c = self.clone();
        c.set.extend(entry.overrides.iter().cloned());
        c
    }

    /// The pool file of the entry labelled `label`: `--pm_path`, suffixed with the label when
    /// several designs run.
    pub fn pm_path_for(&self, label: &str) -> Option<PathBuf> {
        let p = self.pm_path.as_ref()?;
        if self.design.len() > 1 {
            let mut name = p.file_name().unwrap_or_default().to_os_string();
            name.push(format!("-{label}"));
            Some(p.with_file_name(name))
        } else {
            Some(p.clone())
        }
    }

    /// The write options these flags select.
    pub fn write_options(&self) -> WriteOptions {
        WriteOptions {
            sync: self.sync,
            disable_wal: self.disable_wal,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct Wrapper {
        #[command(flatten)]
        config: BenchConfig,
    }

    /// Parses `bench` flags as the CLI would.
    pub(crate) fn parse(args: &[&str]) -> Result<BenchConfig, clap::Error> {
        Wrapper::try_parse_from(std::iter::once("bench").chain(args.iter().copied()))
            .map(|w| w.config)
    }

    #[test]
    fn defaults_are_db_bench_defaults() {
        let c = parse(&[]).unwrap();
        assert_eq!(
            c.benchmarks,
            parse_benchmark_list(DEFAULT_BENCHMARKS).unwrap()
        );
        assert_eq!(c.num, 1_000_000);
        assert_eq!(c.reads, -1);
        assert_eq!(c.reads_per_thread(), 1_000_000);
        assert_eq!(
            (c.key_size, c.value_size, c.threads, c.seek_nexts),
            (16, 128, 1, 0)
        );
        assert!(!c.sync && !c.use_existing_db);
        assert_eq!(c.db, None);
        assert_eq!(c.json, None);
        assert_eq!(
            c.design,
            DesignList::of(&[DesignChoice::Tierkv(Design::LEVELED)])
        );
        assert_eq!(c.distribution, None);
        assert_eq!(c.sample_interval_ms, 1000);
        assert_eq!(c.plot, None);
        assert!(!c.verify);
        assert_eq!(c.engine, EngineKind::Tierkv);
        assert_eq!(c.cache_size, 8_388_608);
        assert_eq!(c.write_buffer_size, 67_108_864);
        assert_eq!(c.bloom_bits, 10);
        assert_eq!((c.ssd_write_mbps, c.ssd_read_mbps), (0, 0));
        assert!(!c.use_direct_reads);
        c.validate().unwrap();
        let o = c.options();
        assert!(!o.ssd.is_on());
        assert_eq!(o.block_cache_bytes, 8_388_608);
        assert_eq!(o.write_buffer_size, 67_108_864);
        assert_eq!(o.table.bloom_bits_per_key, 10);
        assert!(o.create_if_missing);
    }

    #[test]
    fn parses_db_bench_style_flags() {
        let c = parse(&[
            "--benchmarks=fillseq,readrandom",
            "--num=1000",
            "--key_size=20",
            "--value_size=100",
            "--reads=50",
            "--threads=4",
            "--seek_nexts=10",
            "--sync",
            "--db=/tmp/x",
            "--design=leveled",
            "--json=/tmp/r.json",
            "--seed=7",
            "--cache_size=1048576",
            "--write_buffer_size=4194304",
            "--bloom_bits=0",
        ])
        .unwrap();
        assert_eq!(
            c.benchmarks,
            vec![Benchmark::Fillseq, Benchmark::Readrandom]
        );
        assert_eq!(c.num, 1000);
        assert_eq!(c.key_size, 20);
        assert_eq!(c.value_size, 100);
        assert_eq!(c.reads_per_thread(), 50);
        assert_eq!(c.threads, 4);
        assert_eq!(c.seek_nexts, 10);
        assert!(c.sync);
        assert_eq!(c.db, Some(PathBuf::from("/tmp/x")));
        assert_eq!(c.json, Some(PathBuf::from("/tmp/r.json")));
        assert_eq!(c.seed, 7);
        let o = c.options();
        assert_eq!(o.block_cache_bytes, 1 << 20);
        assert_eq!(o.write_buffer_size, 4 << 20);
        assert_eq!(o.table.bloom_bits_per_key, 0);
        assert!(c.write_options().sync);

        // Space-separated values and gflags-style booleans work too.
        let c = parse(&[
            "--num",
            "5",
            "--sync=false",
            "--use_existing_db=1",
            "--db",
            "d",
        ])
        .unwrap();
        assert_eq!(c.num, 5);
        assert!(!c.sync);
        assert!(c.use_existing_db);
        assert!(!c.options().create_if_missing);
        c.validate().unwrap();
        assert_eq!(parse(&["--engine=null"]).unwrap().engine, EngineKind::Null);
        let c = parse(&["--sync=0", "--use_existing_db"]).unwrap();
        assert!(!c.sync && c.use_existing_db);
        assert!(c.validate().unwrap_err().contains("--db"));
    }

    #[test]
    fn parses_ycsb_and_design_flags() {
        let c = parse(&[
            "--benchmarks=ycsb-load,ycsb-a,ycsb-b,ycsb-c,ycsb-d,ycsb-e,ycsb-f",
            "--ops=500",
            "--distribution=uniform",
            "--sample_interval_ms=100",
            "--design=leveled,rocksdb",
            "--plot=/tmp/p",
            "--verify",
        ])
        .unwrap();
        assert_eq!(c.benchmarks.len(), 7);
        assert!(c.benchmarks.iter().all(|b| b.is_ycsb()));
        assert_eq!(c.benchmarks[1].ycsb_mix(), Some(YcsbMix::A));
        assert_eq!(c.reads_per_thread(), 500);
        assert_eq!(c.distribution, Some(RequestDistribution::Uniform));
        assert_eq!(
            c.distribution_for(&YcsbMix::D),
            RequestDistribution::Uniform
        );
        assert_eq!(
            parse(&[]).unwrap().distribution_for(&YcsbMix::D),
            RequestDistribution::Latest
        );
        assert_eq!(c.sample_interval_ms, 100);
        assert_eq!(
            c.design,
            DesignList::of(&[DesignChoice::Tierkv(Design::LEVELED), DesignChoice::Rocksdb])
        );
        assert_eq!(c.plot, Some(PathBuf::from("/tmp/p")));
        assert!(c.verify);
        if !ROCKSDB_ENABLED {
            assert!(c
                .validate()
                .unwrap_err()
                .contains("`rocksdb` cargo feature"));
        }
        // Every design of this build parses by name, and names are checked.
        for d in Design::ALL {
            let c = parse(&[&format!("--design={}", d.name())]).unwrap();
            assert_eq!(c.design, DesignList::of(&[DesignChoice::Tierkv(*d)]));
        }
        let err = parse(&["--design=leveled,nosuch"]).unwrap_err().to_string();
        assert!(err.contains("unknown design \"nosuch\""), "{err}");
        assert!(err.contains("rocksdb"), "{err}");
        let c = parse(&["--design=leveled,leveled"]).unwrap();
        assert!(c.validate().unwrap_err().contains("twice"));
        let c = parse(&["--sample_interval_ms=50"]).unwrap();
        assert!(c.validate().unwrap_err().contains("--sample_interval_ms"));
        // Serialised with their CLI names.
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(v["design"], serde_json::json!(["leveled"]));
        assert_eq!(
            serde_json::to_value(Benchmark::YcsbLoad).unwrap(),
            "ycsb-load"
        );
    }

    #[test]
    fn rejects_unknown_benchmarks_clearly() {
        let err = parse_benchmark_list("fillseq,fillrandon").unwrap_err();
        assert!(err.contains("unknown benchmark \"fillrandon\""), "{err}");
        assert!(
            err.contains("known benchmarks: fillseq, fillrandom"),
            "{err}"
        );
        assert!(parse_benchmark_list("").is_err());
        assert!(parse_benchmark_list("readseq,,readrandom").is_err());
        assert_eq!(
            parse_benchmark_list("readwhilewriting, seekrandom").unwrap(),
            vec![Benchmark::Readwhilewriting, Benchmark::Seekrandom]
        );
        // Through clap too.
        let err = parse(&["--benchmarks=fillseq,bogus"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown benchmark \"bogus\""), "{err}");
        assert!(parse(&["--design=btree"])
            .unwrap_err()
            .to_string()
            .contains("unknown design"));
        assert!(parse(&["--num=-5"]).is_err());
        assert!(parse(&["--sync=maybe"]).is_err());
    }

    #[test]
    fn validate_rejects_bad_combinations() {
        let ok = parse(&["--num=10"]).unwrap();
        ok.validate().unwrap();
        let bad = |f: &dyn Fn(&mut BenchConfig)| {
            let mut c = ok.clone();
            f(&mut c);
            c.validate().unwrap_err()
        };
        assert!(bad(&|c| c.num = 0).contains("--num"));
        assert!(bad(&|c| c.reads = -2).contains("--reads"));
        assert!(bad(&|c| c.streams = 0).contains("--streams"));
        assert!(bad(&|c| c.streams = 3).contains("divide --num=10"));
        assert!(bad(&|c| c.key_size = 0).contains("--key_size"));
        // One byte holds 256 keys: 257 of them would silently overwrite.
        let key_space = bad(&|c| {
            c.key_size = 1;
            c.num = 257;
        });
        assert!(
            key_space.contains("at most 256 distinct keys"),
            "{key_space}"
        );
        let mut fits = ok.clone();
        (fits.key_size, fits.num) = (1, 256);
        fits.validate().unwrap();
        assert!(bad(&|c| c.compression_type = "snappy".into()).contains("--compression_type"));
        assert!(bad(&|c| c.threads = 0).contains("--threads"));
        assert!(bad(&|c| c.benchmarks.clear()).contains("--benchmarks"));
        assert!(bad(&|c| c.write_buffer_size = 10).contains("write_buffer_size"));
        assert!(bad(&|c| c.bloom_bits = 100).contains("bloom_bits_per_key"));
        assert!(bad(&|c| c.ssd_write_mbps = 2_000_000).contains("--ssd_write_mbps"));
        assert!(bad(&|c| c.ssd_read_mbps = MAX_SSD_MBPS + 1).contains("--ssd_read_mbps"));
    }

    /// db_bench's LSM-shape flags set the engine's options over the design's defaults.
    #[test]
    fn db_bench_shape_flags_set_the_options() {
        let c = parse(&[
            "--max_background_jobs=4",
            "--target_file_size_base=2097152",
            "--max_bytes_for_level_base=10485760",
            "--max_bytes_for_level_multiplier=8",
            "--level0_file_num_compaction_trigger=2",
            "--level0_slowdown_writes_trigger=6",
            "--level0_stop_writes_trigger=9",
            "--num_levels=5",
            "--block_size=8192",
            "--max_write_buffer_number=3",
        ])
        .unwrap();
        c.validate().unwrap();
        for design in [Design::LEVELED, Design::TRIANGLEKV] {
            let o = c.options_for(design);
            let k = &o.compaction;
            assert_eq!(k.background_compactions, 3, "{design}");
            assert_eq!(
                (k.target_file_size, k.max_bytes_for_level_base),
                (2 << 20, 10 << 20)
            );
            assert_eq!(k.level_size_multiplier, 8);
            assert_eq!(
                (
                    k.level0_compaction_trigger,
                    k.level0_slowdown_trigger,
                    k.level0_stop_trigger
                ),
                (2, 6, 9)
            );
            assert_eq!((k.num_levels, o.table.block_size), (5, 8192));
            assert_eq!(o.max_write_buffer_number, 3);
        }
        // Not given: the design's default stays.
        let plain = parse(&[]).unwrap();
        assert_eq!(
            plain
                .options_for(Design::TRIANGLEKV)
                .compaction
                .target_file_size,
            Design::TRIANGLEKV
                .options(Options::default())
                .compaction
                .target_file_size
        );
        let bad = parse(&["--num_levels=0"]).unwrap();
        assert!(bad.validate().is_err());
    }

    #[test]
    fn ssd_model_flags_set_the_options() {
        let c = parse(&[
            "--ssd_write_mbps=50",
            "--ssd_read_mbps",
            "200",
            "--use_direct_reads",
        ])
        .unwrap();
        c.validate().unwrap();
        assert_eq!((c.ssd_write_mbps, c.ssd_read_mbps), (50, 200));
        assert!(c.use_direct_reads);
        let o = c.options();
        assert_eq!(o.ssd.write_bytes_per_sec, 50_000_000);
        assert_eq!(o.ssd.read_bytes_per_sec, 200_000_000);
        assert!(o.ssd.direct_reads);
        for d in Design::ALL {
            assert_eq!(c.options_for(*d).ssd, o.ssd);
        }
        // Recorded with the options and with the flags.
        let v = serde_json::to_value(&o).unwrap();
        assert_eq!(v["ssd"]["write_bytes_per_sec"], 50_000_000);
        assert_eq!(v["ssd"]["direct_reads"], true);
        let f = serde_json::to_value(&c).unwrap();
        assert_eq!(f["ssd_write_mbps"], 50);
        assert_eq!(f["use_direct_reads"], true);
        // Flags of a report written before they existed read back as off.
        let mut old = f.clone();
        for k in ["ssd_write_mbps", "ssd_read_mbps", "use_direct_reads"] {
            old.as_object_mut().unwrap().remove(k);
        }
        let back: BenchConfig = serde_json::from_value(old).unwrap();
        assert!(!back.options().ssd.is_on());
        assert!(
            !parse(&["--use_direct_reads=false"])
                .unwrap()
                .use_direct_reads
        );
        assert!(parse(&["--ssd_write_mbps=-1"]).is_err());
    }

    #[test]
    fn design_variants_and_set_select_the_options() {
        let c = parse(&[
            "--design=leveled,l0-8=leveled+compaction.level0_compaction_trigger=8+table.block_size=16384",
            "--set",
            "table.block_size=8192",
            "--set=compaction.level0_slowdown_trigger=30",
            "--pm_path=/dev/shm/p",
            "--write_buffer_size=1048576",
        ])
        .unwrap();
        c.validate().unwrap();
        let (plain, variant) = (&c.design[0], &c.design[1]);
        assert!(!plain.is_variant() && variant.is_variant());
        assert_eq!(variant.label, "l0-8");
        assert_eq!(variant.design, DesignChoice::Tierkv(Design::LEVELED));
        assert_eq!(variant.overrides.len(), 2);
        // --set applies to every design after the flags; a variant's own overrides after it.
        let o = c.entry_options(plain).unwrap();
        assert_eq!(o.table.block_size, 8192);
        assert_eq!(o.compaction.level0_slowdown_trigger, 30);
        assert_eq!(o.compaction.level0_compaction_trigger, 4);
        assert_eq!(o.write_buffer_size, 1 << 20);
        // leveled keeps nothing in PM: no pool path; the entry's pool would be named per label.
        assert_eq!(o.pm.path, None);
        assert_eq!(
            c.pm_path_for("leveled"),
            Some(PathBuf::from("/dev/shm/p-leveled"))
        );
        let v = c.entry_options(variant).unwrap();
        assert_eq!(v.table.block_size, 16384, "the variant's override wins");
        assert_eq!(v.compaction.level0_compaction_trigger, 8);
        assert_eq!(v.compaction.level0_slowdown_trigger, 30);
        assert_eq!(
            c.pm_path_for("l0-8"),
            Some(PathBuf::from("/dev/shm/p-l0-8"))
        );
        assert_eq!(c.options().table.block_size, 8192, "the first design's");
        assert_eq!(c.options_for(Design::LEVELED).table.block_size, 8192);
        // RocksDB takes its options from the flags: the entry's overrides join --set.
        assert_eq!(c.entry_config(variant).set.len(), 4);
        // The flags serialise the entries as written, and read back.
        let json = serde_json::to_value(&c).unwrap();
        assert_eq!(
            json["design"],
            serde_json::json!([
                "leveled",
                "l0-8=leveled+compaction.level0_compaction_trigger=8+table.block_size=16384"
            ])
        );
        assert_eq!(
            json["set"],
            serde_json::json!([
                "table.block_size=8192",
                "compaction.level0_slowdown_trigger=30"
            ])
        );
        let back: BenchConfig = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(back, c);
        // Flags of a report written before --set and readrandomwriterandom read back.
        let mut old = json;
        for k in ["set", "readwritepercent", "put_ratio"] {
            old.as_object_mut().unwrap().remove(k);
        }
        let back: BenchConfig = serde_json::from_value(old).unwrap();
        assert!(back.set.is_empty());
        assert_eq!(back.read_percent(), 90);
        // Values with commas and pluses stay whole inside JSON.
        let c = parse(&[
            "--design",
            "slow=leveled+pm.latency={\"read_ns\":1,\"write_ns\":2},leveled",
        ])
        .unwrap();
        assert_eq!(c.design.len(), 2);
        assert_eq!(
            c.entry_options(&c.design[0]).unwrap().pm.latency.write_ns,
            2
        );
        // Labels are unique; a bad override is named.
        assert!(parse(&["--design=a=leveled,a=leveled-pm"])
            .unwrap()
            .validate()
            .unwrap_err()
            .contains("names a twice"));
        let c = parse(&["--design=x=leveled+compaction.nosuch=1"]).unwrap();
        let e = c.validate().unwrap_err();
        assert!(
            e.starts_with("design x: override compaction.nosuch=1: unknown option path"),
            "{e}"
        );
        let c = parse(&["--set=compaction.nosuch=1"]).unwrap();
        let e = c.validate().unwrap_err();
        assert!(
            e.starts_with("--set compaction.nosuch=1: unknown option path"),
            "{e}"
        );
        for bad in ["+x=1", "a=", "=leveled", "v=leveled+x", "a b=leveled"] {
            assert!(parse(&["--design", bad]).is_err(), "{bad}");
        }
    }

    #[test]
    fn read_write_percent_and_put_ratio() {
        assert_eq!(parse(&[]).unwrap().read_percent(), 90);
        assert_eq!(
            parse(&["--readwritepercent=25"]).unwrap().read_percent(),
            25
        );
        let c = parse(&["--put_ratio=80"]).unwrap();
        assert_eq!((c.read_percent(), c.put_ratio), (20, Some(80)));
        c.validate().unwrap();
        assert!(parse(&["--put_ratio=80", "--readwritepercent=20"]).is_err());
        let e = parse(&["--readwritepercent=101"])
            .unwrap()
            .validate()
            .unwrap_err();
        assert!(e.contains("--readwritepercent=101"), "{e}");
        assert_eq!(
            "readrandomwriterandom".parse::<Benchmark>().unwrap(),
            Benchmark::Readrandomwriterandom
        );
    }
}
