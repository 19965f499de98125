//! `listdb`: ListDB (Kim et al., "ListDB: Union of Write-Ahead Logs and Persistent SkipLists
//! for Incremental Checkpointing on Persistent Memory", OSDI 2022) as FluidKV describes and
//! compares against it (Lu et al., PVLDB 17(6), 2024, sections 2.2.2 and 6.1): FluidKV's
//! baseline.
//!
//! Front end: index-unified logging into one shared PM log under a DRAM memtable; a flush links
//! the memtable's log entries into an L0 persistent skiplist, and the zipper compaction splices
//! the L0 lists into the single L1 list, all in the PM heap of `crate::plist`, driven by the
//! front end (`front_ends/list_front.rs`: why the lists are not a stage). Its stage is a
//! leveled stage in the pool that stays empty: nothing is ever written out as a run.
//!
//! Defaults: the engine's memtable size, and the zipper once 4 L0 lists wait
//! (`compaction.level0_compaction_trigger`); the stage has two groups, in which the statistics
//! show the L0 lists and L1. `docs/designs/listdb.md` maps the paper
//! to this build and lists the deviations (upper levels in DRAM, no space reclamation).

use super::DesignSpec;
use crate::pipeline::{FrontEndKind, Stage};
use crate::stages::LeveledStage;
use crate::tier::Tier;
use crate::version::RunKind;

/// Why `listdb` needs automatic compactions.
const LISTDB_NEEDS_COMPACTIONS: &str =
    "every flush publishes an L0 list in one of the heap's 32 slots, and only the zipper \
     compaction frees them: with no automatic compaction flushes would stop for good";
pub(super) const SPEC: DesignSpec = DesignSpec {
    name: "listdb",
    summary: "one shared PM log whose entries become persistent skiplist nodes (index-unified \
              logging), L0 lists spliced into one L1 list by zipper compaction (ListDB, \
              FluidKV's baseline)",
    front_end: FrontEndKind::Lists,
    log_tier: |_| Some(Tier::Pm),
    uses_pm: |_| true,
    data_on_pm: true,
    compaction_log: false,
    needs_auto_compactions: Some(LISTDB_NEEDS_COMPACTIONS),
    stages: |o| {
        vec![Box::new(LeveledStage::with_runs(
            &o.compaction,
            Tier::Pm,
            RunKind::Sst,
        )) as Box<dyn Stage>]
    },
    defaults: |o| {
        // Two groups, for the two levels of lists the statistics show (L0 lists, L1).
        if o.compaction.num_levels == crate::options::Options::default().compaction.num_levels {
            o.compaction.num_levels = 2;
        }
    },
};
