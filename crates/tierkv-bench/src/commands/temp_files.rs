//! The temporary database directory and PM pool files of `tierkv bench`: registered while a
//! run lasts, removed at its end, and removed by the handler of Ctrl-C, SIGTERM and SIGHUP; and
//! the test that a file is a PM pool, so that nothing else is removed.

use super::*;

/// Whether the file at `path` starts with a TierKV PM pool's magic.
pub(super) fn is_pm_pool(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 8];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok_and(|()| u64::from_le_bytes(magic) == tierkv::pm::POOL_MAGIC)
}

/// The pool file a run of `entry` creates outside its temporary database directory (`--pm_path`
/// without `--db`, on a design that keeps data in PM): `None` when the run keeps its database
/// (`--db`) or the pool is in the directory.
pub(super) fn made_pool(
    config: &BenchConfig,
    entry: &DesignEntry,
) -> EngineResult<Option<PathBuf>> {
    if config.db.is_some() || config.use_existing_db || config.engine != EngineKind::Tierkv {
        return Ok(None);
    }
    if !matches!(entry.design, DesignChoice::Tierkv(_)) {
        return Ok(None);
    }
    Ok(config.entry_options(entry)?.pm.path)
}

/// The pool files (and their lock files) of temporary databases, removed with them: at the end
/// of the design's run, or by the interrupt handler.
static TEMP_POOLS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// A pool file registered in [`TEMP_POOLS`] while its run lasts; dropping it removes the file
/// and its lock file.
pub(super) struct TempPoolGuard(PathBuf);

impl TempPoolGuard {
    pub(super) fn register(pool: &Path) -> TempPoolGuard {
        TEMP_POOLS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(pool.to_path_buf());
        TempPoolGuard(pool.to_path_buf())
    }
}

impl Drop for TempPoolGuard {
    fn drop(&mut self) {
        remove_pool_files(&self.0);
        TEMP_POOLS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|p| p != &self.0);
    }
}

/// Removes `pool` if it is a PM pool (never another file that took its name meanwhile) and
/// its lock file.
fn remove_pool_files(pool: &Path) {
    if is_pm_pool(pool) {
        let _ = std::fs::remove_file(pool);
    }
    let _ = std::fs::remove_file(tierkv::pool_lock_path(pool));
}

/// The temporary database directory of the `bench` that is running, if it made one: what the
/// interrupt handler removes. `bench` holds the lock while it opens a database, so that the
/// handler never removes the directory while an open creates it again.
pub(super) static TEMP_DB: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Registers a temporary database directory with the interrupt handler (installed on first
/// use) while it exists; dropping it unregisters the directory.
pub(super) struct TempDbGuard;

impl TempDbGuard {
    pub(super) fn register(dir: &Path) -> EngineResult<TempDbGuard> {
        static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
        INSTALLED
            .get_or_init(|| ctrlc::set_handler(on_interrupt).map_err(|e| e.to_string()))
            .clone()
            .map_err(|e| {
                format!("installing the handler that removes the temporary database on Ctrl-C: {e}")
            })?;
        *TEMP_DB.lock().unwrap_or_else(PoisonError::into_inner) = Some(dir.to_path_buf());
        Ok(TempDbGuard)
    }
}

impl Drop for TempDbGuard {
    fn drop(&mut self) {
        *TEMP_DB.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

/// Ctrl-C, SIGTERM or SIGHUP: removes the temporary database directory (with the PM pool in
/// it) and exits with status 130. The lock is kept to the end, so that no database is opened
/// in the directory meanwhile; the benchmark threads may still write into it, so the removal is
/// tried again while anything is left.
fn on_interrupt() {
    let held = TEMP_DB.lock().unwrap_or_else(PoisonError::into_inner);
    for pool in TEMP_POOLS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
    {
        remove_pool_files(pool);
    }
    if let Some(dir) = held.as_ref() {
        let mut result = Ok(());
        for _ in 0..50 {
            result = std::fs::remove_dir_all(dir);
            if !dir.exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        match result {
            Err(e) if dir.exists() => eprintln!(
                "interrupted: could not remove the temporary database {}: {e}",
                dir.display()
            ),
            _ => eprintln!(
                "interrupted: removed the temporary database {}",
                dir.display()
            ),
        }
    } else {
        eprintln!("interrupted");
    }
    std::process::exit(130);
}
