//! SLM-DB's single level (Kaiyrakhmet et al., FAST 2019): one group of SSTables on SSD whose
//! key ranges overlap, found through the global index in PM ([`crate::gindex`]) rather than by
//! searching the tables: a get is one tree lookup and one data-block read, with no Bloom filter
//! and no index block on the path; an iterator walks the tree. Compaction is selective
//! ([`crate::compaction::SelectivePolicy`]); writes are never slowed for it.

use crate::compaction::{CompactionPolicy, SelectivePolicy};
use crate::format::{parse_internal_key, ValueType};
use crate::gindex::iter::IndexIterator;
use crate::gindex::{BlockReader, GlobalIndex};
use crate::iterator::InternalIterator;
use crate::options::Options;
use crate::pipeline::{Entry, ReadContext, RunTarget, Stage, WritePressure};
use crate::tier::Tier;
use crate::version::{GroupOrder, RunKind, StageLayout, StageVersion};
use crate::{Error, Result};
use std::sync::Arc;

/// The single level and its global index.
pub(crate) struct SingleLevelStage {
    index: Arc<GlobalIndex>,
    policy: SelectivePolicy,
}

impl SingleLevelStage {
    pub(crate) fn new(options: &Options) -> Self {
        let index = Arc::new(GlobalIndex::new(&options.slmdb));
        SingleLevelStage {
            policy: SelectivePolicy::new(Arc::clone(&index), options.compaction.target_file_size),
            index,
        }
    }
}

impl Stage for SingleLevelStage {
    fn layout(&self) -> StageLayout {
        StageLayout {
            name: "single level",
            groups: vec![GroupOrder::Overlapping],
        }
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
        _state: &StageVersion,
        user_key: &[u8],
        lookup: &[u8],
    ) -> Result<Option<Entry>> {
        let seq = parse_internal_key(lookup)
            .ok_or_else(|| Error::InvalidArgument("malformed lookup key".into()))?
            .sequence;
        let reader = BlockReader {
            tables: cx.tables,
            part: cx.part,
            purpose: cx.purpose,
            fill_cache: cx.fill_cache,
        };
        let found = self.index.get(&reader, user_key, seq, cx.pinned)?;
        Ok(found.map(|(_, v)| (ValueType::Value, v)))
    }

    fn iterators(
        &self,
        cx: &ReadContext<'_>,
        _state: &StageVersion,
        out: &mut Vec<Box<dyn InternalIterator>>,
    ) -> Result<()> {
        out.push(Box::new(IndexIterator::new(
            Arc::clone(&self.index),
            Arc::clone(cx.tables),
            cx.part,
            cx.purpose,
            cx.fill_cache,
            cx.sequence,
            cx.pinned,
        )));
        Ok(())
    }

    /// Selective compaction keeps what the index points at, whatever lies elsewhere: the
    /// executor's tombstone rule does not apply. Conservatively true.
    fn may_hold_from(&self, _state: &StageVersion, _group: usize, _user_key: &[u8]) -> bool {
        true
    }

    fn write_pressure(&self, _state: &StageVersion) -> WritePressure {
        WritePressure::None
    }

    /// True: a global index points at one version of each key.
    fn keeps_versions_for_snapshots_only(&self) -> bool {
        true
    }

    fn add_stats(&self, _state: &StageVersion, stats: &mut crate::stats::DbStats) {
        stats.global_index = Some(self.index.stats());
    }

    fn policy(&self) -> &dyn CompactionPolicy {
        &self.policy
    }

    fn index(&self) -> Option<&Arc<GlobalIndex>> {
        Some(&self.index)
    }
}
