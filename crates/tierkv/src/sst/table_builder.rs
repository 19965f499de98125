//! Writes one table: data blocks, the filter block, the index block and the footer.
//!
//! Thread-safety: a [`TableBuilder`] has one owner (a flush or a compaction).
//!
//! Invariants: keys are internal keys added in strictly increasing [`compare_internal`] order;
//! every index key `s_i` satisfies `last_key(block_i) <= s_i < first_key(block_i+1)`; the file is
//! synced by [`TableBuilder::finish`] before the summary is returned. After an error the builder
//! must be abandoned (the caller removes the file).

use super::block_builder::BlockBuilder;
use super::filter::FilterBuilder;
use super::format::{block_trailer, BlockHandle, Footer, BLOCK_TRAILER_LEN, FOOTER_LEN};
use super::value_log::{decode_stored, Stored, ValueLogWriter, ValueLogs, TAG_INLINE};
use crate::format::{
    compare_internal, pack_trailer, user_key, MAX_SEQUENCE, TRAILER_LEN, VALUE_TYPE_FOR_SEEK,
};
use crate::fs::WritableFile;
use crate::options::TableOptions;
use crate::stats::{IoPurpose, Part};
use crate::tier::Tier;
use crate::{Error, Result};
use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

/// What a finished table holds, for the version edit that installs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableSummary {
    /// Bytes in the file.
    pub file_size: u64,
    /// Entries in the table.
    pub num_entries: u64,
    /// The smallest internal key (empty for an empty table).
    pub smallest: Vec<u8>,
    /// The largest internal key (empty for an empty table).
    pub largest: Vec<u8>,
    /// Every data block's handle, in order: block `b` holds the entries added while
    /// [`TableBuilder::next_block`] was `b` (a global index maps keys straight to blocks).
    pub data_blocks: Vec<BlockHandle>,
    /// For a separated table: each value log its pointers name, with the record bytes they
    /// name in it, by log number (the table's own log among them when it wrote one).
    pub value_refs: Vec<(u64, u64)>,
    /// Bytes written to the table's own value log.
    pub value_log_bytes: u64,
}

/// Builds a table file from sorted entries.
pub struct TableBuilder {
    file: Box<dyn WritableFile>,
    path: PathBuf,
    block_size: usize,
    offset: u64,
    data_block: BlockBuilder,
    /// The index block: the whole index, or, with partitions, the open partition.
    index_block: BlockBuilder,
    /// Data blocks per index partition (0: one index block).
    partition_blocks: usize,
    /// Entries in the open partition.
    partition_entries: usize,
    /// The top-level index (partitioned tables only): one entry per finished partition.
    top_index: BlockBuilder,
    /// Handle of the last finished data block, whose index entry waits for the next key.
    pending_handle: Option<BlockHandle>,
    filter: Option<FilterBuilder>,
    last_key: Vec<u8>,
    smallest: Vec<u8>,
    num_entries: u64,
    scratch: Vec<u8>,
    handle_buf: Vec<u8>,
    /// Handles of the data blocks written so far.
    data_blocks: Vec<BlockHandle>,
    /// Key-value separation, when on: values go to a value log above a size.
    separation: Option<Box<Separation>>,
}

/// A separated table's value log and the logs its pointers name.
struct Separation {
    log: ValueLogWriter,
    /// Values of at least this many bytes go to the log.
    threshold: usize,
    /// Record bytes named per log number.
    refs: BTreeMap<u64, u64>,
    /// Logs whose values [`TableBuilder::add_stored`] copies into this table's log instead of
    /// copying their pointers (garbage collection of mostly dead logs), with the reader and
    /// the tier they are on.
    rewrite: HashSet<u64>,
    reader: Option<(Arc<ValueLogs>, Tier, Part)>,
    stored: Vec<u8>,
    value: Vec<u8>,
}

impl std::fmt::Debug for TableBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableBuilder")
            .field("path", &self.path)
            .field("offset", &self.offset)
            .field("num_entries", &self.num_entries)
            .finish_non_exhaustive()
    }
}

/// Sets `out` to a short internal key `s` with `start <= s < limit` (LevelDB's
/// `FindShortestSeparator` on the user keys).
fn shortest_separator(start: &[u8], limit: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let (us, ul) = (user_key(start), user_key(limit));
    let n = us.len().min(ul.len());
    let diff = us.iter().zip(ul).take_while(|(a, b)| a == b).count();
    if diff < n {
        let b = us[diff];
        if b < 0xff && b + 1 < ul[diff] && diff + 1 < us.len() {
            out.extend_from_slice(&us[..=diff]);
            out[diff] += 1;
            out.extend_from_slice(&pack_trailer(MAX_SEQUENCE, VALUE_TYPE_FOR_SEEK).to_le_bytes());
            debug_assert!(compare_internal(start, out).is_lt());
            debug_assert!(compare_internal(out, limit).is_lt());
            return;
        }
    }
    out.extend_from_slice(start);
}

/// Sets `out` to a short internal key `>= key` (LevelDB's `FindShortSuccessor`).
fn short_successor(key: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let uk = user_key(key);
    if let Some(i) = uk.iter().position(|&b| b != 0xff) {
        if i + 1 < uk.len() {
            out.extend_from_slice(&uk[..=i]);
            out[i] += 1;
            out.extend_from_slice(&pack_trailer(MAX_SEQUENCE, VALUE_TYPE_FOR_SEEK).to_le_bytes());
            debug_assert!(compare_internal(key, out).is_lt());
            return;
        }
    }
    out.extend_from_slice(key);
}

impl TableBuilder {
    /// Starts a table written to `file` (already created, empty); `path` names it in errors.
    pub fn new(options: &TableOptions, file: Box<dyn WritableFile>, path: PathBuf) -> TableBuilder {
        TableBuilder {
            file,
            path,
            block_size: options.block_size.max(1),
            offset: 0,
            data_block: BlockBuilder::new(options.restart_interval),
            index_block: BlockBuilder::new(1),
            partition_blocks: options.index_partition_blocks,
            partition_entries: 0,
            top_index: BlockBuilder::new(1),
            pending_handle: None,
            filter: (options.bloom_bits_per_key > 0)
                .then(|| FilterBuilder::new(options.bloom_bits_per_key)),
            last_key: Vec::new(),
            smallest: Vec::new(),
            num_entries: 0,
            scratch: Vec::new(),
            handle_buf: Vec::new(),
            data_blocks: Vec::new(),
            separation: None,
        }
    }

    /// Turns key-value separation on (before the first entry): values of at least
    /// `threshold` bytes are appended to `log` and the table stores pointers to them; the
    /// table is written in a separated format version.
    pub fn separate_values(&mut self, log: ValueLogWriter, threshold: usize) {
        debug_assert_eq!(self.num_entries, 0);
        self.separation = Some(Box::new(Separation {
            log,
            threshold: threshold.max(1),
            refs: BTreeMap::new(),
            rewrite: HashSet::new(),
            reader: None,
            stored: Vec::new(),
            value: Vec::new(),
        }));
    }

    /// For a separated table: values that entries added with [`TableBuilder::add_stored`]
    /// point to in the logs `rewrite` are read (through `reader`, from `tier`, counted as
    /// `part`'s compaction reads) and written to this table's log, instead of their pointers
    /// being copied: a compaction's garbage collection of logs that are mostly dead.
    pub fn rewrite_value_logs(
        &mut self,
        rewrite: HashSet<u64>,
        reader: Arc<ValueLogs>,
        tier: Tier,
        part: Part,
    ) {
        if let Some(s) = &mut self.separation {
            s.rewrite = rewrite;
            s.reader = Some((reader, tier, part));
        }
    }

    /// The ordinal of the data block the next [`TableBuilder::add`] goes into: its handle is
    /// `data_blocks[ordinal]` of the finished table's summary (SLM-DB's global index maps keys
    /// to blocks).
    pub fn next_block(&self) -> usize {
        self.data_blocks.len()
    }

    /// Adds an entry. REQUIRES: `internal_key` is a valid internal key sorting strictly after
    /// every key added before.
    pub fn add(&mut self, internal_key: &[u8], value: &[u8]) -> Result<()> {
        let Some(sep) = &mut self.separation else {
            return self.add_entry(internal_key, value);
        };
        let mut stored = std::mem::take(&mut sep.stored);
        stored.clear();
        if value.len() >= sep.threshold {
            let p = sep.log.append(value)?;
            *sep.refs.entry(p.number).or_default() += p.record_bytes();
            p.encode_stored(&mut stored);
        } else {
            stored.push(TAG_INLINE);
            stored.extend_from_slice(value);
        }
        let r = self.add_entry(internal_key, &stored);
        if let Some(sep) = &mut self.separation {
            sep.stored = stored;
        }
        r
    }

    /// Adds an entry whose value is in the stored form of a separated table (a compaction
    /// copying entries of separated tables): a pointer is copied as it is (unless its log is
    /// being rewritten), an inline value is added as by [`TableBuilder::add`]. A table
    /// without separation refuses it.
    pub fn add_stored(&mut self, internal_key: &[u8], stored: &[u8]) -> Result<()> {
        let Some(sep) = &mut self.separation else {
            return Err(Error::InvalidArgument(
                "a stored value added to a table without key-value separation".into(),
            ));
        };
        let p = match decode_stored(stored) {
            Ok(Stored::Inline(v)) => return self.add(internal_key, v),
            Ok(Stored::Pointer(p)) => p,
            Err(r) => return Err(Error::corruption("compaction input", r)),
        };
        if sep.rewrite.contains(&p.number) {
            if let Some((reader, tier, part)) = &sep.reader {
                let mut value = std::mem::take(&mut sep.value);
                let read = reader.read(*tier, p, *part, IoPurpose::Compaction, &mut value);
                let r = read.and_then(|()| self.add(internal_key, &value));
                if let Some(sep) = &mut self.separation {
                    sep.value = value;
                }
                return r;
            }
        }
        *sep.refs.entry(p.number).or_default() += p.record_bytes();
        self.add_entry(internal_key, stored)
    }

    /// Adds an entry with `value` as the block stores it.
    fn add_entry(&mut self, internal_key: &[u8], value: &[u8]) -> Result<()> {
        if internal_key.len() < TRAILER_LEN {
            return Err(Error::InvalidArgument(format!(
                "table key of {} bytes is shorter than an internal-key trailer",
                internal_key.len()
            )));
        }
        if internal_key.len() > u32::MAX as usize || value.len() > u32::MAX as usize {
            return Err(Error::InvalidArgument("table entry too large".into()));
        }
        debug_assert!(
            self.num_entries == 0 || compare_internal(&self.last_key, internal_key).is_lt(),
            "table keys must be strictly increasing"
        );
        if let Some(h) = self.pending_handle.take() {
            shortest_separator(&self.last_key, internal_key, &mut self.scratch);
            self.add_index_entry(h)?;
        }
        if let Some(f) = &mut self.filter {
            let uk = user_key(internal_key);
            if self.num_entries == 0 || user_key(&self.last_key) != uk {
                f.add_key(uk);
            }
        }
        if self.num_entries == 0 {
            self.smallest.extend_from_slice(internal_key);
        }
        self.last_key.clear();
        self.last_key.extend_from_slice(internal_key);
        self.num_entries += 1;
        self.data_block.add(internal_key, value);
        if self.data_block.size_estimate() >= self.block_size {
            self.flush_data_block()?;
        }
        Ok(())
    }

    /// Adds the index entry with key `self.scratch` for `h`; with partitions, a partition
    /// that is now full is written out (its top-level entry has the same key).
    fn add_index_entry(&mut self, h: BlockHandle) -> Result<()> {
        self.handle_buf.clear();
        h.encode_varint(&mut self.handle_buf);
        self.index_block.add(&self.scratch, &self.handle_buf);
        self.partition_entries += 1;
        if self.partition_blocks > 0 && self.partition_entries >= self.partition_blocks {
            self.flush_partition()?;
        }
        Ok(())
    }

    /// Writes the open index partition and adds its top-level entry (key `self.scratch`, the
    /// key of its last entry).
    fn flush_partition(&mut self) -> Result<()> {
        if self.partition_entries == 0 {
            return Ok(());
        }
        let h = write_raw_block(&mut *self.file, &mut self.offset, self.index_block.finish())?;
        self.index_block.reset();
        self.partition_entries = 0;
        self.handle_buf.clear();
        h.encode_varint(&mut self.handle_buf);
        self.top_index.add(&self.scratch, &self.handle_buf);
        Ok(())
    }

    fn flush_data_block(&mut self) -> Result<()> {
        if self.data_block.is_empty() {
            return Ok(());
        }
        debug_assert!(self.pending_handle.is_none());
        let contents = self.data_block.finish();
        let handle = write_raw_block(&mut *self.file, &mut self.offset, contents)?;
        self.data_blocks.push(handle);
        self.data_block.reset();
        self.pending_handle = Some(handle);
        Ok(())
    }

    /// Entries added so far.
    #[cfg(test)]
    pub fn num_entries(&self) -> u64 {
        self.num_entries
    }

    /// Bytes written so far plus the pending data block.
    pub fn file_size_estimate(&self) -> u64 {
        self.offset
            + if self.data_block.is_empty() {
                0
            } else {
                self.data_block.size_estimate() as u64
            }
    }

    /// The size the file would have if finished now: [`TableBuilder::file_size_estimate`]
    /// plus the index entry of the last data block, the open index block (or partition and
    /// the top-level index), the filter block and the footer, with their trailers. It does not
    /// count the table's own value log, a file of its own.
    pub fn finished_size_estimate(&self) -> u64 {
        let trailer = BLOCK_TRAILER_LEN;
        // The entry for the last (or pending) data block: its key, at most, and a handle.
        let last_entry = self.last_key.len() + 2 * 10 + 8;
        // The open data block's trailer, then the index.
        let mut tail = trailer + self.index_block.size_estimate() + trailer + last_entry;
        if self.partition_blocks > 0 {
            tail += self.top_index.size_estimate() + trailer + last_entry;
        }
        if let Some(f) = &self.filter {
            tail += f.size_estimate() + trailer;
        }
        self.file_size_estimate() + (tail + FOOTER_LEN) as u64
    }

    /// Bytes written to the table's own value log so far (0 without separation).
    pub fn value_log_size(&self) -> u64 {
        self.separation.as_ref().map_or(0, |s| s.log.size())
    }

    /// Writes the last data block, the filter block, the index block and the footer, then syncs
    /// the file.
    pub fn finish(mut self) -> Result<TableSummary> {
        // The values first: a table must never name a log that is not durable.
        let value_log_bytes = match &mut self.separation {
            Some(s) => s.log.finish()?,
            None => 0,
        };
        self.flush_data_block()?;
        if let Some(h) = self.pending_handle.take() {
            short_successor(&self.last_key, &mut self.scratch);
            self.add_index_entry(h)?;
        }
        let partitioned = self.partition_blocks > 0;
        if partitioned {
            self.flush_partition()?;
        }
        let filter = match &self.filter {
            Some(f) => {
                let contents = f.finish();
                write_raw_block(&mut *self.file, &mut self.offset, &contents)?
            }
            None => BlockHandle::default(),
        };
        let index_contents = if partitioned {
            self.top_index.finish()
        } else {
            self.index_block.finish()
        };
        let index = write_raw_block(&mut *self.file, &mut self.offset, index_contents)?;
        let footer = Footer {
            filter,
            index,
            partitioned,
            separated: self.separation.is_some(),
        }
        .encode();
        self.file.append(&footer)?;
        self.offset += footer.len() as u64;
        self.file.sync()?;
        debug_assert_eq!(self.file.size(), self.offset);
        Ok(TableSummary {
            file_size: self.offset,
            num_entries: self.num_entries,
            smallest: self.smallest,
            largest: self.last_key,
            data_blocks: self.data_blocks,
            value_refs: self
                .separation
                .map(|s| s.refs.into_iter().collect())
                .unwrap_or_default(),
            value_log_bytes,
        })
    }
}

/// Appends `contents` and its trailer at `*offset`; returns the handle and advances `*offset`.
fn write_raw_block(
    file: &mut dyn WritableFile,
    offset: &mut u64,
    contents: &[u8],
) -> Result<BlockHandle> {
    let handle = BlockHandle {
        offset: *offset,
        size: contents.len() as u64,
    };
    file.append(contents)?;
    let trailer = block_trailer(contents);
    file.append(&trailer)?;
    *offset += (contents.len() + trailer.len()) as u64;
    Ok(handle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{make_internal_key, ValueType};

    #[test]
    fn separators_are_between_keys() {
        let mut out = Vec::new();
        let cases: &[(&[u8], &[u8])] = &[
            (b"abcdef", b"abzzz"),
            (b"abc", b"abd"),
            (b"abc", b"abc"),
            (b"a\xff\xff", b"b"),
            (b"helloworld", b"hellp"),
            (b"", b"a"),
        ];
        for &(a, b) in cases {
            let ka = make_internal_key(a, 10, ValueType::Value);
            let kb = make_internal_key(b, if a == b { 5 } else { 10 }, ValueType::Value);
            shortest_separator(&ka, &kb, &mut out);
            assert!(compare_internal(&ka, &out).is_le(), "{a:?} {b:?}");
            assert!(compare_internal(&out, &kb).is_lt(), "{a:?} {b:?}");
            assert!(out.len() <= ka.len());
        }
        shortest_separator(
            &make_internal_key(b"abcdef", 1, ValueType::Value),
            &make_internal_key(b"abzzz", 1, ValueType::Value),
            &mut out,
        );
        assert_eq!(user_key(&out), b"abd");
        for k in [&b"abc"[..], b"\xff\xff", b"\xffa", b""] {
            let ik = make_internal_key(k, 3, ValueType::Deletion);
            short_successor(&ik, &mut out);
            assert!(compare_internal(&ik, &out).is_le());
            assert!(out.len() <= ik.len());
        }
    }
}
