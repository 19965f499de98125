//! NVLSM's components (Zhang & Du, "NVLSM: A Persistent Memory Key-Value Store Using Log-Structured
//! Merge Tree with Accumulative Compaction", ACM TOS 2021): C1, overlapping flushed runs, then
//! C2..Cn, each a group of sets with disjoint key ranges, all PM sorted arrays in the PM pool. A
//! set is a Skip-Array Tree (`nvlsm`: floors with cascade pointers, searched by the cascade) or a
//! guard (`nvlsm-fragmented`: runs without pointers, one binary search per run).
//!
//! * **Lookup** (section 4.3, "Get"): C1's runs whose range covers the key, newest first; then
//!   in each component the one set whose range covers it: if the Bloom filter of any floor
//!   may hold the key (the set's filter, Fig. 7) the set is searched, by the cascading search
//!   of Algorithm 1 (`parray::cascade_get`) or, for a guard, run by run, newest first. With
//!   [`FilterScope::PerRun`] a guard searches only the runs whose own filter may hold the key.
//! * **Iterators** (section 4.3, "Seek and Next"): one per C1 run; one per component,
//!   concatenating its sets in key order; a set's iterator merges its floors' cursors, and a
//!   seek positions every floor in one cascade descent (`parray::cascade_seek`: floors the
//!   descent skips hold only smaller keys) or, for a guard, by a binary search per run.
//! * **Write pressure**: `level0_slowdown_trigger` and `level0_stop_trigger` C1 runs.
//! * **Compaction**: [`AccumulativePolicy`] (accumulative for Skip-Array Trees, fragmented for
//!   guards).

use super::concat::{before, ConcatIterator, Segments};
use crate::compaction::{AccumulativePolicy, CompactionPolicy};
use crate::format::{compare_internal, make_internal_key, ValueType};
use crate::iterator::InternalIterator;
use crate::options::{CompactionOptions, FilterScope, NvlsmOptions};
use crate::parray::{cascade_get, cascade_seek, ArrayIterator, PmArray};
use crate::pipeline::{
    CheckContext, CheckReport, Entry, ReadContext, RunTarget, Stage, WritePressure,
};
use crate::runs::TableCache;
use crate::stats::{IoPurpose, Part};
use crate::tier::Tier;
use crate::version::{GroupOrder, RunKind, RunSet, StageLayout, StageVersion};
use crate::{Error, Result};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// The components of `nvlsm` or `nvlsm-fragmented`.
pub(crate) struct SetStage {
    options: CompactionOptions,
    /// Skip-Array Trees (cascade pointers) or guards.
    cascade: bool,
    filter_scope: FilterScope,
    policy: AccumulativePolicy,
}

impl SetStage {
    /// `options.num_levels` components on PM; sets are Skip-Array Trees if `cascade`, guards
    /// otherwise.
    pub fn new(options: &CompactionOptions, nvlsm: &NvlsmOptions, cascade: bool) -> Self {
        SetStage {
            options: options.clone(),
            cascade,
            filter_scope: nvlsm.filter_scope,
            policy: AccumulativePolicy::new(
                options,
                nvlsm.max_floor,
                cascade,
                Tier::Pm,
                RunKind::PmArray,
            ),
        }
    }

    /// The newest version of `user_key` in `set` visible at `lookup`.
    fn get_in_set(
        &self,
        cx: &ReadContext<'_>,
        set: &RunSet,
        user_key: &[u8],
        lookup: &[u8],
    ) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let floors = open_floors(cx, set)?;
        let maybe: Vec<bool> = floors.iter().map(|a| a.may_contain(user_key)).collect();
        if !maybe.iter().any(|&m| m) {
            cx.tables.counters().bloom_useful.fetch_add(1, Relaxed);
            return Ok(None);
        }
        if self.cascade {
            return cascade_get(&floors, user_key, lookup, cx.purpose);
        }
        for (a, &m) in floors.iter().zip(&maybe).rev() {
            if self.filter_scope == FilterScope::PerRun && !m {
                continue;
            }
            let i = a.lower_bound(lookup, 0, a.len(), cx.purpose)?;
            if i < a.len() {
                let (ikey, value) = a.read(i, cx.purpose)?;
                if crate::format::user_key(&ikey) == user_key {
                    return Ok(Some((ikey, value)));
                }
            }
        }
        Ok(None)
    }
}

fn open_floors(cx: &ReadContext<'_>, set: &RunSet) -> Result<Vec<Arc<PmArray>>> {
    set.floors
        .iter()
        .map(|f| cx.tables.array(f, cx.part))
        .collect()
}

impl Stage for SetStage {
    /// The next pointers of every Skip-Array Tree, against the floors below them.
    fn check(&self, cx: &CheckContext<'_>, stage: usize, report: &mut CheckReport) -> Result<()> {
        let version = cx.versions.current();
        for sets in &version.stage(stage).sets {
            for set in sets.iter() {
                let floors = set
                    .floors
                    .iter()
                    .map(|f| {
                        cx.tables
                            .array_for(f, Part::Stage(stage), IoPurpose::Recovery)
                    })
                    .collect::<Result<Vec<_>>>()?;
                report.pointers_checked +=
                    crate::parray::verify_pointers(&floors, IoPurpose::Recovery)?;
            }
        }
        Ok(())
    }

    fn layout(&self) -> StageLayout {
        let mut groups = vec![GroupOrder::Sets; self.options.num_levels];
        groups[0] = GroupOrder::Overlapping;
        StageLayout {
            name: "components",
            groups,
        }
    }

    fn ingest_target(&self) -> RunTarget {
        RunTarget {
            group: 0,
            tier: Tier::Pm,
            kind: RunKind::PmArray,
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
        let mut found = None;
        for f in state.groups[0].iter().rev() {
            if f.smallest_user_key() <= user_key && user_key <= f.largest_user_key() {
                found = cx.tables.open(f, cx.part)?.get(lookup, cx.purpose, false)?;
                if found.is_some() {
                    break;
                }
            }
        }
        if found.is_none() {
            for g in 1..state.groups.len() {
                if let Some(set) = state.set_for_key(g, user_key) {
                    found = self.get_in_set(cx, set, user_key, lookup)?;
                    if found.is_some() {
                        break;
                    }
                }
            }
        }
        super::found_entry("components", user_key, found)
    }

    fn iterators(
        &self,
        cx: &ReadContext<'_>,
        state: &StageVersion,
        out: &mut Vec<Box<dyn InternalIterator>>,
    ) -> Result<()> {
        for f in state.groups[0].iter().rev() {
            out.push(cx.tables.open(f, cx.part)?.iter(cx.purpose, false));
        }
        for sets in state.sets.iter().skip(1) {
            if !sets.is_empty() {
                out.push(Box::new(ConcatIterator::new(GroupSets {
                    tables: Arc::clone(cx.tables),
                    part: cx.part,
                    purpose: cx.purpose,
                    cascade: self.cascade,
                    sets: Arc::clone(sets),
                })));
            }
        }
        Ok(())
    }

    fn may_hold_from(&self, state: &StageVersion, group: usize, user_key: &[u8]) -> bool {
        super::may_hold_from(state, group, user_key, |g| {
            state.set_for_key(g, user_key).is_some()
        })
    }

    fn write_pressure(&self, state: &StageVersion) -> WritePressure {
        super::first_group_pressure(&self.options, state.groups[0].len())
    }

    fn policy(&self) -> &dyn CompactionPolicy {
        &self.policy
    }
}

/// The sets of one component as segments of a [`ConcatIterator`].
struct GroupSets {
    tables: Arc<TableCache>,
    part: Part,
    purpose: IoPurpose,
    cascade: bool,
    sets: Arc<[Arc<RunSet>]>,
}

impl Segments for GroupSets {
    fn len(&self) -> usize {
        self.sets.len()
    }
    fn ends_before(&self, i: usize, target: &[u8]) -> bool {
        // Every entry of the set sorts at or before (hi, sequence 0, lowest type).
        let hi = make_internal_key(&self.sets[i].hi, 0, ValueType::Deletion);
        before(&hi, target)
    }
    fn open(&self, i: usize) -> Result<Box<dyn InternalIterator>> {
        let floors = self.sets[i]
            .floors
            .iter()
            .map(|f| self.tables.array(f, self.part))
            .collect::<Result<Vec<_>>>()?;
        Ok(Box::new(SetIterator::new(
            floors,
            self.purpose,
            self.cascade,
        )))
    }
}

/// Merges the floors of one set: one cursor per floor, the smallest current key first.
pub(crate) struct SetIterator {
    floors: Vec<Arc<PmArray>>,
    cursors: Vec<ArrayIterator>,
    purpose: IoPurpose,
    cascade: bool,
    /// The floor whose cursor holds the smallest key (`None`: exhausted).
    current: Option<usize>,
    error: Option<Error>,
}

impl SetIterator {
    /// An unpositioned iterator over `floors` (bottom first).
    pub(crate) fn new(floors: Vec<Arc<PmArray>>, purpose: IoPurpose, cascade: bool) -> Self {
        let cursors = floors.iter().map(|a| a.iter(purpose)).collect();
        SetIterator {
            floors,
            cursors,
            purpose,
            cascade,
            current: None,
            error: None,
        }
    }

    /// Points `current` at the cursor with the smallest key (internal keys are unique).
    fn pick(&mut self) {
        self.current = None;
        for (i, c) in self.cursors.iter().enumerate() {
            if let Err(e) = c.status() {
                self.error = Some(e);
                return;
            }
            if !c.valid() {
                continue;
            }
            let smaller = match self.current {
                None => true,
                Some(j) => compare_internal(c.key(), self.cursors[j].key()).is_lt(),
            };
            if smaller {
                self.current = Some(i);
            }
        }
    }
}

impl InternalIterator for SetIterator {
    fn valid(&self) -> bool {
        self.error.is_none() && self.current.is_some()
    }
    fn seek_to_first(&mut self) {
        self.error = None;
        for c in &mut self.cursors {
            c.seek_to_first();
        }
        self.pick();
    }
    fn seek(&mut self, target: &[u8]) {
        self.error = None;
        if self.cascade {
            match cascade_seek(&self.floors, target, self.purpose) {
                Ok(positions) => {
                    for (c, (p, kv)) in self.cursors.iter_mut().zip(positions) {
                        c.seek_to_index(p, kv);
                    }
                }
                Err(e) => {
                    self.error = Some(e);
                    self.current = None;
                    return;
                }
            }
        } else {
            for c in &mut self.cursors {
                c.seek(target);
            }
        }
        self.pick();
    }
    fn next(&mut self) {
        let i = self.current.expect("valid");
        self.cursors[i].next();
        self.pick();
    }
    fn key(&self) -> &[u8] {
        self.cursors[self.current.expect("valid")].key()
    }
    fn value(&self) -> &[u8] {
        self.cursors[self.current.expect("valid")].value()
    }
    fn status(&self) -> Result<()> {
        match &self.error {
            Some(e) => Err(e.duplicate()),
            None => Ok(()),
        }
    }
}
