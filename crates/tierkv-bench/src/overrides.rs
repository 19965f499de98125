//! Option overrides: `tierkv bench --set PATH=VALUE` and the `+PATH=VALUE` parts of a design
//! variant (`--design 'l0-8=leveled+compaction.level0_compaction_trigger=8'`).
//!
//! An override sets one field of the engine's [`Options`] by its serde path (the field names of
//! the options JSON the run header and the report print, joined by dots). It is applied to the
//! serialized options after every flag and the design's defaults, and the result is
//! deserialized back, so every field the options serialize can be set and nothing else:
//!
//! * a path that does not name a field is an error naming the path and listing the fields
//!   where it went wrong;
//! * a value of another JSON type than the field's current value (a string for a number, `1`
//!   for a boolean) is an error, and so is a value the field's type refuses (`-1` for a count,
//!   an unknown enum variant);
//! * an object value sets each of its fields as its own path (`pm.latency={"write_ns":400}`
//!   sets `pm.latency.write_ns` only), so a misspelled field inside it is refused too;
//! * `design` cannot be set: `--design` chooses it.
//!
//! VALUE is read as JSON (`8`, `true`, `"text"`, `null`, `{"read_ns":100}`); anything that is
//! not JSON is a string (`pm.path=/dev/shm/pool`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;
use std::str::FromStr;
use tierkv::Options;

/// One `PATH=VALUE` override of the engine's options.
#[derive(Clone, Debug, PartialEq)]
pub struct OptionOverride {
    /// The serde path, fields joined by dots (`compaction.level0_compaction_trigger`).
    pub path: String,
    /// The value, as JSON.
    pub value: Value,
    /// VALUE as written.
    raw: String,
}

impl OptionOverride {
    /// The override `path` = `raw` (VALUE as written on the command line).
    pub fn new(path: &str, raw: &str) -> Result<Self, String> {
        let path = path.trim();
        let ok_segment =
            |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !path.split('.').all(ok_segment) {
            return Err(format!(
                "bad option path {path:?} in {path}={raw}: fields are letters, digits and _, \
                 joined by dots (compaction.level0_compaction_trigger)"
            ));
        }
        Ok(OptionOverride {
            path: path.to_string(),
            value: serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string())),
            raw: raw.to_string(),
        })
    }

    /// VALUE as written.
    pub fn raw_value(&self) -> &str {
        &self.raw
    }
}

impl fmt::Display for OptionOverride {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.path, self.raw)
    }
}

impl FromStr for OptionOverride {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (path, raw) = s.split_once('=').ok_or_else(|| {
            format!("{s:?} is not PATH=VALUE (for example compaction.level0_compaction_trigger=8)")
        })?;
        OptionOverride::new(path, raw)
    }
}

impl Serialize for OptionOverride {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for OptionOverride {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// The JSON type of `v`, in words.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean (true or false)",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn fields(map: &Map<String, Value>) -> String {
    let mut names: Vec<&str> = map.keys().map(String::as_str).collect();
    names.sort_unstable();
    names.join(", ")
}

/// Sets `path` (already split) below `at` to `value`; `done` is the path walked so far.
fn set_path(at: &mut Value, done: &str, path: &[&str], value: &Value) -> Result<(), String> {
    let Some((first, rest)) = path.split_first() else {
        return set_leaf(at, done, value);
    };
    let here = if done.is_empty() {
        "Options".to_string()
    } else {
        done.to_string()
    };
    let Value::Object(map) = at else {
        return Err(format!(
            "unknown option path: {here} is {}, not an object with fields",
            kind(at)
        ));
    };
    let known = fields(map);
    let Some(next) = map.get_mut(*first) else {
        return Err(format!(
            "unknown option path: {here} has no field {first:?} (its fields: {known})"
        ));
    };
    let done = if done.is_empty() {
        first.to_string()
    } else {
        format!("{done}.{first}")
    };
    set_path(next, &done, rest, value)
}

/// Replaces the field at `at` (named `path`) with `value`, checking the JSON type against the
/// current value; an object sets each of its fields.
fn set_leaf(at: &mut Value, path: &str, value: &Value) -> Result<(), String> {
    match (&*at, value) {
        (Value::Object(_), Value::Object(new)) => {
            for (k, v) in new {
                set_path(at, path, &[k.as_str()], v)?;
            }
            Ok(())
        }
        // A field that is null now (an unset Option) takes any type; its deserialization
        // checks it.
        (Value::Null, _) => {
            *at = value.clone();
            Ok(())
        }
        (old, new) if std::mem::discriminant(old) == std::mem::discriminant(new) => {
            *at = value.clone();
            Ok(())
        }
        // An optional field may be unset.
        (_, Value::Null) => {
            *at = Value::Null;
            Ok(())
        }
        (old, new) => Err(format!(
            "wrong type for {path}: expected {} (its current value is {old}), got {} ({new})",
            kind(old),
            kind(new)
        )),
    }
}

/// `options` with `overrides` applied in order (a later override of the same path wins). The
/// error names the override and says what is wrong with it. The file system and a given PM pool
/// (which are not serialized) are kept.
pub fn apply_overrides(options: &Options, overrides: &[OptionOverride]) -> Result<Options, String> {
    if overrides.is_empty() {
        return Ok(options.clone());
    }
    let mut json = serde_json::to_value(options)
        .map_err(|e| format!("serializing the options to apply overrides: {e}"))?;
    let mut result = None;
    for o in overrides {
        if o.path == "design" || o.path.starts_with("design.") {
            return Err(format!(
                "{o}: the design cannot be set as an option; choose it with --design (a variant \
                 is LABEL=DESIGN+PATH=VALUE)"
            ));
        }
        let path: Vec<&str> = o.path.split('.').collect();
        let mut attempt = json.clone();
        set_path(&mut attempt, "", &path, &o.value).map_err(|e| format!("{o}: {e}"))?;
        let mut parsed = serde_json::from_value::<Options>(attempt.clone());
        if parsed.is_err() && !o.value.is_string() {
            // A string field given something that reads as JSON (pm.path=123): the text itself.
            let mut as_text = json.clone();
            let text = Value::String(o.raw.clone());
            if set_path(&mut as_text, "", &path, &text).is_ok() {
                if let Ok(p) = serde_json::from_value::<Options>(as_text.clone()) {
                    attempt = as_text;
                    parsed = Ok(p);
                }
            }
        }
        let parsed = parsed.map_err(|e| format!("{o}: bad value for {}: {e}", o.path))?;
        json = attempt;
        result = Some(parsed);
    }
    let mut o = result.expect("at least one override");
    o.fs = options.fs.clone();
    o.pm.pool = options.pm.pool.clone();
    Ok(o)
}

/// Splits `s` at each `sep` outside JSON strings, objects and arrays (so that a value such as
/// `{"read_ns":1,"write_ns":2}` stays whole).
pub fn split_top_level(s: &str, sep: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut in_string, mut escaped, mut start) = (0i32, false, false, 0);
    for (i, c) in s.char_indices() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' | '[' => depth += 1,
            '}' | ']' => depth -= 1,
            c if c == sep && depth <= 0 => {
                parts.push(&s[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ov(s: &str) -> OptionOverride {
        s.parse().unwrap()
    }

    fn apply(list: &[&str]) -> Result<Options, String> {
        let list: Vec<OptionOverride> = list.iter().map(|s| ov(s)).collect();
        apply_overrides(&Options::default(), &list)
    }

    #[test]
    fn sets_fields_of_every_type() {
        let o = apply(&[
            "compaction.level0_compaction_trigger=8",
            "pm.wal_on_pm=true",
            "write_buffer_size=1048576",
            "pm.path=/dev/shm/pool",
            "pm.mode=Msync",
            "pm.latency={\"write_ns\":400}",
            "ssd.direct_reads=true",
        ])
        .unwrap();
        assert_eq!(o.compaction.level0_compaction_trigger, 8);
        assert!(o.pm.wal_on_pm);
        assert_eq!(o.write_buffer_size, 1 << 20);
        assert_eq!(o.pm.path, Some("/dev/shm/pool".into()));
        assert_eq!(o.pm.mode, tierkv::pm::DurabilityMode::Msync);
        assert_eq!((o.pm.latency.read_ns, o.pm.latency.write_ns), (0, 400));
        assert!(o.ssd.direct_reads);
        // The rest is untouched; a later override wins; a string path that reads as JSON.
        assert_eq!(o.table, tierkv::TableOptions::default());
        let o = apply(&["write_buffer_size=8192", "write_buffer_size=16384"]).unwrap();
        assert_eq!(o.write_buffer_size, 16384);
        assert_eq!(apply(&["pm.path=123"]).unwrap().pm.path, Some("123".into()));
        assert_eq!(
            apply(&["pm.path=/x", "pm.path=null"]).unwrap().pm.path,
            None
        );
    }

    #[test]
    fn rejects_unknown_paths_and_wrong_types_naming_them() {
        let err = |list: &[&str]| apply(list).unwrap_err();
        let e = err(&["compaction.level0_compaction_triger=8"]);
        assert!(
            e.starts_with("compaction.level0_compaction_triger=8: unknown option path"),
            "{e}"
        );
        assert!(
            e.contains("compaction has no field \"level0_compaction_triger\""),
            "{e}"
        );
        assert!(
            e.contains("level0_compaction_trigger"),
            "lists the fields: {e}"
        );
        let e = err(&["nosuch=1"]);
        assert!(e.contains("Options has no field \"nosuch\""), "{e}");
        let e = err(&["write_buffer_size.x=1"]);
        assert!(e.contains("write_buffer_size is a number"), "{e}");
        let e = err(&["pm.latency={\"write_nss\":1}"]);
        assert!(e.contains("pm.latency has no field \"write_nss\""), "{e}");
        let e = err(&["compaction.level0_compaction_trigger=abc"]);
        assert!(
            e.contains("wrong type for compaction.level0_compaction_trigger: expected a number"),
            "{e}"
        );
        let e = err(&["pm.wal_on_pm=1"]);
        assert!(e.contains("expected a boolean"), "{e}");
        let e = err(&["compaction.level0_compaction_trigger=-1"]);
        assert!(
            e.contains("bad value for compaction.level0_compaction_trigger"),
            "{e}"
        );
        let e = err(&["write_buffer_size=1.5"]);
        assert!(e.contains("bad value for write_buffer_size"), "{e}");
        let e = err(&["pm.mode=\"Fast\""]);
        assert!(e.contains("bad value for pm.mode"), "{e}");
        let e = err(&["design=\"leveled-pm\""]);
        assert!(e.contains("--design"), "{e}");
        // Syntax.
        assert!("novalue".parse::<OptionOverride>().is_err());
        assert!("a..b=1".parse::<OptionOverride>().is_err());
        assert!("=1".parse::<OptionOverride>().is_err());
        assert!("a b=1".parse::<OptionOverride>().is_err());
    }

    #[test]
    fn round_trips_as_text_and_splits_at_top_level() {
        let o = ov("pm.latency={\"read_ns\":1,\"write_ns\":2}");
        assert_eq!(o.to_string(), "pm.latency={\"read_ns\":1,\"write_ns\":2}");
        let json = serde_json::to_string(&o).unwrap();
        assert_eq!(serde_json::from_str::<OptionOverride>(&json).unwrap(), o);
        assert_eq!(
            split_top_level("a,b={\"x\":1,\"y\":[1,2]},c=\"d,e\"", ','),
            vec!["a", "b={\"x\":1,\"y\":[1,2]}", "c=\"d,e\""]
        );
        assert_eq!(split_top_level("x", '+'), vec!["x"]);
        assert_eq!(split_top_level("", ','), vec![""]);
    }
}
