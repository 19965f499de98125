//! What the recoveries of the log-based front ends share: the link record that opens a WAL
//! started by a rotation ([`WalLink`]), reading the live logs, flushing what a replay rebuilt
//! into the first stage, and the manifest record that ends a replay. The WAL front end's
//! replay is `wal_memtable/recovery.rs`, FluidKV's thread logs' `fast_store.rs`.

use crate::db::{DbInner, Present, State};
use crate::log::LogReader;
use crate::pipeline::FlushSource;
use crate::stats::{IoPurpose, Part};
use crate::tier::Tier;
use crate::version::{log_file_name, run_file_name, FileKind, VersionEdit};
use crate::write_batch::decode_batch;
use crate::Result;

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
