//! What `--design` takes: a design ([`DesignChoice`]: a TierKV design or RocksDB), a variant of
//! one reported under its own label with option overrides ([`DesignEntry`], split by
//! [`parse_entry_syntax`]), and the comma-separated list of entries ([`DesignList`]).

use super::*;

/// A design `tierkv bench` can run: one of TierKV's [`Design`]s, or RocksDB (which needs the
/// `rocksdb` cargo feature to run). Named as on the command line (`leveled`, `rocksdb`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DesignChoice {
    /// A TierKV design.
    Tierkv(Design),
    /// RocksDB through the `rocksdb` crate.
    Rocksdb,
}

impl DesignChoice {
    /// The CLI name.
    pub fn name(self) -> &'static str {
        match self {
            DesignChoice::Tierkv(d) => d.name(),
            DesignChoice::Rocksdb => "rocksdb",
        }
    }
}

impl fmt::Display for DesignChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for DesignChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if s == "rocksdb" {
            return Ok(DesignChoice::Rocksdb);
        }
        Design::from_str(s).map(DesignChoice::Tierkv).map_err(|_| {
            let known: Vec<_> = Design::ALL.iter().map(|d| d.name()).collect();
            format!(
                "unknown design {s:?}; known designs: {}, rocksdb",
                known.join(", ")
            )
        })
    }
}

impl Serialize for DesignChoice {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for DesignChoice {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        DesignChoice::from_str(&s).map_err(serde::de::Error::custom)
    }
}

/// The parts of one `--design` entry as written, before the design is looked up: `DESIGN`, or
/// a variant `LABEL=DESIGN+PATH=VALUE+PATH=VALUE...`.
#[derive(Clone, Debug, PartialEq)]
pub struct EntrySyntax {
    /// The name the entry is reported under: LABEL, or the design's name.
    pub label: String,
    /// The design's name.
    pub design: String,
    /// The variant's overrides, in order.
    pub overrides: Vec<OptionOverride>,
}

/// True for a label usable as a directory and file-name part: letters, digits, `.`, `_`, `-`
/// (not `.` or `..`), at most 64 characters.
fn valid_label(label: &str) -> bool {
    !label.is_empty()
        && label.len() <= 64
        && label != "."
        && label != ".."
        && label
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// Splits a `--design` entry into its label, design name and overrides (nothing is looked up,
/// so this works for designs the build does not have).
pub fn parse_entry_syntax(entry: &str) -> Result<EntrySyntax, String> {
    let entry = entry.trim();
    let mut parts = split_top_level(entry, '+').into_iter();
    let head = parts.next().unwrap_or_default().trim();
    let overrides = parts
        .map(|p| {
            p.trim()
                .parse::<OptionOverride>()
                .map_err(|e| format!("design entry {entry:?}: {e}"))
        })
        .collect::<Result<Vec<_>, String>>()?;
    let (label, design) = match head.split_once('=') {
        Some((l, d)) => (l.trim(), d.trim()),
        None if overrides.is_empty() => (head, head),
        None => {
            return Err(format!(
                "design entry {entry:?} has overrides but no label: write \
                 LABEL={head}+PATH=VALUE..."
            ))
        }
    };
    if design.is_empty() {
        return Err(format!("design entry {entry:?} names no design"));
    }
    if !valid_label(label) {
        return Err(format!(
            "design entry {entry:?}: label {label:?} must be 1-64 letters, digits, '.', '_' or \
             '-' (it names the design's database directory and pool file)"
        ));
    }
    Ok(EntrySyntax {
        label: label.to_string(),
        design: design.to_string(),
        overrides,
    })
}

/// One entry of `--design`: a design, or a variant of one (the design with option overrides,
/// reported under its own label).
#[derive(Clone, Debug, PartialEq)]
pub struct DesignEntry {
    /// The name in every report, the database directory and the pool file suffix: the
    /// design's name, or the variant's LABEL.
    pub label: String,
    /// The design run.
    pub design: DesignChoice,
    /// The variant's overrides, applied after `--set`.
    pub overrides: Vec<OptionOverride>,
}

impl DesignEntry {
    /// The plain entry of `design`.
    pub fn plain(design: DesignChoice) -> Self {
        DesignEntry {
            label: design.name().to_string(),
            design,
            overrides: Vec::new(),
        }
    }

    /// True for an entry that is more than a design's name.
    pub fn is_variant(&self) -> bool {
        !self.overrides.is_empty() || self.label != self.design.name()
    }
}

impl fmt::Display for DesignEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.is_variant() {
            return f.write_str(self.design.name());
        }
        write!(f, "{}={}", self.label, self.design)?;
        for o in &self.overrides {
            write!(f, "+{o}")?;
        }
        Ok(())
    }
}

impl FromStr for DesignEntry {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let syntax = parse_entry_syntax(s)?;
        let design = DesignChoice::from_str(&syntax.design).map_err(|e| {
            if syntax.label == syntax.design && syntax.overrides.is_empty() {
                e
            } else {
                format!("design entry {:?}: {e}", s.trim())
            }
        })?;
        Ok(DesignEntry {
            label: syntax.label,
            design,
            overrides: syntax.overrides,
        })
    }
}

/// The entries of `--design`, in order. Serialized as an array of the entries as written
/// (`["leveled", "l0-8=leveled+compaction.level0_compaction_trigger=8"]`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DesignList(pub Vec<DesignEntry>);

impl DesignList {
    /// The plain entries of `designs`.
    pub fn of(designs: &[DesignChoice]) -> Self {
        DesignList(designs.iter().map(|d| DesignEntry::plain(*d)).collect())
    }
}

impl std::ops::Deref for DesignList {
    type Target = Vec<DesignEntry>;
    fn deref(&self) -> &Vec<DesignEntry> {
        &self.0
    }
}

impl std::ops::DerefMut for DesignList {
    fn deref_mut(&mut self) -> &mut Vec<DesignEntry> {
        &mut self.0
    }
}

impl FromStr for DesignList {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s.trim().is_empty() {
            return Ok(DesignList::default());
        }
        split_top_level(s, ',')
            .into_iter()
            .map(|e| {
                if e.trim().is_empty() {
                    Err(format!("empty entry in the design list {s:?}"))
                } else {
                    e.parse()
                }
            })
            .collect::<Result<Vec<_>, String>>()
            .map(DesignList)
    }
}

impl Serialize for DesignList {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|e| e.to_string()))
    }
}

impl<'de> Deserialize<'de> for DesignList {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let entries = Vec::<String>::deserialize(d)?;
        entries
            .iter()
            .map(|e| e.parse().map_err(serde::de::Error::custom))
            .collect::<Result<Vec<_>, _>>()
            .map(DesignList)
    }
}
