//! Tests of `bench` over a given engine: the JSON report, and invalid flags refused before a
//! database is opened.

use super::*;
use crate::config::tests::parse;

#[test]
fn bench_with_writes_the_json_report() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let c = parse(&[
        "--benchmarks=fillrandom,readrandom",
        "--num=100",
        &format!("--json={}", json.display()),
    ])
    .unwrap();
    let mut out = Vec::new();
    let results = bench_with(Box::new(NullEngine::default()), &c, &c.options(), &mut out).unwrap();
    assert_eq!(results.len(), 2);
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("Engine:     null"), "{text}");
    assert!(text.contains("fillrandom             :"), "{text}");
    assert!(text.contains("readrandom             :"), "{text}");
    assert!(text.contains("(0 of 100 found)"), "{text}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let run = &v["runs"][0];
    assert_eq!(run["engine"], "null");
    assert_eq!(run["design"], "leveled");
    assert_eq!(run["benchmarks"][0]["name"], "fillrandom");
    assert_eq!(run["benchmarks"][0]["ops"], 100);
    assert_eq!(run["benchmarks"][1]["found"], 0);
    assert!(run["final_stats"].is_null());
    assert!(run["options"]["write_buffer_size"].is_u64());
}

#[test]
fn bench_rejects_invalid_flags_before_opening() {
    let mut c = parse(&["--num=10"]).unwrap();
    c.threads = 0;
    let err = bench(&c, &mut Vec::new()).unwrap_err().to_string();
    assert!(err.contains("--threads"), "{err}");
}
