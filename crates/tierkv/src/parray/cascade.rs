//! Skip-Array Tree floors: next pointers between sorted arrays, and the cascading search.
//!
//! A Skip-Array Tree (SAT) is a stack of [`PmArray`]s, `floors: &[Arc<PmArray>]`, indexed by
//! floor slot: slot 0 is the bottom (oldest) floor, a higher slot a newer one. Floor `f > 0` is
//! an array built for slot `f` (`floor_slot() == Some(f)`); floor 0 may also be a plain run
//! (`None`), which has no pointers.
//!
//! # Next pointers
//!
//! For an entry `e` of floor `f`: `next(e) = (g, lower_bound_g(e))` where `g` is the *highest*
//! floor below `f` whose *last* key is `>= e`; no pointer if there is none. Every floor `f > 0`
//! also has an implicit *virtual min* entry before index 0 whose pointer is `(f - 1, 0)`: the
//! paper's virtual `min` key (Fig. 5, non-overlapped case), made implicit so it is never stored
//! and never seen by a merge. Two consequences the search relies on:
//!
//! * floors strictly between `g` and `f` hold only keys `< e` (their last key is `< e`);
//! * pointers are monotone: for `a < b` in one floor, `floor(next(b)) <= floor(next(a))`, and
//!   when equal, `next(a).offset <= next(b).offset` (a floor whose last key is `>= b` has its
//!   last key `>= a`).
//!
//! [`PointerBuilder`] computes them for a new top floor by the paper's co-scan; the
//! [`cascade_get`] / [`cascade_seek`] descent follows them.
//!
//! # The descent (Algorithm 1 of the paper, restated on lower bounds)
//!
//! Start at the top floor `f` with range `[lo, hi] = [0, len(f)]`. At floor `f`:
//!
//! 1. `p` = the lower bound of the target in `[lo, hi)`, `hi` if none: a binary search over the
//!    half-open range whose answer may be `hi` itself. The range is built so that the floor's
//!    true lower bound lies in `[lo, hi]`, so `p` is the floor's lower bound.
//! 2. A get returns entry `p` if its user key is the target's (read with its checksum).
//! 3. `a` = entry `p - 1`, or the virtual min if `p == 0` (every key of `f` before `p` is `<`
//!    the target); `b` = entry `p`, or none if `p == len(f)`. If `a` has no pointer (floor 0's
//!    virtual min, or no lower floor reaches `a`), every lower floor ends below `a`: stop.
//! 4. The next floor is `g = floor(next(a))`. Since `a < target <= b`, the lower bound of the
//!    target in `g` is in `[next(a).offset, next(b).offset]` when `next(b)` is in floor `g`;
//!    otherwise (b's pointer goes lower, or b has none, or b is absent) floor `g`'s last key
//!    is `< b`, and the range is `[next(a).offset, len(g)]`. Floors strictly between `g` and
//!    `f` end below `a`: the target is past all their keys (their position is their `len`).
//!
//! Mapping to the paper's lines: lines 1-3 are the start and step 1 (the paper's `stop`, "the
//! last key not greater than the target", is `p` when entry `p` equals the target, lines 4-5,
//! and `p - 1 = a` otherwise). Lines 7-8 read `next(a)`. Lines 10-21 (the key at `next(a)` is
//! `< target`) are step 4: line 14 is the same-floor range `[next(a), next(b)]`, line 17 the
//! lower-`next(b)` range `[next(a), len(g)]`; line 20 (`next(b)` on a *higher* floor than
//! `next(a)`) cannot happen by the monotonicity above. Lines 22-33 (the key at `next(a)` is
//! `>= target`) search between the pointers of `stop - 1` and `stop`; here that case needs no
//! branch: the first key `>= a` in `g` is then also the first `>= target`, so the answer is
//! `next(a).offset` and the range of step 4 contains it (the paper's range collapses to one
//! index). We do not read the key at `next(a)` first (line 9): the binary search over
//! `[next(a), next(b)]` finds the same answer. The paper's corner cases ("if stop is at the
//! end / beginning of a floor") are `b` absent and `a` = virtual min.
//!
//! # Row chains (TriangleKV's cross-row hints)
//!
//! The same descent serves a *chain* of rows (Ding et al., "TriangleKV: Reducing Write Stalls
//! and Write Amplification in LSM-Tree Based KV Stores With Triangle Container in NVM", IEEE
//! TPDS 2022, section 3.4): `rows[0]` oldest, each later row an array built for slot 1 over the
//! row before it ([`PointerBuilder::over_row`]), its pointers naming floor 0, meaning *the row
//! it was built over*. A row's `fwd` hint of entry `e` is the lower bound of `e` in that row;
//! the builder stores no pointer when that row ends below `e` (the paper's `fwd = len`), and
//! the chain descent reads a missing pointer as `len` of the row below. Unlike a Skip-Array
//! Tree, a row's pointers never skip a row, so a missing pointer does not end the descent: the
//! rows below are searched from the window the last entry's pointer gives. The caller builds
//! the chain from rows whose hints point into their predecessor in it
//! ([`chain_get`], [`chain_seek`]).
//!
//! Thread-safety: the functions take shared floors; a [`PointerBuilder`] has one owner.
//!
//! Invariants: floors are checked to be stacked in slot order, every pointer followed must
//! name an existing floor and an index inside it with ranges that do not run backwards;
//! otherwise the SAT is `Corruption` (naming the array) rather than a wrong answer.

use super::live::{RowDead, Window};
use super::reader::PmArray;
use super::{IndexEntry, KeyHead, KeyValue, NextPtr, NO_FLOOR};
use crate::format::{compare_internal, user_key, TRAILER_LEN};
use crate::stats::IoPurpose;
use crate::{Error, Result};
use std::cmp::Ordering;
use std::sync::Arc;

/// How the descent reads next pointers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Links {
    /// A Skip-Array Tree: a pointer names a floor slot; no pointer ends the descent.
    Sat,
    /// A row chain: a pointer names the row below (floor byte 0); no pointer is that row's
    /// `len`; the bottom row ends the descent.
    Chain,
}

/// Checks `rows` is a row chain: every row above the bottom built for slot 1.
fn check_chain(rows: &[Arc<PmArray>]) -> Result<()> {
    for (f, a) in rows.iter().enumerate().skip(1) {
        if a.floor_slot() != Some(1) {
            return Err(Error::InvalidArgument(format!(
                "sorted array {} built for floor {:?} used as row {f} of a chain",
                a.path().display(),
                a.floor_slot()
            )));
        }
    }
    Ok(())
}

/// Checks `floors` is a SAT: floor `f > 0` built for slot `f`, floor 0 for slot 0 or none, at
/// most 255 floors.
fn check_floors(floors: &[Arc<PmArray>]) -> Result<()> {
    if floors.len() > NO_FLOOR as usize {
        return Err(Error::InvalidArgument(format!(
            "a Skip-Array Tree of {} floors (at most 255)",
            floors.len()
        )));
    }
    for (f, a) in floors.iter().enumerate() {
        let ok = match a.floor_slot() {
            Some(s) => s as usize == f,
            None => f == 0,
        };
        if !ok {
            return Err(Error::InvalidArgument(format!(
                "sorted array {} built for floor {:?} used as floor {f}",
                a.path().display(),
                a.floor_slot()
            )));
        }
    }
    Ok(())
}

/// Pointer `p` of an entry of floor `f` in the descent's terms: as stored in a SAT; in a
/// chain, floor byte 0 becomes the row below (`f - 1`) and no pointer that row's `len`.
fn link(
    floors: &[Arc<PmArray>],
    f: usize,
    p: Option<NextPtr>,
    links: Links,
) -> Result<Option<NextPtr>> {
    if links == Links::Sat {
        return Ok(p);
    }
    let below = f - 1;
    match p {
        None => Ok(Some(NextPtr {
            floor: below as u8,
            offset: floors[below].len(),
        })),
        Some(NextPtr { floor: 0, offset }) => Ok(Some(NextPtr {
            floor: below as u8,
            offset,
        })),
        Some(other) => Err(Error::corruption(
            floors[f].path().display().to_string(),
            format!(
                "row hint ({}, {}) names a floor other than the row below",
                other.floor, other.offset
            ),
        )),
    }
}

/// Checks that pointer `p` found in `from` names an existing entry of the SAT (in a chain,
/// also the end of the row: a hint may be `len`).
fn check_pointer(floors: &[Arc<PmArray>], from: &PmArray, p: NextPtr, links: Links) -> Result<()> {
    let end_ok = links == Links::Chain;
    match floors.get(p.floor as usize) {
        Some(g) if p.offset < g.len() || (end_ok && p.offset == g.len()) => Ok(()),
        _ => Err(Error::corruption(
            from.path().display().to_string(),
            format!(
                "next pointer ({}, {}) names no entry of the Skip-Array Tree",
                p.floor, p.offset
            ),
        )),
    }
}

/// Computes the next pointers of a new top floor, for its keys given in increasing order, by
/// the paper's co-scan ("Adding a new floor", Fig. 5): scan the old top floor forward from the
/// previous answer for the first entry `>=` the key; when the floor is exhausted, continue at
/// the floor and offset named by its last entry's pointer, and so on. Every entry of the old
/// floors is read at most once (48 bytes, plus its key and value once when its head cannot
/// decide a comparison), so the total reads are linear in the entries scanned.
pub(crate) struct PointerBuilder {
    floors: Vec<Arc<PmArray>>,
    purpose: IoPurpose,
    /// Built over one row of a chain: an exhausted row ends the scan (its own pointers name
    /// the row below it, which the new row does not point into).
    chain: bool,
    /// Over a row: its dead ranges and their entries, which the scan steps over without
    /// reading them (their data may be freed: `super::live`); and the first interval not yet
    /// passed.
    dead: RowDead,
    dead_next: usize,
    /// The scan position; `None` once every floor is exhausted (later keys get no pointer).
    cursor: Option<Cursor>,
    /// The previous key, to check the increasing order in debug builds.
    #[cfg(debug_assertions)]
    last_key: Vec<u8>,
}

/// A scan position and what is known of its entry.
struct Cursor {
    floor: usize,
    pos: u32,
    /// Entry `pos` once read.
    entry: Option<IndexEntry>,
    /// Entry `pos`'s internal key, checksum-verified, once a comparison needed it.
    key: Option<Vec<u8>>,
}

impl std::fmt::Debug for PointerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PointerBuilder")
            .field("floors", &self.floors.len())
            .field("cursor", &self.cursor.as_ref().map(|c| (c.floor, c.pos)))
            .finish_non_exhaustive()
    }
}

impl PointerBuilder {
    /// A builder for a new floor on top of `floors` (a SAT, maybe empty); the new floor's slot
    /// is `floors.len()`. `InvalidArgument` if `floors` is not a SAT or already has 255 floors.
    pub(crate) fn new(floors: Vec<Arc<PmArray>>, purpose: IoPurpose) -> Result<PointerBuilder> {
        check_floors(&floors)?;
        if floors.len() >= NO_FLOOR as usize {
            return Err(Error::InvalidArgument(
                "a Skip-Array Tree holds at most 255 floors".into(),
            ));
        }
        let cursor = floors.len().checked_sub(1).map(|top| Cursor {
            floor: top,
            pos: 0,
            entry: None,
            key: None,
        });
        Ok(PointerBuilder {
            floors,
            purpose,
            chain: false,
            dead: RowDead::default(),
            dead_next: 0,
            cursor,
            #[cfg(debug_assertions)]
            last_key: Vec::new(),
        })
    }

    /// A builder for a new row of a chain over `older`, the newest row so far (any array):
    /// the new row is built for slot 1 and each of its pointers is the lower bound of its key
    /// in `older` (floor 0), none past `older`'s last key (module doc, "Row chains").
    ///
    /// `dead` are `older`'s dead ranges and their entries: a key in a dead range gets the
    /// first entry of the range's interval (its exact lower bound lies somewhere in the
    /// interval, whose keys may no longer be read; a search never needs more: it reads a row
    /// below only where its key is live, see [`super::live`]).
    pub(crate) fn over_row(
        older: Arc<PmArray>,
        dead: RowDead,
        purpose: IoPurpose,
    ) -> PointerBuilder {
        PointerBuilder {
            floors: vec![older],
            purpose,
            chain: true,
            dead,
            dead_next: 0,
            cursor: Some(Cursor {
                floor: 0,
                pos: 0,
                entry: None,
                key: None,
            }),
            #[cfg(debug_assertions)]
            last_key: Vec::new(),
        }
    }

    #[cfg(test)]
    /// The slot of the floor being built.
    pub(crate) fn floor_slot(&self) -> u8 {
        self.floors.len() as u8
    }

    /// The next pointer of `ikey`, a key of the new floor. REQUIRES: keys are given in strictly
    /// increasing internal order.
    pub(crate) fn next_for(&mut self, ikey: &[u8]) -> Result<Option<NextPtr>> {
        if ikey.len() < TRAILER_LEN {
            return Err(Error::InvalidArgument(
                "pointer key shorter than an internal-key trailer".into(),
            ));
        }
        #[cfg(debug_assertions)]
        {
            debug_assert!(
                self.last_key.is_empty() || compare_internal(&self.last_key, ikey).is_lt(),
                "pointer keys must be strictly increasing"
            );
            self.last_key = ikey.to_vec();
        }
        let target = KeyHead::of(ikey);
        loop {
            let Some(c) = &mut self.cursor else {
                return Ok(None);
            };
            let floor = &self.floors[c.floor];
            let mut last: Option<IndexEntry> = None;
            while c.pos < floor.len() {
                let (ranges, entries) = &self.dead;
                while entries.get(self.dead_next).is_some_and(|d| d.1 <= c.pos) {
                    self.dead_next += 1;
                }
                if let Some(&(_, end)) = entries.get(self.dead_next).filter(|d| d.0 <= c.pos) {
                    // A dead interval: past it when the key is past its range, else here.
                    let past = ranges[self.dead_next]
                        .end
                        .as_deref()
                        .is_some_and(|b| user_key(ikey) >= b);
                    if !past {
                        return Ok(Some(NextPtr {
                            floor: c.floor as u8,
                            offset: c.pos,
                        }));
                    }
                    c.pos = end;
                    c.entry = None;
                    c.key = None;
                    continue;
                }
                let e = match c.entry {
                    Some(e) => e,
                    None => *c.entry.insert(floor.entry(c.pos, self.purpose)?),
                };
                let o = match KeyHead::decide(&e.key_head(), &target) {
                    Some(o) => o,
                    None => {
                        if c.key.is_none() {
                            c.key = Some(floor.read_data(c.pos, &e, self.purpose)?.0);
                        }
                        compare_internal(c.key.as_deref().unwrap_or_default(), ikey)
                    }
                };
                if o != Ordering::Less {
                    return Ok(Some(NextPtr {
                        floor: c.floor as u8,
                        offset: c.pos,
                    }));
                }
                last = Some(e);
                c.pos += 1;
                c.entry = None;
                c.key = None;
            }
            if self.chain {
                // The row below ends below `ikey`: no pointer, for this key and every later one.
                self.cursor = None;
                return Ok(None);
            }
            // Floor exhausted: every floor between the one its last entry points to and this
            // one ends below that entry, hence below `ikey`.
            let last = match last {
                Some(e) => e,
                None => floor.entry(floor.len() - 1, self.purpose)?,
            };
            self.cursor = match last.next {
                Some(p) => {
                    check_pointer(&self.floors, floor, p, Links::Sat)?;
                    Some(Cursor {
                        floor: p.floor as usize,
                        pos: p.offset,
                        entry: None,
                        key: None,
                    })
                }
                None => None,
            };
        }
    }
}

/// One floor visited by the descent, for tests that follow its path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Step {
    /// The floor slot.
    pub floor: usize,
    /// The searched range: the lower bound was looked for in `[lo, hi)`, answer in `[lo, hi]`.
    pub lo: u32,
    /// See `lo`.
    pub hi: u32,
    /// The floor's lower bound of the target.
    pub index: u32,
}

/// The newest entry of the SAT for `user_key` visible at the lookup's sequence: the first entry
/// `>= lookup_ikey` in the highest floor where that entry's user key is `user_key`, as
/// `(internal key, value)` verified by its checksum (a deletion is returned as found; the
/// caller interprets it). REQUIRES: `lookup_ikey` is `lookup_key(user_key, snapshot)`.
pub(crate) fn cascade_get(
    floors: &[Arc<PmArray>],
    user_key: &[u8],
    lookup_ikey: &[u8],
    purpose: IoPurpose,
) -> Result<Option<KeyValue>> {
    get_traced(
        floors,
        None,
        user_key,
        lookup_ikey,
        purpose,
        Links::Sat,
        &mut |_| {},
    )
}

/// For every floor, the index of its first entry `>= target_ikey` (`len` if none), computed in
/// one descent, with that entry's key and value when the floor was searched (read once here,
/// so a cursor placed there need not read it again): floors the descent skips end below the
/// target, so their position is `len`.
pub(crate) fn cascade_seek(
    floors: &[Arc<PmArray>],
    target_ikey: &[u8],
    purpose: IoPurpose,
) -> Result<Vec<(u32, Option<KeyValue>)>> {
    seek(floors, None, target_ikey, purpose, Links::Sat)
}

/// [`cascade_get`] over a row chain (`rows[0]` oldest; module doc, "Row chains"): the newest
/// version of `user_key` visible at the lookup's sequence in the newest row that holds one.
pub(crate) fn chain_get(
    rows: &[Arc<PmArray>],
    windows: &[Window],
    user_key: &[u8],
    lookup_ikey: &[u8],
    purpose: IoPurpose,
) -> Result<Option<KeyValue>> {
    get_traced(
        rows,
        Some(windows),
        user_key,
        lookup_ikey,
        purpose,
        Links::Chain,
        &mut |_| {},
    )
}

/// [`cascade_seek`] over a row chain: every row's first entry `>= target_ikey` (`len` if none)
/// with its key and value, in one descent. `windows` (one per row, for the target's user key:
/// [`super::live::window`]) keep the descent off dead entries: in a row where the key is dead
/// the position is the end of its dead interval, and a position on a dead entry comes without
/// its key and value (the caller skips dead entries).
pub(crate) fn chain_seek(
    rows: &[Arc<PmArray>],
    windows: &[Window],
    target_ikey: &[u8],
    purpose: IoPurpose,
) -> Result<Vec<(u32, Option<KeyValue>)>> {
    seek(rows, Some(windows), target_ikey, purpose, Links::Chain)
}

/// A get by the descent, `step` seeing every floor it searched.
fn get_traced(
    floors: &[Arc<PmArray>],
    windows: Option<&[Window]>,
    user_key: &[u8],
    lookup_ikey: &[u8],
    purpose: IoPurpose,
    links: Links,
    step: &mut dyn FnMut(Step),
) -> Result<Option<KeyValue>> {
    if lookup_ikey.len() < TRAILER_LEN || crate::format::user_key(lookup_ikey) != user_key {
        return Err(Error::InvalidArgument(
            "lookup key is not an internal key of the user key".into(),
        ));
    }
    descend(
        floors,
        windows,
        lookup_ikey,
        Some(user_key),
        purpose,
        links,
        &mut |s, _| step(s),
    )
}

/// Every floor's position for `target_ikey` by one descent (floors it skips: `len`).
fn seek(
    floors: &[Arc<PmArray>],
    windows: Option<&[Window]>,
    target_ikey: &[u8],
    purpose: IoPurpose,
    links: Links,
) -> Result<Vec<(u32, Option<KeyValue>)>> {
    let mut positions: Vec<(u32, Option<KeyValue>)> =
        floors.iter().map(|f| (f.len(), None)).collect();
    descend(
        floors,
        windows,
        target_ikey,
        None,
        purpose,
        links,
        &mut |s, kv| {
            positions[s.floor] = (s.index, kv);
        },
    )?;
    Ok(positions)
}

/// [`cascade_get`] that also reports every floor it visited.
#[cfg(test)]
pub(crate) fn cascade_get_traced(
    floors: &[Arc<PmArray>],
    user_key: &[u8],
    lookup_ikey: &[u8],
    purpose: IoPurpose,
) -> Result<(Option<KeyValue>, Vec<Step>)> {
    let mut steps = Vec::new();
    let r = get_traced(
        floors,
        None,
        user_key,
        lookup_ikey,
        purpose,
        Links::Sat,
        &mut |s| steps.push(s),
    )?;
    Ok((r, steps))
}

/// [`chain_get`] that also reports every row it visited.
#[cfg(test)]
pub(crate) fn chain_get_traced(
    rows: &[Arc<PmArray>],
    windows: &[Window],
    user_key: &[u8],
    lookup_ikey: &[u8],
    purpose: IoPurpose,
) -> Result<(Option<KeyValue>, Vec<Step>)> {
    let mut steps = Vec::new();
    let r = get_traced(
        rows,
        Some(windows),
        user_key,
        lookup_ikey,
        purpose,
        Links::Chain,
        &mut |s| steps.push(s),
    )?;
    Ok((r, steps))
}

/// The descent of the module doc. With `want`, returns entry `p` of the first floor where its
/// user key is `want`; `visit` sees every floor searched, and without `want` (a seek) also
/// entry `p`'s key and value (`None` past the end, or when entry `p` is dead).
///
/// `windows` (row chains only: one per row, for the target's user key) keep every read off
/// dead entries: in a row where the key is live the search runs inside the intersection of
/// the hint window and the live window (both bound the answer); in a row where it is dead
/// nothing is searched, the position is the end of the dead interval, and the rows below are
/// bracketed by the live entries around that interval.
fn descend(
    floors: &[Arc<PmArray>],
    windows: Option<&[Window]>,
    target: &[u8],
    want: Option<&[u8]>,
    purpose: IoPurpose,
    links: Links,
    visit: &mut dyn FnMut(Step, Option<KeyValue>),
) -> Result<Option<KeyValue>> {
    match links {
        Links::Sat => check_floors(floors)?,
        Links::Chain => check_chain(floors)?,
    }
    if windows.is_some_and(|w| w.len() != floors.len()) {
        return Err(Error::InvalidArgument(
            "a chain descent needs one window per row".into(),
        ));
    }
    let Some(top) = floors.len().checked_sub(1) else {
        return Ok(None);
    };
    let (mut f, mut lo, mut hi) = (top, 0u32, floors[top].len());
    loop {
        let floor = &floors[f];
        // `p`: the position reported; entries `below_at - 1` and `p` bracket the target (the
        // search read them, `below` and `found_at`, unless at the ends of its range).
        let (p, below_at, below, found_at, at_data, p_dead) = match windows.map(|w| w[f]) {
            Some(Window::Dead { first, end }) => (end, first, None, None, None, true),
            window => {
                let (wlo, whi, hi_dead) = match window {
                    Some(Window::Live { lo, hi, hi_dead }) => (lo, hi, hi_dead),
                    _ => (0, floor.len(), false),
                };
                let (slo, shi) = (lo.max(wlo), hi.min(whi));
                if slo > shi {
                    return Err(Error::corruption(
                        floor.path().display().to_string(),
                        format!(
                            "hint window {lo}..{hi} misses the live entries {wlo}..{whi} of \
                             the target"
                        ),
                    ));
                }
                let found = floor.locate(target, slo, shi, purpose)?;
                let p = found.index;
                let dead = hi_dead && p == whi;
                (p, p, found.below, found.at, found.at_data, dead)
            }
        };
        // b = entry p (none past the end); the search read it unless p == its range's end.
        let b = match (found_at, p < floor.len()) {
            (Some(e), _) => Some(e),
            (None, true) => Some(floor.entry(p, purpose)?),
            (None, false) => None,
        };
        let step = Step {
            floor: f,
            lo,
            hi,
            index: p,
        };
        match (want, &b) {
            (Some(uk), Some(be)) if !p_dead => {
                visit(step, None);
                if let Some(kv) = matching(floor, p, be, at_data, uk, purpose)? {
                    return Ok(Some(kv));
                }
            }
            (None, Some(be)) if !p_dead => {
                let kv = match at_data {
                    Some(kv) => kv,
                    None => floor.read_data(p, be, purpose)?,
                };
                visit(step, Some(kv));
            }
            _ => visit(step, None),
        }
        if links == Links::Chain && f == 0 {
            // The bottom row: nothing below it in the chain.
            return Ok(None);
        }
        // a = entry below_at - 1 (the search read it unless below_at == lo), or the virtual
        // min.
        let next_a = match (below_at.checked_sub(1), below) {
            (Some(_), Some(e)) => link(floors, f, e.next, links)?,
            (Some(i), None) => link(floors, f, floor.entry(i, purpose)?.next, links)?,
            (None, _) => f.checked_sub(1).map(|g| NextPtr {
                floor: g as u8,
                offset: 0,
            }),
        };
        let Some(na) = next_a else {
            return Ok(None);
        };
        check_pointer(floors, floor, na, links)?;
        let g = na.floor as usize;
        let g_len = floors[g].len();
        // Exact range handling: the answer in g lies in [na.offset, new_hi], which is what
        // a lower-bound search of the half-open [na.offset, new_hi) returns (new_hi when no
        // entry before it is >= the target).
        let next_b = match &b {
            Some(e) => link(floors, f, e.next, links)?,
            None => None,
        };
        let new_hi = match next_b {
            Some(nb) if nb.floor == na.floor => {
                check_pointer(floors, floor, nb, links)?;
                nb.offset
            }
            _ => g_len,
        };
        if na.offset > new_hi {
            return Err(Error::corruption(
                floor.path().display().to_string(),
                format!(
                    "next pointers of entries {} and {p} run backwards in floor {g}",
                    below_at as i64 - 1
                ),
            ));
        }
        (f, lo, hi) = (g, na.offset, new_hi);
    }
}

/// Entry `p` (read as `e`) if its user key is `want`, read with its checksum (`kv` when the
/// search already read it so).
fn matching(
    floor: &PmArray,
    p: u32,
    e: &IndexEntry,
    kv: Option<KeyValue>,
    want: &[u8],
    purpose: IoPurpose,
) -> Result<Option<KeyValue>> {
    // The head rules most entries out without the data area.
    if e.user_key_len as usize != want.len() || e.head != super::pad_head(want) {
        return Ok(None);
    }
    let kv = match kv {
        Some(kv) => kv,
        None => floor.read_data(p, e, purpose)?,
    };
    Ok((user_key(&kv.0) == want).then_some(kv))
}

/// Checks every next pointer of a Skip-Array Tree's floors (bottom first) against its
/// definition (module doc): entry `e` of floor `f` points at the lower bound of `e` in the
/// highest floor below `f` whose last key is `>= e`, or nowhere if there is none. A set none of
/// whose floors carries a pointer (a guard) is not a Skip-Array Tree: nothing to check. Returns
/// the number of entries checked; a wrong pointer is `Corruption` naming the entry.
pub(crate) fn verify_pointers(floors: &[Arc<PmArray>], purpose: IoPurpose) -> Result<u64> {
    if !floors.iter().any(|a| a.has_pointers()) {
        return Ok(0);
    }
    let lasts = floors
        .iter()
        .map(|a| Ok(a.read(a.len() - 1, purpose)?.0))
        .collect::<Result<Vec<Vec<u8>>>>()?;
    let mut checked = 0;
    for (f, array) in floors.iter().enumerate().skip(1) {
        for i in 0..array.len() {
            let entry = array.entry(i, purpose)?;
            let (key, _) = array.read(i, purpose)?;
            let expected = match (0..f)
                .rev()
                .find(|&g| compare_internal(&lasts[g], &key).is_ge())
            {
                Some(g) => Some(NextPtr {
                    floor: g as u8,
                    offset: floors[g].lower_bound(&key, 0, floors[g].len(), purpose)?,
                }),
                None => None,
            };
            if entry.next != expected {
                return Err(Error::corruption(
                    array.entry_location(i),
                    format!(
                        "next pointer {:?}, the floors below say {:?}",
                        entry.next, expected
                    ),
                ));
            }
            checked += 1;
        }
    }
    Ok(checked)
}

/// Checks every hint of row `newer` against the row it was built over, `older` (module doc,
/// "Row chains"): entry `e` points at the lower bound of `e` in `older`, or nowhere when that
/// is `older`'s end. Returns the number of entries checked; a wrong hint is `Corruption`
/// naming the entry. `older_dead` and `newer_dead` are the rows' dead ranges with their entry
/// intervals: a dead entry of `newer` is not read, and for a key in a dead range of `older`
/// any entry of that range's interval (or its end) is accepted (the exact lower bound there
/// can no longer be read; [`PointerBuilder::over_row`]).
pub(crate) fn verify_row_hints(
    older: &PmArray,
    older_dead: &RowDead,
    newer: &PmArray,
    newer_dead: &[(u32, u32)],
    purpose: IoPurpose,
) -> Result<u64> {
    let (ranges, entries) = older_dead;
    let mut checked = 0;
    for i in 0..newer.len() {
        if super::live::first_live(newer_dead, i) != i {
            continue;
        }
        let entry = newer.entry(i, purpose)?;
        let (key, _) = newer.read(i, purpose)?;
        let ok = match super::live::window(ranges, entries, older.len(), user_key(&key)) {
            Window::Live { lo, hi, .. } => {
                let at = older.lower_bound(&key, lo, hi, purpose)?;
                let expected = (at < older.len()).then_some(NextPtr {
                    floor: 0,
                    offset: at,
                });
                entry.next == expected
            }
            Window::Dead { first, end } => match entry.next {
                Some(p) => p.floor == 0 && (first..=end).contains(&p.offset),
                None => end == older.len(),
            },
        };
        if !ok {
            return Err(Error::corruption(
                newer.entry_location(i),
                format!("row hint {:?} disagrees with the row below", entry.next),
            ));
        }
        checked += 1;
    }
    Ok(checked)
}
