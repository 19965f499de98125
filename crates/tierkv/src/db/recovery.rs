//! Opening a database: create or recover the version set, check it against the files, and let
//! the front end recover.
//!
//! Order: `CURRENT` -> manifest (every edit; design, format and identity checked) -> the PM
//! pool, which must carry the same identity (for a manifest in the pool: `CURRENT`, which then
//! names the pool, the database's identity and design -> the pool -> the manifest, whose
//! identity must be `CURRENT`'s; [`recover_versions`]) -> check that every run the version names exists
//! with its recorded size, and that the files the front end's durable state needs exist (the
//! oldest live WAL) -> delete what no durable state references (runs of unfinished flushes and
//! compactions, retired logs, temporary files; this frees space before recovery needs any) ->
//! the front end's recovery (the WAL front end: replay into stage 0, new manifest, new WAL; see
//! `front_ends/wal_memtable/recovery.rs`).
//!
//! Manifest damage: a torn last manifest record is a commit that never happened, which is only
//! harmless if nothing it published was relied on. The checks above find a version that lost
//! records which were durable once (a missing run or oldest live WAL): that is corruption,
//! reported before anything is deleted.
//!
//! A directory that holds database files but no `CURRENT` is never taken for a new database
//! (only the leftovers of a creation that stopped before `CURRENT` existed are); see
//! [`repair`] for pointing `CURRENT` at the newest valid manifest.

use super::clog::{self, CompactionLog};
use super::inner::{DbInner, PmTier, State};
use super::owner;
use super::SnapshotList;
use crate::error::{Error, Result};
use crate::fs::{
    min_pool_chunks, FileSystem, PmFs, PmFsOpen, PmSpacePolicy, PosixFs, MANIFEST_CHUNKS,
    POOL_OVERHEAD_CHUNKS, SPARE_CHUNKS,
};
use crate::log::LogReader;
use crate::options::Options;
use crate::pipeline::PoolStructure;
use crate::runs::TableCache;
use crate::sst::BlockCache;
use crate::stats::Counters;
use crate::tier::Tier;
use crate::version::{
    current_file_name, new_identity, parse_file_name, pool_path_to_record, read_current,
    read_manifest_creation_fields, run_file_name, CreationFields, Current, FileKind, VersionEdit,
    VersionSet,
};
use parking_lot::{Condvar, Mutex};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use tierkv_pm::{PmPool, PoolOptions};

/// Every file of the database on every tier: (kind, number, tier) -> name.
pub(crate) type Present = HashMap<(FileKind, u64, Tier), String>;

pub(crate) fn open(dir: &Path, options: Options) -> Result<DbInner> {
    open_with(dir, options, true)
}

/// [`open`]; `headroom`: a read-only open may use memory for chunks a full pool lacks (off:
/// the open needs exactly the space a writable open would, which `check` probes).
pub(crate) fn open_with(dir: &Path, mut options: Options, headroom: bool) -> Result<DbInner> {
    options.validate()?;
    if options.read_only {
        // Every change the open makes stays in memory; see `Options::read_only`.
        options.create_if_missing = false;
        options.error_if_exists = false;
        options.fs = Arc::new(crate::fs::OverlayFs::new(Arc::clone(&options.fs)));
    }
    let options = crate::options::with_ssd_model(options);
    let fs = Arc::clone(&options.fs);
    if options.create_if_missing {
        fs.create_dir_all(dir)?;
    } else if !fs.exists(dir) {
        return Err(Error::NotFound(format!(
            "database directory {}",
            dir.display()
        )));
    }
    let lock = fs.lock(&dir.join("LOCK"))?;
    let counters = Arc::new(Counters::default());
    counters.jobs.lock().start_clock();
    let mut pool_moved = false;
    let (mut versions, pm) = match classify_directory(&*fs, dir)? {
        DirState::Existing => {
            if options.error_if_exists {
                return Err(Error::InvalidArgument(format!(
                    "database {} already exists",
                    dir.display()
                )));
            }
            let access = PoolAccess::of(&options, headroom);
            let (mut versions, pm) =
                recover_versions(dir, &options, Arc::clone(&counters), access)?;
            if options.pm.path.is_some() {
                // The pool was found, bound to this database, at the path given: record it
                // (logged once the open is done, below).
                let given = pool_path_to_record(dir, &options);
                pool_moved = given.as_deref() != versions.pm_path();
                versions.set_pm_path(given);
            }
            let (tier, place) = manifest_place(&options, pm.as_ref());
            versions.set_manifest_place(tier, place);
            versions.set_manifest_roll_bytes(manifest_roll_bytes(tier, pm.as_ref()));
            (versions, pm)
        }
        DirState::New {
            leftovers,
            pool_in_dir,
        } => {
            if !options.create_if_missing {
                let why = if options.read_only {
                    "a read-only open never creates one"
                } else {
                    "create_if_missing is false"
                };
                return Err(Error::NotFound(format!(
                    "no database in {} ({why})",
                    dir.display()
                )));
            }
            if pool_in_dir && !options.design.uses_pm(&options) {
                return Err(lost_current(
                    dir,
                    &format!(
                        "a PM pool (pm.pool) but no CURRENT file, and design {} keeps no pool",
                        options.design
                    ),
                ));
            }
            let identity = new_identity();
            // The pool first: a pool that holds another database's data refuses the creation
            // before any leftover is removed.
            let pm = open_pm(
                dir,
                &options,
                PmFsOpen::Create(identity),
                PoolAccess::Write,
                None,
            )?;
            for name in leftovers {
                fs.remove(&dir.join(name))?;
            }
            let place = manifest_place(&options, pm.as_ref());
            let tier = place.0;
            let mut versions =
                VersionSet::create(dir, &options, identity, Arc::clone(&counters), place)?;
            versions.set_manifest_roll_bytes(manifest_roll_bytes(tier, pm.as_ref()));
            (versions, pm)
        }
    };
    owner::check_identity_file(&*fs, dir, versions.identity())?;
    if let Some(pm) = &pm {
        if let Some(path) = &pm.path {
            owner::claim_pool(&*fs, dir, &pm.pool, path, options.pm.path.is_some())?;
        }
    }
    owner::write_identity_file(&*fs, dir, versions.identity())?;
    // A new epoch for this open, in the pool first (pending); the manifest records it below.
    if let Some(pm) = &pm {
        let epoch = owner::raise_pool_epoch(&pm.pool, versions.pool_epoch())?;
        versions.set_pool_epoch(epoch);
    }
    let front = crate::front_ends::build(options.design.spec().front_end, &options);
    let stages = options.design.stages(&options);
    // One block cache: the tables' blocks and LAB-DB's value pages share its budget.
    let block_cache = BlockCache::new(options.block_cache_bytes);
    let present = list_files(&*fs, pm.as_ref(), dir)?;
    verify_files(dir, &versions, &present, &*fs, pm.as_ref())?;
    front.verify(dir, &versions, &present)?;
    for (_, n, _) in present.keys() {
        versions.mark_file_number_used(*n);
    }
    // The structures the stages keep in the pool (SLM-DB's global index, LAB-DB's L0 trees):
    // attached, their DRAM state rebuilt, and the tables they name that the manifest lacks
    // adopted, before anything unreferenced is swept.
    for stage in &stages {
        stage.attach(&mut crate::pipeline::AttachContext {
            dir,
            options: &options,
            fs: &fs,
            pm: pm.as_ref(),
            versions: &mut versions,
            counters: &counters,
            block_cache: &block_cache,
        })?;
    }
    let clog = recover_compaction_log(
        dir,
        &options,
        &mut versions,
        &present,
        &*fs,
        pm.as_ref(),
        &*front,
        &counters,
    )?;
    let table_cache = Arc::new(TableCache::new(
        dir.to_path_buf(),
        Arc::clone(&fs),
        pm.as_ref().map(|p| Arc::clone(&p.fs)),
        block_cache,
        Arc::clone(&counters),
        options.max_open_files,
    ));
    let state = State::new(versions, &*front);
    let inner = DbInner {
        dir: dir.to_path_buf(),
        fs: Arc::clone(&fs),
        pm,
        counters,
        table_cache,
        front,
        stages,
        state: Mutex::new(state),
        clog: clog.map(Mutex::new),
        bg_cv: Condvar::new(),
        last_sequence: AtomicU64::new(0),
        snapshots: Arc::new(SnapshotList::default()),
        options,
        _lock: lock,
    };
    inner.front.recover(&inner, &present)?;
    // A design that logs no version edit of its own (ListDB) must still record where its pool
    // now is, or the next open without the path goes back to the old one, and the pool's new
    // epoch (which any edit of the open carried already); then the pool's pending mark goes.
    let mut state = inner.state.lock();
    if pool_moved || !state.versions.pool_epoch_logged() {
        let edit = VersionEdit {
            pm_path: state.versions.pm_path().map(Path::to_path_buf),
            ..VersionEdit::default()
        };
        state.versions.log_and_apply(edit)?;
    }
    drop(state);
    if let Some(pm) = &inner.pm {
        owner::confirm_pool_epoch(&pm.pool)?;
    }
    Ok(inner)
}

/// Reads `CURRENT`, then the manifest it names and the PM pool, in the order the manifest's
/// place needs: a manifest in the directory first (it says where the pool is and which
/// database it must belong to), a manifest in the pool after the pool (`CURRENT` says both).
/// `access`: how the pool is opened. Writes nothing.
pub(crate) fn recover_versions(
    dir: &Path,
    options: &Options,
    counters: Arc<Counters>,
    access: PoolAccess,
) -> Result<(VersionSet, Option<PmTier>)> {
    let fs = Arc::clone(&options.fs);
    let current = read_current(&*fs, dir, &counters)?;
    match &current {
        Current::Directory(_) => {
            let versions = VersionSet::recover(dir, options, counters, &current, fs)?;
            let how = PmFsOpen::Existing(versions.identity());
            let pm = open_pm(dir, options, how, access, versions.pm_path())?;
            if let Some(pm) = &pm {
                owner::check_pool_epoch(&pm.pool, &pool_location(pm), versions.pool_epoch())?;
            }
            Ok((versions, pm))
        }
        Current::Pool {
            design,
            identity,
            pool,
            ..
        } => {
            if design != options.design.name() {
                return Err(Error::InvalidArgument(format!(
                    "database {} was created with design {design:?}, opened with {:?}",
                    dir.display(),
                    options.design.name()
                )));
            }
            let how = PmFsOpen::Existing(*identity);
            let pm = open_pm(dir, options, how, access, pool.as_deref())?.ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "database {} keeps its manifest in its PM pool, but design {} uses no pool \
                     under these options",
                    dir.display(),
                    options.design
                ))
            })?;
            let pm_fs = Arc::clone(&pm.fs);
            let versions = VersionSet::recover(dir, options, counters, &current, pm_fs)?;
            owner::check_pool_epoch(&pm.pool, &pool_location(&pm), versions.pool_epoch())?;
            Ok((versions, Some(pm)))
        }
    }
}

/// How errors name the pool of `pm`.
fn pool_location(pm: &PmTier) -> String {
    pm.path.as_ref().map_or_else(
        || "PM pool (given)".to_string(),
        |p| p.display().to_string(),
    )
}

/// Where a manifest written under `options` goes: the pool's file system with
/// `pm.manifest_on_pm` (see [`Options::manifest_tier`]), else the directory's.
fn manifest_place(options: &Options, pm: Option<&PmTier>) -> (Tier, Arc<dyn FileSystem>) {
    match (options.manifest_tier(), pm) {
        (Tier::Pm, Some(pm)) => (Tier::Pm, Arc::clone(&pm.fs)),
        _ => (Tier::Ssd, Arc::clone(&options.fs)),
    }
}

/// When a manifest on `tier` is replaced by a fresh snapshot: in the pool at a chunk's data
/// (it then fits the chunks the pool keeps for it, the live one and the next), in the
/// directory at [`crate::version::DEFAULT_MANIFEST_ROLL_BYTES`].
fn manifest_roll_bytes(tier: Tier, pm: Option<&PmTier>) -> u64 {
    match (tier, pm) {
        (Tier::Pm, Some(pm)) => pm.pmfs.data_per_chunk(),
        _ => crate::version::DEFAULT_MANIFEST_ROLL_BYTES,
    }
}

/// What the database in `dir` was created with, from the first record of its live manifest;
/// needs no options. A manifest in the PM pool is read through the pool `CURRENT` names,
/// opened without its lock and without writing (at `given` if set).
pub(crate) fn describe(
    dir: &Path,
    fs: &dyn FileSystem,
    given: Option<&Path>,
) -> Result<CreationFields> {
    let current = read_current(fs, dir, &Counters::default())?;
    let name = dir.join(current.manifest_name());
    let Current::Pool {
        design,
        identity,
        pool,
        ..
    } = &current
    else {
        return read_manifest_creation_fields(fs, &name);
    };
    let mut options = design.parse::<crate::Design>()?.options(Options::default());
    options.pm.path = given.map(Path::to_path_buf);
    // The pool is there (CURRENT says so) whatever the WAL's tier: `leveled` has one only with
    // its WAL on PM. The smallest write buffers, so that any pool a database may have passes
    // the space policy's check (nothing is written).
    options.pm.wal_on_pm = true;
    options.max_write_buffer_number = 1;
    options.write_buffer_size = 4096;
    let how = PmFsOpen::Existing(*identity);
    let pm =
        open_pm(dir, &options, how, PoolAccess::Inspect, pool.as_deref())?.ok_or_else(|| {
            Error::corruption(
                current_file_name(dir).display().to_string(),
                format!("design {design} has no PM pool to hold the manifest"),
            )
        })?;
    let mut created = read_manifest_creation_fields(&*pm.fs, &name)?;
    created.pm_path = pool.clone();
    created.manifest_on_pm = true;
    Ok(created)
}

/// What a database directory holds.
enum DirState {
    /// `CURRENT` exists.
    Existing,
    /// No database: nothing of one, or only what a creation left before `CURRENT` existed
    /// (`leftovers`: names to remove once the pool, if any, was taken; `pool_in_dir`: a
    /// `pm.pool` file is in the directory, which only a design with a pool may take over, and
    /// only if the pool holds nothing).
    New {
        leftovers: Vec<String>,
        pool_in_dir: bool,
    },
}

/// Decides whether `dir` holds a database. Without `CURRENT`, the only database files allowed
/// are temporary files and manifests that describe an empty database (a creation that stopped
/// before it switched `CURRENT`); anything else is a database that lost its `CURRENT`, which is
/// never recreated over.
fn classify_directory(fs: &dyn FileSystem, dir: &Path) -> Result<DirState> {
    if fs.exists(&current_file_name(dir)) {
        return Ok(DirState::Existing);
    }
    let mut leftovers = Vec::new();
    let mut names = fs.list(dir)?;
    names.sort();
    let pool_in_dir = names.iter().any(|n| n == "pm.pool");
    for name in names {
        let leftover = match parse_file_name(&name) {
            // A database that was created whole (`IDENTITY` follows the first `CURRENT`).
            None if dir.join(&name) == owner::identity_file_name(dir) => false,
            None => continue,
            Some((FileKind::Temp, _)) => true,
            Some((FileKind::Manifest, _)) => describes_empty_database(fs, &dir.join(&name)),
            Some(_) => false,
        };
        if !leftover {
            return Err(lost_current(
                dir,
                &format!("database files ({name} among them) but no CURRENT file"),
            ));
        }
        leftovers.push(name);
    }
    Ok(DirState::New {
        leftovers,
        pool_in_dir,
    })
}

/// The error for a directory that holds a database without its `CURRENT`.
fn lost_current(dir: &Path, holds: &str) -> Error {
    Error::corruption(
        dir.display().to_string(),
        format!(
            "the directory holds {holds}; it is not treated as a new database. Run `tierkv \
             repair --db {}` to point CURRENT at the newest valid manifest",
            dir.display()
        ),
    )
}

/// True if the manifest at `path` reads cleanly and names no file and no WAL: what a creation
/// writes before `CURRENT` exists.
pub(crate) fn describes_empty_database(fs: &dyn FileSystem, path: &Path) -> bool {
    let Ok(data) = fs.read_all(path) else {
        return false;
    };
    let mut reader = LogReader::new(data, path.display().to_string());
    loop {
        match reader.next_record() {
            Ok(None) => return true,
            Ok(Some(record)) => match VersionEdit::decode(&record, "") {
                Ok(e) if e.added_runs().next().is_none() && e.log_number.unwrap_or(0) == 0 => {}
                _ => return false,
            },
            Err(_) => return false,
        }
    }
}

/// Every database file on every tier.
pub(crate) fn list_files(ssd: &dyn FileSystem, pm: Option<&PmTier>, dir: &Path) -> Result<Present> {
    let mut present = Present::new();
    let tiers = std::iter::once((Tier::Ssd, ssd)).chain(pm.map(|p| (Tier::Pm, &*p.fs)));
    for (tier, fs) in tiers {
        for name in fs.list(dir)? {
            if let Some((kind, n)) = parse_file_name(&name) {
                present.insert((kind, n, tier), name);
            }
        }
    }
    Ok(present)
}

/// Checks that the recovered version's runs are all there: every table on its tier with the
/// size the manifest recorded. `Corruption` otherwise; nothing is changed. (The front end
/// checks its own files: `FrontEnd::verify`.)
pub(crate) fn verify_files(
    dir: &Path,
    versions: &VersionSet,
    present: &Present,
    ssd: &dyn FileSystem,
    pm: Option<&PmTier>,
) -> Result<()> {
    let version = versions.current();
    for (_, _, f) in version.runs() {
        {
            // A run made of part of another run's file needs that file.
            let path = run_file_name(dir, f.file_number(), f.kind);
            let location = path.display().to_string();
            if !present.contains_key(&(FileKind::Run(f.kind), f.file_number(), f.tier)) {
                return Err(Error::corruption(
                    location,
                    format!(
                        "table file named by the manifest is missing from {}",
                        f.tier.name()
                    ),
                ));
            }
            let fs = match (f.tier, pm) {
                (Tier::Pm, Some(p)) => &*p.fs,
                _ => ssd,
            };
            for (n, _) in &f.value_refs {
                let log = crate::sst::value_log::value_log_file_name(dir, *n);
                if !present.contains_key(&(FileKind::ValueLog, *n, f.tier)) {
                    return Err(Error::corruption(
                        log.display().to_string(),
                        format!(
                            "value log named by table {} is missing from {}",
                            f.number,
                            f.tier.name()
                        ),
                    ));
                }
                // A table's own log holds every record the table wrote (nothing appends later).
                if *n == f.number && fs.file_size(&log)? < f.value_log_bytes() {
                    return Err(Error::corruption(
                        log.display().to_string(),
                        format!(
                            "value log is shorter than the {} bytes table {} wrote to it",
                            f.value_log_bytes(),
                            f.number
                        ),
                    ));
                }
            }
            let size = fs.file_size(&path)?;
            if size != f.file_bytes() {
                return Err(Error::corruption(
                    location,
                    format!(
                        "table is {size} bytes, the manifest recorded {} (a file of another \
                         database or version?)",
                        f.file_bytes()
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Replays the compaction logs (designs that keep one): removes what half-done jobs left and
/// what committed ones left to free, then sweeps the directory (`delete_unreferenced`),
/// counting runs no log accounted for, and replaces the old logs by a new one. Every step is
/// idempotent: a crash during it leaves the old logs (replayed again) or nothing to replay.
#[allow(clippy::too_many_arguments)]
fn recover_compaction_log(
    dir: &Path,
    options: &Options,
    versions: &mut VersionSet,
    present: &Present,
    ssd: &dyn FileSystem,
    pm: Option<&PmTier>,
    front: &dyn crate::pipeline::FrontEnd,
    counters: &Counters,
) -> Result<Option<CompactionLog>> {
    let mut logs: Vec<u64> = present
        .keys()
        .filter(|(kind, _, tier)| *kind == FileKind::CompactionLog && *tier == Tier::Pm)
        .map(|&(_, n, _)| n)
        .collect();
    logs.sort_unstable();
    let keeps_log = options.design.spec().compaction_log;
    let Some(p) = pm.filter(|_| keeps_log) else {
        delete_unreferenced(dir, versions, present, ssd, pm, front, None, counters);
        return Ok(None);
    };
    let live: HashSet<u64> = versions.current().file_numbers().collect();
    let replay = clog::replay(&*p.fs, dir, &logs, &live)?;
    for n in &replay.remove {
        for (&(kind, m, tier), name) in present {
            if m == *n && matches!(kind, FileKind::Run(_)) {
                let fs = if tier == Tier::Pm { &*p.fs } else { ssd };
                let _ = fs.remove(&dir.join(name));
            }
        }
    }
    counters.clog_discarded.fetch_add(replay.discarded, Relaxed);
    counters.clog_redone.fetch_add(replay.redone, Relaxed);
    delete_unreferenced(
        dir,
        versions,
        present,
        ssd,
        pm,
        front,
        Some(&replay.accounted),
        counters,
    );
    for n in logs {
        p.fs.remove(&clog::clog_file_name(dir, n))?;
    }
    let log = CompactionLog::create(Arc::clone(&p.fs), dir, versions.new_file_number(), vec![])?;
    Ok(Some(log))
}

/// Deletes what no durable state references, before recovery writes anything (counting, when
/// the compaction logs' `accounted` runs are given, the runs they did not account for): tables the
/// version does not name (outputs of flushes and compactions that never committed), WALs it
/// retired, temporary files, and manifests other than the live one. Failures are ignored (the
/// next open retries).
#[allow(clippy::too_many_arguments)]
fn delete_unreferenced(
    dir: &Path,
    versions: &VersionSet,
    present: &Present,
    ssd: &dyn FileSystem,
    pm: Option<&PmTier>,
    front: &dyn crate::pipeline::FrontEnd,
    accounted: Option<&HashSet<u64>>,
    counters: &Counters,
) {
    let live: HashSet<u64> = versions.current().file_numbers().collect();
    let value_logs: HashSet<(u64, Tier)> = versions.current().value_logs_on_tiers().collect();
    for (&(kind, n, tier), name) in present {
        let obsolete = match kind {
            // Logs of tables that never committed, and logs no table names any more.
            FileKind::ValueLog => !value_logs.contains(&(n, tier)),
            FileKind::Run(_) => {
                let unreferenced = !live.contains(&n);
                if unreferenced && accounted.is_some_and(|a| !a.contains(&n)) {
                    counters.unlogged_runs_removed.fetch_add(1, Relaxed);
                }
                unreferenced
            }
            // The compaction log's replay removes the logs it read.
            FileKind::CompactionLog => accounted.is_none(),
            // LAB-DB's value arrays and WAL-buffer halves are kept unless their owner says
            // otherwise, as logs are.
            FileKind::Log | FileKind::ValueArray | FileKind::WalBuffer => {
                front.is_obsolete(kind, n, versions).unwrap_or(false)
            }
            FileKind::Temp => true,
            FileKind::Manifest => versions.recovered_manifest().is_some_and(|m| m != n),
        };
        if obsolete {
            let fs = match (tier, pm) {
                (Tier::Pm, Some(p)) => &*p.fs,
                _ => ssd,
            };
            let _ = fs.remove(&dir.join(name));
        }
    }
}

/// How an open uses the PM pool file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PoolAccess {
    /// A writable open: the pool file's lock, a shared mapping.
    Write,
    /// A read-only open ([`Options::read_only`]): a shared lock when the lock file exists, a
    /// private mapping, and (with `headroom`) as many chunks again in memory, so that a
    /// recovery in a full pool finds the chunks it needs.
    ReadOnly { headroom: bool },
    /// An offline inspection (`check`, `describe`): no lock, a private mapping, structures
    /// opened without their recovery.
    Inspect,
}

impl PoolAccess {
    /// The access of an open under `options`.
    pub(crate) fn of(options: &Options, headroom: bool) -> PoolAccess {
        if options.read_only {
            PoolAccess::ReadOnly { headroom }
        } else {
            PoolAccess::Write
        }
    }
}

/// Opens the PM pool and its file system when the design uses PM, for the database `how`
/// names, and sets the pool's space policy. The pool file is `pm.path`, else `recorded`
/// (where the manifest says the pool is), else `pm.pool` in `dir`.
pub(crate) fn open_pm(
    dir: &Path,
    options: &Options,
    how: PmFsOpen,
    access: PoolAccess,
    recorded: Option<&Path>,
) -> Result<Option<PmTier>> {
    if !options.design.uses_pm(options) {
        return Ok(None);
    }
    let creating = matches!(how, PmFsOpen::Create(_));
    let (pool, location, pool_lock, pool_path) = match &options.pm.pool {
        // Only a writable open may change a pool it was given: the others work on a copy.
        Some(pool) if access == PoolAccess::Write => {
            (Arc::clone(pool), "PM pool (given)".to_string(), None, None)
        }
        Some(pool) => (
            private_copy(pool)?,
            "PM pool (given)".to_string(),
            None,
            None,
        ),
        None => {
            let path = match (&options.pm.path, recorded) {
                (Some(given), _) => given.clone(),
                (None, Some(recorded)) => recorded.to_path_buf(),
                (None, None) => dir.join("pm.pool"),
            };
            let lock_path = super::pool_lock_path(&path);
            let pool_lock = match access {
                PoolAccess::Write => Some(PosixFs.lock(&lock_path)?),
                PoolAccess::ReadOnly { .. } => PosixFs.lock_shared(&lock_path)?,
                PoolAccess::Inspect => None,
            };
            let pool_options = PoolOptions {
                size: options.pm.size_bytes,
                mode: options.pm.mode,
                latency: options.pm.latency,
                chunk_size: options.pm.chunk_bytes,
            };
            let pool = if path.exists() && access != PoolAccess::Write {
                // Nothing reaches the file; a read-only open may use a pool's size again.
                let headroom = match access {
                    PoolAccess::ReadOnly { headroom: true } => PosixFs.file_size(&path)?,
                    _ => 0,
                };
                PmPool::open_private(&path, &pool_options, headroom)?
            } else if path.exists() {
                PmPool::open(&path, &pool_options)?
            } else if creating {
                PmPool::create(&path, &pool_options)?
            } else {
                return Err(missing_pool(
                    dir,
                    &path,
                    options.pm.path.is_some(),
                    recorded,
                ));
            };
            (pool, path.display().to_string(), pool_lock, Some(path))
        }
    };
    if access == PoolAccess::Write {
        // Before the structures rebuild the allocator, which releases the free chunks.
        pool.set_release_freed(options.pm.release_freed);
    }
    // The structures the design's stages and front end keep in the pool, opened with it.
    let stages = options.design.stages(options);
    let structures: Vec<PoolStructure> = (stages.iter())
        .filter_map(|s| s.pool_structure())
        .chain(options.design.front_end().pool_structure())
        .collect();
    let kinds = PoolStructure::kinds(&structures, access != PoolAccess::Inspect);
    let structures = crate::pm_structures::open_pm_structures(
        &pool,
        &location,
        how,
        kinds,
        describes_empty_database,
    )?;
    let pmfs = structures.pmfs;
    let index = structures.index.map(Arc::new);
    let lab_trees = parking_lot::Mutex::new(structures.lab_trees);
    let lists = parking_lot::Mutex::new(structures.lists);
    if creating && !pmfs.file_names().is_empty() {
        return Err(Error::InvalidArgument(format!(
            "{location} holds files of another database; remove it or choose another pm path"
        )));
    }
    let (policy, wal_chunk_cap) = space_policy(options, &pmfs, &location)?;
    pmfs.set_space_policy(policy);
    Ok(Some(PmTier {
        pool,
        fs: Arc::new(pmfs.clone()),
        pmfs,
        wal_chunk_cap,
        index,
        lab_trees,
        lists,
        location,
        path: pool_path,
        _lock: pool_lock,
    }))
}

/// A copy of the given pool `pool` in memory, for an open that must not change it.
fn private_copy(pool: &PmPool) -> Result<Arc<PmPool>> {
    let mut image = vec![0u8; pool.size() as usize];
    pool.read(0, &mut image)?;
    let options = PoolOptions {
        size: pool.size(),
        mode: pool.mode(),
        latency: pool.latency(),
        chunk_size: pool.chunk_size(),
    };
    Ok(PmPool::open_crash_image(image, &options)?)
}

/// The error for an existing database whose pool file is not there: not corruption (the
/// database may be intact and its pool elsewhere), but where the pool was looked for and how to
/// point at it. `given`: the path came from the options, not from the database.
fn missing_pool(dir: &Path, path: &Path, given: bool, recorded: Option<&Path>) -> Error {
    let recorded = recorded.map_or_else(|| dir.join("pm.pool"), Path::to_path_buf);
    Error::NotFound(if !given {
        format!(
            "the PM pool of database {} is at {} and is missing (give --pm_path, or \
             Options::pm.path, if it moved)",
            dir.display(),
            path.display()
        )
    } else if recorded != path {
        format!(
            "no PM pool at {}, the path given for database {}; the database records its pool \
             at {}",
            path.display(),
            dir.display(),
            recorded.display()
        )
    } else {
        format!(
            "the PM pool of database {} is at {} and is missing",
            dir.display(),
            path.display()
        )
    })
}

/// How the pool's chunks are shared between WALs and tables, and the most chunks one WAL may
/// hold before its memtable is rotated (0 when the WAL is not on PM). Each WAL may take what
/// a full memtable's log needs, but no more than its share of the pool: in a small pool,
/// memtables are rotated when their WAL fills its share.
fn space_policy(options: &Options, pmfs: &PmFs, location: &str) -> Result<(PmSpacePolicy, u64)> {
    let manifest_on_pm = options.manifest_tier() == Tier::Pm;
    let manifest_chunks = if manifest_on_pm { MANIFEST_CHUNKS } else { 0 };
    if options.design.wal_tier(options) != Tier::Pm {
        // A log buffer the front end keeps in the pool (LAB-DB's WAL buffer): the trees and
        // tables leave its chunks, so that a drain never finds the pool taken by a leaf.
        let wal_buffer = crate::front_ends::log_buffer_chunks(options, pmfs.data_per_chunk());
        let policy = PmSpacePolicy {
            spare_chunks: manifest_chunks,
            log_quota_chunks: wal_buffer,
            manifest_chunks,
            structure_keep_chunks: wal_buffer,
        };
        return Ok((policy, 0));
    }
    let pool = pmfs.pool();
    let data_per_chunk = pmfs.data_per_chunk();
    let memtables = options.max_write_buffer_number as u64;
    let full_log = (options.write_buffer_size + crate::front_ends::MAX_GROUP_BYTES) as u64;
    let data_chunks = pool
        .chunk_count()
        .saturating_sub(POOL_OVERHEAD_CHUNKS + SPARE_CHUNKS + manifest_chunks);
    let cap = full_log
        .div_ceil(data_per_chunk)
        .min(data_chunks / memtables);
    if cap == 0 {
        let min = min_pool_chunks(options.max_write_buffer_number, manifest_on_pm);
        return Err(Error::InvalidArgument(format!(
            "{location} has {} chunks of {} bytes; a design with its WAL on PM needs at least \
             {min} ({} bytes): the header and directory chunks, one per WAL of \
             max_write_buffer_number = {memtables} memtables, and a spare{}",
            pool.chunk_count(),
            pool.chunk_size(),
            min * pool.chunk_size(),
            if manifest_on_pm {
                ", and two for the manifest in the pool"
            } else {
                ""
            }
        )));
    }
    Ok((
        PmSpacePolicy {
            spare_chunks: SPARE_CHUNKS + manifest_chunks,
            log_quota_chunks: cap * memtables,
            manifest_chunks,
            structure_keep_chunks: cap,
        },
        cap,
    ))
}
