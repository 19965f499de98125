//! `nvlsm-leveled`: NVLSM-L, the leveled baseline of the NVLSM paper (Zhang & Du, ACM TOS
//! 2021, section 6.1): NVLSM's front end and C1, then leveled compaction over PM sorted
//! arrays (plain runs, no cascade pointers), every level in the PM pool.
//!
//! The leveled stage and policy of `leveled` over another run kind and tier
//! (`LeveledStage::with_runs`): C1 is L0, C2.. are L1.., a level's target is C1's capacity
//! times the ratio per level. Defaults: those of `nvlsm` (2 MiB memtable and runs, 10-bit Bloom
//! filters, C1 of 4 runs, 8/12 slowdown/stop), with L1's target = 4 x 2 MiB x 10 = 80 MiB.

use super::nvlsm::nvlsm_defaults;
use super::DesignSpec;
use crate::pipeline::{FrontEndKind, Stage};
use crate::stages::LeveledStage;
use crate::tier::Tier;
use crate::version::RunKind;

pub(super) const SPEC: DesignSpec = DesignSpec {
    name: "nvlsm-leveled",
    summary: "PM log + DRAM memtable, leveled PM sorted arrays, all on PM (NVLSM-L)",
    front_end: FrontEndKind::WalMemtable,
    log_tier: |_| Some(Tier::Pm),
    uses_pm: |_| true,
    data_on_pm: true,
    compaction_log: true,
    needs_auto_compactions: Some(super::nvlsm::NVLSM_NEEDS_COMPACTIONS),
    stages: |o| {
        vec![Box::new(LeveledStage::with_runs(
            &o.compaction,
            Tier::Pm,
            RunKind::PmArray,
        )) as Box<dyn Stage>]
    },
    defaults: nvlsm_defaults,
};
