//! Point lookups, iterator construction, and the user-facing `flush` and `compact_range`.
//!
//! A lookup walks the sources newest to oldest and stops at the first that knows the key:
//! the active memtable, the immutable memtables (newest first), the L0 tables (newest first,
//! only those whose key range covers the key), then at most one table per deeper level.

use super::iter::{merged_sources, DbIterator};
use super::DbInner;
use crate::compaction;
use crate::format::{lookup_key, parse_internal_key, ValueType};
use crate::memtable::LookupResult;
use crate::options::ReadOptions;
use crate::stats::IoPurpose;
use crate::{Error, Result};
use std::ops::Bound;
use std::sync::atomic::Ordering::{Acquire, Relaxed};
use std::sync::Arc;
use std::time::Duration;

impl DbInner {
    /// The sources and the sequence number a read uses. Without an explicit snapshot, the
    /// super version is taken BEFORE the last sequence is read: a compaction computes the
    /// versions it may drop from `last_sequence` and installs its output afterwards, so a reader
    /// that sees the compacted files also reads a sequence at least as new as the compaction's
    /// view (the newer versions that shadowed the dropped ones are visible to it), and a reader
    /// that read the sequence earlier still holds the old files.
    fn read_view(&self, options: &ReadOptions) -> (Arc<super::SuperVersion>, u64) {
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
        for mem in std::iter::once(&sv.mem).chain(sv.imm.iter().rev()) {
            match mem.get(key, snapshot) {
                LookupResult::Found(v) => return found(Some(v)),
                LookupResult::Deleted => return Ok(None),
                LookupResult::Absent => {}
            }
        }
        let lookup = lookup_key(key, snapshot);
        let fill = !options.skip_cache_fill;
        let version = &sv.version;
        let level0 = version.levels[0]
            .iter()
            .rev()
            .filter(|f| f.smallest_user_key() <= key && key <= f.largest_user_key());
        let deeper = (1..version.levels.len()).filter_map(|l| version.file_for_key(l, key));
        for f in level0.chain(deeper) {
            let table = self.table_cache.get(f, crate::stats::Part::Stage(0))?;
            if let Some((ikey, value)) = table.get(&lookup, IoPurpose::UserRead, fill)? {
                let p = parse_internal_key(&ikey).ok_or_else(|| {
                    Error::corruption(format!("table {}", f.number), "malformed internal key")
                })?;
                debug_assert_eq!(p.user_key, key);
                return match p.value_type {
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
        let (sv, snapshot) = self.read_view(options);
        let merged = merged_sources(self, &sv, IoPurpose::UserRead, !options.skip_cache_fill)?;
        Ok(DbIterator::new(
            Arc::clone(self),
            sv,
            merged,
            snapshot,
            lower,
            upper,
            count_bytes,
        ))
    }

    /// Rotates the memtable (if it holds anything) and waits until every immutable memtable is
    /// flushed.
    pub(crate) fn flush(&self) -> Result<()> {
        {
            let mut wal = self.wal.lock();
            self.make_room_for_write(&mut wal, true, 0)?;
        }
        let mut state = self.state.lock();
        while !state.imm.is_empty() {
            if let Some(e) = &state.bg_error {
                return Err(e.duplicate());
            }
            self.bg_cv.notify_all();
            self.bg_cv.wait_for(&mut state, Duration::from_millis(50));
        }
        match &state.bg_error {
            Some(e) => Err(e.duplicate()),
            None => Ok(()),
        }
    }

    /// Compacts `[begin, end]` level by level, down to the deepest level holding keys of the
    /// range (at least L1), as LevelDB's `CompactRange` does.
    pub(crate) fn compact_range(&self, begin: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        let mut state = self.state.lock();
        state.manual_compactions += 1;
        let current = state.versions.current();
        let max_level = (1..current.levels.len())
            .filter(|&l| !current.overlapping(l, begin, end).is_empty())
            .max()
            .unwrap_or(1);
        let mut result = Ok(());
        for level in 0..max_level {
            // Wait until the two levels are free, then take them.
            let plan = loop {
                if let Some(e) = &state.bg_error {
                    result = Err(e.duplicate());
                    break None;
                }
                if !state.busy_levels[level] && !state.busy_levels[level + 1] {
                    break compaction::manual(&state.versions.current(), level, begin, end);
                }
                self.bg_cv.wait_for(&mut state, Duration::from_millis(50));
            };
            if result.is_err() {
                break;
            }
            if let Some(plan) = plan {
                state.busy_levels[level] = true;
                state.busy_levels[level + 1] = true;
                drop(state);
                let r = self.run_plan(plan);
                state = self.state.lock();
                if let Err(e) = r {
                    result = Err(e);
                    break;
                }
            }
        }
        state.manual_compactions -= 1;
        self.bg_cv.notify_all();
        result
    }
}
