//! Versions: which table files make up each level, and the manifest that logs every change.
//!
//! A [`Version`] is immutable; a change (flush, compaction) builds a new one from the current
//! one plus a [`VersionEdit`] and installs it atomically (see [`VersionSet::log_and_apply`]).
//! Readers hold an `Arc<Version>` for as long as they read, which keeps its files alive.
//!
//! Invariants of a version (checked by [`Version::check_invariants`]): L0 files are ordered by
//! file number (older first) and may overlap; in every level >= 1, files are sorted by smallest
//! key and their key ranges do not overlap.

mod edit;
mod set;

pub use edit::VersionEdit;
pub(crate) use set::set_current;
pub use set::{
    current_file_name, log_file_name, new_identity, parse_file_name, read_creation_fields,
    read_manifest_creation_fields, table_file_name, CreationFields, FileKind, VersionSet,
};

use crate::format::{compare_internal, user_key};
use crate::tier::Tier;
use crate::{Error, Result};
use std::sync::Arc;

/// What the manifest records about one table file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileMetaData {
    /// The file number (the file is `NNNNNN.sst`).
    pub number: u64,
    /// Size in bytes.
    pub file_size: u64,
    /// Number of entries.
    pub num_entries: u64,
    /// Smallest internal key.
    pub smallest: Vec<u8>,
    /// Largest internal key.
    pub largest: Vec<u8>,
    /// The tier holding the file.
    pub tier: Tier,
}

impl FileMetaData {
    /// Smallest user key.
    pub fn smallest_user_key(&self) -> &[u8] {
        user_key(&self.smallest)
    }
    /// Largest user key.
    pub fn largest_user_key(&self) -> &[u8] {
        user_key(&self.largest)
    }
    /// True if the file's user-key range intersects `[begin, end]` (`None` = unbounded).
    pub fn overlaps(&self, begin: Option<&[u8]>, end: Option<&[u8]>) -> bool {
        !(begin.is_some_and(|b| self.largest_user_key() < b)
            || end.is_some_and(|e| self.smallest_user_key() > e))
    }
}

/// The set of table files in each level at one point in time.
#[derive(Clone, Debug, Default)]
pub struct Version {
    /// Files per level; see the module invariants.
    pub levels: Vec<Vec<Arc<FileMetaData>>>,
}

impl Version {
    /// An empty version with `num_levels` levels.
    pub fn new(num_levels: usize) -> Self {
        Version {
            levels: vec![Vec::new(); num_levels],
        }
    }

    /// Total bytes in `level`.
    pub fn level_bytes(&self, level: usize) -> u64 {
        self.levels[level].iter().map(|f| f.file_size).sum()
    }

    /// Files in `level` whose user-key range intersects `[begin, end]`.
    pub fn overlapping(
        &self,
        level: usize,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Vec<Arc<FileMetaData>> {
        self.levels[level]
            .iter()
            .filter(|f| f.overlaps(begin, end))
            .cloned()
            .collect()
    }

    /// In a level >= 1, the only file that may hold `user_key`.
    pub fn file_for_key(&self, level: usize, key: &[u8]) -> Option<&Arc<FileMetaData>> {
        debug_assert!(level > 0);
        let files = &self.levels[level];
        let i = files.partition_point(|f| f.largest_user_key() < key);
        files.get(i).filter(|f| f.smallest_user_key() <= key)
    }

    /// Checks the module invariants; `Corruption` names the broken one.
    pub fn check_invariants(&self) -> Result<()> {
        for (level, files) in self.levels.iter().enumerate() {
            for f in files {
                if compare_internal(&f.smallest, &f.largest).is_gt() {
                    return Err(Error::corruption(
                        "manifest",
                        format!("file {} has smallest key > largest key", f.number),
                    ));
                }
            }
            for w in files.windows(2) {
                let ok = if level == 0 {
                    w[0].number < w[1].number
                } else {
                    w[0].largest_user_key() < w[1].smallest_user_key()
                };
                if !ok {
                    return Err(Error::corruption(
                        "manifest",
                        format!(
                            "level {level}: files {} and {} are out of order or overlap",
                            w[0].number, w[1].number
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Applies an edit, returning the new version (files sorted per the invariants).
    pub fn apply(&self, edit: &VersionEdit) -> Result<Version> {
        let mut v = self.clone();
        for &(level, number) in &edit.deleted_files {
            let files = v.levels.get_mut(level).ok_or_else(|| bad_level(level))?;
            let before = files.len();
            files.retain(|f| f.number != number);
            if files.len() == before {
                return Err(Error::corruption(
                    "manifest",
                    format!("edit deletes file {number} which is not in level {level}"),
                ));
            }
        }
        for (level, f) in &edit.new_files {
            let files = v.levels.get_mut(*level).ok_or_else(|| bad_level(*level))?;
            files.push(Arc::new(f.clone()));
        }
        for (level, files) in v.levels.iter_mut().enumerate() {
            if level == 0 {
                files.sort_by_key(|f| f.number);
            } else {
                files.sort_by(|a, b| compare_internal(&a.smallest, &b.smallest));
            }
        }
        v.check_invariants()?;
        Ok(v)
    }

    /// Every file number in the version.
    pub fn file_numbers(&self) -> impl Iterator<Item = u64> + '_ {
        self.levels.iter().flatten().map(|f| f.number)
    }
}

fn bad_level(level: usize) -> Error {
    Error::corruption(
        "manifest",
        format!("edit names level {level} beyond num_levels"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{make_internal_key, ValueType};

    fn meta(number: u64, a: &str, b: &str) -> FileMetaData {
        FileMetaData {
            number,
            file_size: 100,
            num_entries: 1,
            smallest: make_internal_key(a.as_bytes(), 1, ValueType::Value),
            largest: make_internal_key(b.as_bytes(), 1, ValueType::Value),
            tier: Tier::Ssd,
        }
    }

    #[test]
    fn apply_sorts_checks_and_finds() {
        let v = Version::new(3);
        let mut e = VersionEdit::default();
        e.new_files.push((1, meta(5, "m", "p")));
        e.new_files.push((1, meta(4, "a", "c")));
        e.new_files.push((0, meta(9, "a", "z")));
        e.new_files.push((0, meta(8, "b", "y")));
        let v = v.apply(&e).unwrap();
        assert_eq!(
            v.levels[0].iter().map(|f| f.number).collect::<Vec<_>>(),
            vec![8, 9]
        );
        assert_eq!(
            v.levels[1].iter().map(|f| f.number).collect::<Vec<_>>(),
            vec![4, 5]
        );
        assert_eq!(v.file_for_key(1, b"b").unwrap().number, 4);
        assert!(v.file_for_key(1, b"d").is_none());
        assert_eq!(v.file_for_key(1, b"p").unwrap().number, 5);
        assert_eq!(v.overlapping(1, Some(b"c"), Some(b"m")).len(), 2);
        assert_eq!(v.overlapping(1, Some(b"d"), Some(b"l")).len(), 0);
        // Overlap in L1 is rejected.
        let mut bad = VersionEdit::default();
        bad.new_files.push((1, meta(6, "b", "d")));
        assert!(v.apply(&bad).unwrap_err().is_corruption());
        // Deleting a file that is not there is rejected.
        let mut bad = VersionEdit::default();
        bad.deleted_files.push((2, 5));
        assert!(v.apply(&bad).is_err());
    }
}
