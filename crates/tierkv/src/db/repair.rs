//! `repair`: points a lost or damaged `CURRENT` at the newest manifest from which the
//! database opens consistently, among the directory's manifests and its pool's.

use super::owner;
use super::recovery::{list_files, open_pm, verify_files, PoolAccess};
use crate::error::{Error, Result};
use crate::fs::{FileSystem, PmFsOpen};
use crate::options::Options;
use crate::stats::Counters;
use crate::tier::Tier;
use crate::version::{
    parse_file_name, pool_path_to_record, read_current, set_current, Current, FileKind, VersionSet,
};
use std::path::Path;
use std::sync::Arc;
use tierkv_pm::{PmPool, PoolOptions};

/// Points `CURRENT` at the newest manifest from which the database opens consistently
/// (every table present with its recorded size, its oldest live WAL present, its PM pool
/// bound to it). The manifests of the directory are candidates, and those in the database's
/// PM pool when it can be found: the pool `CURRENT` names, else `pm.path`, else `pm.pool` in
/// the directory, for the design `CURRENT` names, else `options.design`. Leaves a database
/// whose `CURRENT` already names such a manifest as it is. Nothing but `CURRENT` (and
/// `IDENTITY`, when it is missing or damaged) is written; no file is deleted. A manifest of
/// another database than the one `IDENTITY` names is never chosen.
pub(crate) fn repair(dir: &Path, options: &Options) -> Result<RepairReport> {
    let fs = Arc::clone(&options.fs);
    if !fs.exists(dir) {
        return Err(Error::NotFound(format!(
            "database directory {}",
            dir.display()
        )));
    }
    let _lock = fs.lock(&dir.join("LOCK"))?;
    let counters = Arc::new(Counters::default());
    let current = read_current(&*fs, dir, &counters).ok();
    // `IDENTITY` says which database the directory is: a manifest of another is no candidate.
    // A damaged or missing `IDENTITY` is written anew from the manifest chosen.
    let this_database = owner::read_identity_file(&*fs, dir).ok().flatten();
    let mut manifests: Vec<(u64, Tier, String)> = manifests_of(&*fs, dir)?
        .into_iter()
        .map(|(n, name)| (n, Tier::Ssd, name))
        .collect();
    let mut rejected = Vec::new();
    // A pool `CURRENT` of another database than `IDENTITY` names points at that database's
    // pool: look for this database's own (the options', else the directory's).
    let current_of_this = match (&current, &this_database) {
        (Some(Current::Pool { identity, .. }), Some(id)) if *identity != id.identity => None,
        _ => current.as_ref(),
    };
    let pool = match repair_pool(dir, options, current_of_this) {
        Ok(pool) => pool,
        Err(e) => {
            rejected.push(("the PM pool".to_string(), e.to_string()));
            None
        }
    };
    if let Some((_, _, names)) = &pool {
        manifests.extend(names.iter().map(|(n, name)| (*n, Tier::Pm, name.clone())));
    }
    manifests.sort_unstable_by_key(|m| std::cmp::Reverse(m.0));
    for (_, tier, name) in &manifests {
        let tried = match tier {
            Tier::Ssd => repair_candidate(dir, options, &counters, name, None),
            Tier::Pm => {
                let (o, how, _) = pool.as_ref().expect("pool manifests come from a pool");
                repair_candidate(dir, o, &counters, name, Some(*how))
            }
        };
        let shown = match tier {
            Tier::Ssd => name.clone(),
            Tier::Pm => format!("{name} (in the PM pool)"),
        };
        let tried = tried.and_then(|(chosen, identity)| match &this_database {
            Some(id) if id.identity != identity => Err(Error::corruption(
                name,
                format!(
                    "a manifest of database {identity:032x}; this directory is database {:032x} \
                     (its IDENTITY file)",
                    id.identity
                ),
            )),
            _ => Ok((chosen, identity)),
        });
        match tried {
            Ok((chosen, identity)) => {
                let changed = current.as_ref() != Some(&chosen);
                if changed {
                    set_current(&*fs, dir, &chosen, &counters)?;
                }
                if this_database.is_none() {
                    owner::write_identity_file(&*fs, dir, identity)?;
                }
                return Ok(RepairReport {
                    manifest: shown,
                    changed,
                    rejected,
                });
            }
            Err(e) => rejected.push((shown, e.to_string())),
        }
    }
    Err(Error::corruption(
        dir.display().to_string(),
        if rejected.is_empty() {
            format!(
                "no manifest to repair from. A database whose manifest lives in its PM pool \
                 (fluidkv, or pm.manifest_on_pm) with the pool outside the directory needs the \
                 pool's path: `tierkv repair --db {} --pm_path POOL`",
                dir.display()
            )
        } else {
            format!(
                "no manifest opens consistently: {}",
                rejected
                    .iter()
                    .map(|(n, e)| format!("{n}: {e}"))
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        },
    ))
}

/// Opens the database as the manifest `name` describes and checks its files; returns what
/// `CURRENT` must say to name it. `in_pool`: the manifest is a file of the pool, opened with
/// `options` (the design `CURRENT` or the options name) for the database `in_pool` says.
fn repair_candidate(
    dir: &Path,
    options: &Options,
    counters: &Arc<Counters>,
    name: &str,
    in_pool: Option<PmFsOpen>,
) -> Result<(Current, u128)> {
    let fs = Arc::clone(&options.fs);
    match in_pool {
        None => {
            let options = options_of_manifest(options, &*fs, &dir.join(name))?;
            let place = (Tier::Ssd, Arc::clone(&fs));
            let versions =
                VersionSet::recover_manifest(dir, name, &options, Arc::clone(counters), place)?;
            let how = PmFsOpen::Existing(versions.identity());
            let pm = open_pm(dir, &options, how, PoolAccess::Write, versions.pm_path())?;
            if let Some(pm) = &pm {
                // A manifest the pool's epoch has moved past (an older one left behind) would
                // be refused by the next open: never chosen.
                owner::check_pool_epoch(&pm.pool, name, versions.pool_epoch())?;
            }
            let present = list_files(&*fs, pm.as_ref(), dir)?;
            verify_files(dir, &versions, &present, &*fs, pm.as_ref())?;
            Ok((
                Current::Directory(versions.recovered_manifest().unwrap_or(0)),
                versions.identity(),
            ))
        }
        Some(how) => {
            let pm = open_pm(dir, options, how, PoolAccess::Write, None)?
                .ok_or_else(|| Error::InvalidArgument("the design has no PM pool".into()))?;
            let options = options_of_manifest(options, &*pm.fs, &dir.join(name))?;
            let place = (Tier::Pm, Arc::clone(&pm.fs));
            let versions =
                VersionSet::recover_manifest(dir, name, &options, Arc::clone(counters), place)?;
            if versions.identity() != how.identity() {
                return Err(Error::corruption(
                    name,
                    format!(
                        "identity {:032x}, the pool's {:032x}",
                        versions.identity(),
                        how.identity()
                    ),
                ));
            }
            owner::check_pool_epoch(&pm.pool, name, versions.pool_epoch())?;
            let present = list_files(&*fs, Some(&pm), dir)?;
            verify_files(dir, &versions, &present, &*fs, Some(&pm))?;
            let pool = match options.pm.path {
                Some(_) => pool_path_to_record(dir, &options),
                None => versions.pm_path().map(Path::to_path_buf),
            };
            let current = Current::Pool {
                number: versions.recovered_manifest().unwrap_or(0),
                design: options.design.name().to_string(),
                identity: versions.identity(),
                pool,
            };
            Ok((current, versions.identity()))
        }
    }
}

/// The database's PM pool for [`repair`], when one can be found: the options that open it
/// (its path resolved into `pm.path`, the design `CURRENT` names, else the options', else the
/// one the pool's newest manifest names), the database it is bound to, and its manifests
/// (number, name). `None` when no pool file is there, the pool is bound to no database, or no
/// design with a pool can be found.
#[allow(clippy::type_complexity)]
fn repair_pool(
    dir: &Path,
    options: &Options,
    current: Option<&Current>,
) -> Result<Option<(Options, PmFsOpen, Vec<(u64, String)>)>> {
    let mut o = options.clone();
    let mut recorded = None;
    if let Some(Current::Pool { design, pool, .. }) = current {
        o.design = design.parse()?;
        recorded = pool.clone();
    }
    let pool = match &o.pm.pool {
        Some(pool) => Arc::clone(pool),
        None => {
            let path =
                o.pm.path
                    .clone()
                    .or(recorded)
                    .unwrap_or_else(|| dir.join("pm.pool"));
            if !path.exists() {
                return Ok(None);
            }
            o.pm.path = Some(path.clone());
            PmPool::open(
                &path,
                &PoolOptions {
                    size: o.pm.size_bytes,
                    mode: o.pm.mode,
                    latency: o.pm.latency,
                    chunk_size: o.pm.chunk_bytes,
                },
            )?
        }
    };
    let table = pool.root_table()?;
    let identity = match (current, table.identity) {
        (Some(Current::Pool { identity, .. }), _) => *identity,
        (_, Some(id)) => id,
        (_, None) => return Ok(None),
    };
    let how = PmFsOpen::Existing(identity);
    if !matches!(current, Some(Current::Pool { .. })) && !o.design.uses_pm(&o) {
        // The options name a design without a pool (the tools' default when the database
        // cannot describe itself): the pool's newest manifest names the design. Only a pool
        // that holds nothing but its file system opens without knowing the design.
        if table
            .roots
            .keys()
            .any(|name| name != crate::fs::PMFS_ROOT_NAME)
        {
            return Ok(None);
        }
        let location = o.pm.path.as_ref().map_or_else(
            || "PM pool (given)".to_string(),
            |p| p.display().to_string(),
        );
        let pmfs = crate::pm_structures::open_pm_structures(
            &pool,
            &location,
            how,
            Default::default(),
            super::describes_empty_database,
        )?
        .pmfs;
        let newest = manifests_of(&pmfs, dir)?.into_iter().max_by_key(|m| m.0);
        let Some((_, name)) = newest else {
            return Ok(None);
        };
        o = options_of_manifest(&o, &pmfs, &dir.join(name))?;
        if !o.design.uses_pm(&o) {
            return Ok(None);
        }
    }
    drop(pool);
    let pm = open_pm(dir, &o, how, PoolAccess::Write, None)?
        .ok_or_else(|| Error::InvalidArgument("the design has no PM pool".into()))?;
    let names = manifests_of(&*pm.fs, dir)?;
    Ok(Some((o, how, names)))
}

/// The manifests (number, name) of `dir` on `fs`.
fn manifests_of(fs: &dyn FileSystem, dir: &Path) -> Result<Vec<(u64, String)>> {
    Ok(fs
        .list(dir)?
        .into_iter()
        .filter_map(|name| match parse_file_name(&name) {
            Some((FileKind::Manifest, n)) => Some((n, name)),
            _ => None,
        })
        .collect())
}

/// `options` with what the manifest at `path` says the database was created with (design,
/// level count, WAL tier): repair needs no `CURRENT` to know them.
fn options_of_manifest(options: &Options, fs: &dyn FileSystem, path: &Path) -> Result<Options> {
    let created = crate::version::read_manifest_creation_fields(fs, path)?;
    let mut o = options.clone();
    o.design = created.design.parse()?;
    created.apply_to(&mut o);
    Ok(o)
}

/// What [`crate::Db::repair`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepairReport {
    /// The manifest `CURRENT` names now.
    pub manifest: String,
    /// Whether `CURRENT` was written (false: it already named that manifest).
    pub changed: bool,
    /// Newer manifests that were passed over, with the reason.
    pub rejected: Vec<(String, String)>,
}
