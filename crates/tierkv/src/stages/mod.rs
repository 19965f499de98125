//! The stage kinds designs are assembled from (see [`crate::pipeline::Stage`]).
//!
//! * [`LeveledStage`] (`levels.rs`): leveled runs, L0 overlapping, L1.. disjoint, with a tier
//!   per level (L0 on PM for `leveled-pm`; every level on PM as sorted arrays for
//!   `nvlsm-leveled`).
//! * [`SetStage`] (`sets.rs`): NVLSM's components, C1 overlapping, C2.. groups of sets
//!   (Skip-Array Trees for `nvlsm`, guards for `nvlsm-fragmented`).
//! * [`RowStage`] (`rows.rs`): a row container of PM rows as L0 (TriangleKV's triangle,
//!   MatrixKV's matrix) over leveled SSTables on SSD.
//! * [`SingleLevelStage`] (`single.rs`): SLM-DB's single level of overlapping SSTables found
//!   through a global index in PM.
//! * [`LabStage`] (`lab.rs`): LAB-DB's L0 of two persistent B+ trees in PM over leveled
//!   SSTables on SSD.
//! * [`TieredStage`] (`tiered.rs`): size-tiered sorted runs of SSTables on SSD (`tiered`).
//! * `concat.rs`: the concatenating iterator over a group's disjoint runs or sets.

mod concat;
mod lab;
mod levels;
mod load;
mod row_pages;
pub(crate) mod rows;
mod sets;
mod single;
mod tiered;

pub(crate) use lab::LabStage;
pub(crate) use levels::LeveledStage;
pub(crate) use rows::RowStage;
pub(crate) use sets::SetStage;
pub(crate) use single::SingleLevelStage;
pub(crate) use tiered::TieredStage;

use crate::options::CompactionOptions;
use crate::pipeline::WritePressure;

/// True if group `group` or a deeper one of `state` may hold `user_key`: a run of the first
/// (overlapping) group whose range covers it, or, in a deeper group, what `deeper_holds` says.
fn may_hold_from(
    state: &crate::version::StageVersion,
    group: usize,
    user_key: &[u8],
    deeper_holds: impl Fn(usize) -> bool,
) -> bool {
    (group..state.groups.len()).any(|g| {
        if g == 0 {
            state.groups[0]
                .iter()
                .any(|f| f.overlaps(Some(user_key), Some(user_key)))
        } else {
            deeper_holds(g)
        }
    })
}

/// A stage's answer from the entry a search found (internal key, value): its type and value;
/// a malformed key is corruption naming the stage.
fn found_entry(
    stage: &str,
    user_key: &[u8],
    found: Option<(Vec<u8>, Vec<u8>)>,
) -> crate::Result<Option<crate::pipeline::Entry>> {
    let Some((ikey, value)) = found else {
        return Ok(None);
    };
    let p = crate::format::parse_internal_key(&ikey)
        .ok_or_else(|| crate::Error::corruption(stage, "malformed internal key"))?;
    debug_assert_eq!(p.user_key, user_key);
    Ok(Some((p.value_type, value)))
}

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
