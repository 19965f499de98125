//! SLM-DB's selective compaction rules (Kaiyrakhmet et al., "SLM-DB: Single-Level Key-Value
//! Store with Persistent Memory", FAST 2019, section 3.3), as pure functions over what the
//! single level and its global index report: which tables join the compaction candidate list,
//! and which of the listed tables one compaction merges.
//!
//! * **R1, live-key ratio**: a table whose valid entries (those the global index still points
//!   at) are below `threshold` of its entries is a candidate
//!   ([`crate::gindex::live_key_candidates`]).
//! * **R2, leaf scan**: a round-robin scan of the index's entries in key order; if the keys of
//!   one scan window live in more than `max_files` tables, those tables are candidates
//!   ([`crate::gindex::leaf_scan_candidates`]).
//! * **R3, range-query sequentiality**: a range query's result split into sub-ranges of
//!   `sub_range` keys; if the sub-range touching the most tables touches more than
//!   `max_files`, those tables are candidates ([`crate::gindex::range_query_candidates`]).
//! * **Picking inputs**: each listed table's overlap score is the sum, over the other listed
//!   tables, of `(min(s_p, t_q) - max(s_1, t_1)) / (max(s_p, t_q) - min(s_1, t_1))` clamped at
//!   zero, for key ranges `[s_1, s_p]` and `[t_1, t_q]`; the table with the highest score is
//!   merged with the listed tables that overlap it, up to `max_inputs` ([`pick_inputs`]).
//!
//! The paper's keys are integers; for byte keys the overlap ratio interpolates each key as a
//! number: the 8 bytes after the four keys' common prefix, big-endian (keys of 8 bytes or
//! fewer after the prefix compare exactly; longer ones by their first 8 differing bytes).
//!
//! [`SelectivePolicy`] is the `slmdb` stage's compaction policy over these rules: it reads the
//! live counts and the R2/R3 list from the stage's global index (DRAM state kept beside the
//! version, so not a pure function of the version as the other policies are).

use super::RunTarget;
use super::{CompactionPolicy, CompactionTask, OutputPlan, PolicyView, Reason};
use crate::gindex::{live_key_candidates, GlobalIndex};
use crate::tier::Tier;
use crate::version::{FileMetaData, RunKind, VersionEdit};
use std::collections::BTreeSet;
use std::sync::Arc;

/// A table of the single level: its number and its user-key range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TableSpan {
    pub number: u64,
    pub smallest: Vec<u8>,
    pub largest: Vec<u8>,
}

/// Bytes two keys share at the front.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// `key` after `prefix` bytes, as a number: the next 8 bytes big-endian, zero-padded.
fn position(key: &[u8], prefix: usize) -> f64 {
    let mut b = [0u8; 8];
    let rest = key.get(prefix..).unwrap_or(&[]);
    let n = rest.len().min(8);
    b[..n].copy_from_slice(&rest[..n]);
    u64::from_be_bytes(b) as f64
}

/// The paper's overlap ratio of the key ranges `s` and `t`: the length of their intersection
/// over the length of their union, 0 when they do not overlap (and 1 for two equal ranges,
/// single keys included).
pub(crate) fn overlap_ratio(s: (&[u8], &[u8]), t: (&[u8], &[u8])) -> f64 {
    let lo = s.0.max(t.0);
    let hi = s.1.min(t.1);
    if lo > hi {
        return 0.0;
    }
    let (ulo, uhi) = (s.0.min(t.0), s.1.max(t.1));
    if ulo == uhi {
        return 1.0;
    }
    let prefix = [s.0, s.1, t.0, t.1]
        .iter()
        .map(|k| common_prefix(k, ulo))
        .min()
        .unwrap_or(0);
    let union = position(uhi, prefix) - position(ulo, prefix);
    if union <= 0.0 {
        // The keys differ only past 8 bytes after the prefix: as good as equal ranges.
        return 1.0;
    }
    ((position(hi, prefix) - position(lo, prefix)) / union).clamp(0.0, 1.0)
}

/// The overlap score of `s` against the other tables of `listed`.
pub(crate) fn overlap_score(s: &TableSpan, listed: &[TableSpan]) -> f64 {
    listed
        .iter()
        .filter(|t| t.number != s.number)
        .map(|t| overlap_ratio((&s.smallest, &s.largest), (&t.smallest, &t.largest)))
        .sum()
}

/// The tables one compaction merges from the candidate list `listed`: the one with the highest
/// overlap score and the listed tables that overlap it, most overlapping first, at most
/// `max_inputs` in all; ties go to the lower table number. Empty for an empty list.
pub(crate) fn pick_inputs(listed: &[TableSpan], max_inputs: usize) -> Vec<u64> {
    let Some(best) = listed
        .iter()
        .map(|s| (overlap_score(s, listed), s))
        .max_by(|a, b| {
            a.0.total_cmp(&b.0)
                .then_with(|| b.1.number.cmp(&a.1.number))
        })
        .map(|(_, s)| s)
    else {
        return Vec::new();
    };
    let mut others: Vec<(f64, u64)> = listed
        .iter()
        .filter(|t| t.number != best.number)
        .map(|t| {
            let r = overlap_ratio((&best.smallest, &best.largest), (&t.smallest, &t.largest));
            (r, t.number)
        })
        .filter(|(r, _)| *r > 0.0)
        .collect();
    others.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    std::iter::once(best.number)
        .chain(others.into_iter().map(|(_, n)| n))
        .take(max_inputs.max(1))
        .collect()
}

/// SLM-DB's selective compaction of its single level (module docs).
pub(crate) struct SelectivePolicy {
    index: Arc<GlobalIndex>,
    target_file_size: u64,
}

impl SelectivePolicy {
    pub(crate) fn new(index: Arc<GlobalIndex>, target_file_size: u64) -> Self {
        SelectivePolicy {
            index,
            target_file_size,
        }
    }

    fn task(
        &self,
        view: &PolicyView<'_>,
        inputs: Vec<Arc<FileMetaData>>,
        reason: Reason,
    ) -> CompactionTask {
        CompactionTask {
            reason,
            stage: view.stage,
            inputs: vec![(0, inputs)],
            output_group: 0,
            trivial_move: false,
            plan: OutputPlan::by_size(),
            payload: None,
            holes: Vec::new(),
        }
    }
}

fn span_of(f: &FileMetaData) -> TableSpan {
    TableSpan {
        number: f.number,
        smallest: f.smallest_user_key().to_vec(),
        largest: f.largest_user_key().to_vec(),
    }
}

impl CompactionPolicy for SelectivePolicy {
    fn choose(&self, view: &PolicyView<'_>) -> Option<CompactionTask> {
        if view.busy[0] {
            return None;
        }
        let runs = &view.state.groups[0];
        let live = self.index.live_counts();
        let counts: Vec<(u64, u64, u64)> = runs
            .iter()
            .map(|f| {
                (
                    f.number,
                    f.num_entries,
                    live.get(&f.number).copied().unwrap_or(0),
                )
            })
            .collect();
        let r1: BTreeSet<u64> = live_key_candidates(&counts, self.index.options().live_key_ratio)
            .into_iter()
            .collect();
        let listed = self.index.listed();
        let spans: Vec<TableSpan> = runs
            .iter()
            .filter(|f| r1.contains(&f.number) || listed.contains(&f.number))
            .map(|f| span_of(f))
            .collect();
        let picked = pick_inputs(&spans, self.index.options().max_inputs);
        if picked.len() == 1 && !r1.contains(&picked[0]) {
            // One table with all its entries live: merging it alone gains nothing.
            self.index.unlist(picked[0]);
            return None;
        }
        if picked.is_empty() {
            return None;
        }
        let inputs: Vec<Arc<FileMetaData>> = picked
            .iter()
            .filter_map(|n| runs.iter().find(|f| f.number == *n).cloned())
            .collect();
        Some(self.task(view, inputs, Reason::Selective))
    }

    fn manual_groups(
        &self,
        view: &PolicyView<'_>,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Vec<usize> {
        if view.state.overlapping(0, begin, end).is_empty() {
            Vec::new()
        } else {
            vec![0]
        }
    }

    /// Every table overlapping `[begin, end]`, merged into tables of the target size that hold
    /// only what the index points at.
    fn manual(
        &self,
        view: &PolicyView<'_>,
        group: usize,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Option<CompactionTask> {
        let inputs = view.state.overlapping(group, begin, end);
        (!inputs.is_empty()).then(|| self.task(view, inputs, Reason::Manual))
    }

    fn output(&self, _task: &CompactionTask) -> RunTarget {
        RunTarget {
            group: 0,
            tier: Tier::Ssd,
            kind: RunKind::Sst,
            row: false,
        }
    }

    fn target_run_bytes(&self) -> u64 {
        self.target_file_size
    }

    fn apply(
        &self,
        view: &PolicyView<'_>,
        task: &CompactionTask,
        outputs: Vec<FileMetaData>,
    ) -> VersionEdit {
        let mut edit = VersionEdit::default();
        let s = edit.stage_mut(view.stage);
        s.deleted.extend(task.input_runs().map(|f| (0, f.number)));
        s.added.extend(outputs.into_iter().map(|m| (0, m)));
        edit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(n: u64) -> Vec<u8> {
        n.to_be_bytes().to_vec()
    }

    fn span(number: u64, lo: u64, hi: u64) -> TableSpan {
        TableSpan {
            number,
            smallest: k(lo),
            largest: k(hi),
        }
    }

    #[test]
    fn overlap_ratio_is_the_papers_on_integer_keys() {
        // [0, 100] and [50, 150]: intersection 50, union 150.
        let r = overlap_ratio((&k(0), &k(100)), (&k(50), &k(150)));
        assert!((r - 50.0 / 150.0).abs() < 1e-12, "{r}");
        assert_eq!(overlap_ratio((&k(0), &k(10)), (&k(11), &k(20))), 0.0);
        assert_eq!(overlap_ratio((&k(0), &k(10)), (&k(0), &k(10))), 1.0);
        assert_eq!(overlap_ratio((&k(5), &k(5)), (&k(5), &k(5))), 1.0);
        // Contained: the smaller range over the larger.
        let r = overlap_ratio((&k(0), &k(100)), (&k(20), &k(30)));
        assert!((r - 0.1).abs() < 1e-12, "{r}");
    }

    #[test]
    fn overlap_ratio_of_byte_keys_uses_the_bytes_after_their_common_prefix() {
        let a = (b"user000100".as_slice(), b"user000200".as_slice());
        let b = (b"user000150".as_slice(), b"user000250".as_slice());
        let r = overlap_ratio(a, b);
        assert!(r > 0.0 && r < 1.0, "{r}");
        assert_eq!(r, overlap_ratio(b, a));
        // Long shared prefixes do not flatten the ratio to 0 or 1.
        let p = "x".repeat(40);
        let c = (format!("{p}a"), format!("{p}c"));
        let d = (format!("{p}b"), format!("{p}d"));
        let r = overlap_ratio(
            (c.0.as_bytes(), c.1.as_bytes()),
            (d.0.as_bytes(), d.1.as_bytes()),
        );
        assert!((r - 1.0 / 3.0).abs() < 1e-9, "{r}");
    }

    #[test]
    fn pick_inputs_takes_the_most_overlapped_table_and_its_overlapping_peers() {
        let listed = vec![
            span(1, 0, 100),
            span(2, 50, 150),
            span(3, 90, 110),
            span(4, 1000, 2000),
        ];
        // Scores: 1 -> 1/3 + 1/11; 2 -> 1/3 + 1/5; 3 -> 1/11 + 1/5: table 2 wins.
        assert_eq!(pick_inputs(&listed, 10), vec![2, 1, 3]);
        assert_eq!(pick_inputs(&listed, 2), vec![2, 1]);
        // Nothing overlaps: a tie at 0, the lower-numbered table alone.
        assert_eq!(pick_inputs(&[span(9, 0, 1), span(8, 5, 6)], 4), vec![8]);
        assert!(pick_inputs(&[], 4).is_empty());
    }
}
