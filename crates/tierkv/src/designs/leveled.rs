//! `leveled`: the LevelDB/RocksDB baseline ("RocksDB-SSD" in the papers).
//!
//! Front end: a WAL on SSD (on PM with `pm.wal_on_pm`, to isolate the log's effect) and a DRAM
//! memtable. Stages: one, the leveled SST levels, every level on SSD. Defaults: RocksDB's
//! (64 MiB memtables, L0 triggers 4/20/36, 256 MiB L1, ratio 10, 64 MiB files, 10-bit Bloom
//! filters, no compression).

use super::DesignSpec;
use crate::pipeline::{FrontEndKind, Stage};
use crate::stages::LeveledStage;
use crate::tier::Tier;

pub(super) const SPEC: DesignSpec = DesignSpec {
    name: "leveled",
    summary: "WAL + DRAM memtable + leveled SSTables on SSD (the LevelDB/RocksDB baseline)",
    front_end: FrontEndKind::WalMemtable,
    log_tier: |o| Some(if o.pm.wal_on_pm { Tier::Pm } else { Tier::Ssd }),
    uses_pm: |o| o.pm.wal_on_pm,
    data_on_pm: false,
    compaction_log: false,
    needs_auto_compactions: None,
    stages: |o| vec![Box::new(LeveledStage::new(&o.compaction, Tier::Ssd)) as Box<dyn Stage>],
    defaults: |_| {},
};
