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

use super::replayer::Replayer;
use super::{MemtableFlush, NullFile, WalMemtable, WalState};
use crate::db::{DbInner, Present, State};
use crate::front_ends::buffer::Buffer;
use crate::front_ends::fast_store;
use crate::front_ends::replay::{
    finish_replay, flush_replayed, holds_synced_record, live_logs, read_log, WalLink,
};
use crate::log::{LogReader, LogWriter};
use crate::pmtable::PmTable;
use crate::stats::{IoPurpose, Part};
use crate::tier::Tier;
use crate::version::{log_file_name, FileKind, VersionEdit, VersionSet};
use crate::write_batch::decode_batch;
use crate::{Error, Result};
use std::path::Path;
use std::sync::Arc;

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

/// Replays the live WALs of `present`, then starts a new WAL and manifest.
pub(super) fn recover(front: &WalMemtable, db: &DbInner, present: &Present) -> Result<()> {
    let mut state = db.state.lock();
    let logs = live_logs(&state, present);
    let mut edit = VersionEdit::default();
    let mut written: Vec<(u64, Tier)> = Vec::new();
    let thread_logs = !front.pm_memtable
        && front.lab.is_none()
        && logs.iter().try_fold(false, |any, &(n, t)| {
            Ok::<_, Error>(any || fast_store::is_thread_log(db, n, t)?)
        })?;
    let replayed = if front.pm_memtable {
        reopen_pm_memtables(db, &mut state, &logs, &mut edit, &mut written)
    } else if thread_logs {
        // Written with `pm.thread_logs`: merged by sequence number as that front end does.
        fast_store::replay_thread_logs(db, &mut state, &logs, &mut edit, &mut written).map(|last| {
            state.versions.last_sequence = state.versions.last_sequence.max(last);
        })
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
