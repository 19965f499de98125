//! The seam between the benchmark runner and a storage engine.
//!
//! [`KvEngine`] is deliberately narrow (point writes and reads, a cursor, flush, figures) so that
//! other engines (RocksDB, a YCSB driver) can be added later without touching the runner. This
//! module implements it for [`tierkv::Db`] ([`TierKvEngine`]), and provides two engines for
//! tests and harness-overhead measurements: [`NullEngine`], which stores nothing, and
//! [`MemEngine`], a `BTreeMap` behind a lock.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, RwLock};
use tierkv::{Db, DbIterator, DbStats, Options, ReadOptions, WriteBatch, WriteOptions};

/// The error type of engine operations (any engine's error, boxed).
pub type EngineError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// The result type of engine operations.
pub type EngineResult<T> = Result<T, EngineError>;

/// A forward cursor over an engine's keys, modelled on LevelDB's iterator.
pub trait KvCursor {
    /// Positions on the first key.
    fn seek_to_first(&mut self);
    /// Positions on the first key `>= key`.
    fn seek(&mut self, key: &[u8]);
    /// True when positioned on an entry.
    fn valid(&self) -> bool;
    /// Advances. REQUIRES: `valid()`.
    fn next(&mut self);
    /// The current key. REQUIRES: `valid()`.
    fn key(&self) -> &[u8];
    /// The current value. REQUIRES: `valid()`.
    fn value(&self) -> &[u8];
    /// The first error the cursor met (a cursor that met an error is not valid).
    fn status(&self) -> EngineResult<()>;
}

/// A batch of writes applied atomically by [`KvEngine::write_batch`]: keys and values in one
/// reusable buffer, so filling a batch allocates nothing once the buffer has grown.
#[derive(Clone, Debug, Default)]
pub struct KvBatch {
    data: Vec<u8>,
    /// (key end, value end) offsets into `data` per entry; a delete has no value
    /// (`value end == None`).
    entries: Vec<(usize, Option<usize>)>,
}

impl KvBatch {
    /// An empty batch.
    pub fn new() -> Self {
        KvBatch::default()
    }

    /// Adds a put.
    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        self.data.extend_from_slice(key);
        let key_end = self.data.len();
        self.data.extend_from_slice(value);
        self.entries.push((key_end, Some(self.data.len())));
    }

    /// Adds a delete.
    pub fn delete(&mut self, key: &[u8]) {
        self.data.extend_from_slice(key);
        self.entries.push((self.data.len(), None));
    }

    /// Entries in the batch.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when the batch holds nothing.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Empties the batch, keeping its buffers.
    pub fn clear(&mut self) {
        self.data.clear();
        self.entries.clear();
    }

    /// The entries in order: `(key, Some(value))` for a put, `(key, None)` for a delete.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], Option<&[u8]>)> + '_ {
        let mut start = 0;
        self.entries.iter().map(move |&(key_end, value_end)| {
            let key = &self.data[start..key_end];
            let value = value_end.map(|e| &self.data[key_end..e]);
            start = value_end.unwrap_or(key_end);
            (key, value)
        })
    }
}

/// A key-value engine the runner can drive from many threads at once.
pub trait KvEngine: Send + Sync {
    /// The engine's name, for reports.
    fn name(&self) -> &str;
    /// Writes `key` -> `value`.
    fn put(&self, key: &[u8], value: &[u8]) -> EngineResult<()>;
    /// Deletes `key`.
    fn delete(&self, key: &[u8]) -> EngineResult<()>;
    /// Reads `key` into `value` (replacing its contents); returns whether the key was found.
    /// Passing the buffer lets engines that can copy into it avoid an allocation per read.
    fn get(&self, key: &[u8], value: &mut Vec<u8>) -> EngineResult<bool>;
    /// A new, unpositioned cursor over the latest state.
    fn cursor(&self) -> EngineResult<Box<dyn KvCursor + '_>>;
    /// Applies `batch` atomically. Default (engines without batches): one write per entry, in
    /// order, not atomic.
    fn write_batch(&self, batch: &KvBatch) -> EngineResult<()> {
        for (key, value) in batch.iter() {
            match value {
                Some(v) => self.put(key, v)?,
                None => self.delete(key)?,
            }
        }
        Ok(())
    }
    /// Reads `keys`, all as of one point in time where the engine has snapshots, into
    /// `values` (one entry per key, `None` when absent). Default: one get per key.
    fn multi_get(&self, keys: &[&[u8]], values: &mut Vec<Option<Vec<u8>>>) -> EngineResult<()> {
        values.clear();
        let mut buf = Vec::new();
        for key in keys {
            values.push(self.get(key, &mut buf)?.then(|| buf.clone()));
        }
        Ok(())
    }
    /// Every live table (db_bench's `sstables`), when the engine lists them. Default: not
    /// listed.
    fn live_tables(&self) -> EngineResult<Option<Vec<crate::report::TableInfo>>> {
        Ok(None)
    }
    /// Compacts the whole key range and waits (db_bench's `compact`). Default: nothing to
    /// compact.
    fn compact(&self) -> EngineResult<()> {
        Ok(())
    }
    /// Makes buffered writes durable in the engine's persistent structures and waits. Default:
    /// nothing to flush.
    fn flush(&self) -> EngineResult<()> {
        Ok(())
    }
    /// Waits until the engine has no background work left (flushes, compactions). Default:
    /// nothing runs in the background.
    fn wait_for_compaction(&self) -> EngineResult<()> {
        Ok(())
    }
    /// The engine's own figures, when it has TierKV's. Default: none.
    fn stats(&self) -> Option<DbStats> {
        None
    }
    /// Key + value bytes of the live data, when the engine can measure it (may scan). Default:
    /// not measured.
    fn logical_size(&self) -> EngineResult<Option<u64>> {
        Ok(None)
    }
    /// Waits for background work and closes the engine. Default: nothing to close.
    fn close(self: Box<Self>) -> EngineResult<()> {
        Ok(())
    }
}

/// [`KvEngine`] over a TierKV database.
pub struct TierKvEngine {
    db: Db,
    write_options: WriteOptions,
}

impl TierKvEngine {
    /// Opens the database in `path` with `options`; writes use `write_options`.
    pub fn open(
        path: impl AsRef<Path>,
        options: Options,
        write_options: WriteOptions,
    ) -> EngineResult<Self> {
        Ok(TierKvEngine {
            db: Db::open(path, options)?,
            write_options,
        })
    }

    /// Wraps an open database.
    pub fn new(db: Db, write_options: WriteOptions) -> Self {
        TierKvEngine { db, write_options }
    }

    /// The database.
    pub fn db(&self) -> &Db {
        &self.db
    }
}

impl KvEngine for TierKvEngine {
    fn name(&self) -> &str {
        "tierkv"
    }

    fn put(&self, key: &[u8], value: &[u8]) -> EngineResult<()> {
        if self.write_options.sync || self.write_options.disable_wal {
            // `Db::put` takes no write options: a synced or unlogged put goes through a
            // one-entry batch.
            let mut batch = WriteBatch::new();
            batch.put(key, value);
            self.db.write(&self.write_options, batch)?;
        } else {
            self.db.put(key, value)?;
        }
        Ok(())
    }

    fn delete(&self, key: &[u8]) -> EngineResult<()> {
        if self.write_options.sync || self.write_options.disable_wal {
            let mut batch = WriteBatch::new();
            batch.delete(key);
            self.db.write(&self.write_options, batch)?;
        } else {
            self.db.delete(key)?;
        }
        Ok(())
    }

    fn get(&self, key: &[u8], value: &mut Vec<u8>) -> EngineResult<bool> {
        match self.db.get(key)? {
            Some(v) => {
                *value = v;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn cursor(&self) -> EngineResult<Box<dyn KvCursor + '_>> {
        Ok(Box::new(TierKvCursor(
            self.db.iter(&ReadOptions::default())?,
        )))
    }

    fn write_batch(&self, batch: &KvBatch) -> EngineResult<()> {
        let mut b = WriteBatch::new();
        for (key, value) in batch.iter() {
            match value {
                Some(v) => b.put(key, v),
                None => b.delete(key),
            }
        }
        Ok(self.db.write(&self.write_options, b)?)
    }

    fn multi_get(&self, keys: &[&[u8]], values: &mut Vec<Option<Vec<u8>>>) -> EngineResult<()> {
        // One snapshot for the batch, so every key is read as of the same sequence number.
        let options = ReadOptions {
            snapshot: Some(self.db.snapshot()),
            ..ReadOptions::default()
        };
        values.clear();
        for key in keys {
            values.push(self.db.get_with(&options, key)?);
        }
        Ok(())
    }

    fn compact(&self) -> EngineResult<()> {
        Ok(self.db.compact_range(None, None)?)
    }

    fn live_tables(&self) -> EngineResult<Option<Vec<crate::report::TableInfo>>> {
        Ok(Some(
            self.db
                .live_tables()
                .into_iter()
                .map(|t| crate::report::TableInfo {
                    stage: t.stage,
                    group: t.group,
                    number: t.number,
                    tier: t.tier.name().to_string(),
                    bytes: t.file_size,
                    entries: Some(t.entries),
                    smallest: t.smallest_key,
                    largest: t.largest_key,
                    part_of: t.backing,
                })
                .collect(),
        ))
    }

    fn flush(&self) -> EngineResult<()> {
        Ok(self.db.flush()?)
    }

    fn wait_for_compaction(&self) -> EngineResult<()> {
        Ok(self.db.wait_for_background_work()?)
    }

    fn stats(&self) -> Option<DbStats> {
        Some(self.db.stats())
    }

    fn logical_size(&self) -> EngineResult<Option<u64>> {
        Ok(Some(self.db.logical_size()?))
    }

    fn close(self: Box<Self>) -> EngineResult<()> {
        Ok(self.db.close()?)
    }
}

struct TierKvCursor(DbIterator);

impl KvCursor for TierKvCursor {
    fn seek_to_first(&mut self) {
        self.0.seek_to_first();
    }
    fn seek(&mut self, key: &[u8]) {
        self.0.seek(key);
    }
    fn valid(&self) -> bool {
        self.0.valid()
    }
    fn next(&mut self) {
        // The inherent `DbIterator::next` (advance), not `Iterator::next`.
        DbIterator::next(&mut self.0);
    }
    fn key(&self) -> &[u8] {
        self.0.key()
    }
    fn value(&self) -> &[u8] {
        self.0.value()
    }
    fn status(&self) -> EngineResult<()> {
        Ok(self.0.status()?)
    }
}

/// An engine that stores nothing: writes succeed, reads find nothing, and its cursors are
/// always valid on an empty key and value (so scans run to their limit). It counts the calls it
/// receives, which makes it useful to test the runner and to measure the harness's own cost.
#[derive(Debug, Default)]
pub struct NullEngine {
    /// Puts received.
    pub puts: AtomicU64,
    /// Deletes received.
    pub deletes: AtomicU64,
    /// Gets received.
    pub gets: AtomicU64,
    /// Cursor seeks (`seek` and `seek_to_first`) received.
    pub seeks: AtomicU64,
    /// Cursor `next` calls received.
    pub nexts: AtomicU64,
}

impl KvEngine for NullEngine {
    fn name(&self) -> &str {
        "null"
    }
    fn put(&self, _key: &[u8], _value: &[u8]) -> EngineResult<()> {
        self.puts.fetch_add(1, Relaxed);
        Ok(())
    }
    fn delete(&self, _key: &[u8]) -> EngineResult<()> {
        self.deletes.fetch_add(1, Relaxed);
        Ok(())
    }
    fn get(&self, _key: &[u8], _value: &mut Vec<u8>) -> EngineResult<bool> {
        self.gets.fetch_add(1, Relaxed);
        Ok(false)
    }
    fn cursor(&self) -> EngineResult<Box<dyn KvCursor + '_>> {
        Ok(Box::new(NullCursor(self)))
    }
}

struct NullCursor<'a>(&'a NullEngine);

impl KvCursor for NullCursor<'_> {
    fn seek_to_first(&mut self) {
        self.0.seeks.fetch_add(1, Relaxed);
    }
    fn seek(&mut self, _key: &[u8]) {
        self.0.seeks.fetch_add(1, Relaxed);
    }
    fn valid(&self) -> bool {
        true
    }
    fn next(&mut self) {
        self.0.nexts.fetch_add(1, Relaxed);
    }
    fn key(&self) -> &[u8] {
        &[]
    }
    fn value(&self) -> &[u8] {
        &[]
    }
    fn status(&self) -> EngineResult<()> {
        Ok(())
    }
}

type Map = BTreeMap<Vec<u8>, Vec<u8>>;

/// An in-memory engine (a `BTreeMap` behind a lock), for tests of the runner's semantics.
#[derive(Debug, Default, Clone)]
pub struct MemEngine {
    map: Arc<RwLock<Map>>,
}

impl MemEngine {
    /// Number of keys stored.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// True when nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Map> {
        self.map.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Map> {
        self.map.write().unwrap_or_else(|e| e.into_inner())
    }
}

impl KvEngine for MemEngine {
    fn name(&self) -> &str {
        "memory"
    }
    fn put(&self, key: &[u8], value: &[u8]) -> EngineResult<()> {
        self.write().insert(key.to_vec(), value.to_vec());
        Ok(())
    }
    fn delete(&self, key: &[u8]) -> EngineResult<()> {
        self.write().remove(key);
        Ok(())
    }
    fn get(&self, key: &[u8], value: &mut Vec<u8>) -> EngineResult<bool> {
        match self.read().get(key) {
            Some(v) => {
                value.clear();
                value.extend_from_slice(v);
                Ok(true)
            }
            None => Ok(false),
        }
    }
    fn cursor(&self) -> EngineResult<Box<dyn KvCursor + '_>> {
        Ok(Box::new(MemCursor {
            engine: self,
            current: None,
        }))
    }
    fn logical_size(&self) -> EngineResult<Option<u64>> {
        Ok(Some(
            self.read()
                .iter()
                .map(|(k, v)| (k.len() + v.len()) as u64)
                .sum(),
        ))
    }
}

struct MemCursor<'a> {
    engine: &'a MemEngine,
    current: Option<(Vec<u8>, Vec<u8>)>,
}

impl MemCursor<'_> {
    fn position(&mut self, from: Bound<&[u8]>) {
        let map = self.engine.read();
        self.current = map
            .range::<[u8], _>((from, Bound::Unbounded))
            .next()
            .map(|(k, v)| (k.clone(), v.clone()));
    }
}

impl KvCursor for MemCursor<'_> {
    fn seek_to_first(&mut self) {
        self.position(Bound::Unbounded);
    }
    fn seek(&mut self, key: &[u8]) {
        self.position(Bound::Included(key));
    }
    fn valid(&self) -> bool {
        self.current.is_some()
    }
    fn next(&mut self) {
        if let Some((k, _)) = self.current.take() {
            self.position(Bound::Excluded(&k));
        }
    }
    fn key(&self) -> &[u8] {
        self.current.as_ref().map_or(&[], |(k, _)| k)
    }
    fn value(&self) -> &[u8] {
        self.current.as_ref().map_or(&[], |(_, v)| v)
    }
    fn status(&self) -> EngineResult<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_engine_behaves_like_a_map() {
        let e = MemEngine::default();
        e.put(b"b", b"2").unwrap();
        e.put(b"a", b"1").unwrap();
        e.put(b"c", b"3").unwrap();
        e.delete(b"c").unwrap();
        let mut v = Vec::new();
        assert!(e.get(b"a", &mut v).unwrap());
        assert_eq!(v, b"1");
        assert!(!e.get(b"c", &mut v).unwrap());
        let mut c = e.cursor().unwrap();
        c.seek_to_first();
        let mut seen = Vec::new();
        while c.valid() {
            seen.push((c.key().to_vec(), c.value().to_vec()));
            c.next();
        }
        assert_eq!(
            seen,
            vec![
                (b"a".to_vec(), b"1".to_vec()),
                (b"b".to_vec(), b"2".to_vec())
            ]
        );
        c.seek(b"ab");
        assert_eq!(c.key(), b"b");
        c.seek(b"z");
        assert!(!c.valid());
        drop(c);
        assert_eq!(e.logical_size().unwrap(), Some(4));
        assert_eq!(e.len(), 2);
    }

    #[test]
    fn null_engine_counts_calls() {
        let e = NullEngine::default();
        e.put(b"k", b"v").unwrap();
        e.delete(b"k").unwrap();
        let mut v = Vec::new();
        assert!(!e.get(b"k", &mut v).unwrap());
        let mut c = e.cursor().unwrap();
        c.seek(b"k");
        assert!(c.valid());
        c.next();
        drop(c);
        assert_eq!(e.puts.load(Relaxed), 1);
        assert_eq!(e.deletes.load(Relaxed), 1);
        assert_eq!(e.gets.load(Relaxed), 1);
        assert_eq!(e.seeks.load(Relaxed), 1);
        assert_eq!(e.nexts.load(Relaxed), 1);
        assert!(e.stats().is_none());
    }
}
