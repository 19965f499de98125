//! The figures the designs are judged by, derived from an engine's [`DbStats`]: write, read and
//! space amplification for the whole database, per tier and per part of the pipeline (the front
//! end and each stage), the DRAM and PM footprint, and the stall time.
//!
//! These are the `figures` of each run in the `--json` report; `docs/REPORT_SCHEMA.md` specifies
//! them field by field. The schema only grows: a field, once published, keeps its name and
//! meaning.
//!
//! Definitions (bytes through the engine's file layer; PM bytes as the engine handed them to the
//! pool, with the device's own count, cache lines written back x 64, beside them):
//! * write = bytes written / user bytes written (key + value bytes of puts, key bytes of deletes);
//! * write excluding the log = the same without the front end's log (WAL) bytes, as the LSM
//!   papers count;
//! * read = bytes read to answer user reads / user bytes returned;
//! * space = live bytes / logical bytes (key + value bytes of the live data), when the logical
//!   size was measured.

use serde::{Deserialize, Serialize};
use tierkv::stats::{DbStats, DramFootprint, IoCount};
use tierkv::Tier;

/// Amplification figures of one part of the store. A ratio whose denominator is zero (no user
/// write, no user read, no logical size) is `None`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Amplification {
    /// Bytes written / user bytes written.
    pub write: Option<f64>,
    /// Bytes written without the log's / user bytes written.
    pub write_excluding_log: Option<f64>,
    /// Bytes read for user reads / user bytes read.
    pub read: Option<f64>,
    /// Live bytes / logical bytes.
    pub space: Option<f64>,
}

/// One part's amplification with the byte counts it comes from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PartFigures {
    /// `database`, a tier (`ssd`, `pm`), `front_end`, or `stageN`.
    pub part: String,
    /// For a stage: its name (`levels`, ...).
    #[serde(default)]
    pub name: Option<String>,
    /// The ratios.
    pub amplification: Amplification,
    /// Bytes written.
    pub bytes_written: u64,
    /// Of those, the log's.
    pub log_bytes_written: u64,
    /// Bytes read to answer user reads.
    pub user_bytes_read: u64,
    /// Every byte read through the engine's file layer (user reads, compaction, recovery).
    #[serde(default)]
    pub bytes_read: u64,
    /// Live bytes.
    pub live_bytes: u64,
    /// For the PM tier: bytes written at the device (cache lines written back x 64) / user bytes
    /// written.
    #[serde(default)]
    pub device_write_amplification: Option<f64>,
}

/// DRAM and PM held at the end of the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Footprint {
    /// DRAM, all uses together.
    pub dram_bytes: u64,
    /// DRAM by use.
    pub dram: DramFootprint,
    /// PM chunks allocated in the pool (0 without PM).
    pub pm_allocated_bytes: u64,
    /// The pool's size (0 without PM).
    pub pm_pool_bytes: u64,
}

/// Every figure of a run's engine, as the `--json` report's `figures`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunFigures {
    /// Key + value bytes of user writes, and returned by user reads.
    pub user_bytes_written: u64,
    /// Key + value bytes returned to user reads.
    pub user_bytes_read: u64,
    /// Key + value bytes of the live data, when measured.
    pub logical_bytes: Option<u64>,
    /// The whole database, every tier together.
    pub database: PartFigures,
    /// Per tier.
    pub tiers: Vec<PartFigures>,
    /// The front end and each stage, in pipeline order.
    pub parts: Vec<PartFigures>,
    /// DRAM and PM footprint.
    pub footprint: Footprint,
    /// Seconds writers were delayed or stopped.
    pub stall_seconds: f64,
    /// Write groups that were delayed or stopped.
    pub stalled_write_groups: u64,
}

fn ratio(n: u64, d: u64) -> Option<f64> {
    (d > 0).then(|| n as f64 / d as f64)
}

fn tier_name(t: Tier) -> &'static str {
    t.name()
}

/// The byte counters of one part, summed.
#[derive(Clone, Copy, Default)]
struct Sums {
    written: u64,
    log_written: u64,
    user_read: u64,
    read: u64,
}

/// Sums the byte counters `keep` selects.
fn sums(io: &[IoCount], keep: impl Fn(&IoCount) -> bool) -> Sums {
    io.iter()
        .filter(|c| keep(c))
        .fold(Sums::default(), |s, c| Sums {
            written: s.written + c.written,
            log_written: s.log_written + if c.purpose == "wal" { c.written } else { 0 },
            user_read: s.user_read + if c.purpose == "user_read" { c.read } else { 0 },
            read: s.read + c.read,
        })
}

impl RunFigures {
    /// The figures of `stats`, with the logical size when it was measured.
    pub fn new(stats: &DbStats, logical_bytes: Option<u64>) -> RunFigures {
        let (uw, ur) = (stats.user_bytes_written, stats.user_bytes_read);
        let part = |part: &str, name: Option<String>, s: Sums, live: u64| PartFigures {
            part: part.to_string(),
            name,
            amplification: Amplification {
                write: ratio(s.written, uw),
                write_excluding_log: ratio(s.written - s.log_written, uw),
                read: ratio(s.user_read, ur),
                space: logical_bytes.and_then(|lb| ratio(live, lb)),
            },
            bytes_written: s.written,
            log_bytes_written: s.log_written,
            user_bytes_read: s.user_read,
            bytes_read: s.read,
            live_bytes: live,
            device_write_amplification: None,
        };
        let pm_live = stats.pm_live_bytes() + stats.pm_wal_bytes;
        let ssd_live = stats.ssd_live_bytes();
        let mut tiers = vec![part(
            tier_name(Tier::Ssd),
            None,
            sums(&stats.io, |c| c.tier == Tier::Ssd),
            ssd_live,
        )];
        if let Some(pm) = &stats.pm {
            let mut p = part(
                tier_name(Tier::Pm),
                None,
                sums(&stats.io, |c| c.tier == Tier::Pm),
                pm_live,
            );
            p.device_write_amplification = ratio(pm.lines_written_back * 64, uw);
            tiers.push(p);
        }
        let mut parts = vec![part(
            "front_end",
            None,
            sums(&stats.io, |c| c.part == "front_end"),
            stats.wal_bytes + stats.pm_wal_bytes,
        )];
        for (i, stage) in stats.stages.iter().enumerate() {
            let mut live: u64 = stage.groups.iter().map(|g| g.bytes).sum();
            if i == 0 {
                // LAB-DB's L0 trees and the value arrays they point into are stage 0's.
                live += stats
                    .labdb
                    .as_ref()
                    .map_or(0, |l| l.pm_bytes + l.value_bytes);
            }
            parts.push(part(
                &format!("stage{i}"),
                Some(stage.name.clone()),
                sums(&stats.io, |c| c.stage == Some(i)),
                live,
            ));
        }
        RunFigures {
            user_bytes_written: uw,
            user_bytes_read: ur,
            logical_bytes,
            database: part(
                "database",
                None,
                sums(&stats.io, |_| true),
                ssd_live + pm_live,
            ),
            tiers,
            parts,
            footprint: Footprint {
                dram_bytes: stats.dram.total(),
                dram: stats.dram.clone(),
                pm_allocated_bytes: stats.pm.as_ref().map_or(0, |p| p.bytes_allocated),
                pm_pool_bytes: stats.pm.as_ref().map_or(0, |p| p.pool_bytes),
            },
            stall_seconds: stats.stall_micros() as f64 / 1e6,
            stalled_write_groups: stats.stall_count,
        }
    }
}

/// The figures as text lines: one per part, `write / write without log / read / space`.
pub fn format_figures(f: &RunFigures) -> String {
    let show = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.3}"));
    let mut out = String::from(
        "Amplification:          write / without log / read / space (\"-\": nothing to divide by)\n",
    );
    for p in std::iter::once(&f.database).chain(&f.tiers).chain(&f.parts) {
        let a = &p.amplification;
        let label = match &p.name {
            Some(n) => format!("{} ({n})", p.part),
            None => p.part.clone(),
        };
        let device = p
            .device_write_amplification
            .map(|d| format!("  (device write {d:.3})"))
            .unwrap_or_default();
        out.push_str(&format!(
            "  {label:<20}  {} / {} / {} / {}{device}\n",
            show(a.write),
            show(a.write_excluding_log),
            show(a.read),
            show(a.space)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tierkv::stats::{LevelStats, PmDeviceStats, StageStats};

    fn io(tier: Tier, part: &str, stage: Option<usize>, purpose: &str, r: u64, w: u64) -> IoCount {
        IoCount {
            tier,
            part: part.into(),
            stage,
            purpose: purpose.into(),
            read: r,
            written: w,
        }
    }

    /// Every figure adds up across tiers and parts: WAL 100 on PM, a flush of 80 to PM and a
    /// compaction of 200 to SSD for 100 user bytes.
    #[test]
    fn figures_add_up_across_tiers_and_parts() {
        let stats = DbStats {
            user_bytes_written: 100,
            user_bytes_read: 50,
            io: vec![
                io(Tier::Pm, "front_end", None, "wal", 0, 100),
                io(Tier::Pm, "stage0", Some(0), "flush", 0, 80),
                io(Tier::Ssd, "stage0", Some(0), "compaction", 160, 200),
                io(Tier::Ssd, "stage0", Some(0), "user_read", 25, 0),
                io(Tier::Ssd, "db", None, "manifest", 0, 4),
            ],
            stages: vec![StageStats {
                name: "levels".into(),
                groups: vec![
                    LevelStats {
                        files: 1,
                        bytes: 80,
                    },
                    LevelStats {
                        files: 2,
                        bytes: 200,
                    },
                ],
                pm_groups: vec![LevelStats {
                    files: 1,
                    bytes: 80,
                }],
            }],
            levels: vec![
                LevelStats {
                    files: 1,
                    bytes: 80,
                },
                LevelStats {
                    files: 2,
                    bytes: 200,
                },
            ],
            pm_levels: vec![LevelStats {
                files: 1,
                bytes: 80,
            }],
            pm_wal_bytes: 100,
            pm: Some(PmDeviceStats {
                lines_written_back: 4,
                ..PmDeviceStats::default()
            }),
            ..DbStats::default()
        };
        let f = RunFigures::new(&stats, Some(200));
        let db = &f.database.amplification;
        assert_eq!(db.write, Some(3.84));
        assert_eq!(db.write_excluding_log, Some(2.84));
        assert_eq!(db.read, Some(0.5));
        assert_eq!(db.space, Some((200.0 + 80.0 + 100.0) / 200.0));
        assert_eq!(f.database.bytes_read, 185);
        assert_eq!((f.tiers[0].bytes_read, f.tiers[1].bytes_read), (185, 0));
        assert_eq!(f.parts[1].bytes_read, 185);
        assert_eq!(f.tiers[0].amplification.write, Some(2.04));
        assert_eq!(f.tiers[1].amplification.write, Some(1.8));
        assert_eq!(f.tiers[1].device_write_amplification, Some(2.56));
        assert_eq!(f.parts[0].amplification.write, Some(1.0));
        assert_eq!(f.parts[0].amplification.write_excluding_log, Some(0.0));
        assert_eq!(f.parts[1].name.as_deref(), Some("levels"));
        assert_eq!(f.parts[1].amplification.write, Some(2.8));
        assert_eq!(f.parts[1].amplification.space, Some(1.4));
        let none = RunFigures::new(&DbStats::default(), None);
        assert_eq!(none.database.amplification, Amplification::default());
        let text = format_figures(&f);
        assert!(
            text.contains("stage0 (levels)") && text.contains("3.840"),
            "{text}"
        );
    }
}
