//! LAB-DB's log (Kim et al., "An LSM Tree Augmented with B+ Tree on Nonvolatile Memory", ACM
//! TOS 2024, sections 3.2 and 3.4): a write is durable once its record is persisted in a small
//! **WAL buffer in PM**; the SSD log behind it is split into a **key array** (the memtable's
//! `NNNNNN.log`: one key-only record per write group, for replay) and a **value array** (the
//! memtable's `NNNNNN.vla`: one value record per operation). The value array is where the values
//! stay: the memtable remembers each version's address, and a flush inserts those addresses into
//! LAB-DB's L0 tree instead of writing the values again (key-value separation).
//!
//! The write leader (holding the front end's `wal` lock), per group: appends each operation's
//! value record to the value array (buffered, not synced), appends the group's record with its
//! values inline to the active half of the WAL buffer and persists it (the durability point:
//! a synced write needs nothing more), appends the key-only record to the key array (buffered),
//! and records the value addresses for the memtable ([`crate::labdb::vaddr::LabAddrs`]).
//!
//! **Draining.** The buffer is two halves (`NNNNNN.wbuf` record logs in the pool's `PmFs`, each
//! `labdb.wal_buffer_bytes / 2`). When the active half fills, the leader syncs the key and value
//! arrays (everything appended so far is then durable on SSD, the records of both halves
//! included), deletes the other half and starts a new one in its place. The paper drains a full
//! half in the background while writes go on in the other; here the drain is the leader's
//! `fdatasync` of the two arrays, so a write that fills a half waits for it (the
//! `log_drains` figure of `LabStats` counts them). A memtable rotation syncs its arrays too, so a closed
//! key array is always whole.
//!
//! **Invariant:** every acknowledged group is in a WAL-buffer half, or in synced key and value
//! arrays, or both; a half is deleted only after a sync that covered all of its records.
//!
//! **Recovery** ([`replay`]): the records of the live key arrays (values read and checked from
//! their value arrays; the first record whose values are not all there ends that source) and
//! the records of every half whose memtable is live, merged by sequence number. They must chain
//! without a gap: a group missing before a later one means acknowledged writes are gone
//! (corruption). The replayed versions are flushed into the L0 tree by the ordinary recovery
//! flush (which copies them into a new value array); then the old halves and the replayed
//! arrays are deleted and a new buffer is started.
//!
//! Formats: `docs/FORMATS.md`, "LAB batch record" and "LAB-DB WAL-buffer half".

use super::replayer::Replayer;
use super::{WalMemtable, WalState};
use crate::db::{DbInner, State};
use crate::format::ValueType;
use crate::labdb::record::{decode_wbuf_header, encode_wbuf_header, LabOp, LabRecord, OpValue};
use crate::labdb::vaddr::LabAddrs;
use crate::labdb::vaddr::{decode_value_record, value_len_in_header, VALUE_RECORD_HEADER};
use crate::labdb::vlog::ValueFiles;
use crate::log::{LogReader, LogWriter};
use crate::pipeline::FrontEndKind;
use crate::stats::{IoPurpose, Part};
use crate::tier::Tier;
use crate::version::{log_file_name, value_array_file_name, FileKind, VersionEdit};
use crate::write_batch::BatchOp;
use crate::{Error, Result, WriteBatch};
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The file name of WAL-buffer half `n`.
pub(crate) fn wbuf_file_name(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("{n:06}.wbuf"))
}

/// One half of the WAL buffer.
pub(super) struct Half {
    number: u64,
    writer: LogWriter,
}

/// The log's part of the write leader's state (in [`WalState`]).
#[derive(Default)]
pub(crate) struct LabLogState {
    /// The active memtable's value array.
    values: Option<crate::labdb::vlog::ValueArrayWriter>,
    /// The active memtable's addresses.
    addrs: Option<Arc<LabAddrs>>,
    /// The WAL-buffer halves, oldest first; the last is the active one (at most two).
    halves: Vec<Half>,
}

/// LAB-DB's log (module docs), owned by the memtable front end.
pub(crate) struct LabLog {
    /// Bytes of one half of the WAL buffer.
    half_bytes: u64,
    /// The addresses of every memtable not flushed yet, by number.
    addrs: Mutex<HashMap<u64, Arc<LabAddrs>>>,
    /// Halves numbered below this are obsolete (set once recovery replayed them; 0 until then,
    /// so that nothing sweeps a half before it is replayed).
    halves_floor: AtomicU64,
}

/// LAB-DB's L0 trees, shared by the design's stage (`Stage::shared_with_front_end`).
fn lab_l0(db: &DbInner) -> Option<Arc<crate::labdb::l0::LabL0>> {
    db.stages[0]
        .shared_with_front_end()
        .and_then(|s| s.downcast::<crate::labdb::l0::LabL0>().ok())
}

fn value_files(db: &DbInner) -> Result<Arc<ValueFiles>> {
    lab_l0(db)
        .and_then(|l0| l0.values().cloned())
        .ok_or_else(|| Error::InvalidArgument("LAB-DB's log needs LAB-DB's L0".into()))
}

fn pm_fs(db: &DbInner) -> Result<&Arc<dyn crate::fs::FileSystem>> {
    db.pm
        .as_ref()
        .map(|p| &p.fs)
        .ok_or_else(|| Error::InvalidArgument("LAB-DB's WAL buffer needs its PM pool".into()))
}

impl LabLog {
    /// A log whose WAL buffer is `buffer_bytes` (two halves).
    pub(crate) fn new(buffer_bytes: u64) -> LabLog {
        LabLog {
            half_bytes: (buffer_bytes / 2).max(4096),
            addrs: Mutex::new(HashMap::new()),
            halves_floor: AtomicU64::new(0),
        }
    }

    /// The addresses of memtable `number`'s versions (for its flush), if it was written through
    /// this log (a memtable replayed at open was not).
    pub(crate) fn addrs_of(&self, number: u64) -> Option<Arc<LabAddrs>> {
        self.addrs.lock().get(&number).cloned()
    }

    /// Forgets the addresses of a flushed memtable.
    pub(crate) fn flushed(&self, number: u64) {
        self.addrs.lock().remove(&number);
    }

    /// True if WAL-buffer half `number` is obsolete.
    pub(crate) fn half_is_obsolete(&self, number: u64) -> bool {
        number < self.halves_floor.load(Ordering::Acquire)
    }

    /// Appends group `batch`, numbered from `first_seq`, to the log (module docs). On success
    /// the group is durable (persisted in the WAL buffer); the caller inserts it into the
    /// memtable. Any error leaves the log's tail unknown: the caller poisons the database.
    pub(super) fn append(
        &self,
        db: &DbInner,
        wal: &mut WalState,
        batch: &WriteBatch,
        first_seq: u64,
        sync: bool,
    ) -> Result<()> {
        let st = &mut wal.lab;
        let values = st
            .values
            .as_mut()
            .ok_or_else(|| Error::InvalidArgument("LAB log: no value array".into()))?;
        let base = values.size();
        let mut ops = Vec::with_capacity(batch.len());
        let mut offsets = Vec::with_capacity(batch.len());
        for (i, op) in batch.iter_ops().enumerate() {
            let seq = first_seq + i as u64;
            let (vtype, key, value) = match op? {
                BatchOp::Put(k, v) => (ValueType::Value, k, v),
                BatchOp::Delete(k) => (ValueType::Deletion, k, &[][..]),
            };
            let at = values.size();
            values.append(key, seq, vtype, value)?;
            offsets.push(
                u32::try_from(at).map_err(|_| {
                    Error::InvalidArgument("LAB log: value array past 4 GiB".into())
                })?,
            );
            ops.push(LabOp {
                vtype,
                key: key.to_vec(),
                value: OpValue::Array {
                    len: value.len() as u32,
                    bytes: (vtype == ValueType::Value).then(|| value.to_vec()),
                },
            });
        }
        let value_bytes = values.size() - base;
        let mut record = LabRecord {
            first_seq,
            synced: sync,
            values_inline: true,
            memtable: wal.number,
            value_base: u32::try_from(base)
                .map_err(|_| Error::InvalidArgument("LAB log: value array past 4 GiB".into()))?,
            ops,
        };
        let inline = record.encode()?;
        let half = st
            .halves
            .last_mut()
            .ok_or_else(|| Error::InvalidArgument("LAB log: no WAL-buffer half".into()))?;
        // The durability point: `add_record` persists the record in PM.
        let pm_bytes = half.writer.add_record(&inline)?;
        record.values_inline = false;
        for op in &mut record.ops {
            if let OpValue::Array { bytes, .. } = &mut op.value {
                *bytes = None;
            }
        }
        let key_bytes = wal.writer.add_record(&record.encode()?)?;
        db.counters
            .add_written(Tier::Pm, Part::FrontEnd, IoPurpose::Wal, pm_bytes);
        db.counters.add_written(
            Tier::Ssd,
            Part::FrontEnd,
            IoPurpose::Wal,
            key_bytes + value_bytes,
        );
        db.counters.wal_appends.fetch_add(1, Relaxed);
        if sync {
            db.counters.wal_syncs.fetch_add(1, Relaxed);
        }
        st.addrs
            .as_ref()
            .ok_or_else(|| Error::InvalidArgument("LAB log: no address map".into()))?
            .push(first_seq, &offsets)?;
        if half.writer.size() >= self.half_bytes {
            self.drain(db, wal)?;
        }
        Ok(())
    }

    /// Syncs the key and value arrays (every record so far is then durable on SSD), deletes the
    /// older half and starts a new active one.
    fn drain(&self, db: &DbInner, wal: &mut WalState) -> Result<()> {
        if let Some(v) = wal.lab.values.as_mut() {
            v.sync()?;
        }
        wal.writer.sync()?;
        if let Some(l0) = lab_l0(db) {
            l0.count_log_drain();
        }
        if wal.lab.halves.len() >= 2 {
            let old = wal.lab.halves.remove(0);
            drop(old.writer);
            pm_fs(db)?.remove(&wbuf_file_name(&db.dir, old.number))?;
        }
        let number = db.state.lock().versions.new_file_number();
        let half = self.create_half(db, number)?;
        wal.lab.halves.push(half);
        Ok(())
    }

    fn create_half(&self, db: &DbInner, number: u64) -> Result<Half> {
        let fs = pm_fs(db)?;
        let mut writer = LogWriter::new(fs.create_log(&wbuf_file_name(&db.dir, number))?);
        writer.add_record(&encode_wbuf_header(number))?;
        Ok(Half { number, writer })
    }

    /// Syncs the active memtable's key and value arrays (`wal` holds its key array) and ends
    /// its value array: at a rotation, so that a closed key array is whole.
    pub(super) fn close_memtable(&self, wal: &mut WalState) -> Result<()> {
        if let Some(mut v) = wal.lab.values.take() {
            v.sync()?;
            wal.writer.sync()?;
        }
        Ok(())
    }

    /// Starts memtable `number`'s value array and address map (its key array, the WAL file
    /// `number`, is the caller's), and the WAL buffer's first half if there is none. The
    /// caller syncs the directory after.
    pub(super) fn start_memtable(
        &self,
        db: &DbInner,
        wal: &mut WalState,
        number: u64,
    ) -> Result<()> {
        let values = value_files(db)?.create(number, Tier::Ssd)?;
        let addrs = LabAddrs::new(number);
        self.addrs.lock().insert(number, Arc::clone(&addrs));
        wal.lab.values = Some(values);
        wal.lab.addrs = Some(addrs);
        if wal.lab.halves.is_empty() {
            let half_number = db.state.lock().versions.new_file_number();
            let half = self.create_half(db, half_number)?;
            wal.lab.halves.push(half);
        }
        Ok(())
    }

    /// After recovery's manifest record: the halves found at open are obsolete (their records
    /// are in the runs the record names), and so is every value array nothing tracks below
    /// `log_number` (replayed memtables' arrays, or a flush's a crash cut short). Deletes them.
    pub(super) fn finish_recovery(&self, db: &DbInner, log_number: u64) -> Result<()> {
        self.halves_floor.store(log_number, Ordering::Release);
        let fs = pm_fs(db)?;
        for name in fs.list(&db.dir)? {
            if let Some((FileKind::WalBuffer, n)) = crate::version::parse_file_name(&name) {
                if n < log_number {
                    fs.remove(&db.dir.join(name))?;
                }
            }
        }
        value_files(db)?.remove_untracked(log_number)?;
        Ok(())
    }
}

/// True if `options` make LAB-DB's log the front end's log: a design whose front end is
/// [`FrontEndKind::LabLog`], with `labdb.split_log` on and the WAL not moved to PM.
pub(crate) fn enabled(options: &crate::Options) -> bool {
    options.design.front_end() == FrontEndKind::LabLog
        && options.labdb.split_log
        && !options.pm.wal_on_pm
}

/// The PM chunks LAB-DB's WAL buffer takes under `options` (none when its log is not the front
/// end's, [`enabled`]): two halves in the pool, each given back and taken anew as the buffer
/// drains. The pool's space policy keeps them for it.
pub(crate) fn buffer_chunks(options: &crate::Options, data_per_chunk: u64) -> u64 {
    if enabled(options) {
        2 * (options.labdb.wal_buffer_bytes / 2).div_ceil(data_per_chunk)
    } else {
        0
    }
}

/// One recovered write group: its operations (type, key, value), and where it came from (for
/// errors).
struct Group {
    ops: Vec<(ValueType, Vec<u8>, Vec<u8>)>,
    source: String,
}

/// What the log holds: every group found, by first sequence, and what was read.
pub(crate) struct LogScan {
    groups: BTreeMap<u64, Group>,
    /// Key arrays and WAL-buffer halves read.
    pub(crate) files: usize,
    /// Records decoded.
    pub(crate) records: u64,
    /// Bytes of torn key-array tails (an append a crash cut short; the WAL buffer holds its
    /// group if it was acknowledged).
    pub(crate) torn_tail_bytes: u64,
    /// Bytes read (SSD, PM).
    bytes: (u64, u64),
}

impl LogScan {
    /// Checks that the groups chain without a gap (a group missing before a later one means
    /// acknowledged writes are gone: corruption naming where the later one was found).
    pub(crate) fn check_chain(&self) -> Result<()> {
        let mut next: Option<u64> = None;
        for (&first, g) in &self.groups {
            if let Some(n) = next.filter(|&n| n != first) {
                return Err(Error::corruption(
                    g.source.clone(),
                    format!(
                        "LAB log: the group at sequence {first} follows one ending at {}: \
                         acknowledged writes are missing",
                        n.saturating_sub(1)
                    ),
                ));
            }
            next = Some(first + g.ops.len() as u64);
        }
        Ok(())
    }
}

/// Reads LAB-DB's log in `dir` (module docs, recovery): the key arrays `logs` (numbers, on
/// `ssd`) with their value arrays, and every WAL-buffer half on `pm`, keeping the groups of
/// memtables from `log_number` on. Read-only.
pub(crate) fn scan(
    dir: &Path,
    ssd: &dyn crate::fs::FileSystem,
    pm: &dyn crate::fs::FileSystem,
    logs: &[u64],
    log_number: u64,
) -> Result<LogScan> {
    let mut out = LogScan {
        groups: BTreeMap::new(),
        files: 0,
        records: 0,
        torn_tail_bytes: 0,
        bytes: (0, 0),
    };
    for &number in logs {
        let path = log_file_name(dir, number);
        let data = ssd.read_all(&path)?;
        let vpath = value_array_file_name(dir, number);
        let vdata = if ssd.exists(&vpath) {
            ssd.read_all(&vpath)?
        } else {
            Vec::new()
        };
        out.files += 1;
        out.bytes.0 += (data.len() + vdata.len()) as u64;
        let location = path.display().to_string();
        let vlocation = vpath.display().to_string();
        let mut reader = LogReader::new(data, location.clone());
        'records: while let Some(payload) = reader.next_record()? {
            let rec = LabRecord::decode(&payload, &location)?;
            if rec.values_inline || rec.memtable != number {
                return Err(Error::corruption(
                    location,
                    format!(
                        "LAB key array record of memtable {} (inline values: {})",
                        rec.memtable, rec.values_inline
                    ),
                ));
            }
            let mut ops = Vec::with_capacity(rec.ops.len());
            for (op, at) in rec.ops.iter().zip(rec.value_offsets()) {
                let at = at.ok_or_else(|| {
                    Error::corruption(location.clone(), "LAB key array record names a hot slot")
                })?;
                // Values not all on SSD (a tail a crash cut before its sync): the WAL buffer
                // holds this group and the ones after it.
                let Some(value) = read_value(&vdata, number, at, &op.key, &vlocation) else {
                    break 'records;
                };
                ops.push((op.vtype, op.key.clone(), value));
            }
            out.records += 1;
            out.groups.insert(
                rec.first_seq,
                Group {
                    ops,
                    source: location.clone(),
                },
            );
        }
        out.torn_tail_bytes += reader.tail().dropped_bytes;
    }
    // The WAL-buffer halves, records of live memtables only (older ones are flushed).
    let mut halves: Vec<u64> = pm
        .list(dir)?
        .iter()
        .filter_map(|name| match crate::version::parse_file_name(name) {
            Some((FileKind::WalBuffer, n)) => Some(n),
            _ => None,
        })
        .collect();
    halves.sort_unstable();
    for n in halves {
        let path = wbuf_file_name(dir, n);
        let data = pm.read_all(&path)?;
        out.files += 1;
        out.bytes.1 += data.len() as u64;
        let location = path.display().to_string();
        let mut reader = LogReader::new(data, location.clone());
        match reader.next_record()? {
            Some(h) => decode_wbuf_header(&h, n, &location)?,
            // A half whose header a crash cut off holds nothing.
            None => continue,
        }
        while let Some(payload) = reader.next_record()? {
            let rec = LabRecord::decode(&payload, &location)?;
            if !rec.values_inline {
                return Err(Error::corruption(
                    location,
                    "WAL-buffer record without inline values",
                ));
            }
            out.records += 1;
            if rec.memtable < log_number || out.groups.contains_key(&rec.first_seq) {
                continue;
            }
            let mut ops = Vec::with_capacity(rec.ops.len());
            for op in rec.ops {
                let value = match op.value {
                    OpValue::Array { bytes, .. } => bytes.unwrap_or_default(),
                    // Reserved: the write path never logs a hot operation (the hot-key buffer
                    // is filled at flushes).
                    OpValue::Hot { .. } => {
                        return Err(Error::corruption(
                            location,
                            "WAL-buffer record names a hot slot",
                        ))
                    }
                };
                ops.push((op.vtype, op.key, value));
            }
            out.groups.insert(
                rec.first_seq,
                Group {
                    ops,
                    source: location.clone(),
                },
            );
        }
    }
    Ok(out)
}

/// Replays LAB-DB's log (module docs) into memtables flushed into the first stage (added to
/// `edit`, listed in `written`); sets the version set's last sequence.
pub(super) fn replay(
    front: &WalMemtable,
    db: &DbInner,
    state: &mut State,
    logs: &[(u64, Tier)],
    edit: &mut VersionEdit,
    written: &mut Vec<(u64, Tier)>,
) -> Result<()> {
    let numbers: Vec<u64> = logs.iter().map(|(n, _)| *n).collect();
    let log = scan(
        &db.dir,
        &**db.fs_for(Tier::Ssd),
        &**pm_fs(db)?,
        &numbers,
        state.versions.log_number,
    )?;
    db.counters
        .add_read(Tier::Ssd, Part::FrontEnd, IoPurpose::Recovery, log.bytes.0);
    db.counters
        .add_read(Tier::Pm, Part::FrontEnd, IoPurpose::Recovery, log.bytes.1);
    log.check_chain()?;
    let groups = log.groups;
    let mut replayer = Replayer::new(front, state);
    for (&first, g) in &groups {
        let ops = g.ops.iter().map(|(t, k, v)| {
            Ok(match t {
                ValueType::Value => BatchOp::Put(k, v),
                ValueType::Deletion => BatchOp::Delete(k),
            })
        });
        replayer.apply(db, state, ops, first, &g.source, edit, written)?;
    }
    replayer.finish(db, state, edit, written)
}

/// The value of the record at `at` in value array `number` (`data`, its bytes) for `key`, or
/// `None` if it is not wholly there or fails its check (a tail that was never synced).
fn read_value(data: &[u8], number: u64, at: u64, key: &[u8], location: &str) -> Option<Vec<u8>> {
    let at_usize = usize::try_from(at).ok()?;
    let header: &[u8; VALUE_RECORD_HEADER] = data
        .get(at_usize..at_usize + VALUE_RECORD_HEADER)?
        .try_into()
        .ok()?;
    let len = value_len_in_header(header) as usize;
    let bytes = data.get(at_usize..at_usize + VALUE_RECORD_HEADER + len)?;
    decode_value_record(bytes, number, at, key, location)
        .ok()
        .map(|r| r.value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labdb::vaddr::encode_value_record;

    #[test]
    fn a_value_record_is_read_only_when_whole_and_checked() {
        let mut data = vec![0u8; 32];
        encode_value_record(&mut data, 5, 32, b"key", 9, ValueType::Value, b"value").unwrap();
        assert_eq!(
            read_value(&data, 5, 32, b"key", "t").as_deref(),
            Some(&b"value"[..])
        );
        // Another key, another file, a cut record, an offset past the end: not there.
        assert_eq!(read_value(&data, 5, 32, b"kex", "t"), None);
        assert_eq!(read_value(&data, 6, 32, b"key", "t"), None);
        assert_eq!(
            read_value(&data[..data.len() - 1], 5, 32, b"key", "t"),
            None
        );
        assert_eq!(read_value(&data, 5, 4096, b"key", "t"), None);
    }

    #[test]
    fn groups_must_chain() {
        let group = |n: usize| Group {
            ops: vec![(ValueType::Value, b"k".to_vec(), b"v".to_vec()); n],
            source: "src".into(),
        };
        let mut scan = LogScan {
            groups: BTreeMap::new(),
            files: 0,
            records: 0,
            torn_tail_bytes: 0,
            bytes: (0, 0),
        };
        scan.groups.insert(5, group(2));
        scan.groups.insert(7, group(1));
        scan.check_chain().unwrap();
        scan.groups.insert(10, group(1));
        let err = scan.check_chain().unwrap_err().to_string();
        assert!(
            err.contains("sequence 10") && err.contains("ending at 7"),
            "{err}"
        );
    }
}
