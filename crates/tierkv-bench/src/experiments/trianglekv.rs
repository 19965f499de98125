//! The experiments of TriangleKV (Ding et al., "TriangleKV: Reducing Write Stalls and Write
//! Amplification in LSM-Tree Based KV Stores With Triangle Container in NVM", IEEE TPDS 2022),
//! scaled to this machine: `trianglekv`, its baseline `matrixkv`, `leveled-pm` ("RocksDB-L0-NVM",
//! its L0 triggers raised so that L0 really fills the same 64 MiB of PM) and `leveled`
//! ("RocksDB-SSD").
//!
//! Layout (the papers' and the design brief's): databases in a temporary directory on the disk,
//! the PM pools on `/dev/shm` (`/dev/shm/tierkv-tri.pool-<label>`) with the `nvdimm` latency
//! preset, and the SSD model on: writes capped at 200 MB/s and reads at 250 MB/s, about the
//! PM:SSD bandwidth ratio of the paper's Table 1 over this machine's emulated PM (without the
//! cap the page cache absorbs the SSD and there are no stalls to remove).
//!
//! Scaling (the reading notes'): the paper loads 80 GB of 4 KB values into an 8 GB NVM L0 with
//! 64 MB memtables and SSTables. Here: 160k random puts of 16-byte keys and 4 KiB values
//! (640 MiB, ~63% unique keys as the paper's load), 2 MiB memtables and SSTables, a 64 MiB PM
//! L0 (data / L0 = 10 as the paper's), compaction at 60% of it, each row compaction moving 10 to
//! 20 MiB of L0 data (half to all of 10 SSTables), L1 = 64 MiB for the row containers (the
//! flattened levels) and 16 MiB for `leveled` and `leveled-pm` (the paper's 256 MB scaled by the
//! same 1/16 as the memtable); `leveled-pm`'s L0 slows down at 28 and stops at 32 files (64 MiB).
//! One client thread.

use super::{Bench, Check, Compare, Experiment, Metric, Phase};
use crate::verdict::Band;

const PAPER: &str = "TriangleKV (Ding et al., IEEE TPDS 2022)";

/// The four stores of Figs. 13-18.
const STORES: &[&str] = &[
    "leveled=leveled+compaction.max_bytes_for_level_base=16777216",
    "leveled-pm=leveled-pm+compaction.max_bytes_for_level_base=16777216\
     +compaction.level0_slowdown_trigger=28+compaction.level0_stop_trigger=32",
    "matrixkv=matrixkv+rows.l0_bytes=67108864",
    "trianglekv=trianglekv+rows.l0_bytes=67108864",
];

/// The bench flags every phase shares, after the benchmarks and the counts.
macro_rules! tri_args {
    ($($arg:expr),*) => {
        &[
            $($arg,)*
            "--key_size=16",
            "--value_size=4096",
            "--write_buffer_size=2097152",
            "--set=compaction.target_file_size=2097152",
            "--pm_latency=nvdimm",
            "--pm_path=/dev/shm/tierkv-tri.pool",
            "--pm_size=2147483648",
            "--set=pm.chunk_bytes=262144",
            "--ssd_write_mbps=200",
            "--ssd_read_mbps=250",
            "--threads=1",
            "--sample_interval_ms=500",
        ]
    };
}

const FILL: Metric = Metric::OpsPerSec(Bench::all("fillrandom"));

/// Random-write throughput, write amplification, and every L0 -> L1 compaction (E1).
pub const WRITE: Experiment = Experiment {
    name: "trianglekv-write",
    paper: PAPER,
    figure: "Figs. 13a, 13c, 15-18 (random-write throughput over time, write amplification, \
             L0-L1 compaction sizes and durations, stalls; random reads after the load)",
    designs: STORES,
    phases: &[
        Phase {
            name: "fill",
            bench_args: tri_args!("--benchmarks=fillrandom", "--num=160000"),
            designs: &[],
            from: None,
        },
        Phase {
            name: "read",
            bench_args: tri_args!(
                "--benchmarks=waitforcompaction,readrandom",
                "--num=160000",
                "--reads=20000"
            ),
            designs: &[],
            from: Some("fill"),
        },
    ],
    scaling: "80 GB of 4 KB values into an 8 GB NVM L0, 64 MB memtables and SSTables -> 640 MiB \
              (160k x 4 KiB) into a 64 MiB PM L0, 2 MiB memtables and SSTables; L1 64 MiB for \
              the row containers, 16 MiB for leveled and leveled-pm; leveled-pm's L0 stops at 32 \
              files (64 MiB, the whole PM L0, as the paper's RocksDB-L0-NVM fills its 8 GB); \
              SSD capped at 200 MB/s write, 250 MB/s read; nvdimm PM preset (the paper: real \
              Optane PMM); one client thread (the paper does not say). The write figures \
              (throughput, write amplification, L0 -> L1 jobs, stalls) are the load's alone, \
              as the paper's 80 GB random write. Reads: the paper reads 1M keys once the tree \
              is well balanced; here, on copies of the loaded databases and pools (reopened, \
              so their caches start cold), waitforcompaction (until no flush or compaction is \
              running or due: the row containers' L0 is then under its 60% trigger, not \
              empty) and then 20k random gets, about a third of them of keys never written \
              (the load's ~63% unique keys).",
    claim: "Right-angle-side compaction keeps L0 -> L1 compactions small and short, so \
            TriangleKV writes fastest (4.9x RocksDB-L0-NVM, 1.4x MatrixKV) with the lowest \
            write amplification (3.26x below RocksDB-SSD; MatrixKV 2.56x, RocksDB-L0-NVM \
            1.99x).",
    checks: &[
        Check {
            claim: "random writes: trianglekv 4.9x faster than leveled-pm (RocksDB-L0-NVM)",
            paper: "4.9x (Fig. 13a, 4 KB values)",
            phase: "fill",
            metric: FILL,
            compare: Compare::Ratio {
                a: "trianglekv",
                b: "leveled-pm",
                band: Band::Paper(4.9),
            },
        },
        Check {
            claim: "random writes: trianglekv 1.4x faster than matrixkv",
            paper: "1.4x (Fig. 13a, 4 KB values)",
            phase: "fill",
            metric: FILL,
            compare: Compare::Ratio {
                a: "trianglekv",
                b: "matrixkv",
                band: Band::Paper(1.4),
            },
        },
        Check {
            claim: "random writes: leveled < leveled-pm < matrixkv",
            paper: "RocksDB-SSD < RocksDB-L0-NVM < MatrixKV (Fig. 13a)",
            phase: "fill",
            metric: FILL,
            compare: Compare::Increasing(&["leveled", "leveled-pm", "matrixkv"]),
        },
        Check {
            claim: "write amplification: trianglekv < matrixkv < leveled-pm < leveled",
            paper: "3.26x / 2.56x / 1.99x below RocksDB-SSD",
            phase: "fill",
            metric: Metric::WriteAmpExcludingLog,
            compare: Compare::Increasing(&["trianglekv", "matrixkv", "leveled-pm", "leveled"]),
        },
        Check {
            claim: "L0 -> L1 compactions: trianglekv's read less than leveled-pm's",
            paper: "the smallest (Figs. 17, 18); band by hand: the paper gives no number (the \
                    figures only, and its text none), so the direction alone",
            phase: "fill",
            metric: Metric::L0CompactionMeanBytes,
            compare: Compare::Ratio {
                a: "trianglekv",
                b: "leveled-pm",
                band: Band::Below(1.0),
            },
        },
        Check {
            claim: "the longest L0 -> L1 compaction: trianglekv's shorter than leveled-pm's",
            paper: "the shortest (Fig. 17); band by hand: the paper gives no number (the \
                    figure only), so the direction alone",
            phase: "fill",
            metric: Metric::L0CompactionMaxSeconds,
            compare: Compare::Ratio {
                a: "trianglekv",
                b: "leveled-pm",
                band: Band::Below(1.0),
            },
        },
        Check {
            claim: "stall time: trianglekv below leveled-pm",
            paper: "the most stable throughput (Fig. 15); band by hand: the paper gives no \
                    number (stalls are read off the throughput curves), so the direction alone",
            phase: "fill",
            metric: Metric::StallSeconds,
            compare: Compare::Ratio {
                a: "trianglekv",
                b: "leveled-pm",
                band: Band::Below(1.0),
            },
        },
        Check {
            claim: "random reads once compactions are done: trianglekv about leveled \
                    (0.8..1.25)",
            paper: "similar, slightly ahead (Fig. 13c; no number); band by hand: no effect to \
                    scale (about 1), so a quarter either way",
            phase: "read",
            metric: Metric::OpsPerSec(Bench::all("readrandom")),
            compare: Compare::Ratio {
                a: "trianglekv",
                b: "leveled",
                band: Band::Within(0.8, 1.25),
            },
        },
    ],
    rounds: 3,
};

/// The stores of the hint experiment: Bloom filters off (the paper's rows have none).
const L0_STORES: &[&str] = &[
    "leveled-pm=leveled-pm+table.bloom_bits_per_key=0+compaction.level0_compaction_trigger=64\
     +compaction.level0_slowdown_trigger=64+compaction.level0_stop_trigger=64",
    "trianglekv=trianglekv+rows.l0_bytes=67108864+rows.sequential_bypass=false",
];

/// Point lookups with every key in L0: the cross-row hints against one binary search per L0
/// table (E4).
pub const HINTS: Experiment = Experiment {
    name: "trianglekv-hints",
    paper: PAPER,
    figure: "section 5.3.2 (gets with the data in NVM: cross-row hints)",
    designs: L0_STORES,
    phases: &[Phase {
        name: "l0",
        bench_args: tri_args!(
            "--benchmarks=fillrandom,readrandom",
            "--num=8000",
            "--reads=100000"
        ),
        designs: &[],
        from: None,
    }],
    scaling: "8 GB in NVM, 1M gets -> 32 MiB (8,000 x 4 KiB, 16 rows or L0 tables of 2 MiB, \
              below the 60% trigger of the 64 MiB L0: nothing leaves L0), 100k gets; no Bloom \
              filters (the paper's rows have none; leveled-pm's are turned off), no sequential \
              bypass; L0 triggers of leveled-pm raised so its 16 tables stay in L0. The gets \
              draw keys as the load does, so about a third of them miss in both stores (the \
              paper searches for items in NVM).",
    claim: "With the data in the PM L0, the cross-row hints make gets much faster than a \
            binary search in every L0 table (18x RocksDB-L0-NVM).",
    checks: &[Check {
        claim: "gets with every key in L0: trianglekv 18x faster than leveled-pm",
        paper: "18x (162.6 against 9 MB/s; the same ratio in gets/s, the values being all 4 KB)",
        phase: "l0",
        metric: Metric::OpsPerSec(Bench::all("readrandom")),
        compare: Compare::Ratio {
            a: "trianglekv",
            b: "leveled-pm",
            band: Band::Paper(18.0),
        },
    }],
    rounds: 3,
};

/// The flattened levels against RocksDB's L1 (E5).
pub const FLATTEN: Experiment = Experiment {
    name: "trianglekv-flatten",
    paper: PAPER,
    figure: "Fig. 19 (L1 of 256 MB against L1 as large as the NVM L0)",
    designs: &[
        "leveled=leveled+compaction.max_bytes_for_level_base=16777216",
        "leveled-flat=leveled+compaction.max_bytes_for_level_base=67108864",
        "trianglekv-L1-16M=trianglekv+rows.l0_bytes=67108864\
         +compaction.max_bytes_for_level_base=16777216",
        "trianglekv=trianglekv+rows.l0_bytes=67108864",
    ],
    phases: &[Phase {
        name: "fill",
        bench_args: tri_args!("--benchmarks=fillrandom", "--num=160000"),
        designs: &[],
        from: None,
    }],
    scaling: "L1 256 MB against 8 GB -> 16 MiB against 64 MiB (= the PM L0), the write \
              experiment's load. The paper's L1 grows 32x, here 4x (16 MiB is its 256 MB / \
              16, 64 MiB its 8 GB / 128), so a smaller slowdown of leveled is to be expected.",
    claim: "A large L1 makes leveled compaction slower (3x for RocksDB-SSD), while TriangleKV \
            gains from it (24%): its L0 -> L1 compactions take small ranges of the rows.",
    checks: &[
        Check {
            claim: "leveled with the flattened L1 is 3x slower",
            paper: "3x slower for RocksDB-SSD (Fig. 19): 0.333",
            phase: "fill",
            metric: FILL,
            compare: Compare::Ratio {
                a: "leveled-flat",
                b: "leveled",
                band: Band::Paper(0.333),
            },
        },
        Check {
            claim: "trianglekv with the flattened L1 is 24% faster",
            paper: "+24% (Fig. 19): 1.24",
            phase: "fill",
            metric: FILL,
            compare: Compare::Ratio {
                a: "trianglekv",
                b: "trianglekv-L1-16M",
                band: Band::Paper(1.24),
            },
        },
    ],
    rounds: 3,
};

const YCSB_A: Bench = Bench::all("ycsb-a");

/// YCSB-A at a fixed request rate: the tail latency of Table 2 (E2).
pub const TAIL: Experiment = Experiment {
    name: "trianglekv-tail",
    paper: PAPER,
    figure: "Table 2 (YCSB-A at a fixed request rate: average, p99 and p99.9 latency)",
    designs: STORES,
    phases: &[
        Phase {
            name: "load",
            bench_args: tri_args!("--benchmarks=ycsb-load", "--num=160000"),
            designs: &[],
            from: None,
        },
        Phase {
            name: "a",
            bench_args: tri_args!(
                "--benchmarks=ycsb-load,ycsb-a",
                "--num=160000",
                "--reads=60000",
                "--ops_per_sec=8000"
            ),
            designs: &[],
            from: Some("load"),
        },
    ],
    scaling: "a YCSB load of the write experiment's size (160k x 4 KiB), then 60k YCSB-A \
              operations at a fixed rate of 8,000 ops/s (the paper's ~20K req/s is about \
              60% of what its RocksDB-SSD sustains; here 8,000 is 57% of leveled's \
              closed-loop YCSB-A rate on this layout, 13,967 ops/s measured at commit \
              79688e8), open loop: each latency counts from when the request was due.",
    claim: "At a fixed request rate, TriangleKV's p99 is 29x lower than RocksDB-SSD's, 2.1x lower \
            than RocksDB-L0-NVM's and about MatrixKV's (1.07x lower).",
    checks: &[
        Check {
            claim: "p99: trianglekv < leveled-pm < leveled",
            paper: "379 < 786 < 11,055 us",
            phase: "a",
            metric: Metric::P99Latency(YCSB_A),
            compare: Compare::Increasing(&["trianglekv", "leveled-pm", "leveled"]),
        },
        Check {
            claim: "p99.9: trianglekv < leveled-pm < leveled",
            paper: "635 < 1,112 < 17,983 us",
            phase: "a",
            metric: Metric::P999Latency(YCSB_A),
            compare: Compare::Increasing(&["trianglekv", "leveled-pm", "leveled"]),
        },
        Check {
            claim: "p99: trianglekv 1.07x lower than matrixkv",
            paper: "379 against 405 us (Table 2): 0.936 (the text calls them similar; the \
                    abstract claims 1.1x)",
            phase: "a",
            metric: Metric::P99Latency(YCSB_A),
            compare: Compare::Ratio {
                a: "trianglekv",
                b: "matrixkv",
                band: Band::Paper(0.936),
            },
        },
    ],
    rounds: 3,
};

/// The YCSB workloads of Fig. 14 in the paper's order, one check per workload.
macro_rules! ycsb_check {
    ($claim:expr, $paper:expr, $bench:expr, $b:expr, $band:expr) => {
        Check {
            claim: $claim,
            paper: $paper,
            phase: "ycsb",
            metric: Metric::OpsPerSec(Bench::all($bench)),
            compare: Compare::Ratio {
                a: "trianglekv",
                b: $b,
                band: $band,
            },
        }
    };
}

/// YCSB load and A-F throughput (Fig. 14; E3).
pub const YCSB: Experiment = Experiment {
    name: "trianglekv-ycsb",
    paper: PAPER,
    figure: "Fig. 14 (YCSB load and A-F throughput)",
    designs: STORES,
    phases: &[Phase {
        name: "ycsb",
        bench_args: tri_args!(
            "--benchmarks=ycsb-load,ycsb-a,ycsb-b,ycsb-c,ycsb-d,ycsb-e,ycsb-f",
            "--num=160000",
            "--reads=20000"
        ),
        designs: &[],
        from: None,
    }],
    scaling: "an 80 GB load and 1M operations per workload -> a load of the write experiment's \
              size (160k x 4 KiB), then 20k operations per workload (A to F in order in one \
              database; E's scans up to 100 records of 4 KiB), the write experiment's stores \
              and SSD model.",
    claim: "TriangleKV is fastest on the write-heavy load, A and F (4.54x RocksDB-L0-NVM and \
            1.38x MatrixKV on average) and adequate on the read-heavy B-E.",
    checks: &[
        ycsb_check!(
            "YCSB load: trianglekv 4.54x faster than leveled-pm",
            "4.54x (Fig. 14: the average over load, A and F; each held to it here)",
            "ycsb-load",
            "leveled-pm",
            Band::Paper(4.54)
        ),
        ycsb_check!(
            "YCSB load: trianglekv 1.38x faster than matrixkv",
            "1.38x (Fig. 14: the average over load, A and F; each held to it here)",
            "ycsb-load",
            "matrixkv",
            Band::Paper(1.38)
        ),
        ycsb_check!(
            "YCSB-A: trianglekv 4.54x faster than leveled-pm",
            "4.54x (Fig. 14: the average over load, A and F; each held to it here)",
            "ycsb-a",
            "leveled-pm",
            Band::Paper(4.54)
        ),
        ycsb_check!(
            "YCSB-A: trianglekv 1.38x faster than matrixkv",
            "1.38x (Fig. 14: the average over load, A and F; each held to it here)",
            "ycsb-a",
            "matrixkv",
            Band::Paper(1.38)
        ),
        ycsb_check!(
            "YCSB-F: trianglekv 4.54x faster than leveled-pm",
            "4.54x (Fig. 14: the average over load, A and F; each held to it here)",
            "ycsb-f",
            "leveled-pm",
            Band::Paper(4.54)
        ),
        ycsb_check!(
            "YCSB-F: trianglekv 1.38x faster than matrixkv",
            "1.38x (Fig. 14: the average over load, A and F; each held to it here)",
            "ycsb-f",
            "matrixkv",
            Band::Paper(1.38)
        ),
        ycsb_check!(
            "YCSB-B: trianglekv adequate (>= 0.8x leveled-pm)",
            "adequate (Fig. 14; no number); band by hand: no effect to scale, so at least \
             0.8x",
            "ycsb-b",
            "leveled-pm",
            Band::AtLeast(0.8)
        ),
        ycsb_check!(
            "YCSB-C: trianglekv adequate (>= 0.8x leveled-pm)",
            "adequate (Fig. 14; no number); band by hand: no effect to scale, so at least \
             0.8x",
            "ycsb-c",
            "leveled-pm",
            Band::AtLeast(0.8)
        ),
        ycsb_check!(
            "YCSB-D: trianglekv adequate (>= 0.8x leveled-pm)",
            "adequate (Fig. 14; no number); band by hand: no effect to scale, so at least \
             0.8x",
            "ycsb-d",
            "leveled-pm",
            Band::AtLeast(0.8)
        ),
        ycsb_check!(
            "YCSB-E: trianglekv adequate (>= 0.8x leveled-pm)",
            "adequate (Fig. 14; no number); band by hand: no effect to scale, so at least \
             0.8x",
            "ycsb-e",
            "leveled-pm",
            Band::AtLeast(0.8)
        ),
    ],
    rounds: 3,
};

/// The random-write load of the write experiment on `trianglekv` with and without freeing the
/// pages of rows wholly in dead ranges (section 3.1): the PM the pool holds at the end, and
/// what freeing costs the writes.
pub const PAGES: Experiment = Experiment {
    name: "trianglekv-pages",
    paper: PAPER,
    figure: "section 3.1 (pages wholly in dead ranges are freed)",
    designs: &[
        "trianglekv=trianglekv+rows.l0_bytes=67108864",
        "keep-pages=trianglekv+rows.l0_bytes=67108864+rows.free_dead_pages=false",
    ],
    phases: &[Phase {
        name: "fill",
        bench_args: tri_args!(
            "--benchmarks=fillrandom,readrandom",
            "--num=160000",
            "--reads=20000"
        ),
        designs: &[],
        from: None,
    }],
    scaling: "the write experiment's load (160k x 4 KiB into a 64 MiB PM L0, 256 KiB PM chunks as \
              the pages), then 20k random gets over rows with freed pages.",
    claim: "TriangleKV frees the pages of each row that lie wholly in its dead ranges, so the \
            PM L0 holds little more than its live data; freeing costs the writes nothing.",
    checks: &[
        Check {
            claim: "PM held at the end: below keeping dead pages until the row dies",
            paper: "pages in dead ranges freed (section 3.1; no figure); band by hand: the \
                    paper measures nothing, so the direction alone",
            phase: "fill",
            metric: Metric::PmAllocatedBytes,
            compare: Compare::Ratio {
                a: "trianglekv",
                b: "keep-pages",
                band: Band::Below(1.0),
            },
        },
        Check {
            claim: "random writes: freeing costs nothing (0.9..1.1)",
            paper: "not measured; band by hand: no effect to scale (about unchanged), so a \
                    tenth either way",
            phase: "fill",
            metric: FILL,
            compare: Compare::Ratio {
                a: "trianglekv",
                b: "keep-pages",
                band: Band::Within(0.9, 1.1),
            },
        },
        Check {
            claim: "random gets over rows with freed pages: as fast (0.9..1.1)",
            paper: "not measured; band by hand: no effect to scale (about unchanged), so a \
                    tenth either way",
            phase: "fill",
            metric: Metric::OpsPerSec(Bench::all("readrandom")),
            compare: Compare::Ratio {
                a: "trianglekv",
                b: "keep-pages",
                band: Band::Within(0.9, 1.1),
            },
        },
    ],
    rounds: 3,
};
