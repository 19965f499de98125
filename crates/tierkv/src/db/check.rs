//! Offline verification (`tierkv check`): reads everything, writes nothing.

use crate::format::{compare_internal, user_key};
use crate::front_ends::WalLink;
use crate::fs::FileSystem;
use crate::log::LogReader;
use crate::options::Options;
use crate::parray::live::dead_entries;
use crate::runs::OpenRun;
use crate::runs::TableCache;
use crate::sst::BlockCache;
use crate::stats::{Counters, IoPurpose};
use crate::version::{log_file_name, parse_file_name, FileKind, FileMetaData, RowInfo, VersionSet};
use crate::write_batch::decode_batch;
use crate::{Error, Result};
use std::path::Path;
use std::sync::Arc;

pub use crate::pipeline::CheckReport;

pub(crate) fn check(dir: &Path, options: &Options) -> Result<CheckReport> {
    let counters = Arc::new(Counters::default());
    if !options.fs.exists(&crate::version::current_file_name(dir)) {
        return Err(Error::NotFound(format!("no database in {}", dir.display())));
    }
    // A database in use changes under the check (files appear and go): refuse it. The lock
    // is shared and creates nothing, and the pool is mapped private: a check writes no byte,
    // so it runs on a read-only or full file system.
    let _lock = options
        .fs
        .lock_shared(&dir.join("LOCK"))
        .map_err(|e| match e {
            Error::InvalidArgument(_) => Error::InvalidArgument(format!(
                "database {} is in use (its LOCK is held); check it when it is closed",
                dir.display()
            )),
            other => other,
        })?;
    let options = &Options {
        fs: Arc::new(crate::fs::OverlayFs::new(Arc::clone(&options.fs))),
        ..options.clone()
    };
    let (versions, pm) = super::recovery::recover_versions(
        dir,
        options,
        Arc::clone(&counters),
        super::recovery::PoolAccess::Inspect,
    )?;
    let version = versions.current();
    version.check_invariants()?;
    let present = super::recovery::list_files(&*options.fs, pm.as_ref(), dir)?;
    super::recovery::verify_files(dir, &versions, &present, &*options.fs, pm.as_ref())?;
    let front = crate::front_ends::build(options.design.spec().front_end, options);
    front.verify(dir, &versions, &present)?;
    let cache = TableCache::new(
        dir.to_path_buf(),
        Arc::clone(&options.fs),
        pm.as_ref().map(|p| Arc::clone(&p.fs)),
        BlockCache::new(1 << 20),
        counters,
        options.max_open_files,
    );
    let mut report = CheckReport::default();
    // The files whose blocks were verified, for runs made of part of a file.
    let mut verified = std::collections::HashSet::new();
    for (stage, _, f) in version.runs() {
        let entries = check_run(&cache, stage, f, &mut verified)?;
        report.tables_checked += 1;
        report.entries_checked += entries;
    }
    // What each stage holds beyond its runs' blocks: pointers between runs (Skip-Array Tree
    // floors, row hints), the structures it keeps in the pool (a global index, L0 trees).
    let cx = crate::pipeline::CheckContext {
        dir,
        options,
        pm: pm.as_ref(),
        versions: &versions,
        tables: &cache,
    };
    for (i, stage) in options.design.stages(options).iter().enumerate() {
        stage.check(&cx, i, &mut report)?;
    }
    // ListDB's heap: every list walked in order, every node's checksums, every log entry
    // still to replay.
    if let Some((heap, log)) = pm.as_ref().and_then(|p| p.lists.lock().take()) {
        report.tables_checked += 1 + heap.lists().l0.len();
        report.entries_checked += heap.verify()?;
        for at in &log {
            heap.entry_of(*at)?;
        }
        report.wal_records_checked += log.len() as u64;
    }
    check_logs(dir, &versions, options, pm.as_ref(), &mut report)?;
    if let Some(pm) = &pm {
        report.pm_chunks = pm.pool.chunk_count() - 1;
        report.pm_free_chunks = pm.pool.free_chunks();
    }
    drop(pm);
    report.next_open_read_only = probe_recovery(dir, options)?;
    Ok(report)
}

/// Runs the recovery the next open will run, in memory (a read-only open without headroom:
/// exactly the space a writable open has), and returns its out-of-space error, if any.
fn probe_recovery(dir: &Path, options: &Options) -> Result<Option<String>> {
    let probe = Options {
        read_only: true,
        ..options.clone()
    };
    match super::recovery::open_with(dir, probe, false) {
        Ok(_) => Ok(None),
        Err(e @ Error::NoSpace(_)) => Ok(Some(e.to_string())),
        Err(e) => Err(e),
    }
}

/// Reads and verifies every block of run `f` of `stage` and checks it against the manifest
/// (entry count, first and last keys); returns its entry count. A run made of part of a file
/// verifies the file's blocks only if no run before it did (`verified`: the files done).
fn check_run(
    cache: &TableCache,
    stage: usize,
    f: &FileMetaData,
    verified: &mut std::collections::HashSet<u64>,
) -> Result<u64> {
    if let Some(info) = &f.row {
        return check_row(cache, stage, f, info);
    }
    let table = cache.open(f, crate::stats::Part::Stage(stage))?;
    // The whole file's blocks are verified; a run made of part of a file counts its own
    // entries below.
    let verified = match &table {
        OpenRun::Sst(t) => Some(t.verify()?),
        OpenRun::Array(a) => Some(a.verify(IoPurpose::Recovery)?),
        OpenRun::Slice(t, _) => {
            if verified.insert(f.file_number()) {
                t.verify()?;
            }
            None
        }
    };
    let location = table.path().display().to_string();
    let bad = |why: String| Err(Error::corruption(location.clone(), why));
    let mut it = table.iter(IoPurpose::Recovery, false);
    it.seek_to_first();
    if it.valid() && compare_internal(it.key(), &f.smallest).is_ne() {
        return bad("first key differs from the manifest's smallest key".into());
    }
    let mut last = Vec::new();
    let mut counted = 0;
    while it.valid() {
        last.clear();
        last.extend_from_slice(it.key());
        counted += 1;
        it.next();
    }
    it.status()?;
    let entries = verified.unwrap_or(counted);
    if entries != f.num_entries {
        return bad(format!(
            "{entries} entries, the manifest recorded {}",
            f.num_entries
        ));
    }
    if entries > 0 && compare_internal(&last, &f.largest).is_ne() {
        return bad("last key differs from the manifest's largest key".into());
    }
    Ok(entries)
}

/// [`check_run`] for a row of a row container: its live entries are read and checked (every
/// one outside the row's dead ranges, the first and last against the manifest when live), its
/// dead ones only by their index entries (their data pages may be freed).
fn check_row(cache: &TableCache, stage: usize, f: &FileMetaData, info: &RowInfo) -> Result<u64> {
    let array = cache.array_for(f, crate::stats::Part::Stage(stage), IoPurpose::Recovery)?;
    let dead = dead_entries(info, &array, IoPurpose::Recovery)?;
    let last = array.len().saturating_sub(1);
    let location = array.path().display().to_string();
    let bad = |why: String| Error::corruption(location.clone(), why);
    let entries = array.verify_live(
        &dead,
        &mut |i, key| {
            if info.is_dead(user_key(key)) {
                return Err(bad(format!("live entry {i} has a key in a dead range")));
            }
            if (i == 0 && compare_internal(key, &f.smallest).is_ne())
                || (i == last && compare_internal(key, &f.largest).is_ne())
            {
                return Err(bad(format!(
                    "entry {i} differs from the manifest's smallest or largest key"
                )));
            }
            Ok(())
        },
        IoPurpose::Recovery,
    )?;
    if entries != f.num_entries {
        return Err(bad(format!(
            "{entries} entries, the manifest recorded {}",
            f.num_entries
        )));
    }
    Ok(entries)
}

/// Decodes every record of the live WALs (on every tier); only the newest may end in a torn
/// tail.
fn check_logs(
    dir: &Path,
    versions: &VersionSet,
    options: &Options,
    pm: Option<&super::inner::PmTier>,
    report: &mut CheckReport,
) -> Result<()> {
    let mut logs: Vec<(u64, Arc<dyn FileSystem>)> = Vec::new();
    let tiers = std::iter::once(Arc::clone(&options.fs)).chain(pm.map(|p| Arc::clone(&p.fs)));
    for fs in tiers {
        for name in fs.list(dir)? {
            if let Some((FileKind::Log, n)) = parse_file_name(&name) {
                if n >= versions.log_number {
                    logs.push((n, Arc::clone(&fs)));
                }
            }
        }
    }
    logs.sort_unstable_by_key(|(n, _)| *n);
    if options.design.memtable_on_pm() {
        // SLM-DB's persistent memtables: every linked node read and checked, read-only.
        for (n, _) in &logs {
            let pm = pm.ok_or_else(|| {
                Error::InvalidArgument("a PM memtable design needs its PM pool".to_string())
            })?;
            let path = log_file_name(dir, *n);
            let (table, _) = crate::pmtable::PmTable::open(&pm.pmfs, &path, *n, false)?;
            table.verify()?;
            report.wal_files_checked += 1;
            report.wal_records_checked += table.len();
        }
        return Ok(());
    }
    if crate::front_ends::lab_log_enabled(options) {
        // LAB-DB's log: key arrays with their value arrays, and the PM WAL buffer, read as
        // recovery reads them; the groups must chain.
        let pm = pm.ok_or_else(|| Error::InvalidArgument("LAB-DB needs its PM pool".into()))?;
        let numbers: Vec<u64> = logs.iter().map(|(n, _)| *n).collect();
        let log = crate::front_ends::scan_lab_log(
            dir,
            &*options.fs,
            &*pm.fs,
            &numbers,
            versions.log_number,
        )?;
        log.check_chain()?;
        report.wal_files_checked += log.files;
        report.wal_records_checked += log.records;
        report.wal_torn_tail_bytes = log.torn_tail_bytes;
        return Ok(());
    }
    // Thread logs (FluidKV's FastStore): each read whole, every record decoded, each one's torn
    // tail its own; recovery merges them by sequence number.
    let mut thread_logs = false;
    for (n, fs) in &logs {
        let path = log_file_name(dir, *n);
        let mut reader = LogReader::new(fs.read_all(&path)?, path.display().to_string());
        thread_logs |= reader
            .next_record()?
            .is_some_and(|r| crate::front_ends::thread_log_start(&r).is_some());
    }
    if thread_logs {
        let (mut links, mut start) = (Vec::new(), None::<u64>);
        for (n, fs) in &logs {
            let path = log_file_name(dir, *n);
            let location = path.display().to_string();
            let mut reader = LogReader::new(fs.read_all(&path)?, location.clone());
            report.wal_files_checked += 1;
            let (mut first, mut log_start) = (true, None);
            while let Some(rec) = reader.next_record()? {
                if std::mem::take(&mut first) {
                    if let Some(s) = crate::front_ends::thread_log_start(&rec) {
                        log_start = Some(s);
                        continue;
                    }
                    if let Some(link) = WalLink::parse(&rec) {
                        links.push(link);
                        continue;
                    }
                }
                let batch = decode_batch(&rec, "log record")
                    .map_err(|e| Error::corruption(location.clone(), e.to_string()))?;
                log_start.get_or_insert(batch.first_sequence - batch.unlogged_before);
                for op in batch.ops {
                    op.map_err(|e| Error::corruption(location.clone(), e.to_string()))?;
                }
                report.wal_records_checked += 1;
            }
            report.wal_torn_tail_bytes += reader.tail().dropped_bytes;
            if let Some(s) = log_start {
                start = Some(start.map_or(s, |t| t.min(s)));
            }
        }
        // Recovery replays nothing past a live WAL emptied whole (its link says so).
        let hole = crate::front_ends::links_past_start(&links, versions.log_number, start);
        if hole.is_some() {
            report.wal_files_ignored += logs.len();
        }
        return Ok(());
    }
    // Point in time, as recovery (`front_ends/wal_recovery.rs`): a cut (damaged bytes, or a gap
    // in the sequence numbers) is a power failure's unless a synced write follows it.
    let synced_after = |from: usize| -> Result<Option<String>> {
        for (n, fs) in &logs[from..] {
            let later = log_file_name(dir, *n);
            let shown = later.display().to_string();
            if crate::front_ends::holds_synced_record(fs.read_all(&later)?, &shown) {
                return Ok(Some(shown));
            }
        }
        Ok(None)
    };
    let mut next_seq: Option<u64> = None;
    for (i, (n, fs)) in logs.iter().enumerate() {
        let path = log_file_name(dir, *n);
        let location = path.display().to_string();
        let mut reader = LogReader::new(fs.read_all(&path)?, location.clone());
        report.wal_files_checked += 1;
        let mut first_record = true;
        while let Some(rec) = reader.next_record()? {
            if let Some(link) = WalLink::parse(&rec).filter(|_| first_record) {
                first_record = false;
                // The WAL before held records that are gone (emptied or cut at a record
                // boundary): a cut, as a gap in the sequence numbers is.
                if link.shows_loss(versions.log_number, next_seq.map_or(0, |n| n - 1)) {
                    if let Some(shown) = synced_after(i)? {
                        return Err(Error::corruption(
                            log_file_name(dir, link.prev_number).display().to_string(),
                            format!(
                                "this WAL lost writes up to sequence {} ({location} says) \
                                 before a synced write in {shown}",
                                link.prev_last
                            ),
                        ));
                    }
                    report.wal_files_ignored = logs.len() - i;
                    return Ok(());
                }
                continue;
            }
            first_record = false;
            let batch = decode_batch(&rec, "WAL record")
                .map_err(|e| Error::corruption(location.clone(), e.to_string()))?;
            // Unlogged writes between two records took the sequence numbers the later one
            // counts: not a gap.
            let expected = next_seq.map(|e| e.saturating_add(batch.unlogged_before));
            if expected.is_some_and(|e| e != batch.first_sequence) {
                // The gap's own WAL is scanned whole: a synced record in it also proves damage.
                if let Some(shown) = synced_after(i)? {
                    return Err(Error::corruption(
                        location,
                        format!("writes are missing before a synced write in {shown}"),
                    ));
                }
                // This WAL, from the gap on, and every later one.
                report.wal_files_ignored = logs.len() - i;
                return Ok(());
            }
            next_seq = Some(batch.first_sequence + u64::from(batch.count));
            for op in batch.ops {
                op.map_err(|e| Error::corruption(location.clone(), e.to_string()))?;
            }
            report.wal_records_checked += 1;
        }
        let tail = reader.tail();
        if tail.dropped_bytes > 0 {
            report.wal_torn_tail_bytes = tail.dropped_bytes;
            if let Some(shown) = synced_after(i + 1)? {
                return Err(Error::corruption(
                    location,
                    format!(
                        "damaged tail in a WAL that a newer WAL follows, and {shown} holds a \
                         write acknowledged with sync after it"
                    ),
                ));
            }
            report.wal_files_ignored = logs.len() - i - 1;
            break;
        }
    }
    Ok(())
}
