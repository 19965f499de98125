//! The stage kinds designs are assembled from (see [`crate::pipeline::Stage`]).
//!
//! * [`LeveledStage`] (`levels.rs`): leveled runs, L0 overlapping, L1.. disjoint, with a tier
//!   per level (L0 on PM for `leveled-pm`; every level on PM as sorted arrays for
//!   `nvlsm-leveled`).
//! * [`SetStage`] (`sets.rs`): NVLSM's components, C1 overlapping, C2.. groups of sets
//!   (Skip-Array Trees for `nvlsm`, guards for `nvlsm-fragmented`).
//! * `concat.rs`: the concatenating iterator over a group's disjoint runs or sets.

mod concat;
mod levels;
mod sets;

pub(crate) use levels::LeveledStage;
pub(crate) use sets::SetStage;
