//! The write path: a queue of writers in which the front writer (the leader) commits a group of
//! batches with one WAL append, as LevelDB's write queue does.
//!
//! Steps of the leader, holding the `wal` lock: make room (throttle on L0 and memtable
//! backlog, rotate a full memtable to a new WAL), assign sequence numbers, append one WAL
//! record (and sync if any writer of the group asked), insert into the memtable, publish the
//! last sequence. A failed WAL append or sync poisons the database: the memtable is not updated
//! and every later write fails with [`Error::Poisoned`].

use super::{DbInner, WalState};
use crate::format::ValueType;
use crate::log::LogWriter;
use crate::memtable::MemTable;
use crate::options::WriteOptions;
use crate::stats::{IoPurpose, Part};
use crate::version::log_file_name;
use crate::write_batch::BatchOp;
use crate::{Error, Result, WriteBatch};
use parking_lot::Mutex;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Bytes a group may grow to (LevelDB's limit).
pub(crate) const MAX_GROUP_BYTES: usize = 1 << 20;

/// One waiting writer.
pub(crate) struct Writer {
    sync: bool,
    slot: Mutex<WriterSlot>,
}

struct WriterSlot {
    batch: Option<WriteBatch>,
    result: Option<Result<()>>,
}

impl DbInner {
    pub(crate) fn write(&self, options: &WriteOptions, batch: WriteBatch) -> Result<()> {
        batch.validate(self.options.max_key_size, self.options.max_value_size)?;
        if batch.is_empty() {
            return Ok(());
        }
        let me = Arc::new(Writer {
            sync: options.sync,
            slot: Mutex::new(WriterSlot {
                batch: Some(batch),
                result: None,
            }),
        });
        let mut queue = self.write_queue.lock();
        queue.push_back(Arc::clone(&me));
        loop {
            if let Some(r) = me.slot.lock().result.take() {
                return r;
            }
            if Arc::ptr_eq(queue.front().expect("queue holds me"), &me) {
                break;
            }
            self.write_cv.wait(&mut queue);
        }
        // Leader: take a group of compatible writers from the front (alone: no group vector).
        let mut group: Vec<Arc<Writer>> = Vec::new();
        if queue.len() > 1 {
            let mut bytes = 0;
            for w in queue.iter() {
                let len = w.slot.lock().batch.as_ref().map_or(0, |b| b.encoded_len());
                if !group.is_empty() && ((w.sync && !me.sync) || bytes + len > MAX_GROUP_BYTES) {
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
        let result = self.commit_group(group, me.sync);
        let mut queue = self.write_queue.lock();
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
        self.write_cv.notify_all();
        drop(queue);
        result
    }

    fn commit_group(&self, group: &[Arc<Writer>], sync: bool) -> Result<()> {
        let mut batch = group[0].slot.lock().batch.take().expect("batch");
        for w in &group[1..] {
            batch.append(w.slot.lock().batch.as_ref().expect("batch"));
        }
        let mut wal = self.wal.lock();
        self.make_room_for_write(&mut wal, false, batch.encoded_len())?;
        let first_seq = self.last_sequence.load(Acquire) + 1;
        let count = batch.len() as u64;
        let user_bytes = batch.user_bytes();
        let record = batch.encode(first_seq);
        let appended = wal.writer.add_record(record).and_then(|n| {
            self.counters
                .add_written(self.wal_tier, Part::FrontEnd, IoPurpose::Wal, n);
            self.counters.wal_appends.fetch_add(1, Relaxed);
            if sync {
                self.counters.wal_syncs.fetch_add(1, Relaxed);
                wal.writer.sync()
            } else {
                Ok(())
            }
        });
        if let Err(e) = appended {
            return Err(self.state.lock().poison("WAL write failed", e));
        }
        if let Err(e) = insert_into(&wal.mem, &batch, first_seq) {
            // The batch is logged but only partly in the memtable, under sequence numbers that
            // were never published: refuse further writes (reopening replays the log).
            return Err(self.state.lock().poison("memtable insert failed", e));
        }
        self.last_sequence.store(first_seq + count - 1, Release);
        self.counters
            .user_bytes_written
            .fetch_add(user_bytes, Relaxed);
        self.counters.user_writes.fetch_add(count, Relaxed);
        Ok(())
    }

    /// Ensures the active memtable and WAL have room for a record of `record_len` bytes,
    /// throttling or stopping while L0 or the memtable backlog is too large, and rotating a full
    /// memtable (or one whose PM WAL reached its share of the pool). For a write (`!force`) the
    /// WAL's space for the record is taken here, so the append cannot run out of it half-way: if
    /// the PM pool has no room, the write waits for a flush to free a retired WAL, or fails with
    /// [`Error::NoSpace`] with nothing written when nothing can be freed. With `force`, rotates
    /// a non-empty memtable regardless of its size (used by `flush`).
    pub(crate) fn make_room_for_write(
        &self,
        wal: &mut WalState,
        mut force: bool,
        record_len: usize,
    ) -> Result<()> {
        let c = &self.options.compaction;
        let writing = !force;
        let mut allow_delay = !force;
        let mut stalled = false;
        // Out of PM space with nothing pending to free any: retried once already.
        let mut retried = false;
        let mut state = self.state.lock();
        loop {
            if let Some(e) = &state.bg_error {
                return Err(e.duplicate());
            }
            let l0 = state.super_version.version.levels[0].len();
            if allow_delay && l0 >= c.level0_slowdown_trigger {
                // Delay this write by 1 ms rather than stopping later for seconds.
                drop(state);
                let t = Instant::now();
                std::thread::sleep(Duration::from_millis(1));
                self.add_stall(t, false, &mut stalled);
                allow_delay = false;
                state = self.state.lock();
                continue;
            }
            let full = wal.mem.approximate_bytes() >= self.options.write_buffer_size as u64
                || self.wal_share_exceeded(wal, record_len);
            if !force && !full {
                drop(state);
                let reserved = wal.writer.reserve_record(record_len);
                state = self.state.lock();
                match reserved {
                    Ok(()) => return Ok(()),
                    Err(Error::NoSpace(m)) => {
                        // Nothing was appended. A flush will free a retired WAL; rotating a
                        // non-empty memtable lets its WAL be retired. (A flush may also have
                        // finished since the attempt: try once more before giving up.)
                        if self.wal_space_pending(&state) {
                            self.wait_for_background(&mut state, &mut stalled);
                            continue;
                        }
                        if wal.mem.is_empty() {
                            if std::mem::replace(&mut retried, true) {
                                return Err(Error::NoSpace(format!(
                                    "{m}; the PM pool has no room for this write's WAL record \
                                     of {record_len} bytes"
                                )));
                            }
                            continue;
                        }
                        force = true;
                        continue;
                    }
                    Err(e) => return Err(state.poison("WAL space reservation failed", e)),
                }
            }
            if force && wal.mem.is_empty() {
                return Ok(());
            }
            if state.imm.len() + 1 >= self.options.max_write_buffer_number
                || l0 >= c.level0_stop_trigger
            {
                self.wait_for_background(&mut state, &mut stalled);
                continue;
            }
            // Rotate: sync the old WAL (so no later WAL can hold synced data while an earlier
            // one lost unsynced data), start a new WAL, make the memtable immutable.
            // The file I/O runs without the state lock (readers and background threads go on);
            // the `wal` lock this leader holds keeps every other writer out.
            let number = state.versions.new_file_number();
            drop(state);
            let rotated = self.rotate_wal(wal, number);
            state = self.state.lock();
            match rotated {
                Ok(()) => {}
                // The pool has no chunk for the new WAL until a flush frees a retired one
                // (nothing changed: the old WAL stays active).
                Err(Error::NoSpace(_)) if self.wal_space_pending(&state) => {
                    self.wait_for_background(&mut state, &mut stalled);
                    continue;
                }
                // A WAL may have been freed since the attempt: try once more.
                Err(Error::NoSpace(_)) if !std::mem::replace(&mut retried, true) => continue,
                Err(e @ Error::NoSpace(_)) => return Err(e),
                Err(e) => return Err(state.poison("WAL rotation failed", e)),
            }
            let old = std::mem::replace(&mut state.mem, Arc::clone(&wal.mem));
            state.imm.push_back(old);
            state.install_super_version();
            self.bg_cv.notify_all();
            force = false;
            if !writing {
                return Ok(());
            }
        }
    }

    /// True if PM space for WALs will be freed without this writer doing anything: a memtable
    /// waits for its flush, or a flushed memtable's WAL is not deleted yet.
    fn wal_space_pending(&self, state: &super::State) -> bool {
        !state.imm.is_empty()
            || self
                .pm
                .as_ref()
                .is_some_and(|p| p.wal_chunk_cap > 0 && p.pmfs.log_file_count() > 1)
    }

    /// Waits (up to 100 ms) for background work to finish something, counted as a stop stall.
    fn wait_for_background(
        &self,
        state: &mut parking_lot::MutexGuard<'_, super::State>,
        stalled: &mut bool,
    ) {
        let t = Instant::now();
        self.bg_cv.notify_all();
        self.bg_cv.wait_for(state, Duration::from_millis(100));
        self.add_stall(t, true, stalled);
    }

    /// True if the WAL is on PM, its memtable holds data, and appending `record_len` bytes
    /// would take it past its share of the pool (`PmTier::wal_chunk_cap`).
    fn wal_share_exceeded(&self, wal: &WalState, record_len: usize) -> bool {
        let Some(pm) = self.pm.as_ref().filter(|p| p.wal_chunk_cap > 0) else {
            return false;
        };
        let bytes = wal.writer.size() + wal.writer.physical_len(record_len);
        !wal.mem.is_empty() && bytes.div_ceil(pm.pmfs.data_per_chunk()) > pm.wal_chunk_cap
    }

    /// A new, empty memtable for WAL `log_number`, reusing a flushed memtable's memory when
    /// one is kept.
    pub(crate) fn new_memtable(&self, log_number: u64) -> Arc<MemTable> {
        Arc::new(MemTable::with_region_cache(
            log_number,
            self.options.write_buffer_size,
            &self.memtable_regions,
        ))
    }

    fn rotate_wal(&self, wal: &mut WalState, number: u64) -> Result<()> {
        wal.writer.sync()?;
        let path = log_file_name(&self.dir, number);
        let fs = self.fs_for(self.wal_tier);
        let file = fs.create_log(&path)?;
        fs.sync_dir(&self.dir)?;
        wal.writer = LogWriter::new(file);
        wal.number = number;
        wal.mem = self.new_memtable(number);
        Ok(())
    }

    /// Counts the time since `since` as slowdown or stop stall; counts the write group once
    /// (`stalled` remembers whether this group was counted already).
    fn add_stall(&self, since: Instant, stop: bool, stalled: &mut bool) {
        let us = since.elapsed().as_micros() as u64;
        let c = &self.counters;
        if stop {
            c.stall_stop_micros.fetch_add(us, Relaxed);
        } else {
            c.stall_slowdown_micros.fetch_add(us, Relaxed);
        }
        if !*stalled {
            *stalled = true;
            c.stall_count.fetch_add(1, Relaxed);
        }
    }
}

/// Inserts every operation of `batch` into `mem`, numbering them from `first_seq`.
pub(crate) fn insert_into(mem: &MemTable, batch: &WriteBatch, first_seq: u64) -> Result<()> {
    insert_ops(mem, batch.iter_ops(), first_seq).map(|_| ())
}

/// Inserts decoded batch operations into `mem`, numbering them from `first_seq` (the write path
/// and WAL replay); returns how many were inserted.
pub(crate) fn insert_ops<'a>(
    mem: &MemTable,
    ops: impl IntoIterator<Item = Result<BatchOp<'a>>>,
    first_seq: u64,
) -> Result<u64> {
    let mut n = 0;
    for op in ops {
        let seq = first_seq + n;
        match op? {
            BatchOp::Put(k, v) => mem.add(seq, ValueType::Value, k, v)?,
            BatchOp::Delete(k) => mem.add(seq, ValueType::Deletion, k, &[])?,
        }
        n += 1;
    }
    Ok(n)
}
