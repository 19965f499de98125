//! The three rules of SLM-DB's selective compaction (Kaiyrakhmet et al., FAST 2019, section
//! 3.3) that list candidate tables, as pure functions: R1 (live-key ratio), R2 (leaf scan),
//! R3 (range-query sequentiality). The index applies R2 and R3 as it scans and answers range
//! queries; the selective policy (`compaction/selective.rs`) applies R1 and picks among the
//! candidates.

use std::collections::BTreeSet;

/// R1: the tables, given as `(number, entries, valid entries)`, whose live-key ratio is below
/// `threshold`.
pub(crate) fn live_key_candidates(tables: &[(u64, u64, u64)], threshold: f64) -> Vec<u64> {
    tables
        .iter()
        .filter(|&&(_, total, live)| total > 0 && (live as f64) < threshold * total as f64)
        .map(|&(n, _, _)| n)
        .collect()
}

/// R2: the tables holding the keys of one leaf-scan window (`files`: each scanned key's table,
/// in key order), if there are more than `max_files` of them; otherwise none.
pub(crate) fn leaf_scan_candidates(files: &[u64], max_files: usize) -> Vec<u64> {
    let distinct: BTreeSet<u64> = files.iter().copied().collect();
    if distinct.len() > max_files {
        distinct.into_iter().collect()
    } else {
        Vec::new()
    }
}

/// R3: for a range query's result (`files`: each returned key's table, in key order), the
/// tables of the sub-range of `sub_range` keys that touches the most tables, if more than
/// `max_files`; otherwise none.
pub(crate) fn range_query_candidates(
    files: &[u64],
    sub_range: usize,
    max_files: usize,
) -> Vec<u64> {
    files
        .chunks(sub_range.max(1))
        .map(|c| c.iter().copied().collect::<BTreeSet<u64>>())
        .max_by_key(BTreeSet::len)
        .filter(|d| d.len() > max_files)
        .map(|d| d.into_iter().collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_candidate_rules_apply_their_thresholds() {
        assert_eq!(
            live_key_candidates(&[(1, 100, 69), (2, 100, 70), (3, 0, 0), (4, 10, 1)], 0.7),
            vec![1, 4]
        );
        let window: Vec<u64> = (0..40).map(|i| i % 11).collect();
        assert_eq!(
            leaf_scan_candidates(&window, 10),
            (0..11).collect::<Vec<_>>()
        );
        assert!(leaf_scan_candidates(&window, 11).is_empty());
        // 60 keys: the first 30 from 3 tables, the next 30 from 9.
        let result: Vec<u64> = (0..30)
            .map(|i| i % 3)
            .chain((0..30).map(|i| 10 + i % 9))
            .collect();
        assert_eq!(
            range_query_candidates(&result, 30, 8),
            (10..19).collect::<Vec<_>>()
        );
        assert!(range_query_candidates(&result, 30, 9).is_empty());
    }
}
