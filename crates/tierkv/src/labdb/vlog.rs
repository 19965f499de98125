//! `ValueFiles`: the value arrays (`NNNNNN.vla`) that LAB-DB's L0 points into.
//!
//! There is one value array per memtable, numbered as its key array (`NNNNNN.log`). It starts
//! with a 32-byte header that names its number and the database's identity, then holds value
//! records (see [`super::vaddr`]) appended in write order. A value array lives on the SSD tier,
//! or in the PM pool's `PmFs` (the `log_on_pm` variant); either way through the file-system seam.
//!
//! `ValueFiles` tracks, per file: its tier, the bytes appended and flushed, the records written
//! and the **live references** (tree entries plus held versions that point into it, counted by
//! the L0 trees). Value lengths are not kept per entry, so the live bytes of a file are an
//! estimate, `records' bytes x references / records`; a file's live bytes reach 0 exactly when
//! its references do. A file is freed when it has no reference, no writer, and its memtable is
//! flushed (`number < oldest unflushed memtable`): [`ValueFiles::take_unreferenced`] hands it
//! to the caller's release queue (a reader holding an older version may still read it), and
//! [`ValueFiles::delete`] removes it once that queue says no such reader is left.
//!
//! Readers are opened on demand and cached, least recently used first out, at most
//! `max_open` at a time.
//!
//! Thread-safety: `ValueFiles` is shared (`Arc`); one mutex guards its table and cache, held
//! for bookkeeping only, never across I/O. A [`ValueArrayWriter`] has one owner.

use super::vaddr::{
    decode_value_record, encode_value_record, value_len_in_header, value_record_len, Vaddr,
    ValueRecord, MAX_VALUE_FILE, MAX_VALUE_OFFSET, VALUE_RECORD_HEADER,
};
use crate::format::{SequenceNumber, ValueType};
use crate::fs::{FileSystem, RandomAccessFile, WritableFile};
use crate::tier::Tier;
use crate::util::crc::{crc32c, mask, unmask};
use crate::version::value_array_file_name;
use crate::{Error, Result};
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Bytes of a value array's header; the first record starts here.
pub(crate) const VLA_HEADER: usize = 32;
const VLA_MAGIC: &[u8; 8] = b"TKVLVLA1";

/// The header of value array `number` of the database with `identity`: magic, number, the low
/// 64 bits of the identity, the masked crc of those 24 bytes, 4 zero bytes.
pub(crate) fn encode_vla_header(number: u64, identity: u128) -> [u8; VLA_HEADER] {
    let mut h = [0u8; VLA_HEADER];
    h[..8].copy_from_slice(VLA_MAGIC);
    h[8..16].copy_from_slice(&number.to_le_bytes());
    h[16..24].copy_from_slice(&(identity as u64).to_le_bytes());
    let crc = mask(crc32c(&h[..24]));
    h[24..28].copy_from_slice(&crc.to_le_bytes());
    h
}

/// Checks the header of value array `number`: any damage, or a file of another number or
/// database, is corruption naming `location`.
pub(crate) fn check_vla_header(
    h: &[u8],
    number: u64,
    identity: u128,
    location: &str,
) -> Result<()> {
    let bad = |what: &str| Error::corruption(location, format!("value array header: {what}"));
    if h.len() < VLA_HEADER {
        return Err(bad(&format!("{} bytes, shorter than the header", h.len())));
    }
    let crc = u32::from_le_bytes(h[24..28].try_into().expect("4 bytes"));
    if &h[..8] != VLA_MAGIC || crc32c(&h[..24]) != unmask(crc) || h[28..32] != [0; 4] {
        return Err(bad("bad magic or checksum"));
    }
    let n = u64::from_le_bytes(h[8..16].try_into().expect("8 bytes"));
    if n != number {
        return Err(bad(&format!("names value array {n}")));
    }
    if u64::from_le_bytes(h[16..24].try_into().expect("8 bytes")) != identity as u64 {
        return Err(bad("belongs to another database (identity)"));
    }
    Ok(())
}

/// What `ValueFiles` knows about one value array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ValueFileInfo {
    /// Where the file lives.
    pub(crate) tier: Tier,
    /// Bytes appended, header included.
    pub(crate) bytes: u64,
    /// Bytes handed to the file system (`flush` or `sync`): what a reader can read.
    pub(crate) readable: u64,
    /// Records written (0 for a file found at open until its references are counted).
    pub(crate) entries: u64,
    /// Live references: tree entries and held versions pointing into the file.
    pub(crate) refs: u64,
    /// Whether a writer still appends to it.
    pub(crate) writing: bool,
    /// Whether it was handed out for deletion (no new reference may be taken).
    pub(crate) retiring: bool,
}

impl ValueFileInfo {
    /// The estimated bytes of live records: the records' bytes in proportion to the live
    /// references. A file found at open counts its references as its records until it is
    /// written again (its dead records are unknown without a scan), so it reads as all live.
    pub(crate) fn live_bytes(&self) -> u64 {
        let records = self.bytes.saturating_sub(VLA_HEADER as u64);
        let entries = self.entries.max(self.refs);
        if entries == 0 {
            return 0;
        }
        (u128::from(records) * u128::from(self.refs) / u128::from(entries)) as u64
    }
}

/// Totals over every value array, for statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ValueFilesStats {
    /// Value arrays tracked.
    pub(crate) files: u64,
    /// Their bytes.
    pub(crate) bytes: u64,
    /// Records written to them.
    pub(crate) entries: u64,
    /// Live references into them.
    pub(crate) refs: u64,
    /// Estimated live bytes ([`ValueFileInfo::live_bytes`] summed).
    pub(crate) live_bytes: u64,
}

impl ValueFilesStats {
    #[cfg(test)]
    /// The share of the records' bytes that is garbage (0 with no bytes).
    pub(crate) fn garbage_ratio(&self) -> f64 {
        let records = self.bytes.saturating_sub(self.files * VLA_HEADER as u64);
        if records == 0 {
            return 0.0;
        }
        1.0 - self.live_bytes as f64 / records as f64
    }
}

struct Inner {
    files: BTreeMap<u64, ValueFileInfo>,
    /// Open readers with the tick they were last used at.
    readers: HashMap<u64, (Arc<dyn RandomAccessFile>, u64)>,
    tick: u64,
}

/// Batches of this many records or more are read in parallel ([`ValueFiles::read_many`]).
pub(crate) const PARALLEL_READ_MIN: usize = 16;
/// Threads one batch is read by (reads in flight at once).
pub(crate) const READ_THREADS: usize = 8;

/// The value arrays of one database (see the module docs).
pub(crate) struct ValueFiles {
    dir: PathBuf,
    ssd: Arc<dyn FileSystem>,
    pm: Option<Arc<dyn FileSystem>>,
    identity: u128,
    max_open: usize,
    /// The database's block cache: the pages value reads went to (`None`: not cached).
    cache: Option<Arc<crate::sst::BlockCache>>,
    inner: Mutex<Inner>,
}

impl ValueFiles {
    /// Value arrays in `dir`, on `ssd` or (when given) `pm`, of the database with `identity`,
    /// with at most `max_open` readers cached (at least one), the pages reads go to kept in
    /// `cache` (when given).
    pub(crate) fn new(
        dir: &Path,
        ssd: Arc<dyn FileSystem>,
        pm: Option<Arc<dyn FileSystem>>,
        identity: u128,
        max_open: usize,
        cache: Option<Arc<crate::sst::BlockCache>>,
    ) -> Arc<ValueFiles> {
        Arc::new(ValueFiles {
            dir: dir.to_path_buf(),
            ssd,
            pm,
            identity,
            max_open: max_open.max(1),
            cache,
            inner: Mutex::new(Inner {
                files: BTreeMap::new(),
                readers: HashMap::new(),
                tick: 0,
            }),
        })
    }

    fn fs(&self, tier: Tier) -> Result<&Arc<dyn FileSystem>> {
        match tier {
            Tier::Ssd => Ok(&self.ssd),
            Tier::Pm => self.pm.as_ref().ok_or_else(|| {
                Error::InvalidArgument("value arrays on PM need the PM pool".into())
            }),
        }
    }

    fn path(&self, number: u64) -> PathBuf {
        value_array_file_name(&self.dir, number)
    }

    fn location(&self, number: u64) -> String {
        self.path(number).display().to_string()
    }

    /// Creates value array `number` on `tier`, writes its header and returns its writer.
    /// `InvalidArgument` for a number a value address cannot name or one already tracked.
    pub(crate) fn create(self: &Arc<Self>, number: u64, tier: Tier) -> Result<ValueArrayWriter> {
        if number == 0 || number > MAX_VALUE_FILE {
            return Err(Error::InvalidArgument(format!(
                "value array number {number} does not fit a value address (1 ..= {MAX_VALUE_FILE})"
            )));
        }
        if self.inner.lock().files.contains_key(&number) {
            return Err(Error::InvalidArgument(format!(
                "value array {number} exists already"
            )));
        }
        let mut file = self.fs(tier)?.create(&self.path(number))?;
        file.append(&encode_vla_header(number, self.identity))?;
        let mut inner = self.inner.lock();
        inner.files.insert(
            number,
            ValueFileInfo {
                tier,
                bytes: VLA_HEADER as u64,
                readable: 0,
                entries: 0,
                refs: 0,
                writing: true,
                retiring: false,
            },
        );
        Ok(ValueArrayWriter {
            files: Arc::clone(self),
            number,
            file,
            failed: false,
        })
    }

    /// Registers value array `number` found on `tier` at open: checks its header and takes its
    /// size. A missing file is `Corruption` naming it (a reference points into it); damage is
    /// `Corruption` too.
    pub(crate) fn open_existing(&self, number: u64, tier: Tier) -> Result<()> {
        let location = self.location(number);
        if self.inner.lock().files.contains_key(&number) {
            return Err(Error::InvalidArgument(format!(
                "value array {number} is tracked already"
            )));
        }
        let fs = self.fs(tier)?;
        let path = self.path(number);
        if !fs.exists(&path) {
            return Err(Error::corruption(
                location,
                "value array missing (tree entries point into it)",
            ));
        }
        let file = fs.open_readable(&path)?;
        let size = file.size();
        let mut h = [0u8; VLA_HEADER];
        if size < VLA_HEADER as u64 {
            return Err(Error::corruption(
                location,
                format!("value array of {size} bytes, shorter than its header"),
            ));
        }
        file.read_exact_at(0, &mut h)?;
        check_vla_header(&h, number, self.identity, &location)?;
        let mut inner = self.inner.lock();
        inner.files.insert(
            number,
            ValueFileInfo {
                tier,
                bytes: size,
                readable: size,
                entries: 0,
                refs: 0,
                writing: false,
                retiring: false,
            },
        );
        inner.tick += 1;
        let tick = inner.tick;
        inner.readers.insert(number, (file, tick));
        evict(&mut inner, self.max_open);
        Ok(())
    }

    /// Reads the record `word` points at for `key`. A hot-slot address, a file that is not
    /// live, an offset outside the file's readable bytes, and a record that fails its check
    /// (damage, or an address or key that is not the record's) are all `Corruption` naming the
    /// value array and offset.
    pub(crate) fn read(&self, word: u64, key: &[u8]) -> Result<ValueRecord> {
        let (file, offset) = match Vaddr::decode(word, &self.dir.display().to_string())? {
            Vaddr::Value { file, offset } => (file, offset),
            Vaddr::Hot { .. } => {
                return Err(Error::corruption(
                    self.dir.display().to_string(),
                    format!("value address {word:#018x} names a hot slot, not a value array"),
                ))
            }
        };
        let location = self.location(file);
        let info = self.inner.lock().files.get(&file).copied();
        // A retiring file is still read until it is deleted: a reader that found its address
        // before the last reference went holds a version the deletion waits for.
        let Some(info) = info else {
            return Err(Error::corruption(
                location,
                format!("value address {word:#018x} names a value array that is not live"),
            ));
        };
        if offset < VLA_HEADER as u64 || offset + VALUE_RECORD_HEADER as u64 > info.readable {
            return Err(Error::corruption(
                location,
                format!(
                    "value address {word:#018x}: offset {offset} outside the records (readable \
                     up to {})",
                    info.readable
                ),
            ));
        }
        // The record's 4 KiB page: from the block cache, or one read (which a direct read
        // transfers whole anyway) that is then cached; a record that ends in its page (most,
        // for values up to a few KiB) costs one read, not two. Bytes of a value array never
        // change once readable, so a cached page is good while the file lives (a page cached
        // before the file grew holds fewer bytes: a record past them is read again).
        let page = offset / 4096 * 4096;
        let within = (offset - page) as usize;
        if let Some(bytes) = self.cache.as_ref().and_then(|c| c.get_bytes(file, page)) {
            if let Some(header) = bytes.get(within..within + VALUE_RECORD_HEADER) {
                let len = value_len_in_header(header.try_into().expect("16 bytes"));
                let end = within + value_record_len(len as usize) as usize;
                if let Some(rec) = bytes.get(within..end) {
                    let mut r = decode_value_record(rec, file, offset, key, &location)?;
                    r.cached = true;
                    return Ok(r);
                }
            }
        }
        let first_end = (page + 4096)
            .min(info.readable)
            .max(offset + VALUE_RECORD_HEADER as u64);
        let mut page_bytes = vec![0u8; (first_end - page) as usize];
        let reader = self.reader(file, info, first_end)?;
        reader.read_exact_at(page, &mut page_bytes)?;
        let page_bytes: Arc<[u8]> = page_bytes.into();
        if let Some(c) = &self.cache {
            c.insert_bytes(file, page, Arc::clone(&page_bytes));
        }
        let first = &page_bytes[within..];
        let header: [u8; VALUE_RECORD_HEADER] = first[..VALUE_RECORD_HEADER]
            .try_into()
            .expect("the first read holds the header");
        let len = value_len_in_header(&header);
        let end = offset + value_record_len(len as usize);
        if end <= first_end {
            return decode_value_record(
                &first[..(end - offset) as usize],
                file,
                offset,
                key,
                &location,
            );
        }
        if end > info.readable {
            return Err(Error::corruption(
                location,
                format!(
                    "value record at {offset}: declares {len} value bytes, past the readable \
                     end {}",
                    info.readable
                ),
            ));
        }
        let mut bytes = vec![0u8; (end - offset) as usize];
        let have = first.len();
        bytes[..have].copy_from_slice(first);
        let reader = self.reader(file, info, end)?;
        reader.read_exact_at(offset + have as u64, &mut bytes[have..])?;
        decode_value_record(&bytes, file, offset, key, &location)
    }

    /// Reads the records of `reqs` (address, key), in order, as [`ValueFiles::read`] does;
    /// a batch of [`PARALLEL_READ_MIN`] or more is read by up to [`READ_THREADS`] threads at
    /// once. A chunk compaction or a scan reads one record per key, scattered over the value
    /// arrays: with direct reads each costs a device round trip, so reading them one after the
    /// other leaves the device idle most of the time. The first error is returned.
    pub(crate) fn read_many(&self, reqs: &[(u64, &[u8])]) -> Result<Vec<ValueRecord>> {
        if reqs.len() < PARALLEL_READ_MIN {
            return reqs.iter().map(|&(w, k)| self.read(w, k)).collect();
        }
        let per = reqs.len().div_ceil(READ_THREADS);
        let parts: Vec<Result<Vec<ValueRecord>>> = std::thread::scope(|s| {
            let handles: Vec<_> = reqs
                .chunks(per)
                .map(|part| {
                    s.spawn(move || {
                        part.iter()
                            .map(|&(w, k)| self.read(w, k))
                            .collect::<Result<Vec<_>>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(Error::InvalidArgument(
                            "a value-array read thread panicked".into(),
                        ))
                    })
                })
                .collect()
        });
        let mut out = Vec::with_capacity(reqs.len());
        for p in parts {
            out.extend(p?);
        }
        Ok(out)
    }

    /// A reader of `file` that can read up to `end`, from the cache or opened (outside the
    /// lock) and cached.
    fn reader(
        &self,
        file: u64,
        info: ValueFileInfo,
        end: u64,
    ) -> Result<Arc<dyn RandomAccessFile>> {
        {
            let mut inner = self.inner.lock();
            inner.tick += 1;
            let tick = inner.tick;
            if let Some((r, used)) = inner.readers.get_mut(&file) {
                if r.size() >= end {
                    *used = tick;
                    return Ok(Arc::clone(r));
                }
            }
        }
        let r = self.fs(info.tier)?.open_readable(&self.path(file))?;
        let mut inner = self.inner.lock();
        inner.tick += 1;
        let tick = inner.tick;
        if inner.files.get(&file).is_some_and(|i| !i.retiring) {
            inner.readers.insert(file, (Arc::clone(&r), tick));
            evict(&mut inner, self.max_open);
        }
        Ok(r)
    }

    /// Takes one live reference into value array `file` (a tree entry or held version now
    /// points into it). A file that is not live is `Corruption`: a reference to it means a
    /// damaged address or a freed file.
    pub(crate) fn add_ref(&self, file: u64) -> Result<()> {
        let mut inner = self.inner.lock();
        match inner.files.get_mut(&file) {
            Some(i) if !i.retiring => {
                i.refs += 1;
                Ok(())
            }
            _ => Err(Error::corruption(
                self.location(file),
                "a reference into a value array that is not live",
            )),
        }
    }

    /// Drops one live reference into `file`. Dropping more than were taken is `Corruption`
    /// (the count was rebuilt from damaged state), never an underflow.
    pub(crate) fn drop_ref(&self, file: u64) -> Result<()> {
        let mut inner = self.inner.lock();
        match inner.files.get_mut(&file) {
            Some(i) if i.refs > 0 => {
                i.refs -= 1;
                Ok(())
            }
            _ => Err(Error::corruption(
                self.location(file),
                "a reference dropped that was not taken",
            )),
        }
    }

    /// The files that can go: no reference, no writer, and a memtable older than
    /// `oldest_unflushed` (its records can no longer gain references). They are marked
    /// retiring, so each is handed out once and takes no new reference; the caller deletes
    /// each with [`ValueFiles::delete`] once no reader can reach it.
    pub(crate) fn take_unreferenced(&self, oldest_unflushed: u64) -> Vec<u64> {
        let mut inner = self.inner.lock();
        let mut out = Vec::new();
        for (&n, i) in inner.files.range_mut(..oldest_unflushed) {
            if i.refs == 0 && !i.writing && !i.retiring {
                i.retiring = true;
                out.push(n);
            }
        }
        for n in &out {
            inner.readers.remove(n);
        }
        out
    }

    /// Deletes a value array handed out by [`ValueFiles::take_unreferenced`]; any other is
    /// `InvalidArgument`. On a failed removal the file stays retiring, so a retry can delete it.
    pub(crate) fn delete(&self, number: u64) -> Result<()> {
        let tier = match self.inner.lock().files.get(&number) {
            Some(i) if i.retiring => i.tier,
            _ => {
                return Err(Error::InvalidArgument(format!(
                    "value array {number} was not released"
                )))
            }
        };
        self.fs(tier)?.remove(&self.path(number))?;
        let mut inner = self.inner.lock();
        inner.files.remove(&number);
        inner.readers.remove(&number);
        Ok(())
    }

    /// Removes every value array in the directory (on either tier) numbered below `keep_from`
    /// that is not tracked: at open, after the arrays the trees reference were registered,
    /// what is left is a flush's array that never got a reference (a crash before its tree
    /// inserts) or one whose deletion a crash interrupted. Arrays from `keep_from` on belong to
    /// memtables not flushed yet (LAB-DB's log replays them). Returns how many were removed.
    pub(crate) fn remove_untracked(&self, keep_from: u64) -> Result<u64> {
        let mut removed = 0;
        for fs in std::iter::once(&self.ssd).chain(self.pm.as_ref()) {
            let Ok(names) = fs.list(&self.dir) else {
                continue;
            };
            for name in names {
                let Some((crate::version::FileKind::ValueArray, n)) =
                    crate::version::parse_file_name(&name)
                else {
                    continue;
                };
                if n < keep_from && !self.inner.lock().files.contains_key(&n) {
                    fs.remove(&self.dir.join(&name))?;
                    removed += 1;
                }
            }
        }
        Ok(removed)
    }

    #[cfg(test)]
    /// What is known about value array `number`.
    pub(crate) fn info(&self, number: u64) -> Option<ValueFileInfo> {
        self.inner.lock().files.get(&number).copied()
    }

    /// The numbers of every tracked value array, ascending.
    #[cfg(test)]
    pub(crate) fn numbers(&self) -> Vec<u64> {
        self.inner.lock().files.keys().copied().collect()
    }

    /// How many readers are cached (at most `max_open`).
    #[cfg(test)]
    pub(crate) fn open_readers(&self) -> usize {
        self.inner.lock().readers.len()
    }

    /// Totals for statistics.
    pub(crate) fn stats(&self) -> ValueFilesStats {
        let inner = self.inner.lock();
        let mut s = ValueFilesStats::default();
        for i in inner.files.values() {
            s.files += 1;
            s.bytes += i.bytes;
            s.entries += i.entries;
            s.refs += i.refs;
            s.live_bytes += i.live_bytes();
        }
        s
    }
}

/// Drops the least recently used readers beyond `max_open`.
fn evict(inner: &mut Inner, max_open: usize) {
    while inner.readers.len() > max_open {
        let oldest = inner
            .readers
            .iter()
            .min_by_key(|(_, (_, used))| *used)
            .map(|(n, _)| *n)
            .expect("more readers than the cap");
        inner.readers.remove(&oldest);
    }
}

/// Appends value records to one value array. Records become readable through
/// [`ValueFiles::read`] once flushed; dropping the writer ends its writing (the file can then be
/// freed once unreferenced).
pub(crate) struct ValueArrayWriter {
    files: Arc<ValueFiles>,
    number: u64,
    file: Box<dyn WritableFile>,
    /// An append failed: the file's tail is unknown, so nothing more is appended.
    failed: bool,
}

impl ValueArrayWriter {
    /// Bytes appended, header included: the offset the next record gets.
    pub(crate) fn size(&self) -> u64 {
        self.file.size()
    }

    /// Appends the record of `(key, seq, vtype, value)` and returns its address.
    /// `InvalidArgument` when the record would end past 4 GiB (the reach of an address); an
    /// I/O error leaves the writer refusing further appends.
    pub(crate) fn append(
        &mut self,
        key: &[u8],
        seq: SequenceNumber,
        vtype: ValueType,
        value: &[u8],
    ) -> Result<Vaddr> {
        if self.failed {
            return Err(Error::InvalidArgument(format!(
                "value array {} refused an append after a failed one",
                self.number
            )));
        }
        let offset = self.file.size();
        if offset + value_record_len(value.len()) > MAX_VALUE_OFFSET {
            return Err(Error::InvalidArgument(format!(
                "value array {} would pass 4 GiB",
                self.number
            )));
        }
        let vaddr = Vaddr::value(self.number, offset)?;
        let mut rec = Vec::with_capacity(value_record_len(value.len()) as usize);
        encode_value_record(&mut rec, self.number, offset, key, seq, vtype, value)?;
        if let Err(e) = self.file.append(&rec) {
            self.failed = true;
            return Err(e);
        }
        let mut inner = self.files.inner.lock();
        if let Some(i) = inner.files.get_mut(&self.number) {
            i.bytes = self.file.size();
            i.entries += 1;
        }
        Ok(vaddr)
    }

    /// Hands appended records to the file system: they are then readable.
    #[cfg(test)]
    pub(crate) fn flush(&mut self) -> Result<()> {
        self.file.flush()?;
        self.published();
        Ok(())
    }

    /// Makes appended records durable (fdatasync); they are then readable too.
    pub(crate) fn sync(&mut self) -> Result<()> {
        self.file.sync()?;
        self.published();
        Ok(())
    }

    fn published(&self) {
        let mut inner = self.files.inner.lock();
        if let Some(i) = inner.files.get_mut(&self.number) {
            i.readable = self.file.size();
        }
    }
}

impl Drop for ValueArrayWriter {
    fn drop(&mut self) {
        let mut inner = self.files.inner.lock();
        if let Some(i) = inner.files.get_mut(&self.number) {
            i.writing = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::{MemFs, PosixFs};
    use std::os::unix::fs::FileExt;

    const ID: u128 = 0x1234_5678_9abc_def0_0fed_cba9_8765_4321;

    #[test]
    fn header_round_trip_and_every_damage_is_corruption() {
        let h = encode_vla_header(9, ID);
        check_vla_header(&h, 9, ID, "v").unwrap();
        assert!(check_vla_header(&h, 10, ID, "v")
            .unwrap_err()
            .is_corruption());
        assert!(
            check_vla_header(&h, 9, ID + (1 << 70), "v").is_ok(),
            "only the low 64 bits"
        );
        assert!(check_vla_header(&h, 9, ID ^ 1, "v")
            .unwrap_err()
            .is_corruption());
        for cut in 0..h.len() {
            assert!(check_vla_header(&h[..cut], 9, ID, "v")
                .unwrap_err()
                .is_corruption());
        }
        for bit in 0..h.len() * 8 {
            let mut d = h;
            d[bit / 8] ^= 1 << (bit % 8);
            assert!(
                check_vla_header(&d, 9, ID, "v")
                    .unwrap_err()
                    .is_corruption(),
                "{bit}"
            );
        }
    }

    /// Writes, reads back through the cache (capped at 2 readers over 3 files), counts
    /// references and live bytes, and frees a file only when it is unreferenced, unwritten and
    /// older than the oldest unflushed memtable.
    #[test]
    fn write_read_account_and_free() {
        let ssd = Arc::new(MemFs::new());
        let pm = Arc::new(MemFs::new());
        let dir = Path::new("/db");
        ssd.create_dir_all(dir).unwrap();
        pm.create_dir_all(dir).unwrap();
        let files = ValueFiles::new(dir, ssd.clone(), Some(pm.clone()), ID, 2, None);
        let mut written = Vec::new();
        for (n, tier) in [(5, Tier::Ssd), (6, Tier::Pm), (7, Tier::Ssd)] {
            let mut w = files.create(n, tier).unwrap();
            assert_eq!(w.size(), VLA_HEADER as u64);
            for i in 0..10u64 {
                let key = format!("key{n}-{i}").into_bytes();
                let (t, value) = if i % 4 == 3 {
                    (ValueType::Deletion, Vec::new())
                } else {
                    (ValueType::Value, vec![i as u8; (i * 37) as usize])
                };
                let at = w.size();
                let v = w.append(&key, 100 * n + i, t, &value).unwrap();
                assert_eq!(
                    v,
                    Vaddr::Value {
                        file: n,
                        offset: at
                    }
                );
                written.push((v.encode(), key, 100 * n + i, t, value));
            }
            // Not readable before the flush.
            let (word, key, ..) = written.last().unwrap();
            assert!(files.read(*word, key).unwrap_err().is_corruption());
            if n == 7 {
                w.sync().unwrap();
                files.drop_ref(7).unwrap_err();
                drop(w);
            } else {
                w.flush().unwrap();
            }
        }
        // Each file's path on its own tier.
        assert!(ssd.exists(&dir.join("000005.vla")) && pm.exists(&dir.join("000006.vla")));
        assert!(!ssd.exists(&dir.join("000006.vla")));
        for _ in 0..2 {
            for (word, key, seq, t, value) in &written {
                let r = files.read(*word, key).unwrap();
                assert_eq!((r.seq, r.vtype, &r.value), (*seq, *t, value));
                assert!(files.open_readers() <= 2);
            }
        }
        // Another key, a neighbouring offset or file: corruption, never another key's value.
        // So is every single-bit flip of every address (the record checks its own address).
        for (word, key, ..) in &written {
            for bit in 0..64 {
                let e = files.read(word ^ (1 << bit), key).unwrap_err();
                assert!(e.is_corruption(), "{word:#x} bit {bit}: {e}");
            }
        }
        let (word, ..) = &written[1];
        assert!(files.read(*word, b"key5-0").unwrap_err().is_corruption());
        assert!(files.read(word + 1, b"key5-1").unwrap_err().is_corruption());
        assert!(files
            .read(word + (1 << 32), b"key5-1")
            .unwrap_err()
            .is_corruption());
        assert!(files
            .read(Vaddr::value(9, 32).unwrap().encode(), b"k")
            .unwrap_err()
            .is_corruption());
        assert!(files
            .read(Vaddr::hot(64, 0, 1).unwrap().encode(), b"k")
            .unwrap_err()
            .is_corruption());
        assert!(files
            .read(Vaddr::value(5, 0).unwrap().encode(), b"k")
            .unwrap_err()
            .is_corruption());

        // References and live bytes: 10 records per file.
        let records_7 = files.info(7).unwrap().bytes - VLA_HEADER as u64;
        for _ in 0..4 {
            files.add_ref(7).unwrap();
        }
        let i7 = files.info(7).unwrap();
        assert_eq!((i7.entries, i7.refs, i7.writing), (10, 4, false));
        assert_eq!(i7.live_bytes(), records_7 * 4 / 10);
        files.add_ref(5).unwrap();
        files.add_ref(6).unwrap();
        let s = files.stats();
        assert_eq!((s.files, s.entries, s.refs), (3, 30, 6));
        assert!(s.garbage_ratio() > 0.5 && s.garbage_ratio() < 1.0, "{s:?}");
        // Nothing goes while referenced, or while its memtable is not flushed.
        assert_eq!(files.take_unreferenced(u64::MAX), Vec::<u64>::new());
        files.drop_ref(5).unwrap();
        files.drop_ref(6).unwrap();
        assert_eq!(files.take_unreferenced(6), vec![5]);
        assert_eq!(files.take_unreferenced(u64::MAX), vec![6]);
        assert_eq!(files.take_unreferenced(u64::MAX), Vec::<u64>::new());
        // A retiring file takes no reference, but is read until it is deleted.
        assert!(files.add_ref(5).unwrap_err().is_corruption());
        assert!(files.read(written[0].0, &written[0].1).is_ok());
        files.delete(5).unwrap();
        assert!(files
            .read(written[0].0, &written[0].1)
            .unwrap_err()
            .is_corruption());
        files.delete(6).unwrap();
        assert!(!ssd.exists(&dir.join("000005.vla")) && !pm.exists(&dir.join("000006.vla")));
        assert!(matches!(files.delete(7), Err(Error::InvalidArgument(_))));
        // Live bytes reach 0 with the last reference, and the file is freed then.
        for _ in 0..4 {
            assert_ne!(files.info(7).unwrap().live_bytes(), 0);
            files.drop_ref(7).unwrap();
        }
        assert_eq!(files.info(7).unwrap().live_bytes(), 0);
        assert!(files.drop_ref(7).unwrap_err().is_corruption());
        assert_eq!(files.take_unreferenced(8), vec![7]);
        files.delete(7).unwrap();
        assert_eq!(files.numbers(), Vec::<u64>::new());
        assert_eq!(files.stats(), ValueFilesStats::default());
    }

    /// Readers on several threads share one cached reader slot (cap 1, two files): every read
    /// returns its own record.
    #[test]
    fn concurrent_reads_through_a_small_cache() {
        let fs = Arc::new(MemFs::new());
        fs.create_dir_all(Path::new("/db")).unwrap();
        let files = ValueFiles::new(Path::new("/db"), fs, None, ID, 1, None);
        let mut all = Vec::new();
        for n in [1, 2] {
            let mut w = files.create(n, Tier::Ssd).unwrap();
            for i in 0..50u64 {
                let key = format!("{n}/{i}").into_bytes();
                let value = key.repeat(i as usize % 7);
                let v = w.append(&key, i + 1, ValueType::Value, &value).unwrap();
                all.push((v.encode(), key, value));
            }
            w.sync().unwrap();
        }
        std::thread::scope(|s| {
            for t in 0..4 {
                let (files, all) = (&files, &all);
                s.spawn(move || {
                    for round in 0..20 {
                        for (j, (word, key, value)) in all.iter().enumerate() {
                            if (j + t + round) % 3 == 0 {
                                assert_eq!(&files.read(*word, key).unwrap().value, value);
                            }
                        }
                    }
                });
            }
        });
        assert_eq!(files.open_readers(), 1);
    }

    #[test]
    fn refuses_what_an_address_cannot_name() {
        let fs = Arc::new(MemFs::new());
        fs.create_dir_all(Path::new("/db")).unwrap();
        let files = ValueFiles::new(Path::new("/db"), fs, None, ID, 4, None);
        for n in [0, MAX_VALUE_FILE + 1] {
            assert!(matches!(
                files.create(n, Tier::Ssd),
                Err(Error::InvalidArgument(_))
            ));
        }
        assert!(matches!(
            files.create(3, Tier::Pm),
            Err(Error::InvalidArgument(_))
        ));
        let w = files.create(3, Tier::Ssd).unwrap();
        assert!(matches!(
            files.create(3, Tier::Ssd),
            Err(Error::InvalidArgument(_))
        ));
        assert!(files.info(3).unwrap().writing);
        // Still written to: never freed, even unreferenced and flushed.
        assert_eq!(files.take_unreferenced(u64::MAX), Vec::<u64>::new());
        drop(w);
        assert!(!files.info(3).unwrap().writing);
        assert_eq!(files.take_unreferenced(u64::MAX), vec![3]);
    }

    /// A value array found at open: its header is checked, its records read; a flipped byte
    /// anywhere in a record, a damaged header and a missing file are corruption naming it.
    #[test]
    fn reopened_files_and_damage() {
        let dir = tempfile::tempdir().unwrap();
        let fs: Arc<dyn FileSystem> = Arc::new(PosixFs);
        let files = ValueFiles::new(dir.path(), fs.clone(), None, ID, 4, None);
        let mut w = files.create(12, Tier::Ssd).unwrap();
        let a = w.append(b"a", 1, ValueType::Value, b"alpha").unwrap();
        let b = w.append(b"b", 2, ValueType::Value, b"beta").unwrap();
        w.sync().unwrap();
        drop(w);
        let path = dir.path().join("000012.vla");
        let size = std::fs::metadata(&path).unwrap().len();
        let reopen = || {
            let f = ValueFiles::new(dir.path(), fs.clone(), None, ID, 4, None);
            f.open_existing(12, Tier::Ssd).map(|()| f)
        };
        let f = reopen().unwrap();
        assert!(matches!(
            f.open_existing(12, Tier::Ssd),
            Err(Error::InvalidArgument(_))
        ));
        assert_eq!(f.read(a.encode(), b"a").unwrap().value, b"alpha");
        assert_eq!(f.read(b.encode(), b"b").unwrap().value, b"beta");
        let i = f.info(12).unwrap();
        assert_eq!((i.bytes, i.readable, i.writing), (size, size, false));
        f.add_ref(12).unwrap();
        assert_eq!(f.info(12).unwrap().live_bytes(), size - VLA_HEADER as u64);
        let flip = |at: u64| {
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)
                .unwrap();
            let mut byte = [0u8];
            file.read_exact_at(&mut byte, at).unwrap();
            file.write_all_at(&[byte[0] ^ 0x10], at).unwrap();
        };
        let Vaddr::Value { offset: b_at, .. } = b else {
            unreachable!()
        };
        for at in b_at..size {
            flip(at);
            let e = reopen().unwrap().read(b.encode(), b"b").unwrap_err();
            assert!(
                e.is_corruption() && e.to_string().contains("000012.vla"),
                "{at}: {e}"
            );
            // The other record is untouched.
            assert_eq!(
                reopen().unwrap().read(a.encode(), b"a").unwrap().value,
                b"alpha"
            );
            flip(at);
        }
        flip(3);
        let e = reopen().err().unwrap();
        assert!(
            e.is_corruption() && e.to_string().contains("000012.vla"),
            "{e}"
        );
        flip(3);
        // The wrong database's file.
        let other = ValueFiles::new(dir.path(), fs.clone(), None, ID ^ 1, 4, None);
        assert!(other
            .open_existing(12, Tier::Ssd)
            .unwrap_err()
            .is_corruption());
        // A cut file: records past the cut are outside it.
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(size - 1)
            .unwrap();
        assert!(reopen()
            .unwrap()
            .read(b.encode(), b"b")
            .unwrap_err()
            .is_corruption());
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(10)
            .unwrap();
        assert!(reopen().err().unwrap().is_corruption());
        std::fs::remove_file(&path).unwrap();
        let e = reopen().err().unwrap();
        assert!(
            e.is_corruption() && e.to_string().contains("000012.vla"),
            "{e}"
        );
    }
}
