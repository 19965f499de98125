//! An open table: point lookups and two-level iteration over a table file.
//!
//! [`Table::open`] reads the footer, the index block and the filter block once; the index is kept
//! parsed (separator keys in one buffer plus an array of block handles) and the filter resident,
//! so a lookup costs a binary search in DRAM, a filter probe, and at most one data block read
//! (or a block cache hit). A table with a partitioned index (format version 2, written with
//! `table.index_partition_blocks > 0`: FluidKV's logical sorted tables) keeps only the top-level
//! index in DRAM, one entry per index partition; a lookup then reads the partition and one data
//! block.
//!
//! Thread-safety: a [`Table`] is immutable after open and shared as `Arc<Table>` by any number of
//! threads; a [`TableIterator`] has one owner and keeps its table alive.
//!
//! Invariants: every block read from the file has its checksum verified before use; every length,
//! offset, varint and restart is bounds-checked, so damaged bytes give
//! [`crate::Error::Corruption`] naming the file (and the block offset), never a panic or wrong
//! data. Index keys are strictly increasing and data block handles are ordered, non-overlapping
//! and lie before the filter and index blocks (checked at open).

use super::block::{Block, BlockIter};
use super::cache::BlockCache;
use super::filter::BloomFilter;
use super::format::{block_location, read_block, BlockHandle, Footer, FOOTER_LEN};
use super::value_log::{decode_stored, Stored, ValueLogs};
use crate::format::{compare_internal, parse_internal_key, user_key, TRAILER_LEN};
use crate::fs::RandomAccessFile;
use crate::iterator::InternalIterator;
use crate::stats::{Counters, IoPurpose, Part};
use crate::tier::Tier;
use crate::{Error, Result};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

#[derive(Clone, Copy, Debug)]
struct IndexEntry {
    key_start: usize,
    key_end: usize,
    handle: BlockHandle,
}

/// The parsed index block: entry `i`'s key is `>=` every key of data block `i` and `<` every
/// key of block `i + 1`.
#[derive(Debug)]
struct Index {
    keys: Vec<u8>,
    entries: Vec<IndexEntry>,
}

impl Index {
    #[inline]
    fn key(&self, i: usize) -> &[u8] {
        let e = &self.entries[i];
        &self.keys[e.key_start..e.key_end]
    }

    /// The first block that may hold a key `>= target`.
    #[inline]
    fn find(&self, target: &[u8]) -> usize {
        let (mut lo, mut hi) = (0, self.entries.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if compare_internal(self.key(mid), target).is_lt() {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    fn resident_bytes(&self) -> u64 {
        (self.keys.capacity() + self.entries.capacity() * std::mem::size_of::<IndexEntry>()) as u64
    }
}

/// An open, immutable table reader.
pub struct Table {
    file: Arc<dyn RandomAccessFile>,
    file_number: u64,
    path: PathBuf,
    cache: Arc<BlockCache>,
    counters: Arc<Counters>,
    /// The tier the file lives on: reads are counted against it, and PM-resident tables are
    /// read in place (no block cache: a DRAM copy would only duplicate byte-addressable data).
    tier: Tier,
    /// The pipeline part whose reads this table's bytes count as.
    part: Part,
    file_size: u64,
    /// Blocks must end at or before this offset (the footer's start).
    data_end: u64,
    /// The index: of data blocks, or, when `partitioned`, the top-level index of index
    /// partitions (each an index block over the data blocks written before it).
    index: Index,
    partitioned: bool,
    index_bytes: u64,
    filter: Option<BloomFilter>,
    /// Whether values are stored separated (a tag byte, then the value or a pointer into a
    /// value log read through `values`).
    separated: bool,
    values: Option<Arc<ValueLogs>>,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("path", &self.path)
            .field("file_number", &self.file_number)
            .field("file_size", &self.file_size)
            .field("data_blocks", &self.index.entries.len())
            .finish_non_exhaustive()
    }
}

fn parse_index(block: Block, path: &Path, handle: BlockHandle, meta_start: u64) -> Result<Index> {
    let loc = || block_location(path, handle.offset);
    let mut keys = Vec::with_capacity(block.size());
    let mut entries: Vec<IndexEntry> = Vec::new();
    let mut it = BlockIter::new(Arc::new(block), Vec::new());
    it.seek_to_first();
    let mut prev_end = 0u64;
    while it.valid() {
        let h = BlockHandle::decode_varint(it.value())
            .ok_or_else(|| Error::corruption(loc(), "bad block handle in index"))?;
        let end = h.end_with_trailer().unwrap_or(u64::MAX);
        if h.offset < prev_end || end > meta_start {
            return Err(Error::corruption(
                loc(),
                format!(
                    "index entry {} has data block handle {}+{} out of order or out of range",
                    entries.len(),
                    h.offset,
                    h.size
                ),
            ));
        }
        prev_end = end;
        if let Some(last) = entries.last() {
            let pk = &keys[last.key_start..last.key_end];
            if !compare_internal(pk, it.key()).is_lt() {
                return Err(Error::corruption(loc(), "index keys not increasing"));
            }
        }
        let key_start = keys.len();
        keys.extend_from_slice(it.key());
        entries.push(IndexEntry {
            key_start,
            key_end: keys.len(),
            handle: h,
        });
        it.next();
    }
    if let Some(r) = it.status() {
        return Err(Error::corruption(loc(), r));
    }
    keys.shrink_to_fit();
    entries.shrink_to_fit();
    Ok(Index { keys, entries })
}

/// Refuses a lookup key too short to be an internal key.
fn check_lookup_key(lookup_key: &[u8]) -> Result<()> {
    if lookup_key.len() < TRAILER_LEN {
        return Err(Error::InvalidArgument(
            "lookup key shorter than an internal-key trailer".into(),
        ));
    }
    Ok(())
}

impl Table {
    /// Opens a table: reads and checks the footer, the index block and the filter block (those
    /// bytes are counted under `purpose`, the opener's).
    #[allow(clippy::too_many_arguments)] // what a file is, where its bytes are counted
    pub fn open(
        file: Arc<dyn RandomAccessFile>,
        file_number: u64,
        path: PathBuf,
        cache: Arc<BlockCache>,
        counters: Arc<Counters>,
        tier: Tier,
        part: Part,
        purpose: IoPurpose,
    ) -> Result<Arc<Table>> {
        Self::open_with_values(
            file,
            file_number,
            path,
            cache,
            counters,
            (tier, part, purpose),
            None,
        )
    }

    /// [`Table::open`] for a table that may hold separated values, read through `values`
    /// (a separated table opened without it reports its pointers as corruption).
    pub fn open_with_values(
        file: Arc<dyn RandomAccessFile>,
        file_number: u64,
        path: PathBuf,
        cache: Arc<BlockCache>,
        counters: Arc<Counters>,
        (tier, part, purpose): (Tier, Part, IoPurpose),
        values: Option<Arc<ValueLogs>>,
    ) -> Result<Arc<Table>> {
        let file_size = file.size();
        if file_size < FOOTER_LEN as u64 {
            return Err(Error::corruption(
                path.display().to_string(),
                format!("file of {file_size} bytes is too short for a table footer"),
            ));
        }
        let data_end = file_size - FOOTER_LEN as u64;
        let mut fbuf = [0u8; FOOTER_LEN];
        file.read_exact_at(data_end, &mut fbuf)?;
        counters.add_read(tier, part, purpose, FOOTER_LEN as u64);
        let footer = Footer::decode(&fbuf).map_err(|r| {
            Error::corruption(format!("{} footer at {data_end}", path.display()), r)
        })?;

        let mut meta_start = footer.index.offset;
        let filter =
            if footer.filter.size > 0 {
                meta_start = meta_start.min(footer.filter.offset);
                let (data, n) = read_block(&*file, &path, footer.filter, data_end)?;
                counters.add_read(tier, part, purpose, n);
                Some(BloomFilter::new(data).map_err(|r| {
                    Error::corruption(block_location(&path, footer.filter.offset), r)
                })?)
            } else {
                None
            };
        let (data, n) = read_block(&*file, &path, footer.index, data_end)?;
        counters.add_read(tier, part, purpose, n);
        let block = Block::new(data)
            .map_err(|r| Error::corruption(block_location(&path, footer.index.offset), r))?;
        let index = parse_index(block, &path, footer.index, meta_start)?;
        let index_bytes = index.resident_bytes();
        Ok(Arc::new(Table {
            file,
            file_number,
            path,
            cache,
            counters,
            tier,
            part,
            file_size,
            data_end,
            index,
            partitioned: footer.partitioned,
            index_bytes,
            filter,
            separated: footer.separated,
            values,
        }))
    }

    /// Whether the table stores its values separated.
    pub fn is_separated(&self) -> bool {
        self.separated
    }

    /// The value a separated table stores as `stored`, into `out`; `at` (a data block's
    /// offset) names the place in errors.
    fn resolve(&self, stored: &[u8], at: u64, purpose: IoPurpose, out: &mut Vec<u8>) -> Result<()> {
        match decode_stored(stored) {
            Ok(Stored::Inline(v)) => {
                out.clear();
                out.extend_from_slice(v);
                Ok(())
            }
            Ok(Stored::Pointer(p)) => match &self.values {
                Some(logs) => logs.read(self.tier, p, self.part, purpose, out),
                None => Err(self.corruption_at(
                    at,
                    "a value pointer in a table opened without its value logs",
                )),
            },
            Err(r) => Err(self.corruption_at(at, r)),
        }
    }

    /// `(key, stored)` of a lookup, with the value resolved when the table is separated.
    fn found(
        &self,
        key: &[u8],
        stored: &[u8],
        at: u64,
        purpose: IoPurpose,
    ) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        if !self.separated {
            return Ok(Some((key.to_vec(), stored.to_vec())));
        }
        let mut value = Vec::new();
        self.resolve(stored, at, purpose, &mut value)?;
        Ok(Some((key.to_vec(), value)))
    }

    fn corruption_at(&self, offset: u64, reason: &str) -> Error {
        Error::corruption(block_location(&self.path, offset), reason)
    }

    /// An iterator over index partition `top` (read through the cache, as a data block).
    fn partition(&self, top: usize, purpose: IoPurpose, fill_cache: bool) -> Result<BlockIter> {
        let block = self.block_at(self.index.entries[top].handle, purpose, fill_cache)?;
        Ok(BlockIter::new(block, Vec::new()))
    }

    /// The data block handle `value` of an entry of the partition at `part` holds: it must lie
    /// before the partition (a partition follows its data blocks).
    fn partition_entry(&self, part: BlockHandle, value: &[u8]) -> Result<BlockHandle> {
        let h = BlockHandle::decode_varint(value).ok_or_else(|| {
            self.corruption_at(part.offset, "bad block handle in index partition")
        })?;
        if h.end_with_trailer().is_none_or(|end| end > part.offset) {
            return Err(self.corruption_at(
                part.offset,
                &format!(
                    "index partition names data block {}+{} past the partition",
                    h.offset, h.size
                ),
            ));
        }
        Ok(h)
    }

    /// Every data block's handle with its index key, in order; a partitioned table's
    /// partitions are read (bypassing the cache, counted under `purpose`) and checked: keys
    /// increasing, none past its partition's top-level key, handles in order.
    fn data_handles(&self, purpose: IoPurpose) -> Result<Vec<(BlockHandle, Vec<u8>)>> {
        if !self.partitioned {
            return Ok((0..self.index.entries.len())
                .map(|i| (self.index.entries[i].handle, self.index.key(i).to_vec()))
                .collect());
        }
        let mut out: Vec<(BlockHandle, Vec<u8>)> = Vec::new();
        let mut prev_end = 0u64;
        for top in 0..self.index.entries.len() {
            let at = self.index.entries[top].handle;
            let mut it = BlockIter::new(self.read_data_block_uncached(at, purpose)?, Vec::new());
            it.seek_to_first();
            let first = out.len();
            while it.valid() {
                let h = self.partition_entry(at, it.value())?;
                if h.offset < prev_end {
                    return Err(self.corruption_at(at.offset, "data blocks out of order"));
                }
                if out
                    .last()
                    .is_some_and(|(_, k)| !compare_internal(k, it.key()).is_lt())
                {
                    return Err(self.corruption_at(at.offset, "index keys not increasing"));
                }
                if compare_internal(it.key(), self.index.key(top)).is_gt() {
                    return Err(self.corruption_at(at.offset, "key past its top-level entry"));
                }
                prev_end = h.end_with_trailer().unwrap_or(u64::MAX);
                out.push((h, it.key().to_vec()));
                it.next();
            }
            if let Some(r) = it.status() {
                return Err(self.corruption_at(at.offset, r));
            }
            if out.len() == first {
                return Err(self.corruption_at(at.offset, "empty index partition"));
            }
            prev_end = prev_end.max(at.end_with_trailer().unwrap_or(u64::MAX));
        }
        Ok(out)
    }

    /// Reads the data block at `h` through the cache.
    fn block_at(&self, h: BlockHandle, purpose: IoPurpose, fill_cache: bool) -> Result<Arc<Block>> {
        if self.tier == Tier::Pm {
            return self.read_data_block_uncached(h, purpose);
        }
        if let Some(b) = self.cache.get(self.file_number, h.offset) {
            self.counters.block_cache_hits.fetch_add(1, Relaxed);
            return Ok(b);
        }
        self.counters.block_cache_misses.fetch_add(1, Relaxed);
        let block = self.read_data_block_uncached(h, purpose)?;
        if fill_cache {
            self.cache.insert(self.file_number, h.offset, block.clone());
        }
        Ok(block)
    }

    fn read_data_block_uncached(&self, h: BlockHandle, purpose: IoPurpose) -> Result<Arc<Block>> {
        let (data, n) = read_block(&*self.file, &self.path, h, self.data_end)?;
        self.counters.add_read(self.tier, self.part, purpose, n);
        Ok(Arc::new(
            Block::new(data).map_err(|r| self.corruption_at(h.offset, r))?,
        ))
    }

    /// Looks up `lookup_key` (an internal key): the first entry `>= lookup_key` if it has the
    /// same user key, as `(internal key, value)`; `None` otherwise or if the filter rules the
    /// user key out.
    pub fn get(
        &self,
        lookup_key: &[u8],
        purpose: IoPurpose,
        fill_cache: bool,
    ) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        check_lookup_key(lookup_key)?;
        let uk = user_key(lookup_key);
        if let Some(f) = &self.filter {
            if !f.may_contain(uk) {
                self.counters.bloom_useful.fetch_add(1, Relaxed);
                return Ok(None);
            }
        }
        let mut cursor = BlockCursor::default();
        let mut key_buf = Vec::new();
        let mut at = cursor.seek(self, lookup_key, purpose, fill_cache)?;
        while let Some(h) = at {
            let block = self.block_at(h, purpose, fill_cache)?;
            let mut it = BlockIter::new(block, key_buf);
            it.seek(lookup_key);
            if let Some(r) = it.status() {
                return Err(self.corruption_at(h.offset, r));
            }
            if it.valid() {
                if user_key(it.key()) == uk {
                    return self.found(it.key(), it.value(), h.offset, purpose);
                }
                return Ok(None);
            }
            // Only possible when the index key is past the block's last key: the answer, if
            // any, starts the next block.
            key_buf = it.into_key_buffer();
            at = cursor.next(self, purpose, fill_cache)?;
        }
        Ok(None)
    }

    /// Looks up `lookup_key` in the one data block at `handle` (a location a global index
    /// holds), without the index block or the filter: the first entry `>= lookup_key` in that
    /// block if it has the same user key. A handle that is not one of the table's data blocks
    /// is corruption naming the table. (SLM-DB's global index.)
    pub fn get_in_block(
        &self,
        handle: BlockHandle,
        lookup_key: &[u8],
        purpose: IoPurpose,
        fill_cache: bool,
    ) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        check_lookup_key(lookup_key)?;
        // (A partitioned table's data blocks are not all in DRAM: the block's checksum and
        // bounds are what a wrong handle meets.)
        if !self.partitioned
            && self
                .index
                .entries
                .binary_search_by_key(&handle.offset, |e| e.handle.offset)
                .ok()
                .is_none_or(|i| self.index.entries[i].handle != handle)
        {
            return Err(self.corruption_at(
                handle.offset,
                &format!("no data block of {} bytes starts here", handle.size),
            ));
        }
        let block = self.block_at(handle, purpose, fill_cache)?;
        let mut it = BlockIter::new(block, Vec::new());
        it.seek(lookup_key);
        if let Some(r) = it.status() {
            return Err(self.corruption_at(handle.offset, r));
        }
        if it.valid() && user_key(it.key()) == user_key(lookup_key) {
            return self.found(it.key(), it.value(), handle.offset, purpose);
        }
        Ok(None)
    }

    /// An iterator over the whole table; it keeps the table alive.
    pub fn iter(self: &Arc<Self>, purpose: IoPurpose, fill_cache: bool) -> TableIterator {
        TableIterator {
            table: Arc::clone(self),
            purpose,
            fill_cache,
            cursor: BlockCursor::default(),
            block_offset: 0,
            block_iter: None,
            spare_key_buf: Vec::new(),
            err: None,
            resolve: self.separated,
            value: ValueAt::Block,
            value_buf: Vec::new(),
        }
    }

    /// An iterator whose values are as the table stores them: for a separated table, the
    /// tag and the value or pointer (a compaction copying pointers; see
    /// [`crate::sst::TableBuilder::add_stored`]).
    pub fn iter_stored(self: &Arc<Self>, purpose: IoPurpose) -> TableIterator {
        let mut it = self.iter(purpose, false);
        it.resolve = false;
        it
    }

    /// The table's file number.
    #[cfg(test)]
    pub fn file_number(&self) -> u64 {
        self.file_number
    }

    /// The file's size in bytes.
    #[cfg(test)]
    pub fn file_size(&self) -> u64 {
        self.file_size
    }

    /// The user keys of the DRAM-resident index's entries (data blocks' separators, or index
    /// partitions' for a partitioned table), in order: where a compaction may cut its input
    /// into key ranges of about equal size.
    pub fn index_user_keys(&self) -> Vec<Vec<u8>> {
        (0..self.index.entries.len())
            .map(|i| user_key(self.index.key(i)).to_vec())
            .collect()
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Number of data blocks.
    #[cfg(test)]
    pub fn num_data_blocks(&self) -> usize {
        self.data_handles(IoPurpose::Recovery)
            .map_or(0, |h| h.len())
    }

    /// Whether the index is partitioned (FluidKV's logical sorted tables).
    pub fn is_partitioned(&self) -> bool {
        self.partitioned
    }

    /// A partitioned table's top-level index keys, one per index partition (logical sorted
    /// table), in order: each is at or past its partition's last key and before the next
    /// partition's first. Empty for a table whose index is not partitioned.
    pub fn partition_keys(&self) -> Vec<&[u8]> {
        if !self.partitioned {
            return Vec::new();
        }
        (0..self.index.entries.len())
            .map(|i| self.index.key(i))
            .collect()
    }

    /// Entries of the index held in DRAM (index partitions when partitioned, else data
    /// blocks).
    #[cfg(test)]
    pub fn resident_index_entries(&self) -> usize {
        self.index.entries.len()
    }

    /// DRAM held by the Bloom filter (0 without one).
    pub fn filter_bytes(&self) -> u64 {
        self.filter.as_ref().map_or(0, |f| f.size() as u64)
    }

    /// DRAM held by the parsed index.
    pub fn index_bytes(&self) -> u64 {
        self.index_bytes
    }

    /// Reads every data block bypassing the cache (counted as recovery reads), checks checksums,
    /// restart arrays, internal-key syntax, that keys strictly increase across the table and lie
    /// within their index bounds, and that the filter admits every user key. Returns the number
    /// of entries.
    pub fn verify(&self) -> Result<u64> {
        let mut n = 0u64;
        let mut prev: Vec<u8> = Vec::new();
        let mut key_buf = Vec::new();
        let mut value = Vec::new();
        let handles = self.data_handles(IoPurpose::Recovery)?;
        for (i, (h, index_key)) in handles.iter().enumerate() {
            let h = *h;
            let block = self.read_data_block_uncached(h, IoPurpose::Recovery)?;
            block
                .check_restarts()
                .map_err(|r| self.corruption_at(h.offset, r))?;
            let mut it = BlockIter::new(block, key_buf);
            it.seek_to_first();
            let mut in_block = 0;
            while it.valid() {
                let k = it.key();
                let bad = |r: &str| Err(self.corruption_at(h.offset, r));
                if parse_internal_key(k).is_none() {
                    return bad("malformed internal key");
                }
                if n > 0 && !compare_internal(&prev, k).is_lt() {
                    return bad("keys not strictly increasing");
                }
                if compare_internal(k, index_key).is_gt() {
                    return bad("key past its index entry");
                }
                if i > 0 && !compare_internal(&handles[i - 1].1, k).is_lt() {
                    return bad("key not after the previous block's index entry");
                }
                if let Some(f) = &self.filter {
                    if !f.may_contain(user_key(k)) {
                        return bad("filter rejects a key of the table");
                    }
                }
                if self.separated {
                    self.resolve(it.value(), h.offset, IoPurpose::Recovery, &mut value)?;
                }
                prev.clear();
                prev.extend_from_slice(k);
                n += 1;
                in_block += 1;
                it.next();
            }
            if let Some(r) = it.status() {
                return Err(self.corruption_at(h.offset, r));
            }
            if in_block == 0 {
                return Err(self.corruption_at(h.offset, "empty data block"));
            }
            key_buf = it.into_key_buffer();
        }
        Ok(n)
    }
}

/// A position among a table's data blocks, in order: an entry of the index and, for a
/// partitioned table, an iterator over the current index partition.
#[derive(Default)]
struct BlockCursor {
    top: usize,
    part: Option<BlockIter>,
}

impl BlockCursor {
    /// Moves to the first data block that may hold a key `>= target`; its handle, `None` past
    /// the last block.
    fn seek(
        &mut self,
        t: &Table,
        target: &[u8],
        purpose: IoPurpose,
        fill_cache: bool,
    ) -> Result<Option<BlockHandle>> {
        self.top = t.index.find(target);
        self.open_partition(t, Some(target), purpose, fill_cache)
    }

    /// Moves to the first data block.
    fn seek_to_first(
        &mut self,
        t: &Table,
        purpose: IoPurpose,
        fill_cache: bool,
    ) -> Result<Option<BlockHandle>> {
        self.top = 0;
        self.open_partition(t, None, purpose, fill_cache)
    }

    /// Moves to the next data block.
    fn next(
        &mut self,
        t: &Table,
        purpose: IoPurpose,
        fill_cache: bool,
    ) -> Result<Option<BlockHandle>> {
        if !t.partitioned {
            self.top += 1;
            return Ok(t.index.entries.get(self.top).map(|e| e.handle));
        }
        if let Some(it) = self.part.as_mut().filter(|it| it.valid()) {
            it.next();
        }
        self.settle(t, purpose, fill_cache)
    }

    /// At index entry `self.top`: its data block, or for a partitioned table the partition's
    /// first entry at or after `target` (its first entry for `None`).
    fn open_partition(
        &mut self,
        t: &Table,
        target: Option<&[u8]>,
        purpose: IoPurpose,
        fill_cache: bool,
    ) -> Result<Option<BlockHandle>> {
        self.part = None;
        if !t.partitioned {
            return Ok(t.index.entries.get(self.top).map(|e| e.handle));
        }
        if self.top >= t.index.entries.len() {
            return Ok(None);
        }
        let mut it = t.partition(self.top, purpose, fill_cache)?;
        match target {
            Some(k) => it.seek(k),
            None => it.seek_to_first(),
        }
        self.part = Some(it);
        self.settle(t, purpose, fill_cache)
    }

    /// The handle under the partition iterator, moving on to later partitions past exhausted
    /// ones.
    fn settle(
        &mut self,
        t: &Table,
        purpose: IoPurpose,
        fill_cache: bool,
    ) -> Result<Option<BlockHandle>> {
        loop {
            let Some(it) = &self.part else {
                return Ok(None);
            };
            let at = t.index.entries[self.top].handle;
            if let Some(r) = it.status() {
                return Err(t.corruption_at(at.offset, r));
            }
            if it.valid() {
                return t.partition_entry(at, it.value()).map(Some);
            }
            self.top += 1;
            self.part = None;
            if self.top >= t.index.entries.len() {
                return Ok(None);
            }
            let mut it = t.partition(self.top, purpose, fill_cache)?;
            it.seek_to_first();
            self.part = Some(it);
        }
    }
}

/// A two-level iterator over a table (three-level for a partitioned index): a position among
/// the data blocks plus an iterator over the current one.
pub struct TableIterator {
    table: Arc<Table>,
    purpose: IoPurpose,
    fill_cache: bool,
    cursor: BlockCursor,
    /// The current data block's offset (for errors).
    block_offset: u64,
    block_iter: Option<BlockIter>,
    spare_key_buf: Vec<u8>,
    err: Option<Error>,
    /// Whether values of a separated table are resolved (false: stored form).
    resolve: bool,
    /// Where the current value is.
    value: ValueAt,
    value_buf: Vec<u8>,
}

/// Where a [`TableIterator`]'s current value is.
#[derive(Clone, Copy, Debug)]
enum ValueAt {
    /// The block entry's value, as stored.
    Block,
    /// The block entry's value after its tag (an inline value of a separated table).
    AfterTag,
    /// `value_buf` (a value read from a value log).
    Buf,
}

impl std::fmt::Debug for TableIterator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableIterator")
            .field("table", &self.table.path)
            .field("block_offset", &self.block_offset)
            .field("valid", &self.valid())
            .finish_non_exhaustive()
    }
}

impl TableIterator {
    /// Loads the data block `at` names (dropping the previous one); false (and invalid) past
    /// the end or on error.
    fn load_block(&mut self, at: Result<Option<BlockHandle>>) -> bool {
        let buf = match self.block_iter.take() {
            Some(it) => it.into_key_buffer(),
            None => std::mem::take(&mut self.spare_key_buf),
        };
        let loaded = at.and_then(|h| match h {
            Some(h) if self.err.is_none() => {
                self.block_offset = h.offset;
                self.table
                    .block_at(h, self.purpose, self.fill_cache)
                    .map(Some)
            }
            _ => Ok(None),
        });
        match loaded {
            Ok(Some(b)) => {
                self.block_iter = Some(BlockIter::new(b, buf));
                true
            }
            Ok(None) => {
                self.spare_key_buf = buf;
                false
            }
            Err(e) => {
                self.err = Some(e);
                self.spare_key_buf = buf;
                false
            }
        }
    }

    /// After a block-level move: records block errors and moves on past exhausted blocks.
    fn settle(&mut self) {
        loop {
            let Some(it) = &self.block_iter else { return };
            if let Some(r) = it.status() {
                self.err = Some(self.table.corruption_at(self.block_offset, r));
                self.block_iter = None;
                return;
            }
            if it.valid() {
                if self.resolve {
                    self.resolve_value();
                }
                return;
            }
            let at = self.cursor.next(&self.table, self.purpose, self.fill_cache);
            if !self.load_block(at) {
                return;
            }
            if let Some(it) = &mut self.block_iter {
                it.seek_to_first();
            }
        }
    }
}

impl TableIterator {
    /// At a valid entry of a separated table: finds its value (reading a value log for a
    /// pointer); an error invalidates the iterator.
    fn resolve_value(&mut self) {
        let Some(it) = &self.block_iter else { return };
        let r = match decode_stored(it.value()) {
            Ok(Stored::Inline(_)) => Ok(ValueAt::AfterTag),
            Ok(Stored::Pointer(_)) => self
                .table
                .resolve(
                    it.value(),
                    self.block_offset,
                    self.purpose,
                    &mut self.value_buf,
                )
                .map(|()| ValueAt::Buf),
            Err(r) => Err(self.table.corruption_at(self.block_offset, r)),
        };
        match r {
            Ok(at) => self.value = at,
            Err(e) => {
                self.err = Some(e);
                self.block_iter = None;
            }
        }
    }
}

impl InternalIterator for TableIterator {
    fn valid(&self) -> bool {
        self.err.is_none() && self.block_iter.as_ref().is_some_and(|it| it.valid())
    }

    fn seek_to_first(&mut self) {
        let at = self
            .cursor
            .seek_to_first(&self.table, self.purpose, self.fill_cache);
        if self.load_block(at) {
            if let Some(it) = &mut self.block_iter {
                it.seek_to_first();
            }
            self.settle();
        }
    }

    fn seek(&mut self, target: &[u8]) {
        let at = self
            .cursor
            .seek(&self.table, target, self.purpose, self.fill_cache);
        if self.load_block(at) {
            if let Some(it) = &mut self.block_iter {
                it.seek(target);
            }
            self.settle();
        }
    }

    fn next(&mut self) {
        debug_assert!(self.valid());
        if let Some(it) = &mut self.block_iter {
            if it.valid() {
                it.next();
            }
        }
        self.settle();
    }

    fn key(&self) -> &[u8] {
        self.block_iter.as_ref().expect("valid iterator").key()
    }

    fn value(&self) -> &[u8] {
        let stored = self.block_iter.as_ref().expect("valid iterator").value();
        if !self.resolve {
            return stored;
        }
        match self.value {
            ValueAt::Block => stored,
            ValueAt::AfterTag => &stored[1..],
            ValueAt::Buf => &self.value_buf,
        }
    }

    fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.duplicate()),
            None => Ok(()),
        }
    }
}
