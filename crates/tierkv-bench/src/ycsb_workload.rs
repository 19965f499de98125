//! YCSB workload property files (`-P workloads/workloada`) and property overrides (`-p
//! NAME=VALUE`), read the way YCSB's `CoreWorkload` reads them.
//!
//! The file is a Java properties file: `NAME=VALUE` (or `NAME: VALUE`, or `NAME VALUE`) lines,
//! `#` and `!` comments, blank lines. The properties TierKV models:
//!
//! | property | meaning here | YCSB default |
//! |---|---|---|
//! | `recordcount` | `--num`: records `ycsb-load` inserts | (flag's value) |
//! | `operationcount` | `--ops`: operations of `ycsb-run`, all threads together | (flag's value) |
//! | `readproportion`, `updateproportion`, `insertproportion`, `scanproportion`, `readmodifywriteproportion` | the operation mix | 0.95, 0.05, 0, 0, 0 |
//! | `requestdistribution` | `uniform`, `zipfian` (scrambled) or `latest` | `uniform` |
//! | `zipfianconstant` | the zipfian's constant | 0.99 |
//! | `fieldcount` x `fieldlength` | the value size (one value per record, standing for `fieldcount` fields) | 10 x 100 |
//! | `writeallfields` | an update overwrites every field, not one chosen uniformly | `false` |
//! | `maxscanlength` | scans are uniform in `1..=maxscanlength` | 1000 |
//! | `insertorder` | `hashed` (a seeded permutation) or `ordered` | `hashed` |
//! | `threadcount`, `target` | `--threads`, `--ops_per_sec` | (flags' values) |
//!
//! Properties whose YCSB behaviour TierKV does not reproduce are refused by value rather than
//! silently changed: `requestdistribution` `hotspot`, `exponential` and `sequential`,
//! `scanlengthdistribution` other than `uniform`, `fieldlengthdistribution` other than
//! `constant`, a non-zero `insertstart` or an `insertcount` (TierKV loads all records in one
//! process). Properties about YCSB's client and measurement (`workload`, `table`,
//! `measurementtype`, `readallfields`, ...) and unknown ones are accepted and listed as
//! ignored in the run header, so a typo is visible.

use crate::ycsb::{RequestDistribution, YcsbMix, ZIPFIAN_CONSTANT};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// YCSB's `insertorder`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InsertOrder {
    /// Records are inserted in a seeded pseudo-random order (YCSB hashes the key numbers).
    Hashed,
    /// Records are inserted in key order.
    Ordered,
}

/// A workload read from a property file and `-p` overrides.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct YcsbWorkload {
    /// Where it came from (the file, or `-p` only).
    pub source: String,
    /// `recordcount`, when given.
    pub record_count: Option<u64>,
    /// `operationcount`, when given.
    pub operation_count: Option<u64>,
    /// `threadcount`, when given.
    pub threads: Option<usize>,
    /// `target` (operations per second, all threads), when given.
    pub target: Option<u64>,
    /// The operation mix, distribution, zipfian constant and scan length.
    #[serde(with = "mix_serde")]
    pub mix: YcsbMix,
    /// `fieldcount` x `fieldlength`: the bytes of one record's value.
    pub value_size: usize,
    /// `fieldcount`: the fields an update chooses one of.
    #[serde(default = "default_field_count")]
    pub field_count: u64,
    /// `writeallfields`: an update writes every field.
    #[serde(default)]
    pub write_all_fields: bool,
    /// `insertorder`.
    pub insert_order: InsertOrder,
    /// Properties accepted without effect (client and measurement settings, unknown names).
    pub ignored: Vec<String>,
}

fn default_field_count() -> u64 {
    crate::ycsb::FIELD_COUNT
}

/// The mix as JSON (YcsbMix itself has no serde: it is a plain constant-friendly struct).
mod mix_serde {
    use super::*;

    #[derive(Serialize, Deserialize)]
    struct Mix {
        read: f64,
        update: f64,
        insert: f64,
        scan: f64,
        read_modify_write: f64,
        distribution: RequestDistribution,
        zipfian_constant: f64,
        max_scan_length: u64,
    }

    pub fn serialize<S: serde::Serializer>(m: &YcsbMix, s: S) -> Result<S::Ok, S::Error> {
        Mix {
            read: m.read,
            update: m.update,
            insert: m.insert,
            scan: m.scan,
            read_modify_write: m.rmw,
            distribution: m.distribution,
            zipfian_constant: m.zipfian_constant,
            max_scan_length: m.max_scan_length,
        }
        .serialize(s)
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<YcsbMix, D::Error> {
        let m = Mix::deserialize(d)?;
        let mut mix = YcsbMix::new(
            m.read,
            m.update,
            m.insert,
            m.scan,
            m.read_modify_write,
            m.distribution,
        );
        mix.zipfian_constant = m.zipfian_constant;
        mix.max_scan_length = m.max_scan_length;
        Ok(mix)
    }
}

/// Properties of YCSB's client, measurement and binding layers: accepted, no effect here.
const CLIENT_PROPERTIES: &[&str] = &[
    "workload",
    "table",
    "measurementtype",
    "measurement.interval",
    "histogram.buckets",
    "timeseries.granularity",
    "exporter",
    "exportfile",
    "status.interval",
    "readallfields",
    "dataintegrity",
    "fieldnameprefix",
    "maxexecutiontime",
    "core_workload_insertion_retry_limit",
    "core_workload_insertion_retry_interval",
    "hotspotdatafraction",
    "hotspotopnfraction",
    "db",
];

/// Splits the lines of a Java properties file into `(name, value)` pairs, in order.
/// Continuation lines (a trailing `\`) are joined, as `java.util.Properties` does.
pub fn parse_properties(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut pending = String::new();
    for raw in text.lines() {
        let line = raw.trim_start();
        if pending.is_empty() && (line.is_empty() || line.starts_with('#') || line.starts_with('!'))
        {
            continue;
        }
        if let Some(cont) = line.strip_suffix('\\') {
            pending.push_str(cont);
            continue;
        }
        pending.push_str(line);
        let entry = std::mem::take(&mut pending);
        let split = entry
            .find(|c: char| c == '=' || c == ':' || c.is_whitespace())
            .unwrap_or(entry.len());
        let name = entry[..split].trim().to_string();
        let rest = entry[split..].trim_start();
        let value = rest
            .strip_prefix('=')
            .or_else(|| rest.strip_prefix(':'))
            .unwrap_or(rest)
            .trim()
            .to_string();
        if !name.is_empty() {
            out.push((name, value));
        }
    }
    out
}

fn number<T: std::str::FromStr>(name: &str, value: &str) -> Result<T, String> {
    value
        .parse()
        .map_err(|_| format!("YCSB property {name}={value}: not a valid number"))
}

fn proportion(name: &str, value: &str) -> Result<f64, String> {
    let p: f64 = number(name, value)?;
    if !(0.0..=1.0).contains(&p) {
        return Err(format!("YCSB property {name}={value}: must be in 0..=1"));
    }
    Ok(p)
}

impl YcsbWorkload {
    /// Reads `file` (when given) and applies `overrides` (`NAME=VALUE`, after the file's).
    pub fn load(file: Option<&Path>, overrides: &[String]) -> Result<YcsbWorkload, String> {
        let mut props = Vec::new();
        let source = match file {
            Some(f) => {
                let text = std::fs::read_to_string(f)
                    .map_err(|e| format!("reading YCSB workload file {}: {e}", f.display()))?;
                props = parse_properties(&text);
                f.display().to_string()
            }
            None => "-p properties".to_string(),
        };
        for o in overrides {
            let (name, value) = o
                .split_once('=')
                .ok_or_else(|| format!("-p {o}: expected NAME=VALUE"))?;
            props.push((name.trim().to_string(), value.trim().to_string()));
        }
        Self::from_properties(&source, &props)
    }

    /// The workload of `props` (later entries win), as YCSB's `CoreWorkload.init` reads them.
    pub fn from_properties(source: &str, props: &[(String, String)]) -> Result<Self, String> {
        let (mut read, mut update, mut insert, mut scan, mut rmw) = (0.95, 0.05, 0.0, 0.0, 0.0);
        let mut distribution = RequestDistribution::Uniform;
        let mut zipfian_constant = ZIPFIAN_CONSTANT;
        let (mut field_count, mut field_length) = (10u64, 100u64);
        let mut max_scan_length = 1000u64;
        let mut insert_order = InsertOrder::Hashed;
        let mut w = YcsbWorkload {
            source: source.to_string(),
            record_count: None,
            operation_count: None,
            threads: None,
            target: None,
            mix: YcsbMix::C,
            value_size: 0,
            field_count,
            write_all_fields: false,
            insert_order,
            ignored: Vec::new(),
        };
        for (name, value) in props {
            let (name, value) = (name.as_str(), value.as_str());
            match name {
                "recordcount" => w.record_count = Some(number(name, value)?),
                "operationcount" => w.operation_count = Some(number(name, value)?),
                "threadcount" => w.threads = Some(number(name, value)?),
                "target" => w.target = Some(number(name, value)?),
                "readproportion" => read = proportion(name, value)?,
                "updateproportion" => update = proportion(name, value)?,
                "insertproportion" => insert = proportion(name, value)?,
                "scanproportion" => scan = proportion(name, value)?,
                "readmodifywriteproportion" => rmw = proportion(name, value)?,
                "requestdistribution" => {
                    distribution = match value {
                        "uniform" => RequestDistribution::Uniform,
                        "zipfian" => RequestDistribution::Zipfian,
                        "latest" => RequestDistribution::Latest,
                        other => {
                            return Err(format!(
                                "YCSB property requestdistribution={other}: TierKV implements \
                                 uniform, zipfian and latest"
                            ))
                        }
                    }
                }
                "zipfianconstant" => {
                    zipfian_constant = number(name, value)?;
                    if !(zipfian_constant > 0.0 && zipfian_constant != 1.0) {
                        return Err(format!(
                            "YCSB property zipfianconstant={value}: must be > 0 and not 1"
                        ));
                    }
                }
                "fieldcount" => field_count = number(name, value)?,
                "fieldlength" => field_length = number(name, value)?,
                "writeallfields" => {
                    w.write_all_fields = match value {
                        "true" => true,
                        "false" => false,
                        other => {
                            return Err(format!(
                                "YCSB property writeallfields={other}: expected true or false"
                            ))
                        }
                    }
                }
                "maxscanlength" => {
                    max_scan_length = number(name, value)?;
                    if max_scan_length == 0 {
                        return Err("YCSB property maxscanlength=0: must be at least 1".into());
                    }
                }
                "minscanlength" if value == "1" => {}
                "scanlengthdistribution" if value == "uniform" => {}
                "fieldlengthdistribution" if value == "constant" => {}
                "insertstart" if value == "0" => {}
                "insertorder" => {
                    insert_order = match value {
                        "hashed" => InsertOrder::Hashed,
                        "ordered" => InsertOrder::Ordered,
                        other => {
                            return Err(format!(
                                "YCSB property insertorder={other}: expected hashed or ordered"
                            ))
                        }
                    }
                }
                "minscanlength"
                | "scanlengthdistribution"
                | "fieldlengthdistribution"
                | "insertstart"
                | "insertcount" => {
                    return Err(format!(
                        "YCSB property {name}={value}: not supported (TierKV supports \
                         minscanlength=1, scanlengthdistribution=uniform, \
                         fieldlengthdistribution=constant, insertstart=0 and no insertcount)"
                    ))
                }
                _ => {
                    let note = if CLIENT_PROPERTIES.contains(&name) {
                        name.to_string()
                    } else {
                        format!("{name} (unknown)")
                    };
                    if !w.ignored.contains(&note) {
                        w.ignored.push(note);
                    }
                }
            }
        }
        if read + update + insert + scan + rmw <= 0.0 {
            return Err(format!(
                "YCSB workload {source}: every operation proportion is 0"
            ));
        }
        let value_size = field_count
            .checked_mul(field_length)
            .filter(|&v| v <= 1 << 30)
            .ok_or_else(|| {
                format!("YCSB workload {source}: fieldcount x fieldlength is over 1 GiB")
            })?;
        let mut mix = YcsbMix::new(read, update, insert, scan, rmw, distribution);
        mix.zipfian_constant = zipfian_constant;
        mix.max_scan_length = max_scan_length;
        w.mix = mix;
        if field_count == 0 {
            return Err(format!("YCSB workload {source}: fieldcount=0"));
        }
        w.value_size = value_size as usize;
        w.field_count = field_count;
        w.insert_order = insert_order;
        Ok(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(text: &str) -> Vec<(String, String)> {
        parse_properties(text)
    }

    #[test]
    fn properties_syntax() {
        let p = props(
            "# comment\n! other comment\n\n  recordcount=1000\noperationcount : 5\nworkload site.ycsb.workloads.CoreWorkload\nlong=a\\\n  b\n",
        );
        assert_eq!(
            p,
            vec![
                ("recordcount".into(), "1000".into()),
                ("operationcount".into(), "5".into()),
                ("workload".into(), "site.ycsb.workloads.CoreWorkload".into()),
                ("long".into(), "ab".into()),
            ]
        );
    }

    #[test]
    fn workload_a_as_ycsb_ships_it() {
        let text = "recordcount=1000\noperationcount=1000\nworkload=site.ycsb.workloads.CoreWorkload\n\
                    readallfields=true\nreadproportion=0.5\nupdateproportion=0.5\nscanproportion=0\n\
                    insertproportion=0\nrequestdistribution=zipfian\n";
        let w = YcsbWorkload::from_properties("a", &props(text)).unwrap();
        assert_eq!(w.record_count, Some(1000));
        assert_eq!(w.operation_count, Some(1000));
        assert_eq!(w.mix.read, 0.5);
        assert_eq!(w.mix.update, 0.5);
        assert_eq!(w.mix.distribution, RequestDistribution::Zipfian);
        assert_eq!(w.mix.zipfian_constant, ZIPFIAN_CONSTANT);
        // YCSB's defaults: 10 fields of 100 bytes, scans up to 1000, hashed inserts.
        assert_eq!(w.value_size, 1000);
        assert_eq!(w.mix.max_scan_length, 1000);
        assert_eq!(w.insert_order, InsertOrder::Hashed);
        assert_eq!(w.ignored, vec!["workload", "readallfields"]);
        assert_eq!((w.field_count, w.write_all_fields), (10, false));
        let all = props("fieldcount=4\nwriteallfields=true\n");
        let w = YcsbWorkload::from_properties("w", &all).unwrap();
        assert_eq!((w.field_count, w.write_all_fields), (4, true));
        for bad in ["writeallfields=yes\n", "fieldcount=0\n"] {
            assert!(
                YcsbWorkload::from_properties("w", &props(bad)).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn defaults_and_overrides() {
        let w = YcsbWorkload::from_properties("-p", &[]).unwrap();
        // CoreWorkload's defaults: 95% reads, 5% updates, uniform.
        assert_eq!((w.mix.read, w.mix.update), (0.95, 0.05));
        assert_eq!(w.mix.distribution, RequestDistribution::Uniform);
        assert_eq!(w.record_count, None);

        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("w");
        std::fs::write(
            &file,
            "readproportion=1\nupdateproportion=0\nfieldlength=10\n",
        )
        .unwrap();
        let w = YcsbWorkload::load(
            Some(&file),
            &[
                "fieldcount=4".into(),
                "readproportion=0.25".into(),
                "updateproportion=0.75".into(),
                "zipfianconstant=0.8".into(),
                "requestdistribution=zipfian".into(),
                "insertorder=ordered".into(),
                "maxscanlength=7".into(),
                "recrodcount=5".into(),
            ],
        )
        .unwrap();
        assert_eq!(w.value_size, 40);
        assert_eq!((w.mix.read, w.mix.update), (0.25, 0.75));
        assert_eq!(w.mix.zipfian_constant, 0.8);
        assert_eq!(w.insert_order, InsertOrder::Ordered);
        assert_eq!(w.mix.max_scan_length, 7);
        assert_eq!(w.ignored, vec!["recrodcount (unknown)"]);

        let missing = YcsbWorkload::load(Some(&dir.path().join("nope")), &[]).unwrap_err();
        assert!(missing.contains("reading YCSB workload file"), "{missing}");
        let bad = YcsbWorkload::load(None, &["readproportion".into()]).unwrap_err();
        assert!(bad.contains("NAME=VALUE"), "{bad}");
    }

    #[test]
    fn unsupported_values_are_refused() {
        for (p, what) in [
            ("requestdistribution=hotspot", "requestdistribution"),
            ("scanlengthdistribution=zipfian", "scanlengthdistribution"),
            ("fieldlengthdistribution=uniform", "fieldlengthdistribution"),
            ("insertstart=100", "insertstart"),
            ("insertcount=100", "insertcount"),
            ("readproportion=1.5", "0..=1"),
            ("recordcount=many", "not a valid number"),
            ("zipfianconstant=1", "not 1"),
            ("insertorder=random", "hashed or ordered"),
            ("maxscanlength=0", "at least 1"),
        ] {
            let e = YcsbWorkload::load(None, &[p.to_string()]).unwrap_err();
            assert!(e.contains(what), "{p}: {e}");
        }
        let e = YcsbWorkload::load(
            None,
            &["readproportion=0".into(), "updateproportion=0".into()],
        )
        .unwrap_err();
        assert!(e.contains("every operation proportion is 0"), "{e}");
    }

    #[test]
    fn workload_json_round_trips() {
        let w = YcsbWorkload::load(None, &["scanproportion=0.5".into()]).unwrap();
        let back: YcsbWorkload = serde_json::from_str(&serde_json::to_string(&w).unwrap()).unwrap();
        assert_eq!(back, w);
    }
}
