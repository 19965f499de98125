//! Measurement: byte counters per tier and purpose, stall time, and the DRAM footprint.
//!
//! [`Counters`] are atomics updated on the hot paths (relaxed ordering: they are statistics, not
//! synchronisation). [`DbStats`] is a consistent-enough copy taken by [`crate::Db::stats`], from
//! which the amplification figures are derived.

use crate::tier::Tier;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Why bytes were read from or written to a tier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoPurpose {
    /// Write-ahead log appends.
    Wal,
    /// Manifest records and `CURRENT`.
    Manifest,
    /// Memtable flushes to L0 tables.
    Flush,
    /// Compaction inputs (reads) and outputs (writes).
    Compaction,
    /// Reads made to answer user gets, iterators and scans.
    UserRead,
    /// Reads made by recovery and by `check`.
    Recovery,
}

/// Live counters, shared by every component of one database.
#[derive(Debug, Default)]
pub struct Counters {
    /// Key + value bytes of user puts and key bytes of deletes.
    pub user_bytes_written: AtomicU64,
    /// Key + value bytes returned to the user by gets, iterators and scans.
    pub user_bytes_read: AtomicU64,
    /// Number of put and delete operations.
    pub user_writes: AtomicU64,
    /// Number of get operations.
    pub user_gets: AtomicU64,
    /// SSD bytes written to the WAL.
    pub ssd_written_wal: AtomicU64,
    /// SSD bytes written to the manifest and `CURRENT`.
    pub ssd_written_manifest: AtomicU64,
    /// SSD bytes written by flushes.
    pub ssd_written_flush: AtomicU64,
    /// SSD bytes written by compactions.
    pub ssd_written_compaction: AtomicU64,
    /// SSD bytes read by compactions.
    pub ssd_read_compaction: AtomicU64,
    /// SSD bytes read to answer user reads (block cache misses).
    pub ssd_read_user: AtomicU64,
    /// SSD bytes read by recovery and checks.
    pub ssd_read_recovery: AtomicU64,
    /// Block cache hits.
    pub block_cache_hits: AtomicU64,
    /// Block cache misses.
    pub block_cache_misses: AtomicU64,
    /// Bloom filter checks that ruled a table out.
    pub bloom_useful: AtomicU64,
    /// Microseconds writers spent delayed by the slowdown trigger.
    pub stall_slowdown_micros: AtomicU64,
    /// Microseconds writers spent stopped (too many L0 files or memtables).
    pub stall_stop_micros: AtomicU64,
    /// Write groups (one WAL append each) that were delayed or stopped, each counted once.
    pub stall_count: AtomicU64,
    /// Completed memtable flushes.
    pub flushes: AtomicU64,
    /// Completed compactions (trivial moves included).
    pub compactions: AtomicU64,
    /// WAL appends (one per group commit).
    pub wal_appends: AtomicU64,
    /// PM bytes appended to the WAL (payload bytes handed to the PM file layer).
    pub pm_written_wal: AtomicU64,
    /// PM bytes written by flushes.
    pub pm_written_flush: AtomicU64,
    /// PM bytes written by compactions.
    pub pm_written_compaction: AtomicU64,
    /// PM bytes read to answer user reads.
    pub pm_read_user: AtomicU64,
    /// PM bytes read by compactions.
    pub pm_read_compaction: AtomicU64,
    /// PM bytes read by recovery and checks.
    pub pm_read_recovery: AtomicU64,
    /// Flushes that went to SSD because the PM pool was full.
    pub pm_flush_fallbacks: AtomicU64,
    /// WAL syncs.
    pub wal_syncs: AtomicU64,
}

impl Counters {
    /// Adds `n` bytes written to `tier` for `purpose`.
    pub fn add_written_to(&self, tier: Tier, purpose: IoPurpose, n: u64) {
        match tier {
            Tier::Ssd => self.add_written(purpose, n),
            Tier::Pm => {
                let c = match purpose {
                    IoPurpose::Wal => &self.pm_written_wal,
                    IoPurpose::Flush => &self.pm_written_flush,
                    IoPurpose::Compaction => &self.pm_written_compaction,
                    _ => {
                        debug_assert!(false, "no PM counter for {purpose:?} writes");
                        return;
                    }
                };
                c.fetch_add(n, Relaxed);
            }
        }
    }

    /// Adds `n` bytes read from `tier` for `purpose`.
    pub fn add_read_from(&self, tier: Tier, purpose: IoPurpose, n: u64) {
        match tier {
            Tier::Ssd => self.add_read(purpose, n),
            Tier::Pm => {
                let c = match purpose {
                    IoPurpose::Compaction => &self.pm_read_compaction,
                    IoPurpose::UserRead => &self.pm_read_user,
                    _ => &self.pm_read_recovery,
                };
                c.fetch_add(n, Relaxed);
            }
        }
    }

    /// Adds `n` bytes written to SSD for `purpose`.
    pub fn add_written(&self, purpose: IoPurpose, n: u64) {
        let c = match purpose {
            IoPurpose::Wal => &self.ssd_written_wal,
            IoPurpose::Manifest => &self.ssd_written_manifest,
            IoPurpose::Flush => &self.ssd_written_flush,
            IoPurpose::Compaction => &self.ssd_written_compaction,
            IoPurpose::UserRead | IoPurpose::Recovery => {
                debug_assert!(false, "reads are not written");
                return;
            }
        };
        c.fetch_add(n, Relaxed);
    }

    /// Adds `n` bytes read from SSD for `purpose`.
    pub fn add_read(&self, purpose: IoPurpose, n: u64) {
        let c = match purpose {
            IoPurpose::Compaction => &self.ssd_read_compaction,
            IoPurpose::UserRead => &self.ssd_read_user,
            _ => &self.ssd_read_recovery,
        };
        c.fetch_add(n, Relaxed);
    }
}

/// Files and bytes in one level.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LevelStats {
    /// Number of tables.
    pub files: usize,
    /// Bytes of those tables.
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
}

impl DramFootprint {
    /// Sum of every part.
    pub fn total(&self) -> u64 {
        self.memtable_bytes
            + self.memtable_kept_bytes
            + self.filter_bytes
            + self.index_bytes
            + self.block_cache_bytes
    }
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
    /// WAL appends (group commits).
    pub wal_appends: u64,
    /// WAL syncs.
    pub wal_syncs: u64,
    /// PM bytes appended to the WAL.
    pub pm_written_wal: u64,
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
    /// The PM pool's own counters (device level: cache lines written back, fences, bytes read,
    /// bytes allocated), when the design uses PM.
    pub pm: Option<PmDeviceStats>,
    /// Files and bytes per level, L0 first.
    pub levels: Vec<LevelStats>,
    /// Files and bytes per level that live on PM, L0 first.
    pub pm_levels: Vec<LevelStats>,
    /// Bytes of live WAL files on SSD.
    pub wal_bytes: u64,
    /// Bytes of live WAL files on PM.
    pub pm_wal_bytes: u64,
    /// DRAM held, by use.
    pub dram: DramFootprint,
}

impl DbStats {
    /// Copies the counters.
    pub fn from_counters(c: &Counters) -> DbStats {
        let g = |a: &AtomicU64| a.load(Relaxed);
        DbStats {
            user_bytes_written: g(&c.user_bytes_written),
            user_bytes_read: g(&c.user_bytes_read),
            user_writes: g(&c.user_writes),
            user_gets: g(&c.user_gets),
            ssd_written_wal: g(&c.ssd_written_wal),
            ssd_written_manifest: g(&c.ssd_written_manifest),
            ssd_written_flush: g(&c.ssd_written_flush),
            ssd_written_compaction: g(&c.ssd_written_compaction),
            ssd_read_compaction: g(&c.ssd_read_compaction),
            ssd_read_user: g(&c.ssd_read_user),
            ssd_read_recovery: g(&c.ssd_read_recovery),
            block_cache_hits: g(&c.block_cache_hits),
            block_cache_misses: g(&c.block_cache_misses),
            bloom_useful: g(&c.bloom_useful),
            stall_slowdown_micros: g(&c.stall_slowdown_micros),
            stall_stop_micros: g(&c.stall_stop_micros),
            stall_count: g(&c.stall_count),
            flushes: g(&c.flushes),
            compactions: g(&c.compactions),
            wal_appends: g(&c.wal_appends),
            wal_syncs: g(&c.wal_syncs),
            pm_written_wal: g(&c.pm_written_wal),
            pm_written_flush: g(&c.pm_written_flush),
            pm_written_compaction: g(&c.pm_written_compaction),
            pm_read_user: g(&c.pm_read_user),
            pm_read_compaction: g(&c.pm_read_compaction),
            pm_read_recovery: g(&c.pm_read_recovery),
            pm_flush_fallbacks: g(&c.pm_flush_fallbacks),
            ..DbStats::default()
        }
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
        self.pm_written_wal + self.pm_written_flush + self.pm_written_compaction
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

    /// Bytes of tables on PM.
    pub fn pm_live_bytes(&self) -> u64 {
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

    /// Bytes of tables and WAL on SSD.
    pub fn ssd_live_bytes(&self) -> u64 {
        self.levels.iter().map(|l| l.bytes).sum::<u64>() - self.pm_live_bytes() + self.wal_bytes
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

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}
