//! What every chart is drawn on: the SVG size and font sizes, the design colours, the frame
//! with its title and notes, an axis with given ticks (linear or log), and the legend.

use super::*;

pub(super) type PlotResult<T> = Result<T, String>;

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

pub(super) const SIZE: (u32, u32) = (960, 540);

/// Font size (plotters' units; SVG `font-size` is this / 1.24) of tick labels.
pub(super) const LABEL_FONT: u32 = 13;

/// Height in pixels of one line of the notes under a chart's title.
pub(super) const NOTE_LINE: u32 = 17;

pub(super) fn err<E: std::fmt::Display>(what: &str) -> impl Fn(E) -> String + '_ {
    move |e| format!("drawing {what}: {e}")
}

pub(super) fn color(i: usize) -> RGBColor {
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

/// Fills `root`, writes `title` and `notes` (one per line) at its top and returns the area left
/// for the chart.
pub(super) fn frame<'a>(root: &Area<'a>, title: &str, notes: &[String]) -> PlotResult<Area<'a>> {
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
pub(super) struct TickedAxis {
    range: Range<f64>,
    log: bool,
    ticks: Vec<f64>,
}

impl TickedAxis {
    pub(super) fn linear(range: Range<f64>, ticks: Vec<f64>) -> Self {
        TickedAxis {
            range,
            log: false,
            ticks,
        }
    }

    pub(super) fn log(range: Range<f64>, ticks: Vec<f64>) -> Self {
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

/// Draws the series' labels of `chart` at `position`, in the charts' common style.
pub(super) fn legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
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
