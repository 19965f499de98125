//! The design registry: every design TierKV runs, as a named composition of a front end and an
//! ordered list of stages, each with the paper's parameters as its defaults.
//!
//! A design lives in its own file (`designs/<name>.rs`) that defines one [`DesignSpec`];
//! [`Design::ALL`] lists them, and the CLI, the manifest (which records the design's name), the
//! reports and the tests read that list. Adding a design is adding its file and one line in
//! [`Design::ALL`] (plus its constant below), nothing else: see `docs/ARCHITECTURE.md`, "Adding
//! a design".

mod fluidkv;
mod labdb;
mod leveled;
mod leveled_pm;
mod leveled_pmtable;
mod listdb;
mod matrixkv;
mod nvlsm;
mod nvlsm_fragmented;
mod nvlsm_leveled;
mod slmdb;
mod tiered;
mod trianglekv;

use crate::options::Options;
use crate::pipeline::{FrontEndKind, Stage};
use crate::tier::Tier;
use crate::version::StageLayout;
use crate::{Error, Result};
use std::sync::Arc;

/// What a design is: its name, where its front end keeps its log, and how its stages are built.
pub(crate) struct DesignSpec {
    /// The design's name in the CLI, the manifest and the reports.
    pub name: &'static str,
    /// One line: what the design is and where it comes from.
    pub summary: &'static str,
    /// The front end.
    pub front_end: FrontEndKind,
    /// Where the front end keeps its log under `options` (`None`: no log).
    pub log_tier: fn(&Options) -> Option<Tier>,
    /// Whether the design keeps anything in the PM pool under `options`.
    pub uses_pm: fn(&Options) -> bool,
    /// Whether every run the design writes lives in the PM pool (the pool holds the whole
    /// database).
    pub data_on_pm: bool,
    /// Whether the design keeps a compaction log on PM (its flushes and compactions announce
    /// each step there before it runs; recovery replays it). Requires the PM pool.
    pub compaction_log: bool,
    /// The design's stages under `options`, in pipeline order (stage 0 receives the flushes).
    pub stages: fn(&Options) -> Vec<Box<dyn Stage>>,
    /// Why the design cannot run with `compaction.disable_auto_compactions` (`None`: it can):
    /// a first stage of bounded capacity that only compaction frees, so writes would stop for
    /// good, or outgrow the PM the design is sized for.
    pub needs_auto_compactions: Option<&'static str>,
    /// Applies the design's own defaults (the paper's parameters, scaled to this machine) to
    /// options that still hold the engine-wide defaults.
    pub defaults: fn(&mut Options),
}

/// A design: a handle to its entry in the registry. Cheap to copy; compares by name.
#[derive(Clone, Copy)]
pub struct Design(&'static DesignSpec);

impl Design {
    /// SSD write-ahead log, DRAM memtable, leveled SSTables on SSD: the LevelDB/RocksDB baseline
    /// ("RocksDB-SSD" in the papers). With [`crate::PmOptions::wal_on_pm`] its WAL moves to PM.
    pub const LEVELED: Design = Design(&leveled::SPEC);
    /// WAL and DRAM memtable in front of size-tiered SSTables on SSD: RocksDB's universal
    /// compaction, the baseline that rewrites less than leveled compaction for more space.
    pub const TIERED: Design = Design(&tiered::SPEC);
    /// The "RocksDB-L0-NVM" baseline of TriangleKV and LAB-DB: WAL on a PM log, L0 tables in
    /// the PM pool (read in place), L1 and below on SSD.
    pub const LEVELED_PM: Design = Design(&leveled_pm::SPEC);
    /// SLM-DB's "LevelDB+PM" baseline: a persistent skiplist memtable in PM and no WAL, in
    /// front of the leveled SSTables of `leveled`.
    pub const LEVELED_PMTABLE: Design = Design(&leveled_pmtable::SPEC);

    /// NVLSM: C1 runs and Skip-Array Trees of PM sorted arrays (accumulative compaction,
    /// cascading search), all in the PM pool.
    pub const NVLSM: Design = Design(&nvlsm::SPEC);
    /// NVLSM-L: NVLSM's front end over leveled PM sorted arrays.
    pub const NVLSM_LEVELED: Design = Design(&nvlsm_leveled::SPEC);
    /// NVLSM-F: NVLSM's front end over PebblesDB-style guards of PM sorted arrays.
    pub const NVLSM_FRAGMENTED: Design = Design(&nvlsm_fragmented::SPEC);

    /// TriangleKV: a triangle container of PM rows with cross-row hints as L0 (right-angle-side
    /// compaction) over flattened leveled SSTables on SSD.
    pub const TRIANGLEKV: Design = Design(&trianglekv::SPEC);
    /// MatrixKV, TriangleKV's baseline: a matrix container of PM rows (receiver, compactor,
    /// column compaction) as L0 over flattened leveled SSTables on SSD.
    pub const MATRIXKV: Design = Design(&matrixkv::SPEC);

    /// SLM-DB: a persistent skiplist memtable in PM and no WAL, one level of overlapping
    /// SSTables on SSD found through a persistent B+ tree in PM, selective compaction.
    pub const SLMDB: Design = Design(&slmdb::SPEC);

    /// LAB-DB: an L0 of two persistent B+ trees (leaves in PM, inner nodes in DRAM) holding
    /// value addresses into value arrays on SSD, updated in place, compacted chunk by chunk
    /// into leveled SSTables on SSD.
    pub const LABDB: Design = Design(&labdb::SPEC);

    /// FluidKV: FastStore (a concurrent DRAM index over per-thread PM logs) in front of a
    /// BufferStore of buffer trees and a StableStore of logical sorted tables, all in PM, with
    /// a load-aware compaction trigger and parallel compaction.
    pub const FLUIDKV: Design = Design(&fluidkv::SPEC);
    /// FluidKV's baseline, ListDB: a shared PM log whose entries become persistent skiplist
    /// nodes, L0 lists zipped into one L1 list.
    pub const LISTDB: Design = Design(&listdb::SPEC);

    /// Every design this build knows, in CLI order.
    pub const ALL: &'static [Design] = &[
        Design::LEVELED,
        Design::TIERED,
        Design::LEVELED_PM,
        Design::LEVELED_PMTABLE,
        Design::NVLSM,
        Design::NVLSM_LEVELED,
        Design::NVLSM_FRAGMENTED,
        Design::TRIANGLEKV,
        Design::MATRIXKV,
        Design::SLMDB,
        Design::LABDB,
        Design::FLUIDKV,
        Design::LISTDB,
    ];

    /// The design's name in the CLI, the manifest and the reports.
    pub fn name(self) -> &'static str {
        self.0.name
    }

    /// One line: what the design is and where it comes from.
    pub fn summary(self) -> &'static str {
        self.0.summary
    }

    /// The registry entry.
    pub(crate) fn spec(self) -> &'static DesignSpec {
        self.0
    }

    /// Where the WAL lives under `options` (SSD for a design without a log).
    pub fn wal_tier(self, options: &Options) -> Tier {
        (self.0.log_tier)(options).unwrap_or(Tier::Ssd)
    }

    /// The design's front end.
    pub(crate) fn front_end(self) -> FrontEndKind {
        self.0.front_end
    }

    /// True if the design's memtable is in the PM pool and it has no WAL (SLM-DB's designs).
    pub fn memtable_on_pm(self) -> bool {
        self.0.front_end == FrontEndKind::PmMemtable
    }

    /// True if the design keeps anything in the PM pool under `options`.
    pub fn uses_pm(self, options: &Options) -> bool {
        (self.0.uses_pm)(options)
    }

    /// True if every run the design writes lives in the PM pool, so the pool must hold the
    /// whole database (with its space amplification), not only logs and a first stage.
    pub fn data_on_pm(self) -> bool {
        self.0.data_on_pm
    }

    /// True if the design keeps a compaction log on PM (see `DbStats::clog_discarded`).
    pub fn compaction_log(self) -> bool {
        self.0.compaction_log
    }

    /// Why the design cannot run with `compaction.disable_auto_compactions`, or `None` if it
    /// can (opening with it set then fails with [`Error::InvalidArgument`] giving this reason).
    pub fn needs_auto_compactions(self) -> Option<&'static str> {
        self.0.needs_auto_compactions
    }

    /// The design's stages under `options`.
    pub(crate) fn stages(self, options: &Options) -> Vec<Box<dyn Stage>> {
        (self.0.stages)(options)
    }

    /// The shape of each stage's state under `options`, in pipeline order.
    pub fn layouts(self, options: &Options) -> Arc<[StageLayout]> {
        self.stages(options).iter().map(|s| s.layout()).collect()
    }

    /// `options` with this design and its defaults applied.
    pub fn options(self, mut options: Options) -> Options {
        options.design = self;
        (self.0.defaults)(&mut options);
        options
    }
}

impl PartialEq for Design {
    fn eq(&self, other: &Design) -> bool {
        self.name() == other.name()
    }
}

impl Eq for Design {}

impl std::fmt::Debug for Design {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::fmt::Display for Design {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Design {
    type Err = Error;
    fn from_str(s: &str) -> Result<Design> {
        Design::ALL
            .iter()
            .copied()
            .find(|d| d.name() == s)
            .ok_or_else(|| {
                let known: Vec<_> = Design::ALL.iter().map(|d| d.name()).collect();
                Error::InvalidArgument(format!(
                    "unknown design {s:?}; known designs: {}",
                    known.join(", ")
                ))
            })
    }
}

impl serde::Serialize for Design {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Design {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Design, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_names_are_unique_and_round_trip() {
        for (i, d) in Design::ALL.iter().enumerate() {
            assert_eq!(d.name().parse::<Design>().unwrap(), *d);
            assert!(Design::ALL[..i].iter().all(|o| o.name() != d.name()));
            let o = d.options(Options::default());
            assert_eq!(o.design, *d);
            assert!(!d.layouts(&o).is_empty(), "{d} has stages");
        }
        assert!("nope".parse::<Design>().is_err());
    }
}
