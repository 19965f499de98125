//! LAB-DB's hot-key buffer (Kim et al., "LAB-DB", ACM TOS 2024, section 3.3): keys updated
//! often get a **slot** in PM holding their value, updated in place; the L0 tree's entry for
//! such a key names the slot (`Vaddr::Hot`) instead of a record in a value array on SSD, so its
//! reads are PM reads and the value arrays it no longer references are freed sooner.
//!
//! # Which keys are hot
//!
//! Every key a flush writes into the mutable tree is counted in a count-min sketch (4 rows of
//! 8-bit counters, all halved every `16 x width` counts, so the counts follow the recent
//! updates). A key whose estimate reaches `labdb.hot_threshold` gets a slot while one is free
//! (or the buffer can grow, up to `labdb.hot_buffer_bytes`); a key with a slot keeps it while
//! a tree entry or a held version names it.
//!
//! # Where the value is written (a deviation from the paper)
//!
//! The paper writes a hot key's update into its slot on the write path, instead of the log.
//! Here the write path is unchanged (every write goes through the WAL buffer into the
//! memtable's value array) and the **flush** writes the key's newest version into its slot,
//! then points the tree entry at the slot. So the slot never holds a version that is not
//! already durable in the log, only the flush thread writes slots, and no acknowledgement or
//! log record depends on a slot.
//!
//! # Slots, halves and the invariant
//!
//! A slot is `labdb.hot_slot_bytes`: two halves, each `{crc, key length, type, sequence, value
//! length, key, value}`; the crc covers the slot's number and the half's index too, so a half
//! read from another slot, or torn, fails its check. A tree entry (or a held version) names ONE
//! half and the low 14 bits of its version's sequence number (`Vaddr::Hot`), and each half
//! counts the entries and held versions naming it. A flush writes only a half nothing names
//! (the older one when both are free), persists it, then points the tree entry at it: a crash
//! at any point leaves the half the tree named intact, and a snapshot that holds a replaced
//! version holds its half. With both halves named (one by each tree, or by a held version), the
//! key's version goes to the tree as an ordinary value address for that flush. A half an entry
//! or held version stops naming (a flush replacing it, a compacted chunk's entries removed, a
//! held version forgotten) stays named until the readers of the versions live then are gone
//! and the reads of the trees in progress then have ended (LAB-DB's deferred path), since a
//! reader may have read the entry and not yet the half.
//!
//! # Space
//!
//! The buffer is made of segment files `hot-NNNNNN-<slot bytes>x<slots>` in the pool's `PmFs`,
//! each created whole (zeroed) before any of its slots is used; a segment shorter than its
//! name says at open is one a crash cut short, never used, and is deleted. The geometry is in
//! the names, so an open with other slot or buffer sizes reads the buffer as it was written
//! (and with `labdb.hot_buffer_bytes = 0` takes no new slot but reads the existing ones). A slot's references (tree entries and held
//! versions that name it) are counted; one left with none is freed through LAB-DB's deferred
//! path (after every reader of an older version). At open the references are counted again
//! from the trees, and a slot a tree names must hold a valid half of that key (else corruption).
//!
//! Format: `docs/FORMATS.md`, "LAB-DB hot-key buffer" (and the value address).

use crate::format::{ValueType, MAX_SEQUENCE};
use crate::fs::{FileSystem, PmFs, PmWords};
use crate::labdb::vaddr::{Vaddr, ValueRecord, HOT_TAG};
use crate::options::LabOptions;
use crate::util::crc::{mask, unmask};
use crate::{Error, Result};
use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Bytes of a half's header: masked crc, key length, type, flags, sequence, value length.
pub(crate) const HALF_HEADER: usize = 24;
/// The part of the pool's chunks the hot-key buffer always leaves free for tables (the L0
/// trees' leaves, the value data): it takes a new segment only while more would stay free.
const KEEP_FREE_DIVISOR: u64 = 4;
const SKETCH_ROWS: usize = 4;
const SKETCH_WIDTH: usize = 1 << 14;

/// The file name of segment `k` of slots of `slot_bytes`, `per_segment` slots each: the
/// geometry is in the name, so a buffer is read as it was written whatever the options of a
/// later open say.
fn segment_name(dir: &Path, k: u64, slot_bytes: u64, per_segment: u64) -> PathBuf {
    dir.join(format!("hot-{k:06}-{slot_bytes}x{per_segment}"))
}

/// The number and geometry (slot bytes, slots) of a segment file's name, if it is one.
fn parse_segment(name: &str) -> Option<(u64, u64, u64)> {
    let (k, geometry) = name.strip_prefix("hot-")?.split_once('-')?;
    let (slot_bytes, per_segment) = geometry.split_once('x')?;
    let (k, slot_bytes, per_segment) = (
        k.parse().ok()?,
        slot_bytes.parse().ok()?,
        per_segment.parse().ok()?,
    );
    (slot_bytes >= 2 * HALF_HEADER as u64 && per_segment > 0).then_some((
        k,
        slot_bytes,
        per_segment,
    ))
}

/// One valid half as read: its key and version.
#[derive(Clone, Debug, PartialEq, Eq)]
struct HalfRead {
    key: Vec<u8>,
    seq: u64,
    vtype: ValueType,
    value: Vec<u8>,
}

fn half_crc(slot: u64, half: usize, head: &[u8], key: &[u8], value: &[u8]) -> u32 {
    let mut c = crc32c::crc32c(&slot.to_le_bytes());
    c = crc32c::crc32c_append(c, &[half as u8]);
    c = crc32c::crc32c_append(c, &head[4..HALF_HEADER]);
    c = crc32c::crc32c_append(c, key);
    crc32c::crc32c_append(c, value)
}

/// The bytes of half `half` of slot `slot` holding `(key, seq, vtype, value)`.
fn encode_half(
    slot: u64,
    half: usize,
    key: &[u8],
    seq: u64,
    vtype: ValueType,
    value: &[u8],
) -> Vec<u8> {
    let mut b = vec![0u8; HALF_HEADER];
    b[4..6].copy_from_slice(&(key.len() as u16).to_le_bytes());
    b[6] = vtype as u8;
    b[8..16].copy_from_slice(&seq.to_le_bytes());
    b[16..20].copy_from_slice(&(value.len() as u32).to_le_bytes());
    let crc = half_crc(slot, half, &b, key, value);
    b[0..4].copy_from_slice(&mask(crc).to_le_bytes());
    b.extend_from_slice(key);
    b.extend_from_slice(value);
    b
}

/// Decodes half `half` of slot `slot` from `bytes` (the half's whole space): `None` if it
/// holds no valid version (never written, torn, or damaged: a half's crc covers all of it).
fn decode_half(slot: u64, half: usize, bytes: &[u8]) -> Option<HalfRead> {
    let head = bytes.get(..HALF_HEADER)?;
    let stored = unmask(u32::from_le_bytes(head[0..4].try_into().ok()?));
    let klen = u16::from_le_bytes(head[4..6].try_into().ok()?) as usize;
    let vtype = ValueType::from_u8(head[6])?;
    let seq = u64::from_le_bytes(head[8..16].try_into().ok()?);
    let vlen = u32::from_le_bytes(head[16..20].try_into().ok()?) as usize;
    if head[7] != 0 || head[20..24] != [0; 4] || seq == 0 || seq > MAX_SEQUENCE {
        return None;
    }
    let key = bytes.get(HALF_HEADER..HALF_HEADER + klen)?;
    let value = bytes.get(HALF_HEADER + klen..HALF_HEADER + klen + vlen)?;
    if half_crc(slot, half, head, key, value) != stored {
        return None;
    }
    Some(HalfRead {
        key: key.to_vec(),
        seq,
        vtype,
        value: value.to_vec(),
    })
}

/// A count-min sketch of 8-bit counters, halved every `16 x width` additions.
struct Sketch {
    counters: Vec<u8>,
    added: u64,
}

impl Sketch {
    fn new() -> Self {
        Sketch {
            counters: vec![0; SKETCH_ROWS * SKETCH_WIDTH],
            added: 0,
        }
    }

    /// Counts `key` once; returns its estimate (the least of its counters).
    fn add(&mut self, key: &[u8]) -> u8 {
        self.added += 1;
        if self.added >= 16 * SKETCH_WIDTH as u64 {
            self.added = 0;
            for c in &mut self.counters {
                *c >>= 1;
            }
        }
        let mut est = u8::MAX;
        for row in 0..SKETCH_ROWS {
            let h = crc32c::crc32c_append((row as u32).wrapping_mul(0x9e37_79b9), key) as usize
                % SKETCH_WIDTH;
            let c = &mut self.counters[row * SKETCH_WIDTH + h];
            *c = c.saturating_add(1);
            est = est.min(*c);
        }
        est
    }
}

/// What the buffer knows of one slot.
#[derive(Clone, Debug, Default)]
struct Slot {
    /// The key it belongs to (`None`: free, or being freed).
    key: Option<Vec<u8>>,
    /// Per half: the tree entries and held versions that name it (a named half is never
    /// overwritten).
    refs: [u32; 2],
    /// The sequence number of the key's version in each half (`None`: no valid version of the
    /// key there).
    seqs: [Option<u64>; 2],
    /// Handed to the deferred path: not reused until it is freed.
    freeing: bool,
}

struct Inner {
    index: HashMap<Vec<u8>, u64>,
    slots: Vec<Slot>,
    free: Vec<u64>,
    sketch: Sketch,
    /// Halves read at open, per slot, until the trees claim them ([`HotBuffer::claim`]).
    found: HashMap<u64, [Option<HalfRead>; 2]>,
    writes: u64,
}

/// Figures of the hot-key buffer.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct HotFigures {
    /// Slots that belong to a key.
    pub(crate) slots_used: u64,
    /// PM bytes of the segment files.
    pub(crate) pm_bytes: u64,
    /// Versions written into slots by flushes.
    pub(crate) writes: u64,
}

/// The hot-key buffer (module docs).
pub(crate) struct HotBuffer {
    fs: PmFs,
    dir: PathBuf,
    slot_bytes: u64,
    half_bytes: u64,
    slots_per_segment: u64,
    max_slots: u64,
    threshold: u8,
    writable: bool,
    segments: RwLock<Vec<PmWords>>,
    inner: Mutex<Inner>,
}

impl HotBuffer {
    /// Opens (or, empty, starts) the buffer in `dir` of `fs`: reads every slot's halves.
    /// Writable, a segment a crash cut short is deleted; read-only, it is skipped.
    pub(crate) fn open(
        fs: PmFs,
        dir: &Path,
        options: &LabOptions,
        writable: bool,
    ) -> Result<HotBuffer> {
        let mut named: Vec<(u64, u64, u64)> = fs
            .list(dir)?
            .iter()
            .filter_map(|n| parse_segment(n))
            .collect();
        named.sort_unstable();
        // An existing buffer keeps the geometry it was written with (its first segment's);
        // the options set it for a new one.
        let (slot_bytes, slots_per_segment) = match named.first() {
            Some(&(_, b, n)) => (b, n),
            None => {
                // A segment fills what one chunk holds: the pool gives a file whole chunks.
                let b = options.hot_slot_bytes;
                let seg = fs.data_per_chunk().min(options.hot_buffer_bytes).max(b);
                (b, (seg / b).max(1))
            }
        };
        let max_slots = options.hot_buffer_bytes / slot_bytes;
        let seg_len = slots_per_segment * slot_bytes;
        let mut segments = Vec::new();
        let mut found = HashMap::new();
        for (i, &(k, b, n)) in named.iter().enumerate() {
            let path = segment_name(dir, k, b, n);
            if (b, n) != (slot_bytes, slots_per_segment) {
                return Err(Error::corruption(
                    path.display().to_string(),
                    format!(
                        "a hot-key buffer segment of {n} slots of {b} bytes beside segments of \
                         {slots_per_segment} slots of {slot_bytes} bytes"
                    ),
                ));
            }
            let words = fs.words(&path)?;
            if k != i as u64 || words.size() != seg_len {
                // A segment a crash cut short while creating it (slots are used only once
                // their segment is whole and synced), or one numbered after it: never used.
                if writable {
                    fs.remove(&path)?;
                }
                continue;
            }
            let mut bytes = vec![0u8; seg_len as usize];
            words.read(0, &mut bytes)?;
            for s in 0..slots_per_segment {
                let slot = k * slots_per_segment + s;
                let at = (s * slot_bytes) as usize;
                let halves = [0, 1].map(|h| {
                    let from = at + h * (slot_bytes / 2) as usize;
                    decode_half(slot, h, &bytes[from..from + (slot_bytes / 2) as usize])
                });
                if halves.iter().any(Option::is_some) {
                    found.insert(slot, halves);
                }
            }
            segments.push(words);
        }
        let slots = vec![Slot::default(); segments.len() * slots_per_segment as usize];
        Ok(HotBuffer {
            fs,
            dir: dir.to_path_buf(),
            slot_bytes,
            half_bytes: slot_bytes / 2,
            slots_per_segment,
            max_slots,
            threshold: options.hot_threshold.clamp(1, u8::MAX as u32) as u8,
            writable,
            segments: RwLock::new(segments),
            inner: Mutex::new(Inner {
                index: HashMap::new(),
                slots,
                free: Vec::new(),
                sketch: Sketch::new(),
                found,
                writes: 0,
            }),
        })
    }

    fn location(&self, slot: u64) -> String {
        format!(
            "{}, hot slot {slot}",
            segment_name(
                &self.dir,
                slot / self.slots_per_segment,
                self.slot_bytes,
                self.slots_per_segment
            )
            .display()
        )
    }

    /// At open: a tree entry of `key` names half `half` of `slot`, for the version whose
    /// sequence's low bits are `tag`. That half must hold it (corruption otherwise: the version
    /// the tree names is gone); the slot is the key's.
    pub(crate) fn claim(&self, slot: u64, half: usize, tag: u64, key: &[u8]) -> Result<()> {
        let mut g = self.inner.lock();
        let inner = &mut *g;
        let st = inner
            .slots
            .get_mut(slot as usize)
            .ok_or_else(|| Error::corruption(self.location(slot), "no such hot slot"))?;
        if st.key.is_none() {
            let halves = inner.found.get(&slot);
            st.seqs = [0, 1].map(|h| {
                halves
                    .and_then(|hs| hs[h].as_ref())
                    .filter(|r| r.key == key)
                    .map(|r| r.seq)
            });
            st.key = Some(key.to_vec());
            inner.index.insert(key.to_vec(), slot);
        } else if st.key.as_deref() != Some(key) {
            return Err(Error::corruption(
                self.location(slot),
                format!(
                    "named by the LAB-DB trees for two keys ({} and {})",
                    crate::util::escape(st.key.as_deref().unwrap_or_default()),
                    crate::util::escape(key)
                ),
            ));
        }
        if st.seqs[half].is_none_or(|s| s & HOT_TAG != tag) {
            return Err(Error::corruption(
                self.location(slot),
                format!(
                    "the LAB-DB tree names half {half} for {} but it does not hold that version",
                    crate::util::escape(key)
                ),
            ));
        }
        st.refs[half] += 1;
        Ok(())
    }

    /// At open, after every tree entry was claimed: the slots no entry names are free.
    pub(crate) fn finish_claims(&self) {
        let mut g = self.inner.lock();
        let inner = &mut *g;
        inner.found.clear();
        inner.free = (0..inner.slots.len() as u64)
            .rev()
            .filter(|&s| inner.slots[s as usize].key.is_none())
            .collect();
    }

    /// At a flush: counts `key` and, when it is (or becomes) hot and its version `(seq,
    /// vtype, value)` fits a half, writes the version into a half of the key's slot that no
    /// tree entry or held version names (the older one when both are free), persisted, and
    /// returns that half's address word for the tree and the bytes written. `None`: the
    /// version goes to the tree as
    /// its value-array address (not hot, too large, no slot free, or both halves named).
    pub(crate) fn place(
        &self,
        key: &[u8],
        seq: u64,
        vtype: ValueType,
        value: &[u8],
    ) -> Result<Option<(u64, u64)>> {
        if !self.writable {
            return Ok(None);
        }
        let fits = HALF_HEADER as u64 + key.len() as u64 + value.len() as u64 <= self.half_bytes
            && key.len() <= u16::MAX as usize;
        let mut g = self.inner.lock();
        let est = g.sketch.add(key);
        if !fits {
            return Ok(None);
        }
        let slot = match g.index.get(key) {
            Some(&s) => s,
            None if est >= self.threshold => match self.allocate(&mut g, key)? {
                Some(s) => s,
                None => return Ok(None),
            },
            None => return Ok(None),
        };
        let st = &g.slots[slot as usize];
        if let Some(h) = (0..2).find(|&h| st.seqs[h] == Some(seq)) {
            // The slot holds this version already (recovery flushes a replayed memtable a
            // crash interrupted the flush of).
            return Ok(Some((Vaddr::hot(slot, h, seq)?.encode(), 0)));
        }
        if st.seqs.iter().flatten().any(|&s| s > seq) {
            // Never placed beside a newer version of the key.
            return Ok(None);
        }
        let Some(h) = (0..2)
            .filter(|&h| st.refs[h] == 0)
            .min_by_key(|&h| st.seqs[h].unwrap_or(0))
        else {
            return Ok(None);
        };
        let bytes = encode_half(slot, h, key, seq, vtype, value);
        let at = (slot % self.slots_per_segment) * self.slot_bytes + h as u64 * self.half_bytes;
        {
            let segments = self.segments.read();
            segments[(slot / self.slots_per_segment) as usize].write_persist(at, &bytes)?;
        }
        g.slots[slot as usize].seqs[h] = Some(seq);
        g.writes += 1;
        Ok(Some((
            Vaddr::hot(slot, h, seq)?.encode(),
            bytes.len() as u64,
        )))
    }

    /// A free slot for `key` (a new segment when none is free and the buffer may grow).
    fn allocate(&self, g: &mut Inner, key: &[u8]) -> Result<Option<u64>> {
        if g.free.is_empty()
            && (g.slots.len() as u64) + self.slots_per_segment <= self.max_slots
            && self.room_for_segment()
        {
            let k = self.segments.read().len() as u64;
            let path = segment_name(&self.dir, k, self.slot_bytes, self.slots_per_segment);
            match self.create_segment(&path) {
                Ok(words) => {
                    self.segments.write().push(words);
                    let first = k * self.slots_per_segment;
                    g.slots
                        .extend((0..self.slots_per_segment).map(|_| Slot::default()));
                    g.free.extend((first..first + self.slots_per_segment).rev());
                }
                // The pool has no room for it: the key stays an ordinary value address (the
                // space is the data's first).
                Err(Error::NoSpace(_)) => {
                    let _ = self.fs.remove(&path);
                    return Ok(None);
                }
                Err(e) => return Err(e),
            }
        }
        let Some(slot) = g.free.pop() else {
            return Ok(None);
        };
        // Both halves' headers zeroed (persisted) before the slot is the key's: a version a
        // former owner left (the same key too, before its slot was freed: maybe deleted since)
        // must never read as one of the new owner's, now or after a crash.
        {
            let segments = self.segments.read();
            let words = &segments[(slot / self.slots_per_segment) as usize];
            let at = (slot % self.slots_per_segment) * self.slot_bytes;
            for h in 0..2 {
                words.write_persist(at + h * self.half_bytes, &[0u8; HALF_HEADER])?;
            }
        }
        g.slots[slot as usize] = Slot {
            key: Some(key.to_vec()),
            ..Slot::default()
        };
        g.index.insert(key.to_vec(), slot);
        Ok(Some(slot))
    }

    /// Whether a new segment leaves the pool room for everything else: the buffer is a cache,
    /// so it never takes the chunks the L0 trees, the tables and the logs need (taking them
    /// made a flush fail for want of one leaf while the buffer held most of the pool). A
    /// segment's chunks must leave more than a quarter of the pool's chunks free for tables.
    fn room_for_segment(&self) -> bool {
        let seg = self.slots_per_segment * self.slot_bytes;
        let chunks = seg.div_ceil(self.fs.data_per_chunk());
        let keep = self.fs.pool().chunk_count() / KEEP_FREE_DIVISOR;
        self.fs.chunks_for_tables() > chunks + keep
    }

    /// Creates segment file `path`, zeroed and synced with its directory entry.
    fn create_segment(&self, path: &Path) -> Result<PmWords> {
        let mut w = self.fs.create(path)?;
        w.append(&vec![
            0u8;
            (self.slots_per_segment * self.slot_bytes) as usize
        ])?;
        w.sync()?;
        drop(w);
        self.fs.sync_dir(&self.dir)?;
        self.fs.words(path)
    }

    /// One more tree entry or held version names half `half` of `slot`.
    pub(crate) fn add_ref(&self, slot: u64, half: usize) -> Result<()> {
        let mut g = self.inner.lock();
        let st = g
            .slots
            .get_mut(slot as usize)
            .filter(|s| s.key.is_some() && half < 2)
            .ok_or_else(|| Error::corruption(self.location(slot), "reference to a free slot"))?;
        st.refs[half] += 1;
        Ok(())
    }

    /// One tree entry or held version less names half `half` of `slot`.
    pub(crate) fn drop_ref(&self, slot: u64, half: usize) -> Result<()> {
        let mut g = self.inner.lock();
        let st = g
            .slots
            .get_mut(slot as usize)
            .filter(|s| half < 2 && s.refs[half] > 0)
            .ok_or_else(|| Error::corruption(self.location(slot), "reference dropped twice"))?;
        st.refs[half] -= 1;
        Ok(())
    }

    /// The slots no reference names any more: they leave the index (the key gets a new slot
    /// if it is placed again) and are handed to the caller, to be freed once no reader may
    /// read them ([`Self::free`]).
    pub(crate) fn take_unreferenced(&self) -> Vec<u64> {
        let mut g = self.inner.lock();
        let inner = &mut *g;
        let mut out = Vec::new();
        for (i, st) in inner.slots.iter_mut().enumerate() {
            if st.refs == [0, 0] && !st.freeing {
                if let Some(k) = st.key.take() {
                    inner.index.remove(&k);
                    st.freeing = true;
                    st.seqs = [None, None];
                    out.push(i as u64);
                }
            }
        }
        out
    }

    /// Returns a slot taken by [`Self::take_unreferenced`] to the free list.
    pub(crate) fn free(&self, slot: u64) {
        let mut g = self.inner.lock();
        if let Some(st) = g.slots.get_mut(slot as usize) {
            *st = Slot::default();
            g.free.push(slot);
        }
    }

    /// The version half `half` of `slot` holds for `key`, which must be the one at a sequence
    /// whose low bits are `tag` (what a tree entry or held version names): corruption
    /// otherwise.
    pub(crate) fn read(&self, slot: u64, half: usize, tag: u64, key: &[u8]) -> Result<ValueRecord> {
        let segments = self.segments.read();
        let words = segments
            .get((slot / self.slots_per_segment) as usize)
            .ok_or_else(|| Error::corruption(self.location(slot), "no such hot slot"))?;
        let mut bytes = vec![0u8; self.half_bytes as usize];
        words.read(
            (slot % self.slots_per_segment) * self.slot_bytes + half as u64 * self.half_bytes,
            &mut bytes,
        )?;
        match decode_half(slot, half, &bytes) {
            Some(r) if r.key == key && r.seq & HOT_TAG == tag => Ok(ValueRecord {
                seq: r.seq,
                vtype: r.vtype,
                value: r.value,
                cached: true,
            }),
            _ => Err(Error::corruption(
                self.location(slot),
                format!(
                    "half {half} does not hold the version of {} a tree names",
                    crate::util::escape(key)
                ),
            )),
        }
    }

    /// Figures.
    pub(crate) fn figures(&self) -> HotFigures {
        let g = self.inner.lock();
        HotFigures {
            slots_used: g.slots.iter().filter(|s| s.key.is_some()).count() as u64,
            pm_bytes: self.segments.read().len() as u64 * self.slots_per_segment * self.slot_bytes,
            writes: g.writes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::PmFsOpen;
    use std::sync::Arc;
    use tierkv_pm::{CrashImage, PmPool, PoolOptions};

    const ID: u128 = 0x77;

    fn pool_options() -> PoolOptions {
        PoolOptions {
            size: 4 << 20,
            chunk_size: 64 << 10,
            ..PoolOptions::default()
        }
    }

    fn options() -> LabOptions {
        LabOptions {
            hot_buffer_bytes: 4 << 10,
            hot_slot_bytes: 256,
            hot_threshold: 2,
            ..LabOptions::default()
        }
    }

    fn buffer(fs: &PmFs) -> HotBuffer {
        HotBuffer::open(fs.clone(), Path::new("/db"), &options(), true).unwrap()
    }

    fn half_of(word: u64) -> (u64, usize, u64) {
        match Vaddr::decode(word, "t").unwrap() {
            Vaddr::Hot { slot, half, tag } => (slot, half, tag),
            v => panic!("{v:?}"),
        }
    }

    fn value_of(h: &HotBuffer, word: u64, key: &[u8]) -> (u64, Vec<u8>) {
        let (slot, half, tag) = half_of(word);
        let r = h.read(slot, half, tag, key).unwrap();
        (r.seq, r.value)
    }

    /// A key is hot from its second flush; each flush writes a half nothing names; a named half
    /// is never overwritten; with both named the version is not placed; a slot with no names
    /// is freed (its halves cleared before reuse); a crash image reopens with the named halves.
    #[test]
    fn halves_named_by_the_tree_are_kept_and_slots_are_reused() {
        let pool = PmPool::create_crash_sim(&pool_options(), true).unwrap();
        let fs = PmFs::open(Arc::clone(&pool), "t", PmFsOpen::Create(ID)).unwrap();
        let h = buffer(&fs);
        let v = ValueType::Value;
        // First count: not hot yet.
        assert_eq!(h.place(b"k", 10, v, b"ten").unwrap(), None);
        let w20 = h.place(b"k", 20, v, b"twenty").unwrap().unwrap().0;
        assert_eq!(value_of(&h, w20, b"k"), (20, b"twenty".to_vec()));
        // The tree names it; the next version goes to the other half.
        let (slot, half20, _) = half_of(w20);
        h.add_ref(slot, half20).unwrap();
        let w30 = h.place(b"k", 30, v, b"thirty").unwrap().unwrap().0;
        assert_ne!(half_of(w30).1, half20);
        assert_eq!(value_of(&h, w20, b"k"), (20, b"twenty".to_vec()));
        // A held version keeps 20's half and the tree names 30's: nothing is free.
        h.add_ref(slot, half_of(w30).1).unwrap();
        assert_eq!(h.place(b"k", 40, v, b"forty").unwrap(), None);
        // The snapshot goes: 20's half is overwritten next.
        h.drop_ref(slot, half20).unwrap();
        let w40 = h.place(b"k", 40, v, b"forty").unwrap().unwrap().0;
        assert_eq!(half_of(w40).1, half20);
        assert!(h
            .read(slot, half20, 20 & HOT_TAG, b"k")
            .unwrap_err()
            .is_corruption());
        // The same version again (a replayed flush) names the half that holds it.
        assert_eq!(h.place(b"k", 40, v, b"forty").unwrap(), Some((w40, 0)));
        // An older version is never placed beside a newer one; another key never reads it.
        assert_eq!(h.place(b"k", 35, v, b"x").unwrap(), None);
        assert!(h
            .read(slot, half20, 40 & HOT_TAG, b"j")
            .unwrap_err()
            .is_corruption());
        // The tree names 40's half (and drops 30's): a crash image keeps what the tree names.
        h.add_ref(slot, half20).unwrap();
        h.drop_ref(slot, half_of(w30).1).unwrap();
        h.drop_ref(slot, half_of(w30).1).unwrap_err();
        for kind in [CrashImage::Strict, CrashImage::AllPending] {
            let img = pool.crash_image(kind).unwrap();
            let p2 = PmPool::open_crash_image_checked(img, &pool_options(), true).unwrap();
            let fs2 = PmFs::open(p2, "img", PmFsOpen::Existing(ID)).unwrap();
            let h2 = buffer(&fs2);
            let (s40, half40, tag40) = half_of(w40);
            h2.claim(s40, half40, tag40, b"k").unwrap();
            // A tree naming a version the half does not hold is corruption.
            assert!(h2
                .claim(s40, 1 - half40, 20 & HOT_TAG, b"k")
                .unwrap_err()
                .is_corruption());
            h2.finish_claims();
            assert_eq!(value_of(&h2, w40, b"k"), (40, b"forty".to_vec()));
            assert_eq!(h2.figures().slots_used, 1);
        }
        // Nothing names the slot: it is freed, and a new owner never reads the old halves.
        h.drop_ref(slot, half20).unwrap();
        assert_eq!(h.take_unreferenced(), vec![slot]);
        h.free(slot);
        h.place(b"n", 50, v, b"a").unwrap();
        let w51 = h.place(b"n", 51, v, b"b").unwrap().unwrap().0;
        assert_eq!(half_of(w51).0, slot, "the freed slot is reused");
        assert!(h
            .read(slot, half20, 40 & HOT_TAG, b"k")
            .unwrap_err()
            .is_corruption());
        // A value that does not fit a half is never placed.
        assert_eq!(h.place(b"n", 52, v, &[7u8; 200]).unwrap(), None);
    }

    #[test]
    fn a_half_round_trips_and_any_damage_or_move_reads_as_empty() {
        let b = encode_half(7, 1, b"key", 42, ValueType::Value, b"value");
        let mut space = b.clone();
        space.resize(128, 0);
        let r = decode_half(7, 1, &space).unwrap();
        assert_eq!(
            (r.key.as_slice(), r.seq, r.vtype, r.value.as_slice()),
            (&b"key"[..], 42, ValueType::Value, &b"value"[..])
        );
        // Another slot or half: not valid there.
        assert_eq!(decode_half(8, 1, &space), None);
        assert_eq!(decode_half(7, 0, &space), None);
        // Every bit flip of the written bytes, and every cut, reads as no version.
        for bit in 0..b.len() * 8 {
            let mut d = space.clone();
            d[bit / 8] ^= 1 << (bit % 8);
            assert_eq!(decode_half(7, 1, &d), None, "bit {bit}");
        }
        for cut in 0..b.len() {
            assert_eq!(decode_half(7, 1, &b[..cut]), None, "cut {cut}");
        }
        // Zeroed space holds nothing.
        assert_eq!(decode_half(7, 1, &[0u8; 128]), None);
        let t = encode_half(3, 0, b"k", 9, ValueType::Deletion, b"");
        assert_eq!(decode_half(3, 0, &t).unwrap().vtype, ValueType::Deletion);
    }

    #[test]
    fn the_sketch_counts_and_ages() {
        let mut s = Sketch::new();
        for i in 1..=5u8 {
            assert!(s.add(b"hot") >= i);
        }
        assert!(s.add(b"cold") <= 2);
        for _ in 0..200 {
            s.add(b"hot");
        }
        assert!(s.add(b"hot") > 200);
        // Enough other keys halve every counter.
        for i in 0..16 * SKETCH_WIDTH as u64 {
            s.add(&i.to_le_bytes());
        }
        assert!(s.add(b"hot") < 150);
    }
}
