//! Key-value separation: values of at least `table.value_separation` bytes go to a value log
//! next to the table and the table stores a pointer to them (FluidKV's key-value separation,
//! WiscKey's idea). A compaction that only re-sorts entries copies the pointers, not the
//! values, so large values are written once per flush instead of once per level.
//!
//! * A *separated* table (format versions 3 and 4, `docs/format-sst.md`) stores every value as
//!   a tag byte and a payload: [`TAG_INLINE`] and the value, or [`TAG_POINTER`] and a
//!   [`ValuePointer`] (varint64 log number, varint64 offset, varint32 length).
//! * Value log `N` (`NNNNNN.vlog`) is written by the builder of table `N`, on the table's tier,
//!   and synced before the table is; it is a sequence of records, each the value followed by
//!   a masked CRC-32C of (log number, offset, value), so a pointer into the wrong log or to the
//!   wrong offset is corruption, never another value.
//! * Tables name the logs they point into ([`crate::version::FileMetaData::value_refs`], in the
//!   manifest); a log is deleted once no table of any live version names it.
//!
//! Thread-safety: [`ValueLogs`] is shared by every open table; a [`ValueLogWriter`] has one
//! owner (a table builder).

use crate::fs::{FileSystem, RandomAccessFile, WritableFile};
use crate::stats::{Counters, IoPurpose, Part};
use crate::tier::Tier;
use crate::util::coding::{put_varint32, put_varint64, Decoder};
use crate::util::crc::{crc32c_two, mask, unmask};
use crate::{Error, Result};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A stored value's tag: the value follows.
pub const TAG_INLINE: u8 = 0;
/// A stored value's tag: a [`ValuePointer`] follows.
pub const TAG_POINTER: u8 = 1;
/// Bytes of a record's checksum (after the value).
pub const RECORD_CRC_LEN: u64 = 4;

/// Path of value log `n` (`NNNNNN.vlog`).
pub fn value_log_file_name(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("{n:06}.vlog"))
}

/// Where a separated value is: log `number`, the record at `offset`, `len` value bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValuePointer {
    /// The value log's number.
    pub number: u64,
    /// The record's offset in the log.
    pub offset: u64,
    /// The value's length (the record is `len + 4` bytes).
    pub len: u32,
}

impl ValuePointer {
    /// Appends the stored form: [`TAG_POINTER`] and the three varints.
    pub fn encode_stored(&self, out: &mut Vec<u8>) {
        out.push(TAG_POINTER);
        put_varint64(out, self.number);
        put_varint64(out, self.offset);
        put_varint32(out, self.len);
    }

    /// Bytes the record takes in its log.
    pub fn record_bytes(&self) -> u64 {
        self.len as u64 + RECORD_CRC_LEN
    }
}

/// A stored value of a separated table, decoded.
#[derive(Debug, PartialEq, Eq)]
pub enum Stored<'a> {
    /// The value itself.
    Inline(&'a [u8]),
    /// Where the value is.
    Pointer(ValuePointer),
}

/// Decodes a stored value; `Err(reason)` on an unknown tag or a malformed pointer.
pub fn decode_stored(stored: &[u8]) -> std::result::Result<Stored<'_>, &'static str> {
    match stored.split_first() {
        Some((&TAG_INLINE, v)) => Ok(Stored::Inline(v)),
        Some((&TAG_POINTER, p)) => {
            let mut d = Decoder::new(p);
            let number = d.varint64().ok_or("bad value pointer")?;
            let offset = d.varint64().ok_or("bad value pointer")?;
            let len = d.varint32().ok_or("bad value pointer")?;
            if !d.is_empty() {
                return Err("trailing bytes after a value pointer");
            }
            Ok(Stored::Pointer(ValuePointer {
                number,
                offset,
                len,
            }))
        }
        Some(_) => Err("unknown stored-value tag"),
        None => Err("empty stored value in a separated table"),
    }
}

fn record_crc(number: u64, offset: u64, value: &[u8]) -> u32 {
    let mut head = [0u8; 16];
    head[..8].copy_from_slice(&number.to_le_bytes());
    head[8..].copy_from_slice(&offset.to_le_bytes());
    mask(crc32c_two(&head, value))
}

/// Appends the values of one table to its value log, created at the first value.
pub struct ValueLogWriter {
    fs: Arc<dyn FileSystem>,
    path: PathBuf,
    number: u64,
    file: Option<Box<dyn WritableFile>>,
    offset: u64,
}

impl std::fmt::Debug for ValueLogWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ValueLogWriter")
            .field("path", &self.path)
            .field("offset", &self.offset)
            .finish_non_exhaustive()
    }
}

impl ValueLogWriter {
    /// A writer of value log `number` in `dir` on `fs` (nothing is created yet).
    pub fn new(fs: Arc<dyn FileSystem>, dir: &Path, number: u64) -> ValueLogWriter {
        ValueLogWriter {
            fs,
            path: value_log_file_name(dir, number),
            number,
            file: None,
            offset: 0,
        }
    }

    /// Appends `value`; returns its pointer.
    pub fn append(&mut self, value: &[u8]) -> Result<ValuePointer> {
        let len = u32::try_from(value.len())
            .map_err(|_| Error::InvalidArgument("value too large for a value log".into()))?;
        if self.file.is_none() {
            self.file = Some(self.fs.create(&self.path)?);
        }
        let file = self.file.as_mut().expect("created");
        let p = ValuePointer {
            number: self.number,
            offset: self.offset,
            len,
        };
        file.append(value)?;
        file.append(&record_crc(self.number, self.offset, value).to_le_bytes())?;
        self.offset += p.record_bytes();
        Ok(p)
    }

    /// Bytes appended so far.
    pub fn size(&self) -> u64 {
        self.offset
    }

    /// Syncs the log (if anything was written); returns its size.
    pub fn finish(&mut self) -> Result<u64> {
        if let Some(f) = &mut self.file {
            f.sync()?;
        }
        Ok(self.offset)
    }
}

/// The value logs' readers, opened on first use and shared by every table.
pub struct ValueLogs {
    dir: PathBuf,
    ssd: Arc<dyn FileSystem>,
    pm: Option<Arc<dyn FileSystem>>,
    counters: Arc<Counters>,
    open: Mutex<HashMap<u64, Arc<dyn RandomAccessFile>>>,
    /// At most this many logs are kept open (one is closed to open another past it).
    max_open: usize,
}

impl std::fmt::Debug for ValueLogs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ValueLogs")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl ValueLogs {
    /// The value logs of database directory `dir`: on SSD through `ssd`, in the pool through
    /// `pm`; at most `max_open` kept open.
    pub fn new(
        dir: PathBuf,
        ssd: Arc<dyn FileSystem>,
        pm: Option<Arc<dyn FileSystem>>,
        counters: Arc<Counters>,
        max_open: usize,
    ) -> ValueLogs {
        ValueLogs {
            dir,
            ssd,
            pm,
            counters,
            open: Mutex::new(HashMap::new()),
            max_open: max_open.max(1),
        }
    }

    fn file(&self, tier: Tier, number: u64) -> Result<Arc<dyn RandomAccessFile>> {
        if let Some(f) = self.open.lock().get(&number) {
            return Ok(Arc::clone(f));
        }
        let path = value_log_file_name(&self.dir, number);
        let fs = crate::fs::fs_of_tier(tier, &self.ssd, self.pm.as_ref(), &path, "value log")?;
        if !fs.exists(&path) {
            return Err(Error::corruption(
                path.display().to_string(),
                "a table points into this value log, which is missing",
            ));
        }
        let f = fs.open_readable(&path)?;
        let mut open = self.open.lock();
        if open.len() >= self.max_open {
            // Any one: a reader holding it keeps its handle until it is done.
            if let Some(&victim) = open.keys().next() {
                open.remove(&victim);
            }
        }
        open.insert(number, Arc::clone(&f));
        Ok(f)
    }

    /// Reads the value `p` points to (in a log on `tier`) into `out` (replacing its contents),
    /// checking the record's checksum; the bytes count as `part`'s reads for `purpose`.
    pub fn read(
        &self,
        tier: Tier,
        p: ValuePointer,
        part: Part,
        purpose: IoPurpose,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let file = self.file(tier, p.number)?;
        let where_ = || {
            format!(
                "{} record at {}",
                value_log_file_name(&self.dir, p.number).display(),
                p.offset
            )
        };
        let end = p.offset.checked_add(p.record_bytes());
        if end.is_none_or(|e| e > file.size()) {
            return Err(Error::corruption(
                where_(),
                format!(
                    "a pointer names {} bytes past the log's end ({} bytes)",
                    p.record_bytes(),
                    file.size()
                ),
            ));
        }
        out.clear();
        out.resize(p.record_bytes() as usize, 0);
        file.read_exact_at(p.offset, out)?;
        self.counters
            .add_read(tier, part, purpose, p.record_bytes());
        let stored = u32::from_le_bytes(out[p.len as usize..].try_into().expect("4 bytes"));
        out.truncate(p.len as usize);
        if unmask(stored) != unmask(record_crc(p.number, p.offset, out)) {
            out.clear();
            return Err(Error::corruption(
                where_(),
                "value record checksum mismatch",
            ));
        }
        Ok(())
    }

    /// Drops the reader of a deleted log.
    pub fn evict(&self, number: u64) {
        self.open.lock().remove(&number);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_values_round_trip() {
        let p = ValuePointer {
            number: 77,
            offset: 1 << 40,
            len: 300,
        };
        let mut b = Vec::new();
        p.encode_stored(&mut b);
        assert_eq!(decode_stored(&b), Ok(Stored::Pointer(p)));
        assert_eq!(
            decode_stored(&[TAG_INLINE, 1, 2]),
            Ok(Stored::Inline(&[1, 2]))
        );
        assert_eq!(decode_stored(&[TAG_INLINE]), Ok(Stored::Inline(&[])));
        assert!(decode_stored(&[]).is_err());
        assert!(decode_stored(&[7, 1]).is_err());
        assert!(decode_stored(&b[..b.len() - 1]).is_err());
        let mut long = b.clone();
        long.push(0);
        assert!(decode_stored(&long).is_err());
    }
}
