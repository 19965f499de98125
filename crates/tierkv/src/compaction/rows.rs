//! The compaction policy of a row container (`stages::RowStage`): TriangleKV's right-angle-side
//! compaction and MatrixKV's column compaction of the PM rows into L1, and leveled compaction
//! below L1.
//!
//! Both move one key range `R` at a time out of rows into L1: the rows' entries in `R` (each
//! row's dead ranges skipped) are merged with the L1 tables that overlap `R`, the outputs
//! replace those tables, and `R` becomes dead in every input row (one manifest record); a
//! row whose keys are then all dead is deleted. Rows are never rewritten.
//!
//! * **Triangle** (section 3.2, Fig. 11): when the rows' live bytes reach `rows.trigger` of
//!   `rows.l0_bytes`, `R` starts at the cursor (the key range "not merged for the longest
//!   time") and is taken out of *every* row. The cursor then moves to `R`'s end, wrapping to
//!   the smallest key after the largest.
//! * **Matrix** (MatrixKV): the rows are a receiver (newer) and a compactor (older). When the
//!   compactor is empty and the rows' live bytes reach the trigger, every row becomes the
//!   compactor; column compaction then drains the compactor key range by key range in
//!   ascending order, whatever the rows' size, until its last range; rows flushed meanwhile
//!   form the new receiver. Receiver keys in ranges already drained are written to L1 again
//!   by the next drain: the redundant writes TriangleKV removes.
//! * **The range**: candidate ends are the smallest keys of the L1 tables after the cursor
//!   (the paper's "L1 SST boundaries and gaps": a table and the gap after it are one unit) and
//!   the keys of the input rows' size sketches (for an empty L1, or a unit too large). `R`
//!   ends at the first L1 boundary where its estimated input bytes reach
//!   `level_size_multiplier x target_file_size / 2` without passing twice that; at a sketch
//!   key if no L1 boundary falls between; at the end of the key space if the bytes after the
//!   cursor never reach the lower bound.
//! * **Below L1**: [`LeveledPolicy`] on levels 1.. (its L0 step never runs: group 0 is rows).
//!
//! The cursor is group 0's compaction pointer in the manifest: 8 bytes (big-endian) of the
//! compactor's newest row number (0: no compactor; the triangle's is always 0), then the
//! cursor's user key.

use super::RunTarget;
use super::{
    CompactionPolicy, CompactionTask, LeveledPolicy, OutputPlan, PolicyView, Reason, RowEntries,
    TaskPayload,
};
use crate::options::{CompactionOptions, RowOptions};
use crate::tier::Tier;
use crate::version::{add_range, FileMetaData, KeyRange, RowInfo, RunKind, VersionEdit};
use std::sync::Arc;

/// A row task's payload ([`CompactionTask::payload`]).
#[derive(Clone, Debug)]
pub(crate) struct RowTask {
    /// The key range moved out of the input rows (group 0): only their live entries in it are
    /// read; the other inputs are read whole.
    pub range: KeyRange,
    /// Per input row of group 0 (in order), filled by the row stage's compaction rule before
    /// the merge: the row's dead entry intervals (as recorded, or found for a row of the older
    /// manifest format) and the entry interval of `range` in the row. `apply` records the
    /// interval with the range it makes dead.
    pub entries: Vec<RowEntries>,
}

/// Which row container L0 is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Container {
    /// TriangleKV: one sequence of rows; right-angle-side compaction takes a key range out of
    /// every row at once.
    Triangle,
    /// MatrixKV: the receiver absorbs flushes; a full receiver becomes the compactor, which
    /// column compaction drains key range by key range.
    Matrix,
}

/// The row info of a run of a [`crate::version::GroupOrder::Rows`] group (the version checks every row has
/// one).
pub(crate) fn row_info(f: &FileMetaData) -> &RowInfo {
    static NONE: RowInfo = RowInfo {
        hints_into: 0,
        dead: Vec::new(),
        dead_entries: Vec::new(),
        sketch: Vec::new(),
    };
    f.row.as_deref().unwrap_or(&NONE)
}

/// The estimated live bytes of every row.
pub(crate) fn live_row_bytes(rows: &[Arc<FileMetaData>]) -> u64 {
    rows.iter()
        .map(|f| row_info(f).live_bytes(f.file_size))
        .sum()
}

/// Where the next row compaction starts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SweepCursor {
    /// The compactor's newest row (a matrix draining it); 0: no compactor.
    pub compactor: u64,
    /// The user key the next range starts at.
    pub key: Vec<u8>,
}

impl SweepCursor {
    /// Decodes group 0's compaction pointer (empty: the start).
    pub(crate) fn decode(pointer: &[u8]) -> SweepCursor {
        if pointer.len() < 8 {
            return SweepCursor::default();
        }
        let mut n = [0u8; 8];
        n.copy_from_slice(&pointer[..8]);
        SweepCursor {
            compactor: u64::from_be_bytes(n),
            key: pointer[8..].to_vec(),
        }
    }

    /// The pointer bytes.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut b = self.compactor.to_be_bytes().to_vec();
        b.extend_from_slice(&self.key);
        b
    }
}

/// The row container's policy.
#[derive(Clone, Debug)]
pub(crate) struct RowPolicy {
    options: CompactionOptions,
    rows: RowOptions,
    container: Container,
    levels: LeveledPolicy,
}

impl RowPolicy {
    /// The policy of a `container` with `options` and `rows`.
    pub fn new(options: &CompactionOptions, rows: &RowOptions, container: Container) -> Self {
        let mut below = options.clone();
        // Group 0 is rows, compacted by this policy, never by the leveled L0 step.
        below.level0_compaction_trigger = usize::MAX;
        RowPolicy {
            options: options.clone(),
            rows: rows.clone(),
            container,
            levels: LeveledPolicy::new(&below),
        }
    }

    /// The bounds of one compaction's input bytes from the rows: half to all of
    /// `level_size_multiplier x target_file_size` (the paper's `[AF x S/2, AF x S]`).
    pub(crate) fn bounds(&self) -> (u64, u64) {
        let hi = self
            .options
            .level_size_multiplier
            .saturating_mul(self.options.target_file_size)
            .max(1);
        (hi / 2, hi)
    }

    /// The rows a row compaction takes now and the cursor it starts from, if one is due.
    fn due(&self, view: &PolicyView<'_>) -> Option<(Vec<Arc<FileMetaData>>, SweepCursor)> {
        let rows = &view.state.groups[0];
        if rows.is_empty() {
            return None;
        }
        let cursor = SweepCursor::decode(&view.pointers[0]);
        let trigger = (self.rows.l0_bytes as f64 * self.rows.trigger) as u64;
        match self.container {
            Container::Triangle => {
                (live_row_bytes(rows) >= trigger).then(|| (rows.to_vec(), cursor))
            }
            Container::Matrix => {
                let compactor: Vec<Arc<FileMetaData>> = rows
                    .iter()
                    .filter(|f| f.number <= cursor.compactor)
                    .cloned()
                    .collect();
                if !compactor.is_empty() {
                    return Some((compactor, cursor));
                }
                // The receiver becomes the compactor, drained from the smallest key.
                (live_row_bytes(rows) >= trigger).then(|| {
                    let newest = rows.last().map_or(0, |f| f.number);
                    (
                        rows.to_vec(),
                        SweepCursor {
                            compactor: newest,
                            key: Vec::new(),
                        },
                    )
                })
            }
        }
    }

    /// The range a row compaction from `start` over `rows` takes (module doc).
    pub(crate) fn pick_range(
        &self,
        l1: &[Arc<FileMetaData>],
        rows: &[Arc<FileMetaData>],
        start: &[u8],
    ) -> KeyRange {
        let (lower, upper) = self.bounds();
        // Candidate ends after `start`, sorted, L1 boundaries marked.
        let mut points: Vec<(Vec<u8>, bool)> = l1
            .iter()
            .map(|f| f.smallest_user_key())
            .filter(|k| *k > start)
            .map(|k| (k.to_vec(), true))
            .collect();
        for f in rows {
            points.extend(
                row_info(f)
                    .sketch
                    .iter()
                    .filter(|(k, _)| k.as_slice() > start)
                    .map(|(k, _)| (k.clone(), false)),
            );
        }
        // L1 boundaries first among equal keys, so that dedup keeps them.
        points.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        points.dedup_by(|b, a| a.0 == b.0);
        let bytes_to = |end: &[u8]| -> u64 {
            let r = KeyRange {
                start: start.to_vec(),
                end: Some(end.to_vec()),
            };
            rows.iter().map(|f| live_bytes_in(f, &r)).sum()
        };
        let Some(first) = points.iter().position(|(k, _)| bytes_to(k) >= lower) else {
            return KeyRange {
                start: start.to_vec(),
                end: None,
            };
        };
        let end = points[first..]
            .iter()
            .take_while(|(k, _)| bytes_to(k) <= upper)
            .find(|(_, l1)| *l1)
            .unwrap_or(&points[first]);
        KeyRange {
            start: start.to_vec(),
            end: Some(end.0.clone()),
        }
    }

    /// The task that moves `range` out of `rows` into L1.
    fn row_task(
        &self,
        view: &PolicyView<'_>,
        rows: Vec<Arc<FileMetaData>>,
        range: KeyRange,
        reason: Reason,
    ) -> CompactionTask {
        let l1: Vec<Arc<FileMetaData>> = view
            .state
            .overlapping(1, Some(&range.start), None)
            .into_iter()
            .filter(|f| {
                range
                    .end
                    .as_deref()
                    .is_none_or(|e| f.smallest_user_key() < e)
            })
            .collect();
        CompactionTask {
            reason,
            stage: view.stage,
            inputs: vec![(0, rows), (1, l1)],
            output_group: 1,
            trivial_move: false,
            plan: OutputPlan::by_size(),
            payload: Some(TaskPayload::new(RowTask {
                range,
                entries: Vec::new(),
            })),
            holes: Vec::new(),
        }
    }
}

/// The estimated bytes of row `f`'s live entries in `range`.
fn live_bytes_in(f: &FileMetaData, range: &KeyRange) -> u64 {
    let info = row_info(f);
    let all = info.bytes_in(range, f.file_size);
    let dead: u64 = info
        .dead
        .iter()
        .filter_map(|d| intersect(d, range))
        .map(|r| info.bytes_in(&r, f.file_size))
        .sum();
    all.saturating_sub(dead)
}

/// The intersection of two ranges, if not empty.
fn intersect(a: &KeyRange, b: &KeyRange) -> Option<KeyRange> {
    let start = a.start.clone().max(b.start.clone());
    let end = match (&a.end, &b.end) {
        (Some(x), Some(y)) => Some(x.min(y).clone()),
        (Some(x), None) | (None, Some(x)) => Some(x.clone()),
        (None, None) => None,
    };
    let r = KeyRange { start, end };
    (!r.is_empty()).then_some(r)
}

/// True if every key of row `f` is in a dead range of `info`.
fn all_dead(f: &FileMetaData, info: &RowInfo) -> bool {
    let (lo, hi) = (f.smallest_user_key(), f.largest_user_key());
    info.dead
        .iter()
        .any(|d| d.contains(lo) && d.end.as_deref().is_none_or(|e| hi < e))
}

impl CompactionPolicy for RowPolicy {
    fn choose(&self, view: &PolicyView<'_>) -> Option<CompactionTask> {
        if !view.busy[0] && !view.busy[1] {
            if let Some((rows, cursor)) = self.due(view) {
                let range = self.pick_range(&view.state.groups[1], &rows, &cursor.key);
                return Some(self.row_task(view, rows, range, Reason::Rows));
            }
        }
        self.levels.choose(view)
    }

    /// The rows, then the levels as the leveled policy walks them.
    fn manual_groups(
        &self,
        view: &PolicyView<'_>,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Vec<usize> {
        let mut groups = vec![0];
        groups.extend(
            self.levels
                .manual_groups(view, begin, end)
                .into_iter()
                .filter(|&g| g >= 1),
        );
        groups
    }

    /// From the rows it moves every key of every row into L1 (a range of the rows alone
    /// would leave older versions of other keys above newer ones moved below).
    fn manual(
        &self,
        view: &PolicyView<'_>,
        group: usize,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Option<CompactionTask> {
        if group > 0 {
            return self.levels.manual(view, group, begin, end);
        }
        let rows = view.state.groups[0].to_vec();
        if rows.is_empty() {
            return None;
        }
        Some(self.row_task(view, rows, KeyRange::all(), Reason::Manual))
    }

    fn output(&self, task: &CompactionTask) -> RunTarget {
        RunTarget {
            group: task.output_group,
            tier: Tier::Ssd,
            kind: RunKind::Sst,
            row: false,
        }
    }

    fn target_run_bytes(&self) -> u64 {
        self.options.target_file_size
    }

    fn apply(
        &self,
        view: &PolicyView<'_>,
        task: &CompactionTask,
        outputs: Vec<FileMetaData>,
    ) -> VersionEdit {
        let Some(RowTask { range, entries }) = task.payload::<RowTask>() else {
            return self.levels.apply(view, task, outputs);
        };
        let mut edit = VersionEdit::default();
        let s = edit.stage_mut(view.stage);
        for (group, runs) in &task.inputs {
            s.deleted.extend(runs.iter().map(|f| (*group, f.number)));
        }
        // Each input row again with the range dead in it, unless nothing of it is left.
        for (i, f) in task.inputs[0].1.iter().enumerate() {
            let mut info = row_info(f).clone();
            match entries.get(i) {
                Some((dead, entries)) => {
                    info.dead_entries = dead.clone();
                    info.add_dead(range, *entries);
                }
                None => {
                    // No entries known (a task the executor did not resolve): the row's
                    // intervals become unknown, and nothing of it is ever freed.
                    info.dead = add_range(&info.dead, range);
                    info.dead_entries.clear();
                }
            }
            if !all_dead(f, &info) {
                let mut row = (**f).clone();
                row.row = Some(Box::new(info));
                s.added.push((0, row));
            }
        }
        s.added.extend(outputs.into_iter().map(|m| (1, m)));
        if task.reason == Reason::Rows {
            let mut cursor = SweepCursor::decode(&view.pointers[0]);
            if self.container == Container::Matrix && cursor.compactor == 0 {
                // This task made the rows it took the compactor.
                cursor.compactor = task.inputs[0].1.last().map_or(0, |f| f.number);
            }
            match &range.end {
                Some(end) => cursor.key = end.clone(),
                None => {
                    // Wrapped: the next range starts at the smallest key; a matrix's
                    // compactor is drained.
                    cursor.key.clear();
                    cursor.compactor = 0;
                }
            }
            s.pointers.push((0, cursor.encode()));
        }
        edit
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::spec;
    use crate::format::{make_internal_key, ValueType};
    use crate::version::{GroupOrder, StageVersion};

    /// The key range a row task moves.
    fn task_range(t: &CompactionTask) -> Option<&KeyRange> {
        t.payload::<RowTask>().map(|r| &r.range)
    }

    fn options() -> (CompactionOptions, RowOptions) {
        let o = CompactionOptions {
            num_levels: 4,
            target_file_size: 10 << 10,
            level_size_multiplier: 10,
            ..CompactionOptions::default()
        };
        let r = RowOptions {
            l0_bytes: 1 << 20,
            trigger: 0.5,
            ..RowOptions::default()
        };
        (o, r)
    }

    /// A row of keys `a..=b` (single letters), `kib` KiB spread evenly over its keys, with
    /// `dead` ranges and hints into `hints_into`.
    fn row(number: u64, a: u8, b: u8, kib: u64, dead: Vec<KeyRange>) -> FileMetaData {
        let keys = (b - a + 1) as u64;
        let per = (kib << 10) / keys;
        FileMetaData {
            number,
            file_size: kib << 10,
            num_entries: keys,
            smallest: make_internal_key(&[a], 9, ValueType::Value),
            largest: make_internal_key(&[b], 1, ValueType::Value),
            tier: Tier::Pm,
            kind: RunKind::PmArray,
            set: 0,
            row: Some(Box::new(RowInfo {
                hints_into: number.saturating_sub(1),
                dead,
                dead_entries: Vec::new(),
                sketch: (a..=b).map(|k| (vec![k], (k - a) as u64 * per)).collect(),
            })),
            value_refs: Vec::new(),
            backing: None,
        }
    }

    fn range(a: &str, b: Option<&str>) -> KeyRange {
        KeyRange {
            start: a.as_bytes().to_vec(),
            end: b.map(|b| b.as_bytes().to_vec()),
        }
    }

    /// A stage of `rows` in group 0 and L1 tables `l1` (as `spec` lines: `number:a-z:kib`).
    fn state(rows: Vec<FileMetaData>, l1: &str) -> StageVersion {
        let mut s = spec::stage(
            &format!("1: {l1}"),
            "rows+levels",
            vec![
                GroupOrder::Rows,
                GroupOrder::Disjoint,
                GroupOrder::Disjoint,
                GroupOrder::Disjoint,
            ],
            false,
            Tier::Ssd,
            RunKind::Sst,
        );
        s.groups[0] = Arc::new(rows.into_iter().map(Arc::new).collect());
        s
    }

    fn view<'a>(state: &'a StageVersion, pointers: &'a [Vec<u8>]) -> PolicyView<'a> {
        PolicyView {
            stage: 0,
            state,
            busy: &[false; 4],
            pointers,
        }
    }

    #[test]
    fn cursor_round_trips_through_the_pointer() {
        for c in [
            SweepCursor::default(),
            SweepCursor {
                compactor: 77,
                key: b"mid".to_vec(),
            },
        ] {
            assert_eq!(SweepCursor::decode(&c.encode()), c);
        }
        assert_eq!(SweepCursor::decode(b""), SweepCursor::default());
    }

    /// Below the trigger nothing; at it, a triangle takes every row and the range from the
    /// cursor to the L1 boundary where the bytes reach half the bound (100 KiB: 50..100 KiB).
    #[test]
    fn triangle_takes_a_range_of_every_row_from_the_cursor() {
        let (o, r) = options();
        let p = RowPolicy::new(&o, &r, Container::Triangle);
        assert_eq!(p.bounds(), (50 << 10, 100 << 10));
        let pointers = vec![Vec::new(); 4];
        // 2 rows of a..z, 200 KiB each: 400 KiB live < 512 KiB.
        let small = state(
            vec![
                row(5, b'a', b'z', 200, vec![]),
                row(6, b'a', b'z', 200, vec![]),
            ],
            "10:a-f:20 11:g-m:20 12:n-z:20",
        );
        assert!(p.choose(&view(&small, &pointers)).is_none());
        // 3 rows: 600 KiB live. Each key is ~7.7 KiB of a row, ~23 KiB of the three: from
        // "a", L1 boundary g is ~138 KiB (past 100), so the range ends at a sketch key: the
        // first where the bytes reach 50 KiB (c: 2 keys x 23 KiB = 46 < 50; d: 69 KiB).
        let rows = vec![
            row(5, b'a', b'z', 200, vec![]),
            row(6, b'a', b'z', 200, vec![]),
            row(7, b'a', b'z', 200, vec![]),
        ];
        let st = state(rows, "10:a-f:20 11:g-m:20 12:n-z:20");
        let t = p.choose(&view(&st, &pointers)).unwrap();
        assert_eq!(t.reason, Reason::Rows);
        assert_eq!(task_range(&t), Some(&range("", Some("d"))));
        let nums = |g: usize| t.inputs[g].1.iter().map(|f| f.number).collect::<Vec<_>>();
        assert_eq!(nums(0), [5, 6, 7]);
        assert_eq!(nums(1), [10]);
        // Applied: the range dead in each row, the cursor at "d", the L1 input replaced.
        let e = p.apply(&view(&st, &pointers), &t, vec![]);
        let s = &e.stages[0];
        assert_eq!(s.deleted.len(), 4);
        assert_eq!(s.added.len(), 3);
        for (g, f) in &s.added {
            assert_eq!(*g, 0);
            assert_eq!(f.row.as_ref().unwrap().dead, vec![range("", Some("d"))]);
        }
        assert_eq!(
            s.pointers,
            vec![(
                0,
                SweepCursor {
                    compactor: 0,
                    key: b"d".to_vec()
                }
                .encode()
            )]
        );
    }

    /// An L1 boundary inside the bounds is preferred to a sketch key.
    #[test]
    fn the_range_ends_at_an_l1_boundary_when_one_lies_within_the_bounds() {
        let (o, r) = options();
        let p = RowPolicy::new(&o, &r, Container::Triangle);
        let rows: Vec<Arc<FileMetaData>> = [5, 6, 7]
            .into_iter()
            .map(|n| Arc::new(row(n, b'a', b'z', 200, vec![])))
            .collect();
        // Boundary e: 4 keys x 23 KiB = 92 KiB, within [50, 100].
        let l1 = state(vec![], "10:a-d:20 11:e-m:20 12:n-z:20");
        let got = p.pick_range(&l1.groups[1], &rows, b"");
        assert_eq!(got, range("", Some("e")));
        // From "y" the rest of the key space (y and z, ~46 KiB) holds less than the lower
        // bound: to the end.
        let got = p.pick_range(&l1.groups[1], &rows, b"y");
        assert_eq!(got, range("y", None));
        // From "w" (w..z, ~92 KiB) it ends at the sketch key where 50 KiB is reached: z.
        let got = p.pick_range(&l1.groups[1], &rows, b"w");
        assert_eq!(got, range("w", Some("z")));
    }

    /// The wrap: a range to the end of the key space sets the cursor back to the start, and a
    /// row whose every key is then dead is deleted, not added back.
    #[test]
    fn a_wrapping_range_kills_rows_and_resets_the_cursor() {
        let (o, r) = options();
        let p = RowPolicy::new(&o, &r, Container::Triangle);
        let rows = vec![
            // Dead below "m" already: the range [m, end) finishes it.
            row(5, b'a', b'z', 400, vec![range("", Some("m"))]),
            row(6, b'a', b'z', 400, vec![]),
        ];
        let st = state(rows, "10:a-z:20");
        let pointers = vec![
            SweepCursor {
                compactor: 0,
                key: b"m".to_vec(),
            }
            .encode(),
            vec![],
            vec![],
            vec![],
        ];
        let t = p.row_task(
            &view(&st, &pointers),
            st.groups[0].to_vec(),
            range("m", None),
            Reason::Rows,
        );
        let e = p.apply(&view(&st, &pointers), &t, vec![]);
        let s = &e.stages[0];
        let added: Vec<u64> = s.added.iter().map(|(_, f)| f.number).collect();
        assert_eq!(added, [6]);
        assert_eq!(
            s.added[0].1.row.as_ref().unwrap().dead,
            vec![range("m", None)]
        );
        assert_eq!(s.pointers, vec![(0, SweepCursor::default().encode())]);
    }

    /// A matrix: at the trigger every row becomes the compactor; later tasks take only the
    /// compactor's rows (rows flushed since are the receiver), until the drain wraps.
    #[test]
    fn matrix_drains_its_compactor_only() {
        let (o, r) = options();
        let p = RowPolicy::new(&o, &r, Container::Matrix);
        let rows = vec![
            row(5, b'a', b'z', 200, vec![]),
            row(6, b'a', b'z', 200, vec![]),
            row(7, b'a', b'z', 200, vec![]),
        ];
        let st = state(rows.clone(), "10:a-z:20");
        let mut pointers = vec![Vec::new(); 4];
        let t = p.choose(&view(&st, &pointers)).unwrap();
        assert_eq!(t.inputs[0].1.len(), 3);
        let e = p.apply(&view(&st, &pointers), &t, vec![]);
        let cursor = SweepCursor::decode(&e.stages[0].pointers[0].1);
        assert_eq!(cursor.compactor, 7);
        pointers[0] = cursor.encode();
        // Two newer rows arrive (the receiver), below the trigger on their own: the drain
        // goes on over rows 5..=7 only.
        let mut more = rows;
        more.push(row(8, b'a', b'z', 10, vec![]));
        more.push(row(9, b'a', b'z', 10, vec![]));
        let st = state(more, "10:a-z:20");
        let t = p.choose(&view(&st, &pointers)).unwrap();
        let nums: Vec<u64> = t.inputs[0].1.iter().map(|f| f.number).collect();
        assert_eq!(nums, [5, 6, 7]);
        assert_eq!(task_range(&t).unwrap().start, cursor.key);
    }

    /// A manual compaction moves every row whole; levels below go the leveled way.
    #[test]
    fn manual_compaction_moves_every_row() {
        let (o, r) = options();
        let p = RowPolicy::new(&o, &r, Container::Triangle);
        let st = state(
            vec![
                row(5, b'a', b'm', 10, vec![]),
                row(6, b'k', b'z', 10, vec![]),
            ],
            "10:a-z:20",
        );
        let pointers = vec![Vec::new(); 4];
        let v = view(&st, &pointers);
        assert_eq!(p.manual_groups(&v, None, None), [0]);
        let t = p.manual(&v, 0, None, None).unwrap();
        assert_eq!(task_range(&t), Some(&KeyRange::all()));
        let e = p.apply(&v, &t, vec![]);
        assert!(e.stages[0].added.is_empty(), "every row fully dead");
        assert!(
            e.stages[0].pointers.is_empty(),
            "a manual task leaves the cursor"
        );
    }
}
