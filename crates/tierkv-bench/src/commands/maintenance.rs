//! `tierkv check` (with its readable report, [`format_check_report`]), `tierkv repair` and
//! `tierkv grow-pool`.

use super::*;

/// The lines of `tierkv check`'s report: one figure a line, then notes on what the next open
/// will do about what was found.
pub fn format_check_report(db: &Path, design: &str, r: &CheckReport) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "OK: no damage found in {} (design {design})",
        db.display()
    );
    for (what, n) in [
        ("tables checked", r.tables_checked as u64),
        ("entries checked", r.entries_checked),
        ("pointers checked", r.pointers_checked),
        ("WAL files checked", r.wal_files_checked as u64),
        ("WAL records checked", r.wal_records_checked),
        ("WAL torn tail bytes", r.wal_torn_tail_bytes),
        ("WAL files ignored", r.wal_files_ignored as u64),
        ("index keys checked", r.index_keys_checked),
        ("index tables to adopt", r.index_tables_to_adopt as u64),
    ] {
        let _ = writeln!(o, "{:<23}{n}", format!("{what}:"));
    }
    if r.wal_torn_tail_bytes > 0 {
        let _ = writeln!(
            o,
            "note: the WAL ends in {} torn bytes (a write that was never acknowledged, or \
             unsynced writes cut by a power failure); the next open drops them",
            r.wal_torn_tail_bytes
        );
    }
    if r.wal_files_ignored > 0 {
        let _ = writeln!(
            o,
            "note: {} WAL files follow a cut in the log and hold only writes acknowledged \
             without sync; the next open ignores them",
            r.wal_files_ignored
        );
    }
    if r.pm_chunks > 0 {
        let _ = writeln!(
            o,
            "{:<23}{} of {}",
            "PM chunks free:", r.pm_free_chunks, r.pm_chunks
        );
    }
    if let Some(reason) = &r.next_open_read_only {
        let _ = writeln!(
            o,
            "note: the next open cannot recover with write access ({reason}): it will open \
             read-only, every key readable, until the pool is grown (`tierkv grow-pool --db \
             {} --size BYTES`) or space is freed",
            db.display()
        );
    }
    if r.index_tables_to_adopt > 0 {
        let _ = writeln!(
            o,
            "note: the global index names {} tables the manifest does not (a crash between \
             their index updates and their manifest record); the next open adopts them",
            r.index_tables_to_adopt
        );
    }
    o
}

/// `tierkv check`: verifies every checksum and invariant; prints the report. Damage is an error
/// that says so (and the caller exits non-zero).
pub fn check(args: &DbArgs, out: &mut dyn Write) -> EngineResult<()> {
    let options = args.options(false)?;
    let report = Db::check(&args.db, options.clone()).map_err(|e| {
        if e.is_corruption() {
            format!("check of {} found damage: {e}", args.db.display())
        } else {
            format!("check of {} failed: {e}", args.db.display())
        }
    })?;
    write!(
        out,
        "{}",
        format_check_report(&args.db, options.design.name(), &report)
    )?;
    Ok(())
}

/// `tierkv repair`: points `CURRENT` at the newest manifest from which the database opens
/// consistently; prints what it did and the manifests it passed over.
pub fn repair(args: &DbArgs, out: &mut dyn Write) -> EngineResult<()> {
    // Each candidate manifest says what the database was created with; the identity check of
    // each one guards the pool.
    if args.read_only {
        return Err(
            "repair rewrites CURRENT (and IDENTITY): it cannot run with --read_only".into(),
        );
    }
    let options = args.options(false)?;
    let report = Db::repair(&args.db, options)
        .map_err(|e| format!("repair of {} failed: {e}", args.db.display()))?;
    for (name, why) in &report.rejected {
        writeln!(out, "passed over {name}: {why}")?;
    }
    if report.changed {
        writeln!(out, "CURRENT now names {}", report.manifest)?;
    } else {
        writeln!(
            out,
            "nothing to repair: CURRENT names {}, which opens consistently",
            report.manifest
        )?;
    }
    Ok(())
}

/// `tierkv grow-pool`: grows the closed database's PM pool to `size` bytes; prints the pool
/// and both sizes.
pub fn grow_pool(args: &DbArgs, size: u64, out: &mut dyn Write) -> EngineResult<()> {
    if args.read_only {
        return Err("grow-pool writes the pool: it cannot run with --read_only".into());
    }
    let options = args.options(false)?;
    let pool = args.pool_path(&options, args.created().as_ref());
    let old = Db::grow_pool(&args.db, options, size)
        .map_err(|e| format!("growing the pool of {} failed: {e}", args.db.display()))?;
    let pool = pool.map_or_else(|| "the pool".to_string(), |p| p.display().to_string());
    writeln!(out, "grew {pool} from {old} to {size} bytes")?;
    Ok(())
}
