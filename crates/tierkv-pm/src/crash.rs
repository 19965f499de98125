//! The crash-simulation backend: DRAM pool memory plus a shadow durable image.
//!
//! **Purpose.** Models what a power failure could leave in PM, per 64-byte cache line:
//!
//! * a line stored through `write`/`store` since its last write-back is **dirty** (it may or
//!   may not reach PM: caches evict whenever they like);
//! * `flush` captures a dirty line's content as **pending** (its write-back is in flight);
//!   `write_nt` makes the 8-byte words it streams pending directly (its unaligned head and tail
//!   are stored and flushed like `write` + `flush`; words that store what a clean line already
//!   holds, as when a fresh chunk is zeroed, change no image and are not recorded);
//! * `fence` applies every pending capture to the **shadow image** (durable) and clears it.
//!
//! The lines a range touches are those of [`crate::persist::cache_lines`], the function the
//! hardware write-back uses too.
//!
//! Crash images: `Strict` = the shadow image; `AllPending` = shadow + pending captures + the
//! current content of dirty lines; `Torn(seed)` = shadow where every 8-byte word of a pending or
//! dirty line is independently one of the values PM could hold for it (the durable value, the
//! pending capture, the current value), chosen by a seeded SplitMix64 (deterministic per seed);
//! `TornLines(seed)` = the same choice made once per line, for all its words together (a line is
//! never mixed). Every value that exists can be drawn, the durable one included.
//!
//! With `check_stores`, each fence verifies the invariant "every line whose memory differs from
//! the shadow image is dirty or pending" (checked after applying pending lines: memory differs
//! only on dirty lines). A violation means a store bypassed the bookkeeping, which only a bug in
//! this crate can cause with the safe API, and panics.
//!
//! **Thread safety.** One mutex serialises every mutation of the pool memory together with its
//! bookkeeping, so the bookkeeping always matches the memory and a check or image taken under the
//! lock sees no concurrent store. Unlocked readers (`PmPool::read`) only read.
//!
//! **Durability.** Exactly the shadow image is durable; see above for what each call moves into
//! it (only `fence` does).

use crate::mapping::AlignedBuf;
use crate::options::CrashImage;
use crate::persist::{cache_lines, CACHE_LINE};
use parking_lot::{Mutex, MutexGuard};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

const LINE: usize = CACHE_LINE as usize;

/// A captured, not yet fenced line: `mask` bit `w` = word `w` of `data` is pending.
#[derive(Clone, Copy)]
struct Pending {
    data: [u8; LINE],
    mask: u8,
}

struct State {
    shadow: Vec<u8>,
    dirty: BTreeSet<u64>,
    pending: BTreeMap<u64, Pending>,
}

pub(crate) struct CrashSim {
    buf: AlignedBuf,
    len: usize,
    check_stores: bool,
    state: Mutex<State>,
}

impl CrashSim {
    /// A simulation over `buf` (`shadow.len()` bytes) whose durable image is `shadow`; the
    /// caller makes both equal (or lets a later fence reconcile them).
    pub fn new(buf: AlignedBuf, shadow: Vec<u8>, check_stores: bool) -> Self {
        CrashSim {
            buf,
            len: shadow.len(),
            check_stores,
            state: Mutex::new(State {
                shadow,
                dirty: BTreeSet::new(),
                pending: BTreeMap::new(),
            }),
        }
    }

    /// The pool memory as a slice. Taking the guard proves the state lock is held, and every
    /// store into crash-sim memory happens under that lock, so the memory cannot change while the
    /// slice lives.
    fn memory<'a>(&'a self, _locked: &'a MutexGuard<'_, State>) -> &'a [u8] {
        // SAFETY: `buf` is a live allocation of `len` bytes owned by `self`; every writer of
        // crash-sim memory holds `state`'s lock (which the caller holds, witnessed by the guard),
        // so no mutation happens while the shared slice exists (unlocked readers only read).
        unsafe { std::slice::from_raw_parts(self.buf.base(), self.len) }
    }

    fn line_of(mem: &[u8], line: u64) -> [u8; LINE] {
        let at = line as usize * LINE;
        mem[at..at + LINE].try_into().unwrap()
    }

    /// Captures the current content of the dirty lines in `lines` as pending (write-back).
    fn capture(&self, st: &mut MutexGuard<'_, State>, lines: Range<u64>) {
        let to_flush: Vec<u64> = st.dirty.range(lines).copied().collect();
        for line in to_flush {
            let data = Self::line_of(self.memory(st), line);
            st.dirty.remove(&line);
            st.pending.insert(line, Pending { data, mask: 0xff });
        }
    }

    /// Copies `data` to `offset` (in bounds) while the state lock is held (witnessed by `_st`).
    fn copy_in(&self, _st: &MutexGuard<'_, State>, offset: u64, data: &[u8]) {
        // SAFETY: `[offset, offset + data.len())` is inside the buffer (checked by the pool);
        // the caller holds the state lock, so no other store and no locked reader runs
        // concurrently; `data` cannot alias the buffer (the pool never hands out references
        // into it).
        unsafe {
            std::ptr::copy_nonoverlapping(
                data.as_ptr(),
                self.buf.base().add(offset as usize),
                data.len(),
            )
        };
    }

    /// Stores `data` at `offset` (bounds checked by the caller) and marks its lines dirty.
    pub fn write(&self, offset: u64, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        let mut st = self.state.lock();
        self.copy_in(&st, offset, data);
        st.dirty.extend(cache_lines(offset, data.len() as u64));
    }

    /// Non-temporal copy: aligned words become pending directly; the unaligned head and tail are
    /// stored and written back (as the hardware path does).
    pub fn write_nt(&self, offset: u64, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        let end = offset + data.len() as u64;
        let mid_start = offset.next_multiple_of(8).min(end);
        let mid_end = (end / 8 * 8).max(mid_start);
        let mut st = self.state.lock();
        self.copy_in(&st, offset, data);
        if mid_start > offset {
            let lines = cache_lines(offset, mid_start - offset);
            st.dirty.extend(lines.clone());
            self.capture(&mut st, lines);
        }
        if end > mid_end {
            let lines = cache_lines(mid_end, end - mid_end);
            st.dirty.extend(lines.clone());
            self.capture(&mut st, lines);
        }
        // The aligned words, one line at a time: each becomes pending over the line's durable
        // content (or over what is already pending for it).
        let mut word = mid_start;
        while word < mid_end {
            let line = word / CACHE_LINE;
            let line_start = line * CACHE_LINE;
            let stop = (line_start + CACHE_LINE).min(mid_end);
            let (w0, w1) = (
                ((word - line_start) / 8) as usize,
                ((stop - line_start) / 8) as usize,
            );
            let current = Self::line_of(self.memory(&st), line);
            let state = &mut *st;
            let (a, b) = (w0 * 8, w1 * 8);
            let at = line_start as usize;
            if current[a..b] == state.shadow[at + a..at + b]
                && !state.dirty.contains(&line)
                && !state.pending.contains_key(&line)
            {
                // The line was clean (memory equal to the durable image) and these words store
                // what it already holds (zeroing a fresh chunk): no image can tell.
                word = stop;
                continue;
            }
            let p = state.pending.entry(line).or_insert_with(|| Pending {
                data: Self::line_of(&state.shadow, line),
                mask: 0,
            });
            p.data[a..b].copy_from_slice(&current[a..b]);
            // Bits w0..w1 (w1 <= 8, so the shift fits in 16 bits).
            p.mask |= ((1u16 << w1) - (1u16 << w0)) as u8;
            word = stop;
        }
    }

    /// Atomic Release store of `value` at the 8-aligned `offset` (checked by the caller); marks
    /// the line dirty.
    pub fn store_u64(&self, offset: u64, value: u64) {
        let mut st = self.state.lock();
        // SAFETY: `offset` is 8-aligned and `offset + 8 <= len` (checked by the pool) and the
        // buffer base is 64-aligned, so the pointer is valid and aligned for `AtomicU64` for the
        // buffer's lifetime; accesses to this word by other threads are atomic (`load_u64`) or
        // serialised by the lock we hold.
        unsafe {
            AtomicU64::from_ptr(self.buf.base().add(offset as usize).cast::<u64>())
                .store(value, Ordering::Release)
        };
        st.dirty.insert(offset / CACHE_LINE);
    }

    /// Write-back of the lines touched by `[offset, offset + len)` (in bounds).
    pub fn flush(&self, offset: u64, len: u64) {
        if len == 0 {
            return;
        }
        let mut st = self.state.lock();
        self.capture(&mut st, cache_lines(offset, len));
    }

    /// Applies every pending line to the shadow image, then (with `check_stores`) verifies that
    /// memory differs from the shadow only on dirty lines.
    pub fn fence(&self) {
        let mut st = self.state.lock();
        let pending = std::mem::take(&mut st.pending);
        for (line, p) in pending {
            let at = line as usize * LINE;
            for w in 0..8 {
                if p.mask & (1 << w) != 0 {
                    st.shadow[at + w * 8..at + w * 8 + 8]
                        .copy_from_slice(&p.data[w * 8..w * 8 + 8]);
                }
            }
        }
        if self.check_stores {
            let mem = self.memory(&st);
            let mut offenders = Vec::new();
            const BLOCK: usize = 4096;
            for (b, (m, s)) in mem.chunks(BLOCK).zip(st.shadow.chunks(BLOCK)).enumerate() {
                if m == s {
                    continue;
                }
                for (l, (ml, sl)) in m.chunks(LINE).zip(s.chunks(LINE)).enumerate() {
                    let line = (b * BLOCK / LINE + l) as u64;
                    if ml != sl && !st.dirty.contains(&line) {
                        offenders.push(line * CACHE_LINE);
                    }
                }
            }
            if !offenders.is_empty() {
                drop(st);
                panic!(
                    "tierkv-pm crash simulation (check_stores): the cache lines at offsets {:?} \
                     differ from the durable image but were never stored through the PmPool \
                     API (a store bypassed the crash-sim bookkeeping: a bug in tierkv-pm)",
                    &offenders[..offenders.len().min(16)]
                );
            }
        }
    }

    /// A crash image as of now.
    pub fn image(&self, kind: CrashImage) -> Vec<u8> {
        let st = self.state.lock();
        let mut img = st.shadow.clone();
        match kind {
            CrashImage::Strict => {}
            CrashImage::AllPending => {
                for (&line, p) in &st.pending {
                    let at = line as usize * LINE;
                    for w in 0..8 {
                        if p.mask & (1 << w) != 0 {
                            img[at + w * 8..at + w * 8 + 8]
                                .copy_from_slice(&p.data[w * 8..w * 8 + 8]);
                        }
                    }
                }
                let mem = self.memory(&st);
                for &line in &st.dirty {
                    let at = line as usize * LINE;
                    img[at..at + LINE].copy_from_slice(&mem[at..at + LINE]);
                }
            }
            CrashImage::Torn(seed) | CrashImage::TornLines(seed) => {
                let whole_lines = matches!(kind, CrashImage::TornLines(_));
                let mem = self.memory(&st);
                let mut rng = SplitMix64(seed);
                let lines: BTreeSet<u64> =
                    st.pending.keys().chain(st.dirty.iter()).copied().collect();
                for line in lines {
                    let at = line as usize * LINE;
                    let pending = st.pending.get(&line);
                    let dirty = st.dirty.contains(&line);
                    if whole_lines {
                        // 0 = the durable line, 1 = the written-back (pending) version, 2 = the
                        // version in memory (dirty); only versions that exist are drawn.
                        let versions: Vec<u8> = [true, pending.is_some(), dirty]
                            .iter()
                            .zip(0u8..)
                            .filter(|(has, _)| **has)
                            .map(|(_, v)| v)
                            .collect();
                        match versions[(rng.next() % versions.len() as u64) as usize] {
                            1 => {
                                let p = pending.expect("drawn only when pending");
                                for w in (0..8).filter(|w| p.mask & (1 << w) != 0) {
                                    img[at + w * 8..at + w * 8 + 8]
                                        .copy_from_slice(&p.data[w * 8..w * 8 + 8]);
                                }
                            }
                            2 => img[at..at + LINE].copy_from_slice(&mem[at..at + LINE]),
                            _ => {}
                        }
                        continue;
                    }
                    for w in 0..8 {
                        let r = at + w * 8..at + w * 8 + 8;
                        let mut candidates: [Option<&[u8]>; 2] = [None, None];
                        if let Some(p) = pending.filter(|p| p.mask & (1 << w) != 0) {
                            candidates[0] = Some(&p.data[w * 8..w * 8 + 8]);
                        }
                        if dirty {
                            candidates[1] = Some(&mem[r.clone()]);
                        }
                        let n = candidates.iter().flatten().count() as u64;
                        if n == 0 {
                            continue;
                        }
                        // 0 = the durable (old) value, k >= 1 = the k-th newer candidate.
                        let pick = rng.next() % (n + 1);
                        if pick > 0 {
                            let v = candidates.iter().flatten().nth(pick as usize - 1).unwrap();
                            img[r].copy_from_slice(v);
                        }
                    }
                }
            }
        }
        img
    }
}

/// SplitMix64: a tiny, stable, seedable generator (crash images must not change with the
/// `rand` crate's version).
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}
