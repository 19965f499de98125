//! `trianglekv`: TriangleKV (Ding et al., "TriangleKV: Reducing Write Stalls and Write
//! Amplification in LSM-Tree Based KV Stores With Triangle Container in NVM", IEEE TPDS 2022).
//!
//! Front end: a PM log and a DRAM memtable (section 4: DRAM memtables, the WAL in NVM). Stage:
//! a row container (`stages::RowStage`) whose L0 is the triangle container of RowTables in the
//! PM pool, compacted by right-angle-side compaction (`compaction::RowPolicy`), over leveled
//! SSTables on SSD with L1 as large as the PM L0 (the flattened levels of section 3.3).
//!
//! Defaults, the paper's (section 5.1) where this machine allows: 64 MiB memtables and SSTables
//! (the engine's defaults), compaction at 60% of the PM L0, each compaction moving half to all
//! of `ratio x SSTable size` of L0 data, ratio 10, L1 = the PM L0. The paper's PM L0 is 8 GB;
//! here it is 3 GiB of live data by default, because dead row pages are freed only with their
//! whole row (up to twice the live bytes in the pool) and the default pool is 8 GiB: set
//! `rows.l0_bytes` and `pm.size_bytes` together for more. See `docs/designs/trianglekv.md`.

use super::DesignSpec;
use crate::options::Options;
use crate::pipeline::{FrontEndKind, Stage};
use crate::stages::rows::Container;
use crate::stages::RowStage;
use crate::tier::Tier;

pub(super) const SPEC: DesignSpec = DesignSpec {
    name: "trianglekv",
    summary: "PM log + DRAM memtable, a triangle container of PM rows with cross-row hints as \
              L0 (right-angle-side compaction), flattened leveled SSTables on SSD (TriangleKV)",
    front_end: FrontEndKind::WalMemtable,
    log_tier: |_| Some(Tier::Pm),
    uses_pm: |_| true,
    data_on_pm: false,
    compaction_log: false,
    needs_auto_compactions: Some("its L0 is a triangle container of PM rows that holds at most rows.l0_bytes of live data and that only compaction drains: with no automatic compaction, writes would stop for good once it is full"),
    stages: |o| vec![Box::new(RowStage::new(o, Container::Triangle)) as Box<dyn Stage>],
    defaults: row_defaults,
};

/// The row-container designs' defaults, applied to options that still hold the engine-wide
/// defaults: the PM L0 of `rows.l0_bytes` (3 GiB), L1 as large as it (flattened levels).
pub(super) fn row_defaults(o: &mut Options) {
    let engine = Options::default();
    if o.rows.l0_bytes == engine.rows.l0_bytes {
        o.rows.l0_bytes = 3 << 30;
    }
    if o.compaction.max_bytes_for_level_base == engine.compaction.max_bytes_for_level_base {
        o.compaction.max_bytes_for_level_base = o.rows.l0_bytes;
    }
}
