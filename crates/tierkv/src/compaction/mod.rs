//! Leveled compaction policy: a pure function from a version snapshot to a plan.
//!
//! The picker ([`pick`]) does no I/O and holds no lock: it takes the version, the options, the
//! levels that running compactions occupy and the round-robin pointers, and returns what to do.
//! The database's executor (`db/compact.rs`) does the merging and file I/O. That split (mini-lsm's
//! controllers, fjall's `choose`) lets the golden tests below pin the policy down.
//!
//! Policy (LevelDB/RocksDB leveled):
//! * L0's score is its file count over `level0_compaction_trigger`; level `n >= 1` scores its
//!   bytes over its target `max_bytes_for_level_base * multiplier^(n-1)`. The last level is
//!   never a source. The highest score `>= 1` whose source and output levels are both free wins.
//! * An L0 compaction takes every L0 file (they overlap one another under random writes) plus
//!   the overlapping L1 files. A level-`n` compaction takes the first file after the level's
//!   compact pointer (wrapping around) plus the overlapping files of level `n+1`.
//! * A single input file with nothing overlapping below is moved, not rewritten.

use crate::options::CompactionOptions;
use crate::version::{FileMetaData, Version};
use std::sync::Arc;

/// Why a compaction was planned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// L0 reached its file-count trigger.
    Level0Files,
    /// A level exceeded its target size.
    LevelSize,
    /// `compact_range` asked for it.
    Manual,
}

/// What a compaction will do.
#[derive(Clone, Debug)]
pub struct CompactionPlan {
    /// Why.
    pub reason: Reason,
    /// The source level.
    pub level: usize,
    /// Files taken from `level`.
    pub inputs: Vec<Arc<FileMetaData>>,
    /// Files taken from `level + 1` (the output level).
    pub next_inputs: Vec<Arc<FileMetaData>>,
    /// Move the single input file down without rewriting it.
    pub trivial_move: bool,
}

impl CompactionPlan {
    /// The level outputs are written to.
    pub fn output_level(&self) -> usize {
        self.level + 1
    }

    /// A one-line summary used by golden tests: `L0->L1 [1,2]+[3] merge`.
    #[cfg(test)]
    pub fn summary(&self) -> String {
        let nums = |v: &[Arc<FileMetaData>]| {
            v.iter()
                .map(|f| f.number.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        format!(
            "L{}->L{} [{}]+[{}] {}",
            self.level,
            self.output_level(),
            nums(&self.inputs),
            nums(&self.next_inputs),
            if self.trivial_move { "move" } else { "merge" }
        )
    }
}

/// The target size of `level` (>= 1).
pub fn max_bytes_for_level(options: &CompactionOptions, level: usize) -> u64 {
    debug_assert!(level >= 1);
    let mut bytes = options.max_bytes_for_level_base;
    for _ in 1..level {
        bytes = bytes.saturating_mul(options.level_size_multiplier);
    }
    bytes
}

/// The compaction score of every level but the last (`>= 1` means it needs compaction).
pub fn level_scores(version: &Version, options: &CompactionOptions) -> Vec<f64> {
    let last = version.levels.len() - 1;
    (0..last)
        .map(|level| {
            if level == 0 {
                version.levels[0].len() as f64 / options.level0_compaction_trigger as f64
            } else {
                version.level_bytes(level) as f64 / max_bytes_for_level(options, level) as f64
            }
        })
        .collect()
}

/// Picks the most urgent compaction whose levels are free, if any level needs one.
/// `busy[l]` is true while a running compaction reads or writes level `l`.
pub fn pick(
    version: &Version,
    options: &CompactionOptions,
    busy: &[bool],
    compact_pointers: &[Vec<u8>],
) -> Option<CompactionPlan> {
    let scores = level_scores(version, options);
    let mut order: Vec<usize> = (0..scores.len()).filter(|&l| scores[l] >= 1.0).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    let level = order.into_iter().find(|&l| !busy[l] && !busy[l + 1])?;
    let inputs = if level == 0 {
        version.levels[0].clone()
    } else {
        let files = &version.levels[level];
        let ptr = &compact_pointers[level];
        let f = files
            .iter()
            .find(|f| ptr.is_empty() || crate::format::compare_internal(&f.largest, ptr).is_gt())
            .unwrap_or(&files[0]);
        vec![Arc::clone(f)]
    };
    let reason = if level == 0 {
        Reason::Level0Files
    } else {
        Reason::LevelSize
    };
    Some(plan_for(version, level, inputs, reason))
}

/// Plans compacting the files of `level` overlapping `[begin, end]` into `level + 1`; `None` if
/// the level has no such file. From L0 it takes every file: moving only some L0 files down would
/// let an older, overlapping L0 entry that stays behind shadow a newer one moved below it.
pub fn manual(
    version: &Version,
    level: usize,
    begin: Option<&[u8]>,
    end: Option<&[u8]>,
) -> Option<CompactionPlan> {
    let mut inputs = version.overlapping(level, begin, end);
    if inputs.is_empty() {
        return None;
    }
    if level == 0 {
        inputs = version.levels[0].clone();
    }
    let mut plan = plan_for(version, level, inputs, Reason::Manual);
    plan.trivial_move = false;
    Some(plan)
}

fn plan_for(
    version: &Version,
    level: usize,
    inputs: Vec<Arc<FileMetaData>>,
    reason: Reason,
) -> CompactionPlan {
    let smallest = inputs.iter().map(|f| f.smallest_user_key()).min();
    let largest = inputs.iter().map(|f| f.largest_user_key()).max();
    let next_inputs = version.overlapping(level + 1, smallest, largest);
    let trivial_move = inputs.len() == 1 && next_inputs.is_empty();
    CompactionPlan {
        reason,
        level,
        inputs,
        next_inputs,
        trivial_move,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{make_internal_key, ValueType};
    use crate::version::VersionEdit;

    /// Builds a version from lines `level: number:first-last:size_kib ...`.
    fn version(spec: &str) -> Version {
        let mut e = VersionEdit::default();
        for line in spec.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let (level, files) = line.split_once(':').unwrap();
            for f in files.split_whitespace() {
                let parts: Vec<_> = f.split(':').collect();
                let (a, b) = parts[1].split_once('-').unwrap();
                e.new_files.push((
                    level.trim().parse().unwrap(),
                    FileMetaData {
                        number: parts[0].parse().unwrap(),
                        file_size: parts[2].parse::<u64>().unwrap() << 10,
                        num_entries: 1,
                        smallest: make_internal_key(a.as_bytes(), 9, ValueType::Value),
                        largest: make_internal_key(b.as_bytes(), 1, ValueType::Value),
                        tier: crate::tier::Tier::Ssd,
                    },
                ));
            }
        }
        Version::new(4).apply(&e).unwrap()
    }

    fn opts() -> CompactionOptions {
        CompactionOptions {
            num_levels: 4,
            level0_compaction_trigger: 2,
            max_bytes_for_level_base: 100 << 10,
            level_size_multiplier: 10,
            ..CompactionOptions::default()
        }
    }

    fn summary(v: &Version, busy: [bool; 4], ptrs: &[Vec<u8>]) -> String {
        pick(v, &opts(), &busy, ptrs).map_or("none".into(), |p| p.summary())
    }

    /// Golden cases: (version, busy levels, expected plan).
    #[test]
    fn golden_picks() {
        let none = vec![Vec::new(); 4];
        let cases: &[(&str, [bool; 4], &str)] = &[
            // Below every trigger: nothing to do.
            ("0: 1:a-z:10\n1: 2:a-c:50", [false; 4], "none"),
            // L0 at trigger: all L0 files plus overlapping L1 files.
            (
                "0: 5:b-d:10 6:c-k:10\n1: 2:a-c:50 3:e-f:20 4:m-p:20",
                [false; 4],
                "L0->L1 [5,6]+[2,3] merge",
            ),
            // L0 at trigger but L1 busy: L1 is over size too but busy, so nothing.
            (
                "0: 5:b-d:10 6:c-k:10\n1: 2:a-c:150",
                [false, true, false, false],
                "none",
            ),
            // L1 over target (score 1.5) beats L0 at trigger (score 1.0).
            (
                "0: 5:b-d:10 6:c-k:10\n1: 2:a-c:150\n2: 3:a-b:10 4:x-y:10",
                [false; 4],
                "L1->L2 [2]+[3] merge",
            ),
            // Same, but L1 busy: fall back to L0 -> L1? No: L0 needs L1 too. Nothing.
            (
                "0: 5:b-d:10 6:c-k:10\n1: 2:a-c:150",
                [false, true, false, false],
                "none",
            ),
            // L2 over target (1000 KiB) with no overlap below: trivial move.
            (
                "2: 7:a-c:1200\n3: 8:x-z:10",
                [false; 4],
                "L2->L3 [7]+[] move",
            ),
            // Single L0 file cannot trigger (trigger is 2); two files with no L1: merge of both.
            ("0: 5:a-b:1 6:c-d:1", [false; 4], "L0->L1 [5,6]+[] merge"),
        ];
        for (spec, busy, want) in cases {
            assert_eq!(
                summary(&version(spec), *busy, &none),
                *want,
                "case:\n{spec}"
            );
        }
    }

    #[test]
    fn compact_pointer_round_robin() {
        let v = version("1: 2:a-c:60 3:d-f:60 4:g-i:60");
        let mut ptrs = vec![Vec::new(); 4];
        let p = pick(&v, &opts(), &[false; 4], &ptrs).unwrap();
        assert_eq!(p.inputs[0].number, 2);
        ptrs[1] = p.inputs[0].largest.clone();
        let p = pick(&v, &opts(), &[false; 4], &ptrs).unwrap();
        assert_eq!(p.inputs[0].number, 3);
        ptrs[1] = v.levels[1][2].largest.clone();
        let p = pick(&v, &opts(), &[false; 4], &ptrs).unwrap();
        assert_eq!(p.inputs[0].number, 2, "wraps around");
    }

    #[test]
    fn manual_plans_and_targets() {
        let v = version("1: 2:a-c:60 3:d-f:60\n2: 4:b-e:10");
        let p = manual(&v, 1, Some(b"e"), None).unwrap();
        assert_eq!(p.summary(), "L1->L2 [3]+[4] merge");
        assert!(manual(&v, 1, Some(b"x"), None).is_none());
        // From L0, a range that touches one file still takes every L0 file.
        let v0 = version("0: 5:a-c:1 6:m-p:1 7:b-n:1\n1: 2:a-b:1");
        let p = manual(&v0, 0, Some(b"o"), Some(b"p")).unwrap();
        assert_eq!(p.summary(), "L0->L1 [5,6,7]+[2] merge");
        assert!(manual(&v0, 0, Some(b"x"), None).is_none());
        assert_eq!(max_bytes_for_level(&opts(), 3), 10_000 << 10);
        let s = level_scores(&v, &opts());
        assert_eq!(s.len(), 3);
        assert!((s[1] - 1.2).abs() < 1e-9);
    }
}
