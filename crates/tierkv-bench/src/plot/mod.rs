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
//!
//! The code is split by chart: `throughput`, `latency`, `amplification` and `scaling` draw one
//! kind of chart each; `canvas` holds what every chart is drawn on (size, fonts, colours, frame,
//! axes, legend) and `labels` the text on it (numbers in human units, notes, file names).

use crate::report::{DesignRun, OpLatency, Sample};
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::ops::Range;
use std::path::{Path, PathBuf};

mod amplification;
mod canvas;
mod labels;
mod latency;
mod scaling;
#[cfg(test)]
mod tests;
mod throughput;

pub use amplification::*;
use canvas::*;
use labels::*;
pub use latency::*;
pub use scaling::*;
pub use throughput::*;

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
