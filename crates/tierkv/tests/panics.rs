//! A background thread that panics (a bug, or a file system that panics) poisons the database:
//! writers waiting for that thread's work get an error instead of waiting forever, and reads
//! keep working.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;
use tierkv::fs::{FileLock, FileSystem, MemFs, RandomAccessFile, WritableFile};
use tierkv::{Db, Error, Options, Result};

/// `MemFs`, except that creating a table file panics once `armed` is set, and an append to a
/// WAL (`.log`) file once `armed_logs` is.
struct PanickyFs {
    inner: MemFs,
    armed: Arc<AtomicBool>,
    armed_logs: Arc<AtomicBool>,
}

/// A WAL file whose appends panic once `armed` is set.
struct PanickyLog {
    inner: Box<dyn WritableFile>,
    armed: Arc<AtomicBool>,
}

impl WritableFile for PanickyLog {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        if self.armed.load(Ordering::SeqCst) {
            panic!("injected panic appending to a WAL");
        }
        self.inner.append(data)
    }
    fn flush(&mut self) -> Result<()> {
        self.inner.flush()
    }
    fn sync(&mut self) -> Result<()> {
        self.inner.sync()
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
}

impl FileSystem for PanickyFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        if self.armed.load(Ordering::SeqCst) && path.extension().is_some_and(|e| e == "sst") {
            panic!("injected panic creating {}", path.display());
        }
        let file = self.inner.create(path)?;
        if path.extension().is_some_and(|e| e == "log") {
            return Ok(Box::new(PanickyLog {
                inner: file,
                armed: Arc::clone(&self.armed_logs),
            }));
        }
        Ok(file)
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
        armed_logs: Arc::new(AtomicBool::new(false)),
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

/// A write-group leader that panics while it appends the group's WAL record poisons the
/// database: the writers it took and those queued behind it get an error instead of waiting
/// forever, later writes are refused, and reads keep working.
#[test]
fn a_panicking_write_leader_poisons_instead_of_hanging_its_group() {
    let armed = Arc::new(AtomicBool::new(false));
    let fs = PanickyFs {
        inner: MemFs::new(),
        armed: Arc::new(AtomicBool::new(false)),
        armed_logs: Arc::clone(&armed),
    };
    let o = Options {
        fs: Arc::new(fs),
        ..Options::default()
    };
    let db = Arc::new(Db::open("/db", o).unwrap());
    db.put(b"before", b"1").unwrap();
    armed.store(true, Ordering::SeqCst);
    let (tx, rx) = mpsc::channel();
    let writers: Vec<_> = (0..4u32)
        .map(|t| {
            let (db, tx) = (Arc::clone(&db), tx.clone());
            std::thread::spawn(move || {
                let key = t.to_be_bytes();
                let outcome =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| db.put(&key, b"v")));
                let _ = tx.send(match outcome {
                    Ok(Ok(())) => "acknowledged".to_string(),
                    Ok(Err(e)) => format!("error: {e}"),
                    Err(_) => "panicked".to_string(),
                });
            })
        })
        .collect();
    let mut outcomes = Vec::new();
    for _ in 0..4 {
        outcomes.push(
            rx.recv_timeout(Duration::from_secs(30))
                .expect("a writer still waiting 30 s after its leader panicked"),
        );
    }
    for w in writers {
        w.join().unwrap();
    }
    assert!(outcomes.iter().any(|o| o == "panicked"), "{outcomes:?}");
    for o in &outcomes {
        assert!(
            o == "panicked" || o.contains("the write group's leader panicked"),
            "{outcomes:?}"
        );
    }
    match db.put(b"after", b"2") {
        Err(Error::Poisoned(m)) => assert!(m.contains("leader panicked"), "{m}"),
        other => panic!("expected a poisoned database, got {other:?}"),
    }
    assert_eq!(db.get(b"before").unwrap(), Some(b"1".to_vec()));
}
