//! A full PM pool through the `tierkv` binary, as a user meets it: a load into a pool too
//! small ends in "out of space"; then every tool still opens the database (read-only, with a
//! warning saying why), `put` is refused with the way out, `check` reports the condition, and
//! `tierkv grow-pool` lets writes continue with every key kept. On the designs whose full pool
//! locked the user out before (`labdb`, `slmdb`).

mod common;

use common::{fails, ok, s, tierkv};

#[test]
fn a_full_pool_opens_read_only_and_grows_through_the_tools() {
    for design in ["labdb", "slmdb"] {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db");
        let d = s(&db);
        let load = tierkv(&[
            "bench",
            "--design",
            design,
            "--db",
            d,
            "--benchmarks=fillrandom",
            "--num=100000",
            "--set",
            "pm.size_bytes=4194304",
            "--set",
            "pm.chunk_bytes=262144",
            "--set",
            "write_buffer_size=131072",
        ]);
        let err = String::from_utf8_lossy(&load.stderr);
        assert!(
            !load.status.success() && err.contains("out of space"),
            "{design}: the load was to fill the pool: {err}"
        );
        // Every tool opens it; reads work, with a warning.
        let scan = tierkv(&["scan", "--db", d]);
        assert!(scan.status.success(), "{design}");
        let warning = String::from_utf8_lossy(&scan.stderr);
        assert!(
            warning.contains("is open read-only") && warning.contains("grow-pool"),
            "{design}: {warning}"
        );
        let keys = String::from_utf8_lossy(&scan.stdout).lines().count();
        assert!(keys > 100, "{design}: {keys} keys");
        let err = fails(&["put", "--db", d, "new", "1"]);
        assert!(
            err.contains("database is open read-only") && err.contains("grow"),
            "{design}: {err}"
        );
        let report = ok(&["check", "--db", d]);
        assert!(
            report.starts_with("OK") && report.contains("note: the next open cannot recover"),
            "{design}: {report}"
        );
        // Not smaller, not with --read_only; then grown, it takes writes again.
        let err = fails(&["grow-pool", "--db", d, "--size", "2097152"]);
        assert!(err.contains("grows only to a larger"), "{design}: {err}");
        fails(&["grow-pool", "--db", d, "--read_only", "--size", "67108864"]);
        let grew = ok(&["grow-pool", "--db", d, "--size", "67108864"]);
        assert!(
            grew.contains("from 4194304 to 67108864 bytes"),
            "{design}: {grew}"
        );
        ok(&["put", "--db", d, "new", "1"]);
        let scan = tierkv(&["scan", "--db", d]);
        assert!(scan.stderr.is_empty(), "{design}: still read-only");
        assert_eq!(
            String::from_utf8_lossy(&scan.stdout).lines().count(),
            keys + 1,
            "{design}"
        );
        let report = ok(&["check", "--db", d]);
        assert!(
            !report.contains("note: the next open"),
            "{design}: {report}"
        );
    }
}
