//! The registry of `tierkv reproduce` experiments: scaled-down versions of the papers'
//! experiments. Adding one is adding one struct literal to [`EXPERIMENTS`].
//!
//! Designs are named as strings and resolved when the experiment runs, so an entry may name a
//! design the engine does not have yet: running it then fails with an error naming the missing
//! design, and `tierkv reproduce --list` still lists it.

/// Which figure a [`Check`] compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// Operations per second (higher is better).
    OpsPerSec,
    /// 99th percentile latency (lower is better).
    P99,
}

/// The paper's claim as a measurable comparison: `better` beats `than` on `metric` of
/// `benchmark`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Check {
    /// The benchmark compared.
    pub benchmark: &'static str,
    /// The figure compared.
    pub metric: Metric,
    /// The design the paper says is better.
    pub better: &'static str,
    /// The design it is better than.
    pub than: &'static str,
}

/// One experiment of the registry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Experiment {
    /// The name on the command line.
    pub name: &'static str,
    /// The paper (or papers).
    pub paper: &'static str,
    /// The paper's figure or table.
    pub figure: &'static str,
    /// The designs compared, by CLI name (resolved at run time).
    pub designs: &'static [&'static str],
    /// The `tierkv bench` flags of the scaled workload (without `--design`).
    pub bench_args: &'static [&'static str],
    /// How the paper's workload was scaled to fit this machine.
    pub scaling: &'static str,
    /// The paper's claim.
    pub claim: &'static str,
    /// The claim as a measurable comparison, when it is one.
    pub check: Option<Check>,
}

/// Every experiment, in `--list` order.
pub const EXPERIMENTS: &[Experiment] = &[Experiment {
    name: "leveled-vs-leveled-pm",
    paper: "TriangleKV and LAB-DB (their \"RocksDB-L0-NVM\" baseline against RocksDB on SSD)",
    figure: "the RocksDB-SSD vs RocksDB-L0-NVM baselines of the random-write and YCSB figures",
    designs: &["leveled", "leveled-pm"],
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
    scaling: "The papers load tens of GB with 1 KiB-4 KiB values on machines with hundreds of GB \
              of DRAM and Optane PM. Here: 400k keys of 16 B with 1 KiB values (~410 MB of user \
              data per fill, 4x the 64 MiB memtables the papers use, so flushes and L0->L1 \
              compactions happen), 16 MiB memtables (1/4 of the 64 MiB default, keeping the \
              memtable:data ratio), 200k reads and 200k YCSB-A operations after a YCSB load of \
              the same 400k records, one client thread (the machine has 2 cores, which flush \
              and compaction also need). PM is the emulated pool of the PM crate.",
    claim: "Putting the WAL and L0 on persistent memory speeds up random writes (less SSD I/O on \
            the write path and faster L0 compactions), with reads about unchanged.",
    check: Some(Check {
        benchmark: "fillrandom",
        metric: Metric::OpsPerSec,
        better: "leveled-pm",
        than: "leveled",
    }),
}];
