//! The benchmark names ([`Benchmark`]), db_bench's and the YCSB workloads, with what kind of
//! benchmark each is (fill, read, maintenance, report, YCSB); the default benchmark list; and the
//! db_bench benchmarks TierKV refuses, with the reason.

use super::*;

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

/// Parses a comma-separated benchmark list (`"fillseq,readrandom"`); an unknown or empty name is
/// an error naming it and listing the known ones.
pub fn parse_benchmark_list(list: &str) -> Result<Vec<Benchmark>, String> {
    list.split(',').map(Benchmark::from_str).collect()
}
