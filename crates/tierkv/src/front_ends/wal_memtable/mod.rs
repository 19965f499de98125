//! The memtable front end: LevelDB's write path (a WAL and a DRAM memtable), used by `leveled`,
//! `leveled-pm` and the PM designs with a PM log; or, for SLM-DB's designs (`slmdb`,
//! `leveled-pmtable`), the same write path with a persistent skiplist memtable in PM
//! ([`crate::pmtable`]) and no WAL: the memtable file plays the WAL's part (its number, its
//! name `NNNNNN.log`, its retirement by the flush) and a write is durable once linked into it.
//!
//! Writers join a queue; the writer at the front (the leader) commits a group of batches with
//! one WAL append. Steps of the leader, holding the `wal` lock: make room (throttle on the
//! stages' write pressure and on the memtable backlog, rotate a full memtable to a new WAL),
//! take the log's space for the record, assign sequence numbers, append one WAL record (and
//! sync if any writer of the group asked), insert into the memtable, publish the last sequence.
//! A failed WAL append or sync poisons the database: the memtable is not updated and every
//! later write fails with [`Error::Poisoned`].
//!
//! A group of writers that skip the WAL (`WriteOptions::disable_wal`; never grouped with logged
//! writers) makes room the same way and goes to the memtable only; the next logged record counts
//! the sequence numbers they took in its trailer (`write_batch`), so that recovery tells their
//! gap from a cut WAL. A PM memtable is its own log: there, `disable_wal` changes nothing.
//!
//! A rotation does not sync the old WAL in the leader: closed WALs (and the new WAL's directory
//! entry) are synced by the flush thread before it flushes, and by a sync write before it
//! appends its record, so a synced record always follows fully durable WALs. A WAL retired by a
//! flush needs no sync: its data is in the synced run.
//!
//! Locking: `queue` orders writers; the leader alone takes `wal`; `buffers` (the memtables) is
//! a leaf lock taken under the database's state mutex or alone. Lock order: `wal` -> state ->
//! `buffers`.

mod lab_log;
mod recovery;
mod replayer;

pub(crate) use lab_log::{buffer_chunks, enabled as lab_log_enabled, scan as scan_lab_log};

use super::buffer::Buffer;
use super::replay::WalLink;
use crate::db::{AdmitBuffer, DbInner, Present, State, Step};
use crate::format::ValueType;
use crate::iterator::InternalIterator;
use crate::labdb::vaddr::LabAddrs;
use crate::log::LogWriter;
use crate::memtable::{LookupResult, MemTable, RegionCache};
use crate::options::{Options, WriteOptions};
use crate::pipeline::{Fill, FlushSource, FrontEnd, FrontView};
use crate::pmtable::PmTable;
use crate::stats::{IoPurpose, Part, StallReason};
use crate::tier::Tier;
use crate::version::{log_file_name, FileKind, VersionEdit, VersionSet};
use crate::write_batch::BatchOp;
use crate::{Error, Result, WriteBatch};
use lab_log::{LabLog, LabLogState};
use parking_lot::{Condvar, Mutex, MutexGuard};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::Arc;

/// Bytes a group may grow to (LevelDB's limit).
pub(crate) const MAX_GROUP_BYTES: usize = 1 << 20;

/// One waiting writer.
struct Writer {
    sync: bool,
    /// Its batch skips the WAL (`WriteOptions::disable_wal`, on a front end with a WAL).
    unlogged: bool,
    slot: Mutex<WriterSlot>,
}

struct WriterSlot {
    batch: Option<WriteBatch>,
    result: Option<Result<()>>,
}

/// The WAL owned by the write leader.
pub(crate) struct WalState {
    pub writer: LogWriter,
    pub number: u64,
    /// The active memtable (the same `Arc` as `Buffers::mem`).
    pub mem: Buffer,
    /// Sequence numbers unlogged writes took since the last record appended to a WAL: the
    /// next record carries them, so that recovery tells their gap from a cut log.
    pub unlogged_seqs: u64,
    /// The last sequence number of the last record appended to this WAL (0: none yet): the
    /// next WAL's link record carries it (`front_ends::replay::WalLink`).
    pub last_logged: u64,
    /// LAB-DB's log: the value array and WAL-buffer halves (unused without it).
    pub lab: LabLogState,
}

/// Closed WALs not synced yet: a rotation hands its old WAL (and the directory entry of the new
/// one) here instead of syncing them in the write leader; the flush thread syncs them in the
/// background, and a sync write syncs them first itself.
#[derive(Default)]
struct ClosedLogs {
    pending: Vec<LogWriter>,
    /// A new WAL's directory entry is not synced yet.
    dir_unsynced: bool,
    /// Syncs running (their logs are no longer in `pending`).
    in_flight: usize,
    /// The first failed sync: the database is poisoned, and no later sync may report success.
    failed: Option<String>,
}

/// The memtables readers see.
struct Buffers {
    mem: Buffer,
    /// Immutable memtables waiting for flush, oldest first.
    imm: VecDeque<Buffer>,
}

/// The memtables of one super version.
struct MemtableView {
    mem: Buffer,
    /// Immutable memtables, oldest first.
    imm: Vec<Buffer>,
}

impl FrontView for MemtableView {
    fn get(&self, key: &[u8], snapshot: u64) -> Result<LookupResult> {
        for mem in std::iter::once(&self.mem).chain(self.imm.iter().rev()) {
            match mem.get(key, snapshot)? {
                LookupResult::Absent => {}
                found => return Ok(found),
            }
        }
        Ok(LookupResult::Absent)
    }

    fn iterators(&self, out: &mut Vec<Box<dyn InternalIterator>>) {
        out.push(self.mem.iter());
        for m in self.imm.iter().rev() {
            out.push(m.iter());
        }
    }

    fn dram_bytes(&self) -> (u64, u64) {
        std::iter::once(&self.mem)
            .chain(self.imm.iter())
            .map(Buffer::dram_bytes)
            .fold((0, 0), |(a, b), (x, y)| (a + x, b + y))
    }
}

/// A memtable handed to the flush, with its versions' value addresses when LAB-DB's log
/// wrote it.
pub(super) struct MemtableFlush {
    buffer: Buffer,
    addrs: Option<Arc<LabAddrs>>,
}

impl MemtableFlush {
    /// A memtable without value addresses.
    pub(super) fn new(buffer: Buffer) -> Self {
        MemtableFlush {
            buffer,
            addrs: None,
        }
    }
}

impl FlushSource for MemtableFlush {
    fn iter(&self) -> Box<dyn InternalIterator> {
        self.buffer.iter()
    }
    fn is_empty(&self) -> bool {
        self.buffer.is_empty()
    }
    fn log_payload(&self) -> Option<Arc<dyn std::any::Any + Send + Sync>> {
        self.addrs
            .clone()
            .map(|a| a as Arc<dyn std::any::Any + Send + Sync>)
    }
}

/// The WAL + memtable front end.
pub(crate) struct WalMemtable {
    /// Where the WAL lives (PM for a PM memtable: its file).
    pub(super) wal_tier: Tier,
    /// SLM-DB's persistent skiplist memtable in PM, no WAL (module docs).
    pub(super) pm_memtable: bool,
    /// LAB-DB's log (PM WAL buffer, key and value arrays on SSD) in place of the plain WAL.
    pub(super) lab: Option<LabLog>,
    write_buffer_size: usize,
    max_write_buffer_number: usize,
    queue: Mutex<VecDeque<Arc<Writer>>>,
    queue_cv: Condvar,
    pub(super) wal: Mutex<WalState>,
    buffers: Mutex<Buffers>,
    closed: Mutex<ClosedLogs>,
    closed_cv: Condvar,
    /// The reserved memory of flushed memtables, reused by the next ones.
    pub(super) regions: Arc<RegionCache>,
    /// Set by the first unlogged write: closing the database flushes the memtables then, so
    /// that a clean close loses none of them.
    unlogged_writes: AtomicBool,
}

impl WalMemtable {
    /// A front end for `options`; [`FrontEnd::recover`] starts its WAL.
    pub fn new(options: &Options) -> Self {
        let placeholder = Buffer::Dram(Arc::new(MemTable::new(0, 0)));
        let pm_memtable = options.design.memtable_on_pm();
        WalMemtable {
            wal_tier: if pm_memtable {
                Tier::Pm
            } else {
                options.design.wal_tier(options)
            },
            pm_memtable,
            lab: lab_log::enabled(options).then(|| LabLog::new(options.labdb.wal_buffer_bytes)),
            write_buffer_size: options.write_buffer_size,
            max_write_buffer_number: options.max_write_buffer_number,
            queue: Mutex::new(VecDeque::new()),
            queue_cv: Condvar::new(),
            wal: Mutex::new(WalState {
                writer: LogWriter::new(Box::new(NullFile)),
                number: 0,
                mem: placeholder.clone(),
                unlogged_seqs: 0,
                last_logged: 0,
                lab: LabLogState::default(),
            }),
            buffers: Mutex::new(Buffers {
                mem: placeholder,
                imm: VecDeque::new(),
            }),
            closed: Mutex::new(ClosedLogs::default()),
            closed_cv: Condvar::new(),
            // One memtable's two regions (index and data): an active memtable and a kept flushed
            // one use no more memory than an active and an immutable one.
            regions: Arc::new(RegionCache::new(2)),
            unlogged_writes: AtomicBool::new(false),
        }
    }

    /// A new, empty memtable for WAL `log_number`, reusing a flushed memtable's memory when
    /// one is kept.
    pub(super) fn new_memtable(&self, log_number: u64) -> Arc<MemTable> {
        Arc::new(MemTable::with_region_cache(
            log_number,
            self.write_buffer_size,
            &self.regions,
        ))
    }

    /// A new, empty persistent memtable numbered `number`, in the pool of `db`.
    pub(super) fn new_pm_memtable(&self, db: &DbInner, number: u64) -> Result<Buffer> {
        let pm = db.pm.as_ref().ok_or_else(|| {
            Error::InvalidArgument("a PM memtable design needs a PM pool".to_string())
        })?;
        let path = log_file_name(&db.dir, number);
        Ok(Buffer::Pm(Arc::new(PmTable::create(
            &pm.pmfs, &path, number,
        )?)))
    }

    /// Installs `mem` as the active memtable (recovery's first one).
    pub(super) fn set_active(&self, mem: Buffer) {
        self.buffers.lock().mem = mem;
    }

    /// Commits `group`'s batches as one: logged (one WAL record, synced with `sync`) or, for
    /// a group of unlogged writers (`unlogged`, never with `sync`), into the memtable only.
    fn commit_group(
        &self,
        db: &DbInner,
        group: &[Arc<Writer>],
        sync: bool,
        unlogged: bool,
    ) -> Result<()> {
        let mut batch = group[0].slot.lock().batch.take().expect("batch");
        for w in &group[1..] {
            batch.append(w.slot.lock().batch.as_ref().expect("batch"));
        }
        let mut wal = self.wal.lock();
        if unlogged {
            return self.commit_unlogged(db, &mut wal, &batch);
        }
        if self.pm_memtable {
            // The memtable's file room for every node of the group, taken up front so that no
            // link is made for a batch that cannot be completed.
            let room = batch.encoded_len() + PM_NODE_OVERHEAD * batch.len();
            self.make_room_for_write(db, &mut wal, false, room)?;
            if let Buffer::Pm(table) = &wal.mem {
                return self.commit_to_pm(db, table, &batch, sync);
            }
        }
        self.make_room_for_write(db, &mut wal, false, batch.encoded_len())?;
        if let Some(lab) = &self.lab {
            // Durable once in the PM WAL buffer: no closed log needs a sync first.
            let first_seq = db.last_sequence.load(Acquire) + 1;
            if let Err(e) = lab.append(db, &mut wal, &batch, first_seq, sync) {
                return Err(db.state.lock().poison("LAB-DB log write failed", e));
            }
            let Buffer::Dram(mem) = &wal.mem else {
                return Err(Error::InvalidArgument(
                    "LAB-DB's log with a PM memtable".into(),
                ));
            };
            if let Err(e) = insert_into(mem, &batch, first_seq) {
                return Err(db.state.lock().poison("memtable insert failed", e));
            }
            publish(db, first_seq, batch.len() as u64, batch.user_bytes());
            return Ok(());
        }
        if sync {
            // Everything acknowledged before a sync write must be durable when it is: the
            // closed WALs first, before this record is appended (a synced record is then never
            // found after a WAL torn by a power failure; see `recovery.rs`).
            if let Err(e) = self.sync_closed(db) {
                return Err(db.state.lock().poison("WAL sync failed", e));
            }
        }
        let first_seq = db.last_sequence.load(Acquire) + 1;
        let count = batch.len() as u64;
        let user_bytes = batch.user_bytes();
        let unlogged_before = wal.unlogged_seqs;
        let appended = batch
            .with_record(first_seq, sync, unlogged_before, |record| {
                wal.writer.add_record(record)
            })
            .and_then(|n| {
                db.counters
                    .add_written(self.wal_tier, Part::FrontEnd, IoPurpose::Wal, n);
                db.counters.wal_appends.fetch_add(1, Relaxed);
                if sync {
                    db.counters.wal_syncs.fetch_add(1, Relaxed);
                    wal.writer.sync()
                } else {
                    Ok(())
                }
            });
        if let Err(e) = appended {
            return Err(db.state.lock().poison("WAL write failed", e));
        }
        wal.unlogged_seqs = 0;
        wal.last_logged = first_seq + count - 1;
        let inserted = match &wal.mem {
            Buffer::Dram(mem) => insert_into(mem, &batch, first_seq),
            Buffer::Pm(table) => {
                insert_ops_pm(table, batch.iter_ops(), first_seq, sync).map(|_| ())
            }
        };
        if let Err(e) = inserted {
            // The batch is logged but only partly in the memtable, under sequence numbers that
            // were never published: refuse further writes (reopening replays the log).
            return Err(db.state.lock().poison("memtable insert failed", e));
        }
        publish(db, first_seq, count, user_bytes);
        Ok(())
    }

    /// Inserts the group's `batch` into the active memtable without logging it (an unlogged
    /// group): its sequence numbers are counted for the next record's trailer. It is durable
    /// once its memtable is flushed.
    fn commit_unlogged(&self, db: &DbInner, wal: &mut WalState, batch: &WriteBatch) -> Result<()> {
        self.make_room_for_write(db, wal, false, 0)?;
        self.unlogged_writes.store(true, Relaxed);
        let first_seq = db.last_sequence.load(Acquire) + 1;
        let count = batch.len() as u64;
        let Buffer::Dram(mem) = &wal.mem else {
            // Writers are marked unlogged only on a front end with a WAL.
            return Err(Error::InvalidArgument(
                "an unlogged write on a front end without a WAL".to_string(),
            ));
        };
        if let Err(e) = insert_into(mem, batch, first_seq) {
            // Only partly in the memtable, under sequence numbers never published.
            return Err(db.state.lock().poison("memtable insert failed", e));
        }
        wal.unlogged_seqs += count;
        publish(db, first_seq, count, batch.user_bytes());
        Ok(())
    }

    /// Links the group's `batch` into the active PM memtable and commits it (the PM memtable's
    /// write: no WAL). A failure after the first link poisons the database: the batch is
    /// neither committed nor published, and reopening unlinks what was linked of it.
    fn commit_to_pm(
        &self,
        db: &DbInner,
        table: &PmTable,
        batch: &WriteBatch,
        sync: bool,
    ) -> Result<()> {
        let first_seq = db.last_sequence.load(Acquire) + 1;
        let count = batch.len() as u64;
        let before = table.pm_bytes();
        let linked = insert_ops_pm(table, batch.iter_ops(), first_seq, sync)
            .and_then(|n| table.commit(first_seq + n - 1, sync));
        if let Err(e) = linked {
            return Err(db.state.lock().poison("PM memtable write failed", e));
        }
        db.counters.add_written(
            Tier::Pm,
            Part::FrontEnd,
            IoPurpose::Wal,
            table.pm_bytes() - before + 8,
        );
        if sync {
            db.counters.wal_syncs.fetch_add(1, Relaxed);
        }
        publish(db, first_seq, count, batch.user_bytes());
        Ok(())
    }

    /// Ensures the active memtable and WAL have room for a record of `record_len` bytes (0: an
    /// unlogged write, which appends nothing to the WAL), through the engine's admission loop
    /// ([`DbInner::admit_write`]): throttled or stopped while the stages hold writes back or
    /// the memtable backlog is too large, a full memtable (or one whose PM WAL reached its
    /// share of the pool) rotated. For a write (`!force`) the WAL's space for the record is
    /// taken here, so the append cannot run out of it half-way: if the PM pool has no room, the
    /// write waits for a flush to free a retired WAL, or fails with [`Error::NoSpace`] with
    /// nothing written when nothing can be freed. With `force`, rotates a non-empty memtable
    /// regardless of its size (used by `flush`).
    fn make_room_for_write(
        &self,
        db: &DbInner,
        wal: &mut WalState,
        force: bool,
        record_len: usize,
    ) -> Result<()> {
        let mut room = WalRoom {
            front: self,
            wal,
            force,
            writing: !force,
            record_len,
            retried: false,
        };
        db.admit_write(&mut room, !force)
    }

    /// Makes the active memtable immutable, `mem` the active one, and publishes the change.
    fn make_immutable(&self, state: &mut MutexGuard<'_, State>, db: &DbInner, mem: Buffer) {
        {
            let mut b = self.buffers.lock();
            let old = std::mem::replace(&mut b.mem, mem);
            b.imm.push_back(old);
        }
        state.install_super_version(self);
        db.bg_cv.notify_all();
    }

    /// Starts WAL `number` for a new memtable. The old WAL and the new WAL's directory entry
    /// are synced later, off the write path (RocksDB's closed-log sync): by the flush thread,
    /// or first thing by a sync write.
    fn rotate_wal(&self, db: &DbInner, wal: &mut WalState, number: u64) -> Result<()> {
        if let Buffer::Pm(old) = &wal.mem {
            // No WAL: the new memtable's file takes its place, and the old one, durable
            // node by node, needs no sync.
            let mem = self.new_pm_memtable(db, number)?;
            old.freeze();
            wal.number = number;
            wal.mem = mem;
            return Ok(());
        }
        let path = log_file_name(&db.dir, number);
        if let Some(lab) = &self.lab {
            // LAB-DB: the closed key and value arrays are synced now (the WAL buffer's halves
            // are deleted on the assumption that they are), and the new arrays' directory
            // entries before the first write relies on them.
            lab.close_memtable(wal)?;
            let file = db.fs_for(self.wal_tier).create_log(&path)?;
            wal.writer = LogWriter::new(file);
            lab.start_memtable(db, wal, number)?;
            db.fs_for(self.wal_tier).sync_dir(&db.dir)?;
            wal.number = number;
            wal.mem = Buffer::Dram(self.new_memtable(number));
            return Ok(());
        }
        let file = db.fs_for(self.wal_tier).create_log(&path)?;
        let mut writer = LogWriter::new(file);
        // The link to the WAL before, when it holds records: recovery tells an emptied or cut
        // older WAL from one that held nothing (`recovery.rs`, "WAL damage"). A WAL that held
        // none (only unlogged writes) needs none: nothing of it can be lost.
        if wal.last_logged > 0 {
            let link = WalLink {
                prev_number: wal.number,
                prev_last: wal.last_logged,
            };
            let n = writer.add_record(&link.encode())?;
            db.counters
                .add_written(self.wal_tier, Part::FrontEnd, IoPurpose::Wal, n);
        }
        let old = std::mem::replace(&mut wal.writer, writer);
        wal.last_logged = 0;
        {
            let mut closed = self.closed.lock();
            closed.pending.push(old);
            closed.dir_unsynced = true;
        }
        wal.number = number;
        wal.mem = Buffer::Dram(self.new_memtable(number));
        Ok(())
    }

    /// Syncs the closed WALs and the directory entry of the newest one, and waits for syncs
    /// other threads are running: when it returns Ok, everything written to WALs before the
    /// active one is durable.
    fn sync_closed(&self, db: &DbInner) -> Result<()> {
        let (logs, dir) = {
            let mut c = self.closed.lock();
            c.in_flight += 1;
            (
                std::mem::take(&mut c.pending),
                std::mem::take(&mut c.dir_unsynced),
            )
        };
        let mut result = Ok(());
        for mut log in logs {
            result = result.and_then(|()| log.sync());
        }
        if dir {
            result = result.and_then(|()| db.fs_for(self.wal_tier).sync_dir(&db.dir));
        }
        let mut c = self.closed.lock();
        c.in_flight -= 1;
        if let Err(e) = &result {
            c.failed.get_or_insert_with(|| e.to_string());
        }
        self.closed_cv.notify_all();
        while c.in_flight > 0 {
            self.closed_cv.wait(&mut c);
        }
        match (result, &c.failed) {
            (Err(e), _) => Err(e),
            (Ok(()), Some(first)) => Err(Error::Poisoned(format!(
                "an earlier sync of a closed WAL failed: {first}"
            ))),
            (Ok(()), None) => Ok(()),
        }
    }

    /// True if PM space for WALs will be freed without this writer doing anything: a memtable
    /// waits for its flush, or a flushed memtable's WAL is not deleted yet.
    fn wal_space_pending(&self, db: &DbInner) -> bool {
        self.pending_flushes() > 0
            || db
                .pm
                .as_ref()
                .is_some_and(|p| p.wal_chunk_cap > 0 && p.pmfs.log_file_count() > 1)
    }

    /// True if the WAL is on PM, its memtable holds data, and appending `record_len` bytes
    /// would take it past its share of the pool (`PmTier::wal_chunk_cap`).
    fn wal_share_exceeded(&self, db: &DbInner, wal: &WalState, record_len: usize) -> bool {
        let Some(pm) = db
            .pm
            .as_ref()
            .filter(|p| p.wal_chunk_cap > 0 && !self.pm_memtable)
        else {
            return false;
        };
        let bytes = wal.writer.size() + wal.writer.physical_len(record_len);
        !wal.mem.is_empty() && bytes.div_ceil(pm.pmfs.data_per_chunk()) > pm.wal_chunk_cap
    }
}

/// The active memtable and its WAL, as the admission loop sees them (see
/// [`WalMemtable::make_room_for_write`]).
struct WalRoom<'a> {
    front: &'a WalMemtable,
    wal: &'a mut WalState,
    /// Rotate a non-empty memtable whatever its size (a flush; set also when the pool has no
    /// room for the record until this memtable's WAL is retired).
    force: bool,
    /// A write waits to enter (not a flush's rotation alone).
    writing: bool,
    record_len: usize,
    /// Out of PM space with nothing pending to free any: retried once already.
    retried: bool,
}

impl AdmitBuffer for WalRoom<'_> {
    fn fill(&mut self, db: &DbInner) -> Option<Fill> {
        if self.force && self.wal.mem.is_empty() {
            return None;
        }
        let front = self.front;
        let full = self.force
            || self.wal.mem.fill_bytes() >= front.write_buffer_size as u64
            || front.wal_share_exceeded(db, self.wal, self.record_len);
        Some(Fill {
            full,
            // Read only when it matters: the write path of a buffer with room skips it.
            at_limit: full && front.pending_flushes() + 1 >= front.max_write_buffer_number,
        })
    }

    fn proceed(&mut self, db: &DbInner, state: &mut MutexGuard<'_, State>) -> Result<Step> {
        let record_len = self.record_len;
        if record_len == 0 {
            // An unlogged write: the memtable has room, and nothing goes to the WAL.
            return Ok(Step::Done);
        }
        let wal = &mut *self.wal;
        let reserved = MutexGuard::unlocked(state, || match &wal.mem {
            Buffer::Pm(t) => t.reserve(record_len as u64),
            Buffer::Dram(_) => wal.writer.reserve_record(record_len),
        });
        match reserved {
            Ok(()) => Ok(Step::Done),
            Err(Error::NoSpace(m)) => {
                // Nothing was appended. A flush will free a retired WAL; rotating a non-empty
                // memtable lets its WAL be retired. (A flush may also have finished since the
                // attempt: try once more before giving up.)
                if self.front.wal_space_pending(db) {
                    return Ok(Step::Wait(StallReason::PmPoolFull));
                }
                if self.wal.mem.is_empty() {
                    if std::mem::replace(&mut self.retried, true) {
                        return Err(Error::NoSpace(format!(
                            "{m}; the PM pool has no room for this write's WAL record of \
                             {record_len} bytes"
                        )));
                    }
                    return Ok(Step::Again);
                }
                self.force = true;
                Ok(Step::Again)
            }
            Err(e) => Err(state.poison("WAL space reservation failed", e)),
        }
    }

    /// Starts a new WAL, hands the old one to the background sync, and makes the memtable
    /// immutable. The file I/O runs without the state lock (readers and background threads go
    /// on); the `wal` lock the caller holds keeps every other writer out.
    fn rotate(&mut self, db: &DbInner, state: &mut MutexGuard<'_, State>) -> Result<Step> {
        let number = state.versions.new_file_number();
        let (front, wal) = (self.front, &mut *self.wal);
        let rotated = MutexGuard::unlocked(state, || front.rotate_wal(db, wal, number));
        match rotated {
            Ok(()) => {}
            // The pool has no chunk for the new WAL until a flush frees a retired one
            // (nothing changed: the old WAL stays active).
            Err(Error::NoSpace(_)) if front.wal_space_pending(db) => {
                return Ok(Step::Wait(StallReason::PmPoolFull));
            }
            // A WAL may have been freed since the attempt: try once more.
            Err(Error::NoSpace(_)) if !std::mem::replace(&mut self.retried, true) => {
                return Ok(Step::Again);
            }
            Err(e @ Error::NoSpace(_)) => return Err(e),
            Err(e) => return Err(state.poison("WAL rotation failed", e)),
        }
        front.make_immutable(state, db, self.wal.mem.clone());
        self.force = false;
        Ok(if self.writing {
            Step::Again
        } else {
            Step::Done
        })
    }
}

impl FrontEnd for WalMemtable {
    /// Its live logs, every record decoded as recovery reads them.
    fn write(&self, db: &DbInner, options: &WriteOptions, batch: WriteBatch) -> Result<()> {
        let me = Arc::new(Writer {
            sync: options.sync,
            // A PM memtable is its own log: there is nothing to skip.
            // LAB-DB's log takes every write (its values live in it).
            unlogged: options.disable_wal && !self.pm_memtable && self.lab.is_none(),
            slot: Mutex::new(WriterSlot {
                batch: Some(batch),
                result: None,
            }),
        });
        let mut queue = self.queue.lock();
        queue.push_back(Arc::clone(&me));
        loop {
            if let Some(r) = me.slot.lock().result.take() {
                return r;
            }
            if Arc::ptr_eq(queue.front().expect("queue holds me"), &me) {
                break;
            }
            self.queue_cv.wait(&mut queue);
        }
        // Leader: take a group of compatible writers from the front (alone: no group vector).
        let mut group: Vec<Arc<Writer>> = Vec::new();
        if queue.len() > 1 {
            let mut bytes = 0;
            for w in queue.iter() {
                let len = w.slot.lock().batch.as_ref().map_or(0, |b| b.encoded_len());
                if !group.is_empty()
                    && ((w.sync && !me.sync)
                        || w.unlogged != me.unlogged
                        || bytes + len > MAX_GROUP_BYTES)
                {
                    break;
                }
                bytes += len;
                group.push(Arc::clone(w));
            }
        }
        drop(queue);
        let group: &[Arc<Writer>] = if group.is_empty() {
            std::slice::from_ref(&me)
        } else {
            &group
        };
        // A leader that panics (a bug, or a file system that panics) must not leave the writers
        // it took waiting forever: the database is poisoned, every writer of its group gets
        // the error, the next leader finds the poison, and the panic goes on in this thread.
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.commit_group(db, group, me.sync, me.unlogged)
        }));
        let (result, panicked) = match ran {
            Ok(result) => (result, None),
            Err(payload) => {
                let e = Error::Poisoned("the write group's leader panicked".into());
                let _ = db.state.lock().poison("write", e.duplicate());
                db.bg_cv.notify_all();
                (Err(e), Some(payload))
            }
        };
        let mut queue = self.queue.lock();
        for w in group {
            let front = queue.pop_front().expect("group is at the front");
            debug_assert!(Arc::ptr_eq(&front, w));
            if !Arc::ptr_eq(w, &me) {
                w.slot.lock().result = Some(match &result {
                    Ok(()) => Ok(()),
                    Err(e) => Err(e.duplicate()),
                });
            }
        }
        self.queue_cv.notify_all();
        drop(queue);
        if let Some(payload) = panicked {
            std::panic::resume_unwind(payload);
        }
        result
    }

    fn view(&self) -> Arc<dyn FrontView> {
        let b = self.buffers.lock();
        Arc::new(MemtableView {
            mem: b.mem.clone(),
            imm: b.imm.iter().cloned().collect(),
        })
    }

    fn rotate(&self, db: &DbInner) -> Result<()> {
        let mut wal = self.wal.lock();
        self.make_room_for_write(db, &mut wal, true, 0)
    }

    fn next_flush(&self) -> Option<Arc<dyn FlushSource>> {
        let b = self.buffers.lock();
        b.imm.front().map(|m| {
            Arc::new(MemtableFlush {
                buffer: m.clone(),
                addrs: self.lab.as_ref().and_then(|l| l.addrs_of(m.number())),
            }) as Arc<dyn FlushSource>
        })
    }

    fn retire_flushed(&self, edit: &mut VersionEdit) {
        // WALs older than the next memtable's are no longer needed.
        let b = self.buffers.lock();
        edit.log_number = Some(b.imm.get(1).map_or(b.mem.number(), Buffer::number));
    }

    fn flushed(&self, dir: &Path) -> Vec<(Tier, PathBuf)> {
        let flushed = self.buffers.lock().imm.pop_front();
        if let (Some(lab), Some(m)) = (&self.lab, &flushed) {
            lab.flushed(m.number());
        }
        flushed
            .map(|m| (self.wal_tier, log_file_name(dir, m.number())))
            .into_iter()
            .collect()
    }

    fn pending_flushes(&self) -> usize {
        self.buffers.lock().imm.len()
    }

    fn verify(&self, dir: &Path, versions: &VersionSet, present: &Present) -> Result<()> {
        recovery::verify_oldest_wal(dir, versions, present)
    }

    fn is_obsolete(&self, kind: FileKind, number: u64, versions: &VersionSet) -> Option<bool> {
        match kind {
            FileKind::Log => Some(number < versions.log_number),
            FileKind::WalBuffer => self.lab.as_ref().map(|l| l.half_is_obsolete(number)),
            _ => None,
        }
    }

    fn kept_bytes(&self) -> u64 {
        self.regions.resident_bytes()
    }

    fn sync_closed_logs(&self, db: &DbInner) -> Result<()> {
        self.sync_closed(db)
    }

    fn holds_unlogged_writes(&self) -> bool {
        self.unlogged_writes.load(Relaxed)
    }

    #[cfg(test)]
    fn kept_regions(&self) -> usize {
        self.regions.len()
    }

    fn recover(&self, db: &DbInner, present: &Present) -> Result<()> {
        recovery::recover(self, db, present)
    }
}

/// Inserts every operation of `batch` into `mem`, numbering them from `first_seq`.
fn insert_into(mem: &MemTable, batch: &WriteBatch, first_seq: u64) -> Result<()> {
    insert_ops(mem, batch.iter_ops(), first_seq).map(|_| ())
}

/// Inserts decoded batch operations into `mem`, numbering them from `first_seq` (the write path
/// and WAL replay); returns how many were inserted.
pub(super) fn insert_ops<'a>(
    mem: &MemTable,
    ops: impl IntoIterator<Item = Result<BatchOp<'a>>>,
    first_seq: u64,
) -> Result<u64> {
    apply_ops(ops, first_seq, |seq, t, k, v| mem.add(seq, t, k, v))
}

/// Numbers decoded batch operations from `first_seq` and hands each to `add` as (sequence,
/// type, key, value); returns how many there were.
fn apply_ops<'a>(
    ops: impl IntoIterator<Item = Result<BatchOp<'a>>>,
    first_seq: u64,
    mut add: impl FnMut(u64, ValueType, &[u8], &[u8]) -> Result<()>,
) -> Result<u64> {
    let mut n = 0;
    for op in ops {
        let seq = first_seq + n;
        match op? {
            BatchOp::Put(k, v) => add(seq, ValueType::Value, k, v)?,
            BatchOp::Delete(k) => add(seq, ValueType::Deletion, k, &[])?,
        }
        n += 1;
    }
    Ok(n)
}

/// Bytes a PM memtable node takes besides its key and value (header and padding), at most.
pub(super) const PM_NODE_OVERHEAD: usize = 40;

/// Links decoded batch operations into the PM memtable `table`, numbering them from
/// `first_seq`; returns how many were linked (at least one: batches are never empty).
fn insert_ops_pm<'a>(
    table: &PmTable,
    ops: impl IntoIterator<Item = Result<BatchOp<'a>>>,
    first_seq: u64,
    sync: bool,
) -> Result<u64> {
    apply_ops(ops, first_seq, |seq, t, k, v| table.add(seq, t, k, v, sync))
}

/// A sink used only until recovery installs the real WAL (and, for a PM memtable, in its
/// place: nothing is appended to it).
pub(super) struct NullFile;

impl crate::fs::WritableFile for NullFile {
    fn append(&mut self, _: &[u8]) -> Result<()> {
        Err(Error::InvalidArgument("database is not open yet".into()))
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
    fn size(&self) -> u64 {
        0
    }
}

/// Makes the `count` writes from `first_seq` visible to readers and counts them as user writes
/// of `user_bytes`: the last step of every commit path.
fn publish(db: &DbInner, first_seq: u64, count: u64, user_bytes: u64) {
    db.last_sequence.store(first_seq + count - 1, Release);
    db.counters
        .user_bytes_written
        .fetch_add(user_bytes, Relaxed);
    db.counters.user_writes.fetch_add(count, Relaxed);
}
