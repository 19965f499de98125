//! The latency chart (`latency-<benchmark>.svg`): percentile curves in the HdrHistogram style,
//! one per design and operation type, on a log tail axis (0%, 50%, 90%, 99%, ... max) and a log
//! latency axis.

use super::*;

/// Fewest operations of one type for which a latency curve is drawn. With fewer than ten
/// operations the 90th percentile, and so every tick of the tail axis after it, is the slowest
/// operation itself: the curve would be one step with nothing to read off the tail, and a
/// single operation (`flush`, `waitforcompaction`) has no distribution at all. Such operation
/// types are left out and named in a note; their one latency is in the text report.
pub const MIN_CDF_OPS: u64 = 10;

/// Position of quantile `q` on the tail axis: log10(1 / (1 - q)), so 90% is at 1, 99% at 2,
/// 99.9% at 3. Capped at log10(`count`): among `count` operations nothing finer than one in
/// `count` is measured (the slowest one is at 1 - 1/count).
pub(super) fn tail_x(q: f64, count: u64) -> f64 {
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
pub(super) fn tail_ticks(max_count: u64) -> (Vec<(f64, String)>, f64) {
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
