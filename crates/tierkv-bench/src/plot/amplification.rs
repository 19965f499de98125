//! The amplification chart (`amplification.svg`): write, read and space amplification per
//! design and tier, one panel per figure, with bar and group gaps and room for each label.

use super::*;

/// The figure printed above a bar: two decimals, or two significant digits for a small figure
/// that two decimals would show as `0` (`3.4e-5`: a few metadata bytes, not nothing).
pub(super) fn bar_value(v: f64) -> String {
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
