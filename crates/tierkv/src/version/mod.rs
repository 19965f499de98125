//! Versions: which runs make up each stage of the pipeline, and the manifest that logs every
//! change.
//!
//! A [`Version`] is immutable and holds one [`StageVersion`] per stage of the design; a stage's
//! state is a list of *groups* of runs (the levels of a leveled stage; later the rows of a
//! triangle container, the floors of a skip-array tree, ...). A change (flush, compaction)
//! builds a new version from the current one plus a [`VersionEdit`] whose per-stage parts are
//! applied together, so one manifest record moves runs between stages atomically, and installs
//! it (see [`VersionSet::log_and_apply`]). Readers hold an `Arc<Version>` for as long as they
//! read, which keeps its files alive.
//!
//! Invariants (checked by [`Version::check_invariants`]), per group as the stage's
//! [`StageLayout`] says: an [`GroupOrder::Overlapping`] group (L0) is ordered by file number,
//! older first, and its runs may overlap; a [`GroupOrder::Disjoint`] group (L1 and deeper) is
//! sorted by smallest key and its runs' key ranges do not overlap. Every run's smallest key is
//! at most its largest.

mod current;
mod edit;
mod set;

pub use crate::filename::{
    log_file_name, parse_file_name, run_file_name, value_array_file_name, FileKind, RunKind,
};
pub(crate) use current::set_current;
pub use current::{current_file_name, read_current, Current};
pub use edit::VersionEdit;
pub(crate) use set::pool_path_to_record;
pub use set::{
    new_identity, read_manifest_creation_fields, CreationFields, VersionSet,
    DEFAULT_MANIFEST_ROLL_BYTES,
};

use crate::format::{compare_internal, user_key};
use crate::tier::Tier;
use crate::{Error, Result};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

/// What the manifest records about one run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileMetaData {
    /// The file number (the run's file is `NNNNNN.sst` for an SST run).
    pub number: u64,
    /// Size in bytes.
    pub file_size: u64,
    /// Number of entries.
    pub num_entries: u64,
    /// Smallest internal key.
    pub smallest: Vec<u8>,
    /// Largest internal key.
    pub largest: Vec<u8>,
    /// The tier holding the run.
    pub tier: Tier,
    /// What the run is made of.
    pub kind: RunKind,
    /// In a [`GroupOrder::Sets`] group, the set the run belongs to (a Skip-Array Tree or a
    /// guard; the set's id is the number of its first run); 0 in other groups.
    pub set: u64,
    /// For a row of a row container (TriangleKV's triangle, MatrixKV's matrix): its hints,
    /// the key ranges compaction moved out of it and its size sketch; `None` for other runs.
    pub row: Option<Box<RowInfo>>,
    /// For an SSTable with separated values: each value log its pointers name (by number,
    /// on the run's tier) with the record bytes they name there, by log number; empty
    /// otherwise. A value log is deleted once no run of a live version names it.
    pub value_refs: Vec<(u64, u64)>,
    /// For a run made of part of another run's file (FluidKV's reuse of the logical sorted
    /// tables of a StableStore file that a compaction leaves untouched): that file. The run is
    /// the file's entries whose user keys lie in `[smallest, largest]`; it has no file of its
    /// own. `None` for a run that is its own file.
    pub backing: Option<Backing>,
}

/// The file a run made of part of another run's file reads ([`FileMetaData::backing`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backing {
    /// The file's number (the run it was written as).
    pub number: u64,
    /// The file's size in bytes.
    pub file_size: u64,
}

/// A range of user keys `[start, end)`; `end = None` is unbounded (`start` empty: from the
/// smallest key).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KeyRange {
    /// The first user key in the range.
    pub start: Vec<u8>,
    /// The first user key past the range; `None`: no end.
    pub end: Option<Vec<u8>>,
}

impl KeyRange {
    /// Every user key.
    pub fn all() -> KeyRange {
        KeyRange {
            start: Vec::new(),
            end: None,
        }
    }

    /// True if `key` is in the range.
    pub fn contains(&self, key: &[u8]) -> bool {
        self.start.as_slice() <= key && self.end.as_deref().is_none_or(|e| key < e)
    }

    /// True if the range holds no key.
    pub fn is_empty(&self) -> bool {
        self.end
            .as_deref()
            .is_some_and(|e| e <= self.start.as_slice())
    }
}

impl std::fmt::Display for KeyRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = |k: &[u8]| String::from_utf8_lossy(k).into_owned();
        match &self.end {
            Some(e) => write!(f, "[{:?}, {:?})", text(&self.start), text(e)),
            None => write!(f, "[{:?}, end)", text(&self.start)),
        }
    }
}

/// Adds `range` to `ranges` (sorted, disjoint, none touching another), merging what it
/// touches, and returns the result.
pub fn add_range(ranges: &[KeyRange], range: &KeyRange) -> Vec<KeyRange> {
    if range.is_empty() {
        return ranges.to_vec();
    }
    let mut merged = range.clone();
    let mut out = Vec::with_capacity(ranges.len() + 1);
    for r in ranges {
        let before = r
            .end
            .as_deref()
            .is_some_and(|e| e < merged.start.as_slice());
        let after = merged
            .end
            .as_deref()
            .is_some_and(|e| e < r.start.as_slice());
        if before || after {
            out.push(r.clone());
        } else {
            merged.start = merged.start.min(r.start.clone());
            merged.end = match (&merged.end, &r.end) {
                (Some(a), Some(b)) => Some(a.max(b).clone()),
                _ => None,
            };
        }
    }
    let at = out.partition_point(|r| r.start < merged.start);
    out.insert(at, merged);
    out
}

/// A row's size sketch: `(user key, bytes of the row's entries before it)`, increasing.
pub type Sketch = Vec<(Vec<u8>, u64)>;

/// What a row of a row container carries besides its keys (in the manifest).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RowInfo {
    /// The row its cross-row hints point into (the newest row when it was flushed), 0 = none.
    pub hints_into: u64,
    /// The key ranges compaction has moved out of the row, sorted, disjoint and not touching:
    /// the row's entries there are dead (their data, or newer data, is below the row
    /// container). In a triangle, a range dead in a row is dead in every older row.
    pub dead: Vec<KeyRange>,
    /// Per dead range (in the same order), the row's entries in it: entry indices
    /// `[first, end)` (`first == end` when the range holds none of the row's keys). Empty when
    /// unknown: a row recorded by a manifest of the format before these were kept, none of
    /// whose pages was freed (readers then find the entries by searching the row). The data
    /// pages that lie wholly inside dead entries may be freed; searches and cursors never read
    /// the key or value bytes of a dead entry (`crate::parray::live`).
    pub dead_entries: Vec<(u32, u32)>,
    /// The row's size sketch: `(user key, bytes of the row's entries before the first entry
    /// of that key)` at evenly spaced entries, increasing, the first the row's smallest key
    /// at 0; compaction planning estimates the bytes of a key range from it.
    pub sketch: Vec<(Vec<u8>, u64)>,
}

impl RowInfo {
    /// Adds `range`, whose entries in the row are `entries`, to the dead ranges, merging the
    /// ranges (and entry intervals) it touches. REQUIRES: the entries of every dead range are
    /// known ([`RowInfo::dead_entries`] has one interval per range).
    pub fn add_dead(&mut self, range: &KeyRange, entries: (u32, u32)) {
        debug_assert_eq!(self.dead.len(), self.dead_entries.len());
        if range.is_empty() {
            return;
        }
        let mut merged = (range.clone(), entries);
        let mut out: Vec<(KeyRange, (u32, u32))> = Vec::with_capacity(self.dead.len() + 1);
        for (r, e) in self.dead.iter().zip(&self.dead_entries) {
            let touching = add_range(std::slice::from_ref(r), &merged.0).len() == 1;
            if touching {
                merged.0 = add_range(std::slice::from_ref(r), &merged.0).remove(0);
                merged.1 = (merged.1 .0.min(e.0), merged.1 .1.max(e.1));
            } else {
                out.push((r.clone(), *e));
            }
        }
        let at = out.partition_point(|(r, _)| r.start < merged.0.start);
        out.insert(at, merged);
        (self.dead, self.dead_entries) = out.into_iter().unzip();
    }

    /// True if `key` is in a dead range.
    pub fn is_dead(&self, key: &[u8]) -> bool {
        let i = self.dead.partition_point(|r| r.start.as_slice() <= key);
        i > 0 && self.dead[i - 1].contains(key)
    }

    /// The estimated bytes of entries with user keys in `range`, of a row of `total` entry
    /// bytes: from the sketch point at or after the range's start to the one at or after its
    /// end (so the estimate is off by at most the spacing of the points at either end).
    pub fn bytes_in(&self, range: &KeyRange, total: u64) -> u64 {
        let at = |key: &[u8]| {
            let i = self.sketch.partition_point(|(k, _)| k.as_slice() < key);
            self.sketch.get(i).map_or(total, |p| p.1.min(total))
        };
        let from = at(&range.start);
        let to = range.end.as_deref().map_or(total, at);
        to.saturating_sub(from)
    }

    /// The estimated bytes of the row's live entries, of a row of `total` entry bytes.
    pub fn live_bytes(&self, total: u64) -> u64 {
        let dead: u64 = self.dead.iter().map(|r| self.bytes_in(r, total)).sum();
        total.saturating_sub(dead)
    }
}

/// Builds a row's size sketch from its entries in order, at most [`SketchBuilder::MAX_POINTS`]
/// points at evenly spaced entries (every `2^k`-th entry, `k` growing as the row does).
#[derive(Debug)]
pub struct SketchBuilder {
    every: u64,
    seen: u64,
    bytes: u64,
    points: Vec<(Vec<u8>, u64)>,
}

impl Default for SketchBuilder {
    fn default() -> Self {
        SketchBuilder {
            every: 1,
            seen: 0,
            bytes: 0,
            points: Vec::new(),
        }
    }
}

impl SketchBuilder {
    /// Most points a sketch keeps.
    pub const MAX_POINTS: usize = 64;

    /// Adds the next entry of the row (user key, and its bytes as the row stores it).
    pub fn add(&mut self, user_key: &[u8], bytes: u64) {
        let new_key = self
            .points
            .last()
            .is_none_or(|(k, _)| k.as_slice() != user_key);
        if self.seen.is_multiple_of(self.every) && new_key {
            if self.points.len() == Self::MAX_POINTS {
                // Keep every other point: the spacing doubles.
                let mut i = 0;
                self.points.retain(|_| {
                    i += 1;
                    i % 2 == 1
                });
                self.every *= 2;
            }
            if self.seen.is_multiple_of(self.every) {
                self.points.push((user_key.to_vec(), self.bytes));
            }
        }
        self.seen += 1;
        self.bytes += bytes;
    }

    /// The sketch.
    pub fn finish(self) -> Vec<(Vec<u8>, u64)> {
        self.points
    }
}

impl FileMetaData {
    /// The number of the file holding the run's entries: its own, or its backing file's.
    pub fn file_number(&self) -> u64 {
        self.backing.map_or(self.number, |b| b.number)
    }

    /// The size of the file holding the run's entries.
    pub fn file_bytes(&self) -> u64 {
        self.backing.map_or(self.file_size, |b| b.file_size)
    }

    /// Bytes of the run's own value log (written with it; 0 when it has none).
    pub fn value_log_bytes(&self) -> u64 {
        self.value_refs
            .iter()
            .find(|(n, _)| *n == self.number)
            .map_or(0, |(_, b)| *b)
    }

    /// Bytes the run wrote: its file and its own value log.
    pub fn written_bytes(&self) -> u64 {
        self.file_size + self.value_log_bytes()
    }
    /// Smallest user key.
    pub fn smallest_user_key(&self) -> &[u8] {
        user_key(&self.smallest)
    }
    /// Largest user key.
    pub fn largest_user_key(&self) -> &[u8] {
        user_key(&self.largest)
    }
    /// True if the run's user-key range intersects `[begin, end]` (`None` = unbounded).
    pub fn overlaps(&self, begin: Option<&[u8]>, end: Option<&[u8]>) -> bool {
        !(begin.is_some_and(|b| self.largest_user_key() < b)
            || end.is_some_and(|e| self.smallest_user_key() > e))
    }
}

/// How the runs of one group are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupOrder {
    /// Runs may overlap one another; ordered by file number, older first (L0).
    Overlapping,
    /// Runs are sorted by smallest key and their key ranges are disjoint (L1 and deeper).
    Disjoint,
    /// Runs belong to sets (by [`FileMetaData::set`]): the key ranges of different sets are
    /// disjoint, the runs of one set may overlap and are its floors, older (lower number)
    /// first. NVLSM's Skip-Array Trees and guards.
    Sets,
    /// The rows of a row container (TriangleKV's triangle, MatrixKV's matrix): runs that may
    /// overlap, ordered by file number, older first, each with its [`RowInfo`]; a key range
    /// dead in a row is dead in every older row.
    Rows,
}

/// One set of a [`GroupOrder::Sets`] group: its floors and its key range.
#[derive(Clone, Debug)]
pub struct RunSet {
    /// The set's id ([`FileMetaData::set`] of its runs).
    pub id: u64,
    /// The smallest user key of any floor.
    pub lo: Vec<u8>,
    /// The largest user key of any floor.
    pub hi: Vec<u8>,
    /// The floors, bottom (oldest) first.
    pub floors: Vec<Arc<FileMetaData>>,
}

/// The shape of one stage's state: its name and its groups.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StageLayout {
    /// The stage's name in reports and errors (e.g. `levels`).
    pub name: &'static str,
    /// How each group is kept; its length is the stage's group count, fixed at creation.
    pub groups: Vec<GroupOrder>,
}

/// The roles of LAB-DB's two L0 trees: the numbers of the mutable tree (flushes insert into
/// it) and of the immutable one (being compacted into L1), 0 for none. The trees live in the PM
/// pool, not in the stage's groups; the version records only which tree plays which role, so a
/// switch (mutable becomes immutable, a new tree becomes mutable) commits in one manifest record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TreeRoles {
    /// The tree flushes insert into (0: none yet).
    pub mutable: u64,
    /// The tree being compacted into L1 (0: none).
    pub immutable: u64,
}

/// One stage's runs, per group.
#[derive(Clone, Debug, Default)]
pub struct StageVersion {
    /// Runs per group; see the module invariants. Each group is shared between versions until
    /// an edit changes it, so an edit costs the groups it touches, not every run.
    pub groups: Vec<Arc<Vec<Arc<FileMetaData>>>>,
    /// Per group, its sets sorted by key range ([`GroupOrder::Sets`] groups; empty for others),
    /// derived from `groups` whenever the version changes.
    pub sets: Vec<Arc<[Arc<RunSet>]>>,
    /// The roles of the stage's L0 trees (LAB-DB's stage; `None` for every other stage and
    /// until the first edit that sets them).
    pub trees: Option<TreeRoles>,
}

impl StageVersion {
    /// The stage's state apart from its runs (no groups, no sets): what a stage reads of a
    /// version it does not pin, e.g. a flush plan's (holding runs delays the freeing of a
    /// row's dead pages, which waits until no one else holds the run).
    pub fn without_runs(&self) -> StageVersion {
        StageVersion {
            groups: Vec::new(),
            sets: Vec::new(),
            trees: self.trees,
        }
    }

    /// An empty stage with `groups` groups.
    pub fn new(groups: usize) -> Self {
        StageVersion {
            groups: (0..groups).map(|_| Arc::new(Vec::new())).collect(),
            sets: vec![Arc::from(Vec::new()); groups],
            trees: None,
        }
    }

    /// In a [`GroupOrder::Sets`] group, the only set whose key range may hold `key`.
    pub fn set_for_key(&self, group: usize, key: &[u8]) -> Option<&RunSet> {
        let sets = &self.sets[group];
        let i = sets.partition_point(|s| s.hi.as_slice() < key);
        sets.get(i).map(|s| &**s).filter(|s| s.lo.as_slice() <= key)
    }

    /// Total bytes in `group`.
    pub fn group_bytes(&self, group: usize) -> u64 {
        self.groups[group].iter().map(|f| f.file_size).sum()
    }

    /// Runs of `group` whose user-key range intersects `[begin, end]`.
    pub fn overlapping(
        &self,
        group: usize,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Vec<Arc<FileMetaData>> {
        self.groups[group]
            .iter()
            .filter(|f| f.overlaps(begin, end))
            .cloned()
            .collect()
    }

    /// In a [`GroupOrder::Disjoint`] group, the only run that may hold `user_key`.
    pub fn run_for_key(&self, group: usize, key: &[u8]) -> Option<&Arc<FileMetaData>> {
        let runs = &self.groups[group];
        let i = runs.partition_point(|f| f.largest_user_key() < key);
        runs.get(i).filter(|f| f.smallest_user_key() <= key)
    }

    /// Every run of the stage.
    pub fn runs(&self) -> impl Iterator<Item = &Arc<FileMetaData>> + '_ {
        self.groups.iter().flat_map(|g| g.iter())
    }
}

/// The runs of every stage at one point in time.
#[derive(Clone, Debug)]
pub struct Version {
    /// One state per stage of the design, in pipeline order.
    pub stages: Vec<StageVersion>,
    layouts: Arc<[StageLayout]>,
}

impl Version {
    /// An empty version of stages shaped by `layouts`.
    pub fn new(layouts: Arc<[StageLayout]>) -> Self {
        Version {
            stages: layouts
                .iter()
                .map(|l| StageVersion::new(l.groups.len()))
                .collect(),
            layouts,
        }
    }

    /// The state of stage `i`.
    pub fn stage(&self, i: usize) -> &StageVersion {
        &self.stages[i]
    }

    /// The stages' layouts.
    pub fn layouts(&self) -> &Arc<[StageLayout]> {
        &self.layouts
    }

    /// Checks the module invariants; `Corruption` names the broken one.
    pub fn check_invariants(&self) -> Result<()> {
        for (stage, layout) in self.stages.iter().zip(self.layouts.iter()) {
            for (group, (runs, order)) in stage.groups.iter().zip(&layout.groups).enumerate() {
                check_group(layout.name, group, runs, *order)?;
                if *order == GroupOrder::Sets {
                    check_sets(layout.name, group, &stage.sets[group])?;
                }
            }
        }
        Ok(())
    }

    /// Applies an edit, returning the new version (runs sorted per the invariants).
    pub fn apply(&self, edit: &VersionEdit) -> Result<Version> {
        let mut v = self.clone();
        // The runs the edit deletes that it also adds (in any stage): moved runs.
        let added: HashSet<u64> = edit
            .stages
            .iter()
            .flat_map(|e| e.added.iter().map(|(_, f)| f.number))
            .collect();
        let moved: HashMap<u64, Arc<FileMetaData>> = edit
            .stages
            .iter()
            .flat_map(|e| e.deleted.iter().map(move |&(g, n)| (e.stage, g, n)))
            .filter(|(_, _, n)| added.contains(n))
            .filter_map(|(stage, g, n)| {
                let runs = self.stages.get(stage)?.groups.get(g)?;
                runs.iter()
                    .find(|f| f.number == n)
                    .map(|f| (n, Arc::clone(f)))
            })
            .collect();
        for e in &edit.stages {
            let layout = self.layouts.get(e.stage).ok_or_else(|| {
                Error::corruption(
                    "manifest",
                    format!("edit names stage {} of {}", e.stage, self.layouts.len()),
                )
            })?;
            let state = &mut v.stages[e.stage];
            if let Some(roles) = e.trees {
                state.trees = Some(roles);
            }
            // Only the groups the edit touches are rebuilt (one pass per group for its
            // deletions, one sort): the cost of an edit does not grow with the runs of groups
            // it leaves alone.
            // Per group, the numbers it deletes, sorted (an edit deletes a few runs: a binary
            // search per run of the group is cheaper than hashing it).
            let mut deleted: BTreeMap<usize, Vec<u64>> = BTreeMap::new();
            for &(group, number) in &e.deleted {
                group_mut(state, layout, group)?;
                deleted.entry(group).or_default().push(number);
            }
            for numbers in deleted.values_mut() {
                numbers.sort_unstable();
                if let Some(w) = numbers.windows(2).find(|w| w[0] == w[1]) {
                    return Err(Error::corruption(
                        "manifest",
                        format!("edit deletes run {} of {} twice", w[0], layout.name),
                    ));
                }
            }
            let mut touched: BTreeSet<usize> = deleted.keys().copied().collect();
            // Per group: the sets whose floors change (sets of deleted or added runs).
            let mut changed_sets: BTreeMap<usize, HashSet<u64>> = BTreeMap::new();
            for (group, numbers) in &deleted {
                let runs = group_mut(state, layout, *group)?;
                let before = runs.len();
                let changed = changed_sets.entry(*group).or_default();
                runs.retain(|f| {
                    let gone = numbers.binary_search(&f.number).is_ok();
                    if gone {
                        changed.insert(f.set);
                    }
                    !gone
                });
                if before - runs.len() != numbers.len() {
                    let missing = numbers
                        .iter()
                        .find(|n| {
                            !self.stages[e.stage].groups[*group]
                                .iter()
                                .any(|f| f.number == **n)
                        })
                        .copied()
                        .unwrap_or_default();
                    return Err(Error::corruption(
                        "manifest",
                        format!(
                            "edit deletes run {missing} which is not in {} group {group}",
                            layout.name
                        ),
                    ));
                }
            }
            for (group, f) in &e.added {
                check_range(f)?;
                // A run moved unchanged (a trivial move) keeps its `Arc`, so that the count of
                // its holders stays the count of versions and readers naming the file.
                let run = match moved.get(&f.number) {
                    Some(old) if **old == *f => Arc::clone(old),
                    _ => Arc::new(f.clone()),
                };
                group_mut(state, layout, *group)?.push(run);
                touched.insert(*group);
                changed_sets.entry(*group).or_default().insert(f.set);
            }
            // The invariants of the groups the edit left alone held before it.
            for g in touched {
                let runs = Arc::make_mut(&mut state.groups[g]);
                let order = layout.groups[g];
                match order {
                    GroupOrder::Overlapping | GroupOrder::Rows => runs.sort_by_key(|f| f.number),
                    GroupOrder::Disjoint => {
                        runs.sort_by(|a, b| compare_internal(&a.smallest, &b.smallest))
                    }
                    GroupOrder::Sets => {
                        runs.sort_by_key(|f| (f.set, f.number));
                        let sets = rederive_sets(&state.sets[g], runs, &changed_sets[&g]);
                        state.sets[g] = sets.into();
                    }
                }
                // Each run's range was checked when it was added.
                check_group_order(layout.name, g, &state.groups[g], order)?;
                if order == GroupOrder::Sets {
                    check_sets(layout.name, g, &state.sets[g])?;
                    debug_assert!(
                        same_sets(&state.sets[g], &derive_sets(&state.groups[g])),
                        "{} group {g}: sets derived again differ from all derived",
                        layout.name
                    );
                }
            }
        }
        Ok(v)
    }

    /// Every run number in the version.
    pub fn file_numbers(&self) -> impl Iterator<Item = u64> + '_ {
        self.stages
            .iter()
            .flat_map(|s| s.runs())
            .map(|f| f.file_number())
    }

    /// Every value log a run of the version names (separated values), with the record bytes
    /// named in it.
    pub fn value_log_refs(&self) -> std::collections::HashMap<u64, u64> {
        let mut m = std::collections::HashMap::new();
        for f in self.stages.iter().flat_map(|s| s.runs()) {
            for (n, b) in &f.value_refs {
                *m.entry(*n).or_default() += b;
            }
        }
        m
    }

    /// Every value log a run of the version names, with the tier it is on (its runs').
    pub fn value_logs_on_tiers(&self) -> impl Iterator<Item = (u64, crate::tier::Tier)> + '_ {
        self.stages
            .iter()
            .flat_map(|s| s.runs())
            .flat_map(|f| f.value_refs.iter().map(move |(n, _)| (*n, f.tier)))
    }

    /// Every run with its stage and group.
    pub fn runs(&self) -> impl Iterator<Item = (usize, usize, &Arc<FileMetaData>)> + '_ {
        self.stages.iter().enumerate().flat_map(|(s, st)| {
            st.groups
                .iter()
                .enumerate()
                .flat_map(move |(g, runs)| runs.iter().map(move |f| (s, g, f)))
        })
    }
}

/// The sets of a [`GroupOrder::Sets`] group whose runs are sorted by (set, number), sorted by
/// their smallest keys: `old` (the group's sets before an edit) with the sets whose ids are in
/// `changed` derived again from `runs`. The sets an edit leaves alone are shared with the
/// older version, so an edit costs the sets it changes, not all of them.
fn rederive_sets(
    old: &[Arc<RunSet>],
    runs: &[Arc<FileMetaData>],
    changed: &HashSet<u64>,
) -> Vec<Arc<RunSet>> {
    // Sorted ids: a binary search per set, no hashing of every set.
    let mut ids: Vec<u64> = changed.iter().copied().collect();
    ids.sort_unstable();
    let mut sets: Vec<Arc<RunSet>> = old
        .iter()
        .filter(|s| ids.binary_search(&s.id).is_err())
        .cloned()
        .collect();
    // The kept sets are in order: each derived set goes in at its place (a few key
    // comparisons each, not a sort of every set).
    for &id in &ids {
        let from = runs.partition_point(|f| f.set < id);
        let to = runs.partition_point(|f| f.set <= id);
        for set in derive_sets(&runs[from..to]) {
            let at = sets.partition_point(|s| s.lo <= set.lo);
            sets.insert(at, set);
        }
    }
    sets
}

/// Whether two set lists hold the same sets (ids, ranges and floors), for checks.
fn same_sets(a: &[Arc<RunSet>], b: &[Arc<RunSet>]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.id == y.id
                && x.lo == y.lo
                && x.hi == y.hi
                && x.floors
                    .iter()
                    .map(|f| f.number)
                    .eq(y.floors.iter().map(|f| f.number))
        })
}

/// The sets of a [`GroupOrder::Sets`] group whose runs are sorted by (set, number), sorted by
/// their smallest keys.
fn derive_sets(runs: &[Arc<FileMetaData>]) -> Vec<Arc<RunSet>> {
    let mut sets: Vec<RunSet> = Vec::new();
    for f in runs {
        match sets.last_mut() {
            Some(s) if s.id == f.set => {
                if f.smallest_user_key() < s.lo.as_slice() {
                    s.lo = f.smallest_user_key().to_vec();
                }
                if f.largest_user_key() > s.hi.as_slice() {
                    s.hi = f.largest_user_key().to_vec();
                }
                s.floors.push(Arc::clone(f));
            }
            _ => sets.push(RunSet {
                id: f.set,
                lo: f.smallest_user_key().to_vec(),
                hi: f.largest_user_key().to_vec(),
                floors: vec![Arc::clone(f)],
            }),
        }
    }
    sets.sort_by(|a, b| a.lo.cmp(&b.lo));
    sets.into_iter().map(Arc::new).collect()
}

fn group_mut<'a>(
    state: &'a mut StageVersion,
    layout: &StageLayout,
    group: usize,
) -> Result<&'a mut Vec<Arc<FileMetaData>>> {
    state
        .groups
        .get_mut(group)
        .map(Arc::make_mut)
        .ok_or_else(|| {
            Error::corruption(
                "manifest",
                format!(
                    "edit names {} group {group} beyond its {} groups",
                    layout.name,
                    layout.groups.len()
                ),
            )
        })
}

fn check_group(
    stage: &str,
    group: usize,
    runs: &[Arc<FileMetaData>],
    order: GroupOrder,
) -> Result<()> {
    for f in runs {
        check_range(f)?;
    }
    check_group_order(stage, group, runs, order)
}

/// A run's smallest key is at most its largest.
fn check_range(f: &FileMetaData) -> Result<()> {
    if compare_internal(&f.smallest, &f.largest).is_gt() {
        return Err(Error::corruption(
            "manifest",
            format!("run {} has smallest key > largest key", f.number),
        ));
    }
    if let Some(row) = &f.row {
        let bad = |what: &str| {
            Err(Error::corruption(
                "manifest",
                format!("row {}: {what}", f.number),
            ))
        };
        if row.dead.iter().any(KeyRange::is_empty) {
            return bad("an empty dead range");
        }
        // Sorted, disjoint and not touching: each range ends before the next one starts.
        if row
            .dead
            .windows(2)
            .any(|w| w[0].end.as_ref().is_none_or(|e| *e >= w[1].start))
        {
            return bad("dead ranges out of order or touching");
        }
        let known = &row.dead_entries;
        if !known.is_empty()
            && (known.len() != row.dead.len()
                || known
                    .iter()
                    .any(|&(a, b)| a > b || u64::from(b) > f.num_entries)
                || known.windows(2).any(|w| w[0].1 > w[1].0))
        {
            return bad("dead entry intervals do not match the dead ranges");
        }
        if row
            .sketch
            .windows(2)
            .any(|w| w[0].0 >= w[1].0 || w[0].1 > w[1].1)
        {
            return bad("size sketch out of order");
        }
        if row.hints_into >= f.number {
            return bad("hints into a newer row");
        }
    }
    Ok(())
}

/// The group's runs are in its order (and carry sets exactly when the group has sets).
fn check_group_order(
    stage: &str,
    group: usize,
    runs: &[Arc<FileMetaData>],
    order: GroupOrder,
) -> Result<()> {
    for f in runs {
        if (order == GroupOrder::Sets) != (f.set != 0) {
            return Err(Error::corruption(
                "manifest",
                format!(
                    "{stage} group {group}: run {} has set {} in a group {} sets",
                    f.number,
                    f.set,
                    if order == GroupOrder::Sets {
                        "of"
                    } else {
                        "without"
                    }
                ),
            ));
        }
    }
    if let Some(f) = runs
        .iter()
        .find(|f| f.row.is_some() != (order == GroupOrder::Rows))
    {
        return Err(Error::corruption(
            "manifest",
            format!(
                "{stage} group {group}: run {} is {} in a group {} rows",
                f.number,
                if f.row.is_some() {
                    "a row"
                } else {
                    "not a row"
                },
                if order == GroupOrder::Rows {
                    "of"
                } else {
                    "without"
                }
            ),
        ));
    }
    for w in runs.windows(2) {
        let ok = match order {
            GroupOrder::Overlapping => w[0].number < w[1].number,
            GroupOrder::Rows => w[0].number < w[1].number && dead_in_older(&w[0], &w[1]),
            GroupOrder::Disjoint => w[0].largest_user_key() < w[1].smallest_user_key(),
            GroupOrder::Sets => (w[0].set, w[0].number) < (w[1].set, w[1].number),
        };
        if !ok {
            return Err(Error::corruption(
                "manifest",
                format!(
                    "{stage} group {group}: runs {} and {} are out of order or overlap",
                    w[0].number, w[1].number
                ),
            ));
        }
    }
    Ok(())
}

/// True if every range dead in row `newer` is dead in row `older` (each dead range of the
/// newer row lies inside one of the older row's: they are merged, so coverage is by one).
fn dead_in_older(older: &FileMetaData, newer: &FileMetaData) -> bool {
    let (Some(o), Some(n)) = (&older.row, &newer.row) else {
        return false;
    };
    n.dead.iter().all(|r| {
        o.dead.iter().any(|d| {
            d.start <= r.start
                && match (&d.end, &r.end) {
                    (None, _) => true,
                    (Some(_), None) => false,
                    (Some(de), Some(re)) => re <= de,
                }
        })
    })
}

/// The sets of a group have disjoint key ranges (and were derived in key order).
fn check_sets(stage: &str, group: usize, sets: &[Arc<RunSet>]) -> Result<()> {
    for w in sets.windows(2) {
        if w[0].hi >= w[1].lo {
            return Err(Error::corruption(
                "manifest",
                format!(
                    "{stage} group {group}: sets {} and {} overlap",
                    w[0].id, w[1].id
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{make_internal_key, ValueType};

    fn meta(number: u64, a: &str, b: &str) -> FileMetaData {
        FileMetaData {
            number,
            file_size: 100,
            num_entries: 1,
            smallest: make_internal_key(a.as_bytes(), 1, ValueType::Value),
            largest: make_internal_key(b.as_bytes(), 1, ValueType::Value),
            tier: Tier::Ssd,
            kind: RunKind::Sst,
            set: 0,
            row: None,
            value_refs: Vec::new(),
            backing: None,
        }
    }

    fn levels(n: usize) -> StageLayout {
        let mut groups = vec![GroupOrder::Disjoint; n];
        groups[0] = GroupOrder::Overlapping;
        StageLayout {
            name: "levels",
            groups,
        }
    }

    #[test]
    fn apply_sorts_checks_and_finds() {
        let v = Version::new(vec![levels(3)].into());
        let mut e = VersionEdit::default();
        let s = e.stage_mut(0);
        s.added.push((1, meta(5, "m", "p")));
        s.added.push((1, meta(4, "a", "c")));
        s.added.push((0, meta(9, "a", "z")));
        s.added.push((0, meta(8, "b", "y")));
        let v = v.apply(&e).unwrap();
        let l = &v.stage(0).groups;
        assert_eq!(
            l[0].iter().map(|f| f.number).collect::<Vec<_>>(),
            vec![8, 9]
        );
        assert_eq!(
            l[1].iter().map(|f| f.number).collect::<Vec<_>>(),
            vec![4, 5]
        );
        let st = v.stage(0);
        assert_eq!(st.run_for_key(1, b"b").unwrap().number, 4);
        assert!(st.run_for_key(1, b"d").is_none());
        assert_eq!(st.run_for_key(1, b"p").unwrap().number, 5);
        assert_eq!(st.overlapping(1, Some(b"c"), Some(b"m")).len(), 2);
        assert_eq!(st.overlapping(1, Some(b"d"), Some(b"l")).len(), 0);
        // Overlap in L1 is rejected.
        let mut bad = VersionEdit::default();
        bad.stage_mut(0).added.push((1, meta(6, "b", "d")));
        assert!(v.apply(&bad).unwrap_err().is_corruption());
        // Deleting a run that is not there is rejected, and so is a stage or group the design
        // does not have.
        for (stage, group) in [(0, 2), (1, 0), (0, 3)] {
            let mut bad = VersionEdit::default();
            bad.stage_mut(stage).deleted.push((group, 5));
            assert!(v.apply(&bad).is_err(), "stage {stage} group {group}");
        }
    }

    /// One edit moves runs from one stage to another atomically: the new version has them in
    /// the second stage and not in the first, or (if any part is invalid) nothing changes.
    #[test]
    fn one_edit_moves_runs_between_stages() {
        let layouts: Arc<[StageLayout]> = vec![
            StageLayout {
                name: "buffer",
                groups: vec![GroupOrder::Overlapping],
            },
            levels(2),
        ]
        .into();
        let mut e = VersionEdit::default();
        e.stage_mut(0).added.push((0, meta(1, "a", "f")));
        e.stage_mut(0).added.push((0, meta(2, "c", "k")));
        let v = Version::new(Arc::clone(&layouts)).apply(&e).unwrap();
        let mut mv = VersionEdit::default();
        mv.stage_mut(0).deleted.extend([(0, 1), (0, 2)]);
        mv.stage_mut(1).added.push((1, meta(3, "a", "k")));
        let moved = v.apply(&mv).unwrap();
        assert!(moved.stage(0).runs().next().is_none());
        assert_eq!(moved.stage(1).groups[1][0].number, 3);
        assert_eq!(moved.file_numbers().collect::<Vec<_>>(), vec![3]);
        // A run moved unchanged keeps its `Arc` (the database deletes a file once nothing but
        // its list of removed runs holds the run's `Arc`); one re-added with other metadata
        // gets a new one.
        let mut tm = VersionEdit::default();
        tm.stage_mut(1).deleted.push((1, 3));
        tm.stage_mut(1).added.push((0, meta(3, "a", "k")));
        let again = moved.apply(&tm).unwrap();
        assert!(Arc::ptr_eq(
            &moved.stage(1).groups[1][0],
            &again.stage(1).groups[0][0]
        ));
        let mut changed = VersionEdit::default();
        changed.stage_mut(1).deleted.push((1, 3));
        changed.stage_mut(1).added.push((0, meta(3, "a", "m")));
        let other = moved.apply(&changed).unwrap();
        assert!(!Arc::ptr_eq(
            &moved.stage(1).groups[1][0],
            &other.stage(1).groups[0][0]
        ));
        // A move whose second half is invalid leaves the version as it was.
        let mut bad = mv.clone();
        bad.stage_mut(1).added.push((1, meta(4, "b", "c")));
        assert!(v.apply(&bad).is_err());
        assert_eq!(v.file_numbers().collect::<Vec<_>>(), vec![1, 2]);
    }
}
