//! Opening a PM pool: the identity check, the owners of its chunks, one allocator rebuild.
//!
//! A pool holds several structures (today the file system [`PmFs`]; persistent trees,
//! memtables, sorted arrays or per-thread logs next), each found through a *named root* in the
//! pool's root directory (`tierkv_pm`'s `roots.rs`, in chunk 0), which also records the
//! identity of the database the pool belongs to. Each structure is a [`PmOwner`]: it opens
//! itself from its root and reports the chunks it references. The pool's allocator is volatile,
//! so it must be rebuilt at every open from the chunks of EVERY structure at once: a structure
//! left out would have its chunks handed out again. [`open_pm_owners`] is that protocol:
//!
//! 1. **Root directory.** Read and validated (damage is `Corruption` naming it). Its identity
//!    is compared with the database's before any owner reads anything: a pool of another
//!    database opened for an existing database is refused (`InvalidArgument`, "another
//!    database"); a pool never bound is corruption for an existing database. A root no owner
//!    claims is refused too (its chunks would be freed).
//! 2. **Owners open, read-only.** Each owner whose root is present opens its structure
//!    without writing or allocating and reports its chunks; an owner whose root is absent is
//!    asked whether it may be created ([`PmOwner::missing`]). Chunks are checked (a chunk of
//!    the pool, not chunk 0) and a chunk claimed twice, by two owners or by one, is
//!    `Corruption` naming both claims.
//! 3. **Binding.** A database being created binds an unbound pool to its identity, or takes
//!    over a pool of another database none of whose owners holds anything (a creation that
//!    stopped before its manifest existed): identity replaced and every root dropped in ONE
//!    failure-atomic root-directory update, after which every owner counts as missing.
//!    Otherwise (a pool of another database holding something) it is refused with
//!    `InvalidArgument` naming what the pool holds.
//! 4. **Rebuild**, once, from the union of the owners' chunks. Nothing was allocated before.
//! 5. **Missing owners are created** ([`PmOwner::create`]), each persisting its new structure
//!    before its root is published in the root directory (one failure-atomic update per owner).
//!
//! Persist points and the invariant at each (steps 1, 2 and 4 write nothing):
//! * binding (step 3): one root-directory update. Before it is durable the pool is as it was
//!   (unbound, or another database's and holding nothing): the next creation binds or takes it
//!   over again. After it, the pool is this database's and holds no root, so every chunk is
//!   free at the next open.
//! * an owner's creation (step 5): its chunks are allocated after the rebuild and persisted by
//!   the owner; until its root is published they are referenced by no root, so a crash leaves
//!   them free at the next open (nothing leaks) and the owner missing (created again).
//! * the root's publish: after it, the structure is found at every open.
//!
//! Thread safety: the protocol runs on one thread before the structures are shared; owners
//! are `&mut`.

use crate::{Error, Result};
use std::collections::HashMap;
use tierkv_pm::PmPool;

/// How a pool is opened, with the identity of the database opening it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PmFsOpen {
    /// A database being created: a pool never bound gets bound to this identity; a pool bound
    /// to another database is taken over only if none of its owners holds anything (a
    /// creation that crashed before its manifest existed); otherwise the open is refused.
    Create(u128),
    /// An existing database: the pool must be bound to this identity.
    Existing(u128),
}

impl PmFsOpen {
    /// The identity of the database opening the pool.
    pub fn identity(self) -> u128 {
        match self {
            PmFsOpen::Create(id) | PmFsOpen::Existing(id) => id,
        }
    }
}

/// A structure that keeps chunks in a PM pool, found through a named root in the pool's root
/// directory. See the module docs for the protocol that calls these methods, in this order:
/// [`PmOwner::open`] or [`PmOwner::missing`] (before the allocator is rebuilt), then
/// [`PmOwner::create`] for a missing structure (after it).
pub trait PmOwner {
    /// The name of its root: 1 to [`tierkv_pm::ROOT_NAME_MAX`] printable ASCII bytes, distinct
    /// among the owners opened together.
    fn root_name(&self) -> &str;

    /// Opens the structure published at `root`, READING the pool only: no write, no
    /// allocation (the allocator is not rebuilt yet). Returns every chunk the structure
    /// references (their offsets). Damage is [`Error::Corruption`].
    fn open(&mut self, root: u64) -> Result<Vec<u64>>;

    /// After [`PmOwner::open`]: a description of what the structure holds for its database
    /// (e.g. "3 files"), or `None` if it holds nothing (then a database being created may take
    /// the pool over).
    fn holdings(&self) -> Option<String>;

    /// The root directory has no root of this name: `Ok` to have the structure created after
    /// the rebuild, or the error that refuses the open (a structure an existing database cannot
    /// be without). Must not write. The default accepts.
    fn missing(&mut self, how: PmFsOpen) -> Result<()> {
        let _ = how;
        Ok(())
    }

    /// Creates the structure, empty, after the allocator was rebuilt from every owner's chunks
    /// (so it allocates only free chunks), persists it and returns its root, which the protocol
    /// then publishes under [`PmOwner::root_name`]. Also called, after a takeover, on an owner
    /// that was opened: the structure it opened belongs to nobody any more.
    fn create(&mut self) -> Result<u64>;
}

/// What [`open_pm_owners`] found and did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PmOpenReport {
    /// Per owner (in the order given): its root name and the chunks it reported at open (0 for
    /// an owner that was created).
    pub chunks: Vec<(String, u64)>,
    /// Owners created by this open, in the order given.
    pub created: Vec<String>,
    /// The pool was taken over from another database whose owners held nothing.
    pub took_over: bool,
}

/// Runs the open protocol (module docs) on `pool` for the database `how` names, with every
/// owner of the pool's chunks. `location` names the pool in errors.
pub fn open_pm_owners(
    pool: &PmPool,
    location: &str,
    how: PmFsOpen,
    owners: &mut [&mut dyn PmOwner],
) -> Result<PmOpenReport> {
    let identity = how.identity();
    let names: Vec<String> = owners.iter().map(|o| o.root_name().to_string()).collect();
    check_owner_names(&names)?;
    // 1. The root directory and the identity, before any owner reads anything.
    let table = pool.root_table()?;
    let foreign = check_identity(&table, how, location, &names)?;
    // 2. Owners open read-only and report their chunks.
    let mut report = PmOpenReport::default();
    let (mut claims, mut missing) =
        collect_claims(pool, location, how, &table, owners, &names, &mut report)?;
    // 3. Binding: a first binding, or the takeover of another database's empty pool.
    if let Some(other) = foreign {
        let held: Vec<String> = owners
            .iter()
            .enumerate()
            .filter(|(i, _)| !missing.contains(i))
            .filter_map(|(i, o)| o.holdings().map(|h| format!("{}: {h}", names[i])))
            .collect();
        if !held.is_empty() {
            return Err(another_database(
                location,
                other,
                identity,
                &format!("; the pool holds its {}", held.join(", ")),
            ));
        }
        pool.update_root_table(|t| {
            t.identity = Some(identity);
            t.roots.clear();
            // The new database claims the pool for its directory after the open.
            t.owner = None;
            t.epoch = 0;
            t.epoch_pending = false;
        })?;
        claims.clear();
        missing = (0..owners.len()).collect();
        for c in &mut report.chunks {
            c.1 = 0;
        }
        report.took_over = true;
    } else if table.identity.is_none() {
        pool.update_root_table(|t| t.identity = Some(identity))?;
    }
    // 4. One rebuild, from every owner's chunks.
    let mut live: Vec<u64> = claims.into_keys().collect();
    live.sort_unstable();
    pool.rebuild_allocator(&live)?;
    // 5. Missing owners are created, then published.
    for i in missing {
        let root = owners[i].create()?;
        pool.set_named_root(&names[i], root)?;
        report.created.push(names[i].clone());
    }
    Ok(report)
}

fn check_owner_names(names: &[String]) -> Result<()> {
    for (i, name) in names.iter().enumerate() {
        tierkv_pm::check_root_name(name)?;
        if names[..i].contains(name) {
            return Err(Error::InvalidArgument(format!(
                "two PM owners use the root name {name:?}"
            )));
        }
    }
    Ok(())
}

fn another_database(location: &str, other: u128, identity: u128, holds: &str) -> Error {
    Error::InvalidArgument(format!(
        "{location} belongs to another database (pool identity {other:032x}, this database's \
         identity {identity:032x}{holds}); give the pool this database was created with"
    ))
}

/// Step 1: the pool's identity against the database's. Returns the identity of another
/// database whose pool a creating database may take over (if nothing in it is held), `None`
/// when the pool is this database's or bound to none; refuses every other case.
fn check_identity(
    table: &tierkv_pm::RootTable,
    how: PmFsOpen,
    location: &str,
    names: &[String],
) -> Result<Option<u128>> {
    let identity = how.identity();
    let foreign = match table.identity {
        Some(id) if id == identity => None,
        Some(other) => Some(other),
        None if !table.roots.is_empty() => {
            return Err(Error::corruption(
                location,
                format!(
                    "the root directory holds {} named roots but no database identity",
                    table.roots.len()
                ),
            ))
        }
        None => match how {
            PmFsOpen::Create(_) => None,
            PmFsOpen::Existing(_) => {
                return Err(Error::corruption(
                    location,
                    "the PM pool belongs to no database (this database's pool was replaced \
                     or never written)",
                ))
            }
        },
    };
    if let (Some(other), PmFsOpen::Existing(_)) = (foreign, how) {
        return Err(another_database(location, other, identity, ""));
    }
    let unclaimed: Vec<&String> = table.roots.keys().filter(|n| !names.contains(n)).collect();
    if !unclaimed.is_empty() {
        let what =
            format!("holds structures under roots {unclaimed:?} that this database does not open");
        return Err(match foreign {
            Some(other) => {
                another_database(location, other, identity, &format!("; the pool {what}"))
            }
            None => Error::InvalidArgument(format!(
                "{location} {what} (their chunks would be freed); open it with the design \
                 that created it"
            )),
        });
    }
    Ok(foreign)
}

/// Step 2: every owner with a root opens read-only and reports its chunks (each a chunk of the
/// pool, claimed once); owners without one are noted as missing.
fn collect_claims(
    pool: &PmPool,
    location: &str,
    how: PmFsOpen,
    table: &tierkv_pm::RootTable,
    owners: &mut [&mut dyn PmOwner],
    names: &[String],
    report: &mut PmOpenReport,
) -> Result<(HashMap<u64, usize>, Vec<usize>)> {
    let chunk = pool.chunk_size();
    let mut claims: HashMap<u64, usize> = HashMap::new();
    let mut missing = Vec::new();
    for (i, owner) in owners.iter_mut().enumerate() {
        let name = &names[i];
        let Some(&root) = table.roots.get(name) else {
            owner.missing(how)?;
            missing.push(i);
            report.chunks.push((name.clone(), 0));
            continue;
        };
        let chunks = owner.open(root)?;
        for &c in &chunks {
            if !c.is_multiple_of(chunk) || c == 0 || c >= pool.size() {
                return Err(Error::corruption(
                    location,
                    format!(
                        "PM structure {name:?} references offset {c}, which is not a chunk \
                         of the pool"
                    ),
                ));
            }
            if let Some(first) = claims.insert(c, i) {
                return Err(Error::corruption(
                    location,
                    format!(
                        "the chunk at offset {c} is claimed by both PM structures {:?} and \
                         {name:?}",
                        names[first]
                    ),
                ));
            }
        }
        report.chunks.push((name.clone(), chunks.len() as u64));
    }
    Ok((claims, missing))
}
