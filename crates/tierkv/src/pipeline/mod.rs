//! The seams every design plugs into: a front end that takes writes, and an ordered list of
//! stages that data moves down through.
//!
//! ```text
//!   write/batch ──> FrontEnd ──flush──> Stage 0 ──compaction──> Stage 1 ... Stage n
//!   get/scan  ───>  newest first: front end, then stage 0, 1, ... (the first that knows the key
//!                   answers; scans merge every source under one snapshot)
//! ```
//!
//! * The front end (`front_end.rs`) makes writes durable and readable and hands over what is
//!   ready to flush; today's is the WAL + DRAM memtable of LevelDB ([`FrontEndKind::WalMemtable`]).
//! * A [`Stage`] is one step of the pipeline on one or more tiers, with its own run kind, point
//!   lookup, iterators, the ingest of a flush or a compaction's output, its compaction policy,
//!   and its checks. Its state is a [`crate::version::StageVersion`] inside the version, changed
//!   only by manifest edits tagged with the stage.
//! * A design (`crate::designs`) names a front end and a list of stages.
//! * Write admission (`admission.rs`): one rule, for every front end, for when a write is
//!   delayed, waits, or needs the write buffer rotated first.
//!
//! `docs/ARCHITECTURE.md` shows how the five papers' designs map onto these seams.

mod admission;
mod compaction;
mod flush;
mod front_end;
mod host;
mod open;
mod shadow;
mod stage;

pub(crate) use crate::compaction::RunTarget;
pub(crate) use admission::{admit, Admission, Fill};
pub(crate) use compaction::{CompactionRule, OutputBlocks, PlainRule, RuleContext};
pub(crate) use flush::{add_kept, run_meta, FlushPlan};
pub(crate) use front_end::{FlushSource, FrontEnd, FrontEndKind, FrontView};
pub(crate) use host::{BackgroundTask, LockedVersions, StageHost};
pub use open::CheckReport;
pub(crate) use open::{AttachContext, CheckContext, PoolStructure};
pub(crate) use shadow::ShadowFilter;
pub(crate) use stage::{Entry, ManualProgress, ManualStep, ReadContext, Stage, WritePressure};
