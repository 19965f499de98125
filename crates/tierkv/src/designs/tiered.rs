//! `tiered`: size-tiered compaction, as RocksDB's universal compaction does it, behind
//! `leveled`'s front end; the baseline that trades space for fewer rewrites.
//!
//! Front end: a WAL on SSD and a DRAM memtable. Stages: one, sorted runs (L0's tables, then one
//! run per level) of SSTables on SSD, merged by size ratio and size amplification
//! (`options.universal`, RocksDB's names and defaults). Other defaults: `leveled`'s.

use super::DesignSpec;
use crate::pipeline::{FrontEndKind, Stage};
use crate::stages::TieredStage;
use crate::tier::Tier;

pub(super) const SPEC: DesignSpec = DesignSpec {
    name: "tiered",
    summary: "WAL + DRAM memtable + size-tiered SSTables on SSD (RocksDB's universal compaction)",
    front_end: FrontEndKind::WalMemtable,
    log_tier: |o| Some(if o.pm.wal_on_pm { Tier::Pm } else { Tier::Ssd }),
    uses_pm: |o| o.pm.wal_on_pm,
    data_on_pm: false,
    compaction_log: false,
    needs_auto_compactions: None,
    stages: |o| vec![Box::new(TieredStage::new(o)) as Box<dyn Stage>],
    defaults: |_| {},
};
