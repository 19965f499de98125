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
    /// Flush the memtable (one operation).
    Flush,
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
        Benchmark::Flush,
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
            Benchmark::Flush => "flush",
        }
    }

    /// True for benchmarks that fill a fresh database, which db_bench skips under
    /// `--use_existing_db`.
    pub fn is_fill(self) -> bool {
        matches!(self, Benchmark::Fillseq | Benchmark::Fillrandom)
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

fn parse_design(s: &str) -> Result<Design, String> {
    Design::from_str(s).map_err(|e| e.to_string())
}

/// The flags of `tierkv bench`.
#[derive(clap::Args, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchConfig {
    /// Comma-separated benchmarks, run in order on one database: fillseq, fillrandom,
    /// overwrite, readrandom, readseq, seekrandom, readwhilewriting, flush.
    #[arg(long, value_delimiter = ',', default_value = DEFAULT_BENCHMARKS)]
    pub benchmarks: Vec<Benchmark>,

    /// Number of keys, and of writes per thread for the fill benchmarks.
    #[arg(long, default_value_t = 1_000_000)]
    pub num: u64,

    /// Reads (or seeks, or iterated entries) per thread; -1 means --num.
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
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

    /// Sync the write-ahead log on every write.
    #[arg(long, num_args = 0..=1, require_equals = true, default_value_t = false,
          default_missing_value = "true", value_parser = clap::builder::BoolishValueParser::new())]
    pub sync: bool,

    /// Database directory, used and kept. Default: a fresh temporary directory, removed at the
    /// end.
    #[arg(long)]
    pub db: Option<PathBuf>,

    /// The engine design.
    #[arg(long, default_value = "leveled", value_parser = parse_design)]
    pub design: Design,

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
    #[arg(long = "cache_size", default_value_t = 8_388_608)]
    pub cache_size: u64,

    /// Memtable size in bytes.
    #[arg(long = "write_buffer_size", default_value_t = 67_108_864)]
    pub write_buffer_size: u64,

    /// Bloom filter bits per key (0 disables filters).
    #[arg(long = "bloom_bits", default_value_t = 10)]
    pub bloom_bits: u64,

    /// Reuse the existing database in --db instead of creating one; fillseq and fillrandom are
    /// skipped.
    #[arg(long = "use_existing_db", num_args = 0..=1, require_equals = true,
          default_value_t = false, default_missing_value = "true",
          value_parser = clap::builder::BoolishValueParser::new())]
    pub use_existing_db: bool,
}

impl BenchConfig {
    /// Reads per thread: `--reads`, or `--num` when it is negative.
    pub fn reads_per_thread(&self) -> u64 {
        u64::try_from(self.reads).unwrap_or(self.num)
    }

    /// Checks the flags together; the error says which flag is wrong.
    pub fn validate(&self) -> Result<(), String> {
        if self.benchmarks.is_empty() {
            return Err("--benchmarks is empty".into());
        }
        if self.num == 0 {
            return Err("--num must be at least 1".into());
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
        self.options().validate().map_err(|e| e.to_string())?;
        Ok(())
    }

    /// The engine options these flags select (everything else at its default).
    pub fn options(&self) -> Options {
        let mut o = Options {
            design: self.design,
            create_if_missing: !self.use_existing_db,
            error_if_exists: !self.use_existing_db,
            write_buffer_size: usize::try_from(self.write_buffer_size).unwrap_or(usize::MAX),
            block_cache_bytes: usize::try_from(self.cache_size).unwrap_or(usize::MAX),
            ..Options::default()
        };
        o.table.bloom_bits_per_key = usize::try_from(self.bloom_bits).unwrap_or(usize::MAX);
        // Benchmark keys and values must be accepted whatever their configured sizes.
        o.max_key_size = o.max_key_size.max(self.key_size);
        o.max_value_size = o.max_value_size.max(self.value_size);
        o
    }

    /// The write options these flags select.
    pub fn write_options(&self) -> WriteOptions {
        WriteOptions { sync: self.sync }
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
        assert_eq!(c.design, Design::Leveled);
        assert_eq!(c.engine, EngineKind::Tierkv);
        assert_eq!(c.cache_size, 8_388_608);
        assert_eq!(c.write_buffer_size, 67_108_864);
        assert_eq!(c.bloom_bits, 10);
        c.validate().unwrap();
        let o = c.options();
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
        assert!(bad(&|c| c.key_size = 0).contains("--key_size"));
        assert!(bad(&|c| c.threads = 0).contains("--threads"));
        assert!(bad(&|c| c.benchmarks.clear()).contains("--benchmarks"));
        assert!(bad(&|c| c.write_buffer_size = 10).contains("write_buffer_size"));
        assert!(bad(&|c| c.bloom_bits = 100).contains("bloom_bits_per_key"));
    }
}
