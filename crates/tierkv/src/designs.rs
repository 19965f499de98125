//! The design registry: every design TierKV runs, as a named composition of a front end and an
//! ordered list of stages, each with the paper's parameters as its defaults.
//!
//! A design lives in its own file (`designs/<name>.rs`) that defines one [`DesignSpec`];
//! `REGISTRY` lists them, [`Design::ALL`] names them, and the CLI, the manifest (which records
//! the design's name), the reports and the tests read that list. Adding a design is adding its
//! file and one line in `REGISTRY` (plus its constant below), nothing else: see
//! `docs/ARCHITECTURE.md`, "Adding a design".
//!
//! Options name a design ([`Design`], defined with them); the registry reads the options: it
//! builds the design's parts from them, applies its defaults, and checks what the design asks
//! of them ([`Options::validate`]).

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

pub use crate::options::Design;

/// Every design's entry, in CLI order ([`Design::ALL`]).
const REGISTRY: &[&DesignSpec] = &[
    &leveled::SPEC,
    &tiered::SPEC,
    &leveled_pm::SPEC,
    &leveled_pmtable::SPEC,
    &nvlsm::SPEC,
    &nvlsm_leveled::SPEC,
    &nvlsm_fragmented::SPEC,
    &trianglekv::SPEC,
    &matrixkv::SPEC,
    &slmdb::SPEC,
    &labdb::SPEC,
    &fluidkv::SPEC,
    &listdb::SPEC,
];

impl Design {
    /// SSD write-ahead log, DRAM memtable, leveled SSTables on SSD: the LevelDB/RocksDB baseline
    /// ("RocksDB-SSD" in the papers). With [`crate::PmOptions::wal_on_pm`] its WAL moves to PM.
    pub const LEVELED: Design = Design(leveled::SPEC.name);
    /// WAL and DRAM memtable in front of size-tiered SSTables on SSD: RocksDB's universal
    /// compaction, the baseline that rewrites less than leveled compaction for more space.
    pub const TIERED: Design = Design(tiered::SPEC.name);
    /// The "RocksDB-L0-NVM" baseline of TriangleKV and LAB-DB: WAL on a PM log, L0 tables in
    /// the PM pool (read in place), L1 and below on SSD.
    pub const LEVELED_PM: Design = Design(leveled_pm::SPEC.name);
    /// SLM-DB's "LevelDB+PM" baseline: a persistent skiplist memtable in PM and no WAL, in
    /// front of the leveled SSTables of `leveled`.
    pub const LEVELED_PMTABLE: Design = Design(leveled_pmtable::SPEC.name);

    /// NVLSM: C1 runs and Skip-Array Trees of PM sorted arrays (accumulative compaction,
    /// cascading search), all in the PM pool.
    pub const NVLSM: Design = Design(nvlsm::SPEC.name);
    /// NVLSM-L: NVLSM's front end over leveled PM sorted arrays.
    pub const NVLSM_LEVELED: Design = Design(nvlsm_leveled::SPEC.name);
    /// NVLSM-F: NVLSM's front end over PebblesDB-style guards of PM sorted arrays.
    pub const NVLSM_FRAGMENTED: Design = Design(nvlsm_fragmented::SPEC.name);

    /// TriangleKV: a triangle container of PM rows with cross-row hints as L0 (right-angle-side
    /// compaction) over flattened leveled SSTables on SSD.
    pub const TRIANGLEKV: Design = Design(trianglekv::SPEC.name);
    /// MatrixKV, TriangleKV's baseline: a matrix container of PM rows (receiver, compactor,
    /// column compaction) as L0 over flattened leveled SSTables on SSD.
    pub const MATRIXKV: Design = Design(matrixkv::SPEC.name);

    /// SLM-DB: a persistent skiplist memtable in PM and no WAL, one level of overlapping
    /// SSTables on SSD found through a persistent B+ tree in PM, selective compaction.
    pub const SLMDB: Design = Design(slmdb::SPEC.name);

    /// LAB-DB: an L0 of two persistent B+ trees (leaves in PM, inner nodes in DRAM) holding
    /// value addresses into value arrays on SSD, updated in place, compacted chunk by chunk
    /// into leveled SSTables on SSD.
    pub const LABDB: Design = Design(labdb::SPEC.name);

    /// FluidKV: FastStore (a concurrent DRAM index over per-thread PM logs) in front of a
    /// BufferStore of buffer trees and a StableStore of logical sorted tables, all in PM, with
    /// a load-aware compaction trigger and parallel compaction.
    pub const FLUIDKV: Design = Design(fluidkv::SPEC.name);
    /// FluidKV's baseline, ListDB: a shared PM log whose entries become persistent skiplist
    /// nodes, L0 lists zipped into one L1 list.
    pub const LISTDB: Design = Design(listdb::SPEC.name);

    /// Every design this build knows, in CLI order (the registry's).
    pub const ALL: &'static [Design] = &{
        let mut all = [Design(""); REGISTRY.len()];
        let mut i = 0;
        while i < all.len() {
            all[i] = Design(REGISTRY[i].name);
            i += 1;
        }
        all
    };

    /// The design's name in the CLI, the manifest and the reports.
    pub fn name(self) -> &'static str {
        self.0
    }

    /// One line: what the design is and where it comes from.
    pub fn summary(self) -> &'static str {
        self.spec().summary
    }

    /// The registry entry. A `Design` is made only from the registry's names (its constants,
    /// or a name parsed against [`Design::ALL`]), so the entry exists.
    pub(crate) fn spec(self) -> &'static DesignSpec {
        REGISTRY
            .iter()
            .copied()
            .find(|s| s.name == self.0)
            .expect("a Design names an entry of the registry")
    }

    /// Where the WAL lives under `options` (SSD for a design without a log).
    pub fn wal_tier(self, options: &Options) -> Tier {
        (self.spec().log_tier)(options).unwrap_or(Tier::Ssd)
    }

    /// The design's front end.
    pub(crate) fn front_end(self) -> FrontEndKind {
        self.spec().front_end
    }

    /// True if the design's memtable is in the PM pool and it has no WAL (SLM-DB's designs).
    pub fn memtable_on_pm(self) -> bool {
        self.spec().front_end == FrontEndKind::PmMemtable
    }

    /// True if the design keeps anything in the PM pool under `options`.
    pub fn uses_pm(self, options: &Options) -> bool {
        (self.spec().uses_pm)(options)
    }

    /// True if every run the design writes lives in the PM pool, so the pool must hold the
    /// whole database (with its space amplification), not only logs and a first stage.
    pub fn data_on_pm(self) -> bool {
        self.spec().data_on_pm
    }

    /// True if the design keeps a compaction log on PM (see `DbStats::clog_discarded`).
    pub fn compaction_log(self) -> bool {
        self.spec().compaction_log
    }

    /// Why the design cannot run with `compaction.disable_auto_compactions`, or `None` if it
    /// can (opening with it set then fails with [`Error::InvalidArgument`] giving this reason).
    pub fn needs_auto_compactions(self) -> Option<&'static str> {
        self.spec().needs_auto_compactions
    }

    /// The design's stages under `options`.
    pub(crate) fn stages(self, options: &Options) -> Vec<Box<dyn Stage>> {
        (self.spec().stages)(options)
    }

    /// The shape of each stage's state under `options`, in pipeline order.
    pub fn layouts(self, options: &Options) -> Arc<[StageLayout]> {
        self.stages(options).iter().map(|s| s.layout()).collect()
    }

    /// `options` with this design and its defaults applied.
    pub fn options(self, mut options: Options) -> Options {
        options.design = self;
        (self.spec().defaults)(&mut options);
        options
    }
}

impl Options {
    /// Where a manifest written under these options goes: the pool with `pm.manifest_on_pm`
    /// (for a design with a pool), else the database directory.
    pub fn manifest_tier(&self) -> Tier {
        if self.pm.manifest_on_pm == Some(true) && self.design.uses_pm(self) {
            Tier::Pm
        } else {
            Tier::Ssd
        }
    }

    /// Checks every field, and that the design can run with them (its pool's size, the
    /// options it does not support); returns [`Error::InvalidArgument`] naming the first bad
    /// one.
    pub fn validate(&self) -> Result<()> {
        self.validate_fields()?;
        self.design.check_options(self)
    }
}

impl Design {
    /// What the design asks of `options` (their fields already checked on their own).
    fn check_options(self, o: &Options) -> Result<()> {
        let bad = |m: String| Err(Error::InvalidArgument(m));
        if o.table.value_separation > 0 && (self == Design::SLMDB || self == Design::LABDB) {
            return bad(format!(
                "table.value_separation needs a design without a global index; {self} maps \
                 keys to table blocks"
            ));
        }
        if o.pm.thread_logs
            && (self.wal_tier(o) != Tier::Pm || self.memtable_on_pm() || self == Design::LABDB)
        {
            return bad(format!(
                "pm.thread_logs needs a design whose log is on PM in front of a DRAM memtable; \
                 {self} is not one under these options"
            ));
        }
        if o.pm.manifest_on_pm == Some(true) && !self.uses_pm(o) {
            return bad(format!(
                "pm.manifest_on_pm needs a design with a PM pool; {self} has none under these \
                 options"
            ));
        }
        if o.compaction.disable_auto_compactions {
            if let Some(why) = self.spec().needs_auto_compactions {
                return bad(format!(
                    "compaction.disable_auto_compactions is not supported by design {self}: {why}"
                ));
            }
        }
        if self.uses_pm(o) && o.pm.pool.is_none() {
            self.check_pool_size(o)?;
        }
        Ok(())
    }

    /// The pool's chunk size and size under `o`, for a pool the open creates or maps.
    fn check_pool_size(self, o: &Options) -> Result<()> {
        let bad = |m: String| Err(Error::InvalidArgument(m));
        let pm = &o.pm;
        if pm.chunk_bytes < (64 << 10) || !pm.chunk_bytes.is_power_of_two() {
            return bad("pm.chunk_bytes must be a power of two >= 64 KiB".into());
        }
        if !pm.size_bytes.is_multiple_of(pm.chunk_bytes) {
            return bad(format!(
                "pm.size_bytes {} must be a multiple of pm.chunk_bytes {}",
                pm.size_bytes, pm.chunk_bytes
            ));
        }
        // The header and directory chunks, a spare, and one chunk per WAL when the WAL is
        // on PM (otherwise room for one table), and the manifest's when it is in the pool.
        let manifest_on_pm = o.manifest_tier() == Tier::Pm;
        let min_chunks = if self.wal_tier(o) == Tier::Pm {
            crate::fs::min_pool_chunks(o.max_write_buffer_number, manifest_on_pm)
        } else {
            3 + if manifest_on_pm {
                crate::fs::MANIFEST_CHUNKS
            } else {
                0
            }
        };
        let min = min_chunks * pm.chunk_bytes;
        if pm.size_bytes < min {
            return bad(format!(
                "pm.size_bytes {} is below the minimum of {min} bytes ({} MiB: {min_chunks} \
                 chunks of {} bytes: the pool header, the file directory, a spare chunk and \
                 one chunk per WAL of max_write_buffer_number memtables, and two for a \
                 manifest in the pool)",
                pm.size_bytes,
                min >> 20,
                pm.chunk_bytes
            ));
        }
        Ok(())
    }
}

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
