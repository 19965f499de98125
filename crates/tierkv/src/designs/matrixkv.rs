//! `matrixkv`: MatrixKV (Yao et al., "MatrixKV: Reducing Write Stalls and Write Amplification
//! in LSM-tree Based KV Stores with Matrix Container in NVM", USENIX ATC 2020), the baseline of
//! TriangleKV (Ding et al., IEEE TPDS 2022), built as that paper describes it.
//!
//! Front end: a PM log and a DRAM memtable. Stage: a row container (`stages::RowStage`) whose
//! L0 is the matrix container of RowTables in the PM pool: the receiver absorbs flushes; when
//! the rows reach 60% of the PM L0 and no compactor is left, every row becomes the compactor,
//! which column compaction drains key range by key range into L1 (`compaction::RowPolicy`).
//! Below: leveled SSTables on SSD with L1 as large as the PM L0.
//!
//! Defaults: those of `trianglekv` (the TriangleKV paper runs both with the same setup). See
//! `docs/designs/matrixkv.md`.

use super::trianglekv::row_defaults;
use super::DesignSpec;
use crate::pipeline::{FrontEndKind, Stage};
use crate::stages::rows::Container;
use crate::stages::RowStage;
use crate::tier::Tier;

pub(super) const SPEC: DesignSpec = DesignSpec {
    name: "matrixkv",
    summary: "PM log + DRAM memtable, a matrix container of PM rows (receiver and compactor, \
              column compaction) as L0, flattened leveled SSTables on SSD (MatrixKV)",
    front_end: FrontEndKind::WalMemtable,
    log_tier: |_| Some(Tier::Pm),
    uses_pm: |_| true,
    data_on_pm: false,
    compaction_log: false,
    needs_auto_compactions: Some("its L0 is a matrix container of PM rows that holds at most rows.l0_bytes of live data and that only compaction drains: with no automatic compaction, writes would stop for good once it is full"),
    stages: |o| vec![Box::new(RowStage::new(o, Container::Matrix)) as Box<dyn Stage>],
    defaults: row_defaults,
};
