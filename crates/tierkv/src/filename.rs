//! The names of a database directory's files: WALs, runs (and what a run is made of),
//! value arrays, manifests, `CURRENT` and the others, each with its number.

use std::path::{Path, PathBuf};

/// What a run is made of: the building block that reads and writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RunKind {
    /// An SSTable file (`NNNNNN.sst`) on SSD or in the PM pool's file system.
    Sst,
    /// A PM sorted array (`NNNNNN.arr`): fixed-size index entries searched in place, optionally
    /// with cascade pointers into the lower floors of its set (`parray`).
    PmArray,
}

impl RunKind {
    /// The kind's code in the manifest.
    pub fn code(self) -> u8 {
        match self {
            RunKind::Sst => 1,
            RunKind::PmArray => 2,
        }
    }

    /// The kind with manifest code `code`.
    pub fn from_code(code: u8) -> Option<RunKind> {
        match code {
            1 => Some(RunKind::Sst),
            2 => Some(RunKind::PmArray),
            _ => None,
        }
    }

    /// The extension of the kind's files.
    pub fn extension(self) -> &'static str {
        match self {
            RunKind::Sst => "sst",
            RunKind::PmArray => "arr",
        }
    }

    /// The kind whose files have extension `ext`.
    pub fn from_extension(ext: &str) -> Option<RunKind> {
        match ext {
            "sst" => Some(RunKind::Sst),
            "arr" => Some(RunKind::PmArray),
            _ => None,
        }
    }
}

/// Kinds of files in a database directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FileKind {
    /// `NNNNNN.log`: a write-ahead log.
    Log,
    /// `NNNNNN.sst` or `NNNNNN.arr`: a run of that kind.
    Run(RunKind),
    /// `MANIFEST-NNNNNN`.
    Manifest,
    /// `NNNNNN.dbtmp`: a temporary file (e.g. the next `CURRENT`).
    Temp,
    /// `NNNNNN.clog`: a compaction log (on PM, for designs that keep one).
    CompactionLog,
    /// `NNNNNN.vla`: a LAB-DB value array (the values of one memtable, which LAB-DB's L0 trees
    /// point into); numbered as the memtable's key array (`NNNNNN.log`).
    ValueArray,
    /// `NNNNNN.wbuf`: one half of LAB-DB's WAL buffer (a record log in the pool's `PmFs`).
    WalBuffer,
    /// `NNNNNN.vlog`: the value log of separated table `NNNNNN` (key-value separation;
    /// `crate::sst::value_log`), on the table's tier.
    ValueLog,
}

/// Path of WAL file `n`.
pub fn log_file_name(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("{n:06}.log"))
}
/// Path of run file `n` of `kind` (`NNNNNN.sst`, `NNNNNN.arr`).
pub fn run_file_name(dir: &Path, n: u64, kind: RunKind) -> PathBuf {
    dir.join(format!("{n:06}.{}", kind.extension()))
}
/// Path of value array `n` (`NNNNNN.vla`).
pub fn value_array_file_name(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("{n:06}.vla"))
}
/// Path of manifest `n`.
pub fn manifest_file_name(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("MANIFEST-{n:06}"))
}
/// Parses a file name of the database directory into its kind and number.
pub fn parse_file_name(name: &str) -> Option<(FileKind, u64)> {
    if let Some(n) = name.strip_prefix("MANIFEST-") {
        return n.parse().ok().map(|n| (FileKind::Manifest, n));
    }
    let (num, ext) = name.split_once('.')?;
    let n = num.parse().ok()?;
    match ext {
        "log" => Some((FileKind::Log, n)),
        "sst" | "arr" => RunKind::from_extension(ext).map(|k| (FileKind::Run(k), n)),
        "dbtmp" => Some((FileKind::Temp, n)),
        "clog" => Some((FileKind::CompactionLog, n)),
        "vla" => Some((FileKind::ValueArray, n)),
        "wbuf" => Some((FileKind::WalBuffer, n)),
        "vlog" => Some((FileKind::ValueLog, n)),
        _ => None,
    }
}
