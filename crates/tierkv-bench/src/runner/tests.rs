//! Tests of the runner on the null and memory engines: exact operation counts, db_bench's
//! semantics per benchmark, YCSB updates, the background writer, and errors.

use super::*;
use crate::config::tests::parse;
use crate::engine::{MemEngine, NullEngine};

fn config(args: &[&str]) -> BenchConfig {
    let c = parse(args).unwrap();
    c.validate().unwrap();
    c
}

#[test]
fn null_engine_counts_ops_exactly() {
    for threads in [1usize, 2] {
        let t = threads as u64;
        let c = config(&[
            "--benchmarks=fillseq,fillrandom,overwrite,readrandom,readseq,seekrandom,flush",
            "--num=500",
            "--reads=300",
            "--seek_nexts=3",
            &format!("--threads={threads}"),
        ]);
        let e = NullEngine::default();
        let mut out = Vec::new();
        let r = run_benchmarks(&e, &c, &mut out, false).unwrap();
        let ops: Vec<u64> = r.iter().map(|r| r.ops).collect();
        assert_eq!(
            ops,
            vec![500 * t, 500 * t, 500 * t, 300 * t, 300 * t, 300 * t, 1]
        );
        for r in &r[..6] {
            assert_eq!(r.latency.count, r.ops, "{}", r.name);
            assert!(r.seconds > 0.0 && r.ops_per_sec > 0.0, "{}", r.name);
        }
        assert_eq!(e.puts.load(Relaxed), 3 * 500 * t);
        assert_eq!(e.gets.load(Relaxed), 300 * t);
        // readseq: one seek_to_first per thread; seekrandom: one seek per op.
        assert_eq!(e.seeks.load(Relaxed), t + 300 * t);
        // readseq: one next per entry; seekrandom: seek_nexts per seek.
        assert_eq!(e.nexts.load(Relaxed), 300 * t + 3 * 300 * t);
        // Write bytes are key + value per put.
        assert_eq!(r[0].bytes, 500 * t * (16 + 128));
        assert_eq!(r[3].found, Some(0));
        assert_eq!(r[4].found, None);
        let text = String::from_utf8(out).unwrap();
        for name in [
            "fillseq",
            "fillrandom",
            "overwrite",
            "readrandom",
            "readseq",
        ] {
            assert!(text.contains(&format!("{name:<22} :")), "{text}");
        }
    }
}

/// fillseq with streams writes every key of `[0, num)` once, each stream's keys in order,
/// the streams taking turns.
#[test]
fn fillseq_streams_interleave_sequential_appenders() {
    let order: Vec<u64> = (0..12).map(|i| stream_key(i, 12, 3)).collect();
    assert_eq!(order, vec![0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]);
    assert_eq!(
        (0..5).map(|i| stream_key(i, 5, 1)).collect::<Vec<_>>(),
        [0, 1, 2, 3, 4]
    );
    let c = config(&["--benchmarks=fillseq", "--num=1000", "--streams=10"]);
    let e = MemEngine::default();
    run_benchmarks(&e, &c, &mut std::io::sink(), false).unwrap();
    assert_eq!(e.len(), 1000, "every key of [0, num) once");
}

#[test]
fn mem_engine_sees_the_db_bench_semantics() {
    let c = config(&[
        "--benchmarks=fillseq,readrandom,readseq,seekrandom",
        "--num=1000",
        "--key_size=10",
        "--value_size=20",
        "--seek_nexts=5",
        "--threads=2",
    ]);
    let e = MemEngine::default();
    let r = run_benchmarks(&e, &c, &mut std::io::sink(), false).unwrap();
    assert_eq!(e.len(), 1000, "fillseq writes keys 0..num");
    // Every random read of [0, num) finds its key.
    assert_eq!(r[1].ops, 2000);
    assert_eq!(r[1].found, Some(2000));
    assert_eq!(r[1].bytes, 2000 * 30);
    // readseq reads `reads` (= num) entries per thread.
    assert_eq!(r[2].ops, 2000);
    assert_eq!(r[2].bytes, 2000 * 30);
    // seekrandom finds every key; nexts stop at the end of the database.
    assert_eq!(r[3].ops, 2000);
    assert_eq!(r[3].found, Some(2000));
    // Each seek reads the entry it lands on and up to 5 more (db_bench's count).
    assert!(r[3].bytes <= 2000 * 6 * 30 && r[3].bytes > 2000 * 5 * 30);
    assert_eq!(e.logical_size().unwrap(), Some(1000 * 30));
}

/// With `--seek_nexts=0` a seek still reads the entry it lands on (db_bench reports its
/// bytes; a 0.0 MB/s line said nothing was read).
#[test]
fn seekrandom_without_nexts_counts_the_entry_each_seek_lands_on() {
    let c = config(&[
        "--benchmarks=fillseq,seekrandom",
        "--num=100",
        "--key_size=10",
        "--value_size=20",
        "--seek_nexts=0",
    ]);
    let e = MemEngine::default();
    let r = run_benchmarks(&e, &c, &mut std::io::sink(), false).unwrap();
    assert_eq!(r[1].found, Some(100));
    assert_eq!(r[1].bytes, 100 * 30);
}

#[test]
fn readseq_stops_at_the_end_and_fillrandom_is_deterministic() {
    let c = config(&[
        "--benchmarks=fillrandom,readseq",
        "--num=2000",
        "--reads=5000",
    ]);
    let a = MemEngine::default();
    let r = run_benchmarks(&a, &c, &mut std::io::sink(), false).unwrap();
    let distinct = a.len() as u64;
    // 2000 uniform draws from 2000 keys hit about 1 - 1/e of them.
    assert!((1100..1400).contains(&distinct), "{distinct}");
    assert_eq!(r[1].ops, distinct, "readseq stops at the last key");
    // Same seed, same keys; another seed, other keys.
    let b = MemEngine::default();
    run_benchmarks(&b, &c, &mut std::io::sink(), false).unwrap();
    let keys = |e: &MemEngine| {
        let mut cur = e.cursor().unwrap();
        cur.seek_to_first();
        let mut v = Vec::new();
        while cur.valid() {
            v.push(cur.key().to_vec());
            cur.next();
        }
        v
    };
    assert_eq!(keys(&a), keys(&b));
    let mut c2 = c.clone();
    c2.seed = 12345;
    let d = MemEngine::default();
    run_benchmarks(&d, &c2, &mut std::io::sink(), false).unwrap();
    assert_ne!(keys(&a), keys(&d));
    // Every key is a valid db_bench key of a number < num.
    for k in keys(&a) {
        let n = u64::from_be_bytes(k[..8].try_into().unwrap());
        assert!(n < 2000);
        assert_eq!(&k[8..], b"00000000");
    }
}

#[test]
fn readrandomwriterandom_follows_db_bench_pattern() {
    // In each run of 100 operations, the first `percent` are gets.
    let pattern: Vec<bool> = (0..200).map(|i| rrwr_is_get(i, 30)).collect();
    assert!(pattern[..30].iter().all(|&g| g) && pattern[30..100].iter().all(|&g| !g));
    assert_eq!(pattern[100..], pattern[..100]);
    for (ops, pct, gets) in [(1050, 50, 550), (1050, 90, 950), (99, 100, 99), (99, 0, 0)] {
        assert_eq!(rrwr_gets(ops, pct), gets, "{ops} {pct}");
        let counted = (0..ops).filter(|&i| rrwr_is_get(i, pct)).count() as u64;
        assert_eq!(counted, gets);
    }
    // The engine sees exactly that many gets and puts, per thread.
    for (pct, threads) in [(90u32, 1usize), (0, 2), (100, 2), (35, 3)] {
        let c = config(&[
            "--benchmarks=readrandomwriterandom",
            "--num=400",
            "--reads=1234",
            &format!("--readwritepercent={pct}"),
            &format!("--threads={threads}"),
        ]);
        let e = NullEngine::default();
        let r = run_benchmarks(&e, &c, &mut std::io::sink(), false).unwrap();
        let t = threads as u64;
        let gets = rrwr_gets(1234, pct) * t;
        assert_eq!(r[0].ops, 1234 * t);
        assert_eq!(e.gets.load(Relaxed), gets);
        assert_eq!(e.puts.load(Relaxed), 1234 * t - gets);
        assert_eq!(r[0].op("get").map_or(0, |o| o.count), gets);
        assert_eq!(r[0].op("put").map_or(0, |o| o.count), 1234 * t - gets);
        assert_eq!((r[0].found, r[0].lookups), (Some(0), Some(gets)));
        assert_eq!(r[0].latency.count, r[0].ops);
    }
}

/// YCSB's update as its bindings do it: read the record, a missing one a failed operation
/// with nothing written; otherwise one field of ten replaced and the record put back.
/// `--ycsb_update=blind` puts unread.
#[test]
fn ycsb_updates_read_merge_and_write_back_unless_blind() {
    let args = |update: &str, benches: &str| {
        config(&[
            &format!("--benchmarks={benches}"),
            "--num=200",
            "--reads=1000",
            "--value_size=100",
            &format!("--ycsb_update={update}"),
        ])
    };
    // Nothing loaded: every update (half of A, all of F's read-modify-writes') fails.
    for bench in ["ycsb-a", "ycsb-f"] {
        let e = NullEngine::default();
        let r = run_benchmarks(&e, &args("merge", bench), &mut std::io::sink(), false).unwrap();
        let writes = r[0].op("update").or(r[0].op("rmw")).map_or(0, |o| o.count);
        assert!(writes > 300, "{bench}: {writes}");
        assert_eq!(r[0].failed, Some(writes), "{bench}");
        assert_eq!(e.puts.load(Relaxed), 0, "{bench}: nothing written");
        // F reads twice per read-modify-write (its read, then the update's).
        let reads = r[0].op("read").map_or(0, |o| o.count);
        let rmw_reads = if bench == "ycsb-f" {
            2 * writes
        } else {
            writes
        };
        assert_eq!(e.gets.load(Relaxed), reads + rmw_reads, "{bench}");
        // Blind: every update writes, none fails, no read for it.
        let e = NullEngine::default();
        let r = run_benchmarks(&e, &args("blind", bench), &mut std::io::sink(), false).unwrap();
        let writes = r[0].op("update").or(r[0].op("rmw")).map_or(0, |o| o.count);
        assert_eq!(r[0].failed, Some(0));
        assert_eq!(e.puts.load(Relaxed), writes, "{bench}");
    }
    // Loaded: each update changes one 10-byte field of the 100-byte record it read.
    let e = MemEngine::default();
    let c = args("merge", "ycsb-load");
    run_benchmarks(&e, &c, &mut std::io::sink(), false).unwrap();
    let contents = |e: &MemEngine| {
        let mut c = e.cursor().unwrap();
        let mut m = std::collections::BTreeMap::new();
        c.seek_to_first();
        while c.valid() {
            m.insert(c.key().to_vec(), c.value().to_vec());
            c.next();
        }
        m
    };
    let before = contents(&e);
    assert_eq!(before.len(), 200);
    let r = run_benchmarks(&e, &args("merge", "ycsb-a"), &mut std::io::sink(), false).unwrap();
    assert_eq!(r[0].failed, Some(0));
    let after = contents(&e);
    let mut changed_fields = 0;
    for (k, old) in &before {
        let new = &after[k];
        assert_eq!(new.len(), 100);
        let fields: Vec<bool> = (0..10)
            .map(|f| old[f * 10..f * 10 + 10] != new[f * 10..f * 10 + 10])
            .collect();
        changed_fields += fields.iter().filter(|&&c| c).count();
    }
    // About 500 updates over 200 records; fields changed at most once per update.
    let updates = r[0].op("update").map_or(0, |o| o.count) as usize;
    assert!(
        changed_fields > 0 && changed_fields <= updates,
        "{changed_fields} {updates}"
    );
    assert!(
        before
            .iter()
            .any(|(k, old)| after[k] != *old && after[k][..10] == old[..10]),
        "an update that left field 0 alone"
    );
}

#[test]
fn readwhilewriting_reports_the_readers() {
    let c = config(&[
        "--benchmarks=fillseq,readwhilewriting",
        "--num=300",
        "--threads=2",
    ]);
    let e = MemEngine::default();
    let r = run_benchmarks(&e, &c, &mut std::io::sink(), false).unwrap();
    assert_eq!(r[1].name, "readwhilewriting");
    assert_eq!(r[1].ops, 600);
    assert_eq!(r[1].found, Some(600));
    assert!(r[1].writer_ops.is_some());
    assert_eq!(e.len(), 300, "the writer only overwrites keys in [0, num)");
}

#[test]
fn use_existing_db_skips_fills() {
    let c = config(&[
        "--benchmarks=fillseq,fillrandom,overwrite",
        "--num=10",
        "--use_existing_db",
        "--db=unused",
    ]);
    let mut out = Vec::new();
    let r = run_benchmarks(&NullEngine::default(), &c, &mut out, false).unwrap();
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].name, "overwrite");
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("fillseq                : skipped (--use_existing_db is true)"),
        "{text}"
    );
}

struct FailingEngine;
impl KvEngine for FailingEngine {
    fn name(&self) -> &str {
        "failing"
    }
    fn put(&self, _: &[u8], _: &[u8]) -> EngineResult<()> {
        Err("disk on fire".into())
    }
    fn delete(&self, _: &[u8]) -> EngineResult<()> {
        Ok(())
    }
    fn get(&self, _: &[u8], _: &mut Vec<u8>) -> EngineResult<bool> {
        panic!("get exploded")
    }
    fn cursor(&self) -> EngineResult<Box<dyn crate::engine::KvCursor + '_>> {
        Err("no cursor".into())
    }
}

#[test]
fn engine_errors_and_panics_become_errors() {
    let run = |b: &str| {
        let c = config(&[&format!("--benchmarks={b}"), "--num=10", "--threads=2"]);
        run_benchmarks(&FailingEngine, &c, &mut std::io::sink(), false)
            .unwrap_err()
            .to_string()
    };
    assert_eq!(run("fillseq"), "benchmark fillseq: disk on fire");
    assert!(run("readrandom").contains("panicked: get exploded"));
    assert_eq!(run("readseq"), "benchmark readseq: no cursor");
    // The writer's failure is reported and the readers still finish (no hang).
    assert!(run("readwhilewriting").contains("panicked"));
}
