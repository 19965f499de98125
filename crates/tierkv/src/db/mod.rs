//! The database: open/recover, the write path, reads, iterators, snapshots, background work.
//! (Public surface fixed here; the implementation is being written.)

use crate::options::{Options, ReadOptions, WriteOptions};
use crate::stats::DbStats;
use crate::{Result, WriteBatch};
use std::ops::RangeBounds;
use std::path::Path;

/// An open database. `Send + Sync`: share it between threads with an `Arc`.
pub struct Db {
    _private: (),
}

/// A consistent read view; reads through it see the database as of its creation.
#[derive(Clone, Debug)]
pub struct Snapshot {
    _private: (),
}

/// What `Db::check` verified.
#[derive(Clone, Debug, Default)]
pub struct CheckReport {
    /// Tables whose every block checksum was verified.
    pub tables_checked: usize,
    /// Entries read from those tables.
    pub entries_checked: u64,
}

/// A forward iterator over user keys and values.
pub struct DbIterator {
    _private: (),
}

impl DbIterator {
    /// True when positioned on an entry.
    pub fn valid(&self) -> bool {
        todo!()
    }
    /// Positions on the first key (of the iterator's range).
    pub fn seek_to_first(&mut self) {
        todo!()
    }
    /// Positions on the first key `>= key`.
    pub fn seek(&mut self, _key: &[u8]) {
        todo!()
    }
    /// Advances. REQUIRES: valid.
    pub fn next(&mut self) {
        todo!()
    }
    /// Current key. REQUIRES: valid.
    pub fn key(&self) -> &[u8] {
        todo!()
    }
    /// Current value. REQUIRES: valid.
    pub fn value(&self) -> &[u8] {
        todo!()
    }
    /// The first error met.
    pub fn status(&self) -> Result<()> {
        todo!()
    }
}

impl Iterator for DbIterator {
    type Item = Result<(Vec<u8>, Vec<u8>)>;
    fn next(&mut self) -> Option<Self::Item> {
        todo!()
    }
}

impl Db {
    /// Opens (creating if allowed) the database in directory `path`.
    pub fn open(_path: impl AsRef<Path>, _options: Options) -> Result<Db> {
        todo!()
    }
    /// Puts `key` -> `value`.
    pub fn put(&self, _key: &[u8], _value: &[u8]) -> Result<()> {
        todo!()
    }
    /// Deletes `key`.
    pub fn delete(&self, _key: &[u8]) -> Result<()> {
        todo!()
    }
    /// Applies a batch atomically.
    pub fn write(&self, _options: &WriteOptions, _batch: WriteBatch) -> Result<()> {
        todo!()
    }
    /// Reads the latest value of `key`.
    pub fn get(&self, _key: &[u8]) -> Result<Option<Vec<u8>>> {
        todo!()
    }
    /// Reads `key` with options (snapshot, cache fill).
    pub fn get_with(&self, _options: &ReadOptions, _key: &[u8]) -> Result<Option<Vec<u8>>> {
        todo!()
    }
    /// Takes a snapshot.
    pub fn snapshot(&self) -> Snapshot {
        todo!()
    }
    /// An iterator over the whole database, not positioned.
    pub fn iter(&self, _options: &ReadOptions) -> Result<DbIterator> {
        todo!()
    }
    /// An iterator over `range`, positioned on its first key.
    pub fn scan<'a, R: RangeBounds<&'a [u8]>>(&self, _range: R) -> Result<DbIterator> {
        todo!()
    }
    /// `scan` with read options.
    pub fn scan_with<'a, R: RangeBounds<&'a [u8]>>(
        &self,
        _options: &ReadOptions,
        _range: R,
    ) -> Result<DbIterator> {
        todo!()
    }
    /// Flushes the memtable to L0 and waits.
    pub fn flush(&self) -> Result<()> {
        todo!()
    }
    /// Compacts the key range (all keys when both bounds are `None`) down the levels and waits.
    pub fn compact_range(&self, _begin: Option<&[u8]>, _end: Option<&[u8]>) -> Result<()> {
        todo!()
    }
    /// Every figure of the database.
    pub fn stats(&self) -> DbStats {
        todo!()
    }
    /// Key + value bytes of the live data (scans the database).
    pub fn logical_size(&self) -> Result<u64> {
        todo!()
    }
    /// The options in force.
    pub fn options(&self) -> &Options {
        todo!()
    }
    /// Waits for background work to stop and closes the database.
    pub fn close(self) -> Result<()> {
        todo!()
    }
    /// Verifies every checksum and the version invariants of the database at `path`.
    pub fn check(_path: impl AsRef<Path>, _options: Options) -> Result<CheckReport> {
        todo!()
    }
}
