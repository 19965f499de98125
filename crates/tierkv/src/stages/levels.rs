//! The leveled stage: runs in levels, L0's runs overlapping (newest last), L1 and deeper
//! sorted and disjoint, each level on its tier: SSTables with L0 on the flush tier and the
//! rest on SSD (`leveled`, `leveled-pm`), or PM sorted arrays all on PM (`nvlsm-leveled`).
//!
//! A lookup reads L0's runs that cover the key, newest first, then at most one run per deeper
//! level; inside a table the Bloom filter is checked first. Iterators: one per L0 run, one
//! concatenating iterator per deeper level (tables opened as the iteration reaches them).
//! Write pressure: `level0_slowdown_trigger` and `level0_stop_trigger` L0 runs.

use super::concat::{before, ConcatIterator, Segments};
use crate::compaction::{CompactionPolicy, LeveledPolicy};
use crate::format::parse_internal_key;
use crate::iterator::InternalIterator;
use crate::options::CompactionOptions;
use crate::pipeline::{BackgroundTask, Entry, ReadContext, RunTarget, Stage, WritePressure};
use crate::runs::TableCache;
use crate::stats::{IoPurpose, Part};
use crate::tier::Tier;
use crate::version::{FileMetaData, GroupOrder, RunKind, StageLayout, StageVersion};
use crate::{Error, Result};
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

/// The leveled stage with its options.
pub(crate) struct LeveledStage {
    options: CompactionOptions,
    /// Where L0 runs (flushes) are written.
    l0_tier: Tier,
    /// What every run is made of.
    kind: RunKind,
    policy: LeveledPolicy,
    /// L0's compaction trigger, set by the load detector (`compaction.load_aware`).
    load_trigger: Option<Arc<AtomicUsize>>,
}

impl LeveledStage {
    /// SSTable levels shaped by `options`, L0 on `l0_tier`, L1 and deeper on SSD.
    pub fn new(options: &CompactionOptions, l0_tier: Tier) -> Self {
        LeveledStage::build(options, l0_tier, RunKind::Sst, LeveledPolicy::new(options))
    }

    /// Levels of runs of `kind`, every level on `tier` (NVLSM-L: PM sorted arrays on PM).
    pub fn with_runs(options: &CompactionOptions, tier: Tier, kind: RunKind) -> Self {
        LeveledStage::build(
            options,
            tier,
            kind,
            LeveledPolicy::with_output(options, tier, kind),
        )
    }

    fn build(
        options: &CompactionOptions,
        l0_tier: Tier,
        kind: RunKind,
        mut policy: LeveledPolicy,
    ) -> Self {
        let load_trigger = options
            .load_aware
            .then(|| Arc::new(AtomicUsize::new(options.level0_compaction_trigger)));
        if let Some(t) = &load_trigger {
            policy = policy.with_trigger(Arc::clone(t));
        }
        LeveledStage {
            options: options.clone(),
            l0_tier,
            kind,
            policy,
            load_trigger,
        }
    }
}

impl Stage for LeveledStage {
    fn layout(&self) -> StageLayout {
        leveled_layout("levels", self.options.num_levels)
    }

    fn ingest_target(&self) -> RunTarget {
        RunTarget {
            group: 0,
            tier: self.l0_tier,
            kind: self.kind,
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
        super::first_group_pressure(&self.options, state.groups[0].len())
    }

    fn policy(&self) -> &dyn CompactionPolicy {
        &self.policy
    }

    fn background_tasks(&self) -> Vec<BackgroundTask> {
        self.load_trigger
            .iter()
            .map(|t| super::load::load_detector(&self.options, Arc::clone(t)))
            .collect()
    }
}

/// A lookup in levels laid out by [`leveled_layout`]: L0's runs that cover the key, newest
/// (highest number) first, then at most one run per deeper level.
pub(crate) fn levels_get(
    cx: &ReadContext<'_>,
    state: &StageVersion,
    user_key: &[u8],
    lookup: &[u8],
) -> Result<Option<Entry>> {
    let level0 = state.groups[0]
        .iter()
        .rev()
        .filter(|f| f.smallest_user_key() <= user_key && user_key <= f.largest_user_key());
    let deeper = (1..state.groups.len()).filter_map(|l| state.run_for_key(l, user_key));
    get_in_runs(cx, level0.chain(deeper), user_key, lookup)
}

/// The iterators of levels laid out by [`leveled_layout`]: one per L0 run, newest first, one
/// concatenating iterator per deeper level.
pub(crate) fn levels_iterators(
    cx: &ReadContext<'_>,
    state: &StageVersion,
    out: &mut Vec<Box<dyn InternalIterator>>,
) -> Result<()> {
    for f in state.groups[0].iter().rev() {
        let t = cx.tables.open(f, cx.part)?;
        out.push(t.iter(cx.purpose, cx.fill_cache));
    }
    push_deeper_level_iterators(cx, state, out);
    Ok(())
}

/// True if level `group` or a deeper one of levels laid out by [`leveled_layout`] may hold
/// `user_key`.
pub(crate) fn levels_may_hold_from(state: &StageVersion, group: usize, user_key: &[u8]) -> bool {
    super::may_hold_from(state, group, user_key, |g| {
        state.run_for_key(g, user_key).is_some()
    })
}

/// The layout of `levels` levels named `name`: L0 overlapping, L1 and deeper disjoint.
pub(crate) fn leveled_layout(name: &'static str, levels: usize) -> StageLayout {
    let mut groups = vec![GroupOrder::Disjoint; levels];
    groups[0] = GroupOrder::Overlapping;
    StageLayout { name, groups }
}

/// The newest version of `user_key` in the first of `runs` (searched in order) that holds one:
/// `lookup` is its internal lookup key.
pub(crate) fn get_in_runs<'a>(
    cx: &ReadContext<'_>,
    runs: impl Iterator<Item = &'a Arc<FileMetaData>>,
    user_key: &[u8],
    lookup: &[u8],
) -> Result<Option<Entry>> {
    for f in runs {
        let table = cx.tables.open(f, cx.part)?;
        if let Some((ikey, value)) = table.get(lookup, cx.purpose, cx.fill_cache)? {
            let p = parse_internal_key(&ikey).ok_or_else(|| {
                Error::corruption(table.path().display().to_string(), "malformed internal key")
            })?;
            debug_assert_eq!(p.user_key, user_key);
            return Ok(Some((p.value_type, value)));
        }
    }
    Ok(None)
}

/// One concatenating iterator per non-empty level >= 1 of `state`, into `out`.
pub(crate) fn push_deeper_level_iterators(
    cx: &ReadContext<'_>,
    state: &StageVersion,
    out: &mut Vec<Box<dyn InternalIterator>>,
) {
    for runs in state.groups.iter().skip(1) {
        if !runs.is_empty() {
            out.push(Box::new(level_iterator(cx, Arc::clone(runs))));
        }
    }
}

/// The runs of one level >= 1 (sorted, disjoint) as segments of a [`ConcatIterator`].
pub(crate) struct LevelRuns {
    tables: Arc<TableCache>,
    part: Part,
    purpose: IoPurpose,
    fill_cache: bool,
    files: Arc<Vec<Arc<FileMetaData>>>,
}

impl Segments for LevelRuns {
    fn len(&self) -> usize {
        self.files.len()
    }
    fn ends_before(&self, i: usize, target: &[u8]) -> bool {
        before(&self.files[i].largest, target)
    }
    fn open(&self, i: usize) -> Result<Box<dyn InternalIterator>> {
        let run = self.tables.open(&self.files[i], self.part)?;
        Ok(run.iter(self.purpose, self.fill_cache))
    }
}

/// Concatenates the files of one level >= 1, opening each run only when the iteration
/// reaches it.
pub(crate) type LevelIterator = ConcatIterator<LevelRuns>;

/// An iterator over `files` (one level's, in order).
pub(crate) fn level_iterator(
    cx: &ReadContext<'_>,
    files: Arc<Vec<Arc<FileMetaData>>>,
) -> LevelIterator {
    ConcatIterator::new(LevelRuns {
        tables: Arc::clone(cx.tables),
        part: cx.part,
        purpose: cx.purpose,
        fill_cache: cx.fill_cache,
        files,
    })
}
