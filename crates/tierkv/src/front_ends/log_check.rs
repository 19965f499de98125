//! `tierkv check`'s reading of the live logs, for the front ends that keep them: every record
//! of the live WALs decoded (on every tier), only the newest allowed a torn tail; a PM
//! memtable's nodes, LAB-DB's key and value arrays with its WAL buffer, and thread logs read
//! as their recovery reads them.

use super::WalLink;
use crate::fs::FileSystem;
use crate::log::LogReader;
use crate::pipeline::{CheckContext, CheckReport};
use crate::version::{log_file_name, parse_file_name, FileKind};
use crate::write_batch::decode_batch;
use crate::{Error, Result};
use std::sync::Arc;

/// Decodes every record of the live WALs (on every tier); only the newest may end in a torn
/// tail.
pub(crate) fn check_logs(cx: &CheckContext<'_>, report: &mut CheckReport) -> Result<()> {
    let (dir, versions, options, pm) = (cx.dir, cx.versions, cx.options, cx.pm);
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
    // Point in time, as recovery (`front_ends/wal_memtable/recovery.rs`): a cut (damaged bytes, or a gap
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
