//! The text of the charts: file-name slugs, the benchmark names of a run, numbers in human
//! units (`500K`, `1.5M`) and latencies in `ns`, `us`, `ms` or `s`, text widths, and notes wrapped
//! to the chart's width.

use super::*;

/// File-name-safe version of a benchmark or design name.
pub(super) fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

pub(super) fn benchmark_names(runs: &[DesignRun]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for r in runs {
        for b in &r.benchmarks {
            if !names.contains(&b.name) {
                names.push(b.name.clone());
            }
        }
    }
    names
}

/// `v` with at most `decimals` decimals and no trailing zeros (`1.50` -> `1.5`, `2.00` -> `2`).
pub(super) fn trim_number(v: f64, decimals: usize) -> String {
    let s = format!("{v:.decimals$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if s == "-0" {
        "0".into()
    } else {
        s
    }
}

/// A count or rate in human units: `500K`, `1.5M`, `2G`; below a thousand as is (`0.25`, `12`).
pub(super) fn human(v: f64) -> String {
    let a = v.abs();
    let (div, suffix) = if a >= 1e9 {
        (1e9, "G")
    } else if a >= 1e6 {
        (1e6, "M")
    } else if a >= 1e3 {
        (1e3, "K")
    } else {
        (1.0, "")
    };
    format!("{}{suffix}", trim_number(v / div, 2))
}

/// A latency given in microseconds, in the unit that fits: `500ns`, `20us`, `1.5ms`, `2s`.
pub(super) fn human_latency(us: f64) -> String {
    let a = us.abs();
    if a >= 1e6 {
        format!("{}s", trim_number(us / 1e6, 2))
    } else if a >= 1e3 {
        format!("{}ms", trim_number(us / 1e3, 2))
    } else if a >= 1.0 || a == 0.0 {
        format!("{}us", trim_number(us, 2))
    } else {
        format!("{}ns", trim_number(us * 1e3, 0))
    }
}

/// Estimated width in pixels of `text` at SVG font size `svg_px`: sans-serif glyphs average
/// about 0.55 em, digits and capitals a little more, so 0.62 em leaves room.
pub(super) fn text_width(text: &str, svg_px: f64) -> f64 {
    text.chars().count() as f64 * svg_px * 0.62
}

/// Splits `items` into note lines of at most about `width` characters, the first starting with
/// `lead`.
pub(super) fn note_lines(lead: &str, items: &[String], width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = lead.to_string();
    for (k, item) in items.iter().enumerate() {
        let sep = if k == 0 { "" } else { ", " };
        if k > 0 && line.len() + sep.len() + item.len() > width {
            lines.push(format!("{line},"));
            line = format!("  {item}");
        } else {
            line.push_str(sep);
            line.push_str(item);
        }
    }
    lines.push(line);
    lines
}
