//! `leveled-pm`: the "RocksDB-L0-NVM" baseline of TriangleKV and LAB-DB.
//!
//! Front end: a WAL on a PM log (on SSD with `pm.wal_on_ssd`: LAB-DB's "RocksDB-NVM"
//! baseline) and a DRAM memtable. Stages: one, the leveled SST levels, with
//! L0 tables in the PM pool (read in place; a flush that finds no room in the pool writes its
//! table to SSD) and L1 and below on SSD. Defaults: those of `leveled`.
//!
//! One stage with a per-level tier rather than an L0 stage on PM and a leveled stage on SSD:
//! the L0 -> L1 compaction is the leveled policy's own step (its picker weighs the L0 file count
//! against the L1 size, and a manual compaction walks both), so splitting it across two stages
//! would give `leveled` and `leveled-pm` two different policies for the same tree.

use super::DesignSpec;
use crate::pipeline::{FrontEndKind, Stage};
use crate::stages::LeveledStage;
use crate::tier::Tier;

pub(super) const SPEC: DesignSpec = DesignSpec {
    name: "leveled-pm",
    summary: "PM log + DRAM memtable, L0 SSTables in the PM pool, L1.. on SSD (RocksDB-L0-NVM)",
    front_end: FrontEndKind::WalMemtable,
    log_tier: |o| Some(if o.pm.wal_on_ssd { Tier::Ssd } else { Tier::Pm }),
    uses_pm: |_| true,
    data_on_pm: false,
    compaction_log: false,
    needs_auto_compactions: None,
    stages: |o| vec![Box::new(LeveledStage::new(&o.compaction, Tier::Pm)) as Box<dyn Stage>],
    defaults: |_| {},
};
