//! The registry of `tierkv reproduce` experiments: scaled-down versions of the papers'
//! experiments. Adding one is adding one struct literal to [`EXPERIMENTS`].
//!
//! An experiment runs one or more **phases** (each a `tierkv bench` run: its flags and, if it
//! needs them, its own designs), the whole experiment `rounds` times (`--rounds`), and judges
//! each of its **checks** (a paper's claim as a comparison of a figure between designs, with
//! the paper's number and a pass band) on the median over the rounds with their spread
//! ([`crate::verdict`]).
//!
//! Designs are entries of `--design` as strings: a design's name, or a variant
//! `LABEL=DESIGN+PATH=VALUE+...` (for example `"NVLSM-2=nvlsm+nvlsm.max_floor=2"`); checks name
//! designs by label (a plain entry's label is the design's name). Entries are resolved when the
//! experiment runs, so an experiment may name a design the engine does not have yet: running it
//! then fails with an error naming the missing design, and `tierkv reproduce --list` still
//! lists it.
//!
//! A sketch of a two-phase experiment with several checks:
//!
//! ```
//! use tierkv_bench::experiments::{Bench, Check, Compare, Experiment, Metric, Phase};
//! use tierkv_bench::verdict::Band;
//! const EXAMPLE: Experiment = Experiment {
//!     name: "nvlsm-write-amplification",
//!     paper: "NVLSM (Zhang & Du, ACM TOS 2021)",
//!     figure: "the write amplification and put latency figures",
//!     designs: &["nvlsm-leveled", "nvlsm", "nvlsm-fragmented"],
//!     phases: &[
//!         Phase {
//!             name: "fill",
//!             bench_args: &["--benchmarks=fillrandom,readrandom", "--num=400000"],
//!             designs: &[],
//!             from: None,
//!         },
//!         Phase {
//!             name: "put0",
//!             bench_args: &["--benchmarks=fillrandom,readrandomwriterandom", "--put_ratio=0"],
//!             designs: &["nvlsm-leveled", "nvlsm", "NVLSM-2=nvlsm+nvlsm.max_floor=2"],
//!             from: None,
//!         },
//!     ],
//!     scaling: "...",
//!     claim: "...",
//!     checks: &[
//!         Check {
//!             claim: "NVLSM writes a third of what leveled NVLSM writes",
//!             paper: "0.33",
//!             phase: "fill",
//!             metric: Metric::WriteAmpExcludingLog,
//!             compare: Compare::Ratio { a: "nvlsm", b: "nvlsm-leveled", band: Band::AtMost(0.5) },
//!         },
//!         Check {
//!             claim: "get latency with no puts: leveled < NVLSM-2 < NVLSM",
//!             paper: "ordering of the bars",
//!             phase: "put0",
//!             metric: Metric::AvgLatency(Bench::op("readrandomwriterandom", "get")),
//!             compare: Compare::Increasing(&["nvlsm-leveled", "NVLSM-2", "nvlsm"]),
//!         },
//!     ],
//!     rounds: 3,
//! };
//! ```

mod fluidkv;
mod labdb;
mod nvlsm;
mod slmdb;
mod trianglekv;

use crate::report::{BenchResult, DesignRun};
use crate::verdict::Band;

/// A benchmark of a phase, and optionally one operation type of it (`get`, `put`, `read`,
/// `update`, ..., as in the report's `ops_by_type`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bench {
    /// The benchmark's name (`fillrandom`, `readrandomwriterandom`, ...).
    pub name: &'static str,
    /// Only this operation type, or every operation of the benchmark.
    pub op: Option<&'static str>,
}

impl Bench {
    /// Every operation of benchmark `name`.
    pub const fn all(name: &'static str) -> Bench {
        Bench { name, op: None }
    }

    /// The operations of type `op` of benchmark `name`.
    pub const fn op(name: &'static str, op: &'static str) -> Bench {
        Bench { name, op: Some(op) }
    }

    fn describe(&self) -> String {
        match self.op {
            Some(op) => format!("{} {op}s", self.name),
            None => self.name.to_string(),
        }
    }
}

/// The figure a [`Check`] compares, read from one design's run of the check's phase.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Metric {
    /// Operations per second of a benchmark (of one operation type: its count / the
    /// benchmark's seconds).
    OpsPerSec(Bench),
    /// Average latency in microseconds.
    AvgLatency(Bench),
    /// 99th percentile latency in microseconds.
    P99Latency(Bench),
    /// 99.9th percentile latency in microseconds.
    P999Latency(Bench),
    /// The share of a benchmark's operations (all types) done before its throughput first
    /// fell: before the first window of [`SLOWDOWN_WINDOW_SEC`] (consecutive samples summed)
    /// whose throughput is under [`SLOWDOWN_SHARE`] of the first window's; 1 when it never
    /// fell. How long writes ran at their starting rate (FluidKV's "stable write time",
    /// Fig. 16), counted in operations so that a faster run is not scored lower for reaching
    /// its first slowdown sooner in seconds. Needs the benchmark's samples
    /// (`--sample_interval_ms`); its resolution is one window.
    OpsBeforeSlowdown(Bench),
    /// Write amplification without the log's bytes, every tier together (the figure LSM papers
    /// quote): `figures.database.amplification.write_excluding_log`.
    WriteAmpExcludingLog,
    /// Write amplification, every tier together: `figures.database.amplification.write`.
    WriteAmp,
    /// Read amplification, every tier together: `figures.database.amplification.read`.
    ReadAmp,
    /// Space amplification, every tier together: `figures.database.amplification.space`.
    SpaceAmp,
    /// Bytes read through the engine's file layer, every tier and purpose:
    /// `figures.database.bytes_read`.
    BytesRead,
    /// Bytes written through the engine's file layer, every tier and purpose:
    /// `figures.database.bytes_written`.
    BytesWritten,
    /// Bytes written to the SSD tier (every purpose, the log's included):
    /// `figures.tiers[0].bytes_written` (the papers' "disk writes").
    SsdBytesWritten,
    /// Bytes read from the SSD tier (every purpose): `figures.tiers[0].bytes_read`.
    SsdBytesRead,
    /// Seconds writers were delayed or stopped: `figures.stall_seconds`.
    StallSeconds,
    /// Seconds opening the database took (from an earlier phase's copy: its recovery):
    /// `open_seconds`.
    OpenSeconds,
    /// Seconds of background work over the run: every flush (writing its runs or tree) plus
    /// every compaction, planning to installing (`final_stats.stats.flush_targets[].micros` +
    /// `compaction_levels[].micros`; TierKV engines only).
    BackgroundSeconds,
    /// Mean bytes a compaction out of the first group (L0: tables, rows, C1) read, over the
    /// compactions the engine's job log holds (TierKV engines only).
    L0CompactionMeanBytes,
    /// The largest such compaction's input bytes.
    L0CompactionMaxBytes,
    /// The longest such compaction, in seconds.
    L0CompactionMaxSeconds,
    /// LAB-DB's log on SSD at the end of the run: the bytes of its value arrays
    /// (`final_stats.stats.labdb.value_bytes`; `labdb` only).
    LabLogBytes,
    /// PM pool bytes in allocated chunks at the end of the run:
    /// `figures.footprint.pm_allocated_bytes` (TierKV engines with PM).
    PmAllocatedBytes,
    /// DRAM held by the open tables' indexes at the end of the run (for a partitioned index,
    /// its top level): `figures.footprint.dram.index_bytes` (TierKV engines only).
    DramIndexBytes,
}

impl Metric {
    /// The figure in words.
    pub fn describe(&self) -> String {
        match self {
            Metric::OpsPerSec(b) => format!("{} ops/s", b.describe()),
            Metric::AvgLatency(b) => format!("{} average latency (us)", b.describe()),
            Metric::P99Latency(b) => format!("{} p99 latency (us)", b.describe()),
            Metric::P999Latency(b) => format!("{} p99.9 latency (us)", b.describe()),
            Metric::OpsBeforeSlowdown(b) => format!(
                "share of {} done before a {SLOWDOWN_WINDOW_SEC} s window fell under {}% of \
                 the first",
                b.describe(),
                SLOWDOWN_SHARE * 100.0
            ),
            Metric::L0CompactionMeanBytes => "mean input bytes of an L0 compaction".into(),
            Metric::L0CompactionMaxBytes => "largest L0 compaction's input bytes".into(),
            Metric::L0CompactionMaxSeconds => "longest L0 compaction (s)".into(),
            Metric::WriteAmpExcludingLog => "write amplification without the log".into(),
            Metric::WriteAmp => "write amplification".into(),
            Metric::ReadAmp => "read amplification".into(),
            Metric::SpaceAmp => "space amplification".into(),
            Metric::BytesRead => "bytes read (all tiers)".into(),
            Metric::BytesWritten => "bytes written (all tiers)".into(),
            Metric::SsdBytesWritten => "bytes written to SSD".into(),
            Metric::SsdBytesRead => "bytes read from SSD".into(),
            Metric::StallSeconds => "stall seconds".into(),
            Metric::OpenSeconds => "seconds to open (recovery)".into(),
            Metric::BackgroundSeconds => "flush + compaction seconds".into(),
            Metric::LabLogBytes => "bytes of LAB-DB's value arrays at the end".into(),
            Metric::PmAllocatedBytes => "PM pool bytes allocated at the end".into(),
            Metric::DramIndexBytes => "DRAM of the tables' indexes at the end".into(),
        }
    }

    /// A short name for ratios ("WA w/o log(nvlsm) / WA w/o log(leveled)").
    pub fn short(&self) -> String {
        match self {
            Metric::OpsPerSec(b) => format!("ops/s {}", b.describe()),
            Metric::AvgLatency(b) => format!("avg {}", b.describe()),
            Metric::P99Latency(b) => format!("p99 {}", b.describe()),
            Metric::P999Latency(b) => format!("p99.9 {}", b.describe()),
            Metric::OpsBeforeSlowdown(b) => format!("stable share {}", b.describe()),
            Metric::L0CompactionMeanBytes => "L0 job bytes".into(),
            Metric::L0CompactionMaxBytes => "max L0 job bytes".into(),
            Metric::L0CompactionMaxSeconds => "max L0 job s".into(),
            Metric::WriteAmpExcludingLog => "WA w/o log".into(),
            Metric::WriteAmp => "WA".into(),
            Metric::ReadAmp => "RA".into(),
            Metric::SpaceAmp => "SA".into(),
            Metric::BytesRead => "bytes read".into(),
            Metric::BytesWritten => "bytes written".into(),
            Metric::SsdBytesWritten => "SSD bytes written".into(),
            Metric::SsdBytesRead => "SSD bytes read".into(),
            Metric::StallSeconds => "stall s".into(),
            Metric::OpenSeconds => "open s".into(),
            Metric::BackgroundSeconds => "flush+compaction s".into(),
            Metric::LabLogBytes => "log bytes".into(),
            Metric::PmAllocatedBytes => "PM allocated".into(),
            Metric::DramIndexBytes => "DRAM index".into(),
        }
    }

    /// The benchmark the figure comes from, if it comes from one.
    pub fn benchmark(&self) -> Option<&Bench> {
        match self {
            Metric::OpsPerSec(b)
            | Metric::AvgLatency(b)
            | Metric::P99Latency(b)
            | Metric::P999Latency(b)
            | Metric::OpsBeforeSlowdown(b) => Some(b),
            _ => None,
        }
    }

    /// For the L0-compaction figures, the figure (`Some(None)` when the run's engine keeps no
    /// job log or ran no such compaction); `None` for the others.
    fn l0_jobs(&self, run: &DesignRun) -> Option<Option<f64>> {
        if !matches!(
            self,
            Metric::L0CompactionMeanBytes
                | Metric::L0CompactionMaxBytes
                | Metric::L0CompactionMaxSeconds
        ) {
            return None;
        }
        let jobs: Vec<_> = run
            .final_stats
            .as_ref()
            .map(|s| {
                s.stats
                    .compaction_jobs
                    .iter()
                    .filter(|j| j.from_group == 0 && !j.trivial_move)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        if jobs.is_empty() {
            return Some(None);
        }
        let n = jobs.len() as f64;
        Some(Some(match self {
            Metric::L0CompactionMeanBytes => {
                jobs.iter().map(|j| j.input_bytes as f64).sum::<f64>() / n
            }
            Metric::L0CompactionMaxBytes => {
                jobs.iter().map(|j| j.input_bytes).max().unwrap_or(0) as f64
            }
            _ => jobs.iter().map(|j| j.micros).max().unwrap_or(0) as f64 / 1e6,
        }))
    }

    /// The figure in `run`, when it was measured. Engines without TierKV's figures (RocksDB)
    /// fall back to their SSD figures for the amplifications and the stall time.
    pub fn value(&self, run: &DesignRun) -> Option<f64> {
        if let Some(b) = self.benchmark() {
            let r = run.benchmarks.iter().find(|r| r.name == b.name)?;
            let (ops_per_sec, latency) = match b.op {
                Some(op) => {
                    let o = r.op(op)?;
                    let per_sec = (r.seconds > 0.0).then(|| o.count as f64 / r.seconds);
                    (per_sec, &o.latency)
                }
                None => (Some(r.ops_per_sec), &r.latency),
            };
            return match self {
                Metric::OpsPerSec(_) => ops_per_sec,
                Metric::OpsBeforeSlowdown(_) => ops_before_slowdown(r),
                Metric::AvgLatency(_) => Some(latency.avg_us),
                Metric::P999Latency(_) => Some(latency.p999_us),
                _ => Some(latency.p99_us),
            };
        }
        if let Some(jobs) = self.l0_jobs(run) {
            return jobs;
        }
        if *self == Metric::OpenSeconds {
            return run.open_seconds;
        }
        // TierKV's own figures (not RocksDB's).
        let tierkv = || {
            run.final_stats
                .as_ref()
                .filter(|s| s.engine == "tierkv")
                .map(|s| &s.stats)
        };
        if *self == Metric::BackgroundSeconds {
            let s = tierkv()?;
            let micros: u64 = s.flush_targets.iter().map(|f| f.micros).sum::<u64>()
                + s.compaction_levels.iter().map(|c| c.micros).sum::<u64>();
            return Some(micros as f64 / 1e6);
        }
        if *self == Metric::LabLogBytes {
            return tierkv()?.labdb.as_ref().map(|l| l.value_bytes as f64);
        }
        if let Some(f) = &run.figures {
            let a = &f.database.amplification;
            return match self {
                Metric::WriteAmpExcludingLog => a.write_excluding_log,
                Metric::WriteAmp => a.write,
                Metric::ReadAmp => a.read,
                Metric::SpaceAmp => a.space,
                Metric::BytesRead => Some(f.database.bytes_read as f64),
                Metric::BytesWritten => Some(f.database.bytes_written as f64),
                Metric::SsdBytesWritten => f.tiers.first().map(|t| t.bytes_written as f64),
                Metric::SsdBytesRead => f.tiers.first().map(|t| t.bytes_read as f64),
                Metric::StallSeconds => Some(f.stall_seconds),
                Metric::PmAllocatedBytes => Some(f.footprint.pm_allocated_bytes as f64),
                Metric::DramIndexBytes => tierkv().map(|_| f.footprint.dram.index_bytes as f64),
                _ => None,
            };
        }
        let s = run.final_stats.as_ref()?;
        match self {
            Metric::WriteAmpExcludingLog => Some(s.write_amplification_tables),
            Metric::WriteAmp => Some(s.write_amplification),
            Metric::ReadAmp => Some(s.read_amplification),
            Metric::SpaceAmp => s.space_amplification,
            Metric::StallSeconds => Some(s.stall_micros as f64 / 1e6),
            _ => None,
        }
    }
}

/// The length of the windows [`Metric::OpsBeforeSlowdown`] compares, in seconds.
pub const SLOWDOWN_WINDOW_SEC: f64 = 1.0;
/// The share of the first window's throughput under which a window counts as slowed down.
pub const SLOWDOWN_SHARE: f64 = 0.7;

/// [`Metric::OpsBeforeSlowdown`] of one benchmark: `None` without a whole first window or
/// without operations. A last window shorter than [`SLOWDOWN_WINDOW_SEC`] is compared by
/// its rate too.
fn ops_before_slowdown(r: &BenchResult) -> Option<f64> {
    if r.ops == 0 {
        return None;
    }
    // Windows of consecutive samples: (operations, seconds).
    let mut windows: Vec<(u64, f64)> = Vec::new();
    let mut open = (0u64, 0.0f64);
    for s in &r.samples {
        open.0 += s.ops;
        open.1 += s.interval_sec;
        if open.1 >= SLOWDOWN_WINDOW_SEC - 1e-9 {
            windows.push(open);
            open = (0, 0.0);
        }
    }
    let first = *windows.first()?;
    if open.1 > 0.0 {
        windows.push(open);
    }
    let rate = |(ops, secs): (u64, f64)| ops as f64 / secs;
    let floor = SLOWDOWN_SHARE * rate(first);
    let before: u64 = windows
        .iter()
        .take_while(|&&w| rate(w) >= floor)
        .map(|w| w.0)
        .sum();
    Some((before as f64 / r.ops as f64).min(1.0))
}

/// A check of `a`'s figure over `b`'s in phase `phase` (the experiments' common form).
pub(crate) const fn ratio(
    claim: &'static str,
    paper: &'static str,
    phase: &'static str,
    metric: Metric,
    a: &'static str,
    b: &'static str,
    band: Band,
) -> Check {
    Check {
        claim,
        paper,
        phase,
        metric,
        compare: Compare::Ratio { a, b, band },
    }
}

/// Operations per second of benchmark `b` (all its operations).
pub(crate) const fn ops(b: &'static str) -> Metric {
    Metric::OpsPerSec(Bench::all(b))
}

/// How a [`Check`] compares its designs (by label).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Compare {
    /// One design's figure against the band.
    Value {
        /// The design.
        design: &'static str,
        /// The bar.
        band: Band,
    },
    /// Design `a`'s figure / design `b`'s, in the same round, against the band.
    Ratio {
        /// The numerator's design.
        a: &'static str,
        /// The denominator's design.
        b: &'static str,
        /// The bar.
        band: Band,
    },
    /// The designs, listed from the lowest figure to the highest, are in that order: each
    /// design's figure / the previous one's (same round) is above 1.
    Increasing(&'static [&'static str]),
}

impl Compare {
    /// The designs compared, in order.
    pub fn designs(&self) -> Vec<&'static str> {
        match *self {
            Compare::Value { design, .. } => vec![design],
            Compare::Ratio { a, b, .. } => vec![a, b],
            Compare::Increasing(d) => d.to_vec(),
        }
    }
}

/// One of a paper's claims as a measurable comparison.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Check {
    /// The claim in words.
    pub claim: &'static str,
    /// The paper's number, as the paper gives it ("0.33", "about 3x", "the bars' order").
    pub paper: &'static str,
    /// The phase whose runs it reads.
    pub phase: &'static str,
    /// The figure compared.
    pub metric: Metric,
    /// The comparison and its pass band.
    pub compare: Compare,
}

/// One `tierkv bench` run of an experiment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Phase {
    /// Its name (checks name it; with several phases, its output directory).
    pub name: &'static str,
    /// The `tierkv bench` flags of the scaled workload (without `--design`).
    pub bench_args: &'static [&'static str],
    /// Its design entries; empty: the experiment's.
    pub designs: &'static [&'static str],
    /// The earlier phase whose databases it starts from: each of its designs opens a copy of
    /// the database (and PM pool) that design had at the end of that phase, as
    /// `--use_existing_db` (fill benchmarks skipped), so that several workloads run against one
    /// load without repeating it. Every design of this phase must be one of that phase's.
    /// `None`: fresh databases.
    pub from: Option<&'static str>,
}

/// One experiment of the registry.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Experiment {
    /// The name on the command line.
    pub name: &'static str,
    /// The paper (or papers).
    pub paper: &'static str,
    /// The paper's figure or table.
    pub figure: &'static str,
    /// The design entries of every phase that names none (resolved at run time).
    pub designs: &'static [&'static str],
    /// The runs, in order (each round runs them all).
    pub phases: &'static [Phase],
    /// How the paper's workload was scaled to fit this machine.
    pub scaling: &'static str,
    /// The paper's claim, in words.
    pub claim: &'static str,
    /// The claim as measurable comparisons.
    pub checks: &'static [Check],
    /// Rounds when `--rounds` is not given (0 counts as 1).
    pub rounds: usize,
}

impl Experiment {
    /// The design entries of `phase`.
    pub fn phase_designs(&self, phase: &Phase) -> &'static [&'static str] {
        if phase.designs.is_empty() {
            self.designs
        } else {
            phase.designs
        }
    }

    /// The phase named `name`.
    pub fn phase(&self, name: &str) -> Option<&Phase> {
        self.phases.iter().find(|p| p.name == name)
    }

    /// Every design entry of every phase, each once, in order of appearance.
    pub fn all_designs(&self) -> Vec<&'static str> {
        let mut all: Vec<&'static str> = Vec::new();
        for p in self.phases {
            for d in self.phase_designs(p) {
                if !all.contains(d) {
                    all.push(d);
                }
            }
        }
        all
    }
}

/// Every experiment, in `--list` order.
pub const EXPERIMENTS: &[Experiment] = &[
    Experiment {
        name: "leveled-vs-leveled-pm",
        paper: "TriangleKV and LAB-DB (their \"RocksDB-L0-NVM\" baseline against RocksDB on SSD)",
        figure: "the RocksDB-SSD vs RocksDB-L0-NVM baselines of the random-write and YCSB figures",
        designs: &["leveled", "leveled-pm"],
        phases: &[Phase {
            name: "main",
            bench_args: &[
                "--benchmarks=fillrandom,readrandom,ycsb-load,ycsb-a",
                "--num=400000",
                "--reads=200000",
                "--key_size=16",
                "--value_size=1024",
                "--write_buffer_size=16777216",
                "--cache_size=8388608",
                "--threads=1",
                "--sample_interval_ms=500",
            ],
            designs: &[],
            from: None,
        }],
        scaling:
            "The papers load tens of GB with 1 KiB-4 KiB values on machines with hundreds of GB \
              of DRAM and Optane PM. Here: 400k keys of 16 B with 1 KiB values (~410 MB of user \
              data per fill, 4x the 64 MiB memtables the papers use, so flushes and L0->L1 \
              compactions happen), 16 MiB memtables (1/4 of the 64 MiB default, keeping the \
              memtable:data ratio), 200k reads and 200k YCSB-A operations after a YCSB load of \
              the same 400k records, one client thread (the machine has 2 cores, which flush \
              and compaction also need). PM is the emulated pool of the PM crate.",
        claim:
            "Putting the WAL and L0 on persistent memory speeds up random writes (less SSD I/O on \
            the write path and faster L0 compactions), with reads about unchanged.",
        checks: &[
            Check {
                claim: "leveled-pm does random writes faster than leveled",
                paper: "faster (no single number: RocksDB-L0-NVM is ahead of RocksDB-SSD in the \
                    papers' random-write figures); band by hand: no effect to scale, so the \
                    direction alone",
                phase: "main",
                metric: Metric::OpsPerSec(Bench::all("fillrandom")),
                compare: Compare::Ratio {
                    a: "leveled-pm",
                    b: "leveled",
                    band: Band::Above(1.0),
                },
            },
            Check {
                claim: "random reads are about unchanged (the ratio within 0.8..1.25)",
                paper: "about 1 (\"reads about unchanged\"); band by hand: no effect to \
                    scale, so a quarter either way",
                phase: "main",
                metric: Metric::OpsPerSec(Bench::all("readrandom")),
                compare: Compare::Ratio {
                    a: "leveled-pm",
                    b: "leveled",
                    band: Band::Within(0.8, 1.25),
                },
            },
        ],
        rounds: 3,
    },
    nvlsm::AMPLIFICATION,
    nvlsm::PUT_RATIO,
    nvlsm::RANGE,
    nvlsm::YCSB,
    trianglekv::WRITE,
    trianglekv::HINTS,
    trianglekv::FLATTEN,
    trianglekv::TAIL,
    trianglekv::YCSB,
    trianglekv::PAGES,
    slmdb::MEMTABLE,
    slmdb::OPERATIONS,
    slmdb::YCSB,
    slmdb::PM_LATENCY,
    slmdb::RULES,
    fluidkv::WRITE,
    fluidkv::LST,
    fluidkv::LOAD,
    fluidkv::BUFFER,
    fluidkv::FASTSTORE,
    fluidkv::REUSE,
    fluidkv::REUSE_TABLES,
    fluidkv::SEPARATION,
    labdb::YCSB,
    labdb::UPDATES,
    labdb::VARIANT_RUNS,
    labdb::SKEW,
    labdb::RECOVERY,
    labdb::PM_SIZE,
    labdb::CHUNKS,
    labdb::WRITE,
];

/// Experiments for the harness's own tests (`tierkv reproduce --self-test`, hidden): tiny runs
/// over `leveled` variants whose checks exercise every comparison and verdict.
pub const SELF_TEST_EXPERIMENTS: &[Experiment] = &[Experiment {
    name: "self-test",
    paper: "none (the harness checking itself)",
    figure: "none",
    designs: &[
        "leveled",
        "twin=leveled+table.block_size=4096",
        "l0-2=leveled+compaction.level0_compaction_trigger=2",
    ],
    phases: &[
        Phase {
            name: "fill",
            bench_args: &[
                "--benchmarks=fillrandom,readrandom",
                "--num=3000",
                "--write_buffer_size=65536",
                "--sample_interval_ms=100",
            ],
            designs: &[],
            from: None,
        },
        Phase {
            name: "mixed",
            bench_args: &[
                "--benchmarks=fillseq,readrandomwriterandom",
                "--num=2000",
                "--put_ratio=50",
                "--sample_interval_ms=100",
            ],
            designs: &[
                "leveled",
                "l0-2=leveled+compaction.level0_compaction_trigger=2",
            ],
            from: None,
        },
        Phase {
            name: "reread",
            bench_args: &[
                "--benchmarks=fillrandom,readrandom",
                "--num=3000",
                "--write_buffer_size=65536",
                "--sample_interval_ms=100",
            ],
            designs: &[
                "l0-2=leveled+compaction.level0_compaction_trigger=2",
                "leveled",
            ],
            from: Some("fill"),
        },
    ],
    scaling: "tiny: a few thousand keys, 64 KiB memtables",
    claim: "the harness judges checks",
    checks: &[
        Check {
            claim: "every user byte goes through the WAL at least once",
            paper: ">= 1",
            phase: "fill",
            metric: Metric::WriteAmp,
            compare: Compare::Value {
                design: "leveled",
                band: Band::AtLeast(1.0),
            },
        },
        Check {
            claim: "write amplification under 0.5 (impossible with a WAL)",
            paper: "0.5",
            phase: "fill",
            metric: Metric::WriteAmp,
            compare: Compare::Value {
                design: "leveled",
                band: Band::AtMost(0.5),
            },
        },
        Check {
            claim: "a variant that sets an option to its value writes what the design writes",
            paper: "1",
            phase: "fill",
            metric: Metric::BytesWritten,
            compare: Compare::Ratio {
                a: "twin",
                b: "leveled",
                band: Band::Within(0.5, 2.0),
            },
        },
        Check {
            claim: "gets and puts of readrandomwriterandom both run",
            paper: "any",
            phase: "mixed",
            metric: Metric::OpsPerSec(Bench::op("readrandomwriterandom", "get")),
            compare: Compare::Ratio {
                a: "l0-2",
                b: "leveled",
                band: Band::Within(0.001, 1000.0),
            },
        },
        Check {
            claim: "the WAL and the flush each write every byte once",
            paper: "2",
            phase: "fill",
            metric: Metric::WriteAmp,
            compare: Compare::Value {
                design: "leveled",
                band: Band::Paper(2.0),
            },
        },
        Check {
            claim: "an ordering of the three designs' bytes read",
            paper: "none",
            phase: "fill",
            metric: Metric::BytesRead,
            compare: Compare::Increasing(&["leveled", "twin", "l0-2"]),
        },
    ],
    rounds: 2,
}];
