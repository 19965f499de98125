//! An open sorted array, read in place: entry reads, head-first comparisons, lower bounds,
//! verified reads, an iterator and a full verification.
//!
//! [`PmArray::open`] reads the footer, the index area once (to check its checksum and every
//! entry's bounds) and the filter; it keeps only the filter in DRAM. Every later probe is one
//! 48-byte `read_exact_at` of an index entry, and most comparisons are decided by the entry's
//! 16-byte key head without touching the data area.
//!
//! Thread-safety: a [`PmArray`] is immutable and shared as `Arc<PmArray>`; an
//! [`ArrayIterator`] has one owner and keeps its array alive.
//!
//! Invariants: see the module doc of [`crate::parray`]. Every byte read from the file is
//! counted with [`Counters::add_read`] against the array's tier and part (the purpose is
//! `UserRead` at open, the caller's afterwards).

use super::{pad_head, Footer, IndexEntry, KeyHead, KeyValue, ENTRY_LEN, FOOTER_LEN, HEAD_LEN};
use crate::format::{compare_internal, parse_internal_key, user_key, TRAILER_LEN};
use crate::fs::RandomAccessFile;
use crate::iterator::InternalIterator;
use crate::sst::filter::BloomFilter;
use crate::stats::{Counters, IoPurpose, Part};
use crate::tier::Tier;
use crate::util::crc::{crc32c, unmask};
use crate::{Error, Result};
use std::cmp::Ordering;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// An open, immutable sorted array.
pub(crate) struct PmArray {
    file: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    counters: Arc<Counters>,
    tier: Tier,
    part: Part,
    file_size: u64,
    num_entries: u32,
    data_len: u64,
    index_offset: u64,
    floor_slot: Option<u8>,
    has_pointers: bool,
    filter: Option<BloomFilter>,
}

impl std::fmt::Debug for PmArray {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PmArray")
            .field("path", &self.path)
            .field("num_entries", &self.num_entries)
            .field("floor_slot", &self.floor_slot)
            .field("file_size", &self.file_size)
            .finish_non_exhaustive()
    }
}

/// The answer of a binary search, with what the search already read around it.
#[derive(Debug)]
pub(super) struct Located {
    /// The first index in the searched range whose key is `>=` the target (`hi` if none).
    pub index: u32,
    /// Entry `index - 1`, when the search probed it.
    pub below: Option<IndexEntry>,
    /// Entry `index`, when the search probed it.
    pub at: Option<IndexEntry>,
    /// Entry `index`'s key and value, checksum-verified, when confirming the answer read them.
    pub at_data: Option<KeyValue>,
}

/// A target internal key split for head-first comparisons.
struct Target<'a> {
    ikey: &'a [u8],
    head: KeyHead,
}

impl<'a> Target<'a> {
    fn new(ikey: &'a [u8]) -> Result<Target<'a>> {
        if ikey.len() < TRAILER_LEN {
            return Err(Error::InvalidArgument(format!(
                "sorted-array search key of {} bytes is shorter than an internal-key trailer",
                ikey.len()
            )));
        }
        Ok(Target {
            ikey,
            head: KeyHead::of(ikey),
        })
    }
}

fn location(path: &Path, what: &str, offset: u64) -> String {
    format!("{} {what} at {offset}", path.display())
}

impl PmArray {
    /// Opens an array: reads and checks the footer, the index area (its checksum and every
    /// entry's bounds and pointers) and the filter. Those bytes are counted under `purpose`
    /// (the opener's: a user read, a compaction, a check).
    pub(crate) fn open(
        file: Arc<dyn RandomAccessFile>,
        path: PathBuf,
        counters: Arc<Counters>,
        tier: Tier,
        part: Part,
        purpose: IoPurpose,
    ) -> Result<Arc<PmArray>> {
        let file_size = file.size();
        let whole = |reason: String| Error::corruption(path.display().to_string(), reason);
        if file_size < FOOTER_LEN as u64 {
            return Err(whole(format!(
                "file of {file_size} bytes is too short for a sorted-array footer"
            )));
        }
        let footer_at = file_size - FOOTER_LEN as u64;
        let mut fbuf = [0u8; FOOTER_LEN];
        file.read_exact_at(footer_at, &mut fbuf)?;
        counters.add_read(tier, part, purpose, FOOTER_LEN as u64);
        let footer = Footer::decode(&fbuf)
            .map_err(|r| Error::corruption(location(&path, "footer", footer_at), r))?;
        check_layout(&footer, footer_at)
            .map_err(|r| Error::corruption(location(&path, "footer", footer_at), r))?;
        let mut array = PmArray {
            file,
            path,
            counters,
            tier,
            part,
            file_size,
            num_entries: footer.num_entries,
            data_len: footer.data_len,
            index_offset: footer.index_offset,
            floor_slot: footer.floor_slot,
            has_pointers: footer.has_pointers,
            filter: None,
        };
        array.check_index(&footer, purpose)?;
        array.filter = array.read_filter(&footer, purpose)?;
        Ok(Arc::new(array))
    }

    /// Reads the index area once: its checksum, then every entry's bounds, contiguity,
    /// pointers, and the order of consecutive keys as far as their heads decide it.
    fn check_index(&self, footer: &Footer, purpose: IoPurpose) -> Result<()> {
        let n = self.num_entries as usize;
        let mut index = vec![0u8; n * ENTRY_LEN];
        self.read_at(self.index_offset, &mut index, purpose)?;
        if unmask(footer.index_crc) != crc32c(&index) {
            return Err(Error::corruption(
                location(&self.path, "index area", self.index_offset),
                "index checksum mismatch",
            ));
        }
        let mut expected_offset = 0u64;
        let mut any_pointer = false;
        let mut prev: Option<KeyHead> = None;
        for (i, raw) in index.chunks_exact(ENTRY_LEN).enumerate() {
            let raw: &[u8; ENTRY_LEN] = raw.try_into().map_err(|_| {
                Error::corruption(self.entry_location(i as u32), "short index entry")
            })?;
            let e = self.decode_entry(i as u32, raw)?;
            if e.data_offset as u64 != expected_offset {
                return Err(Error::corruption(
                    self.entry_location(i as u32),
                    format!(
                        "data offset {} is not where the previous entry ended ({expected_offset})",
                        e.data_offset
                    ),
                ));
            }
            expected_offset = e.data_end();
            any_pointer |= e.next.is_some();
            let head = e.key_head();
            if let Some(p) = &prev {
                if KeyHead::decide(p, &head).is_some_and(|o| !o.is_lt()) {
                    return Err(Error::corruption(
                        self.entry_location(i as u32),
                        "key not after the previous entry's",
                    ));
                }
            }
            prev = Some(head);
        }
        if expected_offset != self.data_len {
            return Err(Error::corruption(
                location(&self.path, "index area", self.index_offset),
                format!(
                    "entries cover {expected_offset} data bytes, the data area has {}",
                    self.data_len
                ),
            ));
        }
        if any_pointer != self.has_pointers {
            return Err(Error::corruption(
                location(&self.path, "index area", self.index_offset),
                "the footer's pointer flag disagrees with the entries",
            ));
        }
        Ok(())
    }

    fn read_filter(&self, footer: &Footer, purpose: IoPurpose) -> Result<Option<BloomFilter>> {
        let loc = || location(&self.path, "filter", footer.filter_offset);
        let mut data = vec![0u8; footer.filter_len as usize];
        self.read_at(footer.filter_offset, &mut data, purpose)?;
        if unmask(footer.filter_crc) != crc32c(&data) {
            return Err(Error::corruption(loc(), "filter checksum mismatch"));
        }
        if data.is_empty() {
            return Ok(None);
        }
        Ok(Some(
            BloomFilter::new(data).map_err(|r| Error::corruption(loc(), r))?,
        ))
    }

    /// One counted read of the file.
    fn read_at(&self, offset: u64, buf: &mut [u8], purpose: IoPurpose) -> Result<()> {
        self.file.read_exact_at(offset, buf)?;
        self.counters
            .add_read(self.tier, self.part, purpose, buf.len() as u64);
        Ok(())
    }

    fn entry_offset(&self, i: u32) -> u64 {
        self.index_offset + i as u64 * ENTRY_LEN as u64
    }

    pub(super) fn entry_location(&self, i: u32) -> String {
        location(
            &self.path,
            &format!("index entry {i}"),
            self.entry_offset(i),
        )
    }

    /// Decodes entry `i` and checks it against the array: its data inside the data area, its
    /// pointer naming a floor below the array's.
    fn decode_entry(&self, i: u32, raw: &[u8; ENTRY_LEN]) -> Result<IndexEntry> {
        let bad = |r: String| Error::corruption(self.entry_location(i), r);
        let e = IndexEntry::decode(raw).map_err(bad)?;
        if e.data_end() > self.data_len {
            return Err(bad(format!(
                "entry data {}..{} extends past the data area of {} bytes",
                e.data_offset,
                e.data_end(),
                self.data_len
            )));
        }
        if let Some(p) = e.next {
            if self.floor_slot.is_none_or(|f| p.floor >= f) {
                return Err(bad(format!(
                    "next pointer to floor {} in an array of floor {:?}",
                    p.floor, self.floor_slot
                )));
            }
        }
        Ok(e)
    }

    /// Number of entries (at least 1).
    pub(crate) fn len(&self) -> u32 {
        self.num_entries
    }

    /// The floor slot the array was built for, if any.
    pub(crate) fn floor_slot(&self) -> Option<u8> {
        self.floor_slot
    }

    /// True if some entry carries a next pointer.
    pub(crate) fn has_pointers(&self) -> bool {
        self.has_pointers
    }

    /// False only if `user_key` is certainly not in the array (true without a filter).
    pub(crate) fn may_contain(&self, user_key: &[u8]) -> bool {
        self.filter.as_ref().is_none_or(|f| f.may_contain(user_key))
    }

    /// DRAM held by the Bloom filter (0 without one).
    pub(crate) fn filter_bytes(&self) -> u64 {
        self.filter.as_ref().map_or(0, |f| f.size() as u64)
    }

    #[cfg(test)]
    /// The file's size in bytes.
    pub(crate) fn file_size(&self) -> u64 {
        self.file_size
    }

    /// Bytes of the data area (the keys and values), at the start of the file.
    pub(crate) fn data_len(&self) -> u64 {
        self.data_len
    }

    /// The file's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Reads index entry `i` (one 48-byte read). `InvalidArgument` if `i >= len()`.
    pub(crate) fn entry(&self, i: u32, purpose: IoPurpose) -> Result<IndexEntry> {
        if i >= self.num_entries {
            return Err(Error::InvalidArgument(format!(
                "entry {i} of sorted array {} with {} entries",
                self.path.display(),
                self.num_entries
            )));
        }
        let mut raw = [0u8; ENTRY_LEN];
        self.read_at(self.entry_offset(i), &mut raw, purpose)?;
        self.decode_entry(i, &raw)
    }

    /// Reads entry `i`'s internal key and value (one read), checking them against the
    /// entry's checksum and the entry's head, length and trailer.
    pub(super) fn read_data(&self, i: u32, e: &IndexEntry, purpose: IoPurpose) -> Result<KeyValue> {
        let key_len = e.key_len() as usize;
        let mut buf = vec![0u8; key_len + e.value_len as usize];
        self.read_at(e.data_offset as u64, &mut buf, purpose)?;
        let value = buf.split_off(key_len);
        let key = buf;
        let bad = |r: &str| {
            Error::corruption(
                location(
                    &self.path,
                    &format!("data of entry {i}"),
                    e.data_offset as u64,
                ),
                r,
            )
        };
        if e.checksum(&key, &value) != e.crc {
            return Err(bad("entry checksum mismatch"));
        }
        // The builder derives the entry from the key; a difference is a damaged builder, not
        // a damaged medium, but the data would be wrong all the same.
        if pad_head(user_key(&key)) != e.head || crate::format::trailer(&key) != e.trailer {
            return Err(bad("key does not match its index entry"));
        }
        Ok((key, value))
    }

    /// Reads entry `i`'s internal key and value, verified by the entry checksum.
    pub(crate) fn read(&self, i: u32, purpose: IoPurpose) -> Result<KeyValue> {
        let e = self.entry(i, purpose)?;
        self.read_data(i, &e, purpose)
    }

    #[cfg(test)]
    /// Compares entry `i`'s internal key with `target_ikey` (in [`compare_internal`] order).
    /// Decided by the entry's key head when it can be (a user key of at most 16 bytes is all
    /// in the head; a longer one whose first 16 bytes differ from the target's is decided
    /// too); otherwise the entry's key is read from the data area together with its value, so
    /// that the entry checksum vouches for the key bytes the answer rests on.
    pub(crate) fn compare(
        &self,
        i: u32,
        target_ikey: &[u8],
        purpose: IoPurpose,
    ) -> Result<Ordering> {
        let t = Target::new(target_ikey)?;
        let e = self.entry(i, purpose)?;
        Ok(self.compare_exact(i, &e, &t, purpose)?.0)
    }

    /// The exact comparison of entry `i` (already read as `e`) with the target, with the
    /// verified key and value when the head did not decide.
    fn compare_exact(
        &self,
        i: u32,
        e: &IndexEntry,
        t: &Target<'_>,
        purpose: IoPurpose,
    ) -> Result<(Ordering, Option<KeyValue>)> {
        if let Some(o) = KeyHead::decide(&e.key_head(), &t.head) {
            return Ok((o, None));
        }
        let kv = self.read_data(i, e, purpose)?;
        Ok((compare_internal(&kv.0, t.ikey), Some(kv)))
    }

    /// A search probe: the head decides, or the user key bytes past the head are read (not yet
    /// checked against the entry checksum). Returns the order and whether data bytes decided.
    fn probe(
        &self,
        e: &IndexEntry,
        t: &Target<'_>,
        purpose: IoPurpose,
    ) -> Result<(Ordering, bool)> {
        if let Some(o) = KeyHead::decide(&e.key_head(), &t.head) {
            return Ok((o, false));
        }
        // Both user keys are longer than 16 bytes and agree on their first 16.
        let mut tail = vec![0u8; e.user_key_len as usize - HEAD_LEN];
        self.read_at(e.data_offset as u64 + HEAD_LEN as u64, &mut tail, purpose)?;
        let target_tail = user_key(t.ikey).get(HEAD_LEN..).unwrap_or_default();
        let o = tail
            .as_slice()
            .cmp(target_tail)
            // Equal user keys: the larger trailer (newer) sorts first.
            .then(t.head.trailer.cmp(&e.trailer));
        Ok((o, true))
    }

    /// The first index in `[lo, hi)` whose internal key is `>= target_ikey`, `hi` if none. A
    /// binary search: one 48-byte entry read per probe, plus the user key's bytes past the
    /// head when the head cannot decide. REQUIRES: `lo <= hi <= len()` (else
    /// `InvalidArgument`).
    ///
    /// The answer `p` rests on two judgements only, "entry `p - 1` < target" and "entry `p` >=
    /// target" (the probes that last moved `lo` and `hi`); when either was made from key bytes
    /// of the data area, that entry is re-read with its checksum, so a damaged key gives
    /// `Corruption` rather than a wrong position.
    pub(crate) fn lower_bound(
        &self,
        target_ikey: &[u8],
        lo: u32,
        hi: u32,
        purpose: IoPurpose,
    ) -> Result<u32> {
        Ok(self.locate(target_ikey, lo, hi, purpose)?.index)
    }

    /// [`PmArray::lower_bound`], returning what it read around the answer.
    pub(super) fn locate(
        &self,
        target_ikey: &[u8],
        lo: u32,
        hi: u32,
        purpose: IoPurpose,
    ) -> Result<Located> {
        if lo > hi || hi > self.num_entries {
            return Err(Error::InvalidArgument(format!(
                "search range {lo}..{hi} of sorted array {} with {} entries",
                self.path.display(),
                self.num_entries
            )));
        }
        let t = Target::new(target_ikey)?;
        let (mut lo, mut hi) = (lo, hi);
        // The entries whose probes last moved `lo` (entry lo - 1) and `hi` (entry hi), and
        // whether unverified data bytes decided them.
        let mut below: Option<(IndexEntry, bool)> = None;
        let mut at: Option<(IndexEntry, bool)> = None;
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let e = self.entry(mid, purpose)?;
            let (o, from_data) = self.probe(&e, &t, purpose)?;
            if o.is_lt() {
                lo = mid + 1;
                below = Some((e, from_data));
            } else {
                hi = mid;
                at = Some((e, from_data));
            }
        }
        let p = lo;
        let inconsistent = |i: u32| {
            Error::corruption(
                self.entry_location(i),
                "the entry's key read differently on two reads",
            )
        };
        if let Some((e, true)) = &below {
            if !self.compare_exact(p - 1, e, &t, purpose)?.0.is_lt() {
                return Err(inconsistent(p - 1));
            }
        }
        let mut at_data = None;
        if let Some((e, true)) = &at {
            let (o, kv) = self.compare_exact(p, e, &t, purpose)?;
            if o.is_lt() {
                return Err(inconsistent(p));
            }
            at_data = kv;
        }
        Ok(Located {
            index: p,
            below: below.map(|b| b.0),
            at: at.map(|a| a.0),
            at_data,
        })
    }

    /// An iterator over the array; it keeps the array alive.
    pub(crate) fn iter(self: &Arc<Self>, purpose: IoPurpose) -> ArrayIterator {
        ArrayIterator {
            array: Arc::clone(self),
            purpose,
            pos: self.num_entries,
            key: Vec::new(),
            value: Vec::new(),
            valid: false,
            err: None,
        }
    }

    /// Reads every entry with its checksum and checks strict internal-key order, well-formed
    /// internal keys, contiguous data offsets covering the data area, that the filter admits
    /// every user key, and the pointers' floors. Returns the number of entries.
    pub(crate) fn verify(&self, purpose: IoPurpose) -> Result<u64> {
        self.verify_live(&[], &mut |_, _| Ok(()), purpose)
    }

    /// [`PmArray::verify`] for a row whose entries in the intervals `skip` (sorted, disjoint)
    /// are dead: their index entries are checked (data offsets included) but their key and
    /// value bytes, which may be freed, are not read; key order is checked among the live
    /// entries, and `live` sees each live entry's index and internal key (to check it against
    /// the row's dead ranges).
    pub(crate) fn verify_live(
        &self,
        skip: &[(u32, u32)],
        live: &mut dyn FnMut(u32, &[u8]) -> Result<()>,
        purpose: IoPurpose,
    ) -> Result<u64> {
        let mut prev: Option<Vec<u8>> = None;
        let mut expected_offset = 0u64;
        for i in 0..self.num_entries {
            let e = self.entry(i, purpose)?;
            let bad = |r: &str| Err(Error::corruption(self.entry_location(i), r));
            if e.data_offset as u64 != expected_offset {
                return bad("data offset is not where the previous entry ended");
            }
            expected_offset = e.data_end();
            if super::first_live(skip, i) != i {
                continue;
            }
            let (key, _value) = self.read_data(i, &e, purpose)?;
            if parse_internal_key(&key).is_none() {
                return bad("malformed internal key");
            }
            if prev
                .as_deref()
                .is_some_and(|p| !compare_internal(p, &key).is_lt())
            {
                return bad("keys not strictly increasing");
            }
            live(i, &key)?;
            if !self.may_contain(user_key(&key)) {
                return bad("filter rejects a key of the array");
            }
            prev = Some(key);
        }
        if expected_offset != self.data_len {
            return Err(Error::corruption(
                location(&self.path, "index area", self.index_offset),
                "entries do not cover the data area",
            ));
        }
        Ok(self.num_entries as u64)
    }
}

/// Checks the footer's areas tile the file: data, index (48 bytes per entry), filter, footer.
fn check_layout(f: &Footer, footer_at: u64) -> std::result::Result<(), String> {
    if f.num_entries == 0 {
        return Err("an array has no entries".into());
    }
    if f.data_len > u32::MAX as u64 {
        return Err(format!("data area of {} bytes exceeds 4 GiB", f.data_len));
    }
    if f.data_len < f.num_entries as u64 * TRAILER_LEN as u64 {
        return Err(format!(
            "data area of {} bytes is too small for {} keys",
            f.data_len, f.num_entries
        ));
    }
    let index_end = f.num_entries as u64 * ENTRY_LEN as u64 + f.index_offset;
    let filter_end = f.filter_offset.checked_add(f.filter_len);
    if f.index_offset != f.data_len || f.filter_offset != index_end || filter_end != Some(footer_at)
    {
        return Err(format!(
            "areas do not tile the file: data {}, index at {} for {} entries, filter {}+{}, \
             footer at {footer_at}",
            f.data_len, f.index_offset, f.num_entries, f.filter_offset, f.filter_len
        ));
    }
    if f.floor_slot.is_none_or(|s| s == 0) && f.has_pointers {
        return Err("pointers in an array of no floor above 0".into());
    }
    Ok(())
}

/// A forward iterator over a [`PmArray`] in internal-key order; every entry it returns was
/// verified by its checksum. Errors are sticky: the iterator turns invalid and
/// [`InternalIterator::status`] reports the first error.
pub(crate) struct ArrayIterator {
    array: Arc<PmArray>,
    purpose: IoPurpose,
    pos: u32,
    key: Vec<u8>,
    value: Vec<u8>,
    valid: bool,
    err: Option<Error>,
}

impl std::fmt::Debug for ArrayIterator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArrayIterator")
            .field("array", &self.array.path)
            .field("pos", &self.pos)
            .field("valid", &self.valid)
            .finish_non_exhaustive()
    }
}

impl ArrayIterator {
    /// Positions on entry `i` (`len()` = past the end, invalid), whose key and value are `kv`
    /// when the caller already read them (checksum-verified). Used by the cascade, which finds
    /// positions in every floor in one descent. `i > len()` is an error of the iterator.
    pub(crate) fn seek_to_index(&mut self, i: u32, kv: Option<KeyValue>) {
        if i > self.array.num_entries {
            self.fail(Error::InvalidArgument(format!(
                "seek to entry {i} of sorted array {} with {} entries",
                self.array.path.display(),
                self.array.num_entries
            )));
            return;
        }
        self.pos = i;
        self.load(kv);
    }

    #[cfg(test)]
    /// The index of the current entry (`len()` when past the end).
    pub(crate) fn position(&self) -> u32 {
        self.pos
    }

    /// The index of the current entry (`len()` when past the end).
    pub(crate) fn index(&self) -> u32 {
        self.pos
    }

    /// Makes the iterator invalid with error `e` (sticky, as its own errors).
    pub(crate) fn fail_with(&mut self, e: Error) {
        self.fail(e);
    }

    fn fail(&mut self, e: Error) {
        self.valid = false;
        if self.err.is_none() {
            self.err = Some(e);
        }
    }

    /// Loads entry `pos` (or uses `kv`, already read and verified for it).
    fn load(&mut self, kv: Option<KeyValue>) {
        self.valid = false;
        if self.err.is_some() || self.pos >= self.array.num_entries {
            return;
        }
        let kv = match kv {
            Some(kv) => Ok(kv),
            None => self.array.read(self.pos, self.purpose),
        };
        match kv {
            Ok((k, v)) => {
                self.key = k;
                self.value = v;
                self.valid = true;
            }
            Err(e) => self.fail(e),
        }
    }
}

impl InternalIterator for ArrayIterator {
    fn valid(&self) -> bool {
        self.valid
    }

    fn seek_to_first(&mut self) {
        self.pos = 0;
        self.load(None);
    }

    fn seek(&mut self, target: &[u8]) {
        if self.err.is_some() {
            return;
        }
        let len = self.array.num_entries;
        match self.array.locate(target, 0, len, self.purpose) {
            Ok(l) => {
                self.pos = l.index;
                self.load(l.at_data);
            }
            Err(e) => self.fail(e),
        }
    }

    fn next(&mut self) {
        debug_assert!(self.valid);
        self.pos = self.pos.saturating_add(1).min(self.array.num_entries);
        self.load(None);
    }

    fn key(&self) -> &[u8] {
        debug_assert!(self.valid);
        &self.key
    }

    fn value(&self) -> &[u8] {
        debug_assert!(self.valid);
        &self.value
    }

    fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.duplicate()),
            None => Ok(()),
        }
    }
}
