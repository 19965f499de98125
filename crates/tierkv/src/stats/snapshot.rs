//! [`DbStats`]: a snapshot of the counters with the per-design figures (LAB-DB's trees,
//! SLM-DB's index, ListDB's lists, the PM device) and the ratios derived from them.

use super::*;

/// Files and bytes in one level.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LevelStats {
    /// Number of table files (runs made of parts of one file, FluidKV's reused LSTs, count
    /// it once: `Db::live_tables` lists runs, so it can list more).
    pub files: usize,
    /// Bytes of those files (all of a file parts of which are live).
    pub bytes: u64,
}

/// The DRAM the database holds, by use.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DramFootprint {
    /// Active and immutable memtables (approximate: entries plus skiplist node overhead).
    pub memtable_bytes: u64,
    /// Memory of flushed memtables kept for reuse by the next ones (the part ever used), in
    /// the cache or under a memtable that has not used it again yet.
    #[serde(default)]
    pub memtable_kept_bytes: u64,
    /// Bloom filters of open tables.
    pub filter_bytes: u64,
    /// Index blocks of open tables.
    pub index_bytes: u64,
    /// Data blocks in the block cache.
    pub block_cache_bytes: u64,
    /// A global index's inner nodes (SLM-DB: one separator per PM leaf).
    #[serde(default)]
    pub global_index_bytes: u64,
    /// LAB-DB's L0 trees' inner nodes (one separator per PM leaf).
    #[serde(default)]
    pub l0_tree_bytes: u64,
    /// ListDB's lists' upper levels (one sampled key in eight).
    #[serde(default)]
    pub list_tower_bytes: u64,
}

impl DramFootprint {
    /// Sum of every part.
    pub fn total(&self) -> u64 {
        self.memtable_bytes
            + self.memtable_kept_bytes
            + self.filter_bytes
            + self.index_bytes
            + self.block_cache_bytes
            + self.global_index_bytes
            + self.l0_tree_bytes
            + self.list_tower_bytes
    }
}

/// Figures of ListDB's heap (`listdb`): its lists, its log and what flushes and zipper
/// compactions wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListDbStats {
    /// L0 lists waiting for the zipper.
    pub l0_lists: usize,
    /// Entries of the L0 lists (as published).
    pub l0_entries: u64,
    /// Bytes of their log entries.
    pub l0_bytes: u64,
    /// Entries of the L1 list.
    pub l1_entries: u64,
    /// Bytes of its log entries.
    pub l1_bytes: u64,
    /// The log's position: bytes of log entries ever appended, plus the unused end of each
    /// chunk an entry did not fit (the heap frees nothing).
    pub log_bytes: u64,
    /// PM chunks the heap holds.
    pub chunks: u64,
    /// L0 lists zipped into L1.
    pub zips: u64,
    /// Next-word bytes flushes stored (8 per entry linked).
    pub linked_bytes: u64,
    /// Next-word bytes the zipper stored (16 per gap spliced).
    pub spliced_bytes: u64,
    /// DRAM of the lists' upper levels.
    pub dram_bytes: u64,
}

/// Figures of LAB-DB's L0: its two persistent B+ trees and the value arrays they point into.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabStats {
    /// The mutable tree's number.
    pub mutable_tree: u64,
    /// The immutable tree's number (0: none).
    pub immutable_tree: u64,
    /// Keys in the mutable tree.
    pub mutable_keys: u64,
    /// Keys in the immutable tree.
    pub immutable_keys: u64,
    /// PM bytes of both trees (leaves and long-key objects).
    pub pm_bytes: u64,
    /// DRAM bytes of both trees' inner nodes.
    pub dram_bytes: u64,
    /// Versions held in DRAM for live snapshots.
    pub held_versions: u64,
    /// Flushed keys already in the mutable tree, updated in place (one 8-byte persist).
    pub in_place_updates: u64,
    /// Flushed keys inserted into the mutable tree.
    pub inserts: u64,
    /// Times the mutable tree became the immutable one.
    pub switches: u64,
    /// Chunks of an immutable tree compacted into L1.
    pub chunks: u64,
    /// Of those, chunks chosen by file scan (the leaves holding the most values of the oldest
    /// value array, once `labdb.file_scan_after` of the tree is compacted).
    pub file_scan_chunks: u64,
    /// Value arrays tracked.
    pub value_files: u64,
    /// Their bytes.
    pub value_bytes: u64,
    /// The estimated bytes of their records still referenced.
    pub value_live_bytes: u64,
    /// Slots of the hot-key buffer that belong to a key.
    pub hot_slots: u64,
    /// PM bytes of the hot-key buffer (its segments, used or not).
    pub hot_pm_bytes: u64,
    /// Versions flushes wrote into hot slots (each one an in-place update in PM).
    pub hot_writes: u64,
    /// Times a full half of the PM WAL buffer was drained (the key and value arrays synced by
    /// the write that filled it; LAB-DB's log only).
    pub log_drains: u64,
}

/// Figures of a global index (SLM-DB's B+ tree over its single level).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GlobalIndexStats {
    /// Keys in the tree.
    pub keys: u64,
    /// Leaves of the tree.
    pub leaves: u64,
    /// PM bytes of the tree (leaves, key objects and inner nodes).
    pub pm_bytes: u64,
    /// The tree's inner nodes (in PM: copy-on-write, published by one 8-byte store).
    #[serde(default)]
    pub inner_nodes: u64,
    /// PM bytes of the inner nodes (part of `pm_bytes`).
    #[serde(default)]
    pub inner_pm_bytes: u64,
    /// DRAM bytes of the tree's inner nodes (PM inner nodes: the cached root offset only).
    pub dram_bytes: u64,
    /// Versions held in DRAM for live snapshots.
    pub held_versions: u64,
    /// Tables on the compaction candidate list of rules R2 and R3.
    pub listed_tables: u64,
}

/// Device-level counters of the PM pool.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PmDeviceStats {
    /// The durability mode in force (`dax`, `msync`, `emulated`).
    pub mode: String,
    /// The flush instruction used (`clwb`, `clflushopt`, `clflush`, `msync`).
    pub flush_instruction: String,
    /// Cache lines written back (x 64 = bytes written to the PM device).
    pub lines_written_back: u64,
    /// Store fences.
    pub fences: u64,
    /// Bytes read through the pool's read accessor.
    pub bytes_read: u64,
    /// Bytes in allocated chunks.
    pub bytes_allocated: u64,
    /// Bytes of free chunks given back to the file system (`pm.release_freed`; at open, every
    /// free range, whether it was backed or not).
    #[serde(default)]
    pub bytes_released: u64,
    /// Pool size.
    pub pool_bytes: u64,
}

/// A copy of every figure of a database, as returned by [`crate::Db::stats`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DbStats {
    /// The design's name.
    pub design: String,
    /// Key + value bytes of user writes.
    pub user_bytes_written: u64,
    /// Key + value bytes returned to the user.
    pub user_bytes_read: u64,
    /// Puts and deletes.
    pub user_writes: u64,
    /// Gets.
    pub user_gets: u64,
    /// SSD bytes written to the WAL.
    pub ssd_written_wal: u64,
    /// SSD bytes written to the manifest.
    pub ssd_written_manifest: u64,
    /// SSD bytes written by flushes.
    pub ssd_written_flush: u64,
    /// SSD bytes written by compactions.
    pub ssd_written_compaction: u64,
    /// SSD bytes read by compactions.
    pub ssd_read_compaction: u64,
    /// SSD bytes read for user reads.
    pub ssd_read_user: u64,
    /// SSD bytes read by recovery and checks.
    pub ssd_read_recovery: u64,
    /// Block cache hits.
    pub block_cache_hits: u64,
    /// Block cache misses.
    pub block_cache_misses: u64,
    /// Table probes avoided by Bloom filters.
    pub bloom_useful: u64,
    /// Microseconds of slowdown delays.
    pub stall_slowdown_micros: u64,
    /// Microseconds writers were stopped.
    pub stall_stop_micros: u64,
    /// Write groups (one WAL append each) that were delayed or stopped, each counted once.
    pub stall_count: u64,
    /// Completed flushes.
    pub flushes: u64,
    /// Completed compactions.
    pub compactions: u64,
    /// Recovery: half-done flushes and compactions the compaction log discarded.
    pub clog_discarded: u64,
    /// Recovery: published compactions whose last step the compaction log redid.
    pub clog_redone: u64,
    /// Recovery: run files no version named and no compaction log accounted for, removed by
    /// the directory sweep at open.
    pub unlogged_runs_removed: u64,
    /// WAL appends (group commits).
    pub wal_appends: u64,
    /// WAL syncs.
    pub wal_syncs: u64,
    /// PM bytes appended to the WAL.
    pub pm_written_wal: u64,
    /// PM bytes of manifest records (a manifest in the pool: `pm.manifest_on_pm`).
    #[serde(default)]
    pub pm_written_manifest: u64,
    /// PM bytes written by flushes.
    pub pm_written_flush: u64,
    /// PM bytes written by compactions.
    pub pm_written_compaction: u64,
    /// PM bytes read for user reads.
    pub pm_read_user: u64,
    /// PM bytes read by compactions.
    pub pm_read_compaction: u64,
    /// PM bytes read by recovery and checks.
    pub pm_read_recovery: u64,
    /// Flushes that went to SSD because the PM pool was full.
    pub pm_flush_fallbacks: u64,
    /// Manifests moved from the PM pool to the database directory because the pool was full
    /// (`pm.manifest_on_pm`: the commit that found no room wrote a fresh manifest there).
    #[serde(default)]
    pub pm_manifest_fallbacks: u64,
    /// Compactions that wrote their outputs to SSD because the PM pool was full: sent there
    /// at the start (the pool's free chunks could not hold their inputs' bytes), or run again
    /// there after filling the pool (`pm_compaction_retries`).
    #[serde(default)]
    pub pm_compaction_fallbacks: u64,
    /// Compactions that wrote into the PM pool until it was full, then ran again with their
    /// outputs on SSD (what they wrote into the pool is counted as written, and freed).
    #[serde(default)]
    pub pm_compaction_retries: u64,
    /// Entries flushes left out: versions shadowed for every reader by a newer one.
    #[serde(default)]
    pub flush_dropped_versions: u64,
    /// PM bytes of row pages freed inside live rows since open (`trianglekv`, `matrixkv`: the
    /// pages wholly in dead ranges).
    pub row_pages_freed_bytes: u64,
    /// Key-range partitions compactions were split into and merged in parallel since open
    /// (`compaction.subcompactions`).
    #[serde(default)]
    pub subcompactions: u64,
    /// Runs compactions left in place or moved unchanged since open
    /// (`compaction.reuse_untouched_runs`).
    #[serde(default)]
    pub reused_runs: u64,
    /// Bytes of logical sorted tables compactions left in place inside runs they merged the
    /// rest of since open (`compaction.reuse_untouched_tables`).
    #[serde(default)]
    pub reused_table_bytes: u64,
    /// Runs no source key fell into that compactions merged since open, to free a file less
    /// than half in use.
    #[serde(default)]
    pub reclaimed_runs: u64,
    /// Switches of the load detector between write-intensive and read-intensive modes since
    /// open (`fluidkv`).
    #[serde(default)]
    pub load_mode_switches: u64,
    /// Flushes the load detector asked for in read-only periods since open (`fluidkv`).
    #[serde(default)]
    pub eager_flushes: u64,
    /// The buffer-tree count that triggers a compaction, as the load detector set it last
    /// (`fluidkv`: 4 under writes, 1 under reads; 0 without a detector).
    #[serde(default)]
    pub load_trigger: u64,
    /// Entries a compaction copied that a flush replaced before the global index moved to
    /// them (`slmdb`).
    #[serde(default)]
    pub index_stale_copies: u64,
    /// Tables the last open adopted: the global index named them and the manifest did not (a
    /// crash between a flush's or compaction's index updates and its manifest record).
    #[serde(default)]
    pub index_adopted_tables: u64,
    /// The global index (`slmdb`): its tree and the versions held for snapshots.
    #[serde(default)]
    pub global_index: Option<GlobalIndexStats>,
    /// LAB-DB's L0 trees and value arrays (`labdb`).
    #[serde(default)]
    pub labdb: Option<LabStats>,
    /// ListDB's heap (`listdb`).
    #[serde(default)]
    pub listdb: Option<ListDbStats>,
    /// Whether background work is pending: an unflushed immutable buffer, a running
    /// compaction, or a stage whose policy would start one now (never while automatic
    /// compactions are disabled).
    pub background_pending: bool,
    /// The PM pool's own counters (device level: cache lines written back, fences, bytes read,
    /// bytes allocated), when the design uses PM.
    pub pm: Option<PmDeviceStats>,
    /// Files and bytes per level, L0 first: the groups of every stage, in pipeline order (for
    /// the leveled designs, their levels).
    pub levels: Vec<LevelStats>,
    /// Files and bytes per level that live on PM, L0 first (as `levels`).
    pub pm_levels: Vec<LevelStats>,
    /// Bytes of live WAL files on SSD.
    pub wal_bytes: u64,
    /// Bytes of live WAL files on PM.
    pub pm_wal_bytes: u64,
    /// DRAM held, by use.
    pub dram: DramFootprint,
    /// Every non-zero byte counter by (tier, pipeline part, purpose).
    #[serde(default)]
    pub io: Vec<IoCount>,
    /// The design's stages, in pipeline order: their runs and bytes per group.
    #[serde(default)]
    pub stages: Vec<StageStats>,
    /// The most recent compactions (at most 2,000), oldest first.
    #[serde(default)]
    pub compaction_jobs: Vec<CompactionJob>,
    /// Compactions that finished before those (dropped from the job log).
    #[serde(default)]
    pub compaction_jobs_dropped: u64,
    /// Cumulative compaction figures per (stage, output group) since open, never capped:
    /// RocksDB's per-level compaction statistics. Only groups written to are listed, by stage
    /// then group.
    #[serde(default)]
    pub compaction_levels: Vec<LevelCompactionStats>,
    /// Cumulative flush figures per target of stage 0 (group and tier) since open.
    #[serde(default)]
    pub flush_targets: Vec<FlushTargetStats>,
    /// Write stalls by cause since open (only causes that stalled anything).
    #[serde(default)]
    pub stall_causes: Vec<StallCause>,
    /// Key-value separation: the value logs the current version's tables name.
    #[serde(default)]
    pub value_logs: ValueLogStats,
}

/// The value logs of separated tables (`table.value_separation`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ValueLogStats {
    /// Logs the current version's tables name.
    pub files: usize,
    /// Their bytes on PM.
    pub pm_bytes: u64,
    /// Their bytes on SSD.
    pub ssd_bytes: u64,
    /// The record bytes the tables name in them (the rest is garbage a compaction collects
    /// once a log is less than half live).
    pub live_bytes: u64,
}

/// One stage of the design as it stands.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StageStats {
    /// The stage's name (e.g. `levels`).
    pub name: String,
    /// Runs and bytes per group of the stage (e.g. per level), every tier.
    pub groups: Vec<LevelStats>,
    /// The same for the runs on PM.
    pub pm_groups: Vec<LevelStats>,
}

impl DbStats {
    /// Copies the counters.
    pub fn from_counters(c: &Counters) -> DbStats {
        let g = |a: &AtomicU64| a.load(Relaxed);
        let io = c.io_counts();
        let sum = |tier: Tier, purpose: IoPurpose, written: bool| -> u64 {
            io.iter()
                .filter(|x| x.tier == tier && x.purpose == purpose.name())
                .map(|x| if written { x.written } else { x.read })
                .sum()
        };
        use IoPurpose as P;
        let (compaction_jobs, compaction_jobs_dropped) = {
            let log = c.jobs.lock();
            (log.jobs.iter().cloned().collect(), log.dropped)
        };
        DbStats {
            user_bytes_written: g(&c.user_bytes_written),
            user_bytes_read: g(&c.user_bytes_read),
            user_writes: g(&c.user_writes),
            user_gets: g(&c.user_gets),
            ssd_written_wal: sum(Tier::Ssd, P::Wal, true),
            ssd_written_manifest: sum(Tier::Ssd, P::Manifest, true),
            ssd_written_flush: sum(Tier::Ssd, P::Flush, true),
            ssd_written_compaction: sum(Tier::Ssd, P::Compaction, true),
            ssd_read_compaction: sum(Tier::Ssd, P::Compaction, false),
            ssd_read_user: sum(Tier::Ssd, P::UserRead, false),
            ssd_read_recovery: sum(Tier::Ssd, P::Recovery, false)
                + sum(Tier::Ssd, P::Manifest, false)
                + sum(Tier::Ssd, P::Wal, false)
                + sum(Tier::Ssd, P::Flush, false),
            block_cache_hits: g(&c.block_cache_hits),
            block_cache_misses: g(&c.block_cache_misses),
            bloom_useful: g(&c.bloom_useful),
            stall_slowdown_micros: g(&c.stall_slowdown_micros),
            stall_stop_micros: g(&c.stall_stop_micros),
            stall_count: g(&c.stall_count),
            flushes: g(&c.flushes),
            compactions: g(&c.compactions),
            clog_discarded: g(&c.clog_discarded),
            clog_redone: g(&c.clog_redone),
            unlogged_runs_removed: g(&c.unlogged_runs_removed),
            wal_appends: g(&c.wal_appends),
            wal_syncs: g(&c.wal_syncs),
            pm_written_wal: sum(Tier::Pm, P::Wal, true),
            pm_written_manifest: sum(Tier::Pm, P::Manifest, true),
            pm_written_flush: sum(Tier::Pm, P::Flush, true),
            pm_written_compaction: sum(Tier::Pm, P::Compaction, true),
            pm_read_user: sum(Tier::Pm, P::UserRead, false),
            pm_read_compaction: sum(Tier::Pm, P::Compaction, false),
            pm_read_recovery: sum(Tier::Pm, P::Recovery, false)
                + sum(Tier::Pm, P::Manifest, false)
                + sum(Tier::Pm, P::Wal, false)
                + sum(Tier::Pm, P::Flush, false),
            pm_flush_fallbacks: g(&c.pm_flush_fallbacks),
            pm_manifest_fallbacks: g(&c.pm_manifest_fallbacks),
            pm_compaction_fallbacks: g(&c.pm_compaction_fallbacks),
            pm_compaction_retries: g(&c.pm_compaction_retries),
            flush_dropped_versions: g(&c.flush_dropped_versions),
            row_pages_freed_bytes: g(&c.row_pages_freed_bytes),
            subcompactions: g(&c.subcompactions),
            reused_runs: g(&c.reused_runs),
            reused_table_bytes: g(&c.reused_table_bytes),
            reclaimed_runs: g(&c.reclaimed_runs),
            load_mode_switches: g(&c.load_mode_switches),
            eager_flushes: g(&c.eager_flushes),
            load_trigger: g(&c.load_trigger),
            index_stale_copies: g(&c.index_stale_copies),
            index_adopted_tables: g(&c.index_adopted_tables),
            io,
            compaction_jobs,
            compaction_jobs_dropped,
            compaction_levels: c.levels.lock().values().cloned().collect(),
            flush_targets: c.flush_targets.lock().values().cloned().collect(),
            stall_causes: c.stall_causes(),
            ..DbStats::default()
        }
    }

    /// Bytes `stage` wrote to `tier` (flushes into it and compactions writing into it).
    pub fn stage_bytes_written(&self, stage: usize, tier: Tier) -> u64 {
        self.io
            .iter()
            .filter(|x| x.stage == Some(stage) && x.tier == tier)
            .map(|x| x.written)
            .sum()
    }

    /// Bytes `stage` read from `tier` for `purpose` (e.g. `user_read`).
    pub fn stage_bytes_read(&self, stage: usize, tier: Tier, purpose: IoPurpose) -> u64 {
        self.io
            .iter()
            .filter(|x| x.stage == Some(stage) && x.tier == tier && x.purpose == purpose.name())
            .map(|x| x.read)
            .sum()
    }

    /// All SSD bytes written.
    pub fn ssd_bytes_written(&self) -> u64 {
        self.ssd_written_wal
            + self.ssd_written_manifest
            + self.ssd_written_flush
            + self.ssd_written_compaction
    }

    /// All PM bytes written, as the engine handed them to the PM layer.
    pub fn pm_bytes_written(&self) -> u64 {
        self.pm_written_wal
            + self.pm_written_manifest
            + self.pm_written_flush
            + self.pm_written_compaction
    }

    /// PM bytes written at the device: cache lines written back x 64 (0 without PM).
    pub fn pm_device_bytes_written(&self) -> u64 {
        self.pm.as_ref().map_or(0, |p| p.lines_written_back * 64)
    }

    /// SSD bytes written / user bytes written (0 before any write).
    pub fn write_amplification(&self) -> f64 {
        ratio(self.ssd_bytes_written(), self.user_bytes_written)
    }

    /// PM bytes written at the device (cache lines written back x 64) / user bytes written.
    pub fn pm_write_amplification(&self) -> f64 {
        ratio(self.pm_device_bytes_written(), self.user_bytes_written)
    }

    /// PM bytes read for user reads / user bytes returned.
    pub fn pm_read_amplification(&self) -> f64 {
        ratio(self.pm_read_user, self.user_bytes_read)
    }

    /// Bytes of tables and their value logs on PM, and of LAB-DB's L0 trees and hot-key
    /// buffer.
    pub fn pm_live_bytes(&self) -> u64 {
        self.pm_levels.iter().map(|l| l.bytes).sum::<u64>()
            + self.value_logs.pm_bytes
            + self
                .labdb
                .as_ref()
                .map_or(0, |l| l.pm_bytes + l.hot_pm_bytes)
    }

    /// Bytes of tables on PM (the runs of `pm_levels` only).
    fn pm_table_bytes(&self) -> u64 {
        self.pm_levels.iter().map(|l| l.bytes).sum()
    }

    /// Write amplification without the WAL (flush + compaction bytes / user bytes), the figure
    /// LSM papers usually quote.
    pub fn write_amplification_tables(&self) -> f64 {
        ratio(
            self.ssd_written_flush + self.ssd_written_compaction,
            self.user_bytes_written,
        )
    }

    /// Device bytes read for user reads / user bytes returned (0 before any read).
    pub fn read_amplification(&self) -> f64 {
        ratio(self.ssd_read_user, self.user_bytes_read)
    }

    /// Bytes of tables, their value logs and WAL on SSD, and of LAB-DB's value arrays.
    pub fn ssd_live_bytes(&self) -> u64 {
        self.levels.iter().map(|l| l.bytes).sum::<u64>() - self.pm_table_bytes()
            + self.value_logs.ssd_bytes
            + self.wal_bytes
            + self.labdb.as_ref().map_or(0, |l| l.value_bytes)
    }

    /// PM bytes of tables and WAL / `logical_bytes`.
    pub fn pm_space_amplification(&self, logical_bytes: u64) -> f64 {
        ratio(self.pm_live_bytes() + self.pm_wal_bytes, logical_bytes)
    }

    /// Live SSD bytes (tables and WAL on SSD) / `logical_bytes` (the key + value bytes of the live data, which the caller
    /// measures, e.g. with [`crate::Db::logical_size`]).
    pub fn space_amplification(&self, logical_bytes: u64) -> f64 {
        ratio(self.ssd_live_bytes(), logical_bytes)
    }

    /// Total stall time in microseconds.
    pub fn stall_micros(&self) -> u64 {
        self.stall_slowdown_micros + self.stall_stop_micros
    }
}

pub(crate) fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}
