//! Opening a database: create or recover the version set, replay the WALs, start fresh.
//!
//! Recovery order: `CURRENT` -> manifest (every edit; design, format and identity checked) ->
//! the PM pool, which must carry the same identity -> check that every table the version names
//! exists with its recorded size and that the WAL it names as the oldest live one exists ->
//! delete what no durable state references (tables of unfinished flushes and compactions,
//! retired WALs, temporary files; this frees space before recovery needs any) -> replay WALs
//! numbered `>= log_number`, oldest first, into memtables that are written out as L0 tables ->
//! one manifest record (in a fresh manifest) names those tables and a new log number whose WAL
//! does not exist yet -> the replayed WALs are deleted -> the new WAL is created -> a second
//! record says it exists.
//!
//! Because the new WAL is created after the replayed ones are deleted, recovery never needs
//! more PM than it frees (and the pool's spare chunk covers a database with no WAL to replay).
//!
//! WAL damage: only the newest WAL may end in a torn tail (an append that never completed, so
//! never acknowledged); it is dropped. Because the WAL is synced before each rotation, an older
//! WAL with damage, or damage followed by valid records, is corruption and fails the open with
//! an error naming the file.
//!
//! Manifest damage: a torn last manifest record is a commit that never happened, which is only
//! harmless if nothing it published was relied on. Every WAL is deleted only after a manifest
//! record retired it, and the WAL a version names as its oldest live one exists until a later
//! record retires it; so a recovered version whose oldest live WAL is missing has lost
//! records that were durable once. That is corruption, reported before anything is deleted.
//!
//! A directory that holds database files but no `CURRENT` is never taken for a new database
//! (only the leftovers of a creation that stopped before `CURRENT` existed are); see
//! [`repair`] for pointing `CURRENT` at the newest valid manifest.

use super::{DbInner, PmTier, SnapshotList, State, SuperVersion, TableCache, WalState};
use crate::error::{Error, Result};
use crate::fs::{FileSystem, PmFs, PmFsOpen, PmSpacePolicy, PosixFs};
use crate::log::{LogReader, LogWriter};
use crate::memtable::{MemTable, RegionCache};
use crate::options::Options;
use crate::sst::BlockCache;
use crate::stats::Tier;
use crate::stats::{Counters, IoPurpose};
use crate::version::{
    current_file_name, log_file_name, new_identity, parse_file_name, set_current, table_file_name,
    FileKind, VersionEdit, VersionSet,
};
use crate::write_batch::decode_batch;
use parking_lot::{Condvar, Mutex};
use std::collections::{HashMap, HashSet, VecDeque};
use std::path::Path;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use tierkv_pm::{PmPool, PoolOptions};

/// Every file of the database on every tier: (kind, number, tier) -> name.
type Present = HashMap<(FileKind, u64, Tier), String>;

pub(crate) fn open(dir: &Path, options: Options) -> Result<DbInner> {
    options.validate()?;
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
    let (mut versions, pm) = match classify_directory(&*fs, dir)? {
        DirState::Existing => {
            if options.error_if_exists {
                return Err(Error::InvalidArgument(format!(
                    "database {} already exists",
                    dir.display()
                )));
            }
            let versions = VersionSet::recover(dir, &options, Arc::clone(&counters))?;
            let pm = open_pm(dir, &options, PmFsOpen::Existing(versions.identity()), true)?;
            (versions, pm)
        }
        DirState::New { leftovers } => {
            if !options.create_if_missing {
                return Err(Error::NotFound(format!(
                    "no database in {} (create_if_missing is false)",
                    dir.display()
                )));
            }
            for name in leftovers {
                fs.remove(&dir.join(name))?;
            }
            let identity = new_identity();
            let pm = open_pm(dir, &options, PmFsOpen::Create(identity), true)?;
            let versions = VersionSet::create(dir, &options, identity, Arc::clone(&counters))?;
            (versions, pm)
        }
    };
    let present = list_files(&*fs, pm.as_ref(), dir)?;
    verify_files(dir, &versions, &present, &*fs, pm.as_ref())?;
    for (_, n, _) in present.keys() {
        versions.mark_file_number_used(*n);
    }
    delete_unreferenced(dir, &versions, &present, &*fs, pm.as_ref());
    let mut logs: Vec<(u64, Tier)> = present
        .keys()
        .filter(|(k, n, _)| *k == FileKind::Log && *n >= versions.log_number)
        .map(|(_, n, t)| (*n, *t))
        .collect();
    logs.sort_unstable_by_key(|(n, _)| *n);

    let block_cache = BlockCache::new(options.block_cache_bytes);
    let table_cache = TableCache::new(
        dir.to_path_buf(),
        Arc::clone(&fs),
        pm.as_ref().map(|p| Arc::clone(&p.fs)),
        block_cache,
        Arc::clone(&counters),
        options.max_open_files,
    );
    let placeholder_mem = Arc::new(MemTable::new(0, 0));
    let version = versions.current();
    let inner = DbInner {
        dir: dir.to_path_buf(),
        fs: Arc::clone(&fs),
        pm,
        wal_tier: options.design.wal_tier(&options),
        counters: Arc::clone(&counters),
        table_cache,
        state: Mutex::new(State {
            mem: Arc::clone(&placeholder_mem),
            imm: VecDeque::new(),
            super_version: Arc::new(SuperVersion {
                mem: Arc::clone(&placeholder_mem),
                imm: Vec::new(),
                version,
            }),
            versions,
            bg_error: None,
            busy_levels: vec![false; options.compaction.num_levels],
            pending_outputs: HashSet::new(),
            live_versions: Vec::new(),
            shutting_down: false,
            manual_compactions: 0,
        }),
        bg_cv: Condvar::new(),
        write_queue: Mutex::new(VecDeque::new()),
        write_cv: Condvar::new(),
        // Replaced below once the new WAL exists.
        wal: Mutex::new(WalState {
            writer: LogWriter::new(Box::new(NullFile)),
            number: 0,
            mem: placeholder_mem,
        }),
        last_sequence: AtomicU64::new(0),
        snapshots: Arc::new(SnapshotList::default()),
        // One memtable's two regions (index and data): an active memtable and a kept flushed
        // one use no more memory than an active and an immutable one.
        memtable_regions: Arc::new(RegionCache::new(2)),
        options,
        _lock: lock,
    };
    replay_and_restart(&inner, &logs)?;
    Ok(inner)
}

/// What a database directory holds.
enum DirState {
    /// `CURRENT` exists.
    Existing,
    /// No database: nothing of one, or only what a creation left before `CURRENT` existed
    /// (`leftovers`: names to remove first).
    New { leftovers: Vec<String> },
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
    for name in names {
        let leftover = match parse_file_name(&name) {
            None => continue,
            Some((FileKind::Temp, _)) => true,
            Some((FileKind::Manifest, _)) => describes_empty_database(fs, &dir.join(&name)),
            Some(_) => false,
        };
        if !leftover {
            return Err(Error::corruption(
                dir.display().to_string(),
                format!(
                    "the directory holds database files ({name} among them) but no CURRENT \
                     file; it is not treated as a new database. Run `tierkv repair --db {}` \
                     to point CURRENT at the newest valid manifest",
                    dir.display()
                ),
            ));
        }
        leftovers.push(name);
    }
    Ok(DirState::New { leftovers })
}

/// True if the manifest at `path` reads cleanly and names no file and no WAL: what a creation
/// writes before `CURRENT` exists.
fn describes_empty_database(fs: &dyn FileSystem, path: &Path) -> bool {
    let Ok(data) = fs.read_all(path) else {
        return false;
    };
    let mut reader = LogReader::new(data, path.display().to_string());
    loop {
        match reader.next_record() {
            Ok(None) => return true,
            Ok(Some(record)) => match VersionEdit::decode(&record, "") {
                Ok(e) if e.new_files.is_empty() && e.log_number.unwrap_or(0) == 0 => {}
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

/// Checks that the recovered version's files are all there: every table on its tier with the
/// size the manifest recorded, and the WAL it names as the oldest live one (unless the last
/// recovery had not created it yet). `Corruption` otherwise; nothing is changed.
pub(crate) fn verify_files(
    dir: &Path,
    versions: &VersionSet,
    present: &Present,
    ssd: &dyn FileSystem,
    pm: Option<&PmTier>,
) -> Result<()> {
    for files in &versions.current().levels {
        for f in files {
            let path = table_file_name(dir, f.number);
            let location = path.display().to_string();
            if !present.contains_key(&(FileKind::Table, f.number, f.tier)) {
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
            let size = fs.file_size(&path)?;
            if size != f.file_size {
                return Err(Error::corruption(
                    location,
                    format!(
                        "table is {size} bytes, the manifest recorded {} (a file of another \
                         database or version?)",
                        f.file_size
                    ),
                ));
            }
        }
    }
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

/// Deletes what no durable state references, before recovery writes anything: tables the
/// version does not name (outputs of flushes and compactions that never committed), WALs it
/// retired, temporary files, and manifests other than the live one. Failures are ignored (the
/// next open retries).
fn delete_unreferenced(
    dir: &Path,
    versions: &VersionSet,
    present: &Present,
    ssd: &dyn FileSystem,
    pm: Option<&PmTier>,
) {
    let live: HashSet<u64> = versions.current().file_numbers().collect();
    for (&(kind, n, tier), name) in present {
        let obsolete = match kind {
            FileKind::Table => !live.contains(&n),
            FileKind::Log => n < versions.log_number,
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

/// Replays `logs` into L0 tables, then starts a new WAL and manifest. On failure before the
/// manifest names them, the tables this open wrote are deleted again.
fn replay_and_restart(db: &DbInner, logs: &[(u64, Tier)]) -> Result<()> {
    let mut state = db.state.lock();
    let mut edit = VersionEdit::default();
    let mut written: Vec<(u64, Tier)> = Vec::new();
    let replayed = replay(db, &mut state, logs, &mut edit, &mut written);
    if let Err(e) = replayed {
        for (number, tier) in written {
            let _ = db.fs_for(tier).remove(&table_file_name(&db.dir, number));
        }
        return Err(e);
    }
    // Name the tables and the next WAL's number, then free the replayed WALs, then create the
    // new WAL: the new WAL never needs space the old ones still hold.
    let number = state.versions.new_file_number();
    edit.log_number = Some(number);
    edit.log_created = Some(false);
    state.versions.log_and_apply(edit)?;
    let obsolete = db.collect_obsolete_files(&mut state);
    db.delete_files(obsolete);
    let path = log_file_name(&db.dir, number);
    let file = match &db.pm {
        Some(pm) if db.wal_tier == Tier::Pm => pm.pmfs.create_log_using_spare(&path)?,
        _ => db.fs_for(db.wal_tier).create_log(&path)?,
    };
    db.fs_for(db.wal_tier).sync_dir(&db.dir)?;
    state.versions.log_and_apply(VersionEdit {
        log_created: Some(true),
        ..VersionEdit::default()
    })?;
    let mem = db.new_memtable(number);
    *db.wal.lock() = WalState {
        writer: LogWriter::new(file),
        number,
        mem: Arc::clone(&mem),
    };
    state.mem = mem;
    state.install_super_version();
    db.last_sequence.store(
        state.versions.last_sequence,
        std::sync::atomic::Ordering::Release,
    );
    Ok(())
}

/// Replays `logs` into memtables written out as tables (added to `edit`, listed in `written`,
/// including a table whose writing failed); sets the version set's last sequence.
fn replay(
    db: &DbInner,
    state: &mut State,
    logs: &[(u64, Tier)],
    edit: &mut VersionEdit,
    written: &mut Vec<(u64, Tier)>,
) -> Result<()> {
    let mut max_seq = state.versions.last_sequence;
    let mut mem = db.new_memtable(0);
    for (i, &(number, tier)) in logs.iter().enumerate() {
        let path = log_file_name(&db.dir, number);
        let data = db.fs_for(tier).read_all(&path)?;
        db.counters
            .add_read_from(tier, IoPurpose::Recovery, data.len() as u64);
        let location = path.display().to_string();
        let mut reader = LogReader::new(data, location.clone());
        while let Some(record) = reader.next_record()? {
            let batch = decode_batch(&record, "WAL record").map_err(|e| match e {
                Error::Corruption { reason, .. } => Error::corruption(location.clone(), reason),
                other => other,
            })?;
            let (first, count) = (batch.first_sequence, batch.count);
            let n = super::write::insert_ops(&mem, batch.ops, first)
                .map_err(|e| Error::corruption(location.clone(), e.to_string()))?;
            // The decoder stops with an error at any count mismatch, so this is a pair assertion.
            debug_assert_eq!(n, u64::from(count));
            if n > 0 {
                max_seq = max_seq.max(first + n - 1);
            }
            if mem.approximate_bytes() >= db.options.write_buffer_size as u64 {
                flush_replayed(db, state, &mut mem, edit, written)?;
            }
        }
        let tail = reader.tail();
        if tail.dropped_bytes > 0 && i + 1 < logs.len() {
            return Err(Error::corruption(
                format!("{location} at offset {}", tail.valid_end),
                "damaged tail in a WAL that a newer WAL follows",
            ));
        }
    }
    flush_replayed(db, state, &mut mem, edit, written)?;
    state.versions.last_sequence = max_seq;
    Ok(())
}

fn flush_replayed(
    db: &DbInner,
    state: &mut State,
    mem: &mut Arc<MemTable>,
    edit: &mut VersionEdit,
    written: &mut Vec<(u64, Tier)>,
) -> Result<()> {
    if mem.is_empty() {
        return Ok(());
    }
    let number = state.versions.new_file_number();
    // Listed before it is written: a partial table of a failed write is removed too.
    written.push((number, Tier::Ssd));
    if db.options.design.flush_tier() == Tier::Pm {
        written.push((number, Tier::Pm));
    }
    if let Some(meta) = db.write_table_from_memtable(mem, number)? {
        edit.new_files.push((0, meta));
    }
    *mem = db.new_memtable(0);
    Ok(())
}

/// Opens the PM pool and its file system when the design uses PM, for the database `how`
/// names, and sets the pool's space policy. `lock`: take the pool file's lock (not for offline
/// checks).
pub(crate) fn open_pm(
    dir: &Path,
    options: &Options,
    how: PmFsOpen,
    lock: bool,
) -> Result<Option<PmTier>> {
    if !options.design.uses_pm(options) {
        return Ok(None);
    }
    let creating = matches!(how, PmFsOpen::Create(_));
    let (pool, location, pool_lock) = match &options.pm.pool {
        Some(pool) => (Arc::clone(pool), "PM pool (given)".to_string(), None),
        None => {
            let path = options
                .pm
                .path
                .clone()
                .unwrap_or_else(|| dir.join("pm.pool"));
            let pool_lock = if lock {
                Some(PosixFs.lock(&PathBuf::from(format!("{}.lock", path.display())))?)
            } else {
                None
            };
            let pool_options = PoolOptions {
                size: options.pm.size_bytes,
                mode: options.pm.mode,
                latency: options.pm.latency,
                chunk_size: options.pm.chunk_bytes,
            };
            let pool = if path.exists() {
                PmPool::open(&path, &pool_options)?
            } else if creating {
                PmPool::create(&path, &pool_options)?
            } else {
                return Err(Error::corruption(
                    path.display().to_string(),
                    "the PM pool of this database is missing",
                ));
            };
            (pool, path.display().to_string(), pool_lock)
        }
    };
    let pmfs = crate::fs::open_pm_structures(&pool, &location, how)?.pmfs;
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
        _lock: pool_lock,
    }))
}

/// Chunks of a pool that hold no data: the header chunk and the `PmFs` directory chunk.
const POOL_OVERHEAD_CHUNKS: u64 = 2;
/// Chunks kept free in steady state for recovery's new WAL.
const SPARE_CHUNKS: u64 = 1;

/// The smallest pool, in chunks, that a design with its WAL on PM can run in: the header and
/// directory chunks, one chunk for each WAL of `max_write_buffer_number` memtables, and the
/// spare.
pub(crate) fn min_pool_chunks(max_write_buffer_number: usize) -> u64 {
    POOL_OVERHEAD_CHUNKS + SPARE_CHUNKS + max_write_buffer_number as u64
}

/// How the pool's chunks are shared between WALs and tables, and the most chunks one WAL may
/// hold before its memtable is rotated (0 when the WAL is not on PM). Each WAL may take what
/// a full memtable's log needs, but no more than its share of the pool: in a small pool,
/// memtables are rotated when their WAL fills its share.
fn space_policy(options: &Options, pmfs: &PmFs, location: &str) -> Result<(PmSpacePolicy, u64)> {
    if options.design.wal_tier(options) != Tier::Pm {
        return Ok((PmSpacePolicy::default(), 0));
    }
    let pool = pmfs.pool();
    let data_per_chunk = pmfs.data_per_chunk();
    let memtables = options.max_write_buffer_number as u64;
    let full_log = (options.write_buffer_size + super::write::MAX_GROUP_BYTES) as u64;
    let data_chunks = pool
        .chunk_count()
        .saturating_sub(POOL_OVERHEAD_CHUNKS + SPARE_CHUNKS);
    let cap = full_log
        .div_ceil(data_per_chunk)
        .min(data_chunks / memtables);
    if cap == 0 {
        let min = min_pool_chunks(options.max_write_buffer_number);
        return Err(Error::InvalidArgument(format!(
            "{location} has {} chunks of {} bytes; a design with its WAL on PM needs at least \
             {min} ({} bytes): the header and directory chunks, one per WAL of \
             max_write_buffer_number = {memtables} memtables, and a spare",
            pool.chunk_count(),
            pool.chunk_size(),
            min * pool.chunk_size()
        )));
    }
    Ok((
        PmSpacePolicy {
            spare_chunks: SPARE_CHUNKS,
            log_quota_chunks: cap * memtables,
        },
        cap,
    ))
}

/// Points `CURRENT` at the newest manifest of `dir` from which the database opens consistently
/// (every table present with its recorded size, its oldest live WAL present, its PM pool
/// bound to it). Leaves a database whose `CURRENT` already names such a manifest as it is.
/// Nothing but `CURRENT` is written; no file is deleted.
pub(crate) fn repair(dir: &Path, options: &Options) -> Result<RepairReport> {
    let fs = Arc::clone(&options.fs);
    if !fs.exists(dir) {
        return Err(Error::NotFound(format!(
            "database directory {}",
            dir.display()
        )));
    }
    let _lock = fs.lock(&dir.join("LOCK"))?;
    let counters = Arc::new(Counters::default());
    let mut manifests: Vec<(u64, String)> = fs
        .list(dir)?
        .into_iter()
        .filter_map(|name| match parse_file_name(&name) {
            Some((FileKind::Manifest, n)) => Some((n, name)),
            _ => None,
        })
        .collect();
    manifests.sort_unstable_by_key(|m| std::cmp::Reverse(m.0));
    let current = VersionSet::recover(dir, options, Arc::clone(&counters))
        .ok()
        .and_then(|v| v.recovered_manifest());
    let mut rejected = Vec::new();
    for (number, name) in &manifests {
        let tried = options_of_manifest(options, &*fs, &dir.join(name)).and_then(|options| {
            let versions =
                VersionSet::recover_manifest(dir, name, &options, Arc::clone(&counters))?;
            let pm = open_pm(dir, &options, PmFsOpen::Existing(versions.identity()), true)?;
            let present = list_files(&*fs, pm.as_ref(), dir)?;
            verify_files(dir, &versions, &present, &*fs, pm.as_ref())
        });
        match tried {
            Ok(()) => {
                let changed = current != Some(*number);
                if changed {
                    set_current(&*fs, dir, *number, &counters)?;
                }
                return Ok(RepairReport {
                    manifest: name.clone(),
                    changed,
                    rejected,
                });
            }
            Err(e) => rejected.push((name.clone(), e.to_string())),
        }
    }
    Err(Error::corruption(
        dir.display().to_string(),
        if rejected.is_empty() {
            "no manifest to repair from".to_string()
        } else {
            format!(
                "no manifest opens consistently: {}",
                rejected
                    .iter()
                    .map(|(n, e)| format!("{n}: {e}"))
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        },
    ))
}

/// `options` with what the manifest at `path` says the database was created with (design,
/// level count, WAL tier): repair needs no `CURRENT` to know them.
fn options_of_manifest(options: &Options, fs: &dyn FileSystem, path: &Path) -> Result<Options> {
    let created = crate::version::read_manifest_creation_fields(fs, path)?;
    let mut o = options.clone();
    o.design = created.design.parse()?;
    o.pm.wal_on_pm = created.wal_on_pm;
    o.compaction.num_levels = created.num_levels;
    Ok(o)
}

/// What [`crate::Db::repair`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepairReport {
    /// The manifest `CURRENT` names now.
    pub manifest: String,
    /// Whether `CURRENT` was written (false: it already named that manifest).
    pub changed: bool,
    /// Newer manifests that were passed over, with the reason.
    pub rejected: Vec<(String, String)>,
}

/// A sink used only until recovery installs the real WAL.
struct NullFile;

impl crate::fs::WritableFile for NullFile {
    fn append(&mut self, _: &[u8]) -> Result<()> {
        Err(Error::InvalidArgument("database is not open yet".into()))
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
    fn size(&self) -> u64 {
        0
    }
}
