//! Opening a database: create or recover the version set, replay the WALs, start fresh.
//!
//! Recovery order: `CURRENT` -> manifest (every edit) -> check that every table the version
//! names exists -> replay WALs numbered `>= log_number`, oldest first, into memtables that are
//! written out as L0 tables -> start a new WAL and a new manifest (via `log_and_apply`) that
//! point past everything replayed -> delete obsolete files.
//!
//! WAL damage: only the newest WAL may end in a torn tail (an append that never completed, so
//! never acknowledged); it is dropped. Because the WAL is synced before each rotation, an older
//! WAL with damage, or damage followed by valid records, is corruption and fails the open with
//! an error naming the file.

use super::{DbInner, PmTier, SnapshotList, State, SuperVersion, TableCache, WalState};
use crate::error::{Error, Result};
use crate::fs::{FileSystem, PmFs, PosixFs};
use crate::log::{LogReader, LogWriter};
use crate::memtable::{MemTable, RegionCache};
use crate::options::Options;
use crate::sst::BlockCache;
use crate::stats::Tier;
use crate::stats::{Counters, IoPurpose};
use crate::version::{
    current_file_name, log_file_name, parse_file_name, table_file_name, FileKind, VersionEdit,
    VersionSet,
};
use crate::write_batch::decode_batch;
use parking_lot::{Condvar, Mutex};
use std::collections::{HashSet, VecDeque};
use std::path::Path;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use tierkv_pm::{PmPool, PoolOptions};

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
    let creating = !fs.exists(&current_file_name(dir));
    if creating && !options.create_if_missing {
        return Err(Error::NotFound(format!(
            "no database in {} (create_if_missing is false)",
            dir.display()
        )));
    }
    let pm = open_pm(dir, &options, creating, true)?;
    let mut versions = if !creating {
        if options.error_if_exists {
            return Err(Error::InvalidArgument(format!(
                "database {} already exists",
                dir.display()
            )));
        }
        VersionSet::recover(dir, &options, Arc::clone(&counters))?
    } else {
        VersionSet::create(dir, &options, Arc::clone(&counters))?
    };
    // Every file on every tier, with the tier that holds it.
    let mut present: HashSet<(FileKind, u64, Tier)> = HashSet::new();
    for (tier, tier_fs) in
        std::iter::once((Tier::Ssd, &fs)).chain(pm.iter().map(|p| (Tier::Pm, &p.fs)))
    {
        for name in tier_fs.list(dir)? {
            if let Some((kind, n)) = parse_file_name(&name) {
                present.insert((kind, n, tier));
            }
        }
    }
    for files in &versions.current().levels {
        for f in files {
            if !present.contains(&(FileKind::Table, f.number, f.tier)) {
                return Err(Error::corruption(
                    table_file_name(dir, f.number).display().to_string(),
                    format!(
                        "table file named by the manifest is missing from {}",
                        f.tier.name()
                    ),
                ));
            }
        }
    }
    let mut logs: Vec<(u64, Tier)> = present
        .iter()
        .filter(|(k, n, _)| *k == FileKind::Log && *n >= versions.log_number)
        .map(|(_, n, t)| (*n, *t))
        .collect();
    logs.sort_unstable_by_key(|(n, _)| *n);
    for (_, n, _) in &present {
        versions.mark_file_number_used(*n);
    }

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

/// Replays `logs` into L0 tables, then starts a new WAL and manifest.
fn replay_and_restart(db: &DbInner, logs: &[(u64, Tier)]) -> Result<()> {
    let mut state = db.state.lock();
    let mut edit = VersionEdit::default();
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
                flush_replayed(db, &mut state, &mut mem, &mut edit)?;
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
    flush_replayed(db, &mut state, &mut mem, &mut edit)?;
    // Start the new WAL; the edit makes it the oldest live log.
    let number = state.versions.new_file_number();
    let wal_fs = db.fs_for(db.wal_tier);
    let file = wal_fs.create_log(&log_file_name(&db.dir, number))?;
    wal_fs.sync_dir(&db.dir)?;
    state.versions.last_sequence = max_seq;
    edit.log_number = Some(number);
    state.versions.log_and_apply(edit)?;
    let mem = db.new_memtable(number);
    *db.wal.lock() = WalState {
        writer: LogWriter::new(file),
        number,
        mem: Arc::clone(&mem),
    };
    state.mem = mem;
    state.install_super_version();
    db.last_sequence
        .store(max_seq, std::sync::atomic::Ordering::Release);
    let obsolete = db.collect_obsolete_files(&mut state);
    drop(state);
    db.delete_files(obsolete);
    Ok(())
}

fn flush_replayed(
    db: &DbInner,
    state: &mut State,
    mem: &mut Arc<MemTable>,
    edit: &mut VersionEdit,
) -> Result<()> {
    if mem.is_empty() {
        return Ok(());
    }
    let number = state.versions.new_file_number();
    if let Some(meta) = db.write_table_from_memtable(mem, number)? {
        edit.new_files.push((0, meta));
    }
    *mem = db.new_memtable(0);
    Ok(())
}

/// Opens the PM pool and its file system when the design uses PM. `creating`: the database is
/// new, so the pool may be created and must hold no files of another database. `lock`: take the
/// pool file's lock (not for offline checks).
pub(crate) fn open_pm(
    dir: &Path,
    options: &Options,
    creating: bool,
    lock: bool,
) -> Result<Option<PmTier>> {
    if !options.design.uses_pm(options) {
        return Ok(None);
    }
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
    let pmfs = PmFs::open(Arc::clone(&pool), location.clone(), creating)?;
    if creating && !pmfs.file_names().is_empty() {
        return Err(Error::InvalidArgument(format!(
            "{location} holds files of another database; remove it or choose another pm path"
        )));
    }
    Ok(Some(PmTier {
        pool,
        fs: Arc::new(pmfs),
        _lock: pool_lock,
    }))
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
