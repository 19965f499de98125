//! Which directory a database is, and which directory its PM pool serves.
//!
//! **`IDENTITY`.** Every database directory holds an `IDENTITY` file, written right after the
//! first `CURRENT` (and by the first writable open of a database created before the file
//! existed):
//!
//! ```text
//! TierKV database\n
//! identity <32 lower-case hex digits>\n
//! directory <the directory's absolute path when it was last opened for writing>\n
//! crc <8 lower-case hex digits: CRC-32C of the lines above>\n
//! ```
//!
//! It does two things. A directory with `IDENTITY` but no `CURRENT` is a database that lost
//! its `CURRENT`, never a place to create a new one, whatever else is missing (a design whose
//! state lives in its pool may have no other file in the directory). And `directory` says
//! where the database was: a directory whose `IDENTITY` names another path was copied or
//! moved.
//!
//! **The pool's owner stamp.** The pool's root directory records a stamp of the directory it
//! serves ([`directory_stamp`]: FNV-1a 64 of the absolute path's bytes). A writable open
//! claims the pool ([`claim_pool`]): the stamp is this directory's, or it is not set (a pool
//! written before stamps existed), or it is the stamp of the directory `IDENTITY` names and
//! that directory no longer holds a database that uses this pool file (the database was moved,
//! or the copy has its own copy of the pool): the pool is then bound to this directory. A
//! directory copied with the pool it shares with the original is refused before anything is
//! written, with the way to give the copy its own pool. A pool stamped by a directory nobody
//! names is taken only when the options name it explicitly (`pm.path`).
//!
//! **The pool's epoch.** A pool restored from another moment than the directory (an older
//! backup of the pool next to a newer manifest, or the reverse) holds structures the manifest
//! does not describe: runs it names are missing or older, and a design whose manifest does
//! not name every structure would read less than was acknowledged. Every writable open raises
//! an epoch kept in both: the pool's root directory first, marked pending ([`raise_pool_epoch`]),
//! then the manifest (a version edit), then the pool's mark is cleared
//! ([`confirm_pool_epoch`]). An open or `check` accepts the pool when its epoch is the
//! manifest's, or one above it while pending (a crash between the first two writes); anything
//! else is refused before anything is written ([`check_pool_epoch`]). A manifest without an
//! epoch (written before it existed) is not checked. A manifest kept in the pool travels with
//! it, so such a pool and its manifest always agree; `CURRENT` names the manifest, so a pool
//! older than `CURRENT` is refused for a missing manifest instead.
//!
//! Order of the writes, and what a crash between them leaves: the pool's stamp first, then
//! `IDENTITY` (temporary file, sync, rename, directory sync). A crash between the two leaves
//! the pool stamped for this directory and `IDENTITY` naming the old one: the next open finds
//! the stamp its own and rewrites `IDENTITY`.

use crate::error::{Error, Result};
use crate::fs::FileSystem;
use crate::version::{current_file_name, read_current, read_manifest_creation_fields, Current};
use std::path::{Path, PathBuf};
use tierkv_pm::PmPool;

const MAGIC_LINE: &str = "TierKV database";

/// Path of `IDENTITY` in `dir`.
pub(crate) fn identity_file_name(dir: &Path) -> PathBuf {
    dir.join("IDENTITY")
}

/// What `IDENTITY` says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DirIdentity {
    pub identity: u128,
    pub directory: PathBuf,
}

/// The absolute path of `dir`, symbolic links resolved where the file system allows.
pub(crate) fn absolute_dir(dir: &Path) -> PathBuf {
    std::fs::canonicalize(dir)
        .or_else(|_| std::path::absolute(dir))
        .unwrap_or_else(|_| dir.to_path_buf())
}

/// The stamp a pool records for the directory at absolute path `dir`: FNV-1a 64 of the path's
/// bytes (never 0, which the pool reads as "no stamp").
pub(crate) fn directory_stamp(dir: &Path) -> u64 {
    use std::os::unix::ffi::OsStrExt;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in dir.as_os_str().as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h.max(1)
}

fn encode(id: &DirIdentity) -> String {
    let body = format!(
        "{MAGIC_LINE}\nidentity {:032x}\ndirectory {}\n",
        id.identity,
        id.directory.display()
    );
    let crc = crc32c::crc32c(body.as_bytes());
    format!("{body}crc {crc:08x}\n")
}

fn decode(data: &[u8], location: &str) -> Result<DirIdentity> {
    let bad = |why: &str| {
        Error::corruption(
            location,
            format!("{why}; `tierkv repair` writes it anew from the manifest"),
        )
    };
    let text = std::str::from_utf8(data).map_err(|_| bad("not text"))?;
    let (body, crc_line) = text
        .trim_end_matches('\n')
        .rsplit_once('\n')
        .ok_or_else(|| bad("too short"))?;
    let body = format!("{body}\n");
    let crc = crc_line
        .strip_prefix("crc ")
        .and_then(|h| u32::from_str_radix(h, 16).ok())
        .ok_or_else(|| bad("no checksum line"))?;
    if crc != crc32c::crc32c(body.as_bytes()) || !text.ends_with('\n') {
        return Err(bad("fails its checksum"));
    }
    let mut lines = body.lines();
    let identity = match (lines.next(), lines.next()) {
        (Some(MAGIC_LINE), Some(line)) => line
            .strip_prefix("identity ")
            .filter(|h| h.len() == 32)
            .and_then(|h| u128::from_str_radix(h, 16).ok()),
        _ => None,
    }
    .ok_or_else(|| bad("bad identity line"))?;
    let directory = lines
        .next()
        .and_then(|l| l.strip_prefix("directory "))
        .filter(|d| d.starts_with('/'))
        .ok_or_else(|| bad("bad directory line"))?;
    if lines.next().is_some() {
        return Err(bad("unexpected lines"));
    }
    Ok(DirIdentity {
        identity,
        directory: PathBuf::from(directory),
    })
}

/// Reads `IDENTITY` in `dir`: `None` when there is none; damage is `Corruption` naming it.
pub(crate) fn read_identity_file(fs: &dyn FileSystem, dir: &Path) -> Result<Option<DirIdentity>> {
    let path = identity_file_name(dir);
    if !fs.exists(&path) {
        return Ok(None);
    }
    let data = fs.read_all(&path)?;
    decode(&data, &path.display().to_string()).map(Some)
}

/// Writes `IDENTITY` in `dir` for the database `identity` at `dir`'s absolute path (temporary
/// file, sync, rename, directory sync), unless it already says exactly that.
pub(crate) fn write_identity_file(fs: &dyn FileSystem, dir: &Path, identity: u128) -> Result<()> {
    let want = DirIdentity {
        identity,
        directory: absolute_dir(dir),
    };
    if matches!(read_identity_file(fs, dir), Ok(Some(ref have)) if *have == want) {
        return Ok(());
    }
    // A temporary file's name (number 0, which no manifest takes): swept at the next open if
    // a crash leaves it.
    let tmp = dir.join("000000.dbtmp");
    let mut f = fs.create(&tmp)?;
    f.append(encode(&want).as_bytes())?;
    f.sync()?;
    drop(f);
    fs.rename(&tmp, &identity_file_name(dir))?;
    fs.sync_dir(dir)
}

/// Checks that `IDENTITY` (if any) names the database `identity` that `CURRENT` leads to.
pub(crate) fn check_identity_file(fs: &dyn FileSystem, dir: &Path, identity: u128) -> Result<()> {
    match read_identity_file(fs, dir)? {
        Some(id) if id.identity != identity => Err(Error::corruption(
            current_file_name(dir).display().to_string(),
            format!(
                "CURRENT leads to the manifest of database {identity:032x}, but this directory \
                 is database {:032x} (its IDENTITY file); CURRENT names another database's \
                 manifest. Run `tierkv repair --db {}` to point CURRENT at this database's \
                 newest valid manifest",
                id.identity,
                dir.display()
            ),
        )),
        _ => Ok(()),
    }
}

/// The pool file the database in `dir` uses, as its `CURRENT` and manifest say (`None` when
/// they cannot be read: then whether it uses a given pool is unknown).
fn pool_used_by(fs: &dyn FileSystem, dir: &Path) -> Option<PathBuf> {
    let current = read_current(fs, dir, &crate::stats::Counters::default()).ok()?;
    let recorded = match &current {
        Current::Pool { pool, .. } => pool.clone(),
        Current::Directory(_) => {
            read_manifest_creation_fields(fs, &dir.join(current.manifest_name()))
                .ok()?
                .pm_path
        }
    };
    Some(recorded.unwrap_or_else(|| dir.join("pm.pool")))
}

fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Binds the pool at `pool_path` to the database directory `dir` (module docs), or refuses
/// an open that would write through a pool another directory uses. `given`: the options name
/// the pool file explicitly. Writes nothing when the pool is already this directory's.
pub(crate) fn claim_pool(
    fs: &dyn FileSystem,
    dir: &Path,
    pool: &PmPool,
    pool_path: &Path,
    given: bool,
) -> Result<()> {
    let here = absolute_dir(dir);
    let stamp = directory_stamp(&here);
    let owner = pool.root_table()?.owner;
    if owner == Some(stamp) {
        return Ok(());
    }
    if let Some(owner) = owner {
        let named = read_identity_file(fs, dir)?.map(|id| id.directory);
        let origin = named.filter(|o| directory_stamp(o) == owner && *o != here);
        match origin {
            Some(origin) => {
                // The same directory reached through another path (a bind mount, a renamed
                // parent's symbolic link) is this database, not a copy of it.
                let in_use = !same_file(&origin, &here)
                    && fs.exists(&current_file_name(&origin))
                    && pool_used_by(fs, &origin).is_none_or(|p| same_file(&p, pool_path));
                if in_use {
                    return Err(copied_directory(dir, &origin, pool_path));
                }
            }
            None if !given => return Err(foreign_owner(dir, pool_path)),
            None => {}
        }
    }
    pool.update_root_table(|t| t.owner = Some(stamp))?;
    Ok(())
}

/// Refuses a pool whose epoch is not the one the manifest recorded (module docs). `manifest`:
/// the manifest's epoch (`None`: not recorded, nothing to check).
pub(crate) fn check_pool_epoch(pool: &PmPool, location: &str, manifest: Option<u64>) -> Result<()> {
    let Some(m) = manifest else {
        return Ok(());
    };
    let t = pool.root_table()?;
    if t.epoch == m || (t.epoch_pending && t.epoch == m + 1) {
        return Ok(());
    }
    let (which, hint) = if t.epoch < m {
        ("older", "a copy of the pool taken before the directory's")
    } else {
        ("newer", "the directory restored from before the pool")
    };
    Err(Error::corruption(
        location,
        format!(
            "the PM pool is {which} than the database's manifest (pool epoch {}, manifest \
             epoch {m}): {hint}? The pool and the directory must come from the same moment; \
             restore both from one backup. Nothing was changed",
            t.epoch
        ),
    ))
}

/// Raises the pool's epoch above both the pool's and the manifest's, marked pending; returns
/// it. The caller records it in the manifest, then calls [`confirm_pool_epoch`]. An epoch
/// already pending one above the manifest's (an open that failed or crashed before recording
/// it) is taken again, so that failed opens in a row never lock the database out.
pub(crate) fn raise_pool_epoch(pool: &PmPool, manifest: Option<u64>) -> Result<u64> {
    let t = pool.root_table()?;
    let m = manifest.unwrap_or(0);
    if t.epoch_pending && manifest.is_some() && t.epoch == m + 1 {
        return Ok(t.epoch);
    }
    let epoch = t.epoch.max(m) + 1;
    pool.update_root_table(|t| {
        t.epoch = epoch;
        t.epoch_pending = true;
    })?;
    Ok(epoch)
}

/// Clears the pending mark once the manifest records the pool's epoch.
pub(crate) fn confirm_pool_epoch(pool: &PmPool) -> Result<()> {
    pool.update_root_table(|t| t.epoch_pending = false)?;
    Ok(())
}

fn copied_directory(dir: &Path, origin: &Path, pool_path: &Path) -> Error {
    Error::InvalidArgument(format!(
        "database {} is a copy of the database in {}, and its PM pool {} is the original's: \
         writing through it would destroy the original. Give the copy its own pool: copy the \
         pool file (e.g. `cp --sparse=always {} NEW_POOL`) and open the copy with --pm_path \
         NEW_POOL (Options::pm.path). Nothing was changed",
        dir.display(),
        origin.display(),
        pool_path.display(),
        pool_path.display()
    ))
}

fn foreign_owner(dir: &Path, pool_path: &Path) -> Error {
    Error::InvalidArgument(format!(
        "the PM pool {} serves another database directory than {} (the directory was copied \
         or moved, and its IDENTITY file does not say from where). If this database was moved \
         and no other directory uses this pool, open it once with --pm_path {} \
         (Options::pm.path) to bind the pool to it; if it is a copy, copy the pool file too and \
         open with --pm_path NEW_POOL. Nothing was changed",
        pool_path.display(),
        dir.display(),
        pool_path.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_round_trips_and_any_damage_is_corruption() {
        let id = DirIdentity {
            identity: 0x0123_4567_89ab_cdef_0011_2233_4455_6677,
            directory: PathBuf::from("/var/db/one"),
        };
        let text = encode(&id);
        assert_eq!(decode(text.as_bytes(), "x").unwrap(), id);
        for i in 0..text.len() {
            let mut b = text.clone().into_bytes();
            b[i] ^= 0x04;
            let err = decode(&b, "IDENTITY").unwrap_err();
            assert!(matches!(err, Error::Corruption { .. }), "byte {i}: {err}");
        }
        for cut in 0..text.len() {
            assert!(
                decode(&text.as_bytes()[..cut], "IDENTITY").is_err(),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn stamps_differ_by_path_and_are_never_zero() {
        let a = directory_stamp(Path::new("/tmp/a"));
        assert_ne!(a, directory_stamp(Path::new("/tmp/b")));
        assert_eq!(a, directory_stamp(Path::new("/tmp/a")));
        assert_ne!(directory_stamp(Path::new("")), 0);
    }
}
