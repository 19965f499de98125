//! Recovery of the WAL + memtable front end.
//!
//! Replays WALs numbered `>= log_number`, oldest first, into memtables that are flushed into
//! the first stage -> one manifest record (in a fresh manifest) names those runs and a new log
//! number whose WAL does not exist yet -> the replayed WALs are deleted -> the new WAL is
//! created -> a second record says it exists. Because the new WAL is created after the replayed
//! ones are deleted, recovery never needs more PM than it frees (and the pool's spare chunk
//! covers a database with no WAL to replay). A recovery that fails before its manifest record
//! deletes the runs it wrote.
//!
//! WAL damage, point-in-time: a torn tail (an append that never completed, or unsynced appends a
//! power failure cut) ends the replay there. In the newest WAL that is the usual case. In an
//! older WAL it can happen because closed WALs are synced in the background, not at rotation;
//! the later WALs then hold only writes acknowledged without `sync` after the cut (a sync write
//! syncs every closed WAL before it appends its record, and marks the record), so they are
//! ignored, and the state recovered is the one at the cut. A cut that falls on a record
//! boundary leaves no damaged bytes: it shows as a gap in the sequence numbers (writes are
//! numbered consecutively; writes that skipped the WAL took numbers too, which the next record
//! counts in its trailer) and is treated the same way. A marked (synced) record after the cut
//! proves the cut is damage, not a power failure: corruption, naming the file. Damage followed
//! by valid records in the same WAL is corruption too.
//!
//! A WAL started by a rotation opens with a link record ([`WalLink`]): the WAL before it and
//! the last sequence number logged there. An older WAL emptied or cut at a record boundary (what
//! a power failure leaves of a file never synced) shows no damage and, when emptied, no record
//! to measure a gap from; the link says what it held, so the loss is a cut like any other
//! (point in time, or corruption when a synced write follows) instead of a hole of missing
//! writes under newer ones.

use super::buffer::Buffer;
use super::wal_memtable::{insert_ops, MemtableFlush, NullFile, WalMemtable, WalState};
use crate::db::{DbInner, Present, State};
use crate::log::{LogReader, LogWriter};
use crate::pipeline::FlushSource;
use crate::pmtable::PmTable;
use crate::stats::{IoPurpose, Part};
use crate::tier::Tier;
use crate::version::{log_file_name, run_file_name, FileKind, VersionEdit, VersionSet};
use crate::write_batch::decode_batch;
use crate::{Error, Result};
use std::path::Path;
use std::sync::Arc;

/// The first record of a WAL started by a rotation: the WAL before it (`prev_number`) and the
/// last sequence number of the last record appended to that WAL (`prev_last`, 0: it held
/// none). 37 bytes: `TKVWALLK`, `0xff` x 5, the two as u64, `0xff` x 8 (`docs/FORMATS.md`,
/// "WAL link record"). No write batch looks like it (a batch's first 8 bytes are a sequence
/// number, below 2^56), and a build that predates it decodes it as a batch whose first
/// operation has no valid type: corruption, never data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WalLink {
    pub prev_number: u64,
    pub prev_last: u64,
}

const WAL_LINK_MAGIC: &[u8; 8] = b"TKVWALLK";
const WAL_LINK_LEN: usize = 37;

impl WalLink {
    pub(crate) fn encode(&self) -> [u8; WAL_LINK_LEN] {
        let mut b = [0xffu8; WAL_LINK_LEN];
        b[..8].copy_from_slice(WAL_LINK_MAGIC);
        b[13..21].copy_from_slice(&self.prev_number.to_le_bytes());
        b[21..29].copy_from_slice(&self.prev_last.to_le_bytes());
        b
    }

    /// The link `record` is, if it is one.
    pub(crate) fn parse(record: &[u8]) -> Option<WalLink> {
        let marks = |r: std::ops::Range<usize>| record[r].iter().all(|&b| b == 0xff);
        (record.len() == WAL_LINK_LEN
            && record[..8] == WAL_LINK_MAGIC[..]
            && marks(8..13)
            && marks(29..37))
        .then(|| WalLink {
            prev_number: u64::from_le_bytes(record[13..21].try_into().expect("8 bytes")),
            prev_last: u64::from_le_bytes(record[21..29].try_into().expect("8 bytes")),
        })
    }

    /// Whether the WAL before lost records: it is live (numbered from the version's log
    /// number) and held records past `replayed_last`, the last sequence number replayed so
    /// far (0: none).
    pub(crate) fn shows_loss(&self, log_number: u64, replayed_last: u64) -> bool {
        self.prev_number >= log_number && self.prev_last > replayed_last
    }
}

/// Checks that the WAL the version names as its oldest live one exists (unless the last
/// recovery had not created it yet). Every WAL is deleted only after a manifest record retired
/// it, so its absence means records that were durable once are gone.
pub(super) fn verify_oldest_wal(
    dir: &Path,
    versions: &VersionSet,
    present: &Present,
) -> Result<()> {
    let l = versions.log_number;
    let wal_present = present
        .keys()
        .any(|&(k, n, _)| k == FileKind::Log && n == l);
    if l > 0 && versions.log_created && !wal_present {
        return Err(Error::corruption(
            log_file_name(dir, l).display().to_string(),
            format!(
                "the manifest names this WAL as the oldest live one, but it is missing: \
                 records that retired it were lost from the manifest{} or the WAL was deleted; \
                 acknowledged writes may be missing, so nothing was opened or deleted",
                if versions.manifest_torn_bytes > 0 {
                    format!(
                        " (its last {} bytes are damaged or incomplete)",
                        versions.manifest_torn_bytes
                    )
                } else {
                    String::new()
                }
            ),
        ));
    }
    Ok(())
}

/// Log `number` on `tier` read whole (counted as recovery reads), with its path as errors name
/// it.
pub(super) fn read_log(db: &DbInner, number: u64, tier: Tier) -> Result<(LogReader, String)> {
    let path = log_file_name(&db.dir, number);
    let data = db.fs_for(tier).read_all(&path)?;
    db.counters
        .add_read(tier, Part::FrontEnd, IoPurpose::Recovery, data.len() as u64);
    let location = path.display().to_string();
    Ok((LogReader::new(data, location.clone()), location))
}

/// The logs of `present` the version still needs (numbered from its log number), oldest first.
pub(super) fn live_logs(state: &State, present: &Present) -> Vec<(u64, Tier)> {
    let mut logs: Vec<(u64, Tier)> = present
        .keys()
        .filter(|(k, n, _)| *k == FileKind::Log && *n >= state.versions.log_number)
        .map(|(_, n, t)| (*n, *t))
        .collect();
    logs.sort_unstable_by_key(|(n, _)| *n);
    logs
}

/// Replays the live WALs of `present`, then starts a new WAL and manifest.
pub(super) fn recover(front: &WalMemtable, db: &DbInner, present: &Present) -> Result<()> {
    let mut state = db.state.lock();
    let logs = live_logs(&state, present);
    let mut edit = VersionEdit::default();
    let mut written: Vec<(u64, Tier)> = Vec::new();
    let thread_logs = !front.pm_memtable
        && front.lab.is_none()
        && logs.iter().try_fold(false, |any, &(n, t)| {
            Ok::<_, Error>(any || super::fast_store::is_thread_log(db, n, t)?)
        })?;
    let replayed = if front.pm_memtable {
        reopen_pm_memtables(db, &mut state, &logs, &mut edit, &mut written)
    } else if thread_logs {
        // Written with `pm.thread_logs`: merged by sequence number as that front end does.
        super::fast_store::replay_thread_logs(db, &mut state, &logs, &mut edit, &mut written).map(
            |last| {
                state.versions.last_sequence = state.versions.last_sequence.max(last);
            },
        )
    } else if front.lab.is_some() {
        super::lab_log::replay(front, db, &mut state, &logs, &mut edit, &mut written)
    } else {
        replay(front, db, &mut state, &logs, &mut edit, &mut written)
    };
    let number = finish_replay(db, state, replayed, edit, written)?;
    let mut state = db.state.lock();
    if let Some(lab) = &front.lab {
        lab.finish_recovery(db, number)?;
    }
    // The new buffer: a WAL and a DRAM memtable, or a PM memtable (its own file, no WAL).
    let (writer, mem) = if front.pm_memtable {
        let mem = front.new_pm_memtable(db, number)?;
        (LogWriter::new(Box::new(NullFile)), mem)
    } else {
        let path = log_file_name(&db.dir, number);
        let file = match &db.pm {
            Some(pm) if front.wal_tier == Tier::Pm => pm.pmfs.create_log_using_spare(&path)?,
            _ => db.fs_for(front.wal_tier).create_log(&path)?,
        };
        db.fs_for(front.wal_tier).sync_dir(&db.dir)?;
        (
            LogWriter::new(file),
            Buffer::Dram(front.new_memtable(number)),
        )
    };
    let mut wal = WalState {
        writer,
        number,
        mem: mem.clone(),
        unlogged_seqs: 0,
        last_logged: 0,
        lab: Default::default(),
    };
    if let Some(lab) = &front.lab {
        // The state lock is taken inside for the half's number.
        drop(state);
        lab.start_memtable(db, &mut wal, number)?;
        db.fs_for(front.wal_tier).sync_dir(&db.dir)?;
        state = db.state.lock();
    }
    state.versions.log_and_apply(VersionEdit {
        log_created: Some(true),
        ..VersionEdit::default()
    })?;
    *front.wal.lock() = wal;
    front.set_active(mem);
    state.install_super_version(front);
    db.last_sequence.store(
        state.versions.last_sequence,
        std::sync::atomic::Ordering::Release,
    );
    Ok(())
}

/// Ends a replay of the live logs into the first stage. On failure: removes the runs it wrote
/// (but those a global index may already name: the next open adopts them, or sweeps them if the
/// index does not name them) and ends the compaction log's recovery. On success: one manifest
/// record names the runs and a new log number whose log does not exist yet, then the replayed
/// logs and other obsolete files are deleted and dead row pages freed (a crash may have left
/// them unfreed; no reader exists yet). Returns the new log number.
pub(super) fn finish_replay(
    db: &DbInner,
    mut state: parking_lot::MutexGuard<'_, State>,
    replayed: Result<()>,
    mut edit: VersionEdit,
    written: Vec<(u64, Tier)>,
) -> Result<u64> {
    if let Err(e) = replayed {
        let named = db.stages[0].names_runs_before_manifest();
        for (number, tier) in written.into_iter().filter(|_| !named) {
            let kind = db.stages[0].ingest_target().kind;
            let fs = db.fs_for(tier);
            let _ = fs.remove(&run_file_name(&db.dir, number, kind));
            let _ = fs.remove(&crate::sst::value_log::value_log_file_name(&db.dir, number));
        }
        let _ = db.clog_end_recovery(&mut state, false);
        return Err(e);
    }
    let number = state.versions.new_file_number();
    edit.log_number = Some(number);
    edit.log_created = Some(false);
    state.versions.log_and_apply(edit)?;
    db.clog_end_recovery(&mut state, true)?;
    let obsolete = db.collect_obsolete_files(&mut state);
    db.delete_files(obsolete);
    drop(state);
    db.reclaim()?;
    Ok(number)
}

/// Replays `logs` into memtables flushed into the first stage (added to `edit`, listed in
/// `written`, including a run whose writing failed); sets the version set's last sequence.
fn replay(
    front: &WalMemtable,
    db: &DbInner,
    state: &mut State,
    logs: &[(u64, Tier)],
    edit: &mut VersionEdit,
    written: &mut Vec<(u64, Tier)>,
) -> Result<()> {
    let mut replayer = Replayer::new(front, state);
    // The sequence the next record must start with (past the unlogged writes it counts):
    // writes are numbered consecutively, so a gap means records were lost before it (a closed
    // WAL cut at a record boundary).
    let mut next_seq: Option<u64> = None;
    'logs: for (i, &(number, tier)) in logs.iter().enumerate() {
        let (mut reader, location) = read_log(db, number, tier)?;
        let mut first_record = true;
        while let Some(record) = reader.next_record()? {
            if let Some(link) = WalLink::parse(&record).filter(|_| first_record) {
                first_record = false;
                let replayed_last = next_seq.map_or(0, |n| n - 1);
                if link.shows_loss(state.versions.log_number, replayed_last) {
                    // Point in time: stop before this WAL, unless a synced write follows.
                    let synced_after = rest_holds_synced_record(&mut reader)
                        || first_synced_record(db, &logs[i + 1..])?.is_some();
                    if synced_after {
                        return Err(Error::corruption(
                            log_file_name(&db.dir, link.prev_number)
                                .display()
                                .to_string(),
                            format!(
                                "this WAL held writes up to sequence {} ({location} says), but \
                                 only {} were found in it: writes are missing before a write \
                                 acknowledged with sync",
                                link.prev_last,
                                if replayed_last == 0 {
                                    "none".to_string()
                                } else {
                                    format!("those up to {replayed_last}")
                                },
                            ),
                        ));
                    }
                    break 'logs;
                }
                continue;
            }
            first_record = false;
            let batch = decode_batch(&record, "WAL record").map_err(|e| match e {
                Error::Corruption { reason, .. } => Error::corruption(location.clone(), reason),
                other => other,
            })?;
            let (first, count) = (batch.first_sequence, batch.count);
            // Unlogged writes between the previous record and this one took the sequence
            // numbers the record says; any other gap is a cut.
            let expected = next_seq.map(|e| e.saturating_add(batch.unlogged_before));
            if let Some(expected) = expected.filter(|&e| e != first) {
                // Point in time: stop at the gap, unless a synced write follows it.
                let synced_after = batch.synced
                    || rest_holds_synced_record(&mut reader)
                    || first_synced_record(db, &logs[i + 1..])?.is_some();
                if first < expected || synced_after {
                    let unlogged = match batch.unlogged_before {
                        0 => String::new(),
                        n => format!(" and {n} unlogged writes"),
                    };
                    return Err(Error::corruption(
                        location,
                        format!(
                            "the record of sequence {first} follows the one ending at {}{unlogged}: \
                             writes are missing{}",
                            next_seq.unwrap_or(1) - 1,
                            if synced_after {
                                " before a write acknowledged with sync"
                            } else {
                                " or repeated"
                            }
                        ),
                    ));
                }
                break 'logs;
            }
            next_seq = Some(first + u64::from(count));
            let n = replayer.apply(db, state, batch.ops, first, &location, edit, written)?;
            // The decoder stops with an error at any count mismatch, so this is a pair assertion.
            debug_assert_eq!(n, u64::from(count));
        }
        let tail = reader.tail();
        if tail.dropped_bytes > 0 && i + 1 < logs.len() {
            if let Some(synced) = first_synced_record(db, &logs[i + 1..])? {
                return Err(Error::corruption(
                    format!("{location} at offset {}", tail.valid_end),
                    format!(
                        "damaged tail in a WAL that a newer WAL follows, and {synced} holds a \
                         write acknowledged with sync after it: not a power failure's cut"
                    ),
                ));
            }
            // Point in time: the later WALs hold only unsynced writes after the cut.
            break;
        }
    }
    replayer.finish(db, state, edit, written)
}

/// Replayed operations into memtables: each memtable that reaches the write buffer size is
/// flushed into the first stage, and the last one at [`Replayer::finish`], which also sets the
/// version set's last sequence (LAB-DB's log replays through it too).
pub(super) struct Replayer<'a> {
    front: &'a WalMemtable,
    mem: Arc<crate::memtable::MemTable>,
    max_seq: u64,
}

impl<'a> Replayer<'a> {
    pub(super) fn new(front: &'a WalMemtable, state: &State) -> Self {
        Replayer {
            front,
            mem: front.new_memtable(0),
            max_seq: state.versions.last_sequence,
        }
    }

    /// Inserts `ops`, numbered from `first` (a failure is corruption naming `location`), and
    /// flushes the memtable when full (the flush's run added to `edit`, listed in
    /// `written`). Returns how many operations there were.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn apply<'b>(
        &mut self,
        db: &DbInner,
        state: &mut State,
        ops: impl IntoIterator<Item = Result<crate::write_batch::BatchOp<'b>>>,
        first: u64,
        location: &str,
        edit: &mut VersionEdit,
        written: &mut Vec<(u64, Tier)>,
    ) -> Result<u64> {
        let n = insert_ops(&self.mem, ops, first)
            .map_err(|e| Error::corruption(location, e.to_string()))?;
        if n > 0 {
            self.max_seq = self.max_seq.max(first + n - 1);
        }
        if self.mem.approximate_bytes() >= db.options.write_buffer_size as u64 {
            let full = std::mem::replace(&mut self.mem, self.front.new_memtable(0));
            flush_replayed(
                db,
                state,
                &MemtableFlush::new(Buffer::Dram(full)),
                edit,
                written,
            )?;
        }
        Ok(n)
    }

    /// Flushes the last memtable and sets the version set's last sequence.
    pub(super) fn finish(
        self,
        db: &DbInner,
        state: &mut State,
        edit: &mut VersionEdit,
        written: &mut Vec<(u64, Tier)>,
    ) -> Result<()> {
        flush_replayed(
            db,
            state,
            &MemtableFlush::new(Buffer::Dram(self.mem)),
            edit,
            written,
        )?;
        state.versions.last_sequence = self.max_seq;
        Ok(())
    }
}

/// The PM memtable's recovery in place of a WAL replay: opens the live memtables of `logs`
/// (each unlinks a batch a crash cut short) and flushes them into the first stage (added to
/// `edit`, listed in `written`); sets the version set's last sequence to the newest committed
/// one.
fn reopen_pm_memtables(
    db: &DbInner,
    state: &mut State,
    logs: &[(u64, Tier)],
    edit: &mut VersionEdit,
    written: &mut Vec<(u64, Tier)>,
) -> Result<()> {
    let mut max_seq = state.versions.last_sequence;
    for &(number, tier) in logs {
        let path = log_file_name(&db.dir, number);
        let pm = match (&db.pm, tier) {
            (Some(pm), Tier::Pm) => pm,
            _ => {
                return Err(Error::corruption(
                    path.display().to_string(),
                    "a WAL on SSD in a database whose memtable is in PM",
                ))
            }
        };
        let (table, rec) = PmTable::open(&pm.pmfs, &path, number, true)?;
        db.counters.add_read(
            Tier::Pm,
            Part::FrontEnd,
            IoPurpose::Recovery,
            table.pm_bytes(),
        );
        max_seq = max_seq.max(rec.committed);
        flush_replayed(
            db,
            state,
            &MemtableFlush::new(Buffer::Pm(Arc::new(table))),
            edit,
            written,
        )?;
    }
    state.versions.last_sequence = max_seq;
    Ok(())
}

/// True if a valid record after the reader's position was synced before it was acknowledged.
fn rest_holds_synced_record(reader: &mut LogReader) -> bool {
    while let Ok(Some(record)) = reader.next_record() {
        // A link record decodes as a synced batch on purpose (for builds without it): skip it.
        if WalLink::parse(&record).is_none()
            && decode_batch(&record, "WAL record").is_ok_and(|b| b.synced)
        {
            return true;
        }
    }
    false
}

/// The first of `logs` holding a record whose group was synced before it was acknowledged, if
/// any.
fn first_synced_record(db: &DbInner, logs: &[(u64, Tier)]) -> Result<Option<String>> {
    for &(number, tier) in logs {
        let path = log_file_name(&db.dir, number);
        let data = db.fs_for(tier).read_all(&path)?;
        db.counters
            .add_read(tier, Part::FrontEnd, IoPurpose::Recovery, data.len() as u64);
        if holds_synced_record(data, &path.display().to_string()) {
            return Ok(Some(path.display().to_string()));
        }
    }
    Ok(None)
}

/// True if the WAL `data` holds a valid record whose group was synced before it was
/// acknowledged (damage ends the scan: what follows it cannot be trusted either way).
pub(crate) fn holds_synced_record(data: Vec<u8>, location: &str) -> bool {
    let mut reader = LogReader::new(data, location.to_string());
    while let Ok(Some(record)) = reader.next_record() {
        if WalLink::parse(&record).is_none()
            && decode_batch(&record, "WAL record").is_ok_and(|b| b.synced)
        {
            return true;
        }
    }
    false
}

pub(super) fn flush_replayed(
    db: &DbInner,
    state: &mut State,
    source: &dyn FlushSource,
    edit: &mut VersionEdit,
    written: &mut Vec<(u64, Tier)>,
) -> Result<()> {
    if source.is_empty() {
        return Ok(());
    }
    let number = state.versions.new_file_number();
    // Listed before it is written: a partial run of a failed write is removed too.
    written.push((number, Tier::Ssd));
    if db.pm.is_some() {
        written.push((number, Tier::Pm));
    }
    let current = state.versions.current();
    if let Some((group, meta)) = db.write_flush_run(source, number, &current)? {
        edit.stage_mut(0).added.push((group, meta));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::WalLink;
    use crate::write_batch::decode_batch;
    use crate::WriteBatch;

    #[test]
    fn a_link_round_trips_and_no_batch_reads_as_one() {
        for (prev_number, prev_last) in [(0, 0), (4, 0), (7, 1), (u64::MAX, 1 << 55)] {
            let link = WalLink {
                prev_number,
                prev_last,
            };
            assert_eq!(WalLink::parse(&link.encode()), Some(link));
            let mut damaged = link.encode();
            for i in [0, 9, 30] {
                damaged[i] ^= 1;
                assert_eq!(WalLink::parse(&damaged), None, "byte {i}");
                damaged[i] ^= 1;
            }
            // What a build without link records makes of it: corruption, not operations.
            let encoded = link.encode();
            let decoded = decode_batch(&encoded, "test");
            let ops_fail = decoded.map(|d| d.ops.collect::<crate::Result<Vec<_>>>().is_err());
            assert!(ops_fail.unwrap_or(true), "{prev_number} {prev_last}");
        }
        // It is never taken for a synced write (which would make a cut before it corruption).
        {
            use crate::fs::FileSystem;
            let fs = crate::fs::MemFs::new();
            let path = std::path::Path::new("/000007.log");
            let mut w = crate::log::LogWriter::new(fs.create_log(path).unwrap());
            let link = WalLink {
                prev_number: 6,
                prev_last: 40,
            };
            w.add_record(&link.encode()).unwrap();
            drop(w);
            let data = fs.file_data(path).unwrap();
            assert!(data.len() > 37, "{} bytes", data.len());
            assert!(!super::holds_synced_record(data, "000007.log"));
        }
        for (seq, unlogged) in [(1u64, 0u64), ((1 << 56) - 1, 3)] {
            let mut b = WriteBatch::new();
            b.put(b"TKVWALLK", &[0xff; 16]);
            let rec = b.with_record(seq, true, unlogged, |r| r.to_vec());
            assert_eq!(WalLink::parse(&rec), None);
        }
    }
}
