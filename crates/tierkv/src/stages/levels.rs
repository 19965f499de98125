//! The leveled stage: SSTables in levels, L0's runs overlapping (newest last), L1 and deeper
//! sorted and disjoint, each level on its tier (L0 on the flush tier, the rest on SSD).
//!
//! A lookup reads L0's runs that cover the key, newest first, then at most one run per deeper
//! level; inside a table the Bloom filter is checked first. Iterators: one per L0 run, one
//! concatenating iterator per deeper level (tables opened as the iteration reaches them).
//! Write pressure: `level0_slowdown_trigger` and `level0_stop_trigger` L0 runs.

use crate::compaction::{CompactionPolicy, LeveledPolicy};
use crate::db::TableCache;
use crate::format::{compare_internal, parse_internal_key};
use crate::iterator::InternalIterator;
use crate::options::CompactionOptions;
use crate::pipeline::{Entry, ReadContext, RunTarget, Stage, WritePressure};
use crate::sst::TableIterator;
use crate::stats::{IoPurpose, Part};
use crate::tier::Tier;
use crate::version::{FileMetaData, GroupOrder, RunKind, StageLayout, StageVersion};
use crate::{Error, Result};
use std::sync::Arc;

/// The leveled stage with its options.
pub(crate) struct LeveledStage {
    options: CompactionOptions,
    /// Where L0 runs (flushes) are written.
    l0_tier: Tier,
    policy: LeveledPolicy,
}

impl LeveledStage {
    /// Levels shaped by `options`, L0 on `l0_tier`.
    pub fn new(options: &CompactionOptions, l0_tier: Tier) -> Self {
        LeveledStage {
            options: options.clone(),
            l0_tier,
            policy: LeveledPolicy::new(options),
        }
    }
}

impl Stage for LeveledStage {
    fn layout(&self) -> StageLayout {
        let mut groups = vec![GroupOrder::Disjoint; self.options.num_levels];
        groups[0] = GroupOrder::Overlapping;
        StageLayout {
            name: "levels",
            groups,
        }
    }

    fn ingest_target(&self) -> RunTarget {
        RunTarget {
            group: 0,
            tier: self.l0_tier,
            kind: RunKind::Sst,
        }
    }

    fn get(
        &self,
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
        for f in level0.chain(deeper) {
            let table = cx.tables.get(f, cx.part)?;
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

    fn iterators(
        &self,
        cx: &ReadContext<'_>,
        state: &StageVersion,
        out: &mut Vec<Box<dyn InternalIterator>>,
    ) -> Result<()> {
        for f in state.groups[0].iter().rev() {
            let t = cx.tables.get(f, cx.part)?;
            out.push(Box::new(t.iter(cx.purpose, cx.fill_cache)));
        }
        for runs in state.groups.iter().skip(1) {
            if !runs.is_empty() {
                out.push(Box::new(LevelIterator::new(cx, runs.clone())));
            }
        }
        Ok(())
    }

    fn may_hold_from(&self, state: &StageVersion, group: usize, user_key: &[u8]) -> bool {
        (group..state.groups.len()).any(|g| {
            if g == 0 {
                state.groups[0]
                    .iter()
                    .any(|f| f.overlaps(Some(user_key), Some(user_key)))
            } else {
                state.run_for_key(g, user_key).is_some()
            }
        })
    }

    fn write_pressure(&self, state: &StageVersion) -> WritePressure {
        let l0 = state.groups[0].len();
        if l0 >= self.options.level0_stop_trigger {
            WritePressure::Stop
        } else if l0 >= self.options.level0_slowdown_trigger {
            WritePressure::Slowdown
        } else {
            WritePressure::None
        }
    }

    fn policy(&self) -> &dyn CompactionPolicy {
        &self.policy
    }
}

/// Concatenates the files of one level >= 1 (sorted, non-overlapping), opening each table only
/// when the iteration reaches it.
pub(crate) struct LevelIterator {
    tables: Arc<TableCache>,
    part: Part,
    files: Vec<Arc<FileMetaData>>,
    purpose: IoPurpose,
    fill_cache: bool,
    index: usize,
    current: Option<TableIterator>,
    error: Option<Error>,
}

impl LevelIterator {
    /// Iterates `files` (one level's, in order).
    pub(crate) fn new(cx: &ReadContext<'_>, files: Vec<Arc<FileMetaData>>) -> Self {
        let index = files.len();
        LevelIterator {
            tables: Arc::clone(cx.tables),
            part: cx.part,
            purpose: cx.purpose,
            fill_cache: cx.fill_cache,
            files,
            index,
            current: None,
            error: None,
        }
    }

    fn open(&mut self, index: usize) {
        self.index = index;
        self.current = None;
        if let Some(f) = self.files.get(index) {
            match self.tables.get(f, self.part) {
                Ok(t) => self.current = Some(t.iter(self.purpose, self.fill_cache)),
                Err(e) => self.error = Some(e),
            }
        }
    }

    /// Moves past exhausted files.
    fn skip_empty_files(&mut self) {
        while self.error.is_none() {
            match &self.current {
                Some(it) if it.valid() || it.status().is_err() => return,
                None => return,
                Some(_) => {
                    self.open(self.index + 1);
                    if let Some(it) = &mut self.current {
                        it.seek_to_first();
                    }
                }
            }
        }
    }
}

impl InternalIterator for LevelIterator {
    fn valid(&self) -> bool {
        self.error.is_none() && self.current.as_ref().is_some_and(|c| c.valid())
    }
    fn seek_to_first(&mut self) {
        self.error = None;
        self.open(0);
        if let Some(it) = &mut self.current {
            it.seek_to_first();
        }
        self.skip_empty_files();
    }
    fn seek(&mut self, target: &[u8]) {
        self.error = None;
        let i = self
            .files
            .partition_point(|f| compare_internal(&f.largest, target).is_lt());
        self.open(i);
        if let Some(it) = &mut self.current {
            it.seek(target);
        }
        self.skip_empty_files();
    }
    fn next(&mut self) {
        self.current.as_mut().expect("valid").next();
        self.skip_empty_files();
    }
    fn key(&self) -> &[u8] {
        self.current.as_ref().expect("valid").key()
    }
    fn value(&self) -> &[u8] {
        self.current.as_ref().expect("valid").value()
    }
    fn status(&self) -> Result<()> {
        if let Some(e) = &self.error {
            return Err(e.duplicate());
        }
        self.current.as_ref().map_or(Ok(()), |c| c.status())
    }
}
