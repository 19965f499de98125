//! The live counters a database updates as it runs (atomics), with the job log of recent
//! compactions and the stall tracker.

use super::*;

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
    pub(super) levels: parking_lot::Mutex<BTreeMap<(usize, usize), LevelCompactionStats>>,
    /// Cumulative flush figures per (target group, tier index).
    pub(super) flush_targets: parking_lot::Mutex<BTreeMap<(usize, usize), FlushTargetStats>>,
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
    pub(super) jobs: std::collections::VecDeque<CompactionJob>,
    /// Jobs dropped from the front to keep [`JOB_LOG_LEN`].
    pub(super) dropped: u64,
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
    pub(super) const SLOTS: usize = 2 + 2 * MAX_STAGES;

    pub(super) fn slot(self) -> usize {
        match self {
            StallReason::MemtableLimit => 0,
            StallReason::PmPoolFull => 1,
            StallReason::Slowdown(i) => 2 + i.min(MAX_STAGES - 1),
            StallReason::Stop(i) => 2 + MAX_STAGES + i.min(MAX_STAGES - 1),
        }
    }

    pub(super) fn from_slot(slot: usize) -> StallReason {
        match slot {
            0 => StallReason::MemtableLimit,
            1 => StallReason::PmPoolFull,
            s if s < 2 + MAX_STAGES => StallReason::Slowdown(s - 2),
            s => StallReason::Stop(s - 2 - MAX_STAGES),
        }
    }

    /// True if its time counts as stop time (all but a stage's slowdown).
    pub(super) fn is_stop(self) -> bool {
        !matches!(self, StallReason::Slowdown(_))
    }

    /// The cause's name in [`StallCause::cause`].
    pub(super) fn name(self) -> String {
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
    pub(super) fn stall_causes(&self) -> Vec<StallCause> {
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
