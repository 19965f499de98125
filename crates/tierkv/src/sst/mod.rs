//! The SSTable format: sorted, immutable table files of internal keys, with prefix-compressed
//! data blocks, a parsed-in-memory index, one full Bloom filter over user keys, and a
//! checksummed footer. The byte layout is specified in `docs/format-sst.md`.
//!
//! * [`TableBuilder`] writes a table from entries in [`compare_internal`] order;
//! * [`Table`] opens one for point lookups ([`Table::get`]) and iteration ([`Table::iter`]);
//! * [`BlockCache`] caches data blocks of all open tables.
//!
//! Thread-safety: [`Table`] and [`BlockCache`] are `Send + Sync` and shared by `Arc`; builders
//! and iterators have one owner.
//!
//! Invariants: every block is checksummed and verified on each read from the file; decoding
//! damaged bytes yields [`crate::Error::Corruption`] naming the file and block offset, never a
//! panic or wrong data.
//!
//! [`compare_internal`]: crate::format::compare_internal

pub mod block;
pub mod block_builder;
pub mod cache;
pub mod filter;
pub mod format;
pub mod table;
pub mod table_builder;
pub mod value_log;

#[cfg(test)]
mod tests;

pub use cache::BlockCache;
pub use table::Table;
pub use table_builder::TableBuilder;
pub use value_log::{ValueLogWriter, ValueLogs};
