//! A background thread that panics (a bug, or a file system that panics) poisons the database:
//! writers waiting for that thread's work get an error instead of waiting forever, and reads
//! keep working.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;
use tierkv::fs::{FileLock, FileSystem, MemFs, RandomAccessFile, WritableFile};
use tierkv::{Db, Error, Options, Result};

/// `MemFs`, except that creating a table file panics once `armed` is set.
struct PanickyFs {
    inner: MemFs,
    armed: Arc<AtomicBool>,
}

impl FileSystem for PanickyFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        if self.armed.load(Ordering::SeqCst) && path.extension().is_some_and(|e| e == "sst") {
            panic!("injected panic creating {}", path.display());
        }
        self.inner.create(path)
    }
    fn open_readable(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.inner.open_readable(path)
    }
    fn remove(&self, path: &Path) -> Result<()> {
        self.inner.remove(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.inner.rename(from, to)
    }
    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }
    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        self.inner.list(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.inner.sync_dir(dir)
    }
    fn file_size(&self, path: &Path) -> Result<u64> {
        self.inner.file_size(path)
    }
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        self.inner.lock(path)
    }
}

#[test]
fn a_panicking_flush_thread_poisons_instead_of_hanging_writers() {
    let armed = Arc::new(AtomicBool::new(false));
    let fs = PanickyFs {
        inner: MemFs::new(),
        armed: Arc::clone(&armed),
    };
    let o = Options {
        fs: Arc::new(fs),
        write_buffer_size: 8 << 10,
        max_write_buffer_number: 2,
        ..Options::default()
    };
    let db = Arc::new(Db::open("/db", o).unwrap());
    for i in 0..50u32 {
        db.put(&i.to_be_bytes(), b"before").unwrap();
    }
    db.flush().unwrap();
    armed.store(true, Ordering::SeqCst);
    // Writes fill the memtables; the flush thread panics on its next table, and the writer
    // waiting for room must come back with an error.
    let (tx, rx) = mpsc::channel();
    let writer = {
        let db = Arc::clone(&db);
        std::thread::spawn(move || {
            let mut result = Ok(());
            for i in 0..100_000u32 {
                result = db.put(&i.to_be_bytes(), &[7u8; 100]);
                if result.is_err() {
                    break;
                }
            }
            let _ = tx.send(result);
        })
    };
    let result = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("a writer still waiting 30 s after the flush thread panicked");
    writer.join().unwrap();
    match result {
        Err(Error::Poisoned(m)) => assert!(m.contains("flush thread"), "{m}"),
        other => panic!("expected a poisoned database, got {other:?}"),
    }
    assert!(matches!(db.put(b"x", b"y"), Err(Error::Poisoned(_))));
    // Reads still work, and see the acknowledged writes (key 7 was rewritten before the panic).
    assert_eq!(db.get(&7u32.to_be_bytes()).unwrap(), Some(vec![7u8; 100]));
}
