//! The experiments of SLM-DB (Kaiyrakhmet et al., "SLM-DB: Single-Level Key-Value Store with
//! Persistent Memory", FAST 2019) that this build can run: the persistent memtable's effect
//! (`leveled-pmtable`, the paper's "LevelDB+PM") against `leveled` (LevelDB). The experiments
//! of `slmdb` itself come with that design.
//!
//! Layout (the paper's and the design brief's): databases in a temporary directory on the disk,
//! the PM pool on `/dev/shm` (`/dev/shm/tierkv-slm.pool-<label>`) with the `slmdb` latency
//! preset (500 ns per written-back line, the paper's emulation). Scaling (the reading notes'):
//! the paper loads 8 GB of 1 KB values through 64 MB memtables; here 1M random puts of 20-byte
//! keys and 1 KiB values (1 GiB) through 8 MiB memtables into 2 MiB tables (the same ~128
//! flushes); WALs not synced, as the paper's LevelDB; the SSD model on at the sequential rates
//! of the paper's SSD (an Intel DC S3520 480 GB: 380 MB/s writes, 450 MB/s reads), since the
//! claims are about disk writes and without the cap the page cache takes them for free. One
//! client thread.

use super::{Bench, Check, Compare, Experiment, Metric, Phase};
use crate::verdict::Band;

const PAPER: &str = "SLM-DB (Kaiyrakhmet et al., FAST 2019)";

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
