use super::*;
use std::time::{Duration, Instant};

#[test]
fn stall_reasons_have_distinct_slots_and_names() {
    let mut names = std::collections::HashSet::new();
    for slot in 0..StallReason::SLOTS {
        let r = StallReason::from_slot(slot);
        assert_eq!(r.slot(), slot, "{r:?}");
        assert!(names.insert(r.name()), "{r:?}");
    }
    assert_eq!(
        StallReason::Slowdown(1).name(),
        "stage 1 write pressure slowdown"
    );
    assert!(StallReason::Stop(0).is_stop() && !StallReason::Slowdown(0).is_stop());
}

#[test]
fn stalls_are_charged_to_one_cause_and_groups_counted_once_per_cause() {
    let c = Counters::default();
    let earlier = Instant::now() - Duration::from_millis(5);
    let mut group = StallTracker::default();
    c.add_stall(earlier, StallReason::Slowdown(0), &mut group);
    c.add_stall(earlier, StallReason::MemtableLimit, &mut group);
    c.add_stall(earlier, StallReason::MemtableLimit, &mut group);
    let mut other = StallTracker::default();
    c.add_stall(earlier, StallReason::MemtableLimit, &mut other);
    let s = DbStats::from_counters(&c);
    assert_eq!(s.stall_count, 2);
    assert!(s.stall_slowdown_micros >= 5_000 && s.stall_stop_micros >= 15_000);
    let by: Vec<(&str, u64)> = s
        .stall_causes
        .iter()
        .map(|x| (x.cause.as_str(), x.stalled_groups))
        .collect();
    assert_eq!(
        by,
        vec![
            ("memtable limit", 2),
            ("stage 0 write pressure slowdown", 1)
        ]
    );
    let micros: u64 = s.stall_causes.iter().map(|x| x.micros).sum();
    assert_eq!(micros, s.stall_micros());
}

#[test]
fn compactions_and_flushes_accumulate_per_group() {
    let c = Counters::default();
    let job = |group, written| LevelCompactionStats {
        stage: 0,
        group,
        compactions: 1,
        written_bytes: written,
        ..LevelCompactionStats::default()
    };
    c.add_compaction(&job(2, 10));
    c.add_compaction(&job(1, 5));
    c.add_compaction(&job(2, 7));
    c.add_flush(0, Tier::Pm, 100, 3);
    c.add_flush(0, Tier::Ssd, 50, 1);
    c.add_flush(0, Tier::Pm, 20, 2);
    let s = DbStats::from_counters(&c);
    let rows: Vec<(usize, u64, u64)> = s
        .compaction_levels
        .iter()
        .map(|l| (l.group, l.compactions, l.written_bytes))
        .collect();
    assert_eq!(rows, vec![(1, 1, 5), (2, 2, 17)]);
    let flushes: Vec<(Tier, u64, u64, u64)> = s
        .flush_targets
        .iter()
        .map(|f| (f.tier, f.flushes, f.written_bytes, f.micros))
        .collect();
    assert_eq!(flushes, vec![(Tier::Ssd, 1, 50, 1), (Tier::Pm, 2, 120, 5)]);
}
