//! `nvlsm-fragmented`: NVLSM-F, the fragmented (PebblesDB-style guard) baseline of the NVLSM
//! paper (Zhang & Du, ACM TOS 2021, sections 2.2 and 6.1): NVLSM's front end and C1, then
//! components of guards, each up to `max_floor` runs with no pointers between them; a full
//! guard is merged and pushed down.
//!
//! The same stage and policy as `nvlsm` without cascade pointers (`SetStage::new(.., false)`):
//! guards are NVLSM's set ranges, so the two designs differ only in the pointers and the
//! search, as the paper's comparison intends. A lookup in a guard binary-searches its runs,
//! newest first, after the guard's filters (`nvlsm.filter_scope`). Defaults: those of `nvlsm`.

use super::nvlsm::nvlsm_defaults;
use super::DesignSpec;
use crate::pipeline::{FrontEndKind, Stage};
use crate::stages::SetStage;
use crate::tier::Tier;

pub(super) const SPEC: DesignSpec = DesignSpec {
    name: "nvlsm-fragmented",
    summary: "PM log + DRAM memtable, C1 runs and guards of PM sorted arrays (fragmented \
              compaction), all on PM (NVLSM-F)",
    front_end: FrontEndKind::WalMemtable,
    log_tier: |_| Some(Tier::Pm),
    uses_pm: |_| true,
    data_on_pm: true,
    compaction_log: true,
    needs_auto_compactions: Some(super::nvlsm::NVLSM_NEEDS_COMPACTIONS),
    stages: |o| vec![Box::new(SetStage::new(&o.compaction, &o.nvlsm, false)) as Box<dyn Stage>],
    defaults: nvlsm_defaults,
};
