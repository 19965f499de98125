//! What a user does around a database, on every design of the registry, through the `tierkv`
//! binary: every tool reopens what `put` created; a directory that lost or damaged its
//! `CURRENT` is refused (never taken for an empty directory) and `repair` brings it back; a
//! copied directory never writes through the original's pool, and a copy given its own pool
//! becomes a database of its own.

use std::path::Path;
use std::process::Command;
use tierkv::{Design, Options};

mod common;

use common::{contents, fails, ok, s};

fn uses_pm(design: Design) -> bool {
    design.uses_pm(&design.options(Options::default()))
}

/// `cp -a from to`, as a user copies a database directory.
fn copy_dir(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .args(["-a", s(from), s(to)])
        .status()
        .unwrap();
    assert!(status.success());
}

/// A database of `design` in `db` holding a=1, b=2, c=3 (its pool at `pool` when given). The
/// pool is small, since the tests compare whole files.
fn create(design: Design, db: &Path, pool: Option<&Path>) {
    for (k, v) in [("a", "1"), ("b", "2"), ("c", "3")] {
        let mut args = vec!["put", "--db", s(db), "--design", design.name()];
        args.extend(["--set", "pm.size_bytes=67108864"]);
        if let Some(pool) = pool {
            args.extend(["--pm_path", s(pool)]);
        }
        args.extend([k, v]);
        ok(&args);
    }
}

const ABC: &str = "a\t1\nb\t2\nc\t3\n";

#[test]
fn every_design_reopens_through_every_tool() {
    for &design in Design::ALL {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db");
        let db = s(&db);
        create(design, Path::new(db), None);
        assert_eq!(ok(&["get", "--db", db, "b"]), "2\n", "{design}");
        ok(&["delete", "--db", db, "b"]);
        ok(&["put", "--db", db, "d", "4"]);
        assert_eq!(ok(&["scan", "--db", db]), "a\t1\nc\t3\nd\t4\n", "{design}");
        let stats = ok(&["stats", "--db", db]);
        assert!(
            stats.contains(&format!("Design:          {design} ")),
            "{stats}"
        );
        assert!(ok(&["check", "--db", db]).starts_with("OK"), "{design}");
        ok(&[
            "bench",
            "--db",
            db,
            "--design",
            design.name(),
            "--use_existing_db=1",
            "--benchmarks=readrandom",
            "--num=10",
        ]);
        assert_eq!(ok(&["scan", "--db", db]), "a\t1\nc\t3\nd\t4\n", "{design}");
    }
}

#[test]
fn a_lost_or_damaged_current_is_refused_and_repaired_on_every_design() {
    for &design in Design::ALL {
        let dir = tempfile::tempdir().unwrap();
        let db_path = dir.path().join("db");
        let db = s(&db_path);
        create(design, &db_path, None);
        let current = db_path.join("CURRENT");

        std::fs::remove_file(&current).unwrap();
        let before = contents(&db_path, &[]);
        for args in [
            vec!["put", "--db", db, "new", "x"],
            vec!["put", "--db", db, "--design", design.name(), "new", "x"],
            vec!["get", "--db", db, "a"],
        ] {
            let err = fails(&args);
            assert!(
                err.contains("but no CURRENT file") && err.contains("tierkv repair --db"),
                "{design}: {err}"
            );
        }
        assert_eq!(
            contents(&db_path, &[]),
            before,
            "{design}: a refused open wrote"
        );
        assert!(ok(&["repair", "--db", db]).contains("CURRENT now names"));
        assert_eq!(ok(&["scan", "--db", db]), ABC, "{design}");

        std::fs::write(&current, b"garbage\n").unwrap();
        let err = fails(&["get", "--db", db, "a"]);
        assert!(err.contains("CURRENT"), "{design}: {err}");
        assert!(ok(&["repair", "--db", db]).contains("CURRENT now names"));
        ok(&["put", "--db", db, "d", "4"]);
        assert_eq!(
            ok(&["scan", "--db", db]),
            format!("{ABC}d\t4\n"),
            "{design}"
        );
    }
}

/// `CURRENT` and a manifest copied in from another database of the same design: the open
/// refuses (the directory's `IDENTITY` or its pool names this database), and `repair` goes
/// back to this database's own manifest.
#[test]
fn current_naming_another_databases_manifest_is_refused_on_every_design() {
    for &design in Design::ALL {
        let dir = tempfile::tempdir().unwrap();
        let (one, other) = (dir.path().join("one"), dir.path().join("other"));
        create(design, &one, None);
        ok(&[
            "put",
            "--db",
            s(&other),
            "--design",
            design.name(),
            "z",
            "9",
        ]);
        let text = std::fs::read_to_string(other.join("CURRENT")).unwrap();
        if text.starts_with("pm:") {
            // The manifest is in the pool: its CURRENT names the other pool's database.
            std::fs::write(one.join("CURRENT"), text).unwrap();
        } else {
            let name = text.trim();
            std::fs::copy(other.join(name), one.join("MANIFEST-000999")).unwrap();
            std::fs::write(one.join("CURRENT"), "MANIFEST-000999\n").unwrap();
        }
        let err = fails(&["scan", "--db", s(&one)]);
        assert!(
            err.contains("another database") || err.contains("belongs to database"),
            "{design}: {err}"
        );
        assert!(ok(&["repair", "--db", s(&one)]).contains("CURRENT now names"));
        assert_eq!(ok(&["scan", "--db", s(&one)]), ABC, "{design}");
        assert_eq!(ok(&["scan", "--db", s(&other)]), "z\t9\n", "{design}");
    }
}

#[test]
fn a_copied_directory_never_writes_through_the_originals_pool() {
    for &design in Design::ALL {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let pool_a = dir.path().join("a.pool");
        let pm = uses_pm(design);
        create(design, &a, pm.then_some(pool_a.as_path()));
        copy_dir(&a, &b);
        let extra: Vec<&Path> = if pm { vec![pool_a.as_path()] } else { vec![] };
        let original = contents(&a, &extra);
        if pm {
            for args in [
                vec!["put", "--db", s(&b), "k", "v"],
                vec!["get", "--db", s(&b), "a"],
            ] {
                let err = fails(&args);
                assert!(
                    err.contains(&format!("is a copy of the database in {}", s(&a)))
                        && err.contains("--pm_path NEW_POOL")
                        && err.contains("Nothing was changed"),
                    "{design}: {err}"
                );
            }
            assert_eq!(
                contents(&a, &extra),
                original,
                "{design}: the original changed"
            );
            let pool_b = dir.path().join("b.pool");
            std::fs::copy(&pool_a, &pool_b).unwrap();
            ok(&["put", "--db", s(&b), "--pm_path", s(&pool_b), "k", "v"]);
        } else {
            ok(&["put", "--db", s(&b), "k", "v"]);
        }
        // The copy is a database of its own: its pool (if any) recorded, the original intact.
        ok(&["put", "--db", s(&b), "l", "w"]);
        assert_eq!(
            ok(&["scan", "--db", s(&b)]),
            format!("{ABC}k\tv\nl\tw\n"),
            "{design}"
        );
        assert_eq!(
            contents(&a, &extra),
            original,
            "{design}: the original changed"
        );
        assert_eq!(ok(&["scan", "--db", s(&a)]), ABC, "{design}");
        ok(&["put", "--db", s(&a), "m", "x"]);
        assert_eq!(
            ok(&["scan", "--db", s(&a)]),
            format!("{ABC}m\tx\n"),
            "{design}"
        );
        assert!(ok(&["check", "--db", s(&a)]).starts_with("OK"), "{design}");
        assert!(ok(&["check", "--db", s(&b)]).starts_with("OK"), "{design}");
    }
}

/// A copy made with its pool inside the directory (the default) carries its own pool: it
/// opens as a database of its own, and the original is untouched.
#[test]
fn a_copied_directory_with_its_pool_inside_is_a_database_of_its_own() {
    for &design in Design::ALL {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        create(design, &a, None);
        copy_dir(&a, &b);
        let original = contents(&a, &[]);
        ok(&["put", "--db", s(&b), "k", "v"]);
        assert_eq!(
            ok(&["scan", "--db", s(&b)]),
            format!("{ABC}k\tv\n"),
            "{design}"
        );
        assert_eq!(
            contents(&a, &[]),
            original,
            "{design}: the original changed"
        );
        assert_eq!(ok(&["scan", "--db", s(&a)]), ABC, "{design}");
    }
}

/// A moved directory (`mv`) whose pool is outside it: the pool is rebound to the new place,
/// since no database is left at the old one.
#[test]
fn a_moved_directory_keeps_its_pool() {
    for &design in Design::ALL.iter().filter(|d| uses_pm(**d)) {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let pool = dir.path().join("a.pool");
        create(design, &a, Some(&pool));
        std::fs::rename(&a, &b).unwrap();
        ok(&["put", "--db", s(&b), "k", "v"]);
        assert_eq!(
            ok(&["scan", "--db", s(&b)]),
            format!("{ABC}k\tv\n"),
            "{design}"
        );
    }
}

/// A pool file of another size than its header records (truncated, or grown by hand): every
/// tool refuses it, naming both sizes, and changes nothing; with the file restored the database
/// opens with its data. A `--set pm.size_bytes` other than the pool's does not resize it.
#[test]
fn a_pool_of_another_size_is_refused_and_nothing_changes() {
    for &design in Design::ALL.iter().filter(|d| uses_pm(**d)) {
        let dir = tempfile::tempdir().unwrap();
        let db_path = dir.path().join("db");
        let db = s(&db_path);
        create(design, &db_path, None);
        let pool = db_path.join("pm.pool");
        let size = std::fs::metadata(&pool).unwrap().len();
        for other in [size / 2, size * 2] {
            // Taken anew each round: the scan that proves the restore opens writes the pool.
            let saved = std::fs::read(&pool).unwrap();
            std::fs::OpenOptions::new()
                .write(true)
                .open(&pool)
                .unwrap()
                .set_len(other)
                .unwrap();
            let before = contents(&db_path, &[]);
            for args in [
                vec!["get", "--db", db, "a"],
                vec!["put", "--db", db, "k", "v"],
                vec!["check", "--db", db],
            ] {
                let err = fails(&args);
                assert!(
                    err.contains(&format!("header records a pool of {size} bytes"))
                        && err.contains(&format!("the pool has {other} bytes")),
                    "{design} {args:?}: {err}"
                );
            }
            assert_eq!(
                contents(&db_path, &[]),
                before,
                "{design}: a refused open wrote"
            );
            std::fs::write(&pool, &saved).unwrap();
            assert_eq!(ok(&["scan", "--db", db]), ABC, "{design}");
        }
        ok(&[
            "put",
            "--db",
            db,
            "--set",
            "pm.size_bytes=134217728",
            "d",
            "4",
        ]);
        assert_eq!(std::fs::metadata(&pool).unwrap().len(), size, "{design}");
        assert_eq!(
            ok(&["scan", "--db", db]),
            format!("{ABC}d\t4\n"),
            "{design}"
        );
    }
}

/// The pool and the directory restored from different moments (an older copy of the pool next
/// to a newer manifest, or an older directory next to a newer pool): every design refuses
/// before writing anything, instead of opening the structures the manifest does not describe
/// (which returned fewer keys than acknowledged); with both from one moment it opens whole.
#[test]
fn a_pool_and_a_directory_from_different_moments_are_refused() {
    let refused = |err: &str| {
        err.contains("than the database's manifest") || err.contains("which is missing")
    };
    for &design in Design::ALL.iter().filter(|d| uses_pm(**d)) {
        let dir = tempfile::tempdir().unwrap();
        let (db_path, pool) = (dir.path().join("db"), dir.path().join("db.pool"));
        let db = s(&db_path);
        create(design, &db_path, Some(&pool));
        let old_pool = std::fs::read(&pool).unwrap();
        let old_dir = dir.path().join("old-db");
        copy_dir(&db_path, &old_dir);
        ok(&["put", "--db", db, "d", "4"]);
        let new_pool = std::fs::read(&pool).unwrap();

        // An older pool next to the newer manifest.
        std::fs::write(&pool, &old_pool).unwrap();
        let before = contents(&db_path, &[&pool]);
        for args in [vec!["scan", "--db", db], vec!["check", "--db", db]] {
            let err = fails(&args);
            assert!(refused(&err), "{design} {args:?}: {err}");
        }
        assert_eq!(
            contents(&db_path, &[&pool]),
            before,
            "{design}: a refused open wrote"
        );
        std::fs::write(&pool, &new_pool).unwrap();
        assert_eq!(
            ok(&["scan", "--db", db]),
            format!("{ABC}d\t4\n"),
            "{design}"
        );

        // An older directory next to the newer pool.
        let new_pool = std::fs::read(&pool).unwrap();
        let new_dir = dir.path().join("new-db");
        std::fs::rename(&db_path, &new_dir).unwrap();
        std::fs::rename(&old_dir, &db_path).unwrap();
        let before = contents(&db_path, &[&pool]);
        let err = fails(&["scan", "--db", db]);
        assert!(refused(&err), "{design}: {err}");
        assert_eq!(
            contents(&db_path, &[&pool]),
            before,
            "{design}: a refused open wrote"
        );
        std::fs::remove_dir_all(&db_path).unwrap();
        std::fs::rename(&new_dir, &db_path).unwrap();
        assert_eq!(std::fs::read(&pool).unwrap(), new_pool);
        assert_eq!(
            ok(&["scan", "--db", db]),
            format!("{ABC}d\t4\n"),
            "{design}"
        );
    }
}

/// `repair` never points `CURRENT` at a manifest the pool's epoch has moved past (an older
/// manifest left in the directory): the next open would refuse it, and every repair would pick
/// it again. With the newest manifest damaged, repair fails and says why.
#[test]
fn repair_never_chooses_a_manifest_older_than_the_pool() {
    let design = Design::LEVELED_PM;
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("db");
    let db = s(&db_path);
    create(design, &db_path, None);
    let manifest = |p: &Path| {
        std::fs::read_to_string(p.join("CURRENT"))
            .unwrap()
            .trim()
            .to_string()
    };
    let older = manifest(&db_path);
    let older_bytes = std::fs::read(db_path.join(&older)).unwrap();
    ok(&["put", "--db", db, "d", "4"]);
    let newer = manifest(&db_path);
    assert_ne!(older, newer);
    std::fs::write(db_path.join(&older), &older_bytes).unwrap();
    let len = std::fs::metadata(db_path.join(&newer)).unwrap().len() as usize;
    std::fs::write(db_path.join(&newer), vec![0x5a; len]).unwrap();
    std::fs::remove_file(db_path.join("CURRENT")).unwrap();
    let err = fails(&["repair", "--db", db]);
    assert!(
        err.contains(&older) && err.contains("newer than the database's manifest"),
        "{err}"
    );
    assert!(!db_path.join("CURRENT").exists());
}
