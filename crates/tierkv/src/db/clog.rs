//! The compaction log: a record log on PM that says, before each step of a flush or a
//! compaction runs, what that step is about to do, so that recovery knows exactly which runs a
//! crash left half-made and which runs a committed compaction left to free.
//!
//! The steps of one job and their records (each record persisted before the step it announces):
//!
//! | record | written | says |
//! |---|---|---|
//! | `Start { id, inputs }` | before the first output is created | the job's input runs |
//! | `Output { id, number }` | before output run `number` is created | a run the job may leave |
//! | `Merged { id }` | when every output is persisted | the merge is done |
//! | `Commit { id }` | after the manifest record that adds the outputs and deletes the inputs | the job is published; its inputs are garbage |
//! | `Abort { id }` | when the job failed | its outputs are garbage |
//!
//! The paper's `add` and `delete` steps (one per floor added, one per run dropped) are one
//! manifest record here: the manifest publishes a version edit atomically, so there is never a
//! state in which some floors of a job are added and others are not.
//!
//! Recovery ([`replay`]) runs after the manifest is recovered, before anything is written:
//! * a job with `Commit`, or whose outputs the manifest names (the crash fell between the
//!   manifest record and `Commit`): **redo** its last step, freeing every input the version no
//!   longer names;
//! * a job without `Commit` whose outputs the manifest does not name, or with `Abort`:
//!   **discard** it, removing every output it announced.
//!
//! Then the old logs are removed and a new one is started. The log is advisory in one
//! direction only: the manifest decides what is live; the log decides what may be removed and
//! accounts for every run file a crash can leave (`unlogged_runs_removed` counts runs the
//! directory sweep found that no log accounted for: zero for designs that keep the log).
//!
//! The log is rotated when it passes [`ROTATE_BYTES`] and no job is running; the new log
//! starts with a released-files record (`Start` + `Commit` of a job with no outputs) naming the
//! runs that old versions still hold, so nothing it accounted for is lost with the old log.

use crate::fs::FileSystem;
use crate::log::{LogReader, LogWriter};
use crate::util::coding::{put_varint64, Decoder};
use crate::{Error, Result};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A log is rotated once it is this large and no job is running.
pub(crate) const ROTATE_BYTES: u64 = 256 << 10;

/// One record of the compaction log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Record {
    Start { id: u64, inputs: Vec<u64> },
    Output { id: u64, number: u64 },
    Merged { id: u64 },
    Commit { id: u64 },
    Abort { id: u64 },
}

const START: u8 = 1;
const OUTPUT: u8 = 2;
const MERGED: u8 = 3;
const COMMIT: u8 = 4;
const ABORT: u8 = 5;

impl Record {
    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Record::Start { id, inputs } => {
                out.push(START);
                put_varint64(&mut out, *id);
                put_varint64(&mut out, inputs.len() as u64);
                for n in inputs {
                    put_varint64(&mut out, *n);
                }
            }
            Record::Output { id, number } => {
                out.push(OUTPUT);
                put_varint64(&mut out, *id);
                put_varint64(&mut out, *number);
            }
            Record::Merged { id } => {
                out.push(MERGED);
                put_varint64(&mut out, *id);
            }
            Record::Commit { id } => {
                out.push(COMMIT);
                put_varint64(&mut out, *id);
            }
            Record::Abort { id } => {
                out.push(ABORT);
                put_varint64(&mut out, *id);
            }
        }
        out
    }

    fn decode(src: &[u8], location: &str) -> Result<Record> {
        let bad = || Error::corruption(location, "malformed compaction log record");
        let mut d = Decoder::new(src);
        let tag = d.u8().ok_or_else(bad)?;
        let id = d.varint64().ok_or_else(bad)?;
        let record = match tag {
            START => {
                let n = d.varint64().ok_or_else(bad)?;
                if n > src.len() as u64 {
                    return Err(bad());
                }
                let inputs = (0..n)
                    .map(|_| d.varint64().ok_or_else(bad))
                    .collect::<Result<Vec<_>>>()?;
                Record::Start { id, inputs }
            }
            OUTPUT => Record::Output {
                id,
                number: d.varint64().ok_or_else(bad)?,
            },
            MERGED => Record::Merged { id },
            COMMIT => Record::Commit { id },
            ABORT => Record::Abort { id },
            _ => return Err(bad()),
        };
        if !d.is_empty() {
            return Err(bad());
        }
        Ok(record)
    }
}

/// Path of compaction log `n`.
pub(crate) fn clog_file_name(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("{n:06}.clog"))
}

/// The open compaction log of a database.
pub(crate) struct CompactionLog {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    number: u64,
    writer: LogWriter,
    next_id: u64,
    running: usize,
    /// The job that covers the runs a WAL replay at open writes (started by its first run).
    recovery_job: Option<u64>,
}

impl CompactionLog {
    /// Creates log `number` (its directory entry synced) and starts it with a released-files
    /// record naming `released` (runs older versions still hold), if any.
    pub(crate) fn create(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        number: u64,
        released: Vec<u64>,
    ) -> Result<CompactionLog> {
        let file = fs.create_log(&clog_file_name(dir, number))?;
        fs.sync_dir(dir)?;
        let mut log = CompactionLog {
            fs,
            dir: dir.to_path_buf(),
            number,
            writer: LogWriter::new(file),
            next_id: 1,
            running: 0,
            recovery_job: None,
        };
        if !released.is_empty() {
            let id = log.next_id;
            log.next_id += 1;
            log.append(&Record::Start {
                id,
                inputs: released,
            })?;
            log.append(&Record::Commit { id })?;
        }
        Ok(log)
    }

    /// The log's file number.
    pub(crate) fn number(&self) -> u64 {
        self.number
    }

    /// Persists `record`. Its space is taken first: a full pool is `NoSpace` with nothing
    /// appended, so the log stays readable (a torn record followed by later ones would read as
    /// damage) and a failed compaction can still append its `Abort`.
    fn append(&mut self, record: &Record) -> Result<()> {
        let encoded = record.encode();
        self.writer.reserve_record(encoded.len())?;
        self.writer.add_record(&encoded)?;
        self.writer.sync()
    }

    /// Starts a job reading `inputs`: its id.
    pub(crate) fn start(&mut self, inputs: Vec<u64>) -> Result<u64> {
        let id = self.next_id;
        self.next_id += 1;
        self.append(&Record::Start { id, inputs })?;
        self.running += 1;
        Ok(id)
    }

    /// Announces output run `number` of job `id`.
    pub(crate) fn output(&mut self, id: u64, number: u64) -> Result<()> {
        self.append(&Record::Output { id, number })
    }

    /// Job `id` has persisted every output.
    pub(crate) fn merged(&mut self, id: u64) -> Result<()> {
        self.append(&Record::Merged { id })
    }

    /// Job `id` ends: published (`committed`) or failed.
    pub(crate) fn finish(&mut self, id: u64, committed: bool) -> Result<()> {
        self.running = self.running.saturating_sub(1);
        self.append(&if committed {
            Record::Commit { id }
        } else {
            Record::Abort { id }
        })
    }

    /// True when the log should be replaced by a new one (large, and no job running).
    pub(crate) fn wants_rotation(&self) -> bool {
        self.running == 0 && self.writer.size() >= ROTATE_BYTES
    }

    /// Replaces this log by new log `number` that names `released`; the old file is removed
    /// once the new one exists.
    pub(crate) fn rotate(&mut self, number: u64, released: Vec<u64>) -> Result<()> {
        let next = CompactionLog::create(Arc::clone(&self.fs), &self.dir, number, released)?;
        let old = std::mem::replace(self, next);
        let _ = old.fs.remove(&clog_file_name(&old.dir, old.number));
        Ok(())
    }
}

impl super::DbInner {
    /// Announces run `number`, written by the WAL replay at open, in the recovery's job
    /// (started by its first run; committed by [`Self::clog_end_recovery`]).
    pub(crate) fn clog_recovery_output(&self, number: u64) -> Result<()> {
        let Some(c) = &self.clog else {
            return Ok(());
        };
        let mut log = c.lock();
        let id = match log.recovery_job {
            Some(id) => id,
            None => {
                let id = log.start(Vec::new())?;
                log.recovery_job = Some(id);
                id
            }
        };
        log.output(id, number)
    }

    /// Ends the recovery's job after the manifest record naming its runs (`committed`), or
    /// after it failed.
    pub(crate) fn clog_end_recovery(
        &self,
        state: &mut super::State,
        committed: bool,
    ) -> Result<()> {
        let job = self
            .clog
            .as_ref()
            .and_then(|c| c.lock().recovery_job.take());
        self.clog_finish(state, job, committed)
    }

    /// Starts a logged job reading `inputs` (`None`: the design keeps no compaction log).
    pub(crate) fn clog_start(&self, inputs: Vec<u64>) -> Result<Option<u64>> {
        match &self.clog {
            Some(c) => c.lock().start(inputs).map(Some),
            None => Ok(None),
        }
    }

    /// Announces output run `number` of `job`, before it is created.
    pub(crate) fn clog_output(&self, job: Option<u64>, number: u64) -> Result<()> {
        match (&self.clog, job) {
            (Some(c), Some(id)) => c.lock().output(id, number),
            _ => Ok(()),
        }
    }

    /// Records that `job` persisted every output.
    pub(crate) fn clog_merged(&self, job: Option<u64>) -> Result<()> {
        match (&self.clog, job) {
            (Some(c), Some(id)) => c.lock().merged(id),
            _ => Ok(()),
        }
    }

    /// Ends `job`: committed (after its manifest record) or aborted. Call with the state lock
    /// held (`state`), which also rotates a large log when no job is running.
    pub(crate) fn clog_finish(
        &self,
        state: &mut super::State,
        job: Option<u64>,
        committed: bool,
    ) -> Result<()> {
        let (Some(c), Some(id)) = (&self.clog, job) else {
            return Ok(());
        };
        let mut log = c.lock();
        log.finish(id, committed)?;
        if log.wants_rotation() {
            // Runs that older versions still hold are freed later; the new log names them.
            let current: HashSet<u64> = state.versions.current().file_numbers().collect();
            state.live_versions.retain(|w| w.strong_count() > 0);
            let mut released: Vec<u64> = state
                .live_versions
                .iter()
                .filter_map(|w| w.upgrade())
                .flat_map(|v| v.file_numbers().collect::<Vec<_>>())
                .filter(|n| !current.contains(n))
                .collect();
            released.sort_unstable();
            released.dedup();
            let number = state.versions.new_file_number();
            log.rotate(number, released)?;
        }
        Ok(())
    }
}

/// What replaying the compaction logs decided.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Replay {
    /// Jobs that had not committed: their outputs are removed.
    pub discarded: u64,
    /// Jobs whose manifest record was durable but whose `Commit` was not: completed.
    pub redone: u64,
    /// Run numbers to remove (outputs of discarded jobs, inputs of committed ones, none of
    /// them named by the version).
    pub remove: Vec<u64>,
    /// Every run number the logs account for (announced outputs and inputs).
    pub accounted: HashSet<u64>,
}

#[derive(Default)]
struct Job {
    inputs: Vec<u64>,
    outputs: Vec<u64>,
    committed: bool,
    aborted: bool,
}

/// Reads the compaction logs `numbers` (oldest first) and decides, against the recovered
/// version's live runs, what each unfinished job leaves to do. A torn tail (a crash during an
/// append) ends a log; a damaged record followed by valid ones is corruption.
pub(crate) fn replay(
    fs: &dyn FileSystem,
    dir: &Path,
    numbers: &[u64],
    live: &HashSet<u64>,
) -> Result<Replay> {
    let mut jobs: BTreeMap<(u64, u64), Job> = BTreeMap::new();
    for &n in numbers {
        let path = clog_file_name(dir, n);
        let location = path.display().to_string();
        let mut reader = LogReader::new(fs.read_all(&path)?, location.clone());
        while let Some(payload) = reader.next_record()? {
            let record = Record::decode(&payload, &location)?;
            let unknown = |id: u64| {
                Error::corruption(
                    location.clone(),
                    format!("compaction log record for job {id}, which never started"),
                )
            };
            match record {
                Record::Start { id, inputs } => {
                    jobs.insert(
                        (n, id),
                        Job {
                            inputs,
                            ..Job::default()
                        },
                    );
                }
                Record::Output { id, number } => {
                    jobs.get_mut(&(n, id))
                        .ok_or_else(|| unknown(id))?
                        .outputs
                        .push(number);
                }
                Record::Merged { id } => {
                    jobs.get(&(n, id)).ok_or_else(|| unknown(id))?;
                }
                Record::Commit { id } => {
                    jobs.get_mut(&(n, id)).ok_or_else(|| unknown(id))?.committed = true
                }
                Record::Abort { id } => {
                    jobs.get_mut(&(n, id)).ok_or_else(|| unknown(id))?.aborted = true
                }
            }
        }
    }
    let mut out = Replay::default();
    for job in jobs.values() {
        out.accounted.extend(job.inputs.iter().chain(&job.outputs));
        let published =
            job.committed || (!job.aborted && job.outputs.iter().any(|n| live.contains(n)));
        if published {
            if !job.committed {
                out.redone += 1;
            }
            out.remove
                .extend(job.inputs.iter().filter(|n| !live.contains(n)));
        } else {
            if !job.aborted {
                out.discarded += 1;
            }
            out.remove
                .extend(job.outputs.iter().filter(|n| !live.contains(n)));
        }
    }
    out.remove.sort_unstable();
    out.remove.dedup();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::MemFs;

    fn setup() -> (Arc<dyn FileSystem>, PathBuf) {
        let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
        let dir = PathBuf::from("/db");
        fs.create_dir_all(&dir).unwrap();
        (fs, dir)
    }

    #[test]
    fn records_round_trip() {
        for r in [
            Record::Start {
                id: 7,
                inputs: vec![1, 300, u64::MAX],
            },
            Record::Start {
                id: 1,
                inputs: vec![],
            },
            Record::Output { id: 2, number: 99 },
            Record::Merged { id: 3 },
            Record::Commit { id: 4 },
            Record::Abort { id: 5 },
        ] {
            assert_eq!(Record::decode(&r.encode(), "t").unwrap(), r);
            let mut long = r.encode();
            long.push(0);
            assert!(
                Record::decode(&long, "t").is_err(),
                "{r:?} with a trailing byte"
            );
            let short = &r.encode()[..r.encode().len() - 1];
            assert!(Record::decode(short, "t").is_err(), "{r:?} cut short");
        }
        assert!(Record::decode(&[9, 1], "t").is_err(), "unknown tag");
    }

    /// Every combination of how far a job got, against whether the manifest named its outputs.
    #[test]
    fn replay_discards_or_redoes() {
        let (fs, dir) = setup();
        let mut log = CompactionLog::create(Arc::clone(&fs), &dir, 5, vec![]).unwrap();
        // Job 1: committed; inputs 10, 11 no longer live.
        let a = log.start(vec![10, 11]).unwrap();
        log.output(a, 20).unwrap();
        log.merged(a).unwrap();
        log.finish(a, true).unwrap();
        // Job 2: merged, manifest record durable (output 21 live), no commit: redo.
        let b = log.start(vec![12]).unwrap();
        log.output(b, 21).unwrap();
        log.merged(b).unwrap();
        // Job 3: half-merged, output 22 not live: discard.
        let c = log.start(vec![13]).unwrap();
        log.output(c, 22).unwrap();
        // Job 4: aborted.
        let d = log.start(vec![14]).unwrap();
        log.output(d, 23).unwrap();
        log.finish(d, false).unwrap();
        drop(log);
        let live: HashSet<u64> = [20, 21, 13, 14].into_iter().collect();
        let r = replay(&*fs, &dir, &[5], &live).unwrap();
        assert_eq!(r.redone, 1);
        assert_eq!(r.discarded, 1);
        assert_eq!(r.remove, vec![10, 11, 12, 22, 23]);
        for n in [10, 11, 12, 13, 14, 20, 21, 22, 23] {
            assert!(r.accounted.contains(&n), "{n} accounted");
        }
    }

    #[test]
    fn torn_tail_ends_the_log_and_damage_is_corruption() {
        let (fs, dir) = setup();
        let mut log = CompactionLog::create(Arc::clone(&fs), &dir, 1, vec![]).unwrap();
        let a = log.start(vec![3]).unwrap();
        log.output(a, 4).unwrap();
        log.output(a, 5).unwrap();
        drop(log);
        let path = clog_file_name(&dir, 1);
        let data = fs.read_all(&path).unwrap();
        // Torn last record: the job is still discarded, with the outputs announced before it.
        let mut f = fs.create(&path).unwrap();
        f.append(&data[..data.len() - 3]).unwrap();
        f.sync().unwrap();
        drop(f);
        let r = replay(&*fs, &dir, &[1], &HashSet::new()).unwrap();
        assert_eq!((r.discarded, r.remove.clone()), (1, vec![4]));
        // A flipped byte in the first record, followed by valid ones: corruption.
        let mut bad = data.clone();
        bad[8] ^= 0x40;
        let mut f = fs.create(&path).unwrap();
        f.append(&bad).unwrap();
        f.sync().unwrap();
        drop(f);
        let e = replay(&*fs, &dir, &[1], &HashSet::new()).unwrap_err();
        assert!(matches!(e, Error::Corruption { .. }), "{e}");
    }

    /// A crash at any mutating file-system operation of a rotation (the new log's create,
    /// appends, syncs and directory sync, the old log's removal), in every crash mode, leaves
    /// logs whose replay removes the released run and nothing live: with the old log, the new
    /// one, both, or the new one torn.
    #[test]
    fn a_crash_at_any_step_of_a_rotation_loses_no_released_run() {
        use crate::fs::{CrashMode, MemFs};
        let live: HashSet<u64> = [4].into_iter().collect();
        let mut crashed = 0;
        for ops in 0.. {
            let mem = MemFs::new();
            let fs: Arc<dyn FileSystem> = Arc::new(mem.clone());
            let dir = PathBuf::from("/db");
            fs.create_dir_all(&dir).unwrap();
            let mut log = CompactionLog::create(Arc::clone(&fs), &dir, 1, vec![]).unwrap();
            // Job: input 3 merged into 4, committed; an older version still holds 3.
            let a = log.start(vec![3]).unwrap();
            log.output(a, 4).unwrap();
            log.merged(a).unwrap();
            log.finish(a, true).unwrap();
            mem.freeze_after(ops);
            let rotated = log.rotate(9, vec![3]);
            drop(log);
            if !mem.is_frozen() {
                // The rotation finished before the crash point: every step was walked.
                rotated.unwrap();
                assert!(ops > 3, "a rotation takes several steps");
                break;
            }
            crashed += 1;
            for mode in [
                CrashMode::SyncedOnly,
                CrashMode::ProcessCrash,
                CrashMode::Random(ops),
                CrashMode::Random(ops + 1000),
            ] {
                let img = mem.crash(mode);
                let mut numbers: Vec<u64> = img
                    .file_names()
                    .iter()
                    .filter_map(|p| p.file_name()?.to_str()?.strip_suffix(".clog")?.parse().ok())
                    .collect();
                numbers.sort_unstable();
                assert!(!numbers.is_empty(), "ops {ops} {mode:?}: no log left");
                let r = replay(&img, &dir, &numbers, &live)
                    .unwrap_or_else(|e| panic!("ops {ops} {mode:?} {numbers:?}: {e}"));
                assert_eq!(r.remove, vec![3], "ops {ops} {mode:?} {numbers:?}");
            }
        }
        assert!(crashed > 3, "{crashed} crash points");
    }

    /// A record that finds the pool full is `NoSpace` with nothing appended: once room is
    /// freed, the failed job's `Abort` and later jobs append after it, and the log replays
    /// without damage.
    #[test]
    fn a_full_pool_leaves_the_log_readable() {
        use crate::fs::{PmFs, PmFsOpen, PmSpacePolicy};
        let dir = PathBuf::from("/db");
        let pool_options = tierkv_pm::PoolOptions {
            size: 1 << 20,
            chunk_size: 64 << 10,
            ..tierkv_pm::PoolOptions::default()
        };
        let pool = tierkv_pm::PmPool::create_crash_sim(&pool_options, false).unwrap();
        let pmfs = PmFs::open(pool, "p", PmFsOpen::Create(7)).unwrap();
        pmfs.set_space_policy(PmSpacePolicy::default());
        let fs: Arc<dyn FileSystem> = Arc::new(pmfs.clone());
        let mut log = CompactionLog::create(Arc::clone(&fs), &dir, 1, vec![]).unwrap();
        let a = log.start(vec![3]).unwrap();
        let table = dir.join("000100.sst");
        let mut w = pmfs.create(&table).unwrap();
        while w.append(&[0u8; 4096]).is_ok() {}
        drop(w);
        // Outputs until a record finds no room (records of a few hundred bytes, so that the
        // one that fails spans a chunk boundary).
        let mut n = 10;
        let pad = "x".repeat(300);
        loop {
            let record = Record::Start {
                id: 1000 + n,
                inputs: pad.bytes().map(u64::from).collect(),
            };
            match log.append(&record) {
                Ok(()) => {}
                Err(Error::NoSpace(_)) => break,
                Err(e) => panic!("{e}"),
            }
            log.output(a, n).unwrap();
            n += 1;
            assert!(n < 100_000, "the pool never filled");
        }
        fs.remove(&table).unwrap();
        log.finish(a, false).unwrap();
        let b = log.start(vec![5]).unwrap();
        log.output(b, 7).unwrap();
        log.merged(b).unwrap();
        log.finish(b, true).unwrap();
        drop(log);
        let live: HashSet<u64> = [7].into_iter().collect();
        let r = replay(&*fs, &dir, &[1], &live).unwrap();
        let mut want: Vec<u64> = (10..n).collect();
        want.push(5);
        want.sort_unstable();
        assert_eq!(r.remove, want);
        assert!(r.discarded >= 1, "{:?}", r.discarded);
    }

    #[test]
    fn rotation_carries_released_runs() {
        let (fs, dir) = setup();
        let mut log = CompactionLog::create(Arc::clone(&fs), &dir, 1, vec![]).unwrap();
        let a = log.start(vec![3]).unwrap();
        log.output(a, 4).unwrap();
        assert!(!log.wants_rotation(), "a job is running");
        log.finish(a, true).unwrap();
        log.rotate(9, vec![3]).unwrap();
        assert_eq!(log.number(), 9);
        assert!(!fs.exists(&clog_file_name(&dir, 1)), "old log removed");
        drop(log);
        let live: HashSet<u64> = [4].into_iter().collect();
        let r = replay(&*fs, &dir, &[9], &live).unwrap();
        assert_eq!(r.remove, vec![3]);
        assert_eq!((r.discarded, r.redone), (0, 0));
    }
}
