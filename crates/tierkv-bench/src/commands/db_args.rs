//! The database flags of the tool subcommands ([`DbArgs`]) and how they open a database: with
//! what it recorded at creation (design, level count, WAL tier, PM pool path).

use super::*;

/// The database flags shared by the tool subcommands.
#[derive(clap::Args, Clone, Debug, PartialEq)]
pub struct DbArgs {
    /// The database directory.
    #[arg(long)]
    pub db: PathBuf,
    /// The design: for an existing database, the one it was created with (read from its
    /// manifest; giving another one is an error); for `put` into a new one, the design to
    /// create it with (default `leveled`).
    #[arg(long, value_parser = |s: &str| Design::from_str(s).map_err(|e| e.to_string()))]
    pub design: Option<Design>,
    /// The PM pool file, for designs that use PM. For a new database, default `pm.pool` in
    /// the database directory; another path is recorded in the database. For an existing one,
    /// default the path it recorded; give it only when the pool moved (the new path is then
    /// recorded).
    #[arg(long = "pm_path")]
    pub pm_path: Option<PathBuf>,
    /// Sets one engine option for this open, as `tierkv bench --set` does (PATH=VALUE, e.g.
    /// `pm.manifest_on_pm=false`); applied after the design's defaults and what the database
    /// recorded. Repeatable.
    #[arg(long = "set", value_name = "PATH=VALUE", value_parser = OptionOverride::from_str)]
    pub set: Vec<OptionOverride>,
    /// Opens without writing one byte to the directory or the PM pool (`Options::read_only`):
    /// for `get`, `scan`, `stats` and `check` of a database on a full or read-only file
    /// system. Refused while a writer has the database open; writes are refused.
    #[arg(long = "read_only")]
    pub read_only: bool,
}

impl DbArgs {
    /// Options to open the database; only `put` may create it. The design's defaults apply
    /// (as in `tierkv bench`). For an existing database the design, level count and WAL tier
    /// come from its manifest, so every database opens whatever it was created with (a
    /// `leveled` one with `--wal_on_pm`, say), and its manifest stays where it is.
    pub fn options(&self, create_if_missing: bool) -> EngineResult<Options> {
        let mut o = Options {
            design: self.design.unwrap_or(Design::LEVELED),
            create_if_missing,
            ..Options::default()
        };
        // Without --pm_path the engine opens the pool the manifest names (or `pm.pool` in the
        // directory).
        o.pm.path = self.pm_path.clone();
        // A manifest in a pool that is not where CURRENT says: the engine's error names the
        // pool (opening with a guessed design would report the design instead).
        if let Err(e @ tierkv::Error::NotFound(_)) = self.describe() {
            return Err(e.into());
        }
        let described = self.describe();
        if let (Err(_), None) = (&described, self.design) {
            // A pool that cannot be read (damaged, truncated) behind a `CURRENT` that names
            // the design: open with that design, so that the engine reports the pool's damage
            // and not a design mismatch.
            if let Some(design) = self.design_in_current() {
                o.design = design;
            }
        }
        if let Ok(created) = described {
            let design = Design::from_str(&created.design)?;
            if self.design.is_some_and(|d| d != design) {
                return Err(format!(
                    "database {} was created with design {design}, not {}",
                    self.db.display(),
                    o.design
                )
                .into());
            }
            o.design = design;
            o = design.options(o);
            created.apply_to(&mut o);
            // The manifest stays where it is (`--set=pm.manifest_on_pm=...` moves it).
            o.pm.manifest_on_pm = Some(created.manifest_on_pm);
        } else {
            o = o.design.options(o);
        }
        o.read_only = self.read_only;
        Ok(apply_overrides(&o, &self.set)?)
    }

    /// The design a `CURRENT` of a manifest in the pool names (its `design` line), if any.
    fn design_in_current(&self) -> Option<Design> {
        let text = std::fs::read_to_string(self.db.join("CURRENT")).ok()?;
        if !text.starts_with("pm:") {
            return None;
        }
        text.lines()
            .find_map(|l| l.strip_prefix("design "))
            .and_then(|d| Design::from_str(d.trim()).ok())
    }

    /// What the database recorded at creation, when `--db` holds one.
    pub(super) fn created(&self) -> Option<CreationFields> {
        self.describe().ok()
    }

    fn describe(&self) -> tierkv::Result<CreationFields> {
        Db::describe_with_pool(&self.db, &tierkv::fs::PosixFs, self.pm_path.as_deref())
    }

    /// The pool file the database is opened with: `--pm_path`, else the recorded path, else
    /// `pm.pool` in the directory (as the engine resolves it); `None` without PM.
    pub(super) fn pool_path(
        &self,
        options: &Options,
        created: Option<&CreationFields>,
    ) -> Option<PathBuf> {
        if !options.design.uses_pm(options) {
            return None;
        }
        let recorded = created.and_then(|c| c.pm_path.clone());
        Some(
            self.pm_path
                .clone()
                .or(recorded)
                .unwrap_or_else(|| self.db.join("pm.pool")),
        )
    }

    pub(super) fn open(&self, create_if_missing: bool) -> EngineResult<Db> {
        let db = Db::open(&self.db, self.options(create_if_missing)?).map_err(|e| {
            let read_only_fs = matches!(&e, tierkv::Error::Io { source, .. }
                if source.kind() == std::io::ErrorKind::ReadOnlyFilesystem);
            let hint = if read_only_fs && !self.read_only {
                " (the file system is read-only: give --read_only to read the database)"
            } else {
                ""
            };
            format!("opening database {}: {e}{hint}", self.db.display())
        })?;
        if let Some(reason) = db.read_only_reason() {
            eprintln!(
                "warning: database {} is open read-only: {reason}; reads work, writes are \
                 refused until the pool is grown (`tierkv grow-pool --db {} --size BYTES`) or \
                 space is freed",
                self.db.display(),
                self.db.display()
            );
        }
        Ok(db)
    }
}
