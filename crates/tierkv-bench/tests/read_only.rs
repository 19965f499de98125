//! Reading a database without writing to it, on every design of the registry, through the
//! `tierkv` binary: `get`, `scan`, `stats` and `check` with `--read_only` serve every
//! acknowledged key (the logs replayed in memory) while not one byte of the directory or the
//! pool changes and no file appears, not even `LOCK`; writes are refused with a message that
//! says why. (The API's side, and the lock between a writer and a read-only open, are in the
//! engine's `tests/read_only.rs`: a test binary that spawns processes can hold a lock in a
//! child between its fork and its exec.)

use std::path::Path;
use tierkv::Design;

mod common;

use common::{contents, fails, ok, s};

/// A database of `design` in `db` holding a=1, c=3 and d=4 (b was deleted), whose logs still
/// hold the writes: a read-only open must replay them.
fn create(design: Design, db: &Path) {
    for args in [
        &["put", "a", "1"][..],
        &["put", "b", "2"],
        &["put", "c", "3"],
        &["delete", "b"],
        &["put", "d", "4"],
    ] {
        let mut a = vec![args[0], "--db", s(db), "--design", design.name()];
        a.extend(["--set", "pm.size_bytes=67108864"]);
        a.extend(&args[1..]);
        ok(&a);
    }
}

const ACD: &str = "a\t1\nc\t3\nd\t4\n";

#[test]
fn every_tool_reads_with_read_only_and_nothing_changes_on_every_design() {
    for &design in Design::ALL {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db");
        create(design, &db);
        // As on a read-only medium copied from a closed database: no lock files either.
        for lock in ["LOCK", "pm.pool.lock"] {
            let _ = std::fs::remove_file(db.join(lock));
        }
        let before = contents(dir.path(), &[]);
        let d = s(&db);
        assert_eq!(
            ok(&["get", "--db", d, "--read_only", "c"]),
            "3\n",
            "{design}"
        );
        let err = fails(&["get", "--db", d, "--read_only", "b"]);
        assert!(err.contains("key b not found"), "{design}: {err}");
        assert_eq!(ok(&["scan", "--db", d, "--read_only"]), ACD, "{design}");
        let stats = ok(&["stats", "--db", d, "--read_only"]);
        assert!(
            stats.contains("Live data:       3 keys"),
            "{design}: {stats}"
        );
        assert!(
            ok(&["check", "--db", d, "--read_only"]).starts_with("OK"),
            "{design}"
        );
        let err = fails(&["put", "--db", d, "--read_only", "e", "5"]);
        assert!(
            err.contains("database is open read-only"),
            "{design}: {err}"
        );
        let err = fails(&["repair", "--db", d, "--read_only"]);
        assert!(
            err.contains("cannot run with --read_only"),
            "{design}: {err}"
        );
        assert!(
            contents(dir.path(), &[]) == before,
            "{design}: a read-only tool changed or created a file"
        );
        // The database is as it was for a writer.
        ok(&["put", "--db", d, "e", "5"]);
        assert_eq!(ok(&["scan", "--db", d]), format!("{ACD}e\t5\n"), "{design}");
    }
}
