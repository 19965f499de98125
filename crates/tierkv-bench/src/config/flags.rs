//! The `tierkv bench` flags ([`BenchConfig`]) with their defaults and value parsers, the engine
//! choice ([`EngineKind`]), and the rewriting of YCSB-style command lines
//! ([`normalize_ycsb_args`]).

use super::*;

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

fn parse_pm_mode(s: &str) -> Result<tierkv::pm::DurabilityMode, String> {
    s.parse().map_err(|e: tierkv::pm::PmError| e.to_string())
}

fn parse_pm_latency(s: &str) -> Result<tierkv::pm::LatencyModel, String> {
    tierkv::pm::LatencyModel::from_name(s)
        .ok_or_else(|| format!("unknown PM latency preset {s:?}; known: dram, nvdimm, pcm, slmdb"))
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
