//! The owner of an opened file system: what recovery hands over once the directory is read.

use super::*;

/// [`PmFs`] as an owner of a pool's chunks, for the open protocol
/// ([`super::open_pm_owners`]): its root is [`PMFS_ROOT_NAME`]; opening reads the directory and
/// every file's chunk chain (no write), creating writes an empty directory. After the protocol,
/// [`PmFsOwner::into_fs`] gives the file system.
pub struct PmFsOwner {
    pub(super) fs: PmFs,
    /// Files found by `open` that hold data (not temporary files, nor manifests that the
    /// engine's test finds empty).
    pub(super) files: usize,
    /// The engine's test of a manifest ([`EmptyManifestTest`]), if given.
    empty_manifest: Option<EmptyManifestTest>,
}

/// Whether the manifest at a path of a file system describes a database with nothing in it
/// (what a creation writes before `CURRENT` exists). The file system cannot tell (a manifest's
/// format lives above it): the engine gives the test ([`PmFsOwner::with_empty_manifest_test`]),
/// and without one every manifest counts as data.
pub type EmptyManifestTest = fn(&dyn FileSystem, &Path) -> bool;

impl PmFsOwner {
    /// The file system of `pool` for the database `identity`, not opened yet. A chunk size
    /// below [`PMFS_MIN_CHUNK_BYTES`] is `InvalidArgument`. `location` names the pool in
    /// errors.
    pub fn new(
        pool: Arc<PmPool>,
        location: impl Into<String>,
        identity: u128,
    ) -> Result<PmFsOwner> {
        Ok(PmFsOwner {
            fs: PmFs::unopened(pool, location.into(), identity)?,
            files: 0,
            empty_manifest: None,
        })
    }

    /// The owner with `test` deciding which manifests hold no data: a pool whose files are
    /// only such manifests (and temporary files) holds nothing, and another database may take
    /// it over.
    pub fn with_empty_manifest_test(mut self, test: EmptyManifestTest) -> PmFsOwner {
        self.empty_manifest = Some(test);
        self
    }

    /// The file system, once the protocol opened or created it.
    pub fn into_fs(self) -> PmFs {
        self.fs
    }
}

impl PmOwner for PmFsOwner {
    fn root_name(&self) -> &str {
        PMFS_ROOT_NAME
    }

    fn open(&mut self, root: u64) -> Result<Vec<u64>> {
        let dir = self.fs.read_directory(root)?;
        let files = self.fs.scan_entries(&dir)?;
        use crate::filename::FileKind;
        let names: Vec<String> = files.iter().map(|f| f.name.clone()).collect();
        let chunks = self.fs.install(dir, files);
        // Temporary files, and manifests that name no file and no WAL, hold no data: a pool
        // with nothing else is what a creation that stopped before `CURRENT` existed leaves
        // (its manifest in the pool). Read only: the allocator is not rebuilt yet.
        self.files = names
            .iter()
            .filter(|name| match crate::filename::parse_file_name(name) {
                Some((FileKind::Temp, _)) => false,
                Some((FileKind::Manifest, _)) => !self
                    .empty_manifest
                    .is_some_and(|empty| empty(&self.fs, Path::new(name.as_str()))),
                _ => true,
            })
            .count();
        Ok(chunks)
    }

    fn holdings(&self) -> Option<String> {
        match self.files {
            0 => None,
            1 => Some("1 file".to_string()),
            n => Some(format!("{n} files")),
        }
    }

    fn missing(&mut self, how: PmFsOpen) -> Result<()> {
        match how {
            PmFsOpen::Create(_) => Ok(()),
            PmFsOpen::Existing(_) => Err(self.fs.bad(
                "the PM pool holds no TierKV file system (this database's pool was replaced \
                 or never written)"
                    .to_string(),
            )),
        }
    }

    fn create(&mut self) -> Result<u64> {
        self.files = 0;
        self.fs.format()
    }
}
