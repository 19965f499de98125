//! `fluidkv`: FluidKV (Lu et al., "FluidKV: Seamlessly Bridging the Gap between Indexing
//! Performance and Memory-Footprint on Ultra-Fast Persistent Memory", PVLDB 17(6), 2024).
//!
//! * FastStore: the FastStore front end (`pm.thread_logs`): a concurrent DRAM index over
//!   thread-exclusive PM logs (`front_ends::fast_store`).
//! * BufferStore: L0 of a two-level leveled stage, every run in the PM pool; each flush of
//!   the FastStore writes one buffer tree (one run of logical sorted tables).
//! * StableStore: L1, disjoint runs of logical sorted tables in the pool.
//! * Logical sorted tables: SSTables with a partitioned index (`table.index_partition_blocks`
//!   32, `table.block_size` 512, no Bloom filter): a partition of 32 data blocks of 512 bytes
//!   is one LST, only the top-level index (one entry per LST) is in DRAM, a get in a run reads
//!   one index partition and one data block.
//! * Key-value separation (`table.value_separation`, 256 bytes): larger values go to a value
//!   log next to the buffer tree's table (`sst::value_log`); compactions copy pointers, and
//!   collect logs that are mostly dead.
//! * Manifest on PM (`pm.manifest_on_pm`): the engine's manifest (every run's metadata, the
//!   log and sequence numbers) is a file of the pool, so a flush or compaction commits with a
//!   PM persist; `CURRENT` in the directory names the pool.
//! * Load-aware threshold (`compaction.load_aware`, `stages/load.rs`): the BufferStore compacts at
//!   4 buffer trees under writes, at 1 under reads, and flushes eagerly when read-only.
//! * Parallel compaction (`compaction.subcompactions` = the machine's cores): the buffer
//!   trees and the overlapping StableStore runs are merged in key-range partitions, one
//!   thread each, committed by one manifest record; StableStore runs no buffer-tree key falls
//!   into stay and buffer trees that overlap no other input are moved, not rewritten
//!   (`compaction.reuse_untouched_runs`); inside a StableStore run some buffer-tree key falls
//!   into, the stretches of LSTs none falls into stay too, as runs reading part of the old
//!   file (`compaction.reuse_untouched_tables`).
//!
//! `docs/designs/fluidkv.md` maps the paper's sections to this code and lists where the
//! design differs (a StableStore file holds many LSTs and is freed whole, so reused LSTs keep
//! their file; large values
//! are copied from the FastStore's logs into a value log at the flush; the manifest is the
//! engine's record log, kept in the pool, not a slot array).

use super::DesignSpec;
use crate::pipeline::{FrontEndKind, Stage};
use crate::stages::LeveledStage;
use crate::tier::Tier;
use crate::version::RunKind;

pub(super) const SPEC: DesignSpec = DesignSpec {
    name: "fluidkv",
    summary: "FastStore (concurrent DRAM index over per-thread PM logs), BufferStore -> \
              StableStore of logical sorted tables in PM, load-aware compaction trigger, \
              parallel compaction (FluidKV)",
    front_end: FrontEndKind::WalMemtable,
    log_tier: |_| Some(Tier::Pm),
    uses_pm: |_| true,
    data_on_pm: true,
    compaction_log: true,
    needs_auto_compactions: Some(FLUIDKV_NEEDS_COMPACTIONS),
    stages: |o| {
        vec![Box::new(LeveledStage::with_runs(
            &o.compaction,
            Tier::Pm,
            RunKind::Sst,
        )) as Box<dyn Stage>]
    },
    defaults: fluidkv_defaults,
};

/// Why `fluidkv` needs automatic compactions.
const FLUIDKV_NEEDS_COMPACTIONS: &str =
    "every run lives in the PM pool, and only compaction merges the BufferStore's buffer trees \
     into the StableStore: with no automatic compaction the buffer trees would pile up until \
     the pool is full";

/// Values of at least this many bytes go to a value log (key-value separation, the paper's
/// section 4.2): half a 512-byte block, so that a data block holds at least two entries and
/// the 8+8-byte fast path and the harness's 100-byte values stay inline.
const FLUIDKV_VALUE_SEPARATION: usize = 256;

/// The paper's parameters (section 6.1 and the artifact), scaled: LSTs of 32 blocks of 512
/// bytes, no filters, two groups (BufferStore, StableStore), compaction at 4 buffer trees
/// under writes and 1 under reads, as many compaction partitions as cores, StableStore files
/// of 4 MiB (one PM chunk), runs no buffer-tree key falls into reused, FastStore on, values
/// of 256 bytes or more separated, the manifest in the pool.
fn fluidkv_defaults(o: &mut crate::options::Options) {
    let engine = crate::options::Options::default();
    o.pm.thread_logs = true;
    o.pm.manifest_on_pm.get_or_insert(true);
    if o.table.block_size == engine.table.block_size {
        o.table.block_size = 512;
    }
    if o.table.index_partition_blocks == engine.table.index_partition_blocks {
        o.table.index_partition_blocks = 32;
    }
    if o.table.bloom_bits_per_key == engine.table.bloom_bits_per_key {
        o.table.bloom_bits_per_key = 0;
    }
    if o.table.value_separation == engine.table.value_separation {
        o.table.value_separation = FLUIDKV_VALUE_SEPARATION;
    }
    let c = &mut o.compaction;
    if c.num_levels == engine.compaction.num_levels {
        c.num_levels = 2;
    }
    if c.target_file_size == engine.compaction.target_file_size {
        c.target_file_size = 4 << 20;
    }
    if c.subcompactions == engine.compaction.subcompactions {
        c.subcompactions = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    }
    c.load_aware = true;
    c.reuse_untouched_runs = true;
    c.reuse_untouched_tables = true;
}
