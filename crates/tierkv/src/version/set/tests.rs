use super::*;
use crate::filename::*;
use crate::version::RunKind;

/// The manifest in the directory, on the options' file system.
fn in_dir(o: &Options) -> (Tier, Arc<dyn FileSystem>) {
    (Tier::Ssd, o.fs.clone())
}

/// Reads `CURRENT` and recovers the directory manifest it names.
fn recover(dir: &Path, o: &Options, counters: Arc<Counters>) -> Result<VersionSet> {
    let current = super::super::read_current(&*o.fs, dir, &counters)?;
    VersionSet::recover(dir, o, counters, &current, o.fs.clone())
}

/// An SSD table `n` of one entry between two (user key, sequence) bounds.
fn table(n: u64, lo: (&[u8], u64), hi: (&[u8], u64)) -> super::super::FileMetaData {
    let key = |(k, seq): (&[u8], u64)| {
        crate::format::make_internal_key(k, seq, crate::format::ValueType::Value)
    };
    super::super::FileMetaData {
        number: n,
        file_size: 10,
        num_entries: 1,
        smallest: key(lo),
        largest: key(hi),
        tier: Tier::Ssd,
        kind: super::super::RunKind::Sst,
        set: 0,
        row: None,
        value_refs: Vec::new(),
        backing: None,
    }
}

/// What the directory manifest `CURRENT` names was created with.
fn read_creation_fields(fs: &dyn FileSystem, dir: &Path) -> Result<CreationFields> {
    let current = super::super::read_current(fs, dir, &Counters::default())?;
    read_manifest_creation_fields(fs, &dir.join(current.manifest_name()))
}

#[test]
fn file_names_round_trip() {
    let d = Path::new("/db");
    for (p, k, n) in [
        (log_file_name(d, 7), FileKind::Log, 7),
        (
            run_file_name(d, 123456789, RunKind::Sst),
            FileKind::Run(RunKind::Sst),
            123456789,
        ),
        (d.join("000012.arr"), FileKind::Run(RunKind::PmArray), 12),
        (manifest_file_name(d, 3), FileKind::Manifest, 3),
        (value_array_file_name(d, 44), FileKind::ValueArray, 44),
        (d.join("1234567.wbuf"), FileKind::WalBuffer, 1234567),
        (d.join("000009.clog"), FileKind::CompactionLog, 9),
        (d.join("000010.dbtmp"), FileKind::Temp, 10),
        (
            crate::sst::value_log::value_log_file_name(d, 31),
            FileKind::ValueLog,
            31,
        ),
    ] {
        let name = p.file_name().unwrap().to_str().unwrap();
        assert_eq!(parse_file_name(name), Some((k, n)));
    }
    assert_eq!(parse_file_name("CURRENT"), None);
    assert_eq!(parse_file_name("LOCK"), None);
    assert_eq!(parse_file_name("x.sst"), None);
    assert_eq!(parse_file_name("000001.vlo"), None);
    assert_eq!(parse_file_name("000001.wbu"), None);
}

#[test]
fn create_recover_and_design_mismatch() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options::default();
    let counters = Arc::new(Counters::default());
    let mut vs = VersionSet::create(dir.path(), &opts, 7, counters.clone(), in_dir(&opts)).unwrap();
    let n = vs.new_file_number();
    vs.last_sequence = 42;
    let mut e = VersionEdit::default();
    e.stage_mut(0)
        .added
        .push((1, table(n, (b"a", 1), (b"b", 2))));
    e.stage_mut(0).pointers.push((1, b"pointer".to_vec()));
    vs.log_and_apply(e).unwrap();
    drop(vs);
    let vs = recover(dir.path(), &opts, counters.clone()).unwrap();
    assert_eq!(vs.last_sequence, 42);
    assert_eq!(vs.current().stage(0).groups[1].len(), 1);
    assert_eq!(vs.pointers[0][1], b"pointer");
    assert!(vs.next_file_number > n);
    let other = Options {
        compaction: crate::CompactionOptions {
            num_levels: 5,
            ..Default::default()
        },
        ..Options::default()
    };
    let err = recover(dir.path(), &other, counters).err().unwrap();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
}

/// A manifest past its roll size (and four times its snapshot) is replaced by a fresh
/// snapshot in a new manifest, `CURRENT` switched; recovery reads the same version from
/// whichever manifest `CURRENT` names.
#[test]
fn a_full_manifest_rolls_over() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options::default();
    let counters = Arc::new(Counters::default());
    let mut vs = VersionSet::create(dir.path(), &opts, 7, counters.clone(), in_dir(&opts)).unwrap();
    vs.set_manifest_roll_bytes(4096);
    let first = vs.manifest_number().unwrap();
    let mut numbers = vec![first];
    for i in 0..200u64 {
        let n = vs.new_file_number();
        let mut e = VersionEdit::default();
        e.stage_mut(0).added.push((
            2,
            table(
                n,
                (format!("k{i:05}a").as_bytes(), 1),
                (format!("k{i:05}b").as_bytes(), 1),
            ),
        ));
        vs.log_and_apply(e).unwrap();
        let m = vs.manifest_number().unwrap();
        if numbers.last() != Some(&m) {
            numbers.push(m);
        }
        // Never larger than the roll size plus one record, or four snapshots.
        let (bytes, snapshot) = vs.manifest_bytes;
        assert!(
            bytes < (4096u64).max(4 * snapshot) + 200,
            "{bytes} {snapshot}"
        );
    }
    assert!(numbers.len() >= 2, "rolled over: {numbers:?}");
    let live = vs.manifest_number().unwrap();
    drop(vs);
    let vs = recover(dir.path(), &opts, counters).unwrap();
    assert_eq!(vs.recovered_manifest(), Some(live));
    assert_eq!(vs.current().stage(0).groups[2].len(), 200);
}

/// A `fluidkv` version set in `dir` whose manifest is in a 1 MiB pool (64 KiB chunks),
/// rolling over at `roll_bytes`, with every other chunk of the pool taken by a table.
fn in_a_full_pool(
    dir: &Path,
    roll_bytes: u64,
) -> (crate::fs::PmFs, Options, Arc<Counters>, VersionSet) {
    use crate::fs::{PmFs, PmFsOpen, PmSpacePolicy};
    let pool_options = tierkv_pm::PoolOptions {
        size: 1 << 20,
        chunk_size: 64 << 10,
        ..tierkv_pm::PoolOptions::default()
    };
    let pool = tierkv_pm::PmPool::create_crash_sim(&pool_options, true).unwrap();
    let pmfs = PmFs::open(Arc::clone(&pool), "p", PmFsOpen::Create(7)).unwrap();
    pmfs.set_space_policy(PmSpacePolicy::default());
    let opts = Options {
        design: crate::Design::FLUIDKV,
        ..Options::default()
    };
    let counters = Arc::new(Counters::default());
    let place: (Tier, Arc<dyn FileSystem>) = (Tier::Pm, Arc::new(pmfs.clone()));
    let mut vs = VersionSet::create(dir, &opts, 7, counters.clone(), place).unwrap();
    vs.set_manifest_roll_bytes(roll_bytes);
    let mut table = pmfs.create(&dir.join("000100.sst")).unwrap();
    while table.append(&[0u8; 4096]).is_ok() {}
    assert_eq!(pool.free_chunks(), 0);
    (pmfs, opts, counters, vs)
}

/// A rollover that finds no room for the new manifest (a full pool) appends the edit to
/// the live manifest instead, leaves no partial manifest behind, and loses nothing.
#[test]
fn a_rollover_without_room_keeps_the_live_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let (pmfs, opts, counters, mut vs) = in_a_full_pool(dir.path(), 2048);
    let live = vs.manifest_number().unwrap();
    let numbers_before = vs.next_file_number;
    for i in 0..40u64 {
        let mut e = VersionEdit::default();
        e.stage_mut(0)
            .pointers
            .push((0, format!("pointer {i} {}", "x".repeat(100)).into_bytes()));
        vs.log_and_apply(e).unwrap();
    }
    assert!(vs.next_file_number > numbers_before, "a rollover was tried");
    assert_eq!(vs.manifest_number(), Some(live), "no room to roll over");
    let manifests: Vec<String> = pmfs
        .list(dir.path())
        .unwrap()
        .into_iter()
        .filter(|n| n.starts_with("MANIFEST-"))
        .collect();
    assert_eq!(manifests, vec![format!("MANIFEST-{live:06}")]);
    drop(vs);
    let current = super::super::read_current(&*opts.fs, dir.path(), &counters).unwrap();
    let vs = VersionSet::recover(dir.path(), &opts, counters, &current, Arc::new(pmfs)).unwrap();
    assert!(vs.pointers[0][0].starts_with(b"pointer 39 "));
}

/// A manifest in a full pool that needs another chunk moves to the database directory:
/// every commit succeeds, `CURRENT` names the new manifest, and recovery reads every edit.
#[test]
fn a_manifest_without_room_in_the_pool_moves_to_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    // No rollover: the live manifest grows until its chunk is full.
    let (pmfs, opts, counters, mut vs) = in_a_full_pool(dir.path(), u64::MAX);
    let in_pool = vs.manifest_number().unwrap();
    for i in 0..100u64 {
        let mut e = VersionEdit::default();
        e.stage_mut(0)
            .pointers
            .push((0, format!("pointer {i} {}", "x".repeat(1000)).into_bytes()));
        vs.log_and_apply(e)
            .unwrap_or_else(|e| panic!("edit {i}: {e}"));
    }
    assert_eq!(
        counters
            .pm_manifest_fallbacks
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
    let moved = vs.manifest_number().unwrap();
    assert_ne!(moved, in_pool);
    let name = format!("MANIFEST-{moved:06}");
    assert!(
        dir.path().join(&name).exists(),
        "the manifest is in the directory"
    );
    assert!(!pmfs.list(dir.path()).unwrap().contains(&name));
    drop(vs);
    let current = super::super::read_current(&*opts.fs, dir.path(), &counters).unwrap();
    assert_eq!(current, Current::Directory(moved));
    let vs = VersionSet::recover(
        dir.path(),
        &opts,
        counters.clone(),
        &current,
        Arc::clone(&opts.fs),
    )
    .unwrap();
    assert!(vs.pointers[0][0].starts_with(b"pointer 99 "));
    // The manifest left in the pool still reads back, up to an earlier edit (the one that
    // found no room wrote nothing to it).
    let old = Current::Pool {
        number: in_pool,
        design: "fluidkv".into(),
        identity: 7,
        pool: None,
    };
    let vs = VersionSet::recover(dir.path(), &opts, counters, &old, Arc::new(pmfs)).unwrap();
    assert!(vs.pointers[0][0].starts_with(b"pointer "));
    assert!(!vs.pointers[0][0].starts_with(b"pointer 99 "));
}

/// The L0 tree roles survive recovery and every fresh manifest snapshot; a later edit
/// replaces them, an edit without them keeps them, and a database that never set them
/// reads `None`.
#[test]
fn tree_roles_survive_recovery_and_snapshots() {
    use super::super::TreeRoles;
    let dir = tempfile::tempdir().unwrap();
    let opts = Options::default();
    let counters = Arc::new(Counters::default());
    let mut vs = VersionSet::create(dir.path(), &opts, 7, counters.clone(), in_dir(&opts)).unwrap();
    assert_eq!(vs.current().stage(0).trees, None);
    vs.log_and_apply(VersionEdit::default()).unwrap();
    drop(vs);
    let mut vs = recover(dir.path(), &opts, counters.clone()).unwrap();
    assert_eq!(vs.current().stage(0).trees, None);
    let first = TreeRoles {
        mutable: 21,
        immutable: 0,
    };
    let mut e = VersionEdit::default();
    e.stage_mut(0).trees = Some(first);
    vs.log_and_apply(e).unwrap();
    assert_eq!(vs.current().stage(0).trees, Some(first));
    // A switch: the mutable tree becomes immutable, a new one mutable.
    let switched = TreeRoles {
        mutable: 30,
        immutable: 21,
    };
    let mut e = VersionEdit::default();
    e.stage_mut(0).trees = Some(switched);
    vs.log_and_apply(e).unwrap();
    vs.log_and_apply(VersionEdit::default()).unwrap();
    assert_eq!(vs.current().stage(0).trees, Some(switched));
    drop(vs);
    // Read back from the delta records, then from the next manifest's snapshot.
    for _ in 0..2 {
        let mut vs = recover(dir.path(), &opts, counters.clone()).unwrap();
        assert_eq!(vs.current().stage(0).trees, Some(switched));
        let first_manifest = vs.recovered_manifest();
        vs.log_and_apply(VersionEdit::default()).unwrap();
        assert_ne!(vs.manifest_number(), first_manifest);
    }
}

/// A pool path other than the default is recorded (absolute) in every manifest snapshot
/// and read back by recovery and `read_creation_fields`; the default, a design without PM
/// and a manifest without the field record nothing.
#[test]
fn the_pool_path_is_recorded_unless_it_is_the_default() {
    let dir = tempfile::tempdir().unwrap();
    let counters = Arc::new(Counters::default());
    let with_pool = |path: Option<PathBuf>| {
        let mut o = Options {
            design: crate::Design::LEVELED_PM,
            ..Options::default()
        };
        o.pm.path = path;
        o
    };
    let db = dir.path().join("db");
    std::fs::create_dir(&db).unwrap();
    let relative = PathBuf::from("some-dir/x.pool");
    let opts = with_pool(Some(relative.clone()));
    let vs = VersionSet::create(&db, &opts, 7, counters.clone(), in_dir(&opts)).unwrap();
    let expected = std::env::current_dir().unwrap().join(&relative);
    assert_eq!(vs.pm_path(), Some(expected.as_path()));
    drop(vs);
    assert_eq!(
        read_creation_fields(&crate::fs::PosixFs, &db)
            .unwrap()
            .pm_path,
        Some(expected.clone())
    );
    // Recovery reads it, and the next manifest (a fresh snapshot) carries it on.
    let mut vs = recover(&db, &with_pool(None), counters.clone()).unwrap();
    assert_eq!(vs.pm_path(), Some(expected.as_path()));
    let first = vs.recovered_manifest().unwrap();
    vs.log_and_apply(VersionEdit::default()).unwrap();
    assert_ne!(vs.manifest_number(), Some(first));
    drop(vs);
    let created = read_creation_fields(&crate::fs::PosixFs, &db).unwrap();
    assert_eq!(created.pm_path, Some(expected));
    assert_eq!(created.design, "leveled-pm");
    // Nothing is recorded for the default pool, wherever it is named from, nor without PM.
    for (name, opts) in [
        ("default", with_pool(None)),
        (
            "named default",
            with_pool(Some(dir.path().join("d2/pm.pool"))),
        ),
        ("no PM", {
            let mut o = Options::default();
            o.pm.path = Some(dir.path().join("unused.pool"));
            o
        }),
    ] {
        let d = dir.path().join("d2");
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir(&d).unwrap();
        drop(VersionSet::create(&d, &opts, 8, counters.clone(), in_dir(&opts)).unwrap());
        let created = read_creation_fields(&crate::fs::PosixFs, &d).unwrap();
        assert_eq!(created.pm_path, None, "{name}");
    }
}
