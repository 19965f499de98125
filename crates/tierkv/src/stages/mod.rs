//! The stage kinds designs are assembled from (see [`crate::pipeline::Stage`]).
//!
//! * [`LeveledStage`] (`levels.rs`): leveled SSTables, L0 overlapping, L1.. disjoint, with a
//!   tier per level (L0 on PM for `leveled-pm`).

mod levels;

pub(crate) use levels::LeveledStage;
