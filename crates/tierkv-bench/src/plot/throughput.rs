//! The throughput chart (`throughput-<benchmark>.svg`): operations per second over time, one step
//! line per design, with stall bands, and a dot for a design with a single sample or operation.

use super::*;

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
