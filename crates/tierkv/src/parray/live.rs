//! A row's dead entries, and the windows that keep searches and cursors off them.
//!
//! TriangleKV frees the data pages of a row that lie wholly in its dead ranges (Ding et al.,
//! IEEE TPDS 2022, section 3.1: compaction moved those keys below the row container). The
//! index entries stay, but the key and value bytes of a dead entry may be gone, so nothing may
//! read them: not a binary search that probes a dead entry whose 16-byte key head ties with
//! the target, not a cursor that steps onto a dead entry, not the hint builder of the next
//! flush. Every reader of a row therefore keeps to the row's *live* entries, known by index:
//! each dead key range `[start, end)` of the row carries the interval of entry indices
//! `[first, end)` it covers ([`crate::version::RowInfo::dead_entries`]).
//!
//! * [`window`]: for a user key live in the row, the entries between the dead intervals around
//!   it (a search inside them probes only live entries, and the key's lower bound lies in
//!   `[lo, hi]`); for a key in a dead range, that range's interval.
//! * [`first_live`]: the first live entry at or after an index (cursors skip by index).
//! * [`dead_entries`]: a row's intervals as recorded, or, for a row recorded before intervals
//!   were kept (none of its pages was ever freed: freeing needs the intervals), found by
//!   searching it.
//! * [`lower_bound_live`]: a lower bound that reads only live entries.

pub(crate) use super::first_live;
use super::reader::PmArray;
use crate::format::{lookup_key, MAX_SEQUENCE};
use crate::stats::IoPurpose;
use crate::version::{KeyRange, RowInfo};
use crate::Result;
use std::borrow::Cow;

/// The dead key ranges of a row with their entry intervals (one per range).
pub(crate) type RowDead = (Vec<KeyRange>, Vec<(u32, u32)>);

/// Where a user key lies among a row's entries, with the row's dead ranges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Window {
    /// The key is live in the row: its entries and lower bound lie in `[lo, hi]`, every entry
    /// in `[lo, hi)` is live; entry `hi` is dead when `hi_dead` (the first entry of the next
    /// dead interval).
    Live { lo: u32, hi: u32, hi_dead: bool },
    /// The key is in a dead range whose entries are `[first, end)`: none of them may be read.
    Dead { first: u32, end: u32 },
}

/// The window of `user_key` in a row of `len` entries with dead ranges `ranges` (sorted,
/// disjoint) and their entry intervals `entries` (one per range, or none when the row has no
/// dead range).
pub(crate) fn window(ranges: &[KeyRange], entries: &[(u32, u32)], len: u32, key: &[u8]) -> Window {
    debug_assert_eq!(ranges.len(), entries.len());
    let j = ranges.partition_point(|r| r.start.as_slice() <= key);
    if j > 0 && ranges[j - 1].contains(key) {
        let (first, end) = entries[j - 1];
        return Window::Dead { first, end };
    }
    let lo = if j > 0 { entries[j - 1].1 } else { 0 };
    let hi = entries.get(j).map_or(len, |e| e.0);
    Window::Live {
        lo,
        hi,
        hi_dead: hi < len && first_live(entries, hi) != hi,
    }
}

/// The dead entry intervals of row `array` with row info `info`: as recorded, or found by
/// searching the row when the manifest that recorded it did not keep them (such a row has all
/// its pages: freeing needs the intervals).
pub(crate) fn dead_entries<'a>(
    info: &'a RowInfo,
    array: &PmArray,
    purpose: IoPurpose,
) -> Result<Cow<'a, [(u32, u32)]>> {
    if info.dead.len() == info.dead_entries.len() {
        return Ok(Cow::Borrowed(&info.dead_entries));
    }
    let bound = |key: Option<&[u8]>| match key {
        Some(k) => array.lower_bound(&lookup_key(k, MAX_SEQUENCE), 0, array.len(), purpose),
        None => Ok(array.len()),
    };
    info.dead
        .iter()
        .map(|r| Ok((bound(Some(&r.start))?, bound(r.end.as_deref())?)))
        .collect::<Result<Vec<_>>>()
        .map(Cow::Owned)
}

/// The first entry of `array` whose user key is `>= key` (`None`: the row's end), reading only
/// live entries; for a key in a dead range, the first entry of that range's interval (any
/// index in the interval would do for a caller that skips dead entries).
pub(crate) fn lower_bound_live(
    array: &PmArray,
    ranges: &[KeyRange],
    entries: &[(u32, u32)],
    key: Option<&[u8]>,
    purpose: IoPurpose,
) -> Result<u32> {
    let Some(key) = key else {
        return Ok(array.len());
    };
    match window(ranges, entries, array.len(), key) {
        Window::Dead { first, .. } => Ok(first),
        Window::Live { lo, hi, .. } => {
            array.lower_bound(&lookup_key(key, MAX_SEQUENCE), lo, hi, purpose)
        }
    }
}

/// Merges `intervals` (any order) into sorted, disjoint, non-empty intervals.
pub(crate) fn merge_intervals(mut intervals: Vec<(u32, u32)>) -> Vec<(u32, u32)> {
    intervals.retain(|(a, b)| a < b);
    intervals.sort_unstable();
    let mut out: Vec<(u32, u32)> = Vec::with_capacity(intervals.len());
    for (a, b) in intervals {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(a: &str, b: Option<&str>) -> KeyRange {
        KeyRange {
            start: a.as_bytes().to_vec(),
            end: b.map(|b| b.as_bytes().to_vec()),
        }
    }

    #[test]
    fn first_live_skips_adjacent_and_empty_intervals() {
        let skip = [(2, 4), (4, 6), (6, 6), (8, 9)];
        let got: Vec<u32> = (0..11).map(|i| first_live(&skip, i)).collect();
        assert_eq!(got, vec![0, 1, 6, 6, 6, 6, 6, 7, 9, 9, 10]);
        assert_eq!(first_live(&[], 5), 5);
    }

    #[test]
    fn windows_keep_between_dead_intervals() {
        // Keys "b".."d" dead (entries 3..7), "m".."p" dead holding no entry (at 12), "x".. dead
        // (entries 20..25 of 25).
        let ranges = [
            range("b", Some("d")),
            range("m", Some("p")),
            range("x", None),
        ];
        let entries = [(3, 7), (12, 12), (20, 25)];
        let w = |k: &str| window(&ranges, &entries, 25, k.as_bytes());
        assert_eq!(
            w("a"),
            Window::Live {
                lo: 0,
                hi: 3,
                hi_dead: true
            }
        );
        assert_eq!(w("c"), Window::Dead { first: 3, end: 7 });
        assert_eq!(
            w("d"),
            Window::Live {
                lo: 7,
                hi: 12,
                hi_dead: false
            }
        );
        assert_eq!(w("n"), Window::Dead { first: 12, end: 12 });
        assert_eq!(
            w("q"),
            Window::Live {
                lo: 12,
                hi: 20,
                hi_dead: true
            }
        );
        assert_eq!(w("zz"), Window::Dead { first: 20, end: 25 });
        assert_eq!(
            window(&[], &[], 9, b"k"),
            Window::Live {
                lo: 0,
                hi: 9,
                hi_dead: false
            }
        );
    }

    #[test]
    fn intervals_merge() {
        assert_eq!(
            merge_intervals(vec![(5, 9), (0, 2), (2, 3), (7, 12), (4, 4)]),
            vec![(0, 3), (5, 12)]
        );
    }
}
