//! `nvlsm`: NVLSM (Zhang & Du, "NVLSM: A Persistent Memory Key-Value Store Using Log-Structured
//! Merge Tree with Accumulative Compaction", ACM TOS 2021), an LSM tree entirely in persistent
//! memory.
//!
//! Front end: a PM log (each write group persisted before it is acknowledged) and a DRAM
//! memtable (C0). Stage: the components (`stages::SetStage`): C1, the flushed runs, then
//! C2..Cn of Skip-Array Trees whose floors are PM sorted arrays with cascade pointers, grown
//! by accumulative compaction (`compaction::AccumulativePolicy`). Nothing is on SSD but the
//! manifest.
//!
//! Defaults, the paper's (section 6.1) where it gives them: 2 MiB memtable and runs, at most
//! 10 floors per Skip-Array Tree, 10-bit Bloom filters, no compression. Where it is silent:
//! C1 holds 4 runs (LevelDB's L0 trigger), writes slow down at 8 and stop at 12 C1 runs
//! (LevelDB's), components grow by 10x (LevelDB's ratio, section 3), 7 components. The PM
//! pool's chunks are 256 KiB, so a 2 MiB run wastes at most one partly used chunk (4 MiB
//! chunks would waste half of every run). See `docs/designs/nvlsm.md`.

use super::DesignSpec;
use crate::options::Options;
use crate::pipeline::{FrontEndKind, Stage};
use crate::stages::SetStage;
use crate::tier::Tier;

pub(super) const SPEC: DesignSpec = DesignSpec {
    name: "nvlsm",
    summary: "PM log + DRAM memtable, C1 runs and Skip-Array Trees (accumulative compaction, \
              cascading search) of PM sorted arrays, all on PM (NVLSM)",
    front_end: FrontEndKind::WalMemtable,
    log_tier: |_| Some(Tier::Pm),
    uses_pm: |_| true,
    data_on_pm: true,
    compaction_log: true,
    needs_auto_compactions: Some(NVLSM_NEEDS_COMPACTIONS),
    stages: |o| vec![Box::new(SetStage::new(&o.compaction, &o.nvlsm, true)) as Box<dyn Stage>],
    defaults: nvlsm_defaults,
};

/// Why the NVLSM designs need automatic compactions: C1 is bounded only by its stop trigger,
/// and every run lives in the PM pool, which compaction alone keeps within its size.
pub(super) const NVLSM_NEEDS_COMPACTIONS: &str =
    "every run lives in the PM pool, and only compaction bounds C1 (its stop trigger) and keeps \
     the pool within its size: with no automatic compaction, C1 would grow until the pool is \
     full and flushes would spill the design's runs to SSD";

/// The NVLSM family's defaults (the paper's parameters), applied to options that still hold
/// the engine-wide defaults.
pub(super) fn nvlsm_defaults(o: &mut Options) {
    let engine = Options::default();
    if o.write_buffer_size == engine.write_buffer_size {
        o.write_buffer_size = 2 << 20;
    }
    if o.pm.chunk_bytes == engine.pm.chunk_bytes {
        o.pm.chunk_bytes = 256 << 10;
    }
    let (c, e) = (&mut o.compaction, &engine.compaction);
    if c.target_file_size == e.target_file_size {
        c.target_file_size = 2 << 20;
    }
    if c.level0_slowdown_trigger == e.level0_slowdown_trigger {
        c.level0_slowdown_trigger = 8;
    }
    if c.level0_stop_trigger == e.level0_stop_trigger {
        c.level0_stop_trigger = 12;
    }
    if c.max_bytes_for_level_base == e.max_bytes_for_level_base {
        // NVLSM-L's first level below C1 holds what C2 holds: C1's capacity times the ratio.
        c.max_bytes_for_level_base = (c.level0_compaction_trigger as u64)
            .saturating_mul(c.target_file_size)
            .saturating_mul(c.level_size_multiplier);
    }
}
