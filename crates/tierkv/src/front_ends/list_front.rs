//! ListDB as a front end (Kim et al., "ListDB: Union of Write-Ahead Logs and Persistent
//! SkipLists for Incremental Checkpointing on Persistent Memory", OSDI 2022; the baseline of
//! FluidKV, Lu et al., PVLDB 17(6), 2024): index-unified logging into one shared PM log, a
//! DRAM memtable indexing the log entries, flushes that link the entries into L0 lists, and
//! zipper compactions into the L1 list, all in the `plist` heap.
//!
//! The whole of ListDB lives here, not in a stage: its log entries ARE the nodes of its lists,
//! so the part that owns the log owns the lists (a stage's runs are files the manifest names;
//! these lists are chains through one heap). The design's stage stays empty; the database's
//! flush thread drives the flushes through [`FlushSource::absorb`], and a zipper thread of the
//! front end's zips the L0 lists into L1 once `level0_compaction_trigger` of them wait.
//!
//! * **Writes.** One writer at a time appends its batch to the log (the shared log tail of
//!   ListDB, which FluidKV's thread-exclusive logs replace), inserts the entries' offsets into
//!   the active memtable and publishes its sequence numbers. A write is durable when
//!   [`ListHeap::append`] returns, so `sync` adds nothing and `disable_wal` is ignored (the log
//!   is the index).
//! * **Rotation.** A memtable of `write_buffer_size` bytes becomes immutable with its end (the
//!   log position after its entries) and waits for the flush thread.
//! * **Reads.** Memtables newest first (their values read from the log entries), then the
//!   heap's current L0 lists newest first, then L1 (see [`ListView`]); each answers with the
//!   first entry at or after the lookup key.
//! * **Write pressure.** The L0 lists delay each write once at `level0_slowdown_trigger` and
//!   stop writes at `level0_stop_trigger` (at most the heap's 32 slots), as L0 tables do.
//! * **Recovery.** The heap's open rebuilds the lists' DRAM levels; the log entries after the
//!   last published list are indexed again as the active memtable.

use crate::db::{AdmitBuffer, DbInner, Present, State, Step};
use crate::format::{lookup_key, pack_trailer, user_key, OrderedKey, ValueType};
use crate::iterator::InternalIterator;
use crate::memtable::LookupResult;
use crate::options::{Options, WriteOptions};
use crate::pipeline::{
    Fill, FlushSource, FrontEnd, FrontView, ShadowFilter, StageHost, WritePressure,
};
use crate::plist::{ListHeap, ListIter, ListSet, NewEntry, PList};
use crate::stats::{IoPurpose, Part};
use crate::tier::Tier;
use crate::version::{FileKind, VersionEdit, VersionSet};
use crate::write_batch::BatchOp;
use crate::{Error, Result, WriteBatch};
use crossbeam_skiplist::SkipMap;
use parking_lot::{Condvar, Mutex, MutexGuard};
use std::collections::VecDeque;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// DRAM a memtable entry takes besides its key (skiplist node, offset), roughly.
const ENTRY_OVERHEAD: u64 = 80;

/// An internal key ordered as the engine orders them.
type IKey = OrderedKey<Box<[u8]>>;

/// A DRAM memtable: internal key -> offset and size of its log entry.
struct Mem {
    index: SkipMap<IKey, (u64, u64)>,
    /// DRAM of its entries (keys and overhead) plus the PM bytes of their log entries: what
    /// the write buffer size bounds.
    bytes: AtomicU64,
    /// DRAM of its entries alone.
    dram: AtomicU64,
    /// The log position after its entries (set when it is made immutable).
    end: AtomicU64,
}

impl Mem {
    fn new() -> Self {
        Mem {
            index: SkipMap::new(),
            bytes: AtomicU64::new(0),
            dram: AtomicU64::new(0),
            end: AtomicU64::new(0),
        }
    }

    fn add(&self, ikey: Vec<u8>, at: u64, logged: u64) {
        let dram = ikey.len() as u64 + ENTRY_OVERHEAD;
        self.index
            .insert(OrderedKey(ikey.into_boxed_slice()), (at, logged));
        self.bytes.fetch_add(dram + logged, Relaxed);
        self.dram.fetch_add(dram, Relaxed);
    }

    fn get(&self, heap: &ListHeap, key: &[u8], snapshot: u64) -> Result<LookupResult> {
        let look = OrderedKey(lookup_key(key, snapshot).into_boxed_slice());
        match self.index.lower_bound(Bound::Included(&look)) {
            Some(e) if user_key(&e.key().0) == key => {
                found(&e.key().0, || heap.value_of(e.value().0))
            }
            _ => Ok(LookupResult::Absent),
        }
    }
}

/// The lookup result of the entry with internal key `ikey`, its value read by `value`.
fn found(ikey: &[u8], value: impl FnOnce() -> Result<Vec<u8>>) -> Result<LookupResult> {
    match crate::format::parse_internal_key(ikey).map(|p| p.value_type) {
        Some(ValueType::Value) => Ok(LookupResult::Found(value()?)),
        Some(ValueType::Deletion) => Ok(LookupResult::Deleted),
        None => Err(Error::corruption("ListDB heap", "an entry has a bad type")),
    }
}

/// An iterator over a memtable: each step copies the key out, reads the value from the log
/// entry, and finds the next entry by a search from the key.
struct MemIter {
    mem: Arc<Mem>,
    heap: Arc<ListHeap>,
    cur: Option<(Vec<u8>, Vec<u8>)>,
    status: Result<()>,
}

impl MemIter {
    fn set(&mut self, e: Option<(Vec<u8>, u64)>) {
        self.cur = None;
        if let Some((k, at)) = e {
            match self.heap.value_of(at) {
                Ok(v) => self.cur = Some((k, v)),
                Err(e) => {
                    if self.status.is_ok() {
                        self.status = Err(e);
                    }
                }
            }
        }
    }

    fn entry(
        e: Option<crossbeam_skiplist::map::Entry<'_, IKey, (u64, u64)>>,
    ) -> Option<(Vec<u8>, u64)> {
        e.map(|e| (e.key().0.to_vec(), e.value().0))
    }
}

impl InternalIterator for MemIter {
    fn valid(&self) -> bool {
        self.cur.is_some()
    }
    fn seek_to_first(&mut self) {
        let e = Self::entry(self.mem.index.front());
        self.set(e);
    }
    fn seek(&mut self, target: &[u8]) {
        let t = OrderedKey(target.to_vec().into_boxed_slice());
        let e = Self::entry(self.mem.index.lower_bound(Bound::Included(&t)));
        self.set(e);
    }
    fn next(&mut self) {
        let Some((k, _)) = self.cur.take() else {
            return;
        };
        let t = OrderedKey(k.into_boxed_slice());
        let e = Self::entry(self.mem.index.lower_bound(Bound::Excluded(&t)));
        self.set(e);
    }
    fn key(&self) -> &[u8] {
        &self.cur.as_ref().expect("valid").0
    }
    fn value(&self) -> &[u8] {
        &self.cur.as_ref().expect("valid").1
    }
    fn status(&self) -> Result<()> {
        match &self.status {
            Ok(()) => Ok(()),
            Err(e) => Err(e.duplicate()),
        }
    }
}

/// What readers see: memtables newest first, then the lists.
///
/// The lists are the heap's as they are when a read starts, not when the view was taken: a
/// zip moves entries from an L0 list into L1 without changing what the lists hold together,
/// and a list published since holds only entries a read started before it does not see (their
/// sequences are above its own), so any set the heap shows reads correctly; the current one is
/// the shortest to search (a zipped L0 list's chain runs on through L1).
struct ListView {
    heap: Option<Arc<ListHeap>>,
    mems: Vec<Arc<Mem>>,
}

/// The lists of `set` newest first: L0 (newest first), then L1.
fn newest_first(set: &ListSet) -> impl Iterator<Item = &Arc<PList>> + '_ {
    set.l0.iter().rev().chain(std::iter::once(&set.l1))
}

impl FrontView for ListView {
    fn get(&self, key: &[u8], snapshot: u64) -> Result<LookupResult> {
        let Some(heap) = &self.heap else {
            return Ok(LookupResult::Absent);
        };
        for m in &self.mems {
            match m.get(heap, key, snapshot)? {
                LookupResult::Absent => {}
                r => return Ok(r),
            }
        }
        let look = lookup_key(key, snapshot);
        let set = heap.lists();
        for list in newest_first(&set) {
            if let Some((_, ikey, value)) = heap.seek(list, &look)? {
                if user_key(&ikey) == key {
                    return found(&ikey, || Ok(value));
                }
            }
        }
        Ok(LookupResult::Absent)
    }

    fn iterators(&self, out: &mut Vec<Box<dyn InternalIterator>>) {
        let Some(heap) = &self.heap else { return };
        for m in &self.mems {
            out.push(Box::new(MemIter {
                mem: Arc::clone(m),
                heap: Arc::clone(heap),
                cur: None,
                status: Ok(()),
            }));
        }
        let set = heap.lists();
        for list in newest_first(&set) {
            out.push(Box::new(ListIter::new(Arc::clone(heap), Arc::clone(list))));
        }
    }

    fn dram_bytes(&self) -> (u64, u64) {
        // The memtables' DRAM: their keys and nodes (their log entries are in PM).
        (self.mems.iter().map(|m| m.dram.load(Relaxed)).sum(), 0)
    }
}

/// An immutable memtable to flush: it links itself into an L0 list.
struct MemFlush {
    mem: Arc<Mem>,
    heap: Arc<ListHeap>,
    zipper: Arc<Zipper>,
}

impl FlushSource for MemFlush {
    fn iter(&self) -> Box<dyn InternalIterator> {
        Box::new(MemIter {
            mem: Arc::clone(&self.mem),
            heap: Arc::clone(&self.heap),
            cur: None,
            status: Ok(()),
        })
    }

    fn is_empty(&self) -> bool {
        self.mem.index.is_empty()
    }

    fn absorb(&self, host: &dyn StageHost) -> Result<bool> {
        let started = Instant::now();
        // The versions no reader can see stay out of the list, as a flush into a run leaves
        // them out (`db::flush`): a newer version of the key is visible to every snapshot.
        let mut filter = ShadowFilter::new(host.smallest_snapshot());
        let mut nodes: Vec<(Vec<u8>, u64)> = Vec::with_capacity(self.mem.index.len());
        let mut dropped = 0u64;
        let mut bytes = 0u64;
        for e in self.mem.index.iter() {
            let ikey = &e.key().0;
            if filter.shadowed(ikey)? {
                dropped += 1;
            } else {
                nodes.push((ikey.to_vec(), e.value().0));
                bytes += e.value().1;
            }
        }
        host.counters()
            .flush_dropped_versions
            .fetch_add(dropped, Relaxed);
        self.zipper.wait_for_slot()?;
        self.heap
            .publish_l0(&nodes, self.mem.end.load(Acquire), bytes)?;
        host.counters().add_written(
            Tier::Pm,
            Part::Stage(0),
            IoPurpose::Flush,
            8 * nodes.len() as u64,
        );
        host.counters().add_flush(
            0,
            Tier::Pm,
            8 * nodes.len() as u64,
            u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
        );
        self.zipper.wake();
        Ok(true)
    }
}

/// The zipper thread's shared state: it zips every L0 list into L1 once `trigger` of them
/// wait, while the flush thread goes on linking memtables into new L0 lists.
struct Zipper {
    heap: Arc<ListHeap>,
    counters: Arc<crate::stats::Counters>,
    trigger: usize,
    state: Mutex<ZipState>,
    cv: Condvar,
}

#[derive(Default)]
struct ZipState {
    stop: bool,
    busy: bool,
    /// A zip that failed (or panicked): the next flush reports it, which poisons the database.
    error: Option<Error>,
}

impl Zipper {
    fn wake(&self) {
        let _st = self.state.lock();
        self.cv.notify_all();
    }

    /// True while a zip runs or is due.
    fn busy(&self) -> bool {
        let st = self.state.lock();
        st.error.is_none() && (st.busy || self.heap.lists().l0.len() >= self.trigger)
    }

    /// Waits until an L0 slot is free (the flush thread, before publishing a list).
    fn wait_for_slot(&self) -> Result<()> {
        let mut st = self.state.lock();
        loop {
            if let Some(e) = &st.error {
                return Err(e.duplicate());
            }
            if self.heap.lists().l0.len() < crate::plist::L0_SLOTS {
                return Ok(());
            }
            self.cv.notify_all();
            self.cv.wait_for(&mut st, Duration::from_millis(100));
        }
    }

    fn run(&self) {
        loop {
            {
                let mut st = self.state.lock();
                loop {
                    if st.stop {
                        return;
                    }
                    if st.error.is_none() && self.heap.lists().l0.len() >= self.trigger {
                        break;
                    }
                    self.cv.wait(&mut st);
                }
                st.busy = true;
            }
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.zip_once()))
                .unwrap_or_else(|_| Err(Error::Poisoned("the zipper thread panicked".into())));
            let mut st = self.state.lock();
            st.busy = false;
            if let Err(e) = r {
                st.error = Some(e);
            }
            self.cv.notify_all();
        }
    }

    /// Waits (up to 100 ms) for the L0 lists to be fewer than `n`; the zipper's error if it
    /// failed.
    fn wait_below(&self, n: usize) -> Result<()> {
        let mut st = self.state.lock();
        if let Some(e) = &st.error {
            return Err(e.duplicate());
        }
        if self.heap.lists().l0.len() >= n {
            self.cv.wait_for(&mut st, Duration::from_millis(100));
        }
        Ok(())
    }

    /// Zips every L0 list there is now into L1, oldest first, waking waiters after each.
    /// Each zip is one compaction of stage 0 into its second group: it reads the list (and
    /// L1's keys on the way) and writes next words only.
    fn zip_once(&self) -> Result<()> {
        let c = &self.counters;
        let due = self.heap.lists().l0.len();
        for _ in 0..due {
            let Some(z) = self.heap.zip_oldest()? else {
                break;
            };
            self.wake();
            c.compactions.fetch_add(1, Relaxed);
            c.add_written(Tier::Pm, Part::Stage(0), IoPurpose::Compaction, z.spliced);
            c.jobs.lock().push(crate::stats::CompactionJob {
                stage: 0,
                from_group: 0,
                to_group: 1,
                reason: "Zipper".to_string(),
                trivial_move: false,
                input_runs: 2,
                input_bytes: z.bytes,
                output_bytes: z.spliced,
                micros: z.micros,
                end_micros: 0,
            });
            c.add_compaction(&crate::stats::LevelCompactionStats {
                stage: 0,
                group: 1,
                compactions: 1,
                micros: z.micros,
                read_input_bytes: z.bytes,
                written_bytes: z.spliced,
                read_input_runs: 1,
                read_output_runs: 1,
                input_entries: z.entries,
                ..Default::default()
            });
        }
        Ok(())
    }
}

struct Mems {
    active: Arc<Mem>,
    /// Oldest first.
    imm: VecDeque<Arc<Mem>>,
}

/// The ListDB front end (module doc).
pub(crate) struct ListFront {
    write_buffer_size: u64,
    max_write_buffer_number: usize,
    zip_trigger: usize,
    /// L0 lists at which each write is delayed once, and at which writes wait.
    slowdown_lists: usize,
    stop_lists: usize,
    heap: OnceLock<Arc<ListHeap>>,
    zipper: OnceLock<Arc<Zipper>>,
    zipper_thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// The shared log: one appender at a time, from the sequence numbers to their publication.
    log: Mutex<()>,
    mems: Mutex<Mems>,
}

impl ListFront {
    pub(crate) fn new(options: &Options) -> Self {
        ListFront {
            write_buffer_size: options.write_buffer_size as u64,
            max_write_buffer_number: options.max_write_buffer_number,
            zip_trigger: options
                .compaction
                .level0_compaction_trigger
                .clamp(1, crate::plist::L0_SLOTS - 1),
            slowdown_lists: options.compaction.level0_slowdown_trigger.max(1),
            stop_lists: options
                .compaction
                .level0_stop_trigger
                .clamp(1, crate::plist::L0_SLOTS),
            heap: OnceLock::new(),
            zipper: OnceLock::new(),
            zipper_thread: Mutex::new(None),
            log: Mutex::new(()),
            mems: Mutex::new(Mems {
                active: Arc::new(Mem::new()),
                imm: VecDeque::new(),
            }),
        }
    }

    fn heap(&self) -> Result<&Arc<ListHeap>> {
        self.heap
            .get()
            .ok_or_else(|| Error::InvalidArgument("the ListDB heap is not open".into()))
    }

    /// Admits a write through the engine's admission loop ([`DbInner::admit_write`], with the
    /// L0 lists' own pressure): throttled on the number of L0 lists and immutable memtables, a
    /// full active one rotated.
    fn make_room(&self, db: &DbInner) -> Result<()> {
        db.admit_write(&mut MemRoom { front: self }, true)
    }

    /// Makes the active memtable immutable if it holds anything (and, with `only_full`, is
    /// full: another writer may have rotated it meanwhile).
    fn rotate_active(&self, db: &DbInner, only_full: bool) -> Result<()> {
        let _log = self.log.lock();
        let end = match self.heap.get() {
            Some(h) => h.tail_position(),
            None => return Ok(()),
        };
        let mut state = db.state.lock();
        if let Some(e) = &state.bg_error {
            return Err(e.duplicate());
        }
        {
            let mut m = self.mems.lock();
            let a = &m.active;
            if a.index.is_empty() || (only_full && a.bytes.load(Relaxed) < self.write_buffer_size) {
                return Ok(());
            }
            a.end.store(end, Release);
            let old = std::mem::replace(&mut m.active, Arc::new(Mem::new()));
            m.imm.push_back(old);
        }
        state.install_super_version(self);
        db.bg_cv.notify_all();
        Ok(())
    }
}

impl Drop for ListFront {
    fn drop(&mut self) {
        if let Some(z) = self.zipper.get() {
            z.state.lock().stop = true;
            z.cv.notify_all();
        }
        if let Some(t) = self.zipper_thread.lock().take() {
            let _ = t.join();
        }
    }
}

/// The active memtable and the L0 lists, as the admission loop sees them.
struct MemRoom<'a> {
    front: &'a ListFront,
}

impl AdmitBuffer for MemRoom<'_> {
    fn fill(&mut self, _db: &DbInner) -> Option<Fill> {
        let front = self.front;
        let m = front.mems.lock();
        Some(Fill {
            full: m.active.bytes.load(Relaxed) >= front.write_buffer_size,
            at_limit: m.imm.len() + 1 >= front.max_write_buffer_number,
        })
    }

    /// The L0 lists hold writes back as L0 tables do (the engine's triggers; the stop at most
    /// the heap's slots): every list is one more search for each get.
    fn own_pressure(&self) -> WritePressure {
        let front = self.front;
        let lists = front.heap.get().map_or(0, |h| h.lists().l0.len());
        if lists >= front.stop_lists {
            WritePressure::Stop
        } else if lists >= front.slowdown_lists {
            WritePressure::Slowdown
        } else {
            WritePressure::None
        }
    }

    fn wait_own(&mut self, db: &DbInner) -> Result<()> {
        if let Some(z) = self.front.zipper.get() {
            if let Err(e) = z.wait_below(self.front.stop_lists) {
                return Err(db.state.lock().poison("zipper compaction failed", e));
            }
        }
        Ok(())
    }

    /// Rotates, and lets the write in (the new memtable is empty).
    fn rotate(&mut self, db: &DbInner, state: &mut MutexGuard<'_, State>) -> Result<Step> {
        let front = self.front;
        MutexGuard::unlocked(state, || front.rotate_active(db, true))?;
        Ok(Step::Done)
    }
}

impl FrontEnd for ListFront {
    fn write(&self, db: &DbInner, _options: &WriteOptions, batch: WriteBatch) -> Result<()> {
        self.make_room(db)?;
        let heap = Arc::clone(self.heap()?);
        let count = batch.len() as u64;
        let user_bytes = batch.user_bytes();
        let _log = self.log.lock();
        let first = db.last_sequence.load(Acquire) + 1;
        let mut ops = Vec::with_capacity(batch.len());
        for op in batch.iter_ops() {
            ops.push(op?);
        }
        let entries: Vec<NewEntry<'_>> = ops
            .iter()
            .zip(first..)
            .map(|(op, seq)| match op {
                BatchOp::Put(k, v) => NewEntry {
                    seq,
                    kind: ValueType::Value as u8,
                    key: k,
                    value: v,
                },
                BatchOp::Delete(k) => NewEntry {
                    seq,
                    kind: ValueType::Deletion as u8,
                    key: k,
                    value: &[],
                },
            })
            .collect();
        let ats = match heap.append(&entries) {
            Ok(ats) => ats,
            // Nothing was logged: the write fails, the database stays usable.
            Err(e @ (Error::NoSpace(_) | Error::InvalidArgument(_))) => return Err(e),
            Err(e) => return Err(db.state.lock().poison("log append failed", e)),
        };
        let mem = Arc::clone(&self.mems.lock().active);
        let mut logged = 0;
        for (e, at) in entries.iter().zip(ats) {
            let bytes = crate::plist::node_bytes(e.key.len(), e.value.len());
            logged += bytes;
            let trailer = pack_trailer(e.seq, ValueType::from_u8(e.kind).expect("written"));
            let mut ikey = Vec::with_capacity(e.key.len() + 8);
            ikey.extend_from_slice(e.key);
            ikey.extend_from_slice(&trailer.to_le_bytes());
            mem.add(ikey, at, bytes);
        }
        db.last_sequence.store(first + count - 1, Release);
        drop(_log);
        db.counters
            .add_written(Tier::Pm, Part::FrontEnd, IoPurpose::Wal, logged);
        db.counters.wal_appends.fetch_add(1, Relaxed);
        db.counters
            .user_bytes_written
            .fetch_add(user_bytes, Relaxed);
        db.counters.user_writes.fetch_add(count, Relaxed);
        Ok(())
    }

    fn view(&self) -> Arc<dyn FrontView> {
        let m = self.mems.lock();
        let mems = std::iter::once(&m.active)
            .chain(m.imm.iter().rev())
            .cloned()
            .collect();
        let heap = self.heap.get().cloned();
        Arc::new(ListView { heap, mems })
    }

    fn rotate(&self, db: &DbInner) -> Result<()> {
        self.rotate_active(db, false)
    }

    fn next_flush(&self) -> Option<Arc<dyn FlushSource>> {
        let heap = Arc::clone(self.heap.get()?);
        let zipper = Arc::clone(self.zipper.get()?);
        let m = self.mems.lock();
        m.imm.front().map(|mem| {
            Arc::new(MemFlush {
                mem: Arc::clone(mem),
                heap,
                zipper,
            }) as Arc<dyn FlushSource>
        })
    }

    fn retire_flushed(&self, _edit: &mut VersionEdit) {}

    fn flushed(&self, _dir: &Path) -> Vec<(Tier, PathBuf)> {
        self.mems.lock().imm.pop_front();
        Vec::new()
    }

    fn pending_flushes(&self) -> usize {
        self.mems.lock().imm.len()
    }

    fn verify(&self, _dir: &Path, _versions: &VersionSet, _present: &Present) -> Result<()> {
        // No files: the heap checks itself when the pool is opened.
        Ok(())
    }

    /// The heap: every list walked in order, every node's checksums, every log entry still to
    /// replay.
    fn check(
        &self,
        cx: &crate::pipeline::CheckContext<'_>,
        report: &mut crate::pipeline::CheckReport,
    ) -> Result<()> {
        let Some((heap, log)) = cx.pm.and_then(|p| p.lists.lock().take()) else {
            return Ok(());
        };
        report.tables_checked += 1 + heap.lists().l0.len();
        report.entries_checked += heap.verify()?;
        for at in &log {
            heap.entry_of(*at)?;
        }
        report.wal_records_checked += log.len() as u64;
        Ok(())
    }

    fn is_obsolete(&self, kind: FileKind, _number: u64, _versions: &VersionSet) -> Option<bool> {
        // A log file is never ListDB's: one left by another front end is obsolete.
        (kind == FileKind::Log).then_some(true)
    }

    fn kept_bytes(&self) -> u64 {
        0
    }

    /// The heap's figures; its L0 lists then L1 stand in for the (empty) stage's groups.
    fn add_stats(&self, s: &mut crate::stats::DbStats) {
        s.listdb = self.heap.get().map(|h| h.stats());
        if let (Some(l), Some(stage)) = (&s.listdb, s.stages.first_mut()) {
            let groups = vec![
                crate::stats::LevelStats {
                    files: l.l0_lists,
                    bytes: l.l0_bytes,
                },
                crate::stats::LevelStats {
                    files: usize::from(l.l1_entries > 0),
                    bytes: l.l1_bytes,
                },
            ];
            stage.name = "lists".to_string();
            stage.pm_groups = groups.clone();
            stage.groups = groups;
        }
    }

    fn background_busy(&self) -> bool {
        self.zipper.get().is_some_and(|z| z.busy())
    }

    fn recover(&self, db: &DbInner, _present: &Present) -> Result<()> {
        let pm = db
            .pm
            .as_ref()
            .ok_or_else(|| Error::InvalidArgument("ListDB needs its PM pool".into()))?;
        let (heap, log) = pm
            .lists
            .lock()
            .take()
            .ok_or_else(|| Error::InvalidArgument("the ListDB heap was not opened".into()))?;
        let mem = Mem::new();
        for at in log {
            let (ikey, value) = heap.entry_of(at)?;
            let bytes = crate::plist::node_bytes(ikey.len() - 8, value.len());
            mem.add(ikey, at, bytes);
        }
        let mut state = db.state.lock();
        let last = state.versions.last_sequence.max(heap.max_seq_at_open());
        state.versions.last_sequence = last;
        let zipper = Arc::new(Zipper {
            heap: Arc::clone(&heap),
            counters: Arc::clone(&db.counters),
            trigger: self.zip_trigger,
            state: Mutex::new(ZipState::default()),
            cv: Condvar::new(),
        });
        let z = Arc::clone(&zipper);
        let thread = std::thread::Builder::new()
            .name("tierkv-zipper".into())
            .spawn(move || z.run())
            .map_err(|e| Error::io("spawn the zipper thread", "tierkv-zipper", e))?;
        *self.zipper_thread.lock() = Some(thread);
        let _ = self.zipper.set(zipper);
        let _ = self.heap.set(heap);
        self.mems.lock().active = Arc::new(mem);
        state.install_super_version(self);
        db.last_sequence.store(last, Release);
        Ok(())
    }
}
