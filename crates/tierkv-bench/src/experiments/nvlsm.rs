//! The experiments of NVLSM (Zhang & Du, "NVLSM: A Persistent Memory Key-Value Store Using
//! Log-Structured Merge Tree with Accumulative Compaction", ACM TOS 2021), scaled to this
//! machine: its four stores as design entries (`NVLSM-10`: `nvlsm`; `NVLSM-2/4/20`: `nvlsm`
//! with `Max_Floor` 2/4/20; `NVLSM-L`: `nvlsm-leveled`; `NVLSM-F`: `nvlsm-fragmented`), every
//! run on the `pcm` latency preset (100 ns reads, 400 ns writes per cache line) unless a phase
//! says `nvdimm`, one client thread, 16-byte keys and 128-byte values as in the paper.
//!
//! Layout: the databases (only their manifests, for these all-PM designs) in a temporary
//! directory, each store's pool on `/dev/shm` (`/dev/shm/tierkv-nvlsm.pool-<label>`), a
//! sparse 16 GiB file of 64 KiB chunks (only written bytes take memory).
//!
//! Scaling: the paper loads 50M pairs (7.2 GB) into 2 MB runs: about 3,600 runs of data, in
//! four components (C1 of 4 runs, then 40, 400 and the rest). Here data / run is about the
//! same, ~3,500: 1M pairs (144 MB) in 40 KiB runs for the amplification experiment, 500k pairs
//! (72 MB) in 20 KiB runs for the latency experiments (memtable = run; C1 of 4 runs; NVLSM-L's
//! L1 = 4 runs x 10), which gives four components as in the paper. Every floor is a pool file
//! of at least one chunk, and the pool's directory grows to hold the
//! tens of thousands of floors.
//!
//! Open runs: every experiment keeps up to 200,000 runs open (`max_open_files`). The paper's
//! floors are PM objects that are always mapped, with their Bloom filters in DRAM; with the
//! engine's default of 1,000 open runs, the ~36,000 floors at this ratio were re-opened (their
//! footer, filter and index area read and checked) on most gets, which multiplied the read
//! amplification of a 500k-pair `nvlsm` store by 8 (47.7 against 5.8) and halved its get rate.

use super::{Bench, Check, Compare, Experiment, Metric, Phase};
use crate::verdict::Band;

const PAPER: &str = "NVLSM (Zhang & Du, ACM TOS 2021)";

/// The four stores of Figs. 9 and 10.
const STORES: &[&str] = &[
    "NVLSM-L=nvlsm-leveled+compaction.max_bytes_for_level_base=1638400",
    "NVLSM-F=nvlsm-fragmented",
    "NVLSM-2=nvlsm+nvlsm.max_floor=2",
    "NVLSM-10=nvlsm",
];

/// WA, RA and space of the four stores after 2M random puts and 200k random gets.
pub const AMPLIFICATION: Experiment = Experiment {
    name: "nvlsm-amplification",
    paper: PAPER,
    figure: "Figs. 9 and 10 (write, read and space amplification)",
    designs: STORES,
    phases: &[Phase {
        name: "fill",
        bench_args: &[
            "--benchmarks=fillrandom,readrandom",
            "--num=1000000",
            "--reads=200000",
            "--key_size=16",
            "--value_size=128",
            "--write_buffer_size=40960",
            "--set=compaction.target_file_size=40960",
            "--pm_latency=pcm",
            "--threads=1",
            "--pm_path=/dev/shm/tierkv-nvlsm.pool",
            "--pm_size=17179869184",
            "--set=pm.chunk_bytes=65536",
            "--set=max_open_files=200000",
            "--sample_interval_ms=1000",
        ],
        designs: &[],
        from: None,
    }],
    scaling: "50M pairs in 2 MB runs (data / run ~3,600, four components) -> 1M pairs (144 MB) \
              in 40 KiB runs (data / run ~3,500, four components: C1 of 4 runs, C2 1.6 MiB, \
              C3 16 MiB, C4 the rest); NVLSM-L's L1 = 4 x 40 KiB x 10; 200k gets instead of \
              50M. PM: the emulated pool on /dev/shm (64 KiB chunks) with the pcm preset.",
    claim: "Accumulative compaction writes about a third of what leveled compaction writes (as \
            little as fragmented compaction), and reads far less than fragmented compaction \
            thanks to the cascade, at a little more space.",
    checks: &[
        Check {
            claim: "NVLSM-10 writes about a third of what NVLSM-L writes",
            paper: "0.33-0.35 (Fig. 9: \"reduces the WA by up to 67%\"; Fig. 10: \"-65%\"); \
                    effect 0.35",
            phase: "fill",
            metric: Metric::WriteAmpExcludingLog,
            compare: Compare::Ratio {
                a: "NVLSM-10",
                b: "NVLSM-L",
                band: Band::Paper(0.35),
            },
        },
        Check {
            claim: "NVLSM-F writes about a third of what NVLSM-L writes",
            paper: "0.354 (Fig. 9: \"only about 35.4% of that in NVLSM-L\")",
            phase: "fill",
            metric: Metric::WriteAmpExcludingLog,
            compare: Compare::Ratio {
                a: "NVLSM-F",
                b: "NVLSM-L",
                band: Band::Paper(0.354),
            },
        },
        Check {
            claim: "NVLSM-10 writes about what NVLSM-F writes",
            paper: "about 1 (\"the WA of NVLSM is close to those of NVLSM-F\"); band by hand: \
                    the paper reports no difference, so there is no effect to scale; -10%/+20%",
            phase: "fill",
            metric: Metric::WriteAmpExcludingLog,
            compare: Compare::Ratio {
                a: "NVLSM-10",
                b: "NVLSM-F",
                band: Band::Within(0.9, 1.2),
            },
        },
        Check {
            claim: "NVLSM-2 writes about 15% less than NVLSM-L",
            paper: "0.85 (Fig. 10: \"reduces WA by 15%\")",
            phase: "fill",
            metric: Metric::WriteAmpExcludingLog,
            compare: Compare::Ratio {
                a: "NVLSM-2",
                b: "NVLSM-L",
                band: Band::Paper(0.85),
            },
        },
        Check {
            claim: "NVLSM-10 reads about 1.67x what NVLSM-L reads",
            paper: "1.67 (Fig. 10: \"only 1.67x that of NVLSM-L\"; Fig. 9's 6.1 x 0.305 implies \
                    1.86); effect 1.67",
            phase: "fill",
            metric: Metric::ReadAmp,
            compare: Compare::Ratio {
                a: "NVLSM-10",
                b: "NVLSM-L",
                band: Band::Paper(1.67),
            },
        },
        Check {
            claim: "NVLSM-10 reads about 70% less than NVLSM-F",
            paper: "0.305 (Fig. 9: \"smaller than those of NVLSM-F by 69.5%\")",
            phase: "fill",
            metric: Metric::ReadAmp,
            compare: Compare::Ratio {
                a: "NVLSM-10",
                b: "NVLSM-F",
                band: Band::Paper(0.305),
            },
        },
        Check {
            claim: "NVLSM-10 takes about 19% more space than NVLSM-L",
            paper: "1.188 (Fig. 10: \"about 18.8% higher than that of NVLSM-L\")",
            phase: "fill",
            metric: Metric::SpaceAmp,
            compare: Compare::Ratio {
                a: "NVLSM-10",
                b: "NVLSM-L",
                band: Band::Paper(1.188),
            },
        },
    ],
    rounds: 3,
};

/// The stores of the put-ratio figures, with Max_Floor 4 and 20 (Fig. 13).
const PUT_STORES: &[&str] = &[
    "NVLSM-L=nvlsm-leveled+compaction.max_bytes_for_level_base=819200",
    "NVLSM-F=nvlsm-fragmented",
    "NVLSM-10=nvlsm",
    "NVLSM-F4=nvlsm-fragmented+nvlsm.max_floor=4",
    "NVLSM-4=nvlsm+nvlsm.max_floor=4",
    "NVLSM-F20=nvlsm-fragmented+nvlsm.max_floor=20",
    "NVLSM-20=nvlsm+nvlsm.max_floor=20",
];

/// The three stores of Figs. 11 and 12.
const PUT_STORES_3: &[&str] = &[
    "NVLSM-L=nvlsm-leveled+compaction.max_bytes_for_level_base=819200",
    "NVLSM-F=nvlsm-fragmented",
    "NVLSM-10=nvlsm",
];

/// The bench flags every phase of the latency experiments shares: 500k pairs of 16-byte keys
/// and 128-byte values in 20 KiB runs, one client, the pool on `/dev/shm` with its freed chunks
/// given back (`pm.release_freed`: a pool there otherwise holds RAM for its high-water mark,
/// 1.3-2.9 GB per store at this scale, and the put-ratio experiment keeps seven stores' pools
/// and a saved copy of each, more than a 24 GB machine has).
macro_rules! latency_phase_args {
    ($benchmarks:expr, $($arg:expr),*) => {
        &[
            $benchmarks,
            "--num=500000",
            $($arg,)*
            "--key_size=16",
            "--value_size=128",
            "--write_buffer_size=20480",
            "--set=compaction.target_file_size=20480",
            "--threads=1",
            "--pm_path=/dev/shm/tierkv-nvlsm.pool",
            "--pm_size=17179869184",
            "--set=pm.chunk_bytes=65536",
            "--set=pm.release_freed=true",
            "--set=max_open_files=200000",
            "--sample_interval_ms=1000",
        ]
    };
}

/// The load the put-ratio and range phases start from: 500k random puts (pcm preset).
macro_rules! load_phase {
    ($designs:expr) => {
        Phase {
            name: "load",
            bench_args: latency_phase_args!("--benchmarks=fillrandom", "--pm_latency=pcm"),
            designs: $designs,
            from: None,
        }
    };
}

/// 100k operations at one put ratio, on a copy of the loaded stores. The fill is listed (and
/// skipped: `--use_existing_db`) so that the operations keep the second benchmark's keys, as
/// when they ran after the fill in one process (the first benchmark's keys are the fill's own:
/// every get would find its key).
macro_rules! put_phase {
    ($name:expr, $ratio:expr, $latency:expr, $designs:expr) => {
        Phase {
            name: $name,
            bench_args: latency_phase_args!(
                "--benchmarks=fillrandom,readrandomwriterandom",
                "--reads=100000",
                $ratio,
                $latency
            ),
            designs: $designs,
            from: Some("load"),
        }
    };
}

/// Average latency of a mixed phase against the put ratio.
const MIXED: Metric = Metric::AvgLatency(Bench::all("readrandomwriterandom"));

/// Average operation latency at put ratios 100/80/50/20/0%, with Max_Floor 4 and 20.
pub const PUT_RATIO: Experiment = Experiment {
    name: "nvlsm-put-ratio",
    paper: PAPER,
    figure: "Figs. 11-13 (average latency against the put ratio; Max_Floor 4 and 20)",
    designs: PUT_STORES_3,
    phases: &[
        load_phase!(PUT_STORES),
        put_phase!("put100", "--put_ratio=100", "--pm_latency=pcm", PUT_STORES),
        put_phase!("put80", "--put_ratio=80", "--pm_latency=pcm", PUT_STORES_3),
        put_phase!("put50", "--put_ratio=50", "--pm_latency=pcm", PUT_STORES_3),
        put_phase!("put20", "--put_ratio=20", "--pm_latency=pcm", PUT_STORES_3),
        put_phase!("put0", "--put_ratio=0", "--pm_latency=pcm", PUT_STORES),
        put_phase!(
            "put50-nvdimm",
            "--put_ratio=50",
            "--pm_latency=nvdimm",
            PUT_STORES_3
        ),
    ],
    scaling: "50M puts + 10M operations per ratio -> one 500k-pair load per store (72 MB in \
              20 KiB runs, data / run ~3,500; phase load), then 100k operations per ratio, each \
              on a copy of the loaded store; NVLSM-L's L1 = 4 x 20 KiB x 10. pcm preset; the \
              paper's Fig. 11 runs on its NVDIMM setting: the phase put50-nvdimm repeats \
              Put(50%) with the nvdimm preset.",
    claim: "NVLSM has the lowest average latency when puts and gets mix (80% and 50% puts); \
            with only puts it is about as fast as NVLSM-F and faster than NVLSM-L; with only \
            gets NVLSM-L is fastest and NVLSM-F slowest.",
    checks: &[
        Check {
            claim: "Put(100%): NVLSM-10 about half the latency of NVLSM-L (about NVLSM-F's)",
            paper: "Fig. 11 (NVDIMM): F 50.6% below L, and NVLSM achieves \"similar \
                    performance to NVLSM-F\": about 0.494; effect 0.494",
            phase: "put100",
            metric: MIXED,
            compare: Compare::Ratio {
                a: "NVLSM-10",
                b: "NVLSM-L",
                band: Band::Paper(0.494),
            },
        },
        Check {
            claim: "Put(80%): NVLSM-10 about 41% below NVLSM-L",
            paper: "-41.2% (Fig. 11, NVDIMM); effect 0.588",
            phase: "put80",
            metric: MIXED,
            compare: Compare::Ratio {
                a: "NVLSM-10",
                b: "NVLSM-L",
                band: Band::Paper(0.588),
            },
        },
        Check {
            claim: "Put(80%): NVLSM-10 about 16% below NVLSM-F",
            paper: "-15.73% (Fig. 11, NVDIMM); effect 0.8427",
            phase: "put80",
            metric: MIXED,
            compare: Compare::Ratio {
                a: "NVLSM-10",
                b: "NVLSM-F",
                band: Band::Paper(0.8427),
            },
        },
        Check {
            claim: "Put(50%): NVLSM-10 about 24% below NVLSM-L",
            paper: "-24.25% (Fig. 11, NVDIMM; its PCM growths, NVLSM +19.12% and L +25.19%, imply \
                    0.721 on PCM); effect 0.7575",
            phase: "put50",
            metric: MIXED,
            compare: Compare::Ratio {
                a: "NVLSM-10",
                b: "NVLSM-L",
                band: Band::Paper(0.7575),
            },
        },
        Check {
            claim: "Put(50%): NVLSM-10 about 30% below NVLSM-F",
            paper: "-29.79% (Fig. 11, NVDIMM); effect 0.7021",
            phase: "put50",
            metric: MIXED,
            compare: Compare::Ratio {
                a: "NVLSM-10",
                b: "NVLSM-F",
                band: Band::Paper(0.7021),
            },
        },
        Check {
            claim: "Put(0%): NVLSM-L < NVLSM-10 < NVLSM-F",
            paper: "L 7.4% below NVLSM, 48.58% below F",
            phase: "put0",
            metric: MIXED,
            compare: Compare::Increasing(&["NVLSM-L", "NVLSM-10", "NVLSM-F"]),
        },
        Check {
            claim: "Put(100%), Max_Floor 20: NVLSM-20 about 63% below NVLSM-L",
            paper: "-63.27% (Fig. 13); effect 0.3673",
            phase: "put100",
            metric: MIXED,
            compare: Compare::Ratio {
                a: "NVLSM-20",
                b: "NVLSM-L",
                band: Band::Paper(0.3673),
            },
        },
        Check {
            claim: "Put(0%), Max_Floor 20: NVLSM-20 below NVLSM-F20 (more floors cost F more)",
            paper: "4 -> 20 floors: F 2.26x, NVLSM 1.46x (Fig. 13); band by hand: the paper \
                    gives each store's growth from 4 to 20 floors, not NVLSM-20 against \
                    NVLSM-F20, so this ratio has no effect to scale; below 1",
            phase: "put0",
            metric: MIXED,
            compare: Compare::Ratio {
                a: "NVLSM-20",
                b: "NVLSM-F20",
                band: Band::Below(1.0),
            },
        },
        Check {
            claim: "Put(50%) on NVDIMM: NVLSM-10 about 24% below NVLSM-L",
            paper: "-24.25% (Fig. 11 is on NVDIMM); effect 0.7575",
            phase: "put50-nvdimm",
            metric: MIXED,
            compare: Compare::Ratio {
                a: "NVLSM-10",
                b: "NVLSM-L",
                band: Band::Paper(0.7575),
            },
        },
    ],
    rounds: 3,
};

/// Seeks (each followed by `nexts` nexts, each a new iterator) on a copy of the loaded stores
/// (the fill listed and skipped, as for the put-ratio phases).
macro_rules! seek_phase {
    ($name:expr, $nexts:expr, $reads:expr) => {
        Phase {
            name: $name,
            bench_args: latency_phase_args!(
                "--benchmarks=fillrandom,seekrandom",
                $reads,
                $nexts,
                "--pm_latency=pcm"
            ),
            designs: &[],
            from: Some("load"),
        }
    };
}

const SEEK: Metric = Metric::AvgLatency(Bench::all("seekrandom"));

/// Seek, Range(48) and Range(1024) latency.
pub const RANGE: Experiment = Experiment {
    name: "nvlsm-range",
    paper: PAPER,
    figure: "Fig. 15 (Seek, Range(48) and Range(1,024) latency)",
    designs: PUT_STORES_3,
    phases: &[
        load_phase!(&[]),
        seek_phase!("seek", "--seek_nexts=0", "--reads=100000"),
        seek_phase!("range48", "--seek_nexts=48", "--reads=50000"),
        seek_phase!("range1024", "--seek_nexts=1024", "--reads=5000"),
    ],
    scaling: "load 50M, then 10M Range(48) and Range(1,024) -> one 500k-pair load per store in \
              20 KiB runs (phase load), then 100k seeks, 50k Range(48) and 5k Range(1,024) (a \
              seek plus that many nexts, each a new iterator), each on a copy of the loaded \
              store (all three measure the same store shape). pcm preset.",
    claim: "NVLSM's seeks and short ranges cost a little more than NVLSM-L's and much less \
            than NVLSM-F's (the cascade positions one cursor per floor cheaply); long ranges \
            cost NVLSM and NVLSM-F about 15-17% more than NVLSM-L.",
    checks: &[
        Check {
            claim: "Seek: NVLSM-L < NVLSM-10 < NVLSM-F",
            paper: "NVLSM +11.2% vs L, -43% vs F",
            phase: "seek",
            metric: SEEK,
            compare: Compare::Increasing(&["NVLSM-L", "NVLSM-10", "NVLSM-F"]),
        },
        Check {
            claim: "Range(48): NVLSM-L < NVLSM-10 < NVLSM-F",
            paper: "NVLSM +23.5% vs L, -33.4% vs F",
            phase: "range48",
            metric: SEEK,
            compare: Compare::Increasing(&["NVLSM-L", "NVLSM-10", "NVLSM-F"]),
        },
        Check {
            claim: "Range(1,024): NVLSM-10 about 15% slower than NVLSM-L",
            paper: "+15.3-17.2% (Fig. 15, NVLSM and NVLSM-F against NVLSM-L); effect 1.153",
            phase: "range1024",
            metric: SEEK,
            compare: Compare::Ratio {
                a: "NVLSM-10",
                b: "NVLSM-L",
                band: Band::Paper(1.153),
            },
        },
    ],
    rounds: 3,
};

/// YCSB A-F.
pub const YCSB: Experiment = Experiment {
    name: "nvlsm-ycsb",
    paper: PAPER,
    figure: "Figs. 16 and 17 (YCSB A-F throughput, bytes read and written)",
    designs: PUT_STORES_3,
    phases: &[Phase {
        name: "ycsb",
        bench_args: &[
            "--benchmarks=ycsb-load,ycsb-a,ycsb-b,ycsb-c,ycsb-d,ycsb-e,ycsb-f",
            "--num=500000",
            "--reads=100000",
            "--key_size=16",
            "--value_size=128",
            "--write_buffer_size=20480",
            "--set=compaction.target_file_size=20480",
            "--pm_latency=pcm",
            "--threads=1",
            "--pm_path=/dev/shm/tierkv-nvlsm.pool",
            "--pm_size=17179869184",
            "--set=pm.chunk_bytes=65536",
            "--set=max_open_files=200000",
            "--sample_interval_ms=1000",
        ],
        designs: &[],
        from: None,
    }],
    scaling: "load 100M, then 10M operations per workload -> load 500k (20 KiB runs), then 100k \
              operations per workload, in one database (A to F in order, as the paper runs \
              them). pcm preset; the harness's YCSB distributions (zipfian, latest for D).",
    claim: "NVLSM has the highest throughput on the write-heavy workloads A and F, and reads \
            far fewer bytes than NVLSM-F and writes far fewer than NVLSM-L.",
    checks: &[
        Check {
            claim: "YCSB-A: NVLSM-10 about 1.26x the throughput of NVLSM-L",
            paper: "1.26-1.63x (Fig. 17, against the other stores); effect 1.26",
            phase: "ycsb",
            metric: Metric::OpsPerSec(Bench::all("ycsb-a")),
            compare: Compare::Ratio {
                a: "NVLSM-10",
                b: "NVLSM-L",
                band: Band::Paper(1.26),
            },
        },
        Check {
            claim: "YCSB-F: NVLSM-10 about 1.49x the throughput of NVLSM-L",
            paper: "1.49-2.02x (Fig. 17, against the other stores); effect 1.49",
            phase: "ycsb",
            metric: Metric::OpsPerSec(Bench::all("ycsb-f")),
            compare: Compare::Ratio {
                a: "NVLSM-10",
                b: "NVLSM-L",
                band: Band::Paper(1.49),
            },
        },
        Check {
            claim: "NVLSM-10 writes about a sixth of the bytes NVLSM-L writes",
            paper: "-82.7-83.3% (Fig. 16): 0.167-0.173; effect 0.173",
            phase: "ycsb",
            metric: Metric::BytesWritten,
            compare: Compare::Ratio {
                a: "NVLSM-10",
                b: "NVLSM-L",
                band: Band::Paper(0.173),
            },
        },
        Check {
            claim: "NVLSM-10 reads about 63% fewer bytes than NVLSM-F",
            paper: "-63.1-64.5% (Fig. 16): 0.355-0.369; effect 0.369",
            phase: "ycsb",
            metric: Metric::BytesRead,
            compare: Compare::Ratio {
                a: "NVLSM-10",
                b: "NVLSM-F",
                band: Band::Paper(0.369),
            },
        },
    ],
    rounds: 3,
};
