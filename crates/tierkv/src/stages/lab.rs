//! LAB-DB's stage (Kim et al., "LAB-DB", ACM TOS 2024): L0 is two persistent B+ trees in PM
//! ([`crate::labdb::l0`]) whose entries point at values in value arrays on SSD; L1 and deeper
//! are leveled SSTables on SSD (values inline). The stage's group 0 has no runs (it exists so
//! that the levels keep their numbers); the tree roles are in the stage's version state.
//!
//! A get reads the mutable tree, the immutable tree, then at most one table per level. Writes
//! slow down when the trees' leaves pass 95% of `labdb.leaf_region_bytes` while an immutable
//! tree is being compacted, and stop at 100% (the paper stalls writes only when the region is
//! full; the short slowdown band before it spreads the wait over the last write groups).

use super::levels::{get_in_runs, leveled_layout, push_deeper_level_iterators};
use crate::compaction::{CompactionPolicy, CompactionTask, LabPolicy};
use crate::fs::FileSystem;
use crate::iterator::InternalIterator;
use crate::labdb::l0::Readers;
use crate::labdb::l0::{roles_of, Charge, LabChunk, LabL0};
use crate::labdb::vaddr::LabAddrs;
use crate::options::Options;
use crate::pipeline::{
    add_kept, AttachContext, CheckContext, CheckReport, CompactionRule, Entry, FlushPlan,
    FlushSource, ManualProgress, ManualStep, PlainRule, PoolStructure, ReadContext, RuleContext,
    RunTarget, Stage, StageHost, WritePressure,
};
use crate::pm_structures::PmTier;
use crate::sst::BlockCache;
use crate::stats::{IoPurpose, Part};
use crate::tier::Tier;
use crate::version::{RunKind, StageLayout, StageVersion, Version, VersionEdit, VersionSet};
use crate::{Error, Result};
use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// LAB-DB's L0 trees over leveled SSTables.
pub(crate) struct LabStage {
    levels: usize,
    l0: Arc<LabL0>,
    policy: LabPolicy,
}

impl LabStage {
    /// [`Stage::flush_upkeep`]'s work; a failure poisons the database.
    fn upkeep(&self, host: &dyn StageHost) {
        let l0 = &self.l0;
        let mut forgot = Some(l0.forget_held(host.smallest_snapshot()));
        let mut dropped = Ok(());
        host.with_versions(&mut |v| {
            // Deletions wait for every version live now: a reader that found an address into
            // a released array (or a forgotten held version's hot half) before its last
            // reference went holds one of them.
            let live = v.live_versions();
            if let Some(forgot) = forgot.take() {
                dropped = forgot.map(|hot| l0.drop_after(live.clone(), hot));
            }
            l0.release_values(&live, v.log_number());
        });
        let mut upkeep = Some(dropped.and_then(|()| l0.run_deferred()));
        host.with_versions(&mut |v| {
            if let Some(Err(e)) = upkeep.take() {
                v.poison("LAB-DB L0 upkeep failed", e);
                return;
            }
            let roles = roles_of(v.current().stage(0).trees);
            if !l0.wants_switch(roles) {
                return;
            }
            let waits = v.live_versions();
            match l0.switch(roles, &waits) {
                Ok(new_roles) => {
                    let mut edit = VersionEdit::default();
                    edit.stage_mut(0).trees = Some(new_roles);
                    // A failure poisoned the database: writers see it.
                    let _ = v.apply(edit, "LAB-DB tree switch failed");
                }
                Err(e) => v.poison("LAB-DB tree switch failed", e),
            }
        });
    }

    pub(crate) fn new(options: &Options) -> Self {
        let l0 = Arc::new(LabL0::new(&options.labdb));
        LabStage {
            levels: options.compaction.num_levels,
            policy: LabPolicy::new(Arc::clone(&l0), &options.compaction),
            l0,
        }
    }
}

impl Stage for LabStage {
    /// The kept versions of `source` go to value array `number` (or, through LAB-DB's log,
    /// only their addresses) and the mutable L0 tree; no run is written. Counted as stage 0's
    /// flush writes: the value array on SSD, the tree's persisted lines on PM.
    fn take_flush(
        &self,
        host: &dyn StageHost,
        source: &dyn FlushSource,
        number: u64,
        plan: &FlushPlan,
    ) -> Result<bool> {
        let roles = roles_of(plan.base.trees);
        let started = std::time::Instant::now();
        let mut entries = Vec::new();
        let dropped = add_kept(source, host.smallest_snapshot(), |k, v| {
            entries.push((k.to_vec(), v.to_vec()));
            Ok(())
        })?;
        let counters = host.counters();
        counters.flush_dropped_versions.fetch_add(dropped, Relaxed);
        let fs = host.fs_for(Tier::Ssd);
        // The versions readers may hold once the tree changed: a hot slot's half the flush
        // stops naming is reused only after them (a reader may have read the entry that named
        // it, and pinned its version before).
        let live = || {
            if !plan.live_after {
                return plan.readers.clone();
            }
            let mut live = Vec::new();
            host.with_versions(&mut |v| live = v.live_versions());
            live
        };
        let readers: Readers<'_> = (host.live_snapshots(), &live);
        let addrs = source
            .log_payload()
            .and_then(|p| p.downcast::<LabAddrs>().ok());
        let (ssd_bytes, pm_bytes) = match addrs {
            // LAB-DB's log wrote the values: only addresses go into the tree.
            Some(addrs) => (
                0,
                self.l0.flush_addressed(roles, &entries, &addrs, &readers)?,
            ),
            None => self.l0.flush(roles, &entries, number, &readers, || {
                fs.sync_dir(host.dir())
            })?,
        };
        counters.add_written(Tier::Ssd, Part::Stage(0), IoPurpose::Flush, ssd_bytes);
        counters.add_written(Tier::Pm, Part::Stage(0), IoPurpose::Flush, pm_bytes);
        counters.add_flush(
            0,
            Tier::Pm,
            ssd_bytes + pm_bytes,
            u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
        );
        Ok(true)
    }

    /// Held versions no snapshot needs are forgotten, value arrays with no reference are
    /// handed to the deferred deletions, what is deferred and due runs, and a mutable tree
    /// that reached its share of the leaf region becomes the immutable one (one manifest
    /// record naming the new roles). Idle, it runs again within 20 ms while deletions are
    /// deferred (they wait for readers, who do not signal), else within 200 ms.
    fn flush_upkeep(&self, host: &dyn StageHost) -> Option<Duration> {
        if host.healthy() {
            self.upkeep(host);
        }
        let wait = if self.l0.has_deferred() { 20 } else { 200 };
        Some(Duration::from_millis(wait))
    }

    fn pool_structure(&self) -> Option<PoolStructure> {
        Some(PoolStructure::LabTrees)
    }

    fn attach(&self, cx: &mut AttachContext<'_>) -> Result<()> {
        let cache = Some(Arc::clone(cx.block_cache));
        attach_l0(
            cx.dir,
            cx.options,
            cx.fs,
            cx.pm,
            cx.versions,
            &self.l0,
            cache,
        )
    }

    /// The L0 trees: every leaf, and the value record each entry points at.
    fn check(&self, cx: &CheckContext<'_>, stage: usize, report: &mut CheckReport) -> Result<()> {
        let fs = &cx.options.fs;
        attach_l0(cx.dir, cx.options, fs, cx.pm, cx.versions, &self.l0, None)?;
        let (trees, entries) = self
            .l0
            .verify(roles_of(cx.versions.current().stage(stage).trees))?;
        report.tables_checked += trees;
        report.entries_checked += entries;
        Ok(())
    }

    fn layout(&self) -> StageLayout {
        leveled_layout("L0 trees + levels", self.levels)
    }

    /// Flushes go into the mutable tree; this target is where a run would go if one were
    /// ever written to group 0 (never, for this stage).
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
        state: &StageVersion,
        user_key: &[u8],
        lookup: &[u8],
    ) -> Result<Option<Entry>> {
        let roles = roles_of(state.trees);
        if let Some((vtype, value, read)) = self.l0.get(roles, user_key, cx.sequence, cx.pinned)? {
            cx.tables
                .counters()
                .add_read(Tier::Ssd, cx.part, cx.purpose, read);
            return Ok(Some((vtype, value)));
        }
        let levels = (1..state.groups.len()).filter_map(|l| state.run_for_key(l, user_key));
        get_in_runs(cx, levels, user_key, lookup)
    }

    fn iterators(
        &self,
        cx: &ReadContext<'_>,
        state: &StageVersion,
        out: &mut Vec<Box<dyn InternalIterator>>,
    ) -> Result<()> {
        let charge = crate::labdb::l0::Charge {
            counters: Arc::clone(cx.tables.counters()),
            part: cx.part,
            purpose: cx.purpose,
        };
        self.l0.iterators(roles_of(state.trees), charge, out)?;
        push_deeper_level_iterators(cx, state, out);
        Ok(())
    }

    fn may_hold_from(&self, state: &StageVersion, group: usize, user_key: &[u8]) -> bool {
        super::may_hold_from(state, group, user_key, |g| {
            state.run_for_key(g, user_key).is_some()
        })
    }

    fn write_pressure(&self, state: &StageVersion) -> WritePressure {
        let roles = roles_of(state.trees);
        let (m, i) = self.l0.usage(roles);
        let region = self.l0.options().leaf_region_bytes;
        if m + i >= region {
            WritePressure::Stop
        } else if roles.immutable != 0 && (m + i) * 20 >= region * 19 {
            WritePressure::Slowdown
        } else {
            WritePressure::None
        }
    }

    /// True: the L0 trees update in place.
    fn keeps_versions_for_snapshots_only(&self) -> bool {
        true
    }

    fn add_stats(&self, state: &StageVersion, stats: &mut crate::stats::DbStats) {
        stats.labdb = Some(self.l0.stats(roles_of(state.trees)));
    }

    fn policy(&self) -> &dyn CompactionPolicy {
        &self.policy
    }

    /// A chunk task merges the immutable tree's chunk with the L1 runs it overlaps; tasks
    /// of the levels below are plain.
    fn compaction_rule(
        &self,
        _cx: &RuleContext<'_>,
        task: &mut CompactionTask,
    ) -> Result<Box<dyn CompactionRule>> {
        Ok(match task.payload::<LabChunk>() {
            Some(chunk) => Box::new(ChunkRule {
                l0: Arc::clone(&self.l0),
                chunk: chunk.clone(),
            }),
            None => Box::new(PlainRule),
        })
    }

    /// The L0 trees, for LAB-DB's log (it writes the values the trees point at).
    fn shared_with_front_end(&self) -> Option<Arc<dyn std::any::Any + Send + Sync>> {
        Some(Arc::clone(&self.l0) as Arc<dyn std::any::Any + Send + Sync>)
    }

    /// The immutable tree compacted whole (chunk by chunk); then, if the mutable tree holds
    /// anything, the flush thread (the only one that switches trees) asked to make it
    /// immutable, and that one compacted whole too; then the levels below as for any stage.
    fn manual_step(&self, state: &StageVersion, progress: &mut ManualProgress) -> ManualStep {
        let roles = roles_of(state.trees);
        if let Some(mutable) = progress.waiting_on {
            if roles.mutable == mutable {
                return ManualStep::Wait;
            }
            progress.waiting_on = None;
        }
        if roles.immutable != 0 {
            return ManualStep::Compact;
        }
        if progress.round >= 1 || self.l0.mutable_is_empty(roles) {
            return ManualStep::Groups;
        }
        progress.round = 1;
        progress.waiting_on = Some(roles.mutable);
        self.l0.request_switch();
        ManualStep::Wait
    }
}

/// A chunk task's part in the merge: the immutable tree's chunk read first (its versions are
/// newer than L1's), and its entries' removal from the tree deferred until no reader of an
/// older version is left once the outputs are installed (they are in L1 for every newer one).
struct ChunkRule {
    l0: Arc<LabL0>,
    chunk: LabChunk,
}

impl CompactionRule for ChunkRule {
    fn plain(&self) -> bool {
        false
    }

    /// An empty chunk (it only ends the tree) reads nothing: entries of compacted chunks may
    /// still be in the tree until their deferred removal, and must not be compacted again.
    fn extra_inputs(&self, cx: &RuleContext<'_>) -> Result<Vec<Box<dyn InternalIterator>>> {
        if self.chunk.entries == 0 {
            return Ok(Vec::new());
        }
        let charge = Charge {
            counters: Arc::clone(cx.counters),
            part: cx.part,
            purpose: IoPurpose::Compaction,
        };
        Ok(vec![self.l0.chunk_iter(&self.chunk, charge)?])
    }

    fn installed(&self, _gone: &[u64], live: &[Weak<Version>]) {
        self.l0.chunk_done(&self.chunk, live.to_vec());
    }
}

/// Attaches LAB-DB's L0 to the trees the pool open found, with the roles the version records
/// (`crate::labdb::l0`). With `cache` (the database's block cache, which its value reads then
/// share), the database is opened for writing: unnamed tree roots are reset and unreferenced
/// value arrays removed; without (`check`), nothing is changed.
fn attach_l0(
    dir: &Path,
    options: &Options,
    fs: &Arc<dyn FileSystem>,
    pm: Option<&PmTier>,
    versions: &VersionSet,
    l0: &LabL0,
    cache: Option<Arc<BlockCache>>,
) -> Result<()> {
    let writable = cache.is_some();
    let pm = pm.ok_or_else(|| Error::InvalidArgument("LAB-DB needs its PM pool".into()))?;
    let trees = pm
        .lab_trees
        .lock()
        .take()
        .ok_or_else(|| Error::InvalidArgument("LAB-DB's L0 trees were not opened".into()))?;
    let values = crate::labdb::vlog::ValueFiles::new(
        dir,
        Arc::clone(fs),
        Some(Arc::clone(&pm.fs)),
        versions.identity(),
        options.max_open_files.clamp(16, 256),
        cache,
    );
    let roles = roles_of(versions.current().stage(0).trees);
    // Opened even with `labdb.hot_buffer_bytes = 0`: the slots a database already has stay
    // readable (and no new one is taken).
    let hot = Some(Arc::new(crate::labdb::hot::HotBuffer::open(
        pm.pmfs.clone(),
        dir,
        &options.labdb,
        writable,
    )?));
    l0.attach(
        Arc::clone(&pm.pool),
        &pm.location,
        trees,
        (values, hot),
        roles,
        writable.then_some(versions.log_number),
    )
}
