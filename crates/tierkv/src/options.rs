//! Options: nested per component, each field documented with its effect and default, validated
//! at open ([`Options::validate`]) and printed with every benchmark result.

pub use crate::fs::SsdModelOptions;
use crate::fs::{FileSystem, PosixFs};
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;
use tierkv_pm::{DurabilityMode, LatencyModel, PmPool};

/// Persistent-memory options, used by designs that keep data in the PM pool.
#[derive(Clone, Serialize, Deserialize)]
pub struct PmOptions {
    /// The pool file; default `<database directory>/pm.pool`. Put it on a DAX file system for
    /// real PM, or on `/dev/shm` for the emulation the papers used. A database records another
    /// path in its manifest (absolute), and opening it without `path` uses the recorded one;
    /// a path given for an existing database wins and, once the pool there proves to be the
    /// database's, is recorded instead (for a pool that moved).
    pub path: Option<PathBuf>,
    /// Pool size in bytes, fixed when the pool is created (a sparse file: a chunk takes space
    /// in the file system when it is first used, and a full file system is an out-of-space
    /// error then). It must hold the WAL and every L0 table: about
    /// `(max_write_buffer_number + level0_stop_trigger) x write_buffer_size`. Default 8 GiB.
    pub size_bytes: u64,
    /// Allocation unit for logs and tables. Default 4 MiB (FluidKV's chunk size).
    pub chunk_bytes: u64,
    /// How persists become durable: `Emulated` (flush + fence; survives a process crash, the
    /// benchmark default, as in the papers' emulations), `Msync` (also msync: power-fail durable,
    /// slow), `Dax` (MAP_SYNC on a DAX file system: power-fail durable). Default `Emulated`.
    pub mode: DurabilityMode,
    /// Emulated extra latency per cache line written back and per read. Default none (`dram`).
    pub latency: LatencyModel,
    /// For the `leveled` design: put its WAL on PM, to isolate the log's effect. Default false.
    pub wal_on_pm: bool,
    /// For the `leveled-pm` design: keep its WAL on SSD (LAB-DB's "RocksDB-NVM" baseline puts
    /// only L0 in PM). Default false.
    #[serde(default)]
    pub wal_on_ssd: bool,
    /// Write through FluidKV's FastStore: each writer thread appends to its own PM log and
    /// inserts into a concurrent DRAM index, with no write group or leader
    /// (`front_ends/fast_store.rs`). For designs whose log is on PM in front of a DRAM memtable
    /// (not `labdb`, not the PM-memtable designs). `WriteOptions::disable_wal` is ignored under
    /// it (every write is logged). Default false.
    #[serde(default)]
    pub thread_logs: bool,
    /// Keep the manifest (the log of version edits) in the PM pool instead of the database
    /// directory: each edit persists with a PM flush instead of an SSD sync. `CURRENT` stays in
    /// the directory and then also names the pool (its path, unless it is `pm.pool` there) and
    /// the database's identity and design, so that the pool can be opened before the manifest
    /// is read. `None`: the design's choice (`fluidkv`: in the pool, as the paper's Manifest on
    /// PM; every other design: the directory). For designs with a PM pool; may change between
    /// opens (every open writes a fresh manifest where the options say).
    #[serde(default)]
    pub manifest_on_pm: Option<bool>,
    /// Before a compaction whose outputs go to the pool, compare its inputs' bytes, in whole
    /// chunks with a partly filled one per expected output file, with the chunks tables may
    /// still take, and send its outputs to the SSD at once if they could not fit (an
    /// estimate: a job that passes may still fill the pool, and then runs again on the SSD).
    /// Off: every such compaction writes into the pool first, and one that fills it runs
    /// again with its outputs on the SSD. Either way `pm_compaction_fallbacks` counts it.
    /// Default true.
    #[serde(default = "default_true")]
    pub compaction_space_check: bool,
    /// Give a freed chunk's file-system blocks back to the file system (punch it out of the
    /// pool file), and at open those of every chunk no structure uses. Off (the default), the
    /// pool file keeps the blocks of every chunk it ever handed out, its high-water mark, as a
    /// reservation of `size_bytes` for this database (a PMDK pool behaves alike); on a RAM file
    /// system such as `/dev/shm` that is memory. On, the file holds about the live chunks and
    /// a reserve of freed chunks kept backed for reuse (`tierkv_pm::RELEASE_RESERVE_BYTES`, at
    /// most a sixteenth of the pool); a chunk released costs a `fallocate` when freed and when
    /// reused, and page faults on its first writes. May change between opens.
    #[serde(default)]
    pub release_freed: bool,
    /// A pool to use instead of opening `path` (crash-simulation tests).
    #[serde(skip)]
    pub pool: Option<Arc<PmPool>>,
}

impl Default for PmOptions {
    fn default() -> Self {
        PmOptions {
            path: None,
            size_bytes: 8 << 30,
            chunk_bytes: 4 << 20,
            mode: DurabilityMode::Emulated,
            latency: LatencyModel {
                read_ns: 0,
                write_ns: 0,
            },
            wal_on_pm: false,
            wal_on_ssd: false,
            thread_logs: false,
            manifest_on_pm: None,
            compaction_space_check: true,
            release_freed: false,
            pool: None,
        }
    }
}

impl std::fmt::Debug for PmOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PmOptions")
            .field("path", &self.path)
            .field("size_bytes", &self.size_bytes)
            .field("chunk_bytes", &self.chunk_bytes)
            .field("mode", &self.mode)
            .field("latency", &self.latency)
            .field("wal_on_pm", &self.wal_on_pm)
            .field("wal_on_ssd", &self.wal_on_ssd)
            .field("thread_logs", &self.thread_logs)
            .field("manifest_on_pm", &self.manifest_on_pm)
            .field("compaction_space_check", &self.compaction_space_check)
            .field("release_freed", &self.release_freed)
            .field("pool", &self.pool.as_ref().map(|_| "<given>"))
            .finish()
    }
}

/// SSTable format options. `block_size` and `restart_interval` may change between opens (every
/// table records its own layout); `bloom_bits_per_key` applies to tables written from now on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableOptions {
    /// Target uncompressed size of a data block. Smaller blocks read less per point lookup but
    /// grow the index. Default 4096 bytes (LevelDB and RocksDB's default).
    pub block_size: usize,
    /// Keys between restart points inside a block; between restarts keys are prefix-compressed.
    /// Default 16.
    pub restart_interval: usize,
    /// Bloom filter bits per key; 0 disables filters. 10 bits give about a 1% false-positive
    /// rate. Default 10.
    pub bloom_bits_per_key: usize,
    /// Data blocks per index partition; 0 (the default) keeps one index block per table, read
    /// into DRAM at open. With `n > 0` the index is partitioned: every `n` data blocks get
    /// their own index block written after them in the file, and only the top-level index
    /// (one entry per partition) is held in DRAM, so a lookup reads one index partition and
    /// one data block. FluidKV's logical sorted table is such a partition with its data
    /// blocks (`fluidkv`: 32 blocks of 512 bytes). Applies to tables written from now on.
    #[serde(default)]
    pub index_partition_blocks: usize,
    /// Key-value separation: values of at least this many bytes are written to a value log
    /// next to the table (`NNNNNN.vlog`, on the table's tier) and the table holds a pointer,
    /// so a compaction copies the pointer, not the value (FluidKV's and WiscKey's key-value
    /// separation). A compaction rewrites the live values of a log that is mostly dead
    /// (`docs/DECISIONS.md`, "Key-value separation"). 0 (the default; `fluidkv`: 256) keeps
    /// every value in its table. Applies to tables written from now on; not for designs
    /// with a global index (`slmdb`, `labdb`) or sorted-array runs.
    #[serde(default)]
    pub value_separation: usize,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            block_size: 4096,
            restart_interval: 16,
            bloom_bits_per_key: 10,
            index_partition_blocks: 0,
            value_separation: 0,
        }
    }
}

/// Leveled compaction and write-throttling options (RocksDB's defaults unless noted).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompactionOptions {
    /// Number of levels, L0 included. Default 7.
    pub num_levels: usize,
    /// L0 file count that triggers an L0 -> L1 compaction. Default 4.
    pub level0_compaction_trigger: usize,
    /// L0 file count at which each write is delayed by 1 ms (counted as stall time). Default 20.
    pub level0_slowdown_trigger: usize,
    /// L0 file count at which writes wait until compaction catches up. Default 36.
    pub level0_stop_trigger: usize,
    /// Target size of L1; larger levels grow by `level_size_multiplier`. Default 256 MiB.
    pub max_bytes_for_level_base: u64,
    /// Ratio between the target sizes of adjacent levels. Default 10.
    pub level_size_multiplier: u64,
    /// Size at which a compaction output file is cut. Default 64 MiB.
    pub target_file_size: u64,
    /// Background compaction threads (flushes have their own thread). Compactions running at
    /// once never share a level. Default 1.
    pub background_compactions: usize,
    /// Key-range partitions one compaction is split into, each merged by its own thread and
    /// all committed by one manifest record (RocksDB's `max_subcompactions`; FluidKV's
    /// parallel compaction, whose `fluidkv` default is the machine's core count). Cuts are
    /// equal-count quantiles of the inputs' index keys. Applies to merges cut by size (not to
    /// rows, sets, LAB-DB's tree chunks or SLM-DB's indexed tables). Default 1.
    #[serde(default = "one")]
    pub subcompactions: usize,
    /// In a compaction of the first group into the next (leveled L0 -> L1), leave the output
    /// group's runs that no source key falls into where they are, and move the source runs
    /// that overlap no other input unchanged, instead of rewriting them (FluidKV's reuse of the
    /// tables a compaction does not touch; `fluidkv` turns this on). Finding the untouched runs
    /// costs a seek per source run per overlapping output run. Default false (LevelDB and
    /// RocksDB rewrite every input but a single moved run).
    #[serde(default)]
    pub reuse_untouched_runs: bool,
    /// With `reuse_untouched_runs`, also reuse parts of an output-group run that source keys
    /// fall into: the run's logical sorted tables (its index partitions,
    /// `table.index_partition_blocks`) that no source key falls into stay where they are, as
    /// runs that read part of the old file, and only the rest is merged (FluidKV's reuse of
    /// untouched LSTs; `fluidkv` turns this on). A stretch is kept only when it is at least
    /// `reuse_min_tables` tables long, and a file's runs are split only while at least half of
    /// the file stays in use (the old file is freed only once no run reads it: at most 2x
    /// space for what is kept when the split is made; a part no later compaction touches
    /// keeps its whole file). Default false.
    #[serde(default)]
    pub reuse_untouched_tables: bool,
    /// The fewest consecutive untouched logical sorted tables `reuse_untouched_tables` keeps
    /// as one run. Default 4.
    #[serde(default = "default_reuse_min_tables")]
    pub reuse_min_tables: usize,
    /// `reuse_untouched_tables` keeps a stretch only if the merged piece before it (the
    /// touched tables and the new keys there, estimated from the indexes) is empty or at least
    /// this many bytes: each kept stretch cuts the outputs, and a piece smaller than a pool
    /// chunk would take a whole chunk. `None` (the default): `pm.chunk_bytes`.
    #[serde(default)]
    pub reuse_min_gap_bytes: Option<u64>,
    /// Load-aware compaction trigger (FluidKV's section 4.4): a detector thread looks at the
    /// user gets and writes of each `load_window_ms` window; while writes are at most half of
    /// them the first group compacts at `read_compaction_trigger` runs instead of
    /// `level0_compaction_trigger`, and in a window with gets and no writes it flushes the
    /// memtable whatever its fill (eager flush), so reads find fewer, merged runs. Only the
    /// leveled stage has a trigger to set (`fluidkv` turns this on). Default false.
    #[serde(default)]
    pub load_aware: bool,
    /// The first group's compaction trigger in read-intensive windows under `load_aware`.
    /// Default 1 (FluidKV's).
    #[serde(default = "one")]
    pub read_compaction_trigger: usize,
    /// The load detector's window in milliseconds. Default 500 (FluidKV's artifact).
    #[serde(default = "load_window")]
    pub load_window_ms: u64,
    /// Schedule no compaction automatically (RocksDB's `disable_auto_compactions`, for bulk
    /// loads that compact once at the end): [`crate::Db::compact_range`] still compacts and
    /// flushes still run. As in RocksDB, the stages' write-pressure rules that only compaction
    /// relieves (the L0 slowdown and stop triggers) stall no write while this is set, or
    /// writes would stop for good; the memtable limit (`max_write_buffer_number`) still
    /// applies, and reads slow down as L0 grows. Designs whose first stage is a bounded PM
    /// container that only compaction drains (`trianglekv`, `matrixkv`'s rows; the NVLSM
    /// designs, whose pool holds every run) refuse to open with it
    /// ([`crate::Error::InvalidArgument`]). Default false.
    #[serde(default)]
    pub disable_auto_compactions: bool,
}

impl Default for CompactionOptions {
    fn default() -> Self {
        CompactionOptions {
            num_levels: 7,
            level0_compaction_trigger: 4,
            level0_slowdown_trigger: 20,
            level0_stop_trigger: 36,
            max_bytes_for_level_base: 256 << 20,
            level_size_multiplier: 10,
            target_file_size: 64 << 20,
            background_compactions: 1,
            subcompactions: 1,
            reuse_untouched_runs: false,
            reuse_untouched_tables: false,
            reuse_min_tables: default_reuse_min_tables(),
            reuse_min_gap_bytes: None,
            load_aware: false,
            read_compaction_trigger: 1,
            load_window_ms: 500,
            disable_auto_compactions: false,
        }
    }
}

/// Which Bloom filters a lookup in a set (a Skip-Array Tree, a guard) consults.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FilterScope {
    /// The set as a whole: if any floor's filter may hold the key, every floor is searched
    /// (the cascade of a Skip-Array Tree; all runs of a guard). The paper's Fig. 7.
    PerSet,
    /// Each run: only the runs whose filter may hold the key are searched (guards; a
    /// Skip-Array Tree still walks its cascade when any floor may hold the key).
    PerRun,
}

/// The NVLSM designs' own options (`nvlsm`, `nvlsm-fragmented`; `nvlsm-leveled` has none).
/// Their components use the compaction options: `num_levels` components (C1 included),
/// `level0_compaction_trigger` runs fill C1, `target_file_size` is the run size,
/// `level_size_multiplier` the capacity ratio between components.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NvlsmOptions {
    /// Floors a Skip-Array Tree (runs a guard) holds before it is merged and pushed down: the
    /// paper's `Max_Floor`. At least 2. Default 10 (the paper's).
    pub max_floor: usize,
    /// Which Bloom filters a lookup in a set consults. Default `PerSet`.
    pub filter_scope: FilterScope,
}

impl Default for NvlsmOptions {
    fn default() -> Self {
        NvlsmOptions {
            max_floor: 10,
            filter_scope: FilterScope::PerSet,
        }
    }
}

/// The row-container designs' options (`trianglekv`, `matrixkv`): the PM L0 of rows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RowOptions {
    /// Live bytes the rows of the PM L0 may hold: writes stop when they reach it (the paper's
    /// 8 GB of NVM for L0). 0: as many as `compaction.level0_stop_trigger` write buffers
    /// (the L0 a leveled tree with these options stops at). Default 0; the row-container
    /// designs' defaults set 3 GiB.
    pub l0_bytes: u64,
    /// Fraction of `l0_bytes` at which compaction of the rows starts (the triangle), or at
    /// which the receiver becomes the compactor (the matrix). Default 0.6 (the paper's).
    pub trigger: f64,
    /// Fraction of `l0_bytes` at which each write group is delayed. Default 0.9.
    pub slowdown: f64,
    /// A flushed memtable whose keys overlap no live row and no L1 table goes straight to L1
    /// as an SSTable (the paper's sequential load). Default true.
    pub sequential_bypass: bool,
    /// Free the PM pages of a row that lie wholly in its dead ranges once no reader may read
    /// them (section 3.1 of the paper); off, a row's space returns only when all of it is dead.
    /// Default true.
    pub free_dead_pages: bool,
}

impl RowOptions {
    /// The live bytes the rows may hold under `options` (`l0_bytes`, or its stand-in for 0).
    pub fn l0_capacity(&self, options: &Options) -> u64 {
        if self.l0_bytes > 0 {
            self.l0_bytes
        } else {
            (options.compaction.level0_stop_trigger as u64)
                .saturating_mul(options.write_buffer_size as u64)
                .max(1)
        }
    }
}

impl Default for RowOptions {
    fn default() -> Self {
        RowOptions {
            l0_bytes: 0,
            trigger: 0.6,
            slowdown: 0.9,
            sequential_bypass: true,
            free_dead_pages: true,
        }
    }
}

/// SLM-DB's options (`slmdb`): the selective compaction of its single level (Kaiyrakhmet et
/// al., FAST 2019, section 3.3; the paper's values are the defaults).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SlmOptions {
    /// R1: a table whose live entries (those the global index points at) are below this
    /// fraction of its entries joins the compaction candidates. Default 0.7.
    pub live_key_ratio: f64,
    /// R2: the round-robin leaf scan after each flush and compaction. Default true.
    pub leaf_scan: bool,
    /// R2: the scanned keys' tables join the candidates when there are more than this many
    /// of them. Default 10.
    pub leaf_scan_files: usize,
    /// R3: range queries split their result into sub-ranges of this many keys. Default 30.
    pub range_sub_keys: usize,
    /// R3: a sub-range whose keys live in more than this many tables adds them to the
    /// candidates. Default 8.
    pub range_files: usize,
    /// R3 on or off. Default true.
    pub range_rule: bool,
    /// The most tables one selective compaction merges (the paper does not give its cap).
    /// Default 10.
    pub max_inputs: usize,
    /// The global index's inner nodes in PM (the paper's tree entirely in PM: copy-on-write
    /// nodes, no DRAM) or, when false, in a DRAM map rebuilt at open (faster lookups, DRAM of
    /// one separator per leaf). Either reopens a database made with the other: the nodes are
    /// built again, or dropped and freed. Default true.
    pub inner_nodes_in_pm: bool,
}

impl Default for SlmOptions {
    fn default() -> Self {
        SlmOptions {
            live_key_ratio: 0.7,
            leaf_scan: true,
            leaf_scan_files: 10,
            range_sub_keys: 30,
            range_files: 8,
            range_rule: true,
            max_inputs: 10,
            inner_nodes_in_pm: true,
        }
    }
}

/// Size-tiered compaction (`tiered`), named and defaulted as RocksDB's universal compaction
/// (`CompactionOptionsUniversal`). A sorted run is an L0 table or a whole level; compaction
/// starts once `compaction.level0_compaction_trigger` sorted runs exist.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct UniversalOptions {
    /// Percent of slack when comparing sizes: the next older run joins a merge while its size
    /// is at most the picked runs' total times `(100 + size_ratio) / 100`. Default 1.
    pub size_ratio: u64,
    /// Fewest sorted runs a merge by size ratio takes (at least 2). Default 2.
    pub min_merge_width: usize,
    /// Most sorted runs a merge by size ratio takes. Default unbounded (`usize::MAX`).
    pub max_merge_width: usize,
    /// When the runs newer than the oldest hold more than this percent of the oldest run's
    /// bytes, every run is merged into one. Default 200.
    pub max_size_amplification_percent: u64,
}

impl Default for UniversalOptions {
    fn default() -> Self {
        UniversalOptions {
            size_ratio: 1,
            min_merge_width: 2,
            max_merge_width: usize::MAX,
            max_size_amplification_percent: 200,
        }
    }
}

/// LAB-DB's options (`labdb`): its L0 of two persistent B+ trees (Kim et al., "LAB-DB", ACM
/// TOS 2024, sections 3.2-3.4; the defaults are the paper's, scaled: `docs/designs/labdb.md`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LabOptions {
    /// PM bytes of the leaves of both L0 trees. Writes stop when the trees fill it. Default
    /// 256 MiB (the paper's region).
    pub leaf_region_bytes: u64,
    /// The mutable tree becomes immutable when its leaves reach this fraction of the region
    /// (and there is no immutable tree). Default 0.75.
    pub immutable_at: f64,
    /// Value bytes of one chunk of the immutable tree compacted into L1 at a time. Default
    /// 64 MiB (the paper's).
    pub chunk_bytes: u64,
    /// The paper's log (section 3.4): a write is durable once in a PM WAL buffer of
    /// `wal_buffer_bytes` (two halves), which drains into a key array and a value array on
    /// SSD; the value array is where the values stay (a flush inserts their addresses, never
    /// writes them again). `false`: the engine's WAL (on SSD, or on PM with `pm.wal_on_pm`:
    /// the paper's LAB-DB-WA) and a value array written at each flush: the paper's
    /// "B+-tree-only" ablation. `pm.wal_on_pm` implies `false`. Default true.
    pub split_log: bool,
    /// Bytes of the PM WAL buffer (both halves). Default 2 MiB (the paper's).
    pub wal_buffer_bytes: u64,
    /// Chunk selection (section 3.3): chunks are the leftmost remaining leaves of the
    /// immutable tree ("leaf scan") until this fraction of its entries is compacted; then each
    /// chunk is the run of leaves, about a chunk long, holding the most entries whose values sit
    /// in the oldest value array ("file scan"), so that array is freed sooner. 1.0: leaf scan
    /// only. Default 0.8 (the paper's).
    pub file_scan_after: f64,
    /// PM bytes of the hot-key buffer (section 3.3): slots holding the values of keys updated
    /// often, updated in place at each flush (`docs/designs/labdb.md`). 0: no hot-key buffer.
    /// Default 256 MiB (the paper's); grown a PM chunk at a time as slots are taken, and
    /// only while more than a quarter of the pool's chunks would stay free for the trees.
    pub hot_buffer_bytes: u64,
    /// Bytes of one slot: two halves, each a 24-byte header, the key and the value; a version
    /// that does not fit a half is not placed in the buffer. Default 2560 (1 KiB values with
    /// keys up to 256 bytes).
    pub hot_slot_bytes: u64,
    /// A key flushed this many times recently (a count-min sketch, halved as it fills) gets a
    /// slot. Default 4.
    pub hot_threshold: u32,
}

impl Default for LabOptions {
    fn default() -> Self {
        LabOptions {
            leaf_region_bytes: 256 << 20,
            immutable_at: 0.75,
            chunk_bytes: 64 << 20,
            split_log: true,
            wal_buffer_bytes: 2 << 20,
            file_scan_after: 0.8,
            hot_buffer_bytes: 256 << 20,
            hot_slot_bytes: 2560,
            hot_threshold: 4,
        }
    }
}

/// A design, by name: the entry of the design registry (`designs.rs`) a database runs. The
/// registry gives each design its constant ([`Design::LEVELED`], ...), its parts, its defaults
/// and what it asks of the options ([`Options::validate`]); options only name it. Cheap to
/// copy; compares by name.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Design(pub(crate) &'static str);

/// Options of a database, given at open.
#[derive(Clone, Serialize, Deserialize)]
pub struct Options {
    /// The design. Default [`Design::LEVELED`]. A database remembers its design: reopening
    /// it with another one is an [`Error::InvalidArgument`].
    pub design: Design,
    /// Create the database if it does not exist. Default true.
    pub create_if_missing: bool,
    /// Fail if the database already exists. Default false.
    pub error_if_exists: bool,
    /// Open without writing one byte to the directory or the PM pool: for reading a database
    /// off a full or read-only file system, or one nobody may change. The open runs as usual
    /// (every check, the logs replayed) with its changes kept in memory: SSD files through
    /// [`crate::fs::OverlayFs`], the pool mapped private (copy on write). No background
    /// thread runs; writes, `flush` and `compact_range` are [`crate::Error::ReadOnly`]. A
    /// database is never created (`create_if_missing` is ignored). Refused while a writer
    /// holds the database; read-only opens share it. Default false.
    #[serde(default)]
    pub read_only: bool,
    /// Size of a DRAM memtable before it is made immutable and flushed. Larger memtables mean
    /// fewer, larger L0 files and longer recovery. Default 64 MiB (RocksDB's default).
    pub write_buffer_size: usize,
    /// Memtables (the active one and immutable ones waiting for flush) allowed before writes
    /// stop. Default 2.
    pub max_write_buffer_number: usize,
    /// Largest key accepted; longer keys get [`Error::InvalidArgument`]. Default 64 KiB.
    pub max_key_size: usize,
    /// Largest value accepted. Default 64 MiB.
    pub max_value_size: usize,
    /// Block cache budget in bytes (data blocks; indexes and filters of open tables stay
    /// resident and are reported separately). Default 32 MiB.
    pub block_cache_bytes: usize,
    /// Table readers kept open. Default 1000.
    pub max_open_files: usize,
    /// SSTable layout.
    pub table: TableOptions,
    /// Compaction and throttling.
    pub compaction: CompactionOptions,
    /// The PM pool, for designs that use it.
    pub pm: PmOptions,
    /// The SSD model: bandwidth caps and direct reads on the SSD tier. Off by default.
    #[serde(default)]
    pub ssd: SsdModelOptions,
    /// The NVLSM designs' options.
    #[serde(default)]
    pub nvlsm: NvlsmOptions,
    /// The row-container designs' options.
    #[serde(default)]
    pub rows: RowOptions,
    /// SLM-DB's selective compaction (`slmdb` only).
    #[serde(default)]
    pub slmdb: SlmOptions,
    /// LAB-DB's L0 trees (`labdb` only).
    #[serde(default)]
    pub labdb: LabOptions,
    /// Size-tiered compaction (`tiered` only).
    #[serde(default)]
    pub universal: UniversalOptions,
    /// The file system; [`PosixFs`] unless a test substitutes another one.
    #[serde(skip, default = "default_fs")]
    pub fs: Arc<dyn FileSystem>,
}

/// Serde's default for counts whose default is one.
fn one() -> usize {
    1
}

/// Serde's default for `compaction.load_window_ms`.
fn load_window() -> u64 {
    500
}

fn default_true() -> bool {
    true
}

fn default_reuse_min_tables() -> usize {
    4
}

fn default_fs() -> Arc<dyn FileSystem> {
    Arc::new(PosixFs)
}

impl Default for Options {
    fn default() -> Self {
        Options {
            design: Design::LEVELED,
            create_if_missing: true,
            error_if_exists: false,
            read_only: false,
            write_buffer_size: 64 << 20,
            max_write_buffer_number: 2,
            max_key_size: 64 << 10,
            max_value_size: 64 << 20,
            block_cache_bytes: 32 << 20,
            max_open_files: 1000,
            table: TableOptions::default(),
            compaction: CompactionOptions::default(),
            pm: PmOptions::default(),
            ssd: SsdModelOptions::default(),
            nvlsm: NvlsmOptions::default(),
            rows: RowOptions::default(),
            slmdb: SlmOptions::default(),
            labdb: LabOptions::default(),
            universal: UniversalOptions::default(),
            fs: default_fs(),
        }
    }
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("design", &self.design)
            .field("create_if_missing", &self.create_if_missing)
            .field("error_if_exists", &self.error_if_exists)
            .field("read_only", &self.read_only)
            .field("write_buffer_size", &self.write_buffer_size)
            .field("max_write_buffer_number", &self.max_write_buffer_number)
            .field("max_key_size", &self.max_key_size)
            .field("max_value_size", &self.max_value_size)
            .field("block_cache_bytes", &self.block_cache_bytes)
            .field("max_open_files", &self.max_open_files)
            .field("table", &self.table)
            .field("compaction", &self.compaction)
            .field("pm", &self.pm)
            .field("ssd", &self.ssd)
            .field("nvlsm", &self.nvlsm)
            .field("rows", &self.rows)
            .field("slmdb", &self.slmdb)
            .field("labdb", &self.labdb)
            .field("universal", &self.universal)
            .finish_non_exhaustive()
    }
}

impl Options {
    /// Checks every field on its own (what the design asks of them is checked by
    /// [`Options::validate`], in the registry); returns [`Error::InvalidArgument`] naming the
    /// first bad one.
    pub(crate) fn validate_fields(&self) -> Result<()> {
        let bad = |m: String| Err(Error::InvalidArgument(m));
        if self.write_buffer_size < 4096 {
            return bad(format!(
                "write_buffer_size {} < 4096",
                self.write_buffer_size
            ));
        }
        if self.max_write_buffer_number < 2 {
            return bad("max_write_buffer_number must be >= 2".into());
        }
        if self.max_key_size == 0 || self.max_key_size > (1 << 24) {
            return bad(format!(
                "max_key_size {} not in 1..=16 MiB",
                self.max_key_size
            ));
        }
        if self.max_value_size > (1 << 30) {
            return bad(format!("max_value_size {} > 1 GiB", self.max_value_size));
        }
        if self.max_open_files < 16 {
            return bad("max_open_files must be >= 16".into());
        }
        let t = &self.table;
        if t.block_size < 256 || t.block_size > (16 << 20) {
            return bad(format!(
                "table.block_size {} not in 256..=16 MiB",
                t.block_size
            ));
        }
        if t.restart_interval == 0 || t.restart_interval > 1024 {
            return bad("table.restart_interval must be in 1..=1024".into());
        }
        if t.bloom_bits_per_key > 64 {
            return bad("table.bloom_bits_per_key must be <= 64".into());
        }
        if t.index_partition_blocks > 65536 {
            return bad("table.index_partition_blocks must be <= 65536".into());
        }
        let u = &self.universal;
        if u.min_merge_width < 2 || u.max_merge_width < u.min_merge_width {
            return bad(format!(
                "universal.min_merge_width {} must be at least 2 and at most \
                 universal.max_merge_width {}",
                u.min_merge_width, u.max_merge_width
            ));
        }
        let lab = &self.labdb;
        if !(lab.immutable_at > 0.0 && lab.immutable_at <= 1.0) {
            return Err(Error::InvalidArgument(format!(
                "labdb.immutable_at {} not in (0, 1]",
                lab.immutable_at
            )));
        }
        if !(0.0..=1.0).contains(&lab.file_scan_after) {
            return Err(Error::InvalidArgument(format!(
                "labdb.file_scan_after {} not in [0, 1]",
                lab.file_scan_after
            )));
        }
        if lab.hot_slot_bytes < 128 || !lab.hot_slot_bytes.is_multiple_of(64) {
            return Err(Error::InvalidArgument(format!(
                "labdb.hot_slot_bytes {} must be a multiple of 64, at least 128",
                lab.hot_slot_bytes
            )));
        }
        if lab.hot_threshold == 0 || lab.hot_threshold > 255 {
            return Err(Error::InvalidArgument(format!(
                "labdb.hot_threshold {} not in 1..=255",
                lab.hot_threshold
            )));
        }
        if lab.wal_buffer_bytes < 8 << 10 {
            return Err(Error::InvalidArgument(
                "labdb.wal_buffer_bytes must be at least 8 KiB (two 4 KiB halves)".into(),
            ));
        }
        if lab.leaf_region_bytes < 4 << 10 || lab.chunk_bytes == 0 {
            return Err(Error::InvalidArgument(
                "labdb.leaf_region_bytes must be at least 4 KiB and chunk_bytes above 0".into(),
            ));
        }
        let slm = &self.slmdb;
        if !(slm.live_key_ratio > 0.0 && slm.live_key_ratio <= 1.0) {
            return bad(format!(
                "slmdb.live_key_ratio {} not in (0, 1]",
                slm.live_key_ratio
            ));
        }
        if slm.leaf_scan_files == 0 || slm.range_files == 0 || slm.range_sub_keys < 2 {
            return bad(
                "slmdb.leaf_scan_files and range_files must be >= 1, range_sub_keys >= 2".into(),
            );
        }
        if !(2..=1024).contains(&slm.max_inputs) {
            return bad(format!(
                "slmdb.max_inputs {} not in 2..=1024",
                slm.max_inputs
            ));
        }
        if !(2..=64).contains(&self.nvlsm.max_floor) {
            return bad(format!(
                "nvlsm.max_floor {} not in 2..=64",
                self.nvlsm.max_floor
            ));
        }
        let r = &self.rows;
        if !(r.trigger > 0.0 && r.trigger <= r.slowdown && r.slowdown <= 1.0) {
            return bad(format!(
                "need 0 < rows.trigger ({}) <= rows.slowdown ({}) <= 1",
                r.trigger, r.slowdown
            ));
        }
        let c = &self.compaction;
        if !(2..=20).contains(&c.num_levels) {
            return bad("compaction.num_levels must be in 2..=20".into());
        }
        if c.level0_compaction_trigger == 0
            || c.level0_slowdown_trigger < c.level0_compaction_trigger
            || c.level0_stop_trigger < c.level0_slowdown_trigger
        {
            return bad("need 0 < level0_compaction_trigger <= slowdown <= stop trigger".into());
        }
        if c.level_size_multiplier < 2 {
            return bad("compaction.level_size_multiplier must be >= 2".into());
        }
        if c.target_file_size < 4096 || c.max_bytes_for_level_base < 4096 {
            return bad("target_file_size and max_bytes_for_level_base must be >= 4096".into());
        }
        if c.background_compactions == 0 || c.background_compactions > 64 {
            return bad("compaction.background_compactions must be in 1..=64".into());
        }
        if c.reuse_min_tables == 0 {
            return bad("compaction.reuse_min_tables must be at least 1".into());
        }
        if c.subcompactions == 0 || c.subcompactions > 64 {
            return bad("compaction.subcompactions must be in 1..=64".into());
        }
        if c.read_compaction_trigger == 0 {
            return bad("compaction.read_compaction_trigger must be >= 1".into());
        }
        if !(10..=60_000).contains(&c.load_window_ms) {
            return bad("compaction.load_window_ms must be in 10..=60000".into());
        }
        self.ssd.validate()
    }
}

/// Options of one write. Build it with `..Default::default()` for the fields you leave alone:
/// fields may be added.
#[derive(Clone, Copy, Debug, Default)]
pub struct WriteOptions {
    /// Sync the write-ahead log (fdatasync) before acknowledging. Without it an acknowledged
    /// write survives a process crash but may be lost in a power failure. Default false.
    pub sync: bool,
    /// Skip the write-ahead log (RocksDB's `disableWAL`): the write goes to the memtable only.
    /// It is readable at once and durable once its memtable is flushed (by `Db::flush`, a full
    /// memtable, or `Db::close` and drop, which flush when unlogged writes are in memory); a
    /// crash before that may lose it, while logged writes keep their guarantees (recovery
    /// replays them past the unlogged ones, whose sequence numbers the next logged record
    /// carries). With `sync` it is an [`crate::Error::InvalidArgument`], as in RocksDB. No
    /// effect on designs whose memtable is itself persistent and that have no separate log
    /// (`leveled-pmtable`, `slmdb`: every write is durable once linked into the PM
    /// memtable). Default false.
    pub disable_wal: bool,
}

/// Options of one read or iterator.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// Read as of this snapshot; the latest state when `None`.
    pub snapshot: Option<crate::snapshot::Snapshot>,
    /// Do not insert blocks read by this operation into the block cache (for scans that would
    /// otherwise evict the working set). Default false.
    pub skip_cache_fill: bool,
}

/// `options` with its file system wrapped in the SSD model when `options.ssd` turns any part of
/// it on (unchanged otherwise). Called by `Db::open`. A file system that already is an
/// [`crate::fs::SsdModelFs`] is used as it is: the options of an open database (`Db::options`) hold the
/// model it was opened with, and a model built by hand (another clock) is respected.
pub(crate) fn with_ssd_model(mut options: Options) -> Options {
    if options.ssd.is_on() && options.fs.as_ssd_model().is_none() {
        options.fs = Arc::new(crate::fs::SsdModelFs::new(
            Arc::clone(&options.fs),
            &options.ssd,
        ));
    }
    options
}
