//! SLM-DB's single level (Kaiyrakhmet et al., FAST 2019): one group of SSTables on SSD whose
//! key ranges overlap, found through the global index in PM ([`crate::gindex`]) rather than by
//! searching the tables: a get is one tree lookup and one data-block read, with no Bloom filter
//! and no index block on the path; an iterator walks the tree. Compaction is selective
//! ([`crate::compaction::SelectivePolicy`]); writes are never slowed for it.

use crate::compaction::{CompactionPolicy, CompactionTask, SelectivePolicy};
use crate::format::{parse_internal_key, ValueType};
use crate::gindex::iter::IndexIterator;
use crate::gindex::with_handles;
use crate::gindex::{BlockReader, GlobalIndex, IndexedEntry};
use crate::iterator::InternalIterator;
use crate::options::Options;
use crate::pipeline::{
    add_kept, run_meta, AttachContext, CheckContext, CheckReport, CompactionRule, Entry,
    FlushSource, OutputBlocks, PoolStructure, ReadContext, RuleContext, RunTarget, Stage,
    StageHost, WritePressure,
};
use crate::runs::run_file_name;
use crate::sst::TableBuilder;
use crate::stats::{IoPurpose, Part};
use crate::tier::Tier;
use crate::version::{FileMetaData, GroupOrder, RunKind, StageLayout, StageVersion, Version};
use crate::{Error, Result};
use parking_lot::Mutex;
use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Weak};

/// The single level and its global index.
pub(crate) struct SingleLevelStage {
    index: Arc<GlobalIndex>,
    policy: SelectivePolicy,
    /// The index keeps its inner nodes in PM (`slmdb.inner_nodes_in_pm`).
    inner_in_pm: bool,
}

impl SingleLevelStage {
    pub(crate) fn new(options: &Options) -> Self {
        let index = Arc::new(GlobalIndex::new(&options.slmdb));
        SingleLevelStage {
            policy: SelectivePolicy::new(Arc::clone(&index), options.compaction.target_file_size),
            index,
            inner_in_pm: options.slmdb.inner_nodes_in_pm,
        }
    }
}

impl Stage for SingleLevelStage {
    fn pool_structure(&self) -> Option<PoolStructure> {
        Some(PoolStructure::GlobalIndex {
            inner_in_pm: self.inner_in_pm,
        })
    }

    /// A table the global index maps keys into: each entry's data block is recorded, and the
    /// index learns the table once it is durable, before the manifest names it.
    fn write_flush_run(
        &self,
        host: &dyn StageHost,
        source: &dyn FlushSource,
        number: u64,
        target: RunTarget,
        _over: Option<&FileMetaData>,
    ) -> Result<Option<(FileMetaData, u64)>> {
        let fs = host.fs_for(target.tier);
        let path = run_file_name(host.dir(), number, target.kind);
        let file = fs.create(&path)?;
        let mut builder = TableBuilder::new(&host.options().table, file, path.clone());
        let mut blocks = Vec::new();
        let dropped = add_kept(source, host.smallest_snapshot(), |k, v| {
            blocks.push((k.to_vec(), builder.next_block()));
            builder.add(k, v)
        })?;
        let counters = host.counters();
        counters.flush_dropped_versions.fetch_add(dropped, Relaxed);
        let summary = builder.finish()?;
        fs.sync_dir(host.dir())?;
        let entries = with_handles(blocks, &summary.data_blocks, &path.display().to_string())?;
        let meta = run_meta(number, summary, target, None);
        self.index
            .index_flush(&Arc::new(meta.clone()), &entries, &host.live_snapshots())?;
        let index_bytes = self.index.take_pm_bytes();
        counters.add_written(Tier::Pm, Part::Stage(0), IoPurpose::Flush, index_bytes);
        Ok(Some((meta, index_bytes)))
    }

    /// Rule R2: the next leaf-scan window of the index, whose tables with keys spread over
    /// too many tables become compaction candidates.
    fn after_install(&self, state: &StageVersion) -> Result<()> {
        self.index.leaf_scan(state.groups[0].len())
    }

    /// Attaches the index to its tree, rebuilds its DRAM state and adopts the tables the tree
    /// names that the manifest lacks (`crate::gindex::recovery`).
    fn attach(&self, cx: &mut AttachContext<'_>) -> Result<()> {
        let tree = cx.pm.and_then(|p| p.index.clone()).ok_or_else(|| {
            Error::InvalidArgument("a design with a global index needs its PM pool".into())
        })?;
        self.index.attach(tree)?;
        crate::gindex::recovery::recover(cx.dir, cx.versions, &**cx.fs, cx.counters, &self.index)
    }

    fn check(&self, cx: &CheckContext<'_>, stage: usize, report: &mut CheckReport) -> Result<()> {
        match cx.pm.and_then(|p| p.index.as_ref()) {
            Some(tree) => check_index(cx, stage, tree, report),
            None => Ok(()),
        }
    }

    fn layout(&self) -> StageLayout {
        StageLayout {
            name: "single level",
            groups: vec![GroupOrder::Overlapping],
        }
    }

    fn ingest_target(&self) -> RunTarget {
        RunTarget {
            group: 0,
            tier: Tier::Ssd,
            kind: RunKind::Sst,
            row: false,
        }
    }

    fn get(
        &self,
        cx: &ReadContext<'_>,
        _state: &StageVersion,
        user_key: &[u8],
        lookup: &[u8],
    ) -> Result<Option<Entry>> {
        let seq = parse_internal_key(lookup)
            .ok_or_else(|| Error::InvalidArgument("malformed lookup key".into()))?
            .sequence;
        let reader = BlockReader {
            tables: cx.tables,
            part: cx.part,
            purpose: cx.purpose,
            fill_cache: cx.fill_cache,
        };
        let found = self.index.get(&reader, user_key, seq, cx.pinned)?;
        Ok(found.map(|(_, v)| (ValueType::Value, v)))
    }

    fn iterators(
        &self,
        cx: &ReadContext<'_>,
        _state: &StageVersion,
        out: &mut Vec<Box<dyn InternalIterator>>,
    ) -> Result<()> {
        out.push(Box::new(IndexIterator::new(
            Arc::clone(&self.index),
            Arc::clone(cx.tables),
            cx.part,
            cx.purpose,
            cx.fill_cache,
            cx.sequence,
            cx.pinned,
        )));
        Ok(())
    }

    /// Selective compaction keeps what the index points at, whatever lies elsewhere: the
    /// executor's tombstone rule does not apply. Conservatively true.
    fn may_hold_from(&self, _state: &StageVersion, _group: usize, _user_key: &[u8]) -> bool {
        true
    }

    fn write_pressure(&self, _state: &StageVersion) -> WritePressure {
        WritePressure::None
    }

    /// True: a global index points at one version of each key.
    fn keeps_versions_for_snapshots_only(&self) -> bool {
        true
    }

    fn add_stats(&self, _state: &StageVersion, stats: &mut crate::stats::DbStats) {
        stats.global_index = Some(self.index.stats());
    }

    fn policy(&self) -> &dyn CompactionPolicy {
        &self.policy
    }

    /// Selective compaction keeps exactly the entries the global index points at.
    fn compaction_rule(
        &self,
        _cx: &RuleContext<'_>,
        _task: &mut CompactionTask,
    ) -> Result<Box<dyn CompactionRule>> {
        Ok(Box::new(IndexRule {
            index: Arc::clone(&self.index),
            outputs: Mutex::new(Vec::new()),
        }))
    }

    /// True: the global index learns a flushed table before its manifest record.
    fn names_runs_before_manifest(&self) -> bool {
        true
    }
}

/// A compaction's part of the global index: each input entry is checked against the index
/// with its input run (SLM-DB's selective compaction keeps exactly what it points at), each
/// output's entries are recorded with their data blocks, and the index moves its pointers to
/// the outputs before the manifest record (a crash from then on leaves outputs the index
/// names, which recovery adopts) and forgets the inputs once the record is written.
struct IndexRule {
    index: Arc<GlobalIndex>,
    /// The finished outputs and their entries with their blocks.
    outputs: Mutex<Vec<(FileMetaData, Vec<IndexedEntry>)>>,
}

impl CompactionRule for IndexRule {
    fn plain(&self) -> bool {
        false
    }

    fn survives(&self, run: u64, user_key: &[u8], sequence: u64) -> Result<Option<bool>> {
        self.index.is_live(run, user_key, sequence).map(Some)
    }

    fn records_blocks(&self) -> bool {
        true
    }

    fn output_finished(
        &self,
        meta: &FileMetaData,
        path: &Path,
        blocks: Option<OutputBlocks<'_>>,
    ) -> Result<()> {
        let (entries, handles) = blocks.ok_or_else(|| {
            Error::InvalidArgument(format!("output {} without its blocks", meta.number))
        })?;
        let entries = with_handles(entries, handles, &path.display().to_string())?;
        self.outputs.lock().push((meta.clone(), entries));
        Ok(())
    }

    fn discard_outputs(&self) {
        self.outputs.lock().clear();
    }

    fn before_install(&self, cx: &RuleContext<'_>, inputs: &HashSet<u64>) -> Result<u64> {
        for (meta, entries) in self.outputs.lock().iter() {
            let stale = self
                .index
                .index_compaction(inputs, &Arc::new(meta.clone()), entries)?;
            cx.counters.index_stale_copies.fetch_add(stale, Relaxed);
        }
        let bytes = self.index.take_pm_bytes();
        cx.counters
            .add_written(Tier::Pm, cx.part, IoPurpose::Compaction, bytes);
        Ok(bytes)
    }

    fn installed(&self, gone: &[u64], _live: &[Weak<Version>]) {
        self.index.remove_files(gone);
    }
}

/// Verifies the global index: its tree's structure, and every key's place (the table exists,
/// and the named data block holds exactly that version).
fn check_index(
    cx: &CheckContext<'_>,
    stage: usize,
    tree: &Arc<crate::pbtree::PbTree>,
    report: &mut CheckReport,
) -> Result<()> {
    use crate::gindex::Location;
    use std::collections::{HashMap, HashSet};
    tree.verify()?;
    let version = cx.versions.current();
    let files: HashMap<u64, &Arc<FileMetaData>> = version.stage(stage).groups[0]
        .iter()
        .map(|f| (f.number, f))
        .collect();
    let mut to_adopt = HashSet::new();
    let reader = crate::gindex::BlockReader {
        tables: cx.tables,
        part: crate::stats::Part::Stage(stage),
        purpose: IoPurpose::Recovery,
        fill_cache: false,
    };
    let mut it = tree.iter();
    it.seek_to_first()?;
    while let Some((k, p)) = it.current() {
        let loc = Location::decode(p, k)?;
        match files.get(&loc.file) {
            Some(meta) => {
                crate::gindex::read_at(&reader, meta, k, loc)?;
                report.index_keys_checked += 1;
            }
            None => {
                let path =
                    crate::version::run_file_name(cx.dir, loc.file, crate::version::RunKind::Sst);
                if !cx.options.fs.exists(&path) {
                    return Err(crate::gindex::unknown_table(&path));
                }
                to_adopt.insert(loc.file);
            }
        }
        it.next()?;
    }
    report.index_tables_to_adopt = to_adopt.len();
    Ok(())
}
