//! `CURRENT`: the one file of the database directory that says which manifest is live, and
//! where it is.
//!
//! ```text
//! a manifest in the directory:   MANIFEST-NNNNNN\n
//! a manifest in the PM pool:     pm:MANIFEST-NNNNNN\n
//!                                design <design name>\n
//!                                identity <32 lower-case hex digits>\n
//!                                [pool <absolute path of the pool file>\n]
//! ```
//!
//! A manifest in the pool (`pm.manifest_on_pm`) can only be read once the pool is open, and
//! opening a pool needs what the manifest would otherwise say: where the pool is (`pool`,
//! absent for `pm.pool` in the directory or a pool given as an object), which database it must
//! belong to (`identity`: the pool's root directory must carry it, so a `CURRENT` pointing at
//! another database's pool is refused before anything is read), and which structures the
//! design keeps in it (`design`). The manifest repeats all three; an open checks that they
//! agree. The file is replaced atomically (temporary file, sync, rename, directory sync), so it
//! is always one whole version of the above. Anything else in it is corruption.

use super::{parse_file_name, FileKind};
use crate::fs::FileSystem;
use crate::stats::{Counters, IoPurpose, Part};
use crate::tier::Tier;
use crate::{Error, Result};
use std::path::{Path, PathBuf};

/// Path of `CURRENT`.
pub fn current_file_name(dir: &Path) -> PathBuf {
    dir.join("CURRENT")
}

/// What `CURRENT` says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Current {
    /// Manifest `number`, in the database directory.
    Directory(u64),
    /// Manifest `number`, a file of the database's PM pool.
    Pool {
        /// The manifest's number.
        number: u64,
        /// The database's design (which structures its pool holds).
        design: String,
        /// The database's identity, which the pool must carry.
        identity: u128,
        /// The pool file's absolute path; `None` for `pm.pool` in the database directory (or
        /// a pool given as an object).
        pool: Option<PathBuf>,
    },
}

impl Current {
    /// The live manifest's number.
    pub fn number(&self) -> u64 {
        match self {
            Current::Directory(n) | Current::Pool { number: n, .. } => *n,
        }
    }

    /// The tier the live manifest is on.
    pub fn tier(&self) -> Tier {
        match self {
            Current::Directory(_) => Tier::Ssd,
            Current::Pool { .. } => Tier::Pm,
        }
    }

    /// The live manifest's file name (`MANIFEST-NNNNNN`).
    pub fn manifest_name(&self) -> String {
        format!("MANIFEST-{:06}", self.number())
    }

    /// The file's contents. A pool path that is not UTF-8 or holds a line break cannot be
    /// written into it (`InvalidArgument`).
    pub fn encode(&self) -> Result<String> {
        Ok(match self {
            Current::Directory(_) => format!("{}\n", self.manifest_name()),
            Current::Pool {
                design,
                identity,
                pool,
                ..
            } => {
                let mut s = format!(
                    "pm:{}\ndesign {design}\nidentity {identity:032x}\n",
                    self.manifest_name()
                );
                if let Some(path) = pool {
                    let text = path.to_str().filter(|t| !t.contains('\n')).ok_or_else(|| {
                        Error::InvalidArgument(format!(
                            "the PM pool path {} cannot be recorded in CURRENT (it must be \
                             UTF-8 without line breaks to keep the manifest in the pool)",
                            path.display()
                        ))
                    })?;
                    s.push_str(&format!("pool {text}\n"));
                }
                s
            }
        })
    }

    /// Parses the file's contents; `location` names it in errors.
    pub fn parse(data: &[u8], location: &str) -> Result<Current> {
        let bad = |why: &str| Error::corruption(location, why.to_string());
        let text = std::str::from_utf8(data).map_err(|_| bad("not a manifest name"))?;
        let body = text
            .strip_suffix('\n')
            .ok_or_else(|| bad("not a manifest name"))?;
        let mut lines = body.split('\n');
        let first = lines.next().unwrap_or_default();
        let (in_pool, name) = match first.strip_prefix("pm:") {
            Some(name) => (true, name),
            None => (false, first),
        };
        let number = match parse_file_name(name) {
            Some((FileKind::Manifest, n)) if name == format!("MANIFEST-{n:06}") => n,
            _ => return Err(bad("not a manifest name")),
        };
        if !in_pool {
            return match lines.next() {
                None => Ok(Current::Directory(number)),
                Some(_) => Err(bad("not a manifest name")),
            };
        }
        let mut field = |key: &str| -> Result<Option<&str>> {
            match lines.next() {
                None => Ok(None),
                Some(line) => match line.strip_prefix(key).and_then(|v| v.strip_prefix(' ')) {
                    Some(v) if !v.is_empty() => Ok(Some(v)),
                    _ => Err(bad(&format!("expected a {key} line, found {line:?}"))),
                },
            }
        };
        let design = field("design")?
            .ok_or_else(|| bad("no design line after a manifest in the PM pool"))?
            .to_string();
        let identity = field("identity")?
            .filter(|v| v.len() == 32)
            .and_then(|v| u128::from_str_radix(v, 16).ok())
            .filter(|id| *id != 0)
            .ok_or_else(|| bad("no valid identity line after a manifest in the PM pool"))?;
        let pool = field("pool")?.map(PathBuf::from);
        if lines.next().is_some() {
            return Err(bad("lines after the pool line"));
        }
        Ok(Current::Pool {
            number,
            design,
            identity,
            pool,
        })
    }
}

/// Reads and parses `CURRENT` of `dir` (an I/O error as is: `NotFound` when there is none).
pub fn read_current(fs: &dyn FileSystem, dir: &Path, counters: &Counters) -> Result<Current> {
    let path = current_file_name(dir);
    let data = fs.read_all(&path)?;
    counters.add_read(Tier::Ssd, Part::Db, IoPurpose::Recovery, data.len() as u64);
    Current::parse(&data, &path.display().to_string())
}

/// Points `CURRENT` of `dir` at `current`: write a temporary file, sync, rename, sync the
/// directory.
pub(crate) fn set_current(
    fs: &dyn FileSystem,
    dir: &Path,
    current: &Current,
    counters: &Counters,
) -> Result<()> {
    let contents = current.encode()?;
    let tmp = dir.join(format!("{:06}.dbtmp", current.number()));
    let mut f = fs.create(&tmp)?;
    f.append(contents.as_bytes())?;
    f.sync()?;
    drop(f);
    fs.rename(&tmp, &current_file_name(dir))?;
    fs.sync_dir(dir)?;
    counters.add_written(
        Tier::Ssd,
        Part::Db,
        IoPurpose::Manifest,
        contents.len() as u64,
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(pool: Option<&str>) -> Current {
        Current::Pool {
            number: 12,
            design: "fluidkv".into(),
            identity: 0x0123_4567_89ab_cdef_0011_2233_4455_6677,
            pool: pool.map(PathBuf::from),
        }
    }

    #[test]
    fn round_trips() {
        for c in [
            Current::Directory(5),
            Current::Directory(1_234_567),
            pool(None),
            pool(Some("/dev/shm/a b.pool")),
        ] {
            let text = c.encode().unwrap();
            assert_eq!(Current::parse(text.as_bytes(), "CURRENT").unwrap(), c);
        }
        assert_eq!(Current::Directory(5).encode().unwrap(), "MANIFEST-000005\n");
        assert_eq!(
            pool(Some("/p")).encode().unwrap(),
            "pm:MANIFEST-000012\ndesign fluidkv\nidentity 0123456789abcdef0011223344556677\n\
             pool /p\n"
        );
        assert_eq!(pool(None).tier(), Tier::Pm);
        assert_eq!(Current::Directory(3).tier(), Tier::Ssd);
    }

    #[test]
    fn anything_else_is_corruption() {
        let good = pool(Some("/p")).encode().unwrap();
        let mut cases: Vec<String> = vec![
            String::new(),
            "MANIFEST-000005".into(),
            "MANIFEST-5\n".into(),
            "MANIFEST-000005\nextra\n".into(),
            "pm:MANIFEST-000012\n".into(),
            "pm:MANIFEST-000012\ndesign fluidkv\n".into(),
            "pm:MANIFEST-000012\ndesign fluidkv\nidentity 12\n".into(),
            "pm:MANIFEST-000012\ndesign fluidkv\nidentity 00000000000000000000000000000000\n"
                .into(),
            "pm:MANIFEST-000012\ndesign \nidentity 0123456789abcdef0011223344556677\n".into(),
            "pm:000012.sst\ndesign fluidkv\nidentity 0123456789abcdef0011223344556677\n".into(),
            format!("{good}more\n"),
            good.replace("pool /p", "pool "),
            good.replace("design", "desing"),
        ];
        // Every truncation of a valid file that drops its final line break.
        for cut in 1..good.len() {
            if good.as_bytes()[cut - 1] != b'\n' {
                cases.push(good[..cut].to_string());
            }
        }
        for case in cases {
            match Current::parse(case.as_bytes(), "CURRENT") {
                Err(Error::Corruption { location, .. }) => assert_eq!(location, "CURRENT"),
                other => panic!("{case:?}: {other:?}"),
            }
        }
        assert!(Current::parse(&[0xff, b'\n'], "CURRENT").is_err());
    }

    #[test]
    fn a_pool_path_that_cannot_be_written_is_refused() {
        let e = pool(Some("/a\nb")).encode().unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    }
}
