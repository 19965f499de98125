//! `--plot DIR`: SVG charts of a run, drawn with `plotters`' SVG backend (text is written as SVG
//! `<text>` elements, so no font files are needed).
//!
//! * `throughput-<benchmark>.svg`: operations per second over time, one line per design; the
//!   sampling intervals in which the engine reported write stalls are shaded in the design's
//!   colour.
//! * `latency-<benchmark>.svg`: latency CDFs (log-scale latency), one line per design and
//!   operation type.
//! * `amplification.svg`: write, read and space amplification bars per design and tier
//!   ([`crate::report::tier_amplifications`]).

use crate::report::DesignRun;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

type PlotResult<T> = Result<T, String>;

const SIZE: (u32, u32) = (960, 540);

/// (end time, ops/s, interval length, stall micros) of one throughput sample.
type SamplePoint = (f64, f64, f64, u64);

fn err<E: std::fmt::Display>(what: &str) -> impl Fn(E) -> String + '_ {
    move |e| format!("drawing {what}: {e}")
}

fn color(i: usize) -> RGBColor {
    // Distinguishable colours (Tableau 10).
    const C: [(u8, u8, u8); 10] = [
        (31, 119, 180),
        (255, 127, 14),
        (44, 160, 44),
        (214, 39, 40),
        (148, 103, 189),
        (140, 86, 75),
        (227, 119, 194),
        (127, 127, 127),
        (188, 189, 34),
        (23, 190, 207),
    ];
    let (r, g, b) = C[i % C.len()];
    RGBColor(r, g, b)
}

/// File-name-safe version of a benchmark or design name.
fn slug(s: &str) -> String {
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

fn benchmark_names(runs: &[DesignRun]) -> Vec<String> {
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

/// Draws every chart of `runs` into `dir` (created if needed); returns the files written.
pub fn write_all(dir: &Path, runs: &[DesignRun]) -> PlotResult<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("creating the plot directory {}: {e}", dir.display()))?;
    let mut files = Vec::new();
    for name in benchmark_names(runs) {
        let path = dir.join(format!("throughput-{}.svg", slug(&name)));
        throughput_chart(&path, &name, runs)?;
        files.push(path);
        let path = dir.join(format!("latency-{}.svg", slug(&name)));
        if latency_chart(&path, &name, runs)? {
            files.push(path);
        }
    }
    let path = dir.join("amplification.svg");
    amplification_chart(&path, runs)?;
    files.push(path);
    Ok(files)
}

/// Throughput over time of benchmark `name`, one line per design, stalls shaded.
pub fn throughput_chart(path: &Path, name: &str, runs: &[DesignRun]) -> PlotResult<()> {
    let e = err(name);
    let series: Vec<(&str, Vec<SamplePoint>)> = runs
        .iter()
        .map(|r| {
            let pts = r
                .benchmarks
                .iter()
                .find(|b| b.name == name)
                .map(|b| {
                    b.samples
                        .iter()
                        .map(|s| (s.t_sec, s.ops_per_sec, s.interval_sec, s.stall_micros))
                        .collect()
                })
                .unwrap_or_default();
            (r.design.as_str(), pts)
        })
        .collect();
    let xmax = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|p| p.0))
        .fold(0.0f64, f64::max)
        .max(1e-3);
    let ymax = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|p| p.1))
        .fold(0.0f64, f64::max)
        .max(1.0)
        * 1.1;
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(&e)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("{name}: throughput over time (shaded: write stalls)"),
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(0f64..xmax, 0f64..ymax)
        .map_err(&e)?;
    chart
        .configure_mesh()
        .x_desc("time since the benchmark started (s)")
        .y_desc("operations / s")
        .draw()
        .map_err(&e)?;
    for (i, (design, pts)) in series.iter().enumerate() {
        let c = color(i);
        let stalls = pts
            .iter()
            .filter(|p| p.3 > 0)
            .map(|&(t, _, dt, _)| Rectangle::new([(t - dt, 0.0), (t, ymax)], c.mix(0.15).filled()));
        chart.draw_series(stalls).map_err(&e)?;
        // Each sample covers (t - dt, t]: draw it as a step so short runs still show a line.
        let mut line = Vec::with_capacity(pts.len() * 2);
        for &(t, ops, dt, _) in pts {
            line.push((t - dt, ops));
            line.push((t, ops));
        }
        chart
            .draw_series(LineSeries::new(line, c.stroke_width(2)))
            .map_err(&e)?
            .label(design.to_string())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()
        .map_err(&e)?;
    root.present().map_err(&e)?;
    Ok(())
}

/// Latency CDFs of benchmark `name`, per design and operation type; false when there is no
/// latency data (nothing drawn).
pub fn latency_chart(path: &Path, name: &str, runs: &[DesignRun]) -> PlotResult<bool> {
    let e = err(name);
    let mut series = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        if let Some(b) = r.benchmarks.iter().find(|b| b.name == name) {
            for (j, o) in b.ops_by_type.iter().enumerate() {
                let pts: Vec<(f64, f64)> = o
                    .cdf
                    .iter()
                    .map(|p| (p.latency_us.max(0.001), p.quantile))
                    .collect();
                if !pts.is_empty() {
                    series.push((format!("{} {}", r.design, o.op), i, j, pts));
                }
            }
        }
    }
    if series.is_empty() {
        return Ok(false);
    }
    let all = series.iter().flat_map(|s| s.3.iter().map(|p| p.0));
    let (lo, hi) = all.fold((f64::MAX, 0.0f64), |(lo, hi), x| (lo.min(x), hi.max(x)));
    let (lo, hi) = (lo * 0.8, (hi * 1.25).max(lo * 2.0));
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(&e)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("{name}: latency CDF"), ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((lo..hi).log_scale(), 0f64..1.0f64)
        .map_err(&e)?;
    chart
        .configure_mesh()
        .x_desc("latency (microseconds, log scale)")
        .y_desc("fraction of operations")
        .draw()
        .map_err(&e)?;
    for (label, design, op, pts) in series {
        // Colour by design, dash-free distinction of op types by width.
        let style = color(design).stroke_width(1 + (op as u32 % 3));
        chart
            .draw_series(LineSeries::new(pts, style))
            .map_err(&e)?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()
        .map_err(&e)?;
    root.present().map_err(&e)?;
    Ok(true)
}

/// Write, read and space amplification per design and tier, as grouped bars.
pub fn amplification_chart(path: &Path, runs: &[DesignRun]) -> PlotResult<()> {
    let e = err("amplification");
    // (label, design index, write, read, space)
    let mut bars: Vec<(String, usize, [f64; 3])> = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        for t in &r.tiers {
            bars.push((
                format!("{} {}", r.design, t.tier),
                i,
                [t.write, t.read, t.space.unwrap_or(0.0)],
            ));
        }
    }
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(&e)?;
    let root = root
        .titled(
            "Amplification per design and tier (bytes on the tier / user bytes)",
            ("sans-serif", 20),
        )
        .map_err(&e)?;
    let panels = root.split_evenly((1, 3));
    let n = bars.len().max(1);
    for (m, (panel, metric)) in panels.iter().zip(["write", "read", "space"]).enumerate() {
        let ymax = bars.iter().map(|b| b.2[m]).fold(0.0f64, f64::max).max(1.0) * 1.15;
        let mut chart = ChartBuilder::on(panel)
            .caption(format!("{metric} amplification"), ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(45)
            .build_cartesian_2d((0..n).into_segmented(), 0f64..ymax)
            .map_err(&e)?;
        let labels: Vec<String> = bars.iter().map(|b| b.0.clone()).collect();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n)
            .x_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => labels.get(*i).cloned().unwrap_or_default(),
                _ => String::new(),
            })
            .draw()
            .map_err(&e)?;
        if bars.is_empty() {
            chart
                .draw_series(std::iter::once(Text::new(
                    "no engine figures",
                    (SegmentValue::Exact(0), ymax / 2.0),
                    ("sans-serif", 14),
                )))
                .map_err(&e)?;
            continue;
        }
        chart
            .draw_series(bars.iter().enumerate().map(|(j, b)| {
                Rectangle::new(
                    [
                        (SegmentValue::Exact(j), 0.0),
                        (SegmentValue::Exact(j + 1), b.2[m]),
                    ],
                    color(b.1).filled(),
                )
            }))
            .map_err(&e)?;
        chart
            .draw_series(bars.iter().enumerate().map(|(j, b)| {
                Text::new(
                    format!("{:.2}", b.2[m]),
                    (SegmentValue::CenterOf(j), b.2[m] + ymax * 0.02),
                    ("sans-serif", 12),
                )
            }))
            .map_err(&e)?;
    }
    root.present().map_err(&e)?;
    Ok(())
}
