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

mod edit;
mod set;

pub use edit::VersionEdit;
pub(crate) use set::set_current;
pub use set::{
    current_file_name, log_file_name, new_identity, parse_file_name, read_creation_fields,
    read_manifest_creation_fields, run_file_name, CreationFields, FileKind, VersionSet,
};

use crate::format::{compare_internal, user_key};
use crate::tier::Tier;
use crate::{Error, Result};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

/// What a run is made of: the building block that reads and writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RunKind {
    /// An SSTable file (`NNNNNN.sst`) on SSD or in the PM pool's file system.
    Sst,
    /// A PM sorted array (`NNNNNN.arr`): fixed-size index entries searched in place, optionally
    /// with cascade pointers into the lower floors of its set (`parray`).
    PmArray,
}

impl RunKind {
    /// The kind's code in the manifest.
    pub fn code(self) -> u8 {
        match self {
            RunKind::Sst => 1,
            RunKind::PmArray => 2,
        }
    }

    /// The kind with manifest code `code`.
    pub fn from_code(code: u8) -> Option<RunKind> {
        match code {
            1 => Some(RunKind::Sst),
            2 => Some(RunKind::PmArray),
            _ => None,
        }
    }

    /// The extension of the kind's files.
    pub fn extension(self) -> &'static str {
        match self {
            RunKind::Sst => "sst",
            RunKind::PmArray => "arr",
        }
    }

    /// The kind whose files have extension `ext`.
    pub fn from_extension(ext: &str) -> Option<RunKind> {
        match ext {
            "sst" => Some(RunKind::Sst),
            "arr" => Some(RunKind::PmArray),
            _ => None,
        }
    }
}

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
}

impl FileMetaData {
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

/// One stage's runs, per group.
#[derive(Clone, Debug, Default)]
pub struct StageVersion {
    /// Runs per group; see the module invariants. Each group is shared between versions until
    /// an edit changes it, so an edit costs the groups it touches, not every run.
    pub groups: Vec<Arc<Vec<Arc<FileMetaData>>>>,
    /// Per group, its sets sorted by key range ([`GroupOrder::Sets`] groups; empty for others),
    /// derived from `groups` whenever the version changes.
    pub sets: Vec<Arc<[Arc<RunSet>]>>,
}

impl StageVersion {
    /// An empty stage with `groups` groups.
    pub fn new(groups: usize) -> Self {
        StageVersion {
            groups: (0..groups).map(|_| Arc::new(Vec::new())).collect(),
            sets: vec![Arc::from(Vec::new()); groups],
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
                    GroupOrder::Overlapping => runs.sort_by_key(|f| f.number),
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
        self.stages.iter().flat_map(|s| s.runs()).map(|f| f.number)
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
    for w in runs.windows(2) {
        let ok = match order {
            GroupOrder::Overlapping => w[0].number < w[1].number,
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
