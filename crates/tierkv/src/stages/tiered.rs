//! The size-tiered stage (`tiered`): sorted runs laid out as levels (L0's tables, then one
//! sorted run per level), every run an SSTable on SSD, compacted by the size-tiered policy
//! (`compaction/universal.rs`, RocksDB's universal compaction).
//!
//! Reads are the leveled stage's (the layout is the same: L0's tables newest first, then at
//! most one table per deeper level). Write pressure counts sorted runs, as RocksDB's universal
//! compaction does, against `level0_slowdown_trigger` and `level0_stop_trigger`.

use super::levels::{leveled_layout, levels_get, levels_iterators, levels_may_hold_from};
use crate::compaction::{sorted_run_count, CompactionPolicy, UniversalPolicy};
use crate::iterator::InternalIterator;
use crate::options::Options;
use crate::pipeline::{Entry, ReadContext, RunTarget, Stage, WritePressure};
use crate::tier::Tier;
use crate::version::{RunKind, StageLayout, StageVersion};
use crate::Result;

/// The size-tiered stage with its options.
pub(crate) struct TieredStage {
    options: crate::options::CompactionOptions,
    policy: UniversalPolicy,
}

impl TieredStage {
    /// Sorted runs in `compaction.num_levels` levels (at least 2: a merge never ends in L0)
    /// under `options.universal`.
    pub fn new(options: &Options) -> Self {
        let c = &options.compaction;
        TieredStage {
            options: c.clone(),
            policy: UniversalPolicy::new(
                &options.universal,
                c.level0_compaction_trigger,
                c.target_file_size,
            ),
        }
    }
}

impl Stage for TieredStage {
    fn layout(&self) -> StageLayout {
        leveled_layout("tiers", self.options.num_levels.max(2))
    }

    fn ingest_target(&self) -> RunTarget {
        RunTarget {
            group: 0,
            tier: Tier::Ssd,
            kind: RunKind::Sst,
            row: false,
        }
    }

    fn get(
        &self,
        cx: &ReadContext<'_>,
        state: &StageVersion,
        user_key: &[u8],
        lookup: &[u8],
    ) -> Result<Option<Entry>> {
        levels_get(cx, state, user_key, lookup)
    }

    fn iterators(
        &self,
        cx: &ReadContext<'_>,
        state: &StageVersion,
        out: &mut Vec<Box<dyn InternalIterator>>,
    ) -> Result<()> {
        levels_iterators(cx, state, out)
    }

    fn may_hold_from(&self, state: &StageVersion, group: usize, user_key: &[u8]) -> bool {
        levels_may_hold_from(state, group, user_key)
    }

    fn write_pressure(&self, state: &StageVersion) -> WritePressure {
        super::first_group_pressure(&self.options, sorted_run_count(state))
    }

    fn policy(&self) -> &dyn CompactionPolicy {
        &self.policy
    }
}
