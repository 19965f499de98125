//! Writes one sorted array: the data area as entries arrive, then the index entries (buffered
//! in DRAM meanwhile), the filter and the footer, then a sync.
//!
//! Thread-safety: an [`ArrayBuilder`] has one owner (a flush or a compaction).
//!
//! Invariants: keys are valid internal keys added in strictly increasing
//! [`compare_internal`] order; the data area never exceeds `u32::MAX` bytes (entry offsets
//! are `u32`); a next pointer names a floor below the one the array is built for. After an
//! error the builder must be abandoned (the caller removes the file).
//!
//! [`compare_internal`]: crate::format::compare_internal

use super::{Footer, IndexEntry, NextPtr, ENTRY_LEN, FOOTER_LEN, NO_FLOOR};
use crate::format::{user_key, TRAILER_LEN};
use crate::fs::WritableFile;
use crate::sst::filter::FilterBuilder;
use crate::util::crc::{crc32c, mask};
use crate::{Error, Result};
use std::path::PathBuf;

/// What a finished array holds, for the version edit that installs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ArraySummary {
    /// Bytes in the file.
    pub file_size: u64,
    /// Entries in the array (at least 1).
    pub num_entries: u64,
    /// The smallest internal key.
    pub smallest: Vec<u8>,
    /// The largest internal key.
    pub largest: Vec<u8>,
}

/// Builds a sorted-array file from sorted entries.
pub(crate) struct ArrayBuilder {
    file: Box<dyn WritableFile>,
    path: PathBuf,
    floor_slot: Option<u8>,
    /// Bytes of the data area written so far.
    data_len: u64,
    /// The encoded index entries, written after the data area by `finish`.
    index: Vec<u8>,
    filter: Option<FilterBuilder>,
    /// Distinct user keys given to the filter (for the size estimate).
    filter_keys: u64,
    bits_per_key: usize,
    has_pointers: bool,
    num_entries: u32,
    smallest: Vec<u8>,
    last_key: Vec<u8>,
}

impl std::fmt::Debug for ArrayBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArrayBuilder")
            .field("path", &self.path)
            .field("floor_slot", &self.floor_slot)
            .field("data_len", &self.data_len)
            .field("num_entries", &self.num_entries)
            .finish_non_exhaustive()
    }
}

impl ArrayBuilder {
    /// Starts an array written to `file` (already created, empty); `path` names it in errors.
    /// `bits_per_key` sizes the Bloom filter over user keys (0: no filter); `floor_slot` is
    /// the Skip-Array Tree floor the array is built for (`None` for a plain run), which bounds
    /// the floors its next pointers may name. Slot `0xFF` is reserved and refused by `add`.
    pub(crate) fn new(
        file: Box<dyn WritableFile>,
        path: PathBuf,
        bits_per_key: usize,
        floor_slot: Option<u8>,
    ) -> ArrayBuilder {
        ArrayBuilder {
            file,
            path,
            floor_slot,
            data_len: 0,
            index: Vec::new(),
            filter: (bits_per_key > 0).then(|| FilterBuilder::new(bits_per_key)),
            filter_keys: 0,
            bits_per_key,
            has_pointers: false,
            num_entries: 0,
            smallest: Vec::new(),
            last_key: Vec::new(),
        }
    }

    fn invalid(&self, what: String) -> Error {
        Error::InvalidArgument(format!("sorted array {}: {what}", self.path.display()))
    }

    /// Adds an entry with its cascade pointer. REQUIRES: `ikey` sorts strictly after every key
    /// added before. Refuses (`InvalidArgument`, nothing written) a key shorter than a trailer,
    /// a pointer that does not name a floor below the array's, and an entry that would take
    /// the data area past 4 GiB.
    pub(crate) fn add(&mut self, ikey: &[u8], value: &[u8], next: Option<NextPtr>) -> Result<()> {
        if ikey.len() < TRAILER_LEN {
            return Err(self.invalid(format!(
                "key of {} bytes is shorter than an internal-key trailer",
                ikey.len()
            )));
        }
        if self.floor_slot == Some(NO_FLOOR) {
            return Err(self.invalid("floor slot 255 is reserved".into()));
        }
        if let Some(p) = next {
            if self.floor_slot.is_none_or(|f| p.floor >= f) {
                return Err(self.invalid(format!(
                    "next pointer to floor {} from an array built for floor {:?}",
                    p.floor, self.floor_slot
                )));
            }
        }
        let end = self.data_len + ikey.len() as u64 + value.len() as u64;
        if end > u32::MAX as u64 || self.num_entries == u32::MAX {
            return Err(self.invalid(format!(
                "the data area would reach {end} bytes, past the 4 GiB limit of the format"
            )));
        }
        debug_assert!(
            self.num_entries == 0 || crate::format::compare_internal(&self.last_key, ikey).is_lt(),
            "sorted-array keys must be strictly increasing"
        );
        let entry = IndexEntry::new(ikey, value, self.data_len as u32, next);
        self.file.append(ikey)?;
        self.file.append(value)?;
        self.data_len = end;
        self.index.extend_from_slice(&entry.encode());
        self.has_pointers |= next.is_some();
        if let Some(f) = &mut self.filter {
            let uk = user_key(ikey);
            if self.num_entries == 0 || user_key(&self.last_key) != uk {
                f.add_key(uk);
                self.filter_keys += 1;
            }
        }
        if self.num_entries == 0 {
            self.smallest = ikey.to_vec();
        }
        self.last_key.clear();
        self.last_key.extend_from_slice(ikey);
        self.num_entries += 1;
        Ok(())
    }

    #[cfg(test)]
    /// Entries added so far.
    pub(crate) fn num_entries(&self) -> u64 {
        self.num_entries as u64
    }

    /// The file's size if it were finished now (the filter's size is estimated from its key
    /// count, exactly as `FilterBuilder` sizes it).
    pub(crate) fn file_size_estimate(&self) -> u64 {
        let filter = if self.filter.is_some() {
            (self.filter_keys * self.bits_per_key as u64)
                .max(64)
                .div_ceil(8)
                + 1
        } else {
            0
        };
        self.data_len + self.index.len() as u64 + filter + FOOTER_LEN as u64
    }

    /// Writes the index, the filter and the footer, then syncs the file. An array without
    /// entries is refused (`InvalidArgument`): callers never build one.
    pub(crate) fn finish(mut self) -> Result<ArraySummary> {
        if self.num_entries == 0 {
            return Err(self.invalid("an empty sorted array is not built".into()));
        }
        let filter = self.filter.as_ref().map(|f| f.finish()).unwrap_or_default();
        let index_offset = self.data_len;
        let filter_offset = index_offset + self.index.len() as u64;
        debug_assert_eq!(self.index.len(), self.num_entries as usize * ENTRY_LEN);
        let footer = Footer {
            num_entries: self.num_entries,
            data_len: self.data_len,
            index_offset,
            filter_offset,
            filter_len: filter.len() as u64,
            has_pointers: self.has_pointers,
            floor_slot: self.floor_slot,
            index_crc: mask(crc32c(&self.index)),
            filter_crc: mask(crc32c(&filter)),
        };
        self.file.append(&self.index)?;
        self.file.append(&filter)?;
        self.file.append(&footer.encode())?;
        self.file.sync()?;
        let file_size = filter_offset + filter.len() as u64 + FOOTER_LEN as u64;
        debug_assert_eq!(self.file.size(), file_size);
        Ok(ArraySummary {
            file_size,
            num_entries: self.num_entries as u64,
            smallest: self.smallest,
            largest: self.last_key,
        })
    }
}
