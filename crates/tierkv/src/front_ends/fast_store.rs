//! FluidKV's FastStore as a front end (Lu et al., "FluidKV: Seamlessly Bridging the Gap between
//! Indexing Performance and Memory-Footprint on Ultra-Fast Storage", PVLDB 17(6), 2024,
//! section 4.2): a concurrent ordered DRAM index over **thread-exclusive PM logs**. There is no
//! write group and no leader: each writer appends its batch to its own log, inserts it into
//! the index and returns. Writers wait for each other only to publish in sequence order (a
//! reader's snapshot must never see a later write without an earlier one), which takes as
//! long as the earlier writers' own appends and inserts, never a shared log's.
//!
//! * **Generations.** The index and the logs written into it form a generation. When the
//!   active generation reaches `write_buffer_size`, a rotation waits for the writers inside it
//!   (a gate: writers hold it shared, the rotation exclusively), makes it immutable (flushed
//!   into the first stage by the flush thread, as a memtable) and starts a new one. Each
//!   generation has a base file number, taken at its creation: every log of the generation is
//!   numbered above it, and the manifest's log number moves to the next generation's base when
//!   a flush retires one, so that the logs of retired generations are obsolete.
//! * **Logs.** A writer thread is assigned a slot once (round robin over `SLOTS`); each slot of
//!   a generation has its own log file in the PM pool, created by the slot's first write. Its
//!   first record is a header naming the generation's first sequence number; each further
//!   record is a write batch stamped with its sequence numbers (the WAL record format). A
//!   record is persisted before the batch is inserted. The slot's lock is held only around the
//!   append, and with no more threads than slots no two writers share one.
//! * **Sequence numbers** come from one atomic counter, taken inside the gate; a writer
//!   publishes its range (the database's last sequence) once every earlier range is
//!   published. A write whose append fails poisons the database and still publishes its range,
//!   so no later writer waits for it forever.
//! * **Sync writes.** A batch written with `sync` waits for every earlier write to be
//!   published (so all of them are appended), syncs every log of the live generations, then is
//!   acknowledged: everything up to it survives a power failure.
//! * **Every write is logged**: `WriteOptions::disable_wal` is ignored (a PM append is the
//!   cheap part here, and recovery relies on every sequence number being in some log).
//!
//! **Recovery** reads every live log, checks each one's header, and replays the batches in
//! sequence order from the oldest live generation's first sequence number for as long as the
//! numbers are consecutive: a write is acknowledged only once every earlier one was published,
//! so every acknowledged write is in that prefix, and a gap (a write that never completed, or
//! a power failure's loss of unsynced appends) ends it at a point in time. Damage inside a
//! record is reported by its checksum; a lost record followed by intact ones cannot be told
//! from a power failure's cut and ends the replay there. The replayed writes are flushed into
//! the first stage and the old logs retired, as the WAL front end does.
//!
//! Locking: gate (shared by writers, exclusive by a rotation) -> a slot's log lock (a writer
//! creating its log takes a file number) -> the database's state mutex -> `gens` (a leaf). The
//! flush thread takes the slot locks of a flushed generation under the state mutex (to drop
//! its logs' writers): no writer locks those any more but a sync write's `sync_all`, which
//! holds no other lock meanwhile.

use super::replay::{finish_replay, flush_replayed, live_logs, read_log, WalLink};
use crate::db::{AdmitBuffer, DbInner, Present, State, Step};
use crate::format::{lookup_key, make_internal_key, user_key, OrderedKey, ValueType};
use crate::iterator::InternalIterator;
use crate::log::{LogReader, LogWriter};
use crate::memtable::LookupResult;
use crate::options::{Options, WriteOptions};
use crate::pipeline::{Fill, FlushSource, FrontEnd, FrontView};
use crate::stats::{IoPurpose, Part, StallReason, StallTracker};
use crate::tier::Tier;
use crate::version::{log_file_name, FileKind, VersionEdit, VersionSet};
use crate::write_batch::{decode_batch, BatchOp};
use crate::{Error, Result, WriteBatch};
use crossbeam_skiplist::SkipMap;
use parking_lot::{Mutex, MutexGuard, RwLock};
use std::cmp::Ordering;
use std::collections::VecDeque;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::sync::Arc;

/// Log slots per generation: writer threads beyond this many share slots.
pub(crate) const SLOTS: usize = 64;

/// The first 8 bytes of a log's header record; as a sequence number it would exceed
/// `MAX_SEQUENCE`, so no batch record starts with them.
const HEADER_MAGIC: [u8; 8] = *b"TKVFSGEN";

/// Times a write that finds no room for its log record waits for background work (up to
/// 100 ms each) before it fails with `NoSpace`.
const NO_SPACE_TRIES: u32 = 20;

/// DRAM an index entry takes besides its key and value (skiplist node, boxes), roughly.
const ENTRY_OVERHEAD: u64 = 96;

/// An internal key ordered as the engine orders them.
type IKey = OrderedKey<Box<[u8]>>;

/// One slot's log in a generation.
struct SlotLog {
    number: u64,
    writer: LogWriter,
}

/// A DRAM index and the logs written into it.
struct Generation {
    /// Every log of the generation is numbered above this (taken when it was created).
    base: u64,
    /// The first sequence number of its writes.
    start_seq: u64,
    index: SkipMap<IKey, Box<[u8]>>,
    /// Bytes of its entries (keys, values and overhead).
    bytes: AtomicU64,
    /// Entries inserted.
    entries: AtomicU64,
    /// Bytes appended to its logs.
    log_bytes: AtomicU64,
    logs: Box<[Mutex<Option<SlotLog>>]>,
}

impl Generation {
    fn new(base: u64, start_seq: u64) -> Self {
        Generation {
            base,
            start_seq,
            index: SkipMap::new(),
            bytes: AtomicU64::new(0),
            entries: AtomicU64::new(0),
            log_bytes: AtomicU64::new(0),
            logs: (0..SLOTS).map(|_| Mutex::new(None)).collect(),
        }
    }

    fn add(&self, seq: u64, t: ValueType, key: &[u8], value: &[u8]) {
        let ikey = make_internal_key(key, seq, t);
        let bytes = (ikey.len() + value.len()) as u64 + ENTRY_OVERHEAD;
        self.index.insert(
            OrderedKey(ikey.into_boxed_slice()),
            value.to_vec().into_boxed_slice(),
        );
        self.bytes.fetch_add(bytes, Relaxed);
        self.entries.fetch_add(1, Relaxed);
    }

    fn get(&self, key: &[u8], snapshot: u64) -> LookupResult {
        let look = OrderedKey(lookup_key(key, snapshot).into_boxed_slice());
        match self.index.lower_bound(Bound::Included(&look)) {
            Some(e) if user_key(&e.key().0) == key => {
                match crate::format::parse_internal_key(&e.key().0).map(|p| p.value_type) {
                    Some(ValueType::Value) => LookupResult::Found(e.value().to_vec()),
                    _ => LookupResult::Deleted,
                }
            }
            _ => LookupResult::Absent,
        }
    }

    fn is_empty(&self) -> bool {
        self.index.is_empty()
    }
}

/// An iterator over a generation's index: each step copies the entry out and finds the next
/// one by a search from it (the skiplist's entries borrow the map).
struct GenIter {
    gen: Arc<Generation>,
    cur: Option<(Vec<u8>, Vec<u8>)>,
}

impl GenIter {
    fn set(&mut self, e: Option<crossbeam_skiplist::map::Entry<'_, IKey, Box<[u8]>>>) {
        self.cur = e.map(|e| (e.key().0.to_vec(), e.value().to_vec()));
    }
}

impl InternalIterator for GenIter {
    fn valid(&self) -> bool {
        self.cur.is_some()
    }
    fn seek_to_first(&mut self) {
        let gen = Arc::clone(&self.gen);
        self.set(gen.index.front());
    }
    fn seek(&mut self, target: &[u8]) {
        let gen = Arc::clone(&self.gen);
        let t = OrderedKey(target.to_vec().into_boxed_slice());
        self.set(gen.index.lower_bound(Bound::Included(&t)));
    }
    fn next(&mut self) {
        let gen = Arc::clone(&self.gen);
        let Some((k, _)) = self.cur.take() else {
            return;
        };
        let t = OrderedKey(k.into_boxed_slice());
        self.set(gen.index.lower_bound(Bound::Excluded(&t)));
    }
    fn key(&self) -> &[u8] {
        &self.cur.as_ref().expect("valid").0
    }
    fn value(&self) -> &[u8] {
        &self.cur.as_ref().expect("valid").1
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}

/// The generations readers see, newest first.
struct FastView {
    gens: Vec<Arc<Generation>>,
}

impl FrontView for FastView {
    fn get(&self, key: &[u8], snapshot: u64) -> Result<LookupResult> {
        for g in &self.gens {
            match g.get(key, snapshot) {
                LookupResult::Absent => {}
                found => return Ok(found),
            }
        }
        Ok(LookupResult::Absent)
    }

    fn iterators(&self, out: &mut Vec<Box<dyn InternalIterator>>) {
        for g in &self.gens {
            out.push(Box::new(GenIter {
                gen: Arc::clone(g),
                cur: None,
            }));
        }
    }

    fn dram_bytes(&self) -> (u64, u64) {
        (self.gens.iter().map(|g| g.bytes.load(Relaxed)).sum(), 0)
    }
}

/// An immutable generation to flush.
struct GenFlush(Arc<Generation>);

impl FlushSource for GenFlush {
    fn iter(&self) -> Box<dyn InternalIterator> {
        Box::new(GenIter {
            gen: Arc::clone(&self.0),
            cur: None,
        })
    }
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

struct Gens {
    active: Arc<Generation>,
    /// Oldest first.
    imm: VecDeque<Arc<Generation>>,
}

/// The FastStore front end (module doc).
pub(crate) struct FastStore {
    write_buffer_size: u64,
    max_write_buffer_number: usize,
    /// Writers hold it shared while inside a generation; a rotation exclusively.
    gate: RwLock<()>,
    gens: Mutex<Gens>,
    /// The next sequence number to hand out.
    next_seq: AtomicU64,
}

/// The slot of the calling thread.
fn my_slot() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SLOT: usize = NEXT.fetch_add(1, Relaxed) % SLOTS;
    }
    SLOT.with(|s| *s)
}

impl FastStore {
    pub(crate) fn new(options: &Options) -> Self {
        FastStore {
            write_buffer_size: options.write_buffer_size as u64,
            max_write_buffer_number: options.max_write_buffer_number,
            gate: RwLock::new(()),
            gens: Mutex::new(Gens {
                active: Arc::new(Generation::new(0, 1)),
                imm: VecDeque::new(),
            }),
            next_seq: AtomicU64::new(1),
        }
    }

    fn active(&self) -> Arc<Generation> {
        Arc::clone(&self.gens.lock().active)
    }

    /// Admits a write through the engine's admission loop ([`DbInner::admit_write`]):
    /// throttled on the stages' write pressure and the number of immutable generations, a full
    /// active generation rotated.
    fn make_room(&self, db: &DbInner) -> Result<()> {
        db.admit_write(
            &mut GenerationRoom {
                front: self,
                base: 0,
            },
            true,
        )
    }

    /// Makes the active generation immutable and starts a new one, after the writers inside it
    /// are done: the one numbered `full` (found full; nothing if another writer rotated it
    /// meanwhile), or with `None` the active one if it holds anything.
    fn rotate_full(&self, db: &DbInner, full: Option<u64>) -> Result<()> {
        let _gate = self.gate.write();
        let active = self.active();
        // Not rotated by another writer meanwhile (`full`: the base of the generation found
        // full), and holding something.
        let due = !active.is_empty() && full.is_none_or(|base| base == active.base);
        if !due {
            return Ok(());
        }
        let mut state = db.state.lock();
        if let Some(e) = &state.bg_error {
            return Err(e.duplicate());
        }
        let base = state.versions.new_file_number();
        // Every writer of the old generation published: the new one starts after them.
        let start = self.next_seq.load(Acquire);
        {
            let mut g = self.gens.lock();
            let old = std::mem::replace(&mut g.active, Arc::new(Generation::new(base, start)));
            g.imm.push_back(old);
        }
        state.install_super_version(self);
        db.bg_cv.notify_all();
        Ok(())
    }

    /// Makes the calling thread's log of `gen` ready for a record of `payload` bytes: creates
    /// it (with its header) if needed and takes the record's space, so that the append after
    /// the sequence numbers are taken cannot run out of space.
    fn prepare(
        &self,
        db: &DbInner,
        gen: &Generation,
        slot: &mut Option<SlotLog>,
        payload: usize,
    ) -> Result<()> {
        if slot.is_none() {
            let number = db.state.lock().versions.new_file_number();
            let path = log_file_name(&db.dir, number);
            let fs = db.fs_for(Tier::Pm);
            let mut writer = LogWriter::new(fs.create_log(&path)?);
            let created = fs.sync_dir(&db.dir).and_then(|()| {
                let mut header = HEADER_MAGIC.to_vec();
                header.extend_from_slice(&gen.start_seq.to_le_bytes());
                writer.add_record(&header)
            });
            match created {
                Ok(n) => {
                    gen.log_bytes.fetch_add(n, Relaxed);
                    db.counters
                        .add_written(Tier::Pm, Part::FrontEnd, IoPurpose::Wal, n)
                }
                Err(e) => {
                    // No record of the generation in it: nothing to keep.
                    drop(writer);
                    let _ = fs.remove(&path);
                    return Err(e);
                }
            }
            *slot = Some(SlotLog { number, writer });
        }
        slot.as_mut()
            .expect("created above")
            .writer
            .reserve_record(payload)
    }

    /// Appends `batch` (sequence numbers from `first`) to `log`, prepared for it; returns the
    /// bytes appended.
    fn append(
        &self,
        db: &DbInner,
        gen: &Generation,
        log: &mut SlotLog,
        batch: &mut WriteBatch,
        first: u64,
        sync: bool,
    ) -> Result<u64> {
        let n = batch.with_record(first, sync, 0, |rec| log.writer.add_record(rec))?;
        gen.log_bytes.fetch_add(n, Relaxed);
        db.counters
            .add_written(Tier::Pm, Part::FrontEnd, IoPurpose::Wal, n);
        db.counters.wal_appends.fetch_add(1, Relaxed);
        Ok(n)
    }

    /// Waits until every write before `first` is published, then publishes `count` writes from
    /// `first`.
    fn publish(&self, db: &DbInner, first: u64, count: u64) {
        let mut spins = 0u32;
        while db.last_sequence.load(Acquire) + 1 != first {
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        db.last_sequence.store(first + count - 1, Release);
    }

    /// Syncs every log of the live generations (a sync write, once every earlier write is
    /// published).
    fn sync_all(&self, db: &DbInner) -> Result<()> {
        let gens: Vec<Arc<Generation>> = {
            let g = self.gens.lock();
            g.imm
                .iter()
                .chain(std::iter::once(&g.active))
                .cloned()
                .collect()
        };
        for gen in gens {
            for slot in gen.logs.iter() {
                if let Some(log) = slot.lock().as_mut() {
                    log.writer.sync()?;
                }
            }
        }
        db.counters.wal_syncs.fetch_add(1, Relaxed);
        Ok(())
    }
}

/// The active generation, as the admission loop sees it.
struct GenerationRoom<'a> {
    front: &'a FastStore,
    /// The base of the generation last measured (the one `rotate` rotates).
    base: u64,
}

impl AdmitBuffer for GenerationRoom<'_> {
    fn fill(&mut self, db: &DbInner) -> Option<Fill> {
        // Full: its index reached the write buffer size, or its logs their share of the pool
        // (as one WAL's, so that a small pool rotates before it runs out).
        let share = db
            .pm
            .as_ref()
            .map_or(0, |p| p.wal_chunk_cap * p.pmfs.data_per_chunk());
        let front = self.front;
        let g = front.gens.lock();
        let a = &g.active;
        let logs_full = share > 0 && !a.is_empty() && a.log_bytes.load(Relaxed) >= share;
        self.base = a.base;
        Some(Fill {
            full: a.bytes.load(Relaxed) >= front.write_buffer_size || logs_full,
            at_limit: g.imm.len() + 1 >= front.max_write_buffer_number,
        })
    }

    fn rotate(&mut self, db: &DbInner, state: &mut MutexGuard<'_, State>) -> Result<Step> {
        let (front, base) = (self.front, self.base);
        MutexGuard::unlocked(state, || front.rotate_full(db, Some(base)))?;
        Ok(Step::Again)
    }
}

impl FrontEnd for FastStore {
    /// Its live logs, every record decoded as recovery reads them.
    fn write(&self, db: &DbInner, options: &WriteOptions, mut batch: WriteBatch) -> Result<()> {
        let mut tries = 0;
        let mut stalled = StallTracker::default();
        let count = batch.len() as u64;
        let user_bytes = batch.user_bytes();
        let (_gate, gen, first, appended) = loop {
            self.make_room(db)?;
            let gate = self.gate.read();
            let gen = self.active();
            // The slot's lock is held from taking the record's space to the append; the
            // sequence numbers are taken in between, once the append cannot run out of space.
            let prepared = {
                let mut slot = gen.logs[my_slot()].lock();
                self.prepare(db, &gen, &mut slot, batch.encoded_len())
                    .map(|()| {
                        let first = self.next_seq.fetch_add(count, AcqRel);
                        let log = slot.as_mut().expect("prepared");
                        (
                            first,
                            self.append(db, &gen, log, &mut batch, first, options.sync),
                        )
                    })
            };
            match prepared {
                Ok((first, appended)) => break (gate, gen, first, appended),
                Err(Error::NoSpace(m)) => {
                    // A flush frees the logs of the generation it retires (just after it
                    // wakes the writers: a few tries); rotating a non-empty generation lets a
                    // flush retire its logs.
                    drop(gate);
                    tries += 1;
                    if tries > NO_SPACE_TRIES {
                        return Err(Error::NoSpace(format!(
                            "{m}; the PM pool has no room for this write's log record"
                        )));
                    }
                    if self.pending_flushes() == 0 && !gen.is_empty() {
                        self.rotate_full(db, None)?;
                    }
                    let mut state = db.state.lock();
                    db.wait_for_background(&mut state, StallReason::PmPoolFull, &mut stalled);
                    continue;
                }
                Err(e) => return Err(db.state.lock().poison("log write failed", e)),
            }
        };
        if let Err(e) = appended {
            let e = db.state.lock().poison("log write failed", e);
            self.publish(db, first, count);
            return Err(e);
        }
        for (seq, op) in (first..).zip(batch.iter_ops()) {
            match op {
                Ok(BatchOp::Put(k, v)) => gen.add(seq, ValueType::Value, k, v),
                Ok(BatchOp::Delete(k)) => gen.add(seq, ValueType::Deletion, k, &[]),
                Err(e) => {
                    let e = db.state.lock().poison("index insert failed", e);
                    self.publish(db, first, count);
                    return Err(e);
                }
            }
        }
        self.publish(db, first, count);
        db.counters
            .user_bytes_written
            .fetch_add(user_bytes, Relaxed);
        db.counters.user_writes.fetch_add(count, Relaxed);
        if options.sync {
            if let Err(e) = self.sync_all(db) {
                return Err(db.state.lock().poison("log sync failed", e));
            }
        }
        Ok(())
    }

    fn view(&self) -> Arc<dyn FrontView> {
        let g = self.gens.lock();
        let gens = std::iter::once(&g.active)
            .chain(g.imm.iter().rev())
            .cloned()
            .collect();
        Arc::new(FastView { gens })
    }

    fn rotate(&self, db: &DbInner) -> Result<()> {
        self.rotate_full(db, None)
    }

    fn next_flush(&self) -> Option<Arc<dyn FlushSource>> {
        let g = self.gens.lock();
        g.imm
            .front()
            .map(|gen| Arc::new(GenFlush(Arc::clone(gen))) as Arc<dyn FlushSource>)
    }

    fn retire_flushed(&self, edit: &mut VersionEdit) {
        let g = self.gens.lock();
        let next = g.imm.get(1).unwrap_or(&g.active);
        edit.log_number = Some(next.base);
        edit.log_created = Some(false);
    }

    fn flushed(&self, dir: &Path) -> Vec<(Tier, PathBuf)> {
        let popped = self.gens.lock().imm.pop_front();
        let Some(gen) = popped else {
            return Vec::new();
        };
        // Its logs' writers are dropped here, not with the generation (readers may hold it a
        // while longer): a removed log's chunks return to the pool once nothing holds it.
        gen.logs
            .iter()
            .filter_map(|slot| slot.lock().take())
            .map(|log| (Tier::Pm, log_file_name(dir, log.number)))
            .collect()
    }

    fn pending_flushes(&self) -> usize {
        self.gens.lock().imm.len()
    }

    fn verify(&self, _dir: &Path, _versions: &VersionSet, _present: &Present) -> Result<()> {
        // Logs are created by the first write of each slot: none has to exist.
        Ok(())
    }

    fn is_obsolete(&self, kind: FileKind, number: u64, versions: &VersionSet) -> Option<bool> {
        (kind == FileKind::Log).then_some(number < versions.log_number)
    }

    fn kept_bytes(&self) -> u64 {
        0
    }

    fn recover(&self, db: &DbInner, present: &Present) -> Result<()> {
        recover(self, db, present)
    }
}

/// The header record of a thread log: the first sequence number of its generation.
pub(crate) fn parse_header(record: &[u8]) -> Option<u64> {
    (record.len() == 16 && record[..8] == HEADER_MAGIC)
        .then(|| u64::from_le_bytes(record[8..].try_into().expect("8 bytes")))
}

/// True if log `number` on `tier` is a thread log (its first record is a generation header),
/// not the memtable front end's WAL: a database written with `pm.thread_logs` reopened without
/// it replays its logs through [`replay_thread_logs`].
pub(super) fn is_thread_log(db: &DbInner, number: u64, tier: Tier) -> Result<bool> {
    let path = log_file_name(&db.dir, number);
    let data = db.fs_for(tier).read_all(&path)?;
    let mut reader = LogReader::new(data, path.display().to_string());
    Ok(reader
        .next_record()?
        .is_some_and(|r| parse_header(&r).is_some()))
}

/// Replays `logs` (module doc, "Recovery"): thread logs, or WALs of the memtable front end (a
/// database that ran without `pm.thread_logs` before: each is one log whose first record
/// starts its sequence numbers, and writes that skipped it are counted in the next record),
/// merged by sequence number from the oldest start for as long as the numbers follow on; the
/// writes are flushed into the first stage (added to `edit`, their runs listed in `written`).
/// Returns the last sequence number replayed (0: none).
pub(super) fn replay_thread_logs(
    db: &DbInner,
    state: &mut State,
    logs: &[(u64, Tier)],
    edit: &mut VersionEdit,
    written: &mut Vec<(u64, Tier)>,
) -> Result<u64> {
    // (first sequence, record, location) of every batch; the oldest log's start; the links
    // WALs of the memtable front end open with.
    let mut batches: Vec<(u64, Vec<u8>, String)> = Vec::new();
    let mut start: Option<u64> = None;
    let mut links = Vec::new();
    for &(number, tier) in logs {
        let (mut reader, location) = read_log(db, number, tier)?;
        let mut log_start = None;
        while let Some(record) = reader.next_record()? {
            if log_start.is_none() {
                if let Some(s) = parse_header(&record) {
                    log_start = Some(s);
                    continue;
                }
                // A WAL of the memtable front end opens with a link to the WAL before it; the
                // merge by sequence number finds what that WAL lost as a gap, but for an
                // emptied one that no merge reaches (below).
                if let Some(link) = WalLink::parse(&record) {
                    links.push(link);
                    continue;
                }
            }
            let batch = decode_batch(&record, "log record").map_err(|e| match e {
                Error::Corruption { reason, .. } => Error::corruption(location.clone(), reason),
                other => other,
            })?;
            let first = batch.first_sequence;
            match log_start {
                Some(s) if first < s => {
                    return Err(Error::corruption(
                        location,
                        format!("record of sequence {first} before its log's start {s}"),
                    ))
                }
                Some(_) => {}
                // A WAL of the memtable front end: its first record starts its numbers, past
                // the writes that skipped it before.
                None => log_start = Some(first - batch.unlogged_before),
            }
            batches.push((first, record, location.clone()));
        }
        if let Some(s) = log_start {
            start = Some(start.map_or(s, |t: u64| t.min(s)));
        }
    }
    batches.sort_by_key(|b| b.0);
    let gen = Arc::new(Generation::new(0, 0));
    // A live WAL emptied whole (its link says it held writes, no log reaches back to them):
    // point in time before it, so nothing of the logs is replayed.
    let mut expected = match links_past_start(&links, state.versions.log_number, start) {
        Some(_) => None,
        None => start,
    };
    for (first, record, location) in &batches {
        let Some(e) = expected else { break };
        let batch = decode_batch(record, "log record")?;
        let e = e + batch.unlogged_before;
        match first.cmp(&e) {
            // A gap: a write that never completed, or appends a power failure cut.
            Ordering::Greater => break,
            Ordering::Less => {
                return Err(Error::corruption(
                    location.clone(),
                    format!("the record of sequence {first} repeats sequence numbers before {e}"),
                ))
            }
            Ordering::Equal => {}
        }
        let mut seq = *first;
        for op in batch.ops {
            match op? {
                BatchOp::Put(k, v) => gen.add(seq, ValueType::Value, k, v),
                BatchOp::Delete(k) => gen.add(seq, ValueType::Deletion, k, &[]),
            }
            seq += 1;
        }
        expected = Some(seq);
    }
    flush_replayed(db, state, &GenFlush(gen), edit, written)?;
    Ok(expected.map_or(0, |e| e.saturating_sub(1)))
}

/// The link (of those the logs opened with) to a live WAL whose writes a merge starting at
/// `start` cannot reach: the WAL held writes up to `prev_last`, and no log starts at or before
/// it (the WAL was emptied, as a power failure leaves a file never synced). Every record the
/// merge would replay then follows a hole.
pub(crate) fn links_past_start(
    links: &[WalLink],
    log_number: u64,
    start: Option<u64>,
) -> Option<WalLink> {
    links
        .iter()
        .filter(|l| l.prev_number >= log_number && l.prev_last > 0)
        .filter(|l| start.is_none_or(|s| s > l.prev_last))
        .min_by_key(|l| l.prev_last)
        .copied()
}

/// Replays the live logs into the first stage, retires them, and starts the first
/// generation.
fn recover(front: &FastStore, db: &DbInner, present: &Present) -> Result<()> {
    let mut state = db.state.lock();
    let logs = live_logs(&state, present);
    let mut edit = VersionEdit::default();
    let mut written: Vec<(u64, Tier)> = Vec::new();
    let replayed = replay_thread_logs(db, &mut state, &logs, &mut edit, &mut written).map(|r| {
        state.versions.last_sequence = state.versions.last_sequence.max(r);
    });
    let base = finish_replay(db, state, replayed, edit, written)?;
    let mut state = db.state.lock();
    let last = state.versions.last_sequence;
    {
        let mut g = front.gens.lock();
        g.active = Arc::new(Generation::new(base, last + 1));
        g.imm.clear();
    }
    front.next_seq.store(last + 1, Release);
    state.install_super_version(front);
    db.last_sequence.store(last, Release);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::links_past_start;
    use crate::front_ends::WalLink;

    #[test]
    fn a_link_no_merge_reaches_is_a_hole() {
        let link = |prev_number, prev_last| WalLink {
            prev_number,
            prev_last,
        };
        // WAL 5 held writes up to 100; WAL 6 links to it. The oldest live WAL is 5.
        let links = [link(5, 100)];
        // Some log starts at or before 100: the merge reaches WAL 5's writes (any gap in them
        // is the merge's own cut).
        assert_eq!(links_past_start(&links, 5, Some(41)), None);
        assert_eq!(links_past_start(&links, 5, Some(100)), None);
        // The logs start past 100 (WAL 5 emptied), or hold nothing: a hole.
        assert_eq!(links_past_start(&links, 5, Some(101)), Some(link(5, 100)));
        assert_eq!(links_past_start(&links, 5, None), Some(link(5, 100)));
        // A retired WAL (below the oldest live one) lost nothing; nor did one that held none.
        assert_eq!(links_past_start(&links, 6, Some(101)), None);
        assert_eq!(links_past_start(&[link(5, 0)], 5, Some(101)), None);
        // Of several, the lowest.
        let two = [link(6, 300), link(5, 100)];
        assert_eq!(links_past_start(&two, 5, Some(400)), Some(link(5, 100)));
        assert_eq!(links_past_start(&two, 5, Some(50)), None);
    }
}
