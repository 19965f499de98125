//! `slmdb`: SLM-DB (Kaiyrakhmet et al., "SLM-DB: Single-Level Key-Value Store with Persistent
//! Memory", FAST 2019): a persistent skiplist memtable in PM with no WAL, in front of ONE level
//! of SSTables on SSD whose key ranges overlap, found through a persistent B+ tree in PM (the
//! global index, `gindex`) and compacted selectively (`compaction::selective`).
//!
//! Defaults (the paper's, scaled; `docs/designs/slmdb.md`): compaction outputs cut at 2 MiB
//! (LevelDB 1.20's file size, which the paper keeps), no Bloom filters (a get never searches a
//! table: the index gives the block), live-key ratio 0.7, leaf scans of twice the average keys
//! per table listing more than 10 tables, range-query sub-ranges of 30 keys touching more than
//! 8 tables. The memtable size is the engine's default (the paper's 64 MB; the experiments set
//! it for both sides).

use super::DesignSpec;
use crate::pipeline::{FrontEndKind, Stage};
use crate::stages::SingleLevelStage;
use crate::tier::Tier;

pub(super) const SPEC: DesignSpec = DesignSpec {
    name: "slmdb",
    summary: "persistent skiplist memtable in PM, no WAL, one level of overlapping SSTables on \
              SSD under a persistent B+ tree index in PM, selective compaction (SLM-DB)",
    front_end: FrontEndKind::PmMemtable,
    log_tier: |_| Some(Tier::Pm),
    uses_pm: |_| true,
    data_on_pm: false,
    compaction_log: false,
    needs_auto_compactions: None,
    stages: |o| vec![Box::new(SingleLevelStage::new(o)) as Box<dyn Stage>],
    defaults: |o| {
        let engine = crate::options::Options::default();
        if o.compaction.target_file_size == engine.compaction.target_file_size {
            o.compaction.target_file_size = 2 << 20;
        }
        if o.table.bloom_bits_per_key == engine.table.bloom_bits_per_key {
            o.table.bloom_bits_per_key = 0;
        }
    },
};
