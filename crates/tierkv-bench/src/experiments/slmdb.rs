//! The experiments of SLM-DB (Kaiyrakhmet et al., "SLM-DB: Single-Level Key-Value Store with
//! Persistent Memory", FAST 2019): `slmdb` against `leveled` (LevelDB) and `leveled-pmtable`
//! (the paper's "LevelDB+PM"), the PM latency sweep, and the selective-compaction knobs.
//!
//! Layout (the paper's and the design brief's): databases in a temporary directory on the disk,
//! the PM pool on `/dev/shm` (`/dev/shm/tierkv-slm.pool-<label>`) with the `slmdb` latency
//! preset (500 ns per written-back line, the paper's emulation). Scaling (the reading notes'):
//! the paper loads 8 GB of 1 KB values through 64 MB memtables; here 1M random puts of 20-byte
//! keys and 1 KiB values (1 GiB) through 8 MiB memtables into 2 MiB tables (the same ~128
//! flushes); WALs not synced, as the paper's LevelDB; the SSD model on at the sequential rates
//! of the paper's SSD (an Intel DC S3520 480 GB: 380 MB/s writes, 450 MB/s reads), since the
//! claims are about disk writes and without the cap the page cache takes them for free. Reads
//! bypass the page cache (`--use_direct_reads`: the paper capped DRAM at 4 GB for an 8 GB
//! database so that reads reach the disk) with an 8 MiB block cache (the paper's scaled). One
//! client thread.

use super::{ops, ratio, Bench, Check, Compare, Experiment, Metric, Phase};
use crate::verdict::Band;

const PAPER: &str = "SLM-DB (Kaiyrakhmet et al., FAST 2019)";

/// The bench flags the `slmdb` experiments share, after the benchmarks, counts and value size.
macro_rules! slm_args {
    ($($arg:expr),*) => {
        &[
            $($arg,)*
            "--key_size=20",
            "--write_buffer_size=8388608",
            "--set=compaction.target_file_size=2097152",
            "--set=compaction.max_bytes_for_level_base=10485760",
            "--pm_latency=slmdb",
            "--pm_path=/dev/shm/tierkv-slm.pool",
            "--pm_size=2147483648",
            "--ssd_write_mbps=380",
            "--ssd_read_mbps=450",
            "--use_direct_reads",
            "--threads=1",
            "--sample_interval_ms=1000",
        ]
    };
}

/// Random writes, random reads, sequential reads and range queries at 1 KiB values, and the
/// disk bytes written (Fig. 6; E1 and E2 of the reading notes).
pub const OPERATIONS: Experiment = Experiment {
    name: "slmdb-ops",
    paper: PAPER,
    figure: "Fig. 6 (random write, random read, range query and sequential read throughput, \
             disk writes; 1 KB values)",
    designs: &["leveled", "leveled-pmtable", "slmdb"],
    phases: &[Phase {
        name: "main",
        bench_args: slm_args!(
            "--benchmarks=fillrandom,waitforcompaction,readrandom,readseq,seekrandom",
            "--num=1000000",
            "--value_size=1024",
            "--reads=5000",
            "--seek_nexts=100"
        ),
        designs: &[],
        from: None,
    }],
    scaling: "an 8 GB load of 1 KB values, 64 MB memtables -> 1M x 1 KiB (1 GiB), 20-byte keys, \
              8 MiB memtables, 2 MiB tables, L1 10 MiB; 5k random gets, 5k sequential reads \
              and 5k range queries of 100 keys after the load's compactions finished (the \
              paper's order); slmdb PM preset; SSD model at the paper's SSD's \
              rates; direct reads with an 8 MiB block cache.",
    claim: "SLM-DB writes 1.56-2.22x faster than LevelDB (1.96x on average), reads 1.07x faster \
            at 1 KB, is about 11% slower on 100-key range queries at small values, and writes \
            39% of LevelDB's disk bytes.",
    checks: &[
        ratio(
            "random writes: slmdb faster than leveled",
            "1.56-2.22x",
            "main",
            Metric::OpsPerSec(Bench::all("fillrandom")),
            "slmdb",
            "leveled",
            Band::Above(1.0),
        ),
        ratio(
            "random writes: slmdb faster than leveled-pmtable (the index's share)",
            "LevelDB+PM about LevelDB; SLM-DB -49% latency (Fig. 4)",
            "main",
            Metric::OpsPerSec(Bench::all("fillrandom")),
            "slmdb",
            "leveled-pmtable",
            Band::Above(1.0),
        ),
        ratio(
            "disk bytes written: slmdb well below leveled",
            "0.39",
            "main",
            Metric::SsdBytesWritten,
            "slmdb",
            "leveled",
            Band::Below(0.8),
        ),
        ratio(
            "random reads: slmdb at least as fast as leveled",
            "1.07x at 1 KB",
            "main",
            Metric::OpsPerSec(Bench::all("readrandom")),
            "slmdb",
            "leveled",
            Band::AtLeast(1.0),
        ),
        ratio(
            "100-key range queries: leveled faster at 1 KB",
            "about 0.89x",
            "main",
            Metric::OpsPerSec(Bench::all("seekrandom")),
            "slmdb",
            "leveled",
            Band::Below(1.0),
        ),
    ],
    rounds: 1,
};

/// YCSB load and A-F at 1 KiB (Fig. 7; E3).
pub const YCSB: Experiment = Experiment {
    name: "slmdb-ycsb",
    paper: PAPER,
    figure: "Fig. 7 (YCSB load, A, B, C, F, D, E throughput; 1 KB values)",
    designs: &["leveled", "slmdb"],
    phases: &[Phase {
        name: "ycsb",
        bench_args: slm_args!(
            "--benchmarks=ycsb-load,waitforcompaction,ycsb-a,ycsb-b,ycsb-c,ycsb-f,ycsb-d,ycsb-e",
            "--num=400000",
            "--value_size=1024",
            "--reads=10000"
        ),
        designs: &[],
        from: None,
    }],
    scaling: "an 8 GB load and 0.2N operations per workload -> 400k x 1 KiB, then 10k operations \
              per workload in the paper's order (A, B, C, F, D, then E) in one database; E's \
              scans up to 100 records; the operations experiment's settings.",
    claim: "SLM-DB is faster than LevelDB on every workload but E at 1 KB (A 2.7x), and writes \
            13% of LevelDB's disk bytes through D at 1 KB.",
    checks: &[
        ratio(
            "YCSB load: slmdb faster than leveled",
            "faster",
            "ycsb",
            ops("ycsb-load"),
            "slmdb",
            "leveled",
            Band::Above(1.0),
        ),
        ratio(
            "YCSB-A: slmdb faster than leveled",
            "2.7x",
            "ycsb",
            ops("ycsb-a"),
            "slmdb",
            "leveled",
            Band::Above(1.0),
        ),
        ratio(
            "YCSB-B: slmdb faster than leveled",
            "faster",
            "ycsb",
            ops("ycsb-b"),
            "slmdb",
            "leveled",
            Band::Above(1.0),
        ),
        ratio(
            "YCSB-C: slmdb faster than leveled",
            "faster",
            "ycsb",
            ops("ycsb-c"),
            "slmdb",
            "leveled",
            Band::Above(1.0),
        ),
        ratio(
            "YCSB-E: leveled faster at 1 KB",
            "slower at 1 KB (+15.6% at 4-64 KB)",
            "ycsb",
            ops("ycsb-e"),
            "slmdb",
            "leveled",
            Band::Below(1.0),
        ),
        ratio(
            "disk bytes written through D: slmdb well below leveled",
            "0.13",
            "ycsb",
            Metric::SsdBytesWritten,
            "slmdb",
            "leveled",
            Band::Below(0.8),
        ),
    ],
    rounds: 1,
};

/// The PM write latency sweep at 128-byte and 1 KiB values (Fig. 5; E4).
pub const PM_LATENCY: Experiment = Experiment {
    name: "slmdb-pm-latency",
    paper: PAPER,
    figure: "Fig. 5 (random writes at 0 (DRAM), 300, 500 and 900 ns PM write latency)",
    designs: &[
        "slm-0=slmdb+pm.latency.write_ns=0",
        "slm-300=slmdb+pm.latency.write_ns=300",
        "slm-500=slmdb+pm.latency.write_ns=500",
        "slm-900=slmdb+pm.latency.write_ns=900",
    ],
    phases: &[
        Phase {
            name: "1k",
            bench_args: slm_args!(
                "--benchmarks=fillrandom",
                "--num=400000",
                "--value_size=1024"
            ),
            designs: &[],
            from: None,
        },
        Phase {
            name: "128",
            bench_args: slm_args!(
                "--benchmarks=fillrandom",
                "--num=1600000",
                "--value_size=128"
            ),
            designs: &[
                "leveled",
                "slm-0=slmdb+pm.latency.write_ns=0",
                "slm-300=slmdb+pm.latency.write_ns=300",
                "slm-500=slmdb+pm.latency.write_ns=500",
                "slm-900=slmdb+pm.latency.write_ns=900",
            ],
            from: None,
        },
    ],
    scaling: "the paper's 8 GB loads -> 400k x 1 KiB and 1.6M x 128 B; the latency per \
              written-back PM line set per variant (the slmdb preset is 500 ns); the operations \
              experiment's other settings.",
    claim: "Writes slow down as the PM write latency grows (up to 75% slower than at DRAM \
            latency at 1 KB); at 128 B SLM-DB loses to LevelDB at 500 ns and wins at DRAM \
            latency.",
    checks: &[
        Check {
            claim: "1 KiB random writes get slower as the PM latency grows",
            paper: "up to 75% slower at 900 ns than at DRAM latency",
            phase: "1k",
            metric: Metric::OpsPerSec(Bench::all("fillrandom")),
            compare: Compare::Increasing(&["slm-900", "slm-500", "slm-300", "slm-0"]),
        },
        Check {
            claim: "128 B random writes get slower as the PM latency grows",
            paper: "DRAM latency +24.39% over 500 ns; 300 ns -6.4%",
            phase: "128",
            metric: Metric::OpsPerSec(Bench::all("fillrandom")),
            compare: Compare::Increasing(&["slm-900", "slm-500", "slm-300", "slm-0"]),
        },
        ratio(
            "128 B random writes at DRAM latency: slmdb faster than leveled",
            "a win (+24.39% over 500 ns)",
            "128",
            ops("fillrandom"),
            "slm-0",
            "leveled",
            Band::Above(1.0),
        ),
        ratio(
            "128 B random writes at 500 ns: slmdb slower than leveled",
            "-36.22%",
            "128",
            ops("fillrandom"),
            "slm-500",
            "leveled",
            Band::Below(1.0),
        ),
    ],
    rounds: 1,
};

/// The live-key ratio and the candidate rules (section 6.5; E5 and E6).
pub const RULES: Experiment = Experiment {
    name: "slmdb-rules",
    paper: PAPER,
    figure: "section 6.5 (live-key threshold 0.6 / 0.7 / 0.8; selective compaction without R2, \
             R3 or both on YCSB-E)",
    designs: &[
        "live-0.6=slmdb+slmdb.live_key_ratio=0.6",
        "slmdb",
        "live-0.8=slmdb+slmdb.live_key_ratio=0.8",
    ],
    phases: &[
        Phase {
            name: "live",
            bench_args: slm_args!(
                "--benchmarks=fillrandom,overwrite",
                "--num=500000",
                "--value_size=1024"
            ),
            designs: &[],
            from: None,
        },
        Phase {
            name: "rules",
            bench_args: slm_args!(
                "--benchmarks=ycsb-load,waitforcompaction,ycsb-e",
                "--num=400000",
                "--value_size=1024",
                "--reads=10000"
            ),
            designs: &[
                "slmdb",
                "no-r2=slmdb+slmdb.leaf_scan=false",
                "no-r3=slmdb+slmdb.range_rule=false",
                "no-rules=slmdb+slmdb.leaf_scan=false+slmdb.range_rule=false",
            ],
            from: None,
        },
    ],
    scaling: "the paper's 8 GB load -> 500k random puts of 1 KiB then 500k random overwrites \
              for the threshold (the overwrites are what R1 collects), 400k x 1 KiB then 10k \
              YCSB-E operations for the rules; the operations experiment's other settings.",
    claim: "A higher live-key threshold writes more to the disk (+7.5% at 0.7, +12.09% at 0.8 \
            over 0.6) and slows writes (2x at 0.8); YCSB-E without R2 is ~15% slower, without \
            R3 ~50% slower, without both over 10x slower.",
    checks: &[
        Check {
            claim: "disk bytes grow with the live-key threshold",
            paper: "+7.5% (0.7), +12.09% (0.8) over 0.6",
            phase: "live",
            metric: Metric::SsdBytesWritten,
            compare: Compare::Increasing(&["live-0.6", "slmdb", "live-0.8"]),
        },
        ratio(
            "random overwrites at 0.8 slower than at 0.6",
            "2x slower",
            "live",
            ops("overwrite"),
            "live-0.8",
            "live-0.6",
            Band::Below(1.0),
        ),
        ratio(
            "YCSB-E without R2 slower",
            "about 15% worse",
            "rules",
            ops("ycsb-e"),
            "no-r2",
            "slmdb",
            Band::Below(1.0),
        ),
        ratio(
            "YCSB-E without R3 slower",
            "about 50% worse latency",
            "rules",
            ops("ycsb-e"),
            "no-r3",
            "slmdb",
            Band::Below(1.0),
        ),
        ratio(
            "YCSB-E without R2 and R3 much slower",
            "over 10x the latency",
            "rules",
            ops("ycsb-e"),
            "no-rules",
            "slmdb",
            Band::Below(0.5),
        ),
    ],
    rounds: 1,
};

/// The persistent memtable alone: LevelDB+PM against LevelDB (Fig. 4).
pub const MEMTABLE: Experiment = Experiment {
    name: "slmdb-memtable",
    paper: PAPER,
    figure: "Fig. 4 (LevelDB+PM: write latency and disk writes against LevelDB)",
    designs: &["leveled", "leveled-pmtable"],
    phases: &[Phase {
        name: "fill",
        bench_args: &[
            "--benchmarks=fillrandom",
            "--num=1000000",
            "--key_size=20",
            "--value_size=1024",
            "--write_buffer_size=8388608",
            "--set=compaction.target_file_size=2097152",
            "--set=compaction.max_bytes_for_level_base=10485760",
            "--pm_latency=slmdb",
            "--pm_path=/dev/shm/tierkv-slm.pool",
            "--pm_size=1073741824",
            "--ssd_write_mbps=380",
            "--ssd_read_mbps=450",
            "--threads=1",
            "--sample_interval_ms=1000",
        ],
        designs: &[],
        from: None,
    }],
    scaling: "8 GB of 1 KB values, 64 MB memtables -> 1 GiB (1M x 1 KiB, 20-byte keys), 8 MiB \
              memtables, 2 MiB tables, L1 10 MiB (LevelDB's); slmdb PM preset (500 ns per \
              written-back line); WAL unsynced; the SSD model at the sequential rates of the \
              paper's Intel DC S3520 480 GB (writes 380 MB/s, reads 450 MB/s).",
    claim: "A persistent memtable without a WAL writes about as fast as LevelDB (latency within \
            a few percent at 1 KB) and writes 16% fewer bytes to the disk (no WAL).",
    checks: &[
        Check {
            claim: "disk bytes written: leveled-pmtable below leveled",
            paper: "-16%",
            phase: "fill",
            metric: Metric::SsdBytesWritten,
            compare: Compare::Ratio {
                a: "leveled-pmtable",
                b: "leveled",
                band: Band::Below(1.0),
            },
        },
        Check {
            claim: "random writes: leveled-pmtable about leveled (0.8..1.25)",
            paper: "about the same latency at 1 KB (-19% at 64 KB)",
            phase: "fill",
            metric: Metric::OpsPerSec(Bench::all("fillrandom")),
            compare: Compare::Ratio {
                a: "leveled-pmtable",
                b: "leveled",
                band: Band::Within(0.8, 1.25),
            },
        },
    ],
    rounds: 1,
};
