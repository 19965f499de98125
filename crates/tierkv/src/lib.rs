//! TierKV: an embedded key-value storage engine for DRAM, persistent memory and SSD.
//!
//! This crate is the engine: the write path (write batches, the record log used as WAL, the DRAM
//! memtable), the SSTable format, versions and the manifest, compaction policies and executors,
//! iterators, statistics, and the file-system seam that tests use to simulate crashes.
//!
//! ```
//! use tierkv::{Db, Options, WriteBatch, WriteOptions};
//! let dir = tempfile::tempdir().unwrap();
//! let db = Db::open(dir.path(), Options::default()).unwrap();
//! db.put(b"apple", b"red").unwrap();
//! let mut batch = WriteBatch::new();
//! batch.put(b"banana", b"yellow");
//! batch.delete(b"apple");
//! db.write(&WriteOptions::default(), batch).unwrap();
//! assert_eq!(db.get(b"apple").unwrap(), None);
//! let all: Vec<_> = db.scan(..).unwrap().collect::<Result<_, _>>().unwrap();
//! assert_eq!(all, vec![(b"banana".to_vec(), b"yellow".to_vec())]);
//! ```
//!
//! Thread-safety: [`Db`] is `Send + Sync`; share it with an `Arc` and call it from any thread.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod compaction;
pub mod db;
pub mod error;
pub mod format;
pub mod fs;
pub mod iterator;
pub mod log;
pub mod memtable;
pub mod options;
pub mod sst;
pub mod stats;
pub mod util;
pub mod version;
pub mod write_batch;

pub use db::{CheckReport, Db, DbIterator, RepairReport, Snapshot};
pub use error::{Error, Result};
pub use options::{
    CompactionOptions, Design, Options, PmOptions, ReadOptions, SsdModelOptions, TableOptions,
    WriteOptions,
};
pub use stats::DbStats;
pub use tierkv_pm as pm;
pub use write_batch::WriteBatch;
