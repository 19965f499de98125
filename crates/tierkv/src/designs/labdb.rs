//! `labdb`: LAB-DB (Kim et al., "An LSM Tree Augmented with B+ Tree on Nonvolatile Memory",
//! ACM TOS 2024): an L0 of two persistent B+ trees whose leaves live in PM and whose
//! inner nodes live in DRAM, mapping each key to its value's address in a value array on SSD
//! (key-value separation), with in-place updates of existing keys and chunked compaction of the
//! immutable tree into leveled SSTables on SSD.
//!
//! Front end: the memtable front end with LAB-DB's log (`front_ends/wal_memtable/lab_log.rs`): a write is
//! durable in a PM WAL buffer, which drains into a key array and a value array on SSD; a flush
//! inserts the values' addresses into the mutable tree. `labdb.split_log = false` keeps the
//! engine's WAL instead (the paper's B+-tree-only variant; with `pm.wal_on_pm`, LAB-DB-WA). The
//! hot-key buffer is not built (`docs/designs/labdb.md`).
//!
//! Defaults: the paper's (section 4.1): 256 MiB leaf region, immutable at 75% of it, 64 MiB
//! chunks, 64 MiB memtables, L1 256 MiB, ratio 10 (the engine's leveled defaults).

use super::DesignSpec;
use crate::pipeline::{FrontEndKind, Stage};
use crate::stages::LabStage;
use crate::tier::Tier;

pub(super) const SPEC: DesignSpec = DesignSpec {
    name: "labdb",
    summary: "PM WAL buffer draining into an SSD key/value log + DRAM memtable, L0 of two \
              persistent B+ trees (leaves in PM, inner nodes in \
              DRAM) pointing at values on SSD, in-place updates, chunked compaction into \
              leveled SSTables on SSD (LAB-DB)",
    front_end: FrontEndKind::LabLog,
    log_tier: |o| Some(if o.pm.wal_on_pm { Tier::Pm } else { Tier::Ssd }),
    uses_pm: |_| true,
    data_on_pm: false,
    compaction_log: false,
    needs_auto_compactions: Some(
        "its L0 trees hold at most labdb.leaf_region_bytes of PM leaves and only compaction \
         drains them: with no automatic compaction, writes would stop for good once they fill",
    ),
    stages: |o| vec![Box::new(LabStage::new(o)) as Box<dyn Stage>],
    defaults: |_| {},
};
