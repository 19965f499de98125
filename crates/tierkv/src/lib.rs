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
//!
//! The public API is what this page re-exports, plus [`fs`] (the file-system seam, to run the
//! engine over another file system) and [`stats`] (the figures [`Db::stats`] returns). With the
//! `test-util` feature, `fs::MemFs` simulates crashes and I/O faults for tests.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub(crate) mod compaction;
pub(crate) mod db;
pub(crate) mod designs;
pub(crate) mod error;
pub(crate) mod filename;
pub(crate) mod format;
pub(crate) mod front_ends;
pub mod fs;
pub(crate) mod gindex;
pub(crate) mod iterator;
pub(crate) mod labdb;
pub(crate) mod log;
pub(crate) mod memtable;
pub(crate) mod options;
pub(crate) mod parray;
pub(crate) mod pbtree;
pub(crate) mod pipeline;
pub(crate) mod plist;
pub(crate) mod pm_structures;
pub(crate) mod pmtable;
pub(crate) mod runs;
pub(crate) mod simulate;
pub(crate) mod snapshot;
pub(crate) mod sst;
pub(crate) mod stages;
pub mod stats;
pub(crate) mod tier;
pub(crate) mod util;
pub(crate) mod version;
pub(crate) mod write_batch;

pub use compaction::max_bytes_for_level;
pub use db::{pool_lock_path, CheckReport, Db, DbIterator, RepairReport};
pub use error::{Error, Result};
pub use options::{
    CompactionOptions, Design, FilterScope, LabOptions, NvlsmOptions, Options, PmOptions,
    ReadOptions, RowOptions, SlmOptions, SsdModelOptions, TableOptions, UniversalOptions,
    WriteOptions,
};
pub use simulate::{simulate as simulate_compaction, GroupReport, SimulationReport, StageReport};
pub use snapshot::Snapshot;
pub use stats::{DbStats, LiveTable};
pub use tier::Tier;
pub use tierkv_pm as pm;
pub use version::CreationFields;
pub use write_batch::WriteBatch;
