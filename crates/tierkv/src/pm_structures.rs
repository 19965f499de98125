//! The engine's structures in a PM pool opened together: the file system and, by design,
//! SLM-DB's global index, LAB-DB's L0 trees and ListDB's heap, each a [`PmOwner`] of the
//! pool's chunks, through the open protocol of [`crate::fs::open_pm_owners`] (one allocator
//! rebuild from every owner's chunks). A structure added to the engine is added here.

use crate::fs::{open_pm_owners, EmptyManifestTest, PmFs, PmFsOpen, PmFsOwner, PmOwner};
use crate::Result;
use std::sync::Arc;
use tierkv_pm::PmPool;

/// The engine's structures in a PM pool, opened together by [`open_pm_structures`].
pub struct PmStructures {
    /// The file system (root "pmfs"): WALs and PM-resident tables.
    pub pmfs: PmFs,
    /// SLM-DB's global index (root `slmdb-index`), when the design keeps one.
    pub(crate) index: Option<crate::pbtree::PbTree>,
    /// LAB-DB's two L0 tree roots (`labdb-tree-0`, `labdb-tree-1`), when the design has them.
    pub(crate) lab_trees: Option<[crate::pbtree::PbTree; 2]>,
    /// ListDB's heap (root `listdb-heap`) and its log entries to replay, when the design
    /// keeps one.
    pub(crate) lists: Option<crate::plist::OpenedHeap>,
}

/// Which structures besides the file system a design keeps in its pool, each with whether
/// it is opened writable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PmKinds {
    /// SLM-DB's global index.
    pub index: Option<bool>,
    /// Whether the global index keeps its inner nodes in PM (else in DRAM).
    pub index_inner_in_pm: bool,
    /// LAB-DB's L0 trees.
    pub lab: Option<bool>,
    /// ListDB's heap.
    pub lists: Option<bool>,
}

/// Opens every structure the engine keeps in `pool` (the file system, and what `kinds`
/// names) with the protocol of [`open_pm_owners`], for the database `how` names; `empty_manifest`
/// tells which of the file system's manifests hold no data ([`EmptyManifestTest`]). The engine's
/// one entry point to a pool: a structure added to the engine is added here, so that the
/// allocator is always rebuilt from all of them.
pub fn open_pm_structures(
    pool: &Arc<PmPool>,
    location: &str,
    how: PmFsOpen,
    kinds: PmKinds,
    empty_manifest: EmptyManifestTest,
) -> Result<PmStructures> {
    use crate::pbtree::{InnerKind, Layout, PbTreeOwner};
    let mut pmfs = PmFsOwner::new(Arc::clone(pool), location, how.identity())?
        .with_empty_manifest_test(empty_manifest);
    let mut index = kinds.index.map(|_| {
        let inner = if kinds.index_inner_in_pm {
            InnerKind::Pm
        } else {
            InnerKind::Dram
        };
        PbTreeOwner::with_layout(
            Arc::clone(pool),
            location,
            crate::gindex::ROOT_NAME,
            Layout::Objects,
            inner,
        )
    });
    let mut lab = kinds.lab.map(|_| {
        crate::labdb::l0::TREE_ROOTS.map(|name| {
            PbTreeOwner::with_layout(
                Arc::clone(pool),
                location,
                name,
                Layout::Inline,
                InnerKind::Dram,
            )
        })
    });
    let mut lists = kinds
        .lists
        .map(|_| crate::plist::HeapOwner::new(Arc::clone(pool), location));
    let mut owners: Vec<&mut dyn PmOwner> = vec![&mut pmfs];
    if let Some(h) = lists.as_mut() {
        owners.push(h);
    }
    if let Some(t) = index.as_mut() {
        owners.push(t);
    }
    if let Some([a, b]) = lab.as_mut() {
        owners.push(a);
        owners.push(b);
    }
    open_pm_owners(pool, location, how, &mut owners)?;
    let index = match (index, kinds.index) {
        (Some(t), Some(writable)) => Some(t.into_tree(writable)?),
        _ => None,
    };
    let lab_trees = match (lab, kinds.lab) {
        (Some([a, b]), Some(writable)) => Some([a.into_tree(writable)?, b.into_tree(writable)?]),
        _ => None,
    };
    let lists = match (lists, kinds.lists) {
        (Some(h), Some(writable)) => Some(h.into_heap(writable)?),
        _ => None,
    };
    Ok(PmStructures {
        pmfs: pmfs.into_fs(),
        index,
        lab_trees,
        lists,
    })
}

/// The PM tier of a database whose design uses it.
pub(crate) struct PmTier {
    pub pool: Arc<tierkv_pm::PmPool>,
    /// The pool's file system, as the `FileSystem` the engine's files go through.
    pub fs: Arc<dyn crate::fs::FileSystem>,
    /// The same file system, for its PM-specific calls (space, the spare chunk).
    pub pmfs: crate::fs::PmFs,
    /// The most chunks one WAL may hold before its memtable is rotated (0: WAL not on PM).
    pub wal_chunk_cap: u64,
    /// The global index's tree, for a design that keeps one (SLM-DB).
    pub index: Option<Arc<crate::pbtree::PbTree>>,
    /// LAB-DB's two L0 trees as opened, until the stage attaches them at open.
    pub lab_trees: parking_lot::Mutex<Option<[crate::pbtree::PbTree; 2]>>,
    /// ListDB's heap and its log entries to replay, until the front end takes them at open.
    pub lists: parking_lot::Mutex<Option<crate::plist::OpenedHeap>>,
    /// How errors name the pool (its path, or "PM pool (given)").
    pub location: String,
    /// The pool file, when the pool was opened from a path.
    pub path: Option<std::path::PathBuf>,
    /// Lock on the pool file, when the pool was opened from a path.
    pub _lock: Option<Box<dyn crate::fs::FileLock>>,
}
