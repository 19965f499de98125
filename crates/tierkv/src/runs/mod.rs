//! Runs of every kind behind one interface: the readers the table cache keeps open
//! ([`OpenRun`]) and the writers flushes and compactions build runs with ([`RunWriter`]).
//!
//! Two kinds exist: SSTables (`sst/`, on SSD or in the PM pool, read through blocks) and PM
//! sorted arrays (`parray/`, in the PM pool, searched in place entry by entry, optionally with
//! cascade pointers into the lower floors of their set). A stage that only needs point lookups
//! and iterators reads any kind through [`OpenRun`]; a stage that needs the array's own
//! structure (the Skip-Array Tree's cascading search) takes it with [`OpenRun::array`].

use crate::format::{
    compare_internal, lookup_key, make_internal_key, user_key, ValueType, MAX_SEQUENCE,
};
use crate::fs::FileSystem;
use crate::iterator::InternalIterator;
use crate::options::TableOptions;
use crate::parray::live::RowDead;
use crate::parray::{ArrayBuilder, PmArray, PointerBuilder};
use crate::sst::table_builder::TableSummary;
use crate::sst::{Table, TableBuilder, ValueLogWriter, ValueLogs};
use crate::stats::{IoPurpose, Part};
use crate::tier::Tier;
pub(crate) use crate::version::run_file_name;
use crate::version::RunKind;
use crate::Result;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod table_cache;

pub(crate) use table_cache::TableCache;

/// An open run.
#[derive(Clone)]
pub(crate) enum OpenRun {
    /// An SSTable.
    Sst(Arc<Table>),
    /// A PM sorted array.
    Array(Arc<PmArray>),
    /// Part of an SSTable: its entries whose user keys lie in the bounds (a run made of part
    /// of another run's file, [`crate::version::FileMetaData::backing`]).
    Slice(Arc<Table>, Arc<Clip>),
}

/// The user-key bounds of a run made of part of another run's file: `[first, last]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Clip {
    /// The first user key of the part.
    pub first: Vec<u8>,
    /// The last user key of the part.
    pub last: Vec<u8>,
}

impl Clip {
    /// True if `user_key` lies in the bounds.
    pub fn contains(&self, user_key: &[u8]) -> bool {
        self.first.as_slice() <= user_key && user_key <= self.last.as_slice()
    }
}

impl OpenRun {
    /// The first entry `>= lookup` (an internal key) if it has the lookup's user key, as
    /// `(internal key, value)`; `None` otherwise, or when the run's filter rules the key out.
    pub fn get(
        &self,
        lookup: &[u8],
        purpose: IoPurpose,
        fill_cache: bool,
    ) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        match self {
            OpenRun::Sst(t) => t.get(lookup, purpose, fill_cache),
            OpenRun::Array(a) => array_get(a, lookup, purpose),
            OpenRun::Slice(t, clip) => match clip.contains(user_key(lookup)) {
                true => t.get(lookup, purpose, fill_cache),
                false => Ok(None),
            },
        }
    }

    /// An iterator over every entry; it keeps the run open.
    pub fn iter(&self, purpose: IoPurpose, fill_cache: bool) -> Box<dyn InternalIterator> {
        match self {
            OpenRun::Sst(t) => Box::new(t.iter(purpose, fill_cache)),
            OpenRun::Array(a) => Box::new(a.iter(purpose)),
            OpenRun::Slice(t, clip) => {
                Box::new(ClipIter::new(t.iter(purpose, fill_cache), Arc::clone(clip)))
            }
        }
    }

    /// An iterator whose values are as the run stores them (a separated SSTable's pointers
    /// unresolved: for walks that look at keys only, or copy stored values); it keeps the run
    /// open.
    pub fn iter_stored(&self, purpose: IoPurpose) -> Box<dyn InternalIterator> {
        match self {
            OpenRun::Sst(t) => Box::new(t.iter_stored(purpose)),
            OpenRun::Array(a) => Box::new(a.iter(purpose)),
            OpenRun::Slice(t, clip) => {
                Box::new(ClipIter::new(t.iter_stored(purpose), Arc::clone(clip)))
            }
        }
    }

    /// The run's path.
    pub fn path(&self) -> &Path {
        match self {
            OpenRun::Sst(t) | OpenRun::Slice(t, _) => t.path(),
            OpenRun::Array(a) => a.path(),
        }
    }

    /// The SSTable the run reads (whole, or a part of it); `None` for a sorted array.
    pub fn table(&self) -> Option<&Arc<Table>> {
        match self {
            OpenRun::Sst(t) | OpenRun::Slice(t, _) => Some(t),
            OpenRun::Array(_) => None,
        }
    }

    /// DRAM held by the open run: (filter bytes, index bytes).
    pub fn resident_bytes(&self) -> (u64, u64) {
        match self {
            OpenRun::Sst(t) | OpenRun::Slice(t, _) => (t.filter_bytes(), t.index_bytes()),
            OpenRun::Array(a) => (a.filter_bytes(), 0),
        }
    }
}

/// An iterator over the entries of `inner` whose user keys lie in a [`Clip`].
pub(crate) struct ClipIter<I> {
    inner: I,
    clip: Arc<Clip>,
    /// The first internal key of the clip's first user key.
    start: Vec<u8>,
}

impl<I: InternalIterator> ClipIter<I> {
    pub(crate) fn new(inner: I, clip: Arc<Clip>) -> Self {
        let start = lookup_key(&clip.first, MAX_SEQUENCE);
        ClipIter { inner, clip, start }
    }
}

impl<I: InternalIterator> InternalIterator for ClipIter<I> {
    fn valid(&self) -> bool {
        self.inner.valid() && user_key(self.inner.key()) <= self.clip.last.as_slice()
    }
    fn seek_to_first(&mut self) {
        self.inner.seek(&self.start);
    }
    fn seek(&mut self, target: &[u8]) {
        if compare_internal(target, &self.start).is_lt() {
            self.inner.seek(&self.start);
        } else {
            self.inner.seek(target);
        }
    }
    fn next(&mut self) {
        self.inner.next();
    }
    fn key(&self) -> &[u8] {
        self.inner.key()
    }
    fn value(&self) -> &[u8] {
        self.inner.value()
    }
    fn status(&self) -> Result<()> {
        self.inner.status()
    }
}

/// An iterator over the entries of `inner` whose user keys lie in none of `holes` (sorted,
/// disjoint, inclusive user-key ranges); it seeks over each hole rather than reading it. A
/// compaction that leaves parts of an input file in place reads the rest of it this way.
pub(crate) struct SkipHoles<I> {
    inner: I,
    holes: Arc<Vec<(Vec<u8>, Vec<u8>)>>,
}

impl<I: InternalIterator> SkipHoles<I> {
    pub(crate) fn new(inner: I, holes: Arc<Vec<(Vec<u8>, Vec<u8>)>>) -> Self {
        SkipHoles { inner, holes }
    }

    /// Moves past every hole the iterator is in.
    fn skip(&mut self) {
        while self.inner.valid() {
            let uk = user_key(self.inner.key());
            let i = self.holes.partition_point(|(_, last)| last.as_slice() < uk);
            let Some((first, last)) = self.holes.get(i) else {
                return;
            };
            if uk < first.as_slice() {
                return;
            }
            // Past every version of the hole's last key.
            self.inner
                .seek(&make_internal_key(last, 0, ValueType::Deletion));
            while self.inner.valid() && user_key(self.inner.key()) == last.as_slice() {
                self.inner.next();
            }
        }
    }
}

impl<I: InternalIterator> InternalIterator for SkipHoles<I> {
    fn valid(&self) -> bool {
        self.inner.valid()
    }
    fn seek_to_first(&mut self) {
        self.inner.seek_to_first();
        self.skip();
    }
    fn seek(&mut self, target: &[u8]) {
        self.inner.seek(target);
        self.skip();
    }
    fn next(&mut self) {
        self.inner.next();
        self.skip();
    }
    fn key(&self) -> &[u8] {
        self.inner.key()
    }
    fn value(&self) -> &[u8] {
        self.inner.value()
    }
    fn status(&self) -> Result<()> {
        self.inner.status()
    }
}

/// [`OpenRun::get`] of a sorted array: the filter, then one binary search.
fn array_get(a: &PmArray, lookup: &[u8], purpose: IoPurpose) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
    let uk = user_key(lookup);
    if !a.may_contain(uk) {
        return Ok(None);
    }
    let i = a.lower_bound(lookup, 0, a.len(), purpose)?;
    if i == a.len() {
        return Ok(None);
    }
    let (ikey, value) = a.read(i, purpose)?;
    Ok((user_key(&ikey) == uk).then_some((ikey, value)))
}

/// Builds one run from entries in increasing internal-key order.
pub(crate) trait RunWriter: Send {
    /// Adds an entry.
    fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()>;
    /// Adds an entry whose value is in a separated table's stored form (see
    /// [`TableBuilder::add_stored`]); only SSTables with key-value separation take them.
    fn add_stored(&mut self, _ikey: &[u8], _stored: &[u8]) -> Result<()> {
        Err(crate::Error::InvalidArgument(
            "a stored value added to a run without key-value separation".into(),
        ))
    }
    /// About how many bytes the run has so far (where outputs are cut).
    fn size_estimate(&self) -> u64;
    /// About how many bytes the run's own file would have if finished now (without a value
    /// log of its own): where outputs in the PM pool are cut to fit whole chunks.
    fn file_estimate(&self) -> u64 {
        self.size_estimate()
    }
    /// Writes the rest and syncs the file.
    fn finish(self: Box<Self>) -> Result<TableSummary>;
    /// For an SSTable: the ordinal of the data block the next entry goes into (its handle is
    /// `data_blocks[ordinal]` of the summary); `None` for runs without data blocks.
    fn next_block(&self) -> Option<usize> {
        None
    }
}

impl RunWriter for TableBuilder {
    fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        TableBuilder::add(self, ikey, value)
    }
    fn add_stored(&mut self, ikey: &[u8], stored: &[u8]) -> Result<()> {
        TableBuilder::add_stored(self, ikey, stored)
    }
    fn size_estimate(&self) -> u64 {
        // Outputs are cut on what they write: the table and its own value log.
        self.file_size_estimate() + self.value_log_size()
    }
    fn file_estimate(&self) -> u64 {
        self.finished_size_estimate()
    }
    fn finish(self: Box<Self>) -> Result<TableSummary> {
        TableBuilder::finish(*self)
    }
    fn next_block(&self) -> Option<usize> {
        Some(TableBuilder::next_block(self))
    }
}

/// A sorted array, with the cascade pointers of a new top floor when it has floors below.
struct ArrayWriter {
    builder: ArrayBuilder,
    pointers: Option<PointerBuilder>,
}

impl RunWriter for ArrayWriter {
    fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        let next = match &mut self.pointers {
            Some(p) => p.next_for(ikey)?,
            None => None,
        };
        self.builder.add(ikey, value, next)
    }
    fn size_estimate(&self) -> u64 {
        self.builder.file_size_estimate()
    }
    fn finish(self: Box<Self>) -> Result<TableSummary> {
        let s = self.builder.finish()?;
        Ok(TableSummary {
            file_size: s.file_size,
            num_entries: s.num_entries,
            smallest: s.smallest,
            largest: s.largest,
            data_blocks: Vec::new(),
            value_refs: Vec::new(),
            value_log_bytes: 0,
        })
    }
}

/// Where a sorted array goes in its set: its floor slot, and the floors below it its cascade
/// pointers point into (none: no pointers).
pub(crate) struct FloorSpec {
    /// The new floor's slot (the number of floors below it).
    pub slot: u8,
    /// The floors below, bottom first, when the array gets cascade pointers.
    pub below: Option<Vec<Arc<PmArray>>>,
}

/// Key-value separation for a new SSTable (`table.value_separation`): the table's own value
/// log, and the logs a compaction rewrites instead of copying pointers into them.
pub(crate) struct SeparateValues {
    /// The file system of the table's tier.
    pub fs: Arc<dyn FileSystem>,
    /// The database directory.
    pub dir: PathBuf,
    /// The table's number (its value log's).
    pub number: u64,
    /// Values of at least this many bytes are separated.
    pub threshold: usize,
    /// Logs whose live values are copied (garbage collection), with their reader, tier and the
    /// part the reads count for.
    pub rewrite: Option<(HashSet<u64>, Arc<ValueLogs>, Tier, Part)>,
}

/// A writer for a new run of `kind` at `path` on `fs`; `floor` places a sorted array in its
/// set (ignored for SSTables); `separate` turns key-value separation on (SSTables only).
pub(crate) fn create_writer(
    fs: &dyn FileSystem,
    path: PathBuf,
    kind: RunKind,
    table: &TableOptions,
    floor: Option<FloorSpec>,
    separate: Option<SeparateValues>,
) -> Result<Box<dyn RunWriter>> {
    let file = fs.create(&path)?;
    Ok(match kind {
        RunKind::Sst => {
            let mut b = TableBuilder::new(table, file, path);
            if let Some(sv) = separate {
                b.separate_values(ValueLogWriter::new(sv.fs, &sv.dir, sv.number), sv.threshold);
                if let Some((logs, reader, tier, part)) = sv.rewrite {
                    b.rewrite_value_logs(logs, reader, tier, part);
                }
            }
            Box::new(b)
        }
        RunKind::PmArray => {
            let slot = floor.as_ref().map(|f| f.slot);
            let pointers = floor
                .and_then(|f| f.below)
                .filter(|below| !below.is_empty())
                .map(|below| PointerBuilder::new(below, IoPurpose::Compaction))
                .transpose()?;
            Box::new(ArrayWriter {
                builder: ArrayBuilder::new(file, path, table.bloom_bits_per_key, slot),
                pointers,
            })
        }
    })
}

/// Writes a row of a row container: a sorted array built for slot 1 whose entries carry the
/// cross-row hint into `over` (the newest row so far; none: no hints, slot none), with the
/// row's size sketch and no Bloom filter (TriangleKV's RowTable: section 3.1 of the paper).
pub(crate) struct RowWriter {
    builder: ArrayBuilder,
    hints: Option<PointerBuilder>,
    sketch: crate::version::SketchBuilder,
}

impl RowWriter {
    /// A writer for a new row at `path` on `fs`, with hints into `over` (the row and its dead
    /// ranges with their entries).
    pub(crate) fn create(
        fs: &dyn FileSystem,
        path: PathBuf,
        over: Option<(Arc<PmArray>, RowDead)>,
        purpose: IoPurpose,
    ) -> Result<RowWriter> {
        let file = fs.create(&path)?;
        let slot = over.as_ref().map(|_| 1);
        Ok(RowWriter {
            builder: ArrayBuilder::new(file, path, 0, slot),
            hints: over.map(|(o, dead)| PointerBuilder::over_row(o, dead, purpose)),
            sketch: crate::version::SketchBuilder::default(),
        })
    }

    /// Adds an entry (in increasing internal-key order).
    pub(crate) fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        let next = match &mut self.hints {
            Some(h) => h.next_for(ikey)?,
            None => None,
        };
        self.builder.add(ikey, value, next)?;
        let bytes = (crate::parray::ENTRY_LEN + ikey.len() + value.len()) as u64;
        self.sketch.add(user_key(ikey), bytes);
        Ok(())
    }

    /// Writes the rest, syncs the file; returns its summary and size sketch.
    pub(crate) fn finish(self) -> Result<(TableSummary, crate::version::Sketch)> {
        let s = self.builder.finish()?;
        Ok((
            TableSummary {
                file_size: s.file_size,
                num_entries: s.num_entries,
                smallest: s.smallest,
                largest: s.largest,
                data_blocks: Vec::new(),
                value_refs: Vec::new(),
                value_log_bytes: 0,
            },
            self.sketch.finish(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iterator::testing::VecIter;
    use proptest::prelude::*;

    /// Entries `(user key, sequence)` as internal keys, each value naming its key.
    fn entries(spec: &[(u8, u64)]) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out: Vec<(Vec<u8>, Vec<u8>)> = spec
            .iter()
            .map(|&(k, s)| {
                let ikey = make_internal_key(&[k], s, ValueType::Value);
                (ikey, format!("{k}@{s}").into_bytes())
            })
            .collect();
        out.sort_by(|a, b| compare_internal(&a.0, &b.0));
        out.dedup_by(|a, b| a.0 == b.0);
        out
    }

    /// Everything `it` yields after `seek` (or from the first entry).
    fn drain(it: &mut dyn InternalIterator, seek: Option<&[u8]>) -> Vec<Vec<u8>> {
        match seek {
            Some(t) => it.seek(t),
            None => it.seek_to_first(),
        }
        let mut out = Vec::new();
        while it.valid() {
            out.push(it.key().to_vec());
            it.next();
        }
        it.status().unwrap();
        out
    }

    /// Checks that `it`, over `all`, yields exactly the entries whose user keys `keep`
    /// accepts, from the first entry and from `target` (`(user key byte, sequence)`).
    fn yields_exactly(
        it: &mut dyn InternalIterator,
        all: &[(Vec<u8>, Vec<u8>)],
        keep: impl Fn(&[u8]) -> bool,
        target: (u8, u64),
    ) -> std::result::Result<(), TestCaseError> {
        let kept: Vec<Vec<u8>> = all
            .iter()
            .filter(|(k, _)| keep(user_key(k)))
            .map(|(k, _)| k.clone())
            .collect();
        prop_assert_eq!(drain(it, None), kept.clone());
        let t = make_internal_key(&[target.0], target.1, ValueType::Value);
        let want: Vec<Vec<u8>> = kept
            .into_iter()
            .filter(|k| compare_internal(k, &t).is_ge())
            .collect();
        prop_assert_eq!(drain(it, Some(&t)), want);
        Ok(())
    }

    proptest! {
        /// A clipped iterator yields exactly the entries whose user keys lie in the clip, every
        /// version of them, from the first entry or from any seek target.
        #[test]
        fn a_clip_yields_exactly_its_keys(
            spec in prop::collection::vec((0u8..20, 1u64..4), 0..60),
            bounds in (0u8..20, 0u8..20),
            target in (0u8..22, 0u64..5),
        ) {
            let (first, last) = (bounds.0.min(bounds.1), bounds.0.max(bounds.1));
            let all = entries(&spec);
            let clip = Arc::new(Clip { first: vec![first], last: vec![last] });
            let mut it = ClipIter::new(VecIter::new(all.clone(), None), Arc::clone(&clip));
            yields_exactly(&mut it, &all, |k| clip.contains(k), target)?;
        }

        /// Skipping holes yields exactly the entries whose user keys lie in no hole.
        #[test]
        fn holes_are_skipped_whole(
            spec in prop::collection::vec((0u8..30, 1u64..4), 0..80),
            cuts in prop::collection::btree_set(0u8..30, 0..8),
            target in (0u8..32, 0u64..5),
        ) {
            // Disjoint holes from sorted cuts, paired: [c0, c1], [c2, c3], ...
            let cuts: Vec<u8> = cuts.into_iter().collect();
            let holes: Vec<(Vec<u8>, Vec<u8>)> =
                cuts.chunks_exact(2).map(|c| (vec![c[0]], vec![c[1]])).collect();
            let in_hole = |k: &[u8]| holes.iter().any(|(a, b)| a.as_slice() <= k && k <= b.as_slice());
            let all = entries(&spec);
            let mut it = SkipHoles::new(VecIter::new(all.clone(), None), Arc::new(holes.clone()));
            yields_exactly(&mut it, &all, |k| !in_hole(k), target)?;
        }
    }
}
