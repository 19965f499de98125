//! `leveled-pmtable`: SLM-DB's "LevelDB+PM" baseline (Kaiyrakhmet et al., FAST 2019, section
//! 6.2): LevelDB with its memtables in PM as persistent skiplists and no WAL, so that the
//! memtable's effect can be told apart from SLM-DB's global index.
//!
//! Front end: the persistent skiplist memtable (`pmtable`) in the PM pool, no WAL. Stages: one,
//! the leveled SST levels of `leveled`, every level on SSD. Defaults: those of `leveled`.

use super::DesignSpec;
use crate::pipeline::{FrontEndKind, Stage};
use crate::stages::LeveledStage;
use crate::tier::Tier;

pub(super) const SPEC: DesignSpec = DesignSpec {
    name: "leveled-pmtable",
    summary: "persistent skiplist memtable in PM, no WAL, leveled SSTables on SSD \
              (SLM-DB's LevelDB+PM)",
    front_end: FrontEndKind::PmMemtable,
    log_tier: |_| Some(Tier::Pm),
    uses_pm: |_| true,
    data_on_pm: false,
    compaction_log: false,
    needs_auto_compactions: None,
    stages: |o| vec![Box::new(LeveledStage::new(&o.compaction, Tier::Ssd)) as Box<dyn Stage>],
    defaults: |_| {},
};
