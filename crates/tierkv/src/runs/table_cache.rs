//! The table cache: open run readers of every kind (an SSTable's file handle, parsed index and
//! Bloom filter; a PM sorted array's footer and filter), bounded by `max_open_files` with
//! least-recently-used eviction.
//!
//! Sharded by file number so concurrent readers rarely meet on one lock. Thread-safe.

use crate::fs::FileSystem;
use crate::parray::PmArray;
use crate::runs::{run_file_name, Clip, OpenRun};
use crate::sst::{BlockCache, Table, ValueLogs};
use crate::stats::{Counters, IoPurpose, Part};
use crate::version::{FileMetaData, RunKind};
use crate::{Error, Result};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

const SHARDS: usize = 16;

struct Shard {
    tables: HashMap<u64, (OpenRun, u64)>,
}

/// Open run readers keyed by file number.
pub struct TableCache {
    dir: PathBuf,
    fs: Arc<dyn FileSystem>,
    pm_fs: Option<Arc<dyn FileSystem>>,
    block_cache: Arc<BlockCache>,
    counters: Arc<Counters>,
    shards: Vec<Mutex<Shard>>,
    per_shard: usize,
    tick: AtomicU64,
    /// The value logs separated tables point into.
    value_logs: Arc<ValueLogs>,
}

impl TableCache {
    /// A cache for the tables of database directory `dir`: SSD tables through `fs`, PM tables
    /// through `pm_fs`.
    pub fn new(
        dir: PathBuf,
        fs: Arc<dyn FileSystem>,
        pm_fs: Option<Arc<dyn FileSystem>>,
        block_cache: Arc<BlockCache>,
        counters: Arc<Counters>,
        max_open_files: usize,
    ) -> Self {
        let value_logs = Arc::new(ValueLogs::new(
            dir.clone(),
            Arc::clone(&fs),
            pm_fs.clone(),
            Arc::clone(&counters),
            max_open_files,
        ));
        TableCache {
            value_logs,
            dir,
            fs,
            pm_fs,
            block_cache,
            counters,
            shards: (0..SHARDS)
                .map(|_| {
                    Mutex::new(Shard {
                        tables: HashMap::new(),
                    })
                })
                .collect(),
            per_shard: (max_open_files / SHARDS).max(1),
            tick: AtomicU64::new(0),
        }
    }

    /// The reader of `meta`'s run for a user read (see [`Self::open_for`]).
    pub fn open(&self, meta: &FileMetaData, part: Part) -> Result<OpenRun> {
        self.open_for(meta, part, IoPurpose::UserRead)
    }

    /// The reader of `meta`'s run, opening it on a miss; its reads count as `part`'s (the
    /// stage holding the file when it was opened), the open's own reads (footer, index,
    /// filter) under `purpose`. A file whose size differs from what the manifest recorded is
    /// reported as corruption. A run made of part of another run's file reads that file,
    /// clipped to the run's keys (the cache holds the file once for all its runs).
    pub fn open_for(&self, meta: &FileMetaData, part: Part, purpose: IoPurpose) -> Result<OpenRun> {
        let run = self.open_file(meta, part, purpose)?;
        if meta.backing.is_none() {
            return Ok(run);
        }
        match run {
            OpenRun::Sst(t) => Ok(OpenRun::Slice(
                t,
                Arc::new(Clip {
                    first: meta.smallest_user_key().to_vec(),
                    last: meta.largest_user_key().to_vec(),
                }),
            )),
            other => Err(Error::corruption(
                other.path().display().to_string(),
                format!(
                    "run {} is part of a file that is not an SSTable",
                    meta.number
                ),
            )),
        }
    }

    /// The reader of the file holding `meta`'s entries (its own, or its backing file), as
    /// [`Self::open_for`] describes.
    fn open_file(&self, meta: &FileMetaData, part: Part, purpose: IoPurpose) -> Result<OpenRun> {
        let number = meta.file_number();
        let shard = &self.shards[number as usize % SHARDS];
        let now = self.tick.fetch_add(1, Relaxed);
        if let Some(entry) = shard.lock().tables.get_mut(&number) {
            entry.1 = now;
            return Ok(entry.0.clone());
        }
        let path = run_file_name(&self.dir, number, meta.kind);
        let fs = crate::fs::fs_of_tier(meta.tier, &self.fs, self.pm_fs.as_ref(), &path, "run")?;
        let file = fs.open_readable(&path)?;
        if file.size() != meta.file_bytes() {
            return Err(Error::corruption(
                path.display().to_string(),
                format!(
                    "file on {} is {} bytes, the manifest recorded {}",
                    meta.tier.name(),
                    file.size(),
                    meta.file_bytes()
                ),
            ));
        }
        let counters = Arc::clone(&self.counters);
        let run = match meta.kind {
            RunKind::Sst => OpenRun::Sst(Table::open_with_values(
                file,
                number,
                path,
                Arc::clone(&self.block_cache),
                counters,
                (meta.tier, part, purpose),
                Some(Arc::clone(&self.value_logs)),
            )?),
            RunKind::PmArray => OpenRun::Array(PmArray::open(
                file, path, counters, meta.tier, part, purpose,
            )?),
        };
        let mut s = shard.lock();
        if s.tables.len() >= self.per_shard {
            if let Some(&victim) = s.tables.iter().min_by_key(|(_, e)| e.1).map(|(n, _)| n) {
                s.tables.remove(&victim);
            }
        }
        s.tables.insert(number, (run.clone(), now));
        Ok(run)
    }

    /// The reader of `meta`'s run, which must be a PM sorted array (opened for a user read).
    pub fn array(&self, meta: &FileMetaData, part: Part) -> Result<Arc<PmArray>> {
        self.array_for(meta, part, IoPurpose::UserRead)
    }

    /// [`Self::array`], the open's reads counted under `purpose`.
    pub fn array_for(
        &self,
        meta: &FileMetaData,
        part: Part,
        purpose: IoPurpose,
    ) -> Result<Arc<PmArray>> {
        match self.open_for(meta, part, purpose)? {
            OpenRun::Array(a) => Ok(a),
            OpenRun::Sst(t) | OpenRun::Slice(t, _) => Err(Error::corruption(
                t.path().display().to_string(),
                "a sorted array was expected, the file is an SSTable",
            )),
        }
    }

    /// Drops the reader of a deleted file.
    pub fn evict(&self, number: u64) {
        self.shards[number as usize % SHARDS]
            .lock()
            .tables
            .remove(&number);
    }

    /// DRAM held by open tables: (filter bytes, index bytes).
    pub fn resident_bytes(&self) -> (u64, u64) {
        let mut filter = 0;
        let mut index = 0;
        for s in &self.shards {
            for (run, _) in s.lock().tables.values() {
                let (f, i) = run.resident_bytes();
                filter += f;
                index += i;
            }
        }
        (filter, index)
    }

    /// The readers of the value logs.
    pub fn value_logs(&self) -> &Arc<ValueLogs> {
        &self.value_logs
    }

    /// The database's counters.
    pub fn counters(&self) -> &Arc<Counters> {
        &self.counters
    }

    /// The shared block cache.
    pub fn block_cache(&self) -> &Arc<BlockCache> {
        &self.block_cache
    }
}
