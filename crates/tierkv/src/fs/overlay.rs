//! A copy-on-write layer over a file system: the directory side of a read-only open.
//!
//! Purpose: a read-only open ([`crate::Options::read_only`]) runs the ordinary open (recovery
//! replays logs, writes a manifest, rotates a WAL, deletes leftovers) without one byte reaching
//! the disk. [`OverlayFs`] reads through to the file system below it; every file it is asked to
//! create, rename or remove lives in memory, on top, for as long as the overlay does. So the
//! read-only open is the writable open, minus durability: the same checks, the same recovered
//! state, every read served.
//!
//! Semantics: a file created here shadows one of the same path below; a removed file below is
//! hidden (a "whiteout"), never touched; renaming a file from below copies its bytes up (the
//! engine renames only small files: a temporary `CURRENT`, `IDENTITY`); `sync` and `sync_dir`
//! do nothing (nothing here is ever durable); `lock` takes a *shared* lock on the file below
//! when one exists ([`FileSystem::lock_shared`]), so a read-only open and a writer exclude each
//! other, while read-only opens share, and a missing lock file (no writer since the last boot
//! of a read-only medium) is not created.
//!
//! Memory: what recovery writes (a table flushed from a replayed WAL, a manifest) stays in
//! RAM until the database closes; reads of the files below cost nothing extra.
//!
//! Thread-safety: one mutex guards the layer's maps; file contents sit behind their own
//! locks, so a reader of one file never waits on a writer of another.

use super::{FileLock, FileSystem, RandomAccessFile, WritableFile};
use crate::{Error, Result};
use parking_lot::{Mutex, RwLock};
use std::collections::{HashMap, HashSet};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::Arc;

type Bytes = Arc<RwLock<Vec<u8>>>;

/// A file system whose changes stay in memory on top of `base`, which is only read.
pub struct OverlayFs {
    base: Arc<dyn FileSystem>,
    upper: Mutex<Upper>,
}

#[derive(Default)]
struct Upper {
    /// Files created (or copied up) here, by path.
    files: HashMap<PathBuf, Bytes>,
    /// Paths below that were removed or renamed away here.
    hidden: HashSet<PathBuf>,
    /// Directories created here.
    dirs: HashSet<PathBuf>,
}

impl OverlayFs {
    /// An overlay over `base`; nothing is read or written until asked.
    pub fn new(base: Arc<dyn FileSystem>) -> OverlayFs {
        OverlayFs {
            base,
            upper: Mutex::new(Upper::default()),
        }
    }

    /// The file system below, which this overlay never writes.
    pub fn base(&self) -> &Arc<dyn FileSystem> {
        &self.base
    }

    /// Whether `path` is visible below (not hidden by a removal here).
    fn below(&self, upper: &Upper, path: &Path) -> bool {
        !upper.hidden.contains(path) && self.base.exists(path)
    }
}

fn not_found(op: &'static str, path: &Path) -> Error {
    Error::io(op, path, std::io::Error::from(ErrorKind::NotFound))
}

struct UpperWriter {
    bytes: Bytes,
}

impl WritableFile for UpperWriter {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.bytes.write().extend_from_slice(data);
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
    fn size(&self) -> u64 {
        self.bytes.read().len() as u64
    }
}

struct UpperReader {
    bytes: Bytes,
    path: PathBuf,
}

impl RandomAccessFile for UpperReader {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let bytes = self.bytes.read();
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        match start.checked_add(buf.len()) {
            Some(end) if end <= bytes.len() => {
                buf.copy_from_slice(&bytes[start..end]);
                Ok(())
            }
            _ => Err(Error::io(
                "read",
                &self.path,
                std::io::Error::from(ErrorKind::UnexpectedEof),
            )),
        }
    }
    fn size(&self) -> u64 {
        self.bytes.read().len() as u64
    }
}

struct NoLock;
impl FileLock for NoLock {}

impl FileSystem for OverlayFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let bytes = Bytes::default();
        let mut upper = self.upper.lock();
        upper.files.insert(path.to_path_buf(), Arc::clone(&bytes));
        upper.hidden.remove(path);
        Ok(Box::new(UpperWriter { bytes }))
    }

    fn open_readable(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let upper = self.upper.lock();
        if let Some(bytes) = upper.files.get(path) {
            return Ok(Arc::new(UpperReader {
                bytes: Arc::clone(bytes),
                path: path.to_path_buf(),
            }));
        }
        if upper.hidden.contains(path) {
            return Err(not_found("open", path));
        }
        drop(upper);
        self.base.open_readable(path)
    }

    fn open_readable_direct(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let upper = self.upper.lock();
        if upper.files.contains_key(path) || upper.hidden.contains(path) {
            drop(upper);
            // A file in memory has no page cache to bypass.
            return self.open_readable(path);
        }
        drop(upper);
        self.base.open_readable_direct(path)
    }

    fn remove(&self, path: &Path) -> Result<()> {
        let mut upper = self.upper.lock();
        let was_up = upper.files.remove(path).is_some();
        let was_below = self.below(&upper, path);
        if was_below {
            upper.hidden.insert(path.to_path_buf());
        }
        if was_up || was_below {
            Ok(())
        } else {
            Err(not_found("remove", path))
        }
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let mut upper = self.upper.lock();
        let bytes = match upper.files.remove(from) {
            Some(bytes) => bytes,
            None if self.below(&upper, from) => Arc::new(RwLock::new(self.base.read_all(from)?)),
            None => return Err(not_found("rename", from)),
        };
        if self.base.exists(from) {
            upper.hidden.insert(from.to_path_buf());
        }
        upper.hidden.remove(to);
        upper.files.insert(to.to_path_buf(), bytes);
        Ok(())
    }

    fn exists(&self, path: &Path) -> bool {
        let upper = self.upper.lock();
        upper.files.contains_key(path) || upper.dirs.contains(path) || self.below(&upper, path)
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        let upper = self.upper.lock();
        let mut names: Vec<String> = if self.below(&upper, dir) {
            self.base
                .list(dir)?
                .into_iter()
                .filter(|n| !upper.hidden.contains(&dir.join(n)))
                .collect()
        } else if upper.dirs.contains(dir) {
            Vec::new()
        } else {
            return Err(not_found("list", dir));
        };
        let up = upper.files.keys().chain(upper.dirs.iter());
        for path in up.filter(|p| p.parent() == Some(dir)) {
            if let Some(name) = path.file_name().and_then(|n| n.to_str()) {
                names.push(name.to_string());
            }
        }
        names.sort();
        names.dedup();
        Ok(names)
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        let mut upper = self.upper.lock();
        for d in dir.ancestors() {
            if d.as_os_str().is_empty() || self.below(&upper, d) {
                break;
            }
            upper.dirs.insert(d.to_path_buf());
        }
        Ok(())
    }

    fn sync_dir(&self, _dir: &Path) -> Result<()> {
        Ok(())
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        let upper = self.upper.lock();
        if let Some(bytes) = upper.files.get(path) {
            return Ok(bytes.read().len() as u64);
        }
        if upper.hidden.contains(path) {
            return Err(not_found("stat", path));
        }
        drop(upper);
        self.base.file_size(path)
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        match self.base.lock_shared(path)? {
            Some(lock) => Ok(lock),
            None => Ok(Box::new(NoLock)),
        }
    }

    fn lock_shared(&self, path: &Path) -> Result<Option<Box<dyn FileLock>>> {
        self.base.lock_shared(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::PosixFs;

    #[test]
    fn changes_stay_on_top_and_the_directory_below_is_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("a"), b"below a").unwrap();
        std::fs::write(d.join("b"), b"below b").unwrap();
        let snapshot = || {
            let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(d)
                .unwrap()
                .map(|e| {
                    let e = e.unwrap();
                    (
                        e.file_name().into_string().unwrap(),
                        std::fs::read(e.path()).unwrap(),
                    )
                })
                .collect();
            v.sort();
            v
        };
        let before = snapshot();
        let fs = OverlayFs::new(Arc::new(PosixFs));
        // Create, shadow, rename up, remove below.
        let mut w = fs.create(&d.join("c")).unwrap();
        w.append(b"new c").unwrap();
        w.sync().unwrap();
        let mut w = fs.create(&d.join("a")).unwrap();
        w.append(b"upper a").unwrap();
        fs.rename(&d.join("b"), &d.join("b2")).unwrap();
        fs.remove(&d.join("c")).unwrap();
        fs.create_dir_all(&d.join("sub/deeper")).unwrap();
        fs.sync_dir(d).unwrap();
        assert_eq!(fs.read_all(&d.join("a")).unwrap(), b"upper a");
        assert_eq!(fs.read_all(&d.join("b2")).unwrap(), b"below b");
        assert!(!fs.exists(&d.join("b")) && !fs.exists(&d.join("c")));
        assert!(fs.open_readable(&d.join("b")).is_err());
        assert!(
            fs.remove(&d.join("c")).is_err(),
            "removing twice is an error"
        );
        assert_eq!(fs.file_size(&d.join("a")).unwrap(), 7);
        assert_eq!(fs.list(d).unwrap(), vec!["a", "b2", "sub"]);
        assert_eq!(fs.list(&d.join("sub")).unwrap(), vec!["deeper"]);
        // A short read of a file in memory is an error, not zeros.
        let f = fs.open_readable(&d.join("a")).unwrap();
        let mut buf = [0u8; 8];
        assert!(f.read_exact_at(0, &mut buf).is_err());
        // The directory below never changed, and no lock file was created.
        let _lock = fs.lock(&d.join("LOCK")).unwrap();
        assert_eq!(snapshot(), before);
    }

    #[test]
    fn a_writer_and_a_read_only_holder_exclude_each_other() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join("LOCK");
        let writer = PosixFs.lock(&lock).unwrap();
        let fs = OverlayFs::new(Arc::new(PosixFs));
        let err = fs.lock(&lock).err().unwrap();
        assert!(err.to_string().contains("held by a writer"), "{err}");
        drop(writer);
        let r1 = fs.lock(&lock).unwrap();
        let r2 = OverlayFs::new(Arc::new(PosixFs)).lock(&lock).unwrap();
        assert!(
            PosixFs.lock(&lock).is_err(),
            "a writer waits for the readers"
        );
        drop((r1, r2));
        assert!(PosixFs.lock(&lock).is_ok());
    }
}
