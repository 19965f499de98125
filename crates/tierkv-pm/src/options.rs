//! Errors, options, counters and crash-image kinds of the PM layer.
//!
//! **Purpose.** Plain data types shared by every other module: [`PmError`], [`PoolOptions`],
//! [`DurabilityMode`], [`LatencyModel`] (with the paper presets), [`PmStats`] and [`CrashImage`].
//!
//! **Thread safety.** All types are plain values (`Send + Sync`, `Clone`).
//!
//! **Durability.** Nothing here is stored in PM; the options that matter after a restart (pool
//! size, chunk size) are recorded in the pool header by [`crate::PmPool::create`].

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Errors of the PM layer.
#[derive(Debug, thiserror::Error)]
pub enum PmError {
    /// A file operation on the pool file failed.
    #[error("PM I/O error during {op} on {path}: {source}")]
    Io {
        /// Operation.
        op: &'static str,
        /// Pool file.
        path: String,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// The pool header or a structure failed its checks.
    #[error("PM corruption in {location}: {reason}")]
    Corruption {
        /// Pool file and offset.
        location: String,
        /// What failed.
        reason: String,
    },
    /// An access outside the pool, or a bad option.
    #[error("PM invalid argument: {0}")]
    InvalidArgument(String),
    /// No free chunk is left.
    #[error("PM pool is full ({0})")]
    NoSpace(String),
}

/// PM result type.
pub type PmResult<T> = Result<T, PmError>;

/// How persists are made durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DurabilityMode {
    /// DAX file system, `MAP_SYNC` mapping: flush + fence is power-fail durable.
    Dax,
    /// Regular file: persist also `msync`s the touched pages.
    Msync,
    /// Flush + fence only: survives a process crash, not a power failure.
    Emulated,
}

impl DurabilityMode {
    /// The lower-case name used on the command line and in reports (`dax`, `msync`, `emulated`).
    pub fn name(self) -> &'static str {
        match self {
            DurabilityMode::Dax => "dax",
            DurabilityMode::Msync => "msync",
            DurabilityMode::Emulated => "emulated",
        }
    }
}

impl fmt::Display for DurabilityMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for DurabilityMode {
    type Err = PmError;

    /// Parses `dax`, `msync` or `emulated` (ASCII case-insensitive).
    fn from_str(s: &str) -> PmResult<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "dax" => Ok(DurabilityMode::Dax),
            "msync" => Ok(DurabilityMode::Msync),
            "emulated" => Ok(DurabilityMode::Emulated),
            other => Err(PmError::InvalidArgument(format!(
                "unknown durability mode {other:?} (expected dax, msync or emulated)"
            ))),
        }
    }
}

/// Emulated PM latency added per cache line written back and per read access.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LatencyModel {
    /// Nanoseconds added per read access.
    pub read_ns: u32,
    /// Nanoseconds added per cache line written back.
    pub write_ns: u32,
}

impl LatencyModel {
    /// No added latency (`dram`): the default.
    pub const DRAM: LatencyModel = LatencyModel {
        read_ns: 0,
        write_ns: 0,
    };
    /// `nvdimm`: Optane DC PMM-like latencies (about 300 ns per random read, writes absorbed by
    /// the ADR domain at about 100 ns per line), after Izraelevitz et al., 2019.
    pub const NVDIMM: LatencyModel = LatencyModel {
        read_ns: 300,
        write_ns: 100,
    };
    /// `pcm`: 100 ns per read access, 400 ns per line written back (NVLSM's and TriangleKV's
    /// PCM emulation).
    pub const PCM: LatencyModel = LatencyModel {
        read_ns: 100,
        write_ns: 400,
    };
    /// `slmdb`: 500 ns per line written back, no added read latency (SLM-DB's emulation).
    pub const SLMDB: LatencyModel = LatencyModel {
        read_ns: 0,
        write_ns: 500,
    };

    /// A preset by name: `dram`, `nvdimm`, `pcm` or `slmdb` (ASCII case-insensitive).
    pub fn from_name(name: &str) -> Option<LatencyModel> {
        match name.trim().to_ascii_lowercase().as_str() {
            "dram" => Some(Self::DRAM),
            "nvdimm" => Some(Self::NVDIMM),
            "pcm" => Some(Self::PCM),
            "slmdb" => Some(Self::SLMDB),
            _ => None,
        }
    }

    /// Whether both latencies are zero (no delay is ever added).
    pub fn is_zero(&self) -> bool {
        self.read_ns == 0 && self.write_ns == 0
    }
}

/// Options of a pool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PoolOptions {
    /// Pool size in bytes (a multiple of `chunk_size`).
    pub size: u64,
    /// Requested durability mode.
    pub mode: DurabilityMode,
    /// Emulated latency.
    pub latency: LatencyModel,
    /// Allocation unit.
    pub chunk_size: u64,
}

impl Default for PoolOptions {
    /// 1 GiB, `emulated`, no added latency, 4 MiB chunks.
    fn default() -> Self {
        PoolOptions {
            size: 1 << 30,
            mode: DurabilityMode::Emulated,
            latency: LatencyModel::DRAM,
            chunk_size: 4 << 20,
        }
    }
}

/// Counters of a pool.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PmStats {
    /// Cache lines written back.
    pub lines_written_back: u64,
    /// Fences.
    pub fences: u64,
    /// Bytes read through the read accessors.
    pub bytes_read: u64,
    /// Bytes in allocated chunks.
    pub bytes_allocated: u64,
    /// Bytes of the ranges passed to `msync` (before rounding to pages).
    pub bytes_msynced: u64,
    /// Bytes of free chunks punched out of the pool file, their file-system blocks given back
    /// ([`crate::PmPool::set_release_freed`]: as each is freed beyond the reserve kept backed,
    /// and at open every free range, whether it was backed or not).
    #[serde(default)]
    pub bytes_released: u64,
}

/// Which crash image of a crash-simulation pool to take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrashImage {
    /// Only cache lines that were written back and then fenced.
    Strict,
    /// The strict image plus every pending (stored or written back, not fenced) line.
    AllPending,
    /// The strict image plus a random subset of pending 8-byte words (seeded).
    Torn(u64),
    /// The strict image plus a random subset of whole pending lines (seeded): each line is
    /// entirely its durable content or entirely one newer version, as when lines reach the
    /// media as units (the common case on real hardware). Unlike [`CrashImage::Torn`], it often
    /// leaves a multi-line write entirely old or entirely new.
    TornLines(u64),
}

impl CrashImage {
    /// The images a crash test takes at fence number `fence`: the strict and the all-pending
    /// image, `torn` torn images and `torn_lines` torn-lines images, their seeds drawn from the
    /// fence number (`fence * 10 + i`) so that every fence tears differently and reproducibly.
    pub fn at_fence(fence: u64, torn: u64, torn_lines: u64) -> Vec<CrashImage> {
        [CrashImage::Strict, CrashImage::AllPending]
            .into_iter()
            .chain((0..torn).map(|s| CrashImage::Torn(fence * 10 + s)))
            .chain((0..torn_lines).map(|s| CrashImage::TornLines(fence * 10 + s)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durability_mode_round_trips_through_strings() {
        for m in [
            DurabilityMode::Dax,
            DurabilityMode::Msync,
            DurabilityMode::Emulated,
        ] {
            assert_eq!(m.to_string().parse::<DurabilityMode>().unwrap(), m);
        }
        assert_eq!(
            "MSYNC".parse::<DurabilityMode>().unwrap(),
            DurabilityMode::Msync
        );
        assert!(matches!(
            "pmem".parse::<DurabilityMode>(),
            Err(PmError::InvalidArgument(_))
        ));
    }

    #[test]
    fn latency_presets() {
        assert_eq!(LatencyModel::from_name("dram"), Some(LatencyModel::DRAM));
        assert_eq!(LatencyModel::from_name("PCM"), Some(LatencyModel::PCM));
        assert_eq!(LatencyModel::from_name("slmdb"), Some(LatencyModel::SLMDB));
        assert_eq!(
            LatencyModel::from_name("nvdimm"),
            Some(LatencyModel::NVDIMM)
        );
        assert_eq!(LatencyModel::from_name("optane9000"), None);
        assert_eq!(LatencyModel::PCM.read_ns, 100);
        assert_eq!(LatencyModel::PCM.write_ns, 400);
        assert_eq!(LatencyModel::SLMDB.write_ns, 500);
        assert_eq!(LatencyModel::SLMDB.read_ns, 0);
        assert!(LatencyModel::DRAM.is_zero());
        assert_eq!(LatencyModel::default(), LatencyModel::DRAM);
    }

    #[test]
    fn default_pool_options() {
        let o = PoolOptions::default();
        assert_eq!(o.size, 1 << 30);
        assert_eq!(o.chunk_size, 4 << 20);
        assert_eq!(o.mode, DurabilityMode::Emulated);
        assert_eq!(o.latency, LatencyModel::DRAM);
    }
}
