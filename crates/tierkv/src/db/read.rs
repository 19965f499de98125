//! Point lookups and iterator construction.
//!
//! A lookup walks the sources newest to oldest and stops at the first that knows the key (a
//! value or a tombstone): the front end's write buffers, then each stage in pipeline order (the
//! leveled stage: L0 tables newest first, then at most one table per deeper level).

use super::inner::SuperVersion;
use super::iter::{merged_sources, DbIterator};
use super::DbInner;
use crate::format::{lookup_key, ValueType};
use crate::memtable::LookupResult;
use crate::options::ReadOptions;
use crate::pipeline::ReadContext;
use crate::stats::{IoPurpose, Part};
use crate::Result;
use std::ops::Bound;
use std::sync::atomic::Ordering::{Acquire, Relaxed};
use std::sync::Arc;

impl DbInner {
    /// The sources and the sequence number a read uses. Without an explicit snapshot, the
    /// super version is taken BEFORE the last sequence is read: a compaction computes the
    /// versions it may drop from `last_sequence` and installs its output afterwards, so a reader
    /// that sees the compacted files also reads a sequence at least as new as the compaction's
    /// view (the newer versions that shadowed the dropped ones are visible to it), and a reader
    /// that read the sequence earlier still holds the old files.
    fn read_view(&self, options: &ReadOptions) -> (Arc<SuperVersion>, u64) {
        let sv = self.super_version();
        let snapshot = match &options.snapshot {
            Some(s) => s.sequence(),
            None => self.last_sequence.load(Acquire),
        };
        (sv, snapshot)
    }

    pub(crate) fn get(&self, options: &ReadOptions, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.counters.user_gets.fetch_add(1, Relaxed);
        let (sv, snapshot) = self.read_view(options);
        let found = |v: Option<Vec<u8>>| {
            if let Some(v) = &v {
                self.counters
                    .user_bytes_read
                    .fetch_add((key.len() + v.len()) as u64, Relaxed);
            }
            Ok(v)
        };
        match sv.front.get(key, snapshot)? {
            LookupResult::Found(v) => return found(Some(v)),
            LookupResult::Deleted => return Ok(None),
            LookupResult::Absent => {}
        }
        let lookup = lookup_key(key, snapshot);
        for (i, stage) in self.stages.iter().enumerate() {
            let cx = ReadContext {
                tables: &self.table_cache,
                part: Part::Stage(i),
                purpose: IoPurpose::UserRead,
                fill_cache: !options.skip_cache_fill,
                sequence: snapshot,
                pinned: options.snapshot.is_some(),
            };
            if let Some((value_type, value)) = stage.get(&cx, sv.version.stage(i), key, &lookup)? {
                return match value_type {
                    ValueType::Value => found(Some(value)),
                    ValueType::Deletion => Ok(None),
                };
            }
        }
        Ok(None)
    }

    pub(crate) fn iterator(
        self: &Arc<Self>,
        options: &ReadOptions,
        lower: Bound<Vec<u8>>,
        upper: Bound<Vec<u8>>,
        count_bytes: bool,
    ) -> Result<DbIterator> {
        let (sv, mut snapshot) = self.read_view(options);
        // A stage that keeps older versions only for live snapshots: an iterator without one
        // pins its sequence as one for its lifetime.
        let pin = (options.snapshot.is_none()
            && self
                .stages
                .iter()
                .any(|s| s.keeps_versions_for_snapshots_only()))
        .then(|| self.snapshots.acquire_latest(&self.last_sequence));
        if let Some(p) = &pin {
            snapshot = p.sequence();
        }
        let merged = merged_sources(
            self,
            &sv,
            IoPurpose::UserRead,
            !options.skip_cache_fill,
            snapshot,
            options.snapshot.is_some() || pin.is_some(),
        )?;
        Ok(DbIterator::new(
            Arc::clone(self),
            sv,
            merged,
            pin,
            snapshot,
            lower,
            upper,
            count_bytes,
        ))
    }
}
