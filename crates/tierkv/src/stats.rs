//! Measurement: byte counters per tier, pipeline part and purpose, stall time, and the DRAM
//! footprint.
//!
//! [`Counters`] are atomics updated on the hot paths (relaxed ordering: they are statistics, not
//! synchronisation). Bytes are counted in one matrix keyed by (tier, [`Part`], [`IoPurpose`],
//! read or written), so a design's stages report their write, read and space figures without a
//! field of their own. [`DbStats`] is a consistent-enough copy taken by [`crate::Db::stats`],
//! from which the amplification figures are derived.

use crate::tier::Tier;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Why bytes were read from or written to a tier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoPurpose {
    /// Write-ahead log appends.
    Wal,
    /// Manifest records and `CURRENT`.
    Manifest,
    /// Write-buffer flushes into the first stage.
    Flush,
    /// Compaction inputs (reads) and outputs (writes).
    Compaction,
    /// Reads made to answer user gets, iterators and scans.
    UserRead,
    /// Reads made by recovery and by `check`.
    Recovery,
}

impl IoPurpose {
    /// Every purpose, in report order.
    pub const ALL: [IoPurpose; 6] = [
        IoPurpose::Wal,
        IoPurpose::Manifest,
        IoPurpose::Flush,
        IoPurpose::Compaction,
        IoPurpose::UserRead,
        IoPurpose::Recovery,
    ];

    /// The purpose's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            IoPurpose::Wal => "wal",
            IoPurpose::Manifest => "manifest",
            IoPurpose::Flush => "flush",
            IoPurpose::Compaction => "compaction",
            IoPurpose::UserRead => "user_read",
            IoPurpose::Recovery => "recovery",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The most stages a design may have (the matrix of byte counters is sized for them).
pub const MAX_STAGES: usize = 6;

/// The part of the pipeline an I/O is made for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Part {
    /// The database as a whole: the manifest and `CURRENT`.
    Db,
    /// The front end: its log and write buffers.
    FrontEnd,
    /// Stage `i` of the design (0 = the first, which flushes go to).
    Stage(usize),
}

impl Part {
    const SLOTS: usize = 2 + MAX_STAGES;

    fn slot(self) -> usize {
        match self {
            Part::Db => 0,
            Part::FrontEnd => 1,
            Part::Stage(i) => {
                debug_assert!(i < MAX_STAGES, "stage {i} beyond MAX_STAGES");
                2 + i.min(MAX_STAGES - 1)
            }
        }
    }

    fn from_slot(slot: usize) -> Part {
        match slot {
            0 => Part::Db,
            1 => Part::FrontEnd,
            s => Part::Stage(s - 2),
        }
    }

    /// The part's name in reports: `db`, `front_end`, `stage0`, ...
    pub fn name(self) -> String {
        match self {
            Part::Db => "db".into(),
            Part::FrontEnd => "front_end".into(),
            Part::Stage(i) => format!("stage{i}"),
        }
    }
}

const TIERS: [Tier; 2] = [Tier::Ssd, Tier::Pm];

fn tier_index(tier: Tier) -> usize {
    match tier {
        Tier::Ssd => 0,
        Tier::Pm => 1,
    }
}

const MATRIX: usize = TIERS.len() * Part::SLOTS * IoPurpose::ALL.len() * 2;

fn cell(tier: Tier, part: Part, purpose: IoPurpose, written: bool) -> usize {
    ((tier_index(tier) * Part::SLOTS + part.slot()) * IoPurpose::ALL.len() + purpose.index()) * 2
        + usize::from(written)
}

/// Live counters, shared by every component of one database.
#[derive(Debug)]
pub struct Counters {
    /// Bytes read and written, by (tier, part, purpose); see [`Counters::add_written`].
    io: Box<[AtomicU64]>,
    /// Key + value bytes of user puts and key bytes of deletes.
    pub user_bytes_written: AtomicU64,
    /// Key + value bytes returned to the user by gets, iterators and scans.
    pub user_bytes_read: AtomicU64,
    /// Number of put and delete operations.
    pub user_writes: AtomicU64,
    /// Number of get operations.
    pub user_gets: AtomicU64,
    /// Block cache hits.
    pub block_cache_hits: AtomicU64,
    /// Block cache misses.
    pub block_cache_misses: AtomicU64,
    /// Bloom filter checks that ruled a table out.
    pub bloom_useful: AtomicU64,
    /// Microseconds writers spent delayed by the slowdown trigger.
    pub stall_slowdown_micros: AtomicU64,
    /// Microseconds writers spent stopped (too many L0 files or memtables, no PM for the log).
    pub stall_stop_micros: AtomicU64,
    /// Write groups (one WAL append each) that were delayed or stopped, each counted once.
    pub stall_count: AtomicU64,
    /// Completed write-buffer flushes.
    pub flushes: AtomicU64,
    /// Completed compactions (trivial moves included).
    pub compactions: AtomicU64,
    /// Recovery: half-done flushes and compactions the compaction log discarded.
    pub clog_discarded: AtomicU64,
    /// Recovery: published compactions whose last step the compaction log redid.
    pub clog_redone: AtomicU64,
    /// Recovery: run files no version named and no compaction log accounted for, removed by
    /// the directory sweep.
    pub unlogged_runs_removed: AtomicU64,
    /// WAL appends (one per group commit).
    pub wal_appends: AtomicU64,
    /// WAL syncs.
    pub wal_syncs: AtomicU64,
    /// Flushes that went to SSD because the PM pool was full.
    pub pm_flush_fallbacks: AtomicU64,
    /// Manifests moved from the PM pool to the database directory because the pool was full.
    pub pm_manifest_fallbacks: AtomicU64,
    /// Compactions that wrote their outputs to SSD because the PM pool was full.
    pub pm_compaction_fallbacks: AtomicU64,
    /// Of those, the jobs that first wrote into the pool until it was full, then ran again.
    pub pm_compaction_retries: AtomicU64,
    /// Entries flushes left out: versions shadowed for every reader by a newer one.
    pub flush_dropped_versions: AtomicU64,
    /// PM bytes of row pages freed inside live rows (dead ranges: `rows.free_dead_pages`).
    pub row_pages_freed_bytes: AtomicU64,
    /// Key-range partitions compactions were split into and merged in parallel
    /// (`compaction.subcompactions`).
    pub subcompactions: AtomicU64,
    /// Runs a compaction left in place or moved unchanged because no other input's key fell
    /// into them (`compaction.reuse_untouched_runs`).
    pub reused_runs: AtomicU64,
    /// Bytes of logical sorted tables compactions left in place inside runs they merged the
    /// rest of (`compaction.reuse_untouched_tables`; estimated from the tables' share of
    /// their file).
    pub reused_table_bytes: AtomicU64,
    /// Runs no source key fell into that compactions merged anyway, because they held a file
    /// that would otherwise stay less than half in use (a file is freed only whole).
    pub reclaimed_runs: AtomicU64,
    /// The load detector's switches between write-intensive and read-intensive modes
    /// (`fluidkv`).
    pub load_mode_switches: AtomicU64,
    /// Flushes the load detector asked for in read-only periods, whatever the memtable's fill.
    pub eager_flushes: AtomicU64,
    /// The first group's compaction trigger the load detector set last (0: no detector).
    pub load_trigger: AtomicU64,
    /// Entries a compaction copied that a flush replaced before the global index moved to
    /// them (garbage at birth).
    pub index_stale_copies: AtomicU64,
    /// Tables recovery adopted because the global index named them and the manifest did not.
    pub index_adopted_tables: AtomicU64,
    /// The most recent compactions, oldest first (at most [`JOB_LOG_LEN`]).
    pub jobs: parking_lot::Mutex<JobLog>,
    /// Cumulative compaction figures per (stage, output group), never capped.
    levels: parking_lot::Mutex<BTreeMap<(usize, usize), LevelCompactionStats>>,
    /// Cumulative flush figures per (target group, tier index).
    flush_targets: parking_lot::Mutex<BTreeMap<(usize, usize), FlushTargetStats>>,
    /// Per [`StallReason`] slot: microseconds of stall.
    stall_cause_micros: Box<[AtomicU64]>,
    /// Per [`StallReason`] slot: write groups that stalled for it.
    stall_cause_groups: Box<[AtomicU64]>,
}

/// Compactions the job log keeps.
pub const JOB_LOG_LEN: usize = 2_000;

/// The most recent compactions of a database.
#[derive(Debug, Default)]
pub struct JobLog {
    /// When the database opened (the clock of [`CompactionJob::end_micros`]).
    opened: Option<std::time::Instant>,
    jobs: std::collections::VecDeque<CompactionJob>,
    /// Jobs dropped from the front to keep [`JOB_LOG_LEN`].
    dropped: u64,
}

impl JobLog {
    /// Records a compaction that took `micros` and ended now.
    pub fn push(&mut self, mut job: CompactionJob) {
        let opened = *self.opened.get_or_insert_with(std::time::Instant::now);
        job.end_micros = u64::try_from(opened.elapsed().as_micros()).unwrap_or(u64::MAX);
        if self.jobs.len() == JOB_LOG_LEN {
            self.jobs.pop_front();
            self.dropped += 1;
        }
        self.jobs.push_back(job);
    }

    /// Starts the clock (at open).
    pub fn start_clock(&mut self) {
        self.opened.get_or_insert_with(std::time::Instant::now);
    }
}

/// One finished compaction.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CompactionJob {
    /// The stage compacted.
    pub stage: usize,
    /// The group its first inputs came from (L0 = 0: a row container's rows, L0 tables, C1).
    pub from_group: usize,
    /// The group its outputs went to.
    pub to_group: usize,
    /// Why it ran (`Level0Files`, `LevelSize`, `Manual`, `SetFull`, `Rows`).
    pub reason: String,
    /// A run moved down without a rewrite.
    pub trivial_move: bool,
    /// Input runs (rows a row compaction reads a range of included).
    pub input_runs: usize,
    /// Key and value bytes of the entries the merge read.
    pub input_bytes: u64,
    /// Bytes of the output runs.
    pub output_bytes: u64,
    /// Wall time from planning to installing, in microseconds.
    pub micros: u64,
    /// When it finished, in microseconds since the database opened.
    pub end_micros: u64,
}

/// Cumulative compaction figures of one output group of one stage since the database opened
/// (RocksDB's per-level compaction statistics: a compaction is counted in the row of the group
/// it writes to). Not capped, unlike the job log. Bytes read are the internal key and value
/// bytes the merge read (as [`CompactionJob::input_bytes`]; RocksDB counts the input files'
/// sizes, which differ by the tables' block overhead, and a row of a row container is read
/// only in the task's key range); bytes written are the output runs' sizes (with, for
/// `slmdb`, its global index's PM bytes), so that every row's `written_bytes` add up to
/// [`DbStats::ssd_written_compaction`] + [`DbStats::pm_written_compaction`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LevelCompactionStats {
    /// The stage.
    pub stage: usize,
    /// The output group (the level compactions wrote to).
    pub group: usize,
    /// Compactions, trivial moves included (RocksDB's `Comp(cnt)`).
    pub compactions: u64,
    /// Of those, runs moved down without a rewrite.
    pub trivial_moves: u64,
    /// Wall time of the compactions, planning to installing, in microseconds (`Comp(sec)`).
    pub micros: u64,
    /// Bytes read from the input groups, every group but the output one (`Rn(GB)`).
    pub read_input_bytes: u64,
    /// Bytes read from the output group: its runs the merge rewrote (`Rnp1(GB)`).
    pub read_output_bytes: u64,
    /// Bytes written (`Write(GB)`).
    pub written_bytes: u64,
    /// Bytes of runs moved down without a rewrite (`Moved(GB)`).
    pub moved_bytes: u64,
    /// Runs read from the input groups (`Rn(cnt)`); a row read in a key range counts once.
    pub read_input_runs: u64,
    /// Runs read from the output group (`Rnp1(cnt)`).
    pub read_output_runs: u64,
    /// Runs written (`Wnew(cnt)`).
    pub written_runs: u64,
    /// Entries the merges read (`KeyIn`).
    pub input_entries: u64,
    /// Entries the merges dropped: shadowed versions and tombstones with nothing left to hide
    /// (`KeyDrop`).
    pub dropped_entries: u64,
}

impl LevelCompactionStats {
    /// Adds `c`'s counters to these.
    pub fn add(&mut self, c: &LevelCompactionStats) {
        self.compactions += c.compactions;
        self.trivial_moves += c.trivial_moves;
        self.micros += c.micros;
        self.read_input_bytes += c.read_input_bytes;
        self.read_output_bytes += c.read_output_bytes;
        self.written_bytes += c.written_bytes;
        self.moved_bytes += c.moved_bytes;
        self.read_input_runs += c.read_input_runs;
        self.read_output_runs += c.read_output_runs;
        self.written_runs += c.written_runs;
        self.input_entries += c.input_entries;
        self.dropped_entries += c.dropped_entries;
    }

    /// Bytes read, from both the input and the output groups (`Read(GB)`).
    pub fn read_bytes(&self) -> u64 {
        self.read_input_bytes + self.read_output_bytes
    }

    /// Wall time of the compactions in seconds.
    pub fn seconds(&self) -> f64 {
        self.micros as f64 / 1e6
    }
}

/// Cumulative flush figures of one target of stage 0 (a group on a tier: L0 on PM, L0 on SSD
/// after the pool was full, L1 for a row container's sequential bypass) since the database
/// opened. Every run a flush wrote counts, recovery's flushes of replayed logs included
/// (which [`DbStats::flushes`] leaves out), so that every row's `written_bytes` add up to
/// [`DbStats::ssd_written_flush`] + [`DbStats::pm_written_flush`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FlushTargetStats {
    /// The group of stage 0 the runs went to.
    pub group: usize,
    /// The tier they were written to.
    pub tier: Tier,
    /// Runs flushed.
    pub flushes: u64,
    /// Bytes written: the runs (with, for `slmdb`, its global index's PM bytes).
    pub written_bytes: u64,
    /// Time spent writing and syncing the runs, in microseconds (the manifest record after
    /// each is not included).
    pub micros: u64,
}

impl Default for FlushTargetStats {
    fn default() -> Self {
        FlushTargetStats {
            group: 0,
            tier: Tier::Ssd,
            flushes: 0,
            written_bytes: 0,
            micros: 0,
        }
    }
}

impl FlushTargetStats {
    /// Time spent flushing in seconds.
    pub fn seconds(&self) -> f64 {
        self.micros as f64 / 1e6
    }
}

/// Why writers stalled, as [`DbStats::stall_causes`] names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StallReason {
    /// `max_write_buffer_number` memtables exist: writes wait for a flush (a stop).
    MemtableLimit,
    /// The PM pool has no room for the WAL's next record or a new WAL: writes wait for a flush
    /// to free a retired WAL (a stop).
    PmPoolFull,
    /// Stage `i` asked for a slowdown (its first group at the slowdown trigger; a row
    /// container's rows at their slowdown fraction).
    Slowdown(usize),
    /// Stage `i` asked writes to stop (the stop trigger; a full row container).
    Stop(usize),
}

impl StallReason {
    const SLOTS: usize = 2 + 2 * MAX_STAGES;

    fn slot(self) -> usize {
        match self {
            StallReason::MemtableLimit => 0,
            StallReason::PmPoolFull => 1,
            StallReason::Slowdown(i) => 2 + i.min(MAX_STAGES - 1),
            StallReason::Stop(i) => 2 + MAX_STAGES + i.min(MAX_STAGES - 1),
        }
    }

    fn from_slot(slot: usize) -> StallReason {
        match slot {
            0 => StallReason::MemtableLimit,
            1 => StallReason::PmPoolFull,
            s if s < 2 + MAX_STAGES => StallReason::Slowdown(s - 2),
            s => StallReason::Stop(s - 2 - MAX_STAGES),
        }
    }

    /// True if its time counts as stop time (all but a stage's slowdown).
    fn is_stop(self) -> bool {
        !matches!(self, StallReason::Slowdown(_))
    }

    /// The cause's name in [`StallCause::cause`].
    fn name(self) -> String {
        match self {
            StallReason::MemtableLimit => "memtable limit".into(),
            StallReason::PmPoolFull => "PM pool full".into(),
            StallReason::Slowdown(i) => format!("stage {i} write pressure slowdown"),
            StallReason::Stop(i) => format!("stage {i} write pressure stop"),
        }
    }
}

/// What one write group was counted for in the stall figures.
#[derive(Debug, Default)]
pub(crate) struct StallTracker {
    /// Counted in `stall_count`.
    counted: bool,
    /// Bit per [`StallReason`] slot: counted in that cause's groups.
    causes: u64,
}

/// One cause of write stalls and what it cost, since the database opened.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct StallCause {
    /// The cause: `memtable limit` (as many memtables as `max_write_buffer_number`: waiting
    /// for a flush), `PM pool full` (no PM room for the WAL: waiting for a flush to free a
    /// retired one), `stage N write pressure slowdown` (each write group delayed 1 ms: the
    /// stage's first group at `level0_slowdown_trigger` runs, or a row container's rows at
    /// their slowdown fraction) or `stage N write pressure stop` (waiting for compaction: the
    /// stop trigger, or a full row container).
    pub cause: String,
    /// Write groups that stalled for it; a group that stalled for several causes counts in
    /// each (so these may add up to more than [`DbStats::stall_count`]).
    pub stalled_groups: u64,
    /// Microseconds writers stalled for it; every cause's add up to
    /// [`DbStats::stall_slowdown_micros`] + [`DbStats::stall_stop_micros`].
    pub micros: u64,
}

/// One run of the current version, as [`crate::Db::live_tables`] lists it (db_bench's
/// `sstables`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveTable {
    /// The stage holding it.
    pub stage: usize,
    /// The stage's name (e.g. `levels`).
    pub stage_name: String,
    /// Its group in the stage (the level).
    pub group: usize,
    /// Its file number (`NNNNNN.sst` or `NNNNNN.arr`).
    pub number: u64,
    /// The tier holding it.
    pub tier: Tier,
    /// What it is: `sst` (an SSTable) or `pm-array` (a PM sorted array).
    pub kind: String,
    /// True for a row of a row container (its dead key ranges are not subtracted from
    /// `entries`).
    pub row: bool,
    /// The set it belongs to in a group of sets (NVLSM's Skip-Array Trees, guards); 0 in other
    /// groups.
    pub set: u64,
    /// Size in bytes.
    pub file_size: u64,
    /// Entries stored in it.
    pub entries: u64,
    /// Its smallest user key.
    pub smallest_key: Vec<u8>,
    /// Its largest user key.
    pub largest_key: Vec<u8>,
    /// For a run made of part of another run's file (FluidKV's reused logical sorted
    /// tables): that file's number; `None` for a run that is its own file.
    #[serde(default)]
    pub backing: Option<u64>,
}

impl Default for Counters {
    fn default() -> Self {
        Counters {
            io: (0..MATRIX).map(|_| AtomicU64::new(0)).collect(),
            user_bytes_written: AtomicU64::new(0),
            user_bytes_read: AtomicU64::new(0),
            user_writes: AtomicU64::new(0),
            user_gets: AtomicU64::new(0),
            block_cache_hits: AtomicU64::new(0),
            block_cache_misses: AtomicU64::new(0),
            bloom_useful: AtomicU64::new(0),
            stall_slowdown_micros: AtomicU64::new(0),
            stall_stop_micros: AtomicU64::new(0),
            stall_count: AtomicU64::new(0),
            flushes: AtomicU64::new(0),
            compactions: AtomicU64::new(0),
            clog_discarded: AtomicU64::new(0),
            clog_redone: AtomicU64::new(0),
            unlogged_runs_removed: AtomicU64::new(0),
            wal_appends: AtomicU64::new(0),
            wal_syncs: AtomicU64::new(0),
            pm_flush_fallbacks: AtomicU64::new(0),
            pm_manifest_fallbacks: AtomicU64::new(0),
            pm_compaction_fallbacks: AtomicU64::new(0),
            pm_compaction_retries: AtomicU64::new(0),
            flush_dropped_versions: AtomicU64::new(0),
            row_pages_freed_bytes: AtomicU64::new(0),
            subcompactions: AtomicU64::new(0),
            reused_runs: AtomicU64::new(0),
            reused_table_bytes: AtomicU64::new(0),
            reclaimed_runs: AtomicU64::new(0),
            load_mode_switches: AtomicU64::new(0),
            eager_flushes: AtomicU64::new(0),
            load_trigger: AtomicU64::new(0),
            index_stale_copies: AtomicU64::new(0),
            index_adopted_tables: AtomicU64::new(0),
            jobs: parking_lot::Mutex::new(JobLog::default()),
            levels: parking_lot::Mutex::new(BTreeMap::new()),
            flush_targets: parking_lot::Mutex::new(BTreeMap::new()),
            stall_cause_micros: (0..StallReason::SLOTS).map(|_| AtomicU64::new(0)).collect(),
            stall_cause_groups: (0..StallReason::SLOTS).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

impl Counters {
    /// Adds `n` bytes written to `tier` by `part` for `purpose`.
    pub fn add_written(&self, tier: Tier, part: Part, purpose: IoPurpose, n: u64) {
        debug_assert!(
            !matches!(purpose, IoPurpose::UserRead | IoPurpose::Recovery),
            "reads are not written"
        );
        self.io[cell(tier, part, purpose, true)].fetch_add(n, Relaxed);
    }

    /// Adds `n` bytes read from `tier` by `part` for `purpose`.
    pub fn add_read(&self, tier: Tier, part: Part, purpose: IoPurpose, n: u64) {
        self.io[cell(tier, part, purpose, false)].fetch_add(n, Relaxed);
    }

    /// Adds a finished compaction to the cumulative figures of its stage and output group.
    pub fn add_compaction(&self, c: &LevelCompactionStats) {
        let mut levels = self.levels.lock();
        let row = levels
            .entry((c.stage, c.group))
            .or_insert_with(|| LevelCompactionStats {
                stage: c.stage,
                group: c.group,
                ..LevelCompactionStats::default()
            });
        row.add(c);
    }

    /// Adds a finished flush of `written_bytes` (the run, and a global index's PM bytes) into
    /// `group` of stage 0 on `tier`, which took `micros`.
    pub fn add_flush(&self, group: usize, tier: Tier, written_bytes: u64, micros: u64) {
        let mut targets = self.flush_targets.lock();
        let row = targets
            .entry((group, tier_index(tier)))
            .or_insert_with(|| FlushTargetStats {
                group,
                tier,
                ..FlushTargetStats::default()
            });
        row.flushes += 1;
        row.written_bytes += written_bytes;
        row.micros += micros;
    }

    /// Counts the time since `since` as stall for `reason` (slowdown or stop time by the
    /// reason's kind), and the write group once per reason and once in `stall_count`
    /// (`tracker` remembers what this group was counted for already).
    pub(crate) fn add_stall(
        &self,
        since: std::time::Instant,
        reason: StallReason,
        tracker: &mut StallTracker,
    ) {
        let us = u64::try_from(since.elapsed().as_micros()).unwrap_or(u64::MAX);
        if reason.is_stop() {
            self.stall_stop_micros.fetch_add(us, Relaxed);
        } else {
            self.stall_slowdown_micros.fetch_add(us, Relaxed);
        }
        let slot = reason.slot();
        self.stall_cause_micros[slot].fetch_add(us, Relaxed);
        if tracker.causes & (1 << slot) == 0 {
            tracker.causes |= 1 << slot;
            self.stall_cause_groups[slot].fetch_add(1, Relaxed);
        }
        if !tracker.counted {
            tracker.counted = true;
            self.stall_count.fetch_add(1, Relaxed);
        }
    }

    /// The stall causes that stalled anything, in slot order.
    fn stall_causes(&self) -> Vec<StallCause> {
        (0..StallReason::SLOTS)
            .filter_map(|slot| {
                let micros = self.stall_cause_micros[slot].load(Relaxed);
                let groups = self.stall_cause_groups[slot].load(Relaxed);
                (micros + groups > 0).then(|| StallCause {
                    cause: StallReason::from_slot(slot).name(),
                    stalled_groups: groups,
                    micros,
                })
            })
            .collect()
    }

    /// Every non-zero byte counter.
    pub fn io_counts(&self) -> Vec<IoCount> {
        let mut out = Vec::new();
        for tier in TIERS {
            for slot in 0..Part::SLOTS {
                let part = Part::from_slot(slot);
                for purpose in IoPurpose::ALL {
                    let read = self.io[cell(tier, part, purpose, false)].load(Relaxed);
                    let written = self.io[cell(tier, part, purpose, true)].load(Relaxed);
                    if read + written > 0 {
                        out.push(IoCount {
                            tier,
                            part: part.name(),
                            stage: match part {
                                Part::Stage(i) => Some(i),
                                _ => None,
                            },
                            purpose: purpose.name().to_string(),
                            read,
                            written,
                        });
                    }
                }
            }
        }
        out
    }
}

/// Bytes one (tier, part, purpose) read and wrote.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IoCount {
    /// The tier.
    pub tier: Tier,
    /// The pipeline part: `db`, `front_end` or `stageN`.
    pub part: String,
    /// The stage's index for a stage's bytes.
    pub stage: Option<usize>,
    /// The purpose: `wal`, `manifest`, `flush`, `compaction`, `user_read`, `recovery`.
    pub purpose: String,
    /// Bytes read.
    pub read: u64,
    /// Bytes written.
    pub written: u64,
}

/// Files and bytes in one level.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LevelStats {
    /// Number of table files (runs made of parts of one file, FluidKV's reused LSTs, count
    /// it once: `Db::live_tables` lists runs, so it can list more).
    pub files: usize,
    /// Bytes of those files (all of a file parts of which are live).
    pub bytes: u64,
}

/// The DRAM the database holds, by use.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DramFootprint {
    /// Active and immutable memtables (approximate: entries plus skiplist node overhead).
    pub memtable_bytes: u64,
    /// Memory of flushed memtables kept for reuse by the next ones (the part ever used), in
    /// the cache or under a memtable that has not used it again yet.
    #[serde(default)]
    pub memtable_kept_bytes: u64,
    /// Bloom filters of open tables.
    pub filter_bytes: u64,
    /// Index blocks of open tables.
    pub index_bytes: u64,
    /// Data blocks in the block cache.
    pub block_cache_bytes: u64,
    /// A global index's inner nodes (SLM-DB: one separator per PM leaf).
    #[serde(default)]
    pub global_index_bytes: u64,
    /// LAB-DB's L0 trees' inner nodes (one separator per PM leaf).
    #[serde(default)]
    pub l0_tree_bytes: u64,
    /// ListDB's lists' upper levels (one sampled key in eight).
    #[serde(default)]
    pub list_tower_bytes: u64,
}

impl DramFootprint {
    /// Sum of every part.
    pub fn total(&self) -> u64 {
        self.memtable_bytes
            + self.memtable_kept_bytes
            + self.filter_bytes
            + self.index_bytes
            + self.block_cache_bytes
            + self.global_index_bytes
            + self.l0_tree_bytes
            + self.list_tower_bytes
    }
}

/// Figures of ListDB's heap (`listdb`): its lists, its log and what flushes and zipper
/// compactions wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListDbStats {
    /// L0 lists waiting for the zipper.
    pub l0_lists: usize,
    /// Entries of the L0 lists (as published).
    pub l0_entries: u64,
    /// Bytes of their log entries.
    pub l0_bytes: u64,
    /// Entries of the L1 list.
    pub l1_entries: u64,
    /// Bytes of its log entries.
    pub l1_bytes: u64,
    /// The log's position: bytes of log entries ever appended, plus the unused end of each
    /// chunk an entry did not fit (the heap frees nothing).
    pub log_bytes: u64,
    /// PM chunks the heap holds.
    pub chunks: u64,
    /// L0 lists zipped into L1.
    pub zips: u64,
    /// Next-word bytes flushes stored (8 per entry linked).
    pub linked_bytes: u64,
    /// Next-word bytes the zipper stored (16 per gap spliced).
    pub spliced_bytes: u64,
    /// DRAM of the lists' upper levels.
    pub dram_bytes: u64,
}

/// Figures of LAB-DB's L0: its two persistent B+ trees and the value arrays they point into.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabStats {
    /// The mutable tree's number.
    pub mutable_tree: u64,
    /// The immutable tree's number (0: none).
    pub immutable_tree: u64,
    /// Keys in the mutable tree.
    pub mutable_keys: u64,
    /// Keys in the immutable tree.
    pub immutable_keys: u64,
    /// PM bytes of both trees (leaves and long-key objects).
    pub pm_bytes: u64,
    /// DRAM bytes of both trees' inner nodes.
    pub dram_bytes: u64,
    /// Versions held in DRAM for live snapshots.
    pub held_versions: u64,
    /// Flushed keys already in the mutable tree, updated in place (one 8-byte persist).
    pub in_place_updates: u64,
    /// Flushed keys inserted into the mutable tree.
    pub inserts: u64,
    /// Times the mutable tree became the immutable one.
    pub switches: u64,
    /// Chunks of an immutable tree compacted into L1.
    pub chunks: u64,
    /// Of those, chunks chosen by file scan (the leaves holding the most values of the oldest
    /// value array, once `labdb.file_scan_after` of the tree is compacted).
    pub file_scan_chunks: u64,
    /// Value arrays tracked.
    pub value_files: u64,
    /// Their bytes.
    pub value_bytes: u64,
    /// The estimated bytes of their records still referenced.
    pub value_live_bytes: u64,
    /// Slots of the hot-key buffer that belong to a key.
    pub hot_slots: u64,
    /// PM bytes of the hot-key buffer (its segments, used or not).
    pub hot_pm_bytes: u64,
    /// Versions flushes wrote into hot slots (each one an in-place update in PM).
    pub hot_writes: u64,
    /// Times a full half of the PM WAL buffer was drained (the key and value arrays synced by
    /// the write that filled it; LAB-DB's log only).
    pub log_drains: u64,
}

/// Figures of a global index (SLM-DB's B+ tree over its single level).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GlobalIndexStats {
    /// Keys in the tree.
    pub keys: u64,
    /// Leaves of the tree.
    pub leaves: u64,
    /// PM bytes of the tree (leaves, key objects and inner nodes).
    pub pm_bytes: u64,
    /// The tree's inner nodes (in PM: copy-on-write, published by one 8-byte store).
    #[serde(default)]
    pub inner_nodes: u64,
    /// PM bytes of the inner nodes (part of `pm_bytes`).
    #[serde(default)]
    pub inner_pm_bytes: u64,
    /// DRAM bytes of the tree's inner nodes (PM inner nodes: the cached root offset only).
    pub dram_bytes: u64,
    /// Versions held in DRAM for live snapshots.
    pub held_versions: u64,
    /// Tables on the compaction candidate list of rules R2 and R3.
    pub listed_tables: u64,
}

/// Device-level counters of the PM pool.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PmDeviceStats {
    /// The durability mode in force (`dax`, `msync`, `emulated`).
    pub mode: String,
    /// The flush instruction used (`clwb`, `clflushopt`, `clflush`, `msync`).
    pub flush_instruction: String,
    /// Cache lines written back (x 64 = bytes written to the PM device).
    pub lines_written_back: u64,
    /// Store fences.
    pub fences: u64,
    /// Bytes read through the pool's read accessor.
    pub bytes_read: u64,
    /// Bytes in allocated chunks.
    pub bytes_allocated: u64,
    /// Pool size.
    pub pool_bytes: u64,
}

/// A copy of every figure of a database, as returned by [`crate::Db::stats`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DbStats {
    /// The design's name.
    pub design: String,
    /// Key + value bytes of user writes.
    pub user_bytes_written: u64,
    /// Key + value bytes returned to the user.
    pub user_bytes_read: u64,
    /// Puts and deletes.
    pub user_writes: u64,
    /// Gets.
    pub user_gets: u64,
    /// SSD bytes written to the WAL.
    pub ssd_written_wal: u64,
    /// SSD bytes written to the manifest.
    pub ssd_written_manifest: u64,
    /// SSD bytes written by flushes.
    pub ssd_written_flush: u64,
    /// SSD bytes written by compactions.
    pub ssd_written_compaction: u64,
    /// SSD bytes read by compactions.
    pub ssd_read_compaction: u64,
    /// SSD bytes read for user reads.
    pub ssd_read_user: u64,
    /// SSD bytes read by recovery and checks.
    pub ssd_read_recovery: u64,
    /// Block cache hits.
    pub block_cache_hits: u64,
    /// Block cache misses.
    pub block_cache_misses: u64,
    /// Table probes avoided by Bloom filters.
    pub bloom_useful: u64,
    /// Microseconds of slowdown delays.
    pub stall_slowdown_micros: u64,
    /// Microseconds writers were stopped.
    pub stall_stop_micros: u64,
    /// Write groups (one WAL append each) that were delayed or stopped, each counted once.
    pub stall_count: u64,
    /// Completed flushes.
    pub flushes: u64,
    /// Completed compactions.
    pub compactions: u64,
    /// Recovery: half-done flushes and compactions the compaction log discarded.
    pub clog_discarded: u64,
    /// Recovery: published compactions whose last step the compaction log redid.
    pub clog_redone: u64,
    /// Recovery: run files no version named and no compaction log accounted for, removed by
    /// the directory sweep at open.
    pub unlogged_runs_removed: u64,
    /// WAL appends (group commits).
    pub wal_appends: u64,
    /// WAL syncs.
    pub wal_syncs: u64,
    /// PM bytes appended to the WAL.
    pub pm_written_wal: u64,
    /// PM bytes of manifest records (a manifest in the pool: `pm.manifest_on_pm`).
    #[serde(default)]
    pub pm_written_manifest: u64,
    /// PM bytes written by flushes.
    pub pm_written_flush: u64,
    /// PM bytes written by compactions.
    pub pm_written_compaction: u64,
    /// PM bytes read for user reads.
    pub pm_read_user: u64,
    /// PM bytes read by compactions.
    pub pm_read_compaction: u64,
    /// PM bytes read by recovery and checks.
    pub pm_read_recovery: u64,
    /// Flushes that went to SSD because the PM pool was full.
    pub pm_flush_fallbacks: u64,
    /// Manifests moved from the PM pool to the database directory because the pool was full
    /// (`pm.manifest_on_pm`: the commit that found no room wrote a fresh manifest there).
    #[serde(default)]
    pub pm_manifest_fallbacks: u64,
    /// Compactions that wrote their outputs to SSD because the PM pool was full: sent there
    /// at the start (the pool's free chunks could not hold their inputs' bytes), or run again
    /// there after filling the pool (`pm_compaction_retries`).
    #[serde(default)]
    pub pm_compaction_fallbacks: u64,
    /// Compactions that wrote into the PM pool until it was full, then ran again with their
    /// outputs on SSD (what they wrote into the pool is counted as written, and freed).
    #[serde(default)]
    pub pm_compaction_retries: u64,
    /// Entries flushes left out: versions shadowed for every reader by a newer one.
    #[serde(default)]
    pub flush_dropped_versions: u64,
    /// PM bytes of row pages freed inside live rows since open (`trianglekv`, `matrixkv`: the
    /// pages wholly in dead ranges).
    pub row_pages_freed_bytes: u64,
    /// Key-range partitions compactions were split into and merged in parallel since open
    /// (`compaction.subcompactions`).
    #[serde(default)]
    pub subcompactions: u64,
    /// Runs compactions left in place or moved unchanged since open
    /// (`compaction.reuse_untouched_runs`).
    #[serde(default)]
    pub reused_runs: u64,
    /// Bytes of logical sorted tables compactions left in place inside runs they merged the
    /// rest of since open (`compaction.reuse_untouched_tables`).
    #[serde(default)]
    pub reused_table_bytes: u64,
    /// Runs no source key fell into that compactions merged since open, to free a file less
    /// than half in use.
    #[serde(default)]
    pub reclaimed_runs: u64,
    /// Switches of the load detector between write-intensive and read-intensive modes since
    /// open (`fluidkv`).
    #[serde(default)]
    pub load_mode_switches: u64,
    /// Flushes the load detector asked for in read-only periods since open (`fluidkv`).
    #[serde(default)]
    pub eager_flushes: u64,
    /// The buffer-tree count that triggers a compaction, as the load detector set it last
    /// (`fluidkv`: 4 under writes, 1 under reads; 0 without a detector).
    #[serde(default)]
    pub load_trigger: u64,
    /// Entries a compaction copied that a flush replaced before the global index moved to
    /// them (`slmdb`).
    #[serde(default)]
    pub index_stale_copies: u64,
    /// Tables the last open adopted: the global index named them and the manifest did not (a
    /// crash between a flush's or compaction's index updates and its manifest record).
    #[serde(default)]
    pub index_adopted_tables: u64,
    /// The global index (`slmdb`): its tree and the versions held for snapshots.
    #[serde(default)]
    pub global_index: Option<GlobalIndexStats>,
    /// LAB-DB's L0 trees and value arrays (`labdb`).
    #[serde(default)]
    pub labdb: Option<LabStats>,
    /// ListDB's heap (`listdb`).
    #[serde(default)]
    pub listdb: Option<ListDbStats>,
    /// Whether background work is pending: an unflushed immutable buffer, a running
    /// compaction, or a stage whose policy would start one now (never while automatic
    /// compactions are disabled).
    pub background_pending: bool,
    /// The PM pool's own counters (device level: cache lines written back, fences, bytes read,
    /// bytes allocated), when the design uses PM.
    pub pm: Option<PmDeviceStats>,
    /// Files and bytes per level, L0 first: the groups of every stage, in pipeline order (for
    /// the leveled designs, their levels).
    pub levels: Vec<LevelStats>,
    /// Files and bytes per level that live on PM, L0 first (as `levels`).
    pub pm_levels: Vec<LevelStats>,
    /// Bytes of live WAL files on SSD.
    pub wal_bytes: u64,
    /// Bytes of live WAL files on PM.
    pub pm_wal_bytes: u64,
    /// DRAM held, by use.
    pub dram: DramFootprint,
    /// Every non-zero byte counter by (tier, pipeline part, purpose).
    #[serde(default)]
    pub io: Vec<IoCount>,
    /// The design's stages, in pipeline order: their runs and bytes per group.
    #[serde(default)]
    pub stages: Vec<StageStats>,
    /// The most recent compactions (at most 2,000), oldest first.
    #[serde(default)]
    pub compaction_jobs: Vec<CompactionJob>,
    /// Compactions that finished before those (dropped from the job log).
    #[serde(default)]
    pub compaction_jobs_dropped: u64,
    /// Cumulative compaction figures per (stage, output group) since open, never capped:
    /// RocksDB's per-level compaction statistics. Only groups written to are listed, by stage
    /// then group.
    #[serde(default)]
    pub compaction_levels: Vec<LevelCompactionStats>,
    /// Cumulative flush figures per target of stage 0 (group and tier) since open.
    #[serde(default)]
    pub flush_targets: Vec<FlushTargetStats>,
    /// Write stalls by cause since open (only causes that stalled anything).
    #[serde(default)]
    pub stall_causes: Vec<StallCause>,
    /// Key-value separation: the value logs the current version's tables name.
    #[serde(default)]
    pub value_logs: ValueLogStats,
}

/// The value logs of separated tables (`table.value_separation`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ValueLogStats {
    /// Logs the current version's tables name.
    pub files: usize,
    /// Their bytes on PM.
    pub pm_bytes: u64,
    /// Their bytes on SSD.
    pub ssd_bytes: u64,
    /// The record bytes the tables name in them (the rest is garbage a compaction collects
    /// once a log is less than half live).
    pub live_bytes: u64,
}

/// One stage of the design as it stands.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StageStats {
    /// The stage's name (e.g. `levels`).
    pub name: String,
    /// Runs and bytes per group of the stage (e.g. per level), every tier.
    pub groups: Vec<LevelStats>,
    /// The same for the runs on PM.
    pub pm_groups: Vec<LevelStats>,
}

impl DbStats {
    /// Copies the counters.
    pub fn from_counters(c: &Counters) -> DbStats {
        let g = |a: &AtomicU64| a.load(Relaxed);
        let io = c.io_counts();
        let sum = |tier: Tier, purpose: IoPurpose, written: bool| -> u64 {
            io.iter()
                .filter(|x| x.tier == tier && x.purpose == purpose.name())
                .map(|x| if written { x.written } else { x.read })
                .sum()
        };
        use IoPurpose as P;
        let (compaction_jobs, compaction_jobs_dropped) = {
            let log = c.jobs.lock();
            (log.jobs.iter().cloned().collect(), log.dropped)
        };
        DbStats {
            user_bytes_written: g(&c.user_bytes_written),
            user_bytes_read: g(&c.user_bytes_read),
            user_writes: g(&c.user_writes),
            user_gets: g(&c.user_gets),
            ssd_written_wal: sum(Tier::Ssd, P::Wal, true),
            ssd_written_manifest: sum(Tier::Ssd, P::Manifest, true),
            ssd_written_flush: sum(Tier::Ssd, P::Flush, true),
            ssd_written_compaction: sum(Tier::Ssd, P::Compaction, true),
            ssd_read_compaction: sum(Tier::Ssd, P::Compaction, false),
            ssd_read_user: sum(Tier::Ssd, P::UserRead, false),
            ssd_read_recovery: sum(Tier::Ssd, P::Recovery, false)
                + sum(Tier::Ssd, P::Manifest, false)
                + sum(Tier::Ssd, P::Wal, false)
                + sum(Tier::Ssd, P::Flush, false),
            block_cache_hits: g(&c.block_cache_hits),
            block_cache_misses: g(&c.block_cache_misses),
            bloom_useful: g(&c.bloom_useful),
            stall_slowdown_micros: g(&c.stall_slowdown_micros),
            stall_stop_micros: g(&c.stall_stop_micros),
            stall_count: g(&c.stall_count),
            flushes: g(&c.flushes),
            compactions: g(&c.compactions),
            clog_discarded: g(&c.clog_discarded),
            clog_redone: g(&c.clog_redone),
            unlogged_runs_removed: g(&c.unlogged_runs_removed),
            wal_appends: g(&c.wal_appends),
            wal_syncs: g(&c.wal_syncs),
            pm_written_wal: sum(Tier::Pm, P::Wal, true),
            pm_written_manifest: sum(Tier::Pm, P::Manifest, true),
            pm_written_flush: sum(Tier::Pm, P::Flush, true),
            pm_written_compaction: sum(Tier::Pm, P::Compaction, true),
            pm_read_user: sum(Tier::Pm, P::UserRead, false),
            pm_read_compaction: sum(Tier::Pm, P::Compaction, false),
            pm_read_recovery: sum(Tier::Pm, P::Recovery, false)
                + sum(Tier::Pm, P::Manifest, false)
                + sum(Tier::Pm, P::Wal, false)
                + sum(Tier::Pm, P::Flush, false),
            pm_flush_fallbacks: g(&c.pm_flush_fallbacks),
            pm_manifest_fallbacks: g(&c.pm_manifest_fallbacks),
            pm_compaction_fallbacks: g(&c.pm_compaction_fallbacks),
            pm_compaction_retries: g(&c.pm_compaction_retries),
            flush_dropped_versions: g(&c.flush_dropped_versions),
            row_pages_freed_bytes: g(&c.row_pages_freed_bytes),
            subcompactions: g(&c.subcompactions),
            reused_runs: g(&c.reused_runs),
            reused_table_bytes: g(&c.reused_table_bytes),
            reclaimed_runs: g(&c.reclaimed_runs),
            load_mode_switches: g(&c.load_mode_switches),
            eager_flushes: g(&c.eager_flushes),
            load_trigger: g(&c.load_trigger),
            index_stale_copies: g(&c.index_stale_copies),
            index_adopted_tables: g(&c.index_adopted_tables),
            io,
            compaction_jobs,
            compaction_jobs_dropped,
            compaction_levels: c.levels.lock().values().cloned().collect(),
            flush_targets: c.flush_targets.lock().values().cloned().collect(),
            stall_causes: c.stall_causes(),
            ..DbStats::default()
        }
    }

    /// Bytes `stage` wrote to `tier` (flushes into it and compactions writing into it).
    pub fn stage_bytes_written(&self, stage: usize, tier: Tier) -> u64 {
        self.io
            .iter()
            .filter(|x| x.stage == Some(stage) && x.tier == tier)
            .map(|x| x.written)
            .sum()
    }

    /// Bytes `stage` read from `tier` for `purpose` (e.g. `user_read`).
    pub fn stage_bytes_read(&self, stage: usize, tier: Tier, purpose: IoPurpose) -> u64 {
        self.io
            .iter()
            .filter(|x| x.stage == Some(stage) && x.tier == tier && x.purpose == purpose.name())
            .map(|x| x.read)
            .sum()
    }

    /// All SSD bytes written.
    pub fn ssd_bytes_written(&self) -> u64 {
        self.ssd_written_wal
            + self.ssd_written_manifest
            + self.ssd_written_flush
            + self.ssd_written_compaction
    }

    /// All PM bytes written, as the engine handed them to the PM layer.
    pub fn pm_bytes_written(&self) -> u64 {
        self.pm_written_wal
            + self.pm_written_manifest
            + self.pm_written_flush
            + self.pm_written_compaction
    }

    /// PM bytes written at the device: cache lines written back x 64 (0 without PM).
    pub fn pm_device_bytes_written(&self) -> u64 {
        self.pm.as_ref().map_or(0, |p| p.lines_written_back * 64)
    }

    /// SSD bytes written / user bytes written (0 before any write).
    pub fn write_amplification(&self) -> f64 {
        ratio(self.ssd_bytes_written(), self.user_bytes_written)
    }

    /// PM bytes written at the device (cache lines written back x 64) / user bytes written.
    pub fn pm_write_amplification(&self) -> f64 {
        ratio(self.pm_device_bytes_written(), self.user_bytes_written)
    }

    /// PM bytes read for user reads / user bytes returned.
    pub fn pm_read_amplification(&self) -> f64 {
        ratio(self.pm_read_user, self.user_bytes_read)
    }

    /// Bytes of tables and their value logs on PM, and of LAB-DB's L0 trees and hot-key
    /// buffer.
    pub fn pm_live_bytes(&self) -> u64 {
        self.pm_levels.iter().map(|l| l.bytes).sum::<u64>()
            + self.value_logs.pm_bytes
            + self
                .labdb
                .as_ref()
                .map_or(0, |l| l.pm_bytes + l.hot_pm_bytes)
    }

    /// Bytes of tables on PM (the runs of `pm_levels` only).
    fn pm_table_bytes(&self) -> u64 {
        self.pm_levels.iter().map(|l| l.bytes).sum()
    }

    /// Write amplification without the WAL (flush + compaction bytes / user bytes), the figure
    /// LSM papers usually quote.
    pub fn write_amplification_tables(&self) -> f64 {
        ratio(
            self.ssd_written_flush + self.ssd_written_compaction,
            self.user_bytes_written,
        )
    }

    /// Device bytes read for user reads / user bytes returned (0 before any read).
    pub fn read_amplification(&self) -> f64 {
        ratio(self.ssd_read_user, self.user_bytes_read)
    }

    /// Bytes of tables, their value logs and WAL on SSD, and of LAB-DB's value arrays.
    pub fn ssd_live_bytes(&self) -> u64 {
        self.levels.iter().map(|l| l.bytes).sum::<u64>() - self.pm_table_bytes()
            + self.value_logs.ssd_bytes
            + self.wal_bytes
            + self.labdb.as_ref().map_or(0, |l| l.value_bytes)
    }

    /// PM bytes of tables and WAL / `logical_bytes`.
    pub fn pm_space_amplification(&self, logical_bytes: u64) -> f64 {
        ratio(self.pm_live_bytes() + self.pm_wal_bytes, logical_bytes)
    }

    /// Live SSD bytes (tables and WAL on SSD) / `logical_bytes` (the key + value bytes of the live data, which the caller
    /// measures, e.g. with [`crate::Db::logical_size`]).
    pub fn space_amplification(&self, logical_bytes: u64) -> f64 {
        ratio(self.ssd_live_bytes(), logical_bytes)
    }

    /// Total stall time in microseconds.
    pub fn stall_micros(&self) -> u64 {
        self.stall_slowdown_micros + self.stall_stop_micros
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn stall_reasons_have_distinct_slots_and_names() {
        let mut names = std::collections::HashSet::new();
        for slot in 0..StallReason::SLOTS {
            let r = StallReason::from_slot(slot);
            assert_eq!(r.slot(), slot, "{r:?}");
            assert!(names.insert(r.name()), "{r:?}");
        }
        assert_eq!(
            StallReason::Slowdown(1).name(),
            "stage 1 write pressure slowdown"
        );
        assert!(StallReason::Stop(0).is_stop() && !StallReason::Slowdown(0).is_stop());
    }

    #[test]
    fn stalls_are_charged_to_one_cause_and_groups_counted_once_per_cause() {
        let c = Counters::default();
        let earlier = Instant::now() - Duration::from_millis(5);
        let mut group = StallTracker::default();
        c.add_stall(earlier, StallReason::Slowdown(0), &mut group);
        c.add_stall(earlier, StallReason::MemtableLimit, &mut group);
        c.add_stall(earlier, StallReason::MemtableLimit, &mut group);
        let mut other = StallTracker::default();
        c.add_stall(earlier, StallReason::MemtableLimit, &mut other);
        let s = DbStats::from_counters(&c);
        assert_eq!(s.stall_count, 2);
        assert!(s.stall_slowdown_micros >= 5_000 && s.stall_stop_micros >= 15_000);
        let by: Vec<(&str, u64)> = s
            .stall_causes
            .iter()
            .map(|x| (x.cause.as_str(), x.stalled_groups))
            .collect();
        assert_eq!(
            by,
            vec![
                ("memtable limit", 2),
                ("stage 0 write pressure slowdown", 1)
            ]
        );
        let micros: u64 = s.stall_causes.iter().map(|x| x.micros).sum();
        assert_eq!(micros, s.stall_micros());
    }

    #[test]
    fn compactions_and_flushes_accumulate_per_group() {
        let c = Counters::default();
        let job = |group, written| LevelCompactionStats {
            stage: 0,
            group,
            compactions: 1,
            written_bytes: written,
            ..LevelCompactionStats::default()
        };
        c.add_compaction(&job(2, 10));
        c.add_compaction(&job(1, 5));
        c.add_compaction(&job(2, 7));
        c.add_flush(0, Tier::Pm, 100, 3);
        c.add_flush(0, Tier::Ssd, 50, 1);
        c.add_flush(0, Tier::Pm, 20, 2);
        let s = DbStats::from_counters(&c);
        let rows: Vec<(usize, u64, u64)> = s
            .compaction_levels
            .iter()
            .map(|l| (l.group, l.compactions, l.written_bytes))
            .collect();
        assert_eq!(rows, vec![(1, 1, 5), (2, 2, 17)]);
        let flushes: Vec<(Tier, u64, u64, u64)> = s
            .flush_targets
            .iter()
            .map(|f| (f.tier, f.flushes, f.written_bytes, f.micros))
            .collect();
        assert_eq!(flushes, vec![(Tier::Ssd, 1, 50, 1), (Tier::Pm, 2, 120, 5)]);
    }
}
