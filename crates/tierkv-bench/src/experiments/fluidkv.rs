//! The experiments of FluidKV (Lu et al., "FluidKV: Seamlessly Bridging the Gap between
//! Indexing Performance and Memory-Footprint on Ultra-Fast Persistent Memory", PVLDB 17(6),
//! 2024): `fluidkv` against its baseline `listdb` (ListDB: a shared PM log whose entries
//! become persistent skiplist nodes, zipper compaction), `leveled-pm` (a group-committed PM log
//! in front of leveled SSTables, L0 in PM) and `leveled-pm` with FluidKV's FastStore front end
//! (the stages' share of the difference), the logical sorted tables' DRAM index, the load-aware trigger (Fig. 17),
//! the BufferStore size (Fig. 15) and the FastStore size (Fig. 16).
//!
//! Layout (the design brief's): databases in a temporary directory on the disk, the PM pool on
//! `/dev/shm` (`/dev/shm/tierkv-fluid.pool-<label>`) with the `nvdimm` latency preset (the
//! paper ran on Optane DC PMM). Scaling (the reading notes'): the paper's 200M 8+8-byte
//! records at 24-32 threads become 2M records of 16-byte keys and 16-byte values at 2 threads
//! (this machine's cores), the FastStore at about a fifth of the data (16 MiB). The paper has
//! no SSD; `leveled-pm`'s L1 and deeper are on the disk, which the page cache absorbs at this
//! size (no SSD model: the comparison is of the PM designs' structure, not of a disk).

use super::{ops, ratio, Bench, Check, Compare, Experiment, Metric, Phase};
use crate::verdict::Band;

const PAPER: &str = "FluidKV (Lu et al., PVLDB 17(6), 2024)";

/// The bench flags the `fluidkv` experiments share, after the benchmarks and counts.
macro_rules! fluid_args {
    ($($arg:expr),*) => {
        &[
            $($arg,)*
            "--key_size=16",
            "--value_size=16",
            "--write_buffer_size=16777216",
            "--pm_latency=nvdimm",
            "--pm_path=/dev/shm/tierkv-fluid.pool",
            "--pm_size=4294967296",
            "--sample_interval_ms=500",
        ]
    };
}

const FILL: Metric = Metric::OpsPerSec(Bench::all("fillrandom"));
const READ: Metric = Metric::OpsPerSec(Bench::all("readrandom"));

/// Writes and reads at two threads (Fig. 12), and YCSB (Fig. 13).
pub const WRITE: Experiment = Experiment {
    name: "fluidkv-write",
    paper: PAPER,
    figure: "Fig. 12 (random writes and reads) and Fig. 13 (YCSB), at this machine's 2 threads",
    designs: &[
        "fluidkv",
        "listdb",
        "leveled-pm",
        "faststore=leveled-pm+pm.thread_logs=true",
    ],
    phases: &[
        Phase {
            name: "random",
            bench_args: fluid_args!(
                "--benchmarks=fillrandom,readrandom",
                "--num=2000000",
                "--reads=500000",
                "--threads=2"
            ),
            designs: &[],
            from: None,
        },
        Phase {
            name: "ycsb",
            bench_args: fluid_args!(
                "--benchmarks=ycsb-load,ycsb-a,ycsb-b,ycsb-c,ycsb-f,ycsb-d,ycsb-e",
                "--num=1000000",
                "--reads=200000",
                "--threads=2"
            ),
            designs: &[],
            from: None,
        },
    ],
    scaling: "200M 8+8-byte records at 32 threads -> 2M random puts of 16-byte keys and values \
              over 2 threads, then 1M random gets; YCSB: 1M records loaded, then 200k \
              operations per thread per workload (Zipfian 0.99) in one database, E's scans up \
              to 100 records.",
    claim: "FluidKV writes 1.2-9x and reads up to 3.9x faster than the baselines (ListDB, PM \
            B+ trees) at 32 threads; on YCSB load and A it is 1.3-9.5x and 1.1-6.6x faster.",
    checks: &[
        ratio(
            "random writes: fluidkv up to 9x listdb's throughput",
            "up to 9x ListDB at 32 threads (abstract, section 1; Fig. 12a)",
            "random",
            FILL,
            "fluidkv",
            "listdb",
            Band::Paper(9.0),
        ),
        ratio(
            "random reads: fluidkv up to 3.8x listdb's throughput",
            "up to 3.8x ListDB (section 1), 3.9x (abstract, Fig. 12b), at 32 threads: the \
             nearer 1, 3.8",
            "random",
            READ,
            "fluidkv",
            "listdb",
            Band::Paper(3.8),
        ),
        ratio(
            "YCSB load: fluidkv 1.3-9.5x the baselines' throughput (listdb)",
            "1.3-9.5x the baselines at 32 threads (Fig. 13a): the end nearer 1, 1.3",
            "ycsb",
            ops("ycsb-load"),
            "fluidkv",
            "listdb",
            Band::Paper(1.3),
        ),
        ratio(
            "YCSB-C: fluidkv up to 8x listdb's throughput",
            "up to 8x ListDB on B and C at 32 threads (Fig. 13c-d)",
            "ycsb",
            ops("ycsb-c"),
            "fluidkv",
            "listdb",
            Band::Paper(8.0),
        ),
        ratio(
            "random writes: fluidkv 1.2-9x the baselines' throughput (leveled-pm)",
            "1.2-9x the baselines at 32 threads (Fig. 12a): the end nearer 1, 1.2",
            "random",
            FILL,
            "fluidkv",
            "leveled-pm",
            Band::Paper(1.2),
        ),
        ratio(
            "random writes: the stages add to the front end (fluidkv faster than leveled-pm \
             through the same FastStore)",
            "not measured; band by hand: the paper has no ablation of its stages behind one \
             front end, so no effect to scale: direction only",
            "random",
            FILL,
            "fluidkv",
            "faststore",
            Band::Above(1.0),
        ),
        ratio(
            "random reads: fluidkv at least as fast as leveled-pm",
            "up to 3.9x (vs. ListDB); band by hand: the paper's read numbers are against \
             ListDB and single-stage indexes (similar; 10% below NBTree and DPTree), none \
             against a leveled LSM on PM (RocksDB, Fig. 4, unnumbered): direction only",
            "random",
            READ,
            "fluidkv",
            "leveled-pm",
            Band::AtLeast(1.0),
        ),
        ratio(
            "YCSB load: fluidkv 1.3-9.5x the baselines' throughput (leveled-pm)",
            "1.3-9.5x the baselines at 32 threads (Fig. 13a): the end nearer 1, 1.3",
            "ycsb",
            ops("ycsb-load"),
            "fluidkv",
            "leveled-pm",
            Band::Paper(1.3),
        ),
        ratio(
            "YCSB-A: fluidkv 1.1-6.6x the baselines' throughput (leveled-pm)",
            "1.1-6.6x the baselines at 32 threads (Fig. 13b): the end nearer 1, 1.1",
            "ycsb",
            ops("ycsb-a"),
            "fluidkv",
            "leveled-pm",
            Band::Paper(1.1),
        ),
        ratio(
            "YCSB-C: fluidkv comparable to leveled-pm (at least 0.8x)",
            "0.8-2.2x (single-stage indexes), up to 8x (ListDB); band by hand: 0.8-2.2x \
             straddles 1 (\"comparable\"), so it has no direction to scale; the bar is its \
             low end",
            "ycsb",
            ops("ycsb-c"),
            "fluidkv",
            "leveled-pm",
            Band::AtLeast(0.8),
        ),
    ],
    rounds: 3,
};

/// The logical sorted tables' DRAM index against one index entry per data block (section 4.3,
/// Table 2): the DRAM it takes and what the extra PM read costs a get.
pub const LST: Experiment = Experiment {
    name: "fluidkv-lst",
    paper: PAPER,
    figure: "section 4.3 and Table 2 (LST: DRAM index per 32 blocks; lookup +11%)",
    designs: &[
        "fluidkv",
        "block-index=fluidkv+table.index_partition_blocks=0",
    ],
    phases: &[Phase {
        name: "random",
        bench_args: fluid_args!(
            "--benchmarks=fillrandom,waitforcompaction,readrandom",
            "--num=2000000",
            "--reads=500000",
            "--threads=2"
        ),
        designs: &[],
        from: None,
    }],
    scaling: "the write experiment's load and gets; the same 512-byte blocks with the index \
              partitioned per 32 blocks (an LST) or one DRAM entry per block.",
    claim: "A DRAM index entry per LST (1024 records) instead of per record cuts DRAM by about \
            90% for the whole store; a lookup reads an index block and a data block, 11% slower \
            than a DRAM index.",
    checks: &[
        Check {
            claim: "DRAM of the table indexes: 1/32 of one entry per block (one entry per LST \
                    of 32 blocks)",
            paper: "1/1024 of a per-record index: 32 entries per index block times 32 per \
                    data block (section 4.3), so 1/32 of one entry per data block",
            phase: "random",
            metric: Metric::DramIndexBytes,
            compare: Compare::Ratio {
                a: "fluidkv",
                b: "block-index",
                band: Band::Paper(1.0 / 32.0),
            },
        },
        ratio(
            "random gets: the LST's index-block read costs about 11% (0.896x the throughput)",
            "an 11% read latency penalty: 1.227 us (512/512 LST) against 1.1 us (DRAM \
             index, Table 2), 1.1 / 1.227 = 0.896 in throughput",
            "random",
            READ,
            "fluidkv",
            "block-index",
            Band::Paper(0.896),
        ),
    ],
    rounds: 3,
};

/// Reads after writes with and without the load detector (Fig. 17).
pub const LOAD: Experiment = Experiment {
    name: "fluidkv-load",
    paper: PAPER,
    figure: "Fig. 17 (read throughput after a switch to read-only)",
    designs: &["fluidkv", "fixed=fluidkv+compaction.load_aware=false"],
    phases: &[Phase {
        name: "switch",
        bench_args: fluid_args!(
            "--benchmarks=fillrandom,readrandom",
            "--num=2000000",
            "--reads=1500000",
            "--threads=2"
        ),
        designs: &[],
        from: None,
    }],
    scaling: "the write experiment's load, then 3M gets right after it (no wait for \
              compactions): with the detector, the first window with no writes flushes the \
              FastStore and lowers the trigger to one buffer tree; without it, up to 3 buffer \
              trees and the FastStore stay in front of the StableStore.",
    claim: "After a switch to read-only, FluidKV flushes eagerly and compacts every buffer tree, \
            and its read throughput rises.",
    checks: &[ratio(
        "gets after the writes: faster with the load detector",
        "rises after the switch (Fig. 17); band by hand: the rise is only drawn (Fig. 17a), \
         the text gives no number: direction only",
        "switch",
        READ,
        "fluidkv",
        "fixed",
        Band::Above(1.0),
    )],
    rounds: 3,
};

/// BufferStore sizes (Fig. 15): more buffer trees per compaction, less compaction work.
pub const BUFFER: Experiment = Experiment {
    name: "fluidkv-buffer",
    paper: PAPER,
    figure: "Fig. 15 (compaction throughput against the BufferStore size)",
    designs: &[
        "buffer-1=fluidkv+compaction.load_aware=false+compaction.level0_compaction_trigger=1",
        "buffer-2=fluidkv+compaction.load_aware=false+compaction.level0_compaction_trigger=2",
        "buffer-4=fluidkv+compaction.load_aware=false+compaction.level0_compaction_trigger=4",
        "buffer-8=fluidkv+compaction.load_aware=false+compaction.level0_compaction_trigger=8",
    ],
    phases: &[Phase {
        name: "fill",
        ..RANDOM_LOAD
    }],
    scaling: "the write experiment's load; the BufferStore holds 1, 2, 4 or 8 buffer trees \
              (FastStores of 16 MiB) before it is compacted (the detector off).",
    claim: "A bigger BufferStore compacts faster: twice the buffer trees give about twice the \
            compaction throughput; no BufferStore is the worst.",
    checks: &[
        Check {
            claim: "compaction work falls as the BufferStore grows",
            paper: "about 2x per doubling",
            phase: "fill",
            metric: Metric::WriteAmpExcludingLog,
            compare: Compare::Increasing(&["buffer-8", "buffer-4", "buffer-2", "buffer-1"]),
        },
        ratio(
            "flush + compaction time: 8 buffer trees compact about 8x faster than 1 (about 2x \
             per doubling of the BufferStore)",
            "about 2x the compaction throughput per doubling (Fig. 15): three doublings, 1/8 \
             of the time (the seconds here include the flushes, which the paper leaves out)",
            "fill",
            Metric::BackgroundSeconds,
            "buffer-8",
            "buffer-1",
            Band::Paper(0.125),
        ),
    ],
    rounds: 3,
};

/// FastStore sizes (Fig. 16): a bigger FastStore absorbs writes longer.
pub const FASTSTORE: Experiment = Experiment {
    name: "fluidkv-faststore",
    paper: PAPER,
    figure: "Fig. 16 (stable write time against the FastStore size)",
    designs: &[
        "fast-2m=fluidkv+write_buffer_size=2097152",
        "fast-8m=fluidkv+write_buffer_size=8388608",
        "fast-32m=fluidkv+write_buffer_size=33554432",
    ],
    phases: &[Phase {
        name: "fill",
        bench_args: fluid_args!("--benchmarks=fillrandom", "--num=4000000", "--threads=2"),
        designs: &[],
        from: None,
    }],
    scaling: "FastStores of 1M, 2M and 5M records at 8-16 threads -> 2, 8 and 32 MiB (about \
              50k, 200k and 800k records) under twice the write experiment's load (4M \
              records: with 2M, 64 MB, a 32 MiB FastStore is half the data and gains too \
              little over 8 MiB to tell apart). The paper's stable time (seconds at the starting rate, at a \
              fixed rate of many threads) becomes the share of the fill done before a one-second \
              window first falls under 70% of the first second's rate.",
    claim: "A bigger FastStore sustains writes longer before flushes and compactions hold them \
            back (16 / 18 / 32 s at 8 threads for 1M / 2M / 5M records).",
    checks: &[
        Check {
            claim: "random-write throughput rises with the FastStore",
            paper: "stable writes 16 / 18 / 32 s",
            phase: "fill",
            metric: FILL,
            compare: Compare::Increasing(&["fast-2m", "fast-8m", "fast-32m"]),
        },
        Check {
            claim: "the fill runs at its starting rate longer with a bigger FastStore",
            paper: "stable writes 16 / 18 / 32 s",
            phase: "fill",
            metric: Metric::OpsBeforeSlowdown(Bench::all("fillrandom")),
            compare: Compare::Increasing(&["fast-2m", "fast-8m", "fast-32m"]),
        },
    ],
    rounds: 3,
};

/// The write experiment's 2M records at random, 2 threads, then the compactions they leave: the
/// BufferStore experiment's load.
const RANDOM_LOAD: Phase = Phase {
    name: "random",
    bench_args: fluid_args!(
        "--benchmarks=fillrandom,waitforcompaction",
        "--num=2000000",
        "--threads=2"
    ),
    designs: &[],
    from: None,
};

/// Reusing the tables a compaction does not touch (section 4.4), under sequential keys (random
/// keys leave nothing to reuse: see the scaling note).
pub const REUSE: Experiment = Experiment {
    name: "fluidkv-reuse",
    paper: PAPER,
    figure: "section 4.4 (an LST that overlaps no other input is reused unchanged)",
    designs: &[
        "fluidkv",
        "rewrite=fluidkv+compaction.reuse_untouched_runs=false",
    ],
    phases: &[Phase {
        name: "sequential",
        bench_args: fluid_args!(
            "--benchmarks=fillseq,waitforcompaction",
            "--num=2000000",
            "--threads=1"
        ),
        designs: &[],
        from: None,
    }],
    scaling: "the write experiment's 2M records, loaded in key order (one thread); with and \
              without reusing the StableStore runs no buffer-tree key falls into (and moving \
              buffer trees that overlap no other input). No random-key check: a buffer tree of \
              uniform random keys spans the whole key space, so every StableStore run is \
              touched and both designs rewrite the same bytes (1.000x by construction, a check \
              that cannot fail).",
    claim: "Reusing untouched tables saves compaction writes where buffer trees do not cover \
            every table's range (keys in order); under uniform random keys every table is \
            touched and nothing can be reused.",
    checks: &[ratio(
        "sequential load: reuse leaves the compactions nothing to write, so WA is the \
             flushes' alone, half of flushing and rewriting each buffer tree once",
        "not measured (section 4.4: reuse reduces write amplification); band by hand: \
             with keys in order no compaction input overlaps another, so the design predicts \
             1 write per byte against 2 (flush, then one rewrite): 1/2, held like a paper \
             effect to sqrt(1/2)",
        "sequential",
        Metric::WriteAmpExcludingLog,
        "fluidkv",
        "rewrite",
        Band::AtMost(0.707),
    )],
    rounds: 3,
};

/// Reusing untouched LSTs inside the StableStore runs a compaction merges (section 4.4), against
/// reusing whole runs only: sequential appenders in a few key ranges touch one LST per range.
pub const REUSE_TABLES: Experiment = Experiment {
    name: "fluidkv-reuse-tables",
    paper: PAPER,
    figure: "section 4.4 (an LST that overlaps no other input is reused unchanged), per LST",
    designs: &[
        "fluidkv",
        "files=fluidkv+compaction.reuse_untouched_tables=false",
    ],
    phases: &[Phase {
        name: "streams",
        bench_args: fluid_args!(
            "--benchmarks=fillseq,waitforcompaction",
            "--num=4000000",
            "--streams=10",
            "--threads=1"
        ),
        designs: &[],
        from: None,
    }],
    scaling: "4M records appended by 10 interleaved sequential streams (each in its own tenth of \
              the keys, as time series per device); with per-LST reuse (fluidkv's default) and \
              with reuse of whole runs only. No random-key check: uniform random keys put a \
              buffer-tree key in every LST, so both designs rewrite the same bytes (1.000x by \
              construction, a check that cannot fail).",
    claim: "A compaction rewrites only the LSTs a buffer-tree key falls into; a StableStore run \
            with new keys in one LST keeps the others in place.",
    checks: &[ratio(
        "streams: each compaction rewrites one LST per stream instead of one run per \
             stream, so the flushes' and compactions' writes drop",
        "not measured; band by hand: the paper gives no number for reuse (section 4.4: it \
             reduces write amplification), and the saving depends on the run sizes: direction \
             only",
        "streams",
        Metric::WriteAmpExcludingLog,
        "fluidkv",
        "files",
        Band::Below(1.0),
    )],
    rounds: 3,
};

/// Key-value separation (section 4.2): values of 256 bytes or more in value logs against every
/// value inline in the LSTs.
pub const SEPARATION: Experiment = Experiment {
    name: "fluidkv-separation",
    paper: PAPER,
    figure: "section 4.2 (key-value separation for variable-sized records)",
    designs: &["fluidkv", "inline=fluidkv+table.value_separation=0"],
    phases: &[Phase {
        name: "large",
        bench_args: &[
            "--benchmarks=fillrandom,overwrite,readrandom",
            "--num=300000",
            "--key_size=16",
            "--value_size=1024",
            "--write_buffer_size=16777216",
            "--pm_path=/dev/shm/tierkv-fluid.pool",
            "--pm_size=8589934592",
            "--threads=1",
        ],
        designs: &[],
        from: None,
    }],
    scaling: "300k random puts of 1 KiB values (about 300 MB), 300k random overwrites (the \
              logs' garbage), 300k random gets, one thread, no PM latency model; separated \
              (the design's default: values of 256 bytes or more) or inline.",
    claim: "For variable-sized records the LSTs hold pointers into logs: compactions move \
            pointers, not values (the paper separates in its whole evaluation and leaves the \
            logs' garbage collection to future work).",
    checks: &[
        ratio(
            "compactions and flushes write far less with separation (WA without the log < 0.6x)",
            "not measured (separation on throughout); band by hand: inline writes each value \
             at least twice beyond the log (flush, then at least one compaction: 300 MB through \
             a 16 MiB FastStore), separated once (its value log) plus 24-byte entries: about \
             1/2 at most, with room for the entries",
            "large",
            Metric::WriteAmpExcludingLog,
            "fluidkv",
            "inline",
            Band::Below(0.6),
        ),
        ratio(
            "random writes: separated faster than inline",
            "not measured; band by hand: the paper separates throughout (section 6.1) and \
             never compares: direction only",
            "large",
            FILL,
            "fluidkv",
            "inline",
            Band::Above(1.0),
        ),
        ratio(
            "random gets: separated at least as fast as inline",
            "not measured; band by hand: the paper separates throughout (section 6.1) and \
             never compares: direction only",
            "large",
            READ,
            "fluidkv",
            "inline",
            Band::AtLeast(1.0),
        ),
        ratio(
            "space: the logs' garbage costs less than 2x the inline footprint",
            "2-3x the data in PM; band by hand: that is PM against the data for 8+8 records \
             (Fig. 11d), not against inline values; the logs are never collected (section 8), \
             so the overwrites leave two copies of each value: at most 2x inline",
            "large",
            Metric::SpaceAmp,
            "fluidkv",
            "inline",
            Band::Below(2.0),
        ),
    ],
    rounds: 3,
};
