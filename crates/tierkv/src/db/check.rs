//! Offline verification (`tierkv check`): reads everything, writes nothing.

use crate::format::compare_internal;
use crate::options::Options;
use crate::runs::OpenRun;
use crate::runs::TableCache;
use crate::sst::BlockCache;
use crate::stats::{Counters, IoPurpose};
use crate::version::FileMetaData;
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
    let stages = options.design.stages(options);
    for (stage, _, f) in version.runs() {
        // A run its stage reads otherwise than whole (a row) is checked by its stage.
        let entries = match stages[stage].check_run(&cache, stage, f) {
            Some(checked) => checked?,
            None => check_run(&cache, stage, f, &mut verified)?,
        };
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
    for (i, stage) in stages.iter().enumerate() {
        stage.check(&cx, i, &mut report)?;
    }
    // What the front end keeps: its own structures, then its live logs (every record decoded).
    front.check(&cx, &mut report)?;
    crate::front_ends::check_logs(&cx, &mut report)?;
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
