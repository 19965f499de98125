//! The scaling chart of `tierkv scaling`: a benchmark's throughput against the client thread
//! count, one line per design.

use super::*;

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
