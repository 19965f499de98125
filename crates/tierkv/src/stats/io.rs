//! The I/O matrix's coordinates: each byte counted by tier, part of the pipeline (the front
//! end or a stage) and purpose (WAL, flush, compaction, user read, ...).

use super::*;

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
    pub(super) const SLOTS: usize = 2 + MAX_STAGES;

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

    pub(super) fn from_slot(slot: usize) -> Part {
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

pub(crate) const TIERS: [Tier; 2] = [Tier::Ssd, Tier::Pm];

pub(crate) fn tier_index(tier: Tier) -> usize {
    match tier {
        Tier::Ssd => 0,
        Tier::Pm => 1,
    }
}

pub(crate) const MATRIX: usize = TIERS.len() * Part::SLOTS * IoPurpose::ALL.len() * 2;

pub(crate) fn cell(tier: Tier, part: Part, purpose: IoPurpose, written: bool) -> usize {
    ((tier_index(tier) * Part::SLOTS + part.slot()) * IoPurpose::ALL.len() + purpose.index()) * 2
        + usize::from(written)
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
