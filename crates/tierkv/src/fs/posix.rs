//! The POSIX file system: `std::fs` with positional reads, buffered appends, `fdatasync`, and
//! directory fsync.
//!
//! Appends are buffered in user space (64 KiB) until `flush`/`sync` or until the buffer fills;
//! the write-ahead log calls `flush` after every commit so acknowledged writes survive a process
//! crash.

use super::{FileLock, FileSystem, RandomAccessFile, WritableFile};
use crate::{Error, Result};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const WRITE_BUFFER_BYTES: usize = 64 * 1024;

/// The real file system.
#[derive(Clone, Copy, Debug, Default)]
pub struct PosixFs;

struct PosixWritable {
    file: File,
    path: PathBuf,
    buf: Vec<u8>,
    size: u64,
}

impl WritableFile for PosixWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.size += data.len() as u64;
        if self.buf.len() + data.len() > WRITE_BUFFER_BYTES {
            self.flush()?;
            if data.len() >= WRITE_BUFFER_BYTES {
                return self
                    .file
                    .write_all(data)
                    .map_err(|e| Error::io("append", &self.path, e));
            }
        }
        self.buf.extend_from_slice(data);
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if !self.buf.is_empty() {
            self.file
                .write_all(&self.buf)
                .map_err(|e| Error::io("append", &self.path, e))?;
            self.buf.clear();
        }
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        self.flush()?;
        self.file
            .sync_data()
            .map_err(|e| Error::io("sync", &self.path, e))
    }

    fn size(&self) -> u64 {
        self.size
    }
}

struct PosixReadable {
    file: File,
    path: PathBuf,
    size: u64,
}

impl RandomAccessFile for PosixReadable {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.file
            .read_exact_at(buf, offset)
            .map_err(|e| Error::io("read", &self.path, e))
    }
    fn size(&self) -> u64 {
        self.size
    }
}

struct PosixLock {
    _file: File,
}
impl FileLock for PosixLock {}

impl FileSystem for PosixFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|e| Error::io("create", path, e))?;
        Ok(Box::new(PosixWritable {
            file,
            path: path.to_path_buf(),
            buf: Vec::with_capacity(WRITE_BUFFER_BYTES),
            size: 0,
        }))
    }

    fn open_readable(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let file = File::open(path).map_err(|e| Error::io("open", path, e))?;
        let size = file
            .metadata()
            .map_err(|e| Error::io("stat", path, e))?
            .len();
        Ok(Arc::new(PosixReadable {
            file,
            path: path.to_path_buf(),
            size,
        }))
    }

    fn open_readable_direct(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        super::direct::open(path)
    }

    fn remove(&self, path: &Path) -> Result<()> {
        std::fs::remove_file(path).map_err(|e| Error::io("remove", path, e))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        std::fs::rename(from, to).map_err(|e| Error::io("rename", from, e))
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(|e| Error::io("list", dir, e))? {
            let entry = entry.map_err(|e| Error::io("list", dir, e))?;
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        Ok(names)
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io("mkdir", dir, e))
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        let d = File::open(dir).map_err(|e| Error::io("open dir", dir, e))?;
        d.sync_all().map_err(|e| Error::io("sync dir", dir, e))
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        Ok(std::fs::metadata(path)
            .map_err(|e| Error::io("stat", path, e))?
            .len())
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| Error::io("lock", path, e))?;
        match file.try_lock() {
            Ok(()) => Ok(Box::new(PosixLock { _file: file })),
            Err(std::fs::TryLockError::WouldBlock) => Err(Error::InvalidArgument(format!(
                "database lock {} is held by another process or handle",
                path.display()
            ))),
            Err(std::fs::TryLockError::Error(e)) => Err(Error::io("lock", path, e)),
        }
    }

    fn lock_shared(&self, path: &Path) -> Result<Option<Box<dyn FileLock>>> {
        // Read access is enough for a shared flock, so this works on a read-only mount.
        let file = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io("lock (shared)", path, e)),
        };
        match file.try_lock_shared() {
            Ok(()) => Ok(Some(Box::new(PosixLock { _file: file }))),
            Err(std::fs::TryLockError::WouldBlock) => Err(Error::InvalidArgument(format!(
                "database lock {} is held by a writer; a read-only open needs the writer closed",
                path.display()
            ))),
            Err(std::fs::TryLockError::Error(e)) => Err(Error::io("lock (shared)", path, e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_read_rename_list_lock() {
        let dir = tempfile::tempdir().unwrap();
        let fs = PosixFs;
        let a = dir.path().join("a");
        let mut w = fs.create(&a).unwrap();
        w.append(b"hello ").unwrap();
        w.append(&vec![7u8; 100_000]).unwrap();
        w.sync().unwrap();
        assert_eq!(w.size(), 100_006);
        drop(w);
        let r = fs.open_readable(&a).unwrap();
        let mut buf = [0u8; 6];
        r.read_exact_at(0, &mut buf).unwrap();
        assert_eq!(&buf, b"hello ");
        let mut past_end = [0u8; 10];
        assert!(r.read_exact_at(100_000, &mut past_end).is_err());
        fs.rename(&a, &dir.path().join("b")).unwrap();
        fs.sync_dir(dir.path()).unwrap();
        assert_eq!(fs.list(dir.path()).unwrap(), vec!["b".to_string()]);
        let l1 = fs.lock(&dir.path().join("LOCK")).unwrap();
        assert!(fs.lock(&dir.path().join("LOCK")).is_err());
        drop(l1);
        assert!(fs.lock(&dir.path().join("LOCK")).is_ok());
    }
}
