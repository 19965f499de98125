//! `--plot DIR`: SVG charts of a run, drawn with `plotters`' SVG backend (text is written as SVG
//! `<text>` elements, so no font files are needed).
//!
//! * `throughput-<benchmark>.svg`: operations per second over time, one step line per design
//!   (each sample is the average rate over its interval). A band in the design's colour shades
//!   the time writers were stalled: its width is the stalled share of the sample interval, not
//!   the whole interval. A design with a single sample (a benchmark shorter than one sample
//!   interval) or a single operation (`flush`, `waitforcompaction`) is drawn as one dot at its
//!   average rate and named in a note, not as a flat line or a step from zero.
//! * `latency-<benchmark>.svg`: latency percentile curves in the HdrHistogram style, one per
//!   design and operation type: the x axis is the percentile on a log scale of 1 / (1 - p),
//!   ticked at 0%, 50%, 90%, 99%, 99.9%, ... and `max`, so that the tail is as wide as the body;
//!   the y axis is the latency on a log scale. Operation types with fewer than [`MIN_CDF_OPS`]
//!   operations are left out (and named in a note); a benchmark with none left (`flush`,
//!   `waitforcompaction`) gets no latency chart.
//! * `amplification.svg`: write, read and space amplification per design and tier
//!   ([`crate::report::tier_amplifications`]), one panel per figure, one bar per design and
//!   tier, with gaps between bars and groups, and as much width per bar as its label needs. A
//!   tier a design all but did not use (every figure under 0.005) and a figure that is not
//!   known are left out and named in a note rather than drawn as an empty slot; a zero figure
//!   of a used tier is a sliver labelled `0`.
//!
//! Axis labels use human units: counts as `500K` or `1.5M`, latencies as `ns`, `us`, `ms` or `s`.

use crate::report::{DesignRun, OpLatency, Sample};
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::ops::Range;
use std::path::{Path, PathBuf};

type PlotResult<T> = Result<T, String>;

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

const SIZE: (u32, u32) = (960, 540);

/// Font size (plotters' units; SVG `font-size` is this / 1.24) of tick labels.
const LABEL_FONT: u32 = 13;

/// Height in pixels of one line of the notes under a chart's title.
const NOTE_LINE: u32 = 17;

/// Fewest operations of one type for which a latency curve is drawn. With fewer than ten
/// operations the 90th percentile, and so every tick of the tail axis after it, is the slowest
/// operation itself: the curve would be one step with nothing to read off the tail, and a
/// single operation (`flush`, `waitforcompaction`) has no distribution at all. Such operation
/// types are left out and named in a note; their one latency is in the text report.
pub const MIN_CDF_OPS: u64 = 10;

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

/// `v` with at most `decimals` decimals and no trailing zeros (`1.50` -> `1.5`, `2.00` -> `2`).
fn trim_number(v: f64, decimals: usize) -> String {
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
fn human(v: f64) -> String {
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
fn human_latency(us: f64) -> String {
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
fn text_width(text: &str, svg_px: f64) -> f64 {
    text.chars().count() as f64 * svg_px * 0.62
}

/// Splits `items` into note lines of at most about `width` characters, the first starting with
/// `lead`.
fn note_lines(lead: &str, items: &[String], width: usize) -> Vec<String> {
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

/// Fills `root`, writes `title` and `notes` (one per line) at its top and returns the area left
/// for the chart.
fn frame<'a>(root: &Area<'a>, title: &str, notes: &[String]) -> PlotResult<Area<'a>> {
    let e = err(title);
    root.fill(&WHITE).map_err(&e)?;
    let area = root.titled(title, ("sans-serif", 20)).map_err(&e)?;
    if notes.is_empty() {
        return Ok(area);
    }
    let (top, rest) = area.split_vertically(NOTE_LINE * notes.len() as u32 + 6);
    for (k, note) in notes.iter().enumerate() {
        top.draw(&Text::new(
            note.clone(),
            (16, 2 + (NOTE_LINE as i32) * k as i32),
            ("sans-serif", 14).into_font().color(&BLACK.mix(0.85)),
        ))
        .map_err(&e)?;
    }
    Ok(rest)
}

/// An f64 axis, linear or logarithmic, with ticks exactly at `ticks` (the tail axis, the bar
/// centres). plotters' own f64 axes choose their ticks, and its `with_key_points` wrapper loses
/// the label formatter.
struct TickedAxis {
    range: Range<f64>,
    log: bool,
    ticks: Vec<f64>,
}

impl TickedAxis {
    fn linear(range: Range<f64>, ticks: Vec<f64>) -> Self {
        TickedAxis {
            range,
            log: false,
            ticks,
        }
    }

    fn log(range: Range<f64>, ticks: Vec<f64>) -> Self {
        TickedAxis {
            range,
            log: true,
            ticks,
        }
    }
}

impl Ranged for TickedAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let f = |x: f64| {
            if self.log {
                x.max(f64::MIN_POSITIVE).ln()
            } else {
                x
            }
        };
        let (a, b) = (f(self.range.start), f(self.range.end));
        if a == b {
            return (limit.0 + limit.1) / 2;
        }
        let share = (f(*v) - a) / (b - a);
        limit.0 + (f64::from(limit.1 - limit.0) * share).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        // The ticks are the bold lines and labels; no light lines between them.
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.range.clone()
    }
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

/// The stalled part of `s` as an x range ending at the sample's end: the stalled share of the
/// interval (at most all of it; stall time is summed over writers and can exceed the interval
/// with several of them). The engine does not record where in the interval the stalls fell, so
/// the band's width is the figure, not its position. `None` without stalls.
fn stall_band(s: &Sample) -> Option<(f64, f64)> {
    if s.stall_micros == 0 || s.interval_sec <= 0.0 {
        return None;
    }
    let share = (s.stall_micros as f64 / 1e6 / s.interval_sec).min(1.0);
    Some((s.t_sec - share * s.interval_sec, s.t_sec))
}

/// A run too short for a line over time, drawn as one dot at its average rate instead.
struct Dot {
    /// Operations of the run.
    ops: u64,
    /// Its length (the sample intervals together).
    seconds: f64,
    /// `ops / seconds`.
    ops_per_sec: f64,
    /// Why it is a dot.
    why: &'static str,
}

/// `Some` for a run too short for a line: one sample (the run ended within the first sample
/// interval, so a line would be a flat segment claiming a steady rate), or a single operation
/// (`flush`, `waitforcompaction`: one maintenance operation, which a line would draw as a step
/// from zero to a made-up rate).
fn dot_only(samples: &[Sample]) -> Option<Dot> {
    let ops: u64 = samples.iter().map(|s| s.ops).sum();
    let why = match samples.len() {
        0 => return None,
        1 => "shorter than one sample interval",
        _ if ops <= 1 => "a single operation, no rate over time",
        _ => return None,
    };
    let seconds: f64 = samples.iter().map(|s| s.interval_sec).sum();
    Some(Dot {
        ops,
        seconds,
        ops_per_sec: if seconds > 0.0 {
            ops as f64 / seconds
        } else {
            0.0
        },
        why,
    })
}

/// Throughput over time of benchmark `name`, one line per design, the stalled time shaded.
pub fn throughput_chart(path: &Path, name: &str, runs: &[DesignRun]) -> PlotResult<()> {
    let e = err(name);
    // (design index for the colour, design, samples)
    let series: Vec<(usize, &str, &[Sample])> = runs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let b = r.benchmarks.iter().find(|b| b.name == name)?;
            Some((i, r.design.as_str(), b.samples.as_slice()))
        })
        .collect();
    let xmax = series
        .iter()
        .flat_map(|(_, _, s)| s.iter().map(|s| s.t_sec))
        .fold(0.0f64, f64::max)
        .max(1e-3);
    let ymax = series
        .iter()
        .flat_map(|(_, _, s)| s.iter().map(|s| s.ops_per_sec))
        .fold(0.0f64, f64::max)
        .max(1.0)
        * 1.1;
    let mut notes = Vec::new();
    for (_, design, s) in &series {
        if s.is_empty() {
            notes.push(format!("{design}: no throughput samples"));
        } else if let Some(dot) = dot_only(s) {
            notes.push(format!(
                "{design}: {} operation{} in {} s, {}: drawn as one dot at its average rate",
                human(dot.ops as f64),
                if dot.ops == 1 { "" } else { "s" },
                trim_number(dot.seconds, 3),
                dot.why
            ));
        }
    }
    if series
        .iter()
        .any(|(_, _, s)| s.iter().any(|s| stall_band(s).is_some()))
    {
        notes.push(
            "Shaded: time writers were stalled, as a share of each sample interval (drawn at \
             the interval's end; where in the interval the stalls fell is not recorded)"
                .into(),
        );
    }
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    let area = frame(&root, &format!("{name}: throughput over time"), &notes)?;
    let mut chart = ChartBuilder::on(&area)
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..xmax, 0f64..ymax)
        .map_err(&e)?;
    chart
        .configure_mesh()
        .label_style(("sans-serif", LABEL_FONT))
        .x_label_formatter(&|v| trim_number(*v, 3))
        .y_label_formatter(&|v| human(*v))
        .x_desc("time since the benchmark started (s)")
        .y_desc("operations / s")
        .draw()
        .map_err(&e)?;
    for &(i, design, samples) in &series {
        let c = color(i);
        let bands = samples
            .iter()
            .filter_map(stall_band)
            .map(|(x0, x1)| Rectangle::new([(x0, 0.0), (x1, ymax)], c.mix(0.2).filled()));
        chart.draw_series(bands).map_err(&e)?;
        let stalled: u64 = samples.iter().map(|s| s.stall_micros).sum();
        let label = if stalled > 0 {
            format!(
                "{design} (stalled {} s)",
                trim_number(stalled as f64 / 1e6, 3)
            )
        } else {
            design.to_string()
        };
        if let Some(dot) = dot_only(samples) {
            let at = (dot.seconds / 2.0, dot.ops_per_sec);
            chart
                .draw_series(std::iter::once(Circle::new(at, 5, c.filled())))
                .map_err(&e)?
                .label(label)
                .legend(move |(x, y)| Circle::new((x + 10, y), 4, c.filled()));
            continue;
        }
        // Each sample is the average over (t - dt, t]: a step per sample.
        let mut line = Vec::with_capacity(samples.len() * 2);
        for s in samples {
            line.push((s.t_sec - s.interval_sec, s.ops_per_sec));
            line.push((s.t_sec, s.ops_per_sec));
        }
        chart
            .draw_series(LineSeries::new(line, c.stroke_width(2)))
            .map_err(&e)?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
    }
    if !series.is_empty() {
        legend(&mut chart, SeriesLabelPosition::LowerRight).map_err(&e)?;
    }
    root.present().map_err(&e)?;
    Ok(())
}

/// Draws the series' labels of `chart` at `position`, in the charts' common style.
fn legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
    position: SeriesLabelPosition,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    chart
        .configure_series_labels()
        .label_font(("sans-serif", LABEL_FONT))
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(position)
        .draw()
}

/// One design's throughput at each thread count: `(design, [(threads, ops/s)])`, sorted by
/// thread count.
pub type ScalingSeries = (String, Vec<(usize, f64)>);

/// Writes `path`: benchmark `name`'s throughput against the client thread count, one line per
/// design (`tierkv scaling`).
pub fn scaling_chart(path: &Path, name: &str, series: &[ScalingSeries]) -> PlotResult<()> {
    let e = err(name);
    let xmax = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|&(t, _)| t))
        .max()
        .unwrap_or(1)
        .max(2) as f64;
    let ymax = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|&(_, v)| v))
        .fold(0.0f64, f64::max)
        .max(1.0)
        * 1.1;
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    let area = frame(&root, &format!("{name}: throughput against threads"), &[])?;
    let mut chart = ChartBuilder::on(&area)
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..xmax * 1.05, 0f64..ymax)
        .map_err(&e)?;
    chart
        .configure_mesh()
        .label_style(("sans-serif", LABEL_FONT))
        .x_label_formatter(&|v| trim_number(*v, 1))
        .y_label_formatter(&|v| human(*v))
        .x_desc("client threads")
        .y_desc("operations / s")
        .draw()
        .map_err(&e)?;
    for (i, (design, points)) in series.iter().enumerate() {
        let c = color(i);
        let pts: Vec<(f64, f64)> = points.iter().map(|&(t, v)| (t as f64, v)).collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
            .map_err(&e)?
            .label(design.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        chart
            .draw_series(pts.into_iter().map(|p| Circle::new(p, 4, c.filled())))
            .map_err(&e)?;
    }
    if !series.is_empty() {
        legend(&mut chart, SeriesLabelPosition::LowerRight).map_err(&e)?;
    }
    root.present().map_err(&e)?;
    Ok(())
}

/// Position of quantile `q` on the tail axis: log10(1 / (1 - q)), so 90% is at 1, 99% at 2,
/// 99.9% at 3. Capped at log10(`count`): among `count` operations nothing finer than one in
/// `count` is measured (the slowest one is at 1 - 1/count).
fn tail_x(q: f64, count: u64) -> f64 {
    let cap = (count.max(1) as f64).log10();
    if q >= 1.0 {
        cap
    } else {
        (-(1.0 - q).log10()).clamp(0.0, cap)
    }
}

/// Label of tail-axis position `k` (a whole number of nines): 1 -> `90%`, 3 -> `99.9%`.
fn nines_label(k: u32) -> String {
    match k {
        0 => "0%".into(),
        1 => "90%".into(),
        2 => "99%".into(),
        k => format!("99.{}%", "9".repeat(k as usize - 2)),
    }
}

/// The ticks of the tail axis for curves of at most `max_count` operations: 0%, 50%, 90%, each
/// further nine the largest count resolves, and `max` half a decade beyond, where every curve
/// ends at its slowest operation.
fn tail_ticks(max_count: u64) -> (Vec<(f64, String)>, f64) {
    let resolved = (max_count.max(1) as f64).log10();
    let mut ticks = vec![(0.0, nines_label(0)), (2f64.log10(), "50%".to_string())];
    let mut k = 1;
    while k as f64 <= resolved + 1e-9 {
        ticks.push((k as f64, nines_label(k)));
        k += 1;
    }
    let end = resolved + 0.5;
    ticks.push((end, "max".into()));
    (ticks, end)
}

/// Ticks of a log axis over [lo, hi]: 1-1.5-2-3-5-7 per decade on a short range, 1-2-5 on a
/// medium one, decades on a long one.
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let decades = (hi / lo).log10();
    let steps: &[f64] = if decades <= 1.2 {
        &[1.0, 1.5, 2.0, 3.0, 5.0, 7.0]
    } else if decades <= 4.0 {
        &[1.0, 2.0, 5.0]
    } else {
        &[1.0]
    };
    let mut out = Vec::new();
    let mut d = lo.log10().floor() as i32;
    while 10f64.powi(d) <= hi {
        for s in steps {
            let v = s * 10f64.powi(d);
            if v >= lo && v <= hi {
                out.push(v);
            }
        }
        d += 1;
    }
    out
}

/// Latency percentile curves of benchmark `name`, per design and operation type; false when
/// no operation type has a distribution to draw (no file written).
pub fn latency_chart(path: &Path, name: &str, runs: &[DesignRun]) -> PlotResult<bool> {
    let e = err(name);
    // (label, design index, op index, op)
    let mut series: Vec<(String, usize, usize, &OpLatency)> = Vec::new();
    let mut left_out = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        if let Some(b) = r.benchmarks.iter().find(|b| b.name == name) {
            for (j, o) in b.ops_by_type.iter().enumerate() {
                if o.count >= MIN_CDF_OPS && !o.cdf.is_empty() {
                    let label = format!("{} {} ({} ops)", r.design, o.op, human(o.count as f64));
                    series.push((label, i, j, o));
                } else if o.count > 0 {
                    left_out.push(format!(
                        "{} {} ({} op{})",
                        r.design,
                        o.op,
                        o.count,
                        if o.count == 1 { "" } else { "s" }
                    ));
                }
            }
        }
    }
    if series.is_empty() {
        return Ok(false);
    }
    let max_count = series.iter().map(|s| s.3.count).max().unwrap_or(1);
    let (ticks, xend) = tail_ticks(max_count);
    let all = series
        .iter()
        .flat_map(|s| s.3.cdf.iter().map(|p| p.latency_us.max(0.001)));
    let (lo, hi) = all.fold((f64::MAX, 0.0f64), |(lo, hi), x| (lo.min(x), hi.max(x)));
    let (lo, hi) = (lo * 0.8, (hi * 1.25).max(lo * 2.0));
    let notes = if left_out.is_empty() {
        Vec::new()
    } else {
        note_lines(
            &format!("Left out (fewer than {MIN_CDF_OPS} operations, no distribution): "),
            &left_out,
            110,
        )
    };
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    let area = frame(&root, &format!("{name}: latency by percentile"), &notes)?;
    let tick_at: Vec<f64> = ticks.iter().map(|t| t.0).collect();
    let mut chart = ChartBuilder::on(&area)
        .margin(12)
        .margin_right(24)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(
            TickedAxis::linear(0f64..xend, tick_at),
            TickedAxis::log(lo..hi, log_ticks(lo, hi)),
        )
        .map_err(&e)?;
    let tick_label = |v: &f64| {
        ticks
            .iter()
            .find(|t| (t.0 - v).abs() < 1e-9)
            .map(|t| t.1.clone())
            .unwrap_or_default()
    };
    chart
        .configure_mesh()
        .label_style(("sans-serif", LABEL_FONT))
        .x_label_formatter(&tick_label)
        .y_label_formatter(&|v| human_latency(*v))
        .x_desc("percentile (log scale of 1 / (1 - p); max: the slowest operation)")
        .y_desc("latency (log scale)")
        .draw()
        .map_err(&e)?;
    for (label, design, op, o) in series {
        // Colour by design, dash-free distinction of op types by width.
        let style = color(design).stroke_width(1 + (op as u32 % 3));
        let mut pts: Vec<(f64, f64)> = o
            .cdf
            .iter()
            .map(|p| (tail_x(p.quantile, o.count), p.latency_us.max(0.001)))
            .collect();
        // Beyond the finest quantile measured every percentile is the slowest operation.
        let slowest = o
            .cdf
            .iter()
            .map(|p| p.latency_us.max(0.001))
            .fold(0.0f64, f64::max);
        pts.push((tail_x(1.0, o.count), slowest));
        pts.push((xend, slowest));
        chart
            .draw_series(LineSeries::new(pts, style))
            .map_err(&e)?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
    }
    legend(&mut chart, SeriesLabelPosition::UpperLeft).map_err(&e)?;
    root.present().map_err(&e)?;
    Ok(true)
}

/// The figure printed above a bar: two decimals, or two significant digits for a small figure
/// that two decimals would show as `0` (`3.4e-5`: a few metadata bytes, not nothing).
fn bar_value(v: f64) -> String {
    if v != 0.0 && v.abs() < NEGLIGIBLE {
        format!("{v:.1e}")
    } else {
        human(v)
    }
}

/// One bar of the amplification chart.
struct Bar {
    /// `design tier`, the bar's x label.
    label: String,
    /// Index of the design in the run, for the colour and the grouping.
    design: usize,
    /// Write, read and space amplification; `None` where not known.
    values: [Option<f64>; 3],
}

/// Figures under this print as `0.00`: a tier whose figures are all below it is named in a
/// note with its figures instead of taking a slot (`leveled-pm` writes a few metadata bytes to
/// SSD and nothing else).
const NEGLIGIBLE: f64 = 0.005;

/// Slots between two designs' groups of bars, on top of the slots of the bars.
const GROUP_GAP: f64 = 0.2;

/// Share of a bar's slot left empty, half on each side, so that bars never touch.
const BAR_GAP: f64 = 0.3;

/// Slot positions (left edges) of `bars`, design groups set apart by [`GROUP_GAP`]; and the
/// number of slots in all.
fn slot_positions(bars: &[&Bar]) -> (Vec<f64>, f64) {
    let mut at = Vec::with_capacity(bars.len());
    let mut x = 0.0;
    for (k, b) in bars.iter().enumerate() {
        if k > 0 && bars[k - 1].design != b.design {
            x += GROUP_GAP;
        }
        at.push(x);
        x += 1.0;
    }
    (at, x)
}

/// Write, read and space amplification per design and tier, as bars.
pub fn amplification_chart(path: &Path, runs: &[DesignRun]) -> PlotResult<()> {
    let e = err("amplification");
    let mut bars: Vec<Bar> = Vec::new();
    let mut unused = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        for t in &r.tiers {
            let label = format!("{} {}", r.design, t.tier);
            let figures = [t.write, t.read, t.space.unwrap_or(0.0)];
            if figures.iter().all(|v| v.abs() < NEGLIGIBLE) {
                // A tier the design all but did not use: a slot of slivers would read as an
                // empty slot, so its figures go in a note.
                let space = t.space.map_or("not known".into(), bar_value);
                unused.push(format!(
                    "{label} (write {}, read {}, space {space})",
                    bar_value(t.write),
                    bar_value(t.read)
                ));
                continue;
            }
            bars.push(Bar {
                label,
                design: i,
                values: [Some(t.write), Some(t.read), t.space],
            });
        }
    }
    let mut notes = Vec::new();
    if !unused.is_empty() {
        notes.extend(note_lines(
            "Not drawn (every figure under 0.005: the tier was all but unused): ",
            &unused,
            110,
        ));
    }
    let no_space: Vec<String> = bars
        .iter()
        .filter(|b| b.values[2].is_none())
        .map(|b| b.label.clone())
        .collect();
    if !no_space.is_empty() {
        notes.extend(note_lines(
            "Space amplification not known: ",
            &no_space,
            110,
        ));
    }
    // Enough width per slot for the longest label, with a gap to the next one.
    let label_px = LABEL_FONT as f64 / 1.24;
    let slot_px = bars
        .iter()
        .map(|b| text_width(&b.label, label_px) + 16.0)
        .fold(64.0f64, f64::max);
    let all: Vec<&Bar> = bars.iter().collect();
    let (_, slots) = slot_positions(&all);
    let (y_area, margin) = (60u32, 10u32);
    let width = (SIZE.0 as f64).max(slots * slot_px + f64::from(y_area + 3 * margin));
    let height = 3 * 240 + 40 + NOTE_LINE * notes.len() as u32;
    let root = SVGBackend::new(path, (width.ceil() as u32, height)).into_drawing_area();
    let area = frame(
        &root,
        "Amplification per design and tier (bytes on the tier / user bytes)",
        &notes,
    )?;
    let panels = area.split_evenly((3, 1));
    for (m, (panel, metric)) in panels.iter().zip(["write", "read", "space"]).enumerate() {
        let shown: Vec<&Bar> = bars.iter().filter(|b| b.values[m].is_some()).collect();
        let value = |b: &Bar| b.values[m].unwrap_or(0.0);
        let (at, slots) = slot_positions(&shown);
        let ymax = shown
            .iter()
            .map(|b| value(b))
            .fold(0.0f64, f64::max)
            .max(1.0)
            * 1.15;
        let centres: Vec<f64> = at.iter().map(|x| x + 0.5).collect();
        let mut chart = ChartBuilder::on(panel)
            .caption(format!("{metric} amplification"), ("sans-serif", 16))
            .margin(margin)
            .x_label_area_size(30)
            .y_label_area_size(y_area)
            .build_cartesian_2d(
                TickedAxis::linear(0f64..slots.max(1.0), centres.clone()),
                0f64..ymax,
            )
            .map_err(&e)?;
        let label_of = |v: &f64| {
            centres
                .iter()
                .position(|c| (c - v).abs() < 1e-9)
                .map(|k| shown[k].label.clone())
                .unwrap_or_default()
        };
        chart
            .configure_mesh()
            .disable_x_mesh()
            .label_style(("sans-serif", LABEL_FONT))
            .x_label_formatter(&label_of)
            .y_label_formatter(&|v| human(*v))
            .draw()
            .map_err(&e)?;
        if shown.is_empty() {
            let what = if bars.is_empty() {
                "no engine figures"
            } else {
                "not known for any design"
            };
            chart
                .draw_series(std::iter::once(Text::new(
                    what,
                    (0.05, ymax / 2.0),
                    ("sans-serif", 14),
                )))
                .map_err(&e)?;
            continue;
        }
        chart
            .draw_series(shown.iter().zip(&at).map(|(b, &x)| {
                // A zero is drawn as a sliver, so that its slot shows a bar of its colour.
                let top = value(b).max(ymax * 0.006);
                Rectangle::new(
                    [(x + BAR_GAP / 2.0, 0.0), (x + 1.0 - BAR_GAP / 2.0, top)],
                    color(b.design).filled(),
                )
            }))
            .map_err(&e)?;
        let above = TextStyle::from(("sans-serif", 12).into_font())
            .pos(Pos::new(HPos::Center, VPos::Bottom));
        chart
            .draw_series(shown.iter().zip(&centres).map(|(b, &c)| {
                Text::new(
                    bar_value(value(b)),
                    (c, value(b).max(ymax * 0.006) + ymax * 0.01),
                    above.clone(),
                )
            }))
            .map_err(&e)?;
    }
    root.present().map_err(&e)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{BenchResult, LatencySummary, TierAmplification};
    use crate::runner::new_histogram;
    use std::collections::HashMap;

    /// One SVG element: its attributes and, for `<text>`, its content.
    struct Element {
        attrs: HashMap<String, String>,
        text: String,
    }

    impl Element {
        fn num(&self, name: &str) -> f64 {
            self.attrs[name].parse().unwrap()
        }
    }

    /// Every `<tag ...>` of `svg`, in document order.
    fn elements(svg: &str, tag: &str) -> Vec<Element> {
        let open = format!("<{tag} ");
        let mut out = Vec::new();
        let mut rest = svg;
        while let Some(at) = rest.find(&open) {
            rest = &rest[at + open.len()..];
            let end = rest.find('>').unwrap();
            let mut attrs = HashMap::new();
            let mut a = rest[..end].trim_end_matches('/');
            while let Some(eq) = a.find("=\"") {
                let name = a[..eq].trim().to_string();
                let close = a[eq + 2..].find('"').unwrap();
                attrs.insert(name, a[eq + 2..eq + 2 + close].to_string());
                a = &a[eq + 2 + close + 1..];
            }
            let text = if tag == "text" {
                let close = rest.find("</text>").unwrap();
                rest[end + 1..close].trim().to_string()
            } else {
                String::new()
            };
            out.push(Element { attrs, text });
        }
        out
    }

    fn texts(svg: &str) -> Vec<String> {
        elements(svg, "text").into_iter().map(|t| t.text).collect()
    }

    fn hex(c: RGBColor) -> String {
        format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
    }

    fn sample(t: f64, dt: f64, ops: u64, stall_micros: u64) -> Sample {
        Sample {
            t_sec: t,
            interval_sec: dt,
            ops,
            ops_per_sec: ops as f64 / dt,
            stall_micros,
            dram_bytes: None,
        }
    }

    /// One-second samples at the given rates, no stalls.
    fn samples(rates: &[u64]) -> Vec<Sample> {
        rates
            .iter()
            .enumerate()
            .map(|(k, &r)| sample(k as f64 + 1.0, 1.0, r, 0))
            .collect()
    }

    /// The latencies of `op`, one operation per value (nanoseconds).
    fn op(op: &str, nanos: impl IntoIterator<Item = u64>) -> OpLatency {
        let mut h = new_histogram();
        for ns in nanos {
            h.record(ns).unwrap();
        }
        OpLatency::new(op, &h)
    }

    fn bench(name: &str, samples: Vec<Sample>, ops: Vec<OpLatency>) -> BenchResult {
        let n = ops.iter().map(|o| o.count).sum();
        let secs = samples.iter().map(|s| s.interval_sec).sum();
        let mut b = BenchResult::new(
            name,
            n,
            secs,
            secs,
            0,
            LatencySummary::default(),
            None,
            None,
        );
        b.samples = samples;
        b.ops_by_type = ops;
        b
    }

    fn run(design: &str, benchmarks: Vec<BenchResult>) -> DesignRun {
        DesignRun::new(design, "tierkv", serde_json::json!({}), benchmarks, None)
    }

    fn tier(tier: &str, write: f64, read: f64, space: Option<f64>) -> TierAmplification {
        TierAmplification {
            tier: tier.into(),
            write,
            read,
            space,
        }
    }

    fn throughput_svg(name: &str, runs: &[DesignRun]) -> String {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.svg");
        throughput_chart(&path, name, runs).unwrap();
        std::fs::read_to_string(path).unwrap()
    }

    fn latency_svg(name: &str, runs: &[DesignRun]) -> Option<String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l.svg");
        let drawn = latency_chart(&path, name, runs).unwrap();
        assert_eq!(drawn, path.exists(), "a file exactly when a chart is drawn");
        drawn.then(|| std::fs::read_to_string(path).unwrap())
    }

    fn amplification_svg(runs: &[DesignRun]) -> String {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.svg");
        amplification_chart(&path, runs).unwrap();
        std::fs::read_to_string(path).unwrap()
    }

    /// The data lines of `svg` in `colour` (the legend's short strokes left out).
    fn data_lines(svg: &str, colour: RGBColor) -> Vec<Vec<(f64, f64)>> {
        elements(svg, "polyline")
            .into_iter()
            .filter(|p| p.attrs["stroke"] == hex(colour))
            .map(|p| {
                p.attrs["points"]
                    .split_whitespace()
                    .map(|xy| {
                        let (x, y) = xy.split_once(',').unwrap();
                        (x.parse().unwrap(), y.parse().unwrap())
                    })
                    .collect::<Vec<_>>()
            })
            .filter(|pts| {
                pts.len() > 2 || pts.first().map(|p| p.0) != pts.last().map(|p| p.0 - 20.0)
            })
            .collect()
    }

    #[test]
    fn numbers_in_human_units() {
        assert_eq!(human(500_000.0), "500K");
        assert_eq!(human(1_500_000.0), "1.5M");
        assert_eq!(human(2e9), "2G");
        assert_eq!(human(0.0), "0");
        assert_eq!(human(2.5), "2.5");
        assert_eq!(human(1.8349), "1.83");
        assert_eq!(human(12_345.0), "12.35K");
        assert_eq!(human_latency(0.5), "500ns");
        assert_eq!(human_latency(20.0), "20us");
        assert_eq!(human_latency(1500.0), "1.5ms");
        assert_eq!(human_latency(2e6), "2s");
        assert_eq!(bar_value(3.4375e-5), "3.4e-5");
        assert_eq!(bar_value(0.0), "0");
        assert_eq!(bar_value(2.731), "2.73");
    }

    #[test]
    fn throughput_ticks_are_in_human_units() {
        for (rates, expect) in [
            (&[400_000, 500_000, 450_000][..], "500K"),
            (&[900_000, 1_500_000, 1_200_000][..], "1.2M"),
        ] {
            let runs = [run(
                "leveled",
                vec![bench("fillrandom", samples(rates), vec![])],
            )];
            let svg = throughput_svg("fillrandom", &runs);
            let t = texts(&svg);
            assert!(t.iter().any(|s| s == expect), "{expect} in {t:?}");
            for s in &t {
                assert!(
                    !s.contains("000.0") && !s.contains("00000"),
                    "raw tick {s:?}"
                );
                assert!(!s.ends_with(".0"), "tick with a useless decimal: {s:?}");
            }
        }
    }

    #[test]
    fn stall_shading_is_the_stalled_share_of_each_interval() {
        let ms = 1000u64;
        let s = vec![
            sample(1.0, 1.0, 1000, 0),
            sample(2.0, 1.0, 1000, 100 * ms),
            sample(3.0, 1.0, 1000, 500 * ms),
            sample(4.0, 1.0, 1000, 1000 * ms),
            // Several writers' stalls together can exceed the interval: capped at all of it.
            sample(5.0, 1.0, 1000, 3000 * ms),
        ];
        let runs = [run("leveled", vec![bench("fillrandom", s, vec![])])];
        let svg = throughput_svg("fillrandom", &runs);
        let mut bands: Vec<(f64, f64)> = elements(&svg, "rect")
            .into_iter()
            .filter(|r| r.attrs["fill"] == hex(color(0)) && r.attrs["opacity"] == "0.2")
            .map(|r| (r.num("x"), r.num("width")))
            .collect();
        bands.sort_by(|a, b| a.0.total_cmp(&b.0));
        assert_eq!(bands.len(), 4, "one band per sample with stalls: {bands:?}");
        // Each band ends at its sample's end: one second apart.
        let px_per_sec = (bands[3].0 + bands[3].1) - (bands[2].0 + bands[2].1);
        assert!(px_per_sec > 100.0, "{px_per_sec}");
        for (band, share) in bands.iter().zip([0.1, 0.5, 1.0, 1.0]) {
            assert!(
                (band.1 - share * px_per_sec).abs() <= 2.0,
                "band {band:?} for share {share} of {px_per_sec} px"
            );
        }
        assert!(texts(&svg).iter().any(|t| t.contains("stalled 4.6 s")));
    }

    #[test]
    fn a_run_shorter_than_one_sample_is_a_dot_with_a_note() {
        let runs = [
            run(
                "leveled",
                vec![bench(
                    "readrandom",
                    vec![sample(0.25, 0.25, 5000, 0)],
                    vec![],
                )],
            ),
            run(
                "leveled-pm",
                vec![bench("readrandom", samples(&[40_000, 42_000]), vec![])],
            ),
        ];
        let svg = throughput_svg("readrandom", &runs);
        assert!(
            data_lines(&svg, color(0)).is_empty(),
            "no line for one sample"
        );
        assert_eq!(
            data_lines(&svg, color(1)).len(),
            1,
            "a line for two samples"
        );
        let dots: Vec<Element> = elements(&svg, "circle")
            .into_iter()
            .filter(|c| c.attrs["fill"] == hex(color(0)) && c.attrs["r"] == "5")
            .collect();
        assert_eq!(dots.len(), 1);
        let t = texts(&svg);
        assert!(
            t.iter()
                .any(|s| s.starts_with("leveled: 5K operations in 0.25 s")
                    && s.contains("shorter than one sample interval")),
            "{t:?}"
        );
        assert!(!t.iter().any(|s| s.starts_with("leveled-pm:")), "{t:?}");
    }

    #[test]
    fn a_single_operation_is_a_dot_not_a_step_from_zero() {
        // flush: nothing done in the first interval, the one operation in the second.
        let s = vec![sample(1.0, 1.0, 0, 0), sample(1.5, 0.5, 1, 0)];
        let runs = [run("leveled", vec![bench("flush", s, vec![])])];
        let svg = throughput_svg("flush", &runs);
        assert!(data_lines(&svg, color(0)).is_empty());
        assert!(elements(&svg, "circle")
            .iter()
            .any(|c| c.attrs["fill"] == hex(color(0)) && c.attrs["r"] == "5"));
        assert!(texts(&svg)
            .iter()
            .any(|s| s.starts_with("leveled: 1 operation in 1.5 s, a single operation")));
    }

    #[test]
    fn one_operation_benchmarks_get_no_latency_chart() {
        let flush = |d: &str| {
            run(
                d,
                vec![bench(
                    "flush",
                    samples(&[1]),
                    vec![op("flush", [40_000_000])],
                )],
            )
        };
        let runs = [flush("leveled"), flush("leveled-pm")];
        assert!(latency_svg("flush", &runs).is_none());
        let dir = tempfile::tempdir().unwrap();
        let files = write_all(dir.path(), &runs).unwrap();
        let names: Vec<String> = files
            .iter()
            .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["throughput-flush.svg", "amplification.svg"]);
        assert!(!dir.path().join("latency-flush.svg").exists());
    }

    #[test]
    fn operation_types_below_the_threshold_are_left_out_and_named() {
        let n = MIN_CDF_OPS;
        let runs = [
            run(
                "leveled",
                vec![bench(
                    "mixed",
                    samples(&[10]),
                    vec![
                        op("get", (1..=n).map(|i| i * 1000)),
                        op("put", (1..n).map(|i| i * 1000)),
                    ],
                )],
            ),
            run(
                "leveled-pm",
                vec![bench("mixed", samples(&[1]), vec![op("put", [5000])])],
            ),
        ];
        let svg = latency_svg("mixed", &runs).expect("one type has enough operations");
        // Only leveled's gets are drawn.
        assert_eq!(data_lines(&svg, color(0)).len(), 1);
        assert!(data_lines(&svg, color(1)).is_empty());
        let t = texts(&svg);
        assert!(t.iter().any(|s| s == "leveled get (10 ops)"), "{t:?}");
        let note = t
            .iter()
            .find(|s| s.starts_with("Left out"))
            .expect("a note");
        assert!(
            note.contains(&format!("fewer than {n} operations")),
            "{note}"
        );
        assert!(note.contains("leveled put (9 ops)"), "{note}");
        assert!(note.contains("leveled-pm put (1 op)"), "{note}");
    }

    #[test]
    fn latency_chart_has_a_log_tail_axis() {
        // 20,000 operations: 10 us, with a tail of one in a thousand at 1 ms to 5 ms.
        let nanos = (0..20_000u64).map(|i| {
            if i % 1000 == 999 {
                1_000_000 + i * 200
            } else {
                10_000 + i % 100
            }
        });
        let runs = [run(
            "leveled",
            vec![bench(
                "readrandom",
                samples(&[20_000]),
                vec![op("read", nanos)],
            )],
        )];
        let svg = latency_svg("readrandom", &runs).unwrap();
        let labels = elements(&svg, "text");
        let x_of = |name: &str| {
            labels
                .iter()
                .find(|t| t.text == name)
                .unwrap_or_else(|| panic!("no tick {name}"))
                .num("x")
        };
        let ticks = ["0%", "50%", "90%", "99%", "99.9%", "99.99%", "max"];
        let xs: Vec<f64> = ticks.iter().map(|t| x_of(t)).collect();
        assert!(xs.windows(2).all(|w| w[0] < w[1]), "{xs:?}");
        // Equal spacing per nine: the tail is as wide as the body.
        let decade = xs[3] - xs[2];
        assert!(((xs[4] - xs[3]) - decade).abs() <= 1.0, "{xs:?}");
        assert!(((xs[5] - xs[4]) - decade).abs() <= 1.0, "{xs:?}");
        assert!(
            !labels.iter().any(|t| t.text == "99.999%"),
            "20,000 operations resolve 99.99%"
        );
        let lines = data_lines(&svg, color(0));
        assert_eq!(lines.len(), 1);
        let line = &lines[0];
        // The curve reaches the max tick, and has points across the tail between 99% and 99.99%.
        assert!((line.last().unwrap().0 - xs[6]).abs() <= 1.0, "{line:?}");
        let tail = line
            .iter()
            .filter(|p| p.0 > xs[3] + 2.0 && p.0 < xs[5] - 2.0)
            .count();
        assert!(tail >= 3, "{line:?}");
        // Latency ticks in time units.
        assert!(labels.iter().any(|t| t.text == "10us"), "{:?}", texts(&svg));
        assert!(labels.iter().any(|t| t.text == "1ms"), "{:?}", texts(&svg));
    }

    #[test]
    fn tail_positions() {
        assert_eq!(tail_x(0.0, 100), 0.0);
        assert!((tail_x(0.9, 100) - 1.0).abs() < 1e-9);
        assert!((tail_x(0.999, 100_000) - 3.0).abs() < 1e-9);
        // No finer than one in `count`: the max of 100 operations is at 99%.
        assert!((tail_x(0.9999, 100) - 2.0).abs() < 1e-9);
        assert!((tail_x(1.0, 100) - 2.0).abs() < 1e-9);
        let (ticks, end) = tail_ticks(1000);
        let names: Vec<&str> = ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(names, ["0%", "50%", "90%", "99%", "99.9%", "max"]);
        assert!((end - 3.5).abs() < 1e-9);
    }

    /// Bars (x, width, bottom) of the design colours, by panel (bottom edge), left to right.
    fn bars_by_panel(svg: &str, designs: usize) -> Vec<Vec<(f64, f64, f64)>> {
        let colours: Vec<String> = (0..designs).map(|i| hex(color(i))).collect();
        let mut panels: Vec<Vec<(f64, f64, f64)>> = Vec::new();
        for r in elements(svg, "rect") {
            if !colours.contains(&r.attrs["fill"]) {
                continue;
            }
            let bar = (r.num("x"), r.num("width"), r.num("y") + r.num("height"));
            match panels.iter_mut().find(|p| (p[0].2 - bar.2).abs() <= 1.0) {
                Some(p) => p.push(bar),
                None => panels.push(vec![bar]),
            }
        }
        for p in &mut panels {
            p.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        panels
    }

    #[test]
    fn amplification_bars_have_gaps_fitting_labels_and_no_empty_slot() {
        let designs = [
            "leveled",
            "leveled-pm",
            "nvlsm-with-a-rather-long-label",
            "slmdb",
            "rocksdb",
        ];
        let runs: Vec<DesignRun> = designs
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let mut r = run(d, vec![]);
                r.tiers = vec![
                    tier("SSD", 1.5 + i as f64, 0.0, Some(1.1)),
                    tier("PM", 0.5, 0.25 * i as f64, Some(0.9)),
                ];
                r
            })
            .collect();
        let svg = amplification_svg(&runs);
        let panels = bars_by_panel(&svg, designs.len());
        assert_eq!(panels.len(), 3, "write, read, space");
        let labels: Vec<String> = designs
            .iter()
            .flat_map(|d| [format!("{d} SSD"), format!("{d} PM")])
            .collect();
        let all_text = elements(&svg, "text");
        for bars in &panels {
            assert_eq!(bars.len(), labels.len(), "one bar per design and tier");
            for w in bars.windows(2) {
                let gap = w[1].0 - (w[0].0 + w[0].1);
                assert!(gap >= 8.0, "bars touch or overlap: {w:?}");
            }
            // The x labels of this panel: just under its bars.
            let bottom = bars[0].2;
            let mut ls: Vec<&Element> = all_text
                .iter()
                .filter(|t| labels.contains(&t.text) && (t.num("y") - bottom).abs() < 30.0)
                .collect();
            ls.sort_by(|a, b| a.num("x").total_cmp(&b.num("x")));
            assert_eq!(ls.len(), bars.len(), "a label per bar, none per empty slot");
            for (l, bar) in ls.iter().zip(bars) {
                assert_eq!(l.attrs["text-anchor"], "middle");
                let x = l.num("x");
                assert!(
                    x > bar.0 && x < bar.0 + bar.1,
                    "{} not under its bar",
                    l.text
                );
            }
            for w in ls.windows(2) {
                let half =
                    |t: &Element| t.text.chars().count() as f64 * t.num("font-size") * 0.6 / 2.0;
                let room = w[1].num("x") - w[0].num("x");
                assert!(
                    room > half(w[0]) + half(w[1]),
                    "labels {:?} and {:?} overlap",
                    w[0].text,
                    w[1].text
                );
            }
        }
        // Every bar is visible, zero included, and says its value.
        assert!(panels.iter().flatten().all(|b| b.1 > 0.0));
        assert!(all_text.iter().any(|t| t.text == "0"));
    }

    #[test]
    fn unused_tiers_and_unknown_figures_are_notes_not_empty_slots() {
        let mut a = run("leveled", vec![]);
        a.tiers = vec![tier("SSD", 1.8, 0.5, None)];
        let mut b = run("leveled-pm", vec![]);
        b.tiers = vec![
            tier("SSD", 3.4375e-5, 0.0, Some(0.0)),
            tier("PM", 2.7, 0.1, Some(1.06)),
        ];
        let svg = amplification_svg(&[a, b]);
        let panels = bars_by_panel(&svg, 2);
        let counts: Vec<usize> = panels.iter().map(|p| p.len()).collect();
        assert_eq!(
            counts,
            [2, 2, 1],
            "space panel: only the figure that is known"
        );
        let t = texts(&svg);
        assert!(!t.iter().any(|s| s == "leveled-pm SSD"), "{t:?}");
        assert!(
            t.iter().any(|s| s.starts_with("Not drawn")
                && s.contains("leveled-pm SSD (write 3.4e-5, read 0, space 0)")),
            "{t:?}"
        );
        assert!(t
            .iter()
            .any(|s| s.starts_with("Space amplification not known: leveled SSD")));
    }
}
