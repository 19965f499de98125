//! The persistent skiplist memtable of SLM-DB (Kaiyrakhmet et al., "SLM-DB: Single-Level
//! Key-Value Store with Persistent Memory", FAST 2019, section 3.1): a memtable in PM that
//! needs no write-ahead log. A write is durable when it returns because the list itself is.
//!
//! One memtable is one `PmFs` file (`NNNNNN.log`: it takes the WAL's number, name and place):
//! a head, then nodes appended in arrival order. The **bottom level** is a singly linked list
//! of the nodes in internal-key order (user key ascending, sequence descending), linked
//! through each node's first word: it is the only persistent level. The **upper levels** are
//! a DRAM ordered map from the internal keys of a sample of the nodes (one in four, chosen by
//! a hash of the node's offset: the skiplist's level-1 towers) to their offsets, rebuilt at
//! open; a search starts at the greatest sampled node below its target and walks the bottom
//! level from there.
//!
//! # Format (little-endian; `docs/FORMATS.md`, "Persistent skiplist memtable")
//!
//! ```text
//! head (offset 0, 64 B): next word u64 | commit word u64 | magic u64 "TKVPMTBL" |
//!                        number u64 | masked crc32c(bytes 16..32) u32 | 28 zero
//! node (8-aligned):      next word u64 | trailer u64 (seq << 8 | type) | key length u32 |
//!                        value length u32 | key crc u32 | value crc u32 | key | value | pad
//!   next word:           the next node's offset (0 = the end) | check16(own offset, next) << 48
//!   commit word:         the last committed sequence (56 bits) | 8 bits of check16(8, seq)
//!   key crc:             masked crc32c(node offset u64, bytes 8..24, key)
//!   value crc:           masked crc32c(value)
//! ```
//!
//! # Persist points and the invariant at each
//!
//! The memtable's content is: the nodes reachable from the head whose sequence is at most the
//! commit word's.
//!
//! * **create**: the head is appended and persisted with the file's size (one fence). A crash
//!   inside that fence can leave the size persisted over a torn head; nothing can have been
//!   linked yet, so open takes a file no longer than a head for an empty memtable without
//!   reading it. A head that fails its check in a longer file is corruption.
//!
//! * **add** (one node of a batch): the node is appended with its next word set to its
//!   predecessor's next, and the file's size persisted with it (`PmFs` flush: one fence). It is
//!   unreachable until the predecessor's next word is set to it (8-byte store, persisted):
//!   from then on the bottom level holds it in order. Before that store a crash leaves the list
//!   as it was (the node is garbage inside the file, freed with it).
//! * **commit** (after a batch's last node): the commit word is set to the batch's last
//!   sequence (8-byte store, persisted). A crash before it leaves the batch's linked nodes above
//!   the commit word: open unlinks them (each one 8-byte store on its predecessor, persisted),
//!   so a batch is all or nothing. Readers never see uncommitted nodes: the database publishes a
//!   batch's sequences only after its commit.
//!
//! A torn store is the old or the new 8-byte word, each a complete state above.
//!
//! # Concurrency
//!
//! One writer at a time (the front end's write leader; [`PmTable::add`] serializes callers),
//! readers concurrently: a node is complete and persisted before the Release store that links
//! it, and readers load next words with Acquire. Nodes are never changed after they are linked
//! but for their next word.

#[cfg(test)]
mod tests;

use crate::format::{
    compare_internal, pack_trailer, OrderedKey, SequenceNumber, ValueType, TRAILER_LEN,
};
use crate::fs::{check16, decode_checked, encode_checked, PmFs, PmWords, WritableFile};
use crate::iterator::InternalIterator;
use crate::memtable::LookupResult;
use crate::util::crc::{crc32c, mask, unmask};
use crate::{Error, Result};
use parking_lot::{Mutex, RwLock};
use std::cmp::Ordering as Cmp;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

const HEAD_BYTES: u64 = 64;
const NODE_HEADER: usize = 32;
const MAGIC: u64 = u64::from_le_bytes(*b"TKVPMTBL");
const SEQ_MASK: u64 = (1 << 56) - 1;
/// Where the commit word lives.
const COMMIT_AT: u64 = 8;

fn encode_commit(seq: u64) -> u64 {
    seq | (check16(COMMIT_AT, seq) & 0xff) << 56
}

fn decode_commit(word: u64) -> Option<u64> {
    let seq = word & SEQ_MASK;
    (word >> 56 == check16(COMMIT_AT, seq) & 0xff).then_some(seq)
}

/// Whether the node at `at` has a tower in the DRAM levels (one in four).
fn sampled(at: u64) -> bool {
    at.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 62 == 0
}

fn key_crc(at: u64, fields: &[u8], key: &[u8]) -> u32 {
    let mut b = Vec::with_capacity(8 + fields.len() + key.len());
    b.extend_from_slice(&at.to_le_bytes());
    b.extend_from_slice(fields);
    b.extend_from_slice(key);
    crc32c(&b)
}

/// An internal key ordered as the engine orders them.
type IKey = OrderedKey<Vec<u8>>;

/// A node's fixed fields.
#[derive(Clone, Copy)]
struct NodeHead {
    next: u64,
    trailer: u64,
    key_len: u32,
    value_len: u32,
    key_crc: u32,
    value_crc: u32,
}

/// What opening an existing memtable found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct PmTableRecovery {
    /// Committed entries.
    pub entries: u64,
    /// Linked entries above the commit word (a batch a crash cut), unlinked.
    pub dropped: u64,
    /// The commit word: the last committed sequence.
    pub committed: SequenceNumber,
}

/// One persistent skiplist memtable (module docs). `Send + Sync`.
pub(crate) struct PmTable {
    words: PmWords,
    path: PathBuf,
    number: u64,
    /// The appending side; `None` for a memtable opened after a crash or frozen.
    writer: Mutex<Option<Box<dyn WritableFile>>>,
    /// The DRAM levels: sampled internal key -> node offset.
    towers: RwLock<BTreeMap<IKey, u64>>,
    entries: AtomicU64,
    /// Opened with nothing after its head (never written, or a crash inside `create`): empty,
    /// and the head is not read.
    headless: AtomicBool,
}

impl PmTable {
    /// Creates memtable `number` as the file `path` of `fs`, empty and ready to take writes.
    pub(crate) fn create(fs: &PmFs, path: &Path, number: u64) -> Result<PmTable> {
        let mut w = fs.create_buffer(path)?;
        let mut head = [0u8; HEAD_BYTES as usize];
        head[0..8].copy_from_slice(&encode_checked(0, 0).to_le_bytes());
        head[8..16].copy_from_slice(&encode_commit(0).to_le_bytes());
        head[16..24].copy_from_slice(&MAGIC.to_le_bytes());
        head[24..32].copy_from_slice(&number.to_le_bytes());
        let crc = mask(crc32c(&head[16..32]));
        head[32..36].copy_from_slice(&crc.to_le_bytes());
        w.append(&head)?;
        w.flush()?;
        Ok(PmTable {
            words: fs.words(path)?,
            path: path.to_path_buf(),
            number,
            writer: Mutex::new(Some(w)),
            towers: RwLock::new(BTreeMap::new()),
            entries: AtomicU64::new(0),
            headless: AtomicBool::new(false),
        })
    }

    /// Opens memtable `number` at `path` after a restart or crash: checks the head and every
    /// linked node (order, checksums), unlinks the nodes above the commit word when
    /// `writable` (otherwise only skips them), and rebuilds the DRAM levels. The memtable takes
    /// no more writes.
    pub(crate) fn open(
        fs: &PmFs,
        path: &Path,
        number: u64,
        writable: bool,
    ) -> Result<(PmTable, PmTableRecovery)> {
        let t = PmTable {
            words: fs.words(path)?,
            path: path.to_path_buf(),
            number,
            writer: Mutex::new(None),
            towers: RwLock::new(BTreeMap::new()),
            entries: AtomicU64::new(0),
            headless: AtomicBool::new(false),
        };
        let rec = t.recover(writable)?;
        Ok((t, rec))
    }

    fn bad(&self, why: String) -> Error {
        Error::corruption(self.path.display().to_string(), why)
    }

    fn recover(&self, writable: bool) -> Result<PmTableRecovery> {
        let size = self.words.size();
        if size <= HEAD_BYTES {
            // No node was ever appended, so nothing was ever linked: an empty memtable, or a
            // crash inside `create` (its head's flush cut, any of its words torn).
            self.headless.store(true, Ordering::Release);
            return Ok(PmTableRecovery::default());
        }
        let mut head = [0u8; HEAD_BYTES as usize];
        self.words.read(0, &mut head)?;
        let u64_at = |b: &[u8], i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        if u64_at(&head, 16) != MAGIC
            || u64_at(&head, 24) != self.number
            || unmask(u32::from_le_bytes(head[32..36].try_into().unwrap())) != crc32c(&head[16..32])
        {
            return Err(self.bad("PM memtable head: bad magic, number or checksum".to_string()));
        }
        let committed = decode_commit(u64_at(&head, 8))
            .ok_or_else(|| self.bad("PM memtable commit word fails its check".to_string()))?;
        let mut rec = PmTableRecovery {
            committed,
            ..PmTableRecovery::default()
        };
        let mut towers = BTreeMap::new();
        let (mut kept, mut prev_key): (u64, Option<Vec<u8>>) = (0, None);
        let mut at = self.next_of(0)?;
        let mut steps = 0u64;
        while at != 0 {
            steps += 1;
            if steps > size / NODE_HEADER as u64 {
                return Err(self.bad("PM memtable list has a cycle".to_string()));
            }
            let (ikey, _, h) = self.read_node(at)?;
            if prev_key
                .as_ref()
                .is_some_and(|p| compare_internal(p, &ikey) != Cmp::Less)
            {
                return Err(self.bad(format!("PM memtable node at {at} out of order")));
            }
            prev_key = Some(ikey.clone());
            if h.trailer >> 8 > committed {
                // Linked by a batch whose commit never landed.
                rec.dropped += 1;
                if writable {
                    self.words
                        .store_u64_persist(kept, encode_checked(kept, h.next))?;
                }
            } else {
                rec.entries += 1;
                if sampled(at) {
                    towers.insert(OrderedKey(ikey), at);
                }
                kept = at;
            }
            at = h.next;
        }
        *self.towers.write() = towers;
        self.entries.store(rec.entries, Ordering::Release);
        Ok(rec)
    }

    /// The next word of the node (or head) at `at`.
    fn next_of(&self, at: u64) -> Result<u64> {
        let next = decode_checked(at, self.words.load_u64(at)?).ok_or_else(|| {
            self.bad(format!(
                "PM memtable node at {at}: next word fails its check"
            ))
        })?;
        if next != 0 && (!next.is_multiple_of(8) || next < HEAD_BYTES || next >= self.words.size())
        {
            return Err(self.bad(format!(
                "PM memtable node at {at}: next {next} outside the file"
            )));
        }
        Ok(next)
    }

    fn head_of(&self, at: u64) -> Result<NodeHead> {
        let mut h = [0u8; NODE_HEADER];
        self.words
            .read(at, &mut h)
            .map_err(|_| self.bad(format!("PM memtable node at {at} runs past the file")))?;
        let next = decode_checked(at, u64::from_le_bytes(h[0..8].try_into().unwrap())).ok_or_else(
            || {
                self.bad(format!(
                    "PM memtable node at {at}: next word fails its check"
                ))
            },
        )?;
        let u32_at = |i: usize| u32::from_le_bytes(h[i..i + 4].try_into().unwrap());
        Ok(NodeHead {
            next,
            trailer: u64::from_le_bytes(h[8..16].try_into().unwrap()),
            key_len: u32_at(16),
            value_len: u32_at(20),
            key_crc: u32_at(24),
            value_crc: u32_at(28),
        })
    }

    /// The internal key of the node at `at`, checked.
    fn ikey_of(&self, at: u64) -> Result<(Vec<u8>, NodeHead)> {
        let h = self.head_of(at)?;
        let end = at + NODE_HEADER as u64 + u64::from(h.key_len) + u64::from(h.value_len);
        if end > self.words.size() {
            return Err(self.bad(format!("PM memtable node at {at} runs past the file")));
        }
        let mut k = vec![0u8; h.key_len as usize + TRAILER_LEN];
        self.words
            .read(at + NODE_HEADER as u64, &mut k[..h.key_len as usize])?;
        let mut fields = [0u8; 16];
        fields[..8].copy_from_slice(&h.trailer.to_le_bytes());
        fields[8..12].copy_from_slice(&h.key_len.to_le_bytes());
        fields[12..].copy_from_slice(&h.value_len.to_le_bytes());
        if unmask(h.key_crc) != key_crc(at, &fields, &k[..h.key_len as usize]) {
            return Err(self.bad(format!("PM memtable node at {at}: key fails its checksum")));
        }
        k[h.key_len as usize..].copy_from_slice(&h.trailer.to_le_bytes());
        Ok((k, h))
    }

    /// The internal key, value and fixed fields of the node at `at`, checked.
    fn read_node(&self, at: u64) -> Result<(Vec<u8>, Vec<u8>, NodeHead)> {
        let (ikey, h) = self.ikey_of(at)?;
        let mut v = vec![0u8; h.value_len as usize];
        self.words
            .read(at + NODE_HEADER as u64 + u64::from(h.key_len), &mut v)?;
        if unmask(h.value_crc) != crc32c(&v) {
            return Err(self.bad(format!(
                "PM memtable node at {at}: value fails its checksum"
            )));
        }
        Ok((ikey, v, h))
    }

    /// The last node whose internal key is below `target` (0 = the head) and its next.
    fn find(&self, target: &[u8]) -> Result<(u64, u64)> {
        if self.headless.load(Ordering::Acquire) {
            return Ok((0, 0));
        }
        let mut cur = self
            .towers
            .read()
            .range(..OrderedKey(target.to_vec()))
            .next_back()
            .map_or(0, |(_, &at)| at);
        loop {
            let next = self.next_of(cur)?;
            if next == 0 || compare_internal(&self.ikey_of(next)?.0, target) != Cmp::Less {
                return Ok((cur, next));
            }
            cur = next;
        }
    }

    /// Links one node: a write of a batch, made durable (module docs: add). `sync`: also
    /// `msync` what it wrote. REQUIRES: `seq` above every sequence in the memtable... of the
    /// same user key, and unique; a [`PmTable::commit`] after the batch's last node.
    pub(crate) fn add(
        &self,
        seq: SequenceNumber,
        t: ValueType,
        key: &[u8],
        value: &[u8],
        sync: bool,
    ) -> Result<()> {
        let mut guard = self.writer.lock();
        let w = guard.as_mut().ok_or_else(|| {
            Error::InvalidArgument(format!("{}: memtable is frozen", self.path.display()))
        })?;
        let trailer = pack_trailer(seq, t);
        let mut ikey = Vec::with_capacity(key.len() + TRAILER_LEN);
        ikey.extend_from_slice(key);
        ikey.extend_from_slice(&trailer.to_le_bytes());
        let (pred, next) = self.find(&ikey)?;
        let size = w.size();
        debug_assert!(size.is_multiple_of(8));
        let at = size;
        let mut node = Vec::with_capacity(NODE_HEADER + key.len() + value.len() + 8);
        node.extend_from_slice(&encode_checked(at, next).to_le_bytes());
        node.extend_from_slice(&trailer.to_le_bytes());
        node.extend_from_slice(&(key.len() as u32).to_le_bytes());
        node.extend_from_slice(&(value.len() as u32).to_le_bytes());
        let kc = mask(key_crc(at, &node[8..24], key));
        node.extend_from_slice(&kc.to_le_bytes());
        node.extend_from_slice(&mask(crc32c(value)).to_le_bytes());
        node.extend_from_slice(key);
        node.extend_from_slice(value);
        node.resize(node.len().next_multiple_of(8), 0);
        w.append(&node)?;
        w.flush()?;
        self.words
            .store_u64_persist(pred, encode_checked(pred, at))?;
        if sync {
            self.words.msync(at, node.len() as u64)?;
            self.words.msync(pred, 8)?;
        }
        if sampled(at) {
            self.towers.write().insert(OrderedKey(ikey), at);
        }
        self.entries.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Persists the commit point of a batch whose last sequence is `seq` (module docs).
    pub(crate) fn commit(&self, seq: SequenceNumber, sync: bool) -> Result<()> {
        self.words
            .store_u64_persist(COMMIT_AT, encode_commit(seq))?;
        if sync {
            self.words.msync(COMMIT_AT, 8)?;
        }
        Ok(())
    }

    /// Makes sure the file has room for `bytes` more without allocating during the next
    /// appends (a write's nodes, before the first is linked).
    pub(crate) fn reserve(&self, bytes: u64) -> Result<()> {
        match self.writer.lock().as_mut() {
            Some(w) => w.reserve(bytes),
            None => Ok(()),
        }
    }

    /// Takes no more writes (its flush may start).
    pub(crate) fn freeze(&self) {
        self.writer.lock().take();
    }

    /// The newest version of `key` visible at `snapshot`.
    pub(crate) fn get(&self, key: &[u8], snapshot: SequenceNumber) -> Result<LookupResult> {
        let mut target = key.to_vec();
        target.extend_from_slice(&pack_trailer(snapshot, ValueType::Value).to_le_bytes());
        let (_, at) = self.find(&target)?;
        if at == 0 {
            return Ok(LookupResult::Absent);
        }
        let (ikey, h) = self.ikey_of(at)?;
        if &ikey[..ikey.len() - TRAILER_LEN] != key {
            return Ok(LookupResult::Absent);
        }
        match ValueType::from_u8(h.trailer as u8) {
            Some(ValueType::Value) => Ok(LookupResult::Found(self.read_node(at)?.1)),
            Some(ValueType::Deletion) => Ok(LookupResult::Deleted),
            None => Err(self.bad(format!("PM memtable node at {at}: unknown value type"))),
        }
    }

    /// An iterator over the committed and in-flight entries, in internal-key order.
    pub(crate) fn iter(self: &Arc<Self>) -> PmTableIter {
        PmTableIter {
            table: Arc::clone(self),
            at: 0,
            key: Vec::new(),
            value: Vec::new(),
            status: None,
        }
    }

    /// The memtable's number.
    pub(crate) fn number(&self) -> u64 {
        self.number
    }

    /// Entries linked.
    pub(crate) fn len(&self) -> u64 {
        self.entries.load(Ordering::Acquire)
    }

    /// True if it holds no entry.
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// PM bytes of the file (nodes, padding and nodes a crash left unlinked).
    pub(crate) fn pm_bytes(&self) -> u64 {
        self.words.size()
    }

    /// DRAM bytes of the upper levels.
    pub(crate) fn dram_bytes(&self) -> u64 {
        self.towers
            .read()
            .keys()
            .map(|k| k.0.len() as u64 + 48)
            .sum()
    }

    /// Reads and checks every linked node; returns the number of entries.
    pub(crate) fn verify(&self) -> Result<u64> {
        if self.headless.load(Ordering::Acquire) {
            return Ok(0);
        }
        let mut n = 0;
        let mut prev: Option<Vec<u8>> = None;
        let mut at = self.next_of(0)?;
        while at != 0 {
            let (ikey, _, h) = self.read_node(at)?;
            if prev
                .as_ref()
                .is_some_and(|p| compare_internal(p, &ikey) != Cmp::Less)
            {
                return Err(self.bad(format!("PM memtable node at {at} out of order")));
            }
            prev = Some(ikey);
            n += 1;
            at = h.next;
        }
        Ok(n)
    }
}

/// An iterator over a [`PmTable`]'s bottom level.
pub(crate) struct PmTableIter {
    table: Arc<PmTable>,
    /// The current node (0 = not positioned).
    at: u64,
    key: Vec<u8>,
    value: Vec<u8>,
    status: Option<Error>,
}

impl PmTableIter {
    fn load(&mut self, at: u64) {
        self.at = 0;
        if at == 0 {
            return;
        }
        match self.table.read_node(at) {
            Ok((k, v, _)) => {
                self.key = k;
                self.value = v;
                self.at = at;
            }
            Err(e) => self.status = Some(e),
        }
    }

    fn fail<T>(&mut self, r: Result<T>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                self.status = Some(e);
                self.at = 0;
                None
            }
        }
    }
}

impl InternalIterator for PmTableIter {
    fn valid(&self) -> bool {
        self.at != 0 && self.status.is_none()
    }

    fn seek_to_first(&mut self) {
        let r = if self.table.headless.load(Ordering::Acquire) {
            Ok(0)
        } else {
            self.table.next_of(0)
        };
        if let Some(next) = self.fail(r) {
            self.load(next);
        }
    }

    fn seek(&mut self, target: &[u8]) {
        let r = self.table.find(target);
        if let Some((_, next)) = self.fail(r) {
            self.load(next);
        }
    }

    fn next(&mut self) {
        let r = self.table.next_of(self.at);
        if let Some(next) = self.fail(r) {
            self.load(next);
        }
    }

    fn key(&self) -> &[u8] {
        &self.key
    }

    fn value(&self) -> &[u8] {
        &self.value
    }

    fn status(&self) -> Result<()> {
        match &self.status {
            Some(e) => Err(e.duplicate()),
            None => Ok(()),
        }
    }
}
