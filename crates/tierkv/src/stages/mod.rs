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

use crate::options::CompactionOptions;
use crate::pipeline::WritePressure;

/// The write pressure of a stage whose first group (L0, C1) holds `runs` flushed runs: stop at
/// `level0_stop_trigger`, slow down at `level0_slowdown_trigger`.
fn first_group_pressure(options: &CompactionOptions, runs: usize) -> WritePressure {
    if runs >= options.level0_stop_trigger {
        WritePressure::Stop
    } else if runs >= options.level0_slowdown_trigger {
        WritePressure::Slowdown
    } else {
        WritePressure::None
    }
}
