//! Tests of the charts, read back from the SVG: human units, stall shading, dots for single
//! samples and operations, the latency tail axis, and the amplification bars and notes.

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
        .filter(|pts| pts.len() > 2 || pts.first().map(|p| p.0) != pts.last().map(|p| p.0 - 20.0))
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
            let half = |t: &Element| t.text.chars().count() as f64 * t.num("font-size") * 0.6 / 2.0;
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
