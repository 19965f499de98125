//! Judging a paper's claim on figures measured over several rounds (`tierkv reproduce
//! --rounds N`): pure functions, no I/O.
//!
//! A check's measured quantity (a design's figure, or the ratio of two designs' figures in the
//! same round) is summarised by its [`Spread`] over the rounds: the median, the minimum and the
//! maximum. The check is judged against a [`Band`] on the whole spread:
//!
//! * **holds**: every round is inside the band (so the median is too);
//! * **does not hold**: no round is inside, and the band lies wholly on one side of the spread
//!   (so the median is outside);
//! * **inconclusive**: the spread crosses the bar: some rounds are inside and some outside, or
//!   the spread straddles the whole band;
//! * **one round: no verdict**: a single round has no spread, so noise cannot be told from an
//!   effect;
//! * **not measured**: no round has the figure.
//!
//! **The rule** ([`Band::Paper`]): a check holds the ratio the paper reports (its effect: 4.9
//! for "4.9x faster", 0.59 for "-41%") and is judged twice. **Direction** holds when the
//! effect has the paper's sign beyond the rounds' spread (every round above 1 for an effect
//! above 1, below 1 for one below). **Size** holds when it reaches the geometric midpoint
//! between no effect and the paper's (`sqrt(effect)`: 4.9 -> 2.21, 0.33 -> 0.57, 0.59 ->
//! 0.77) in every round. Where the paper gives a range, the effect is the end nearest 1 (the
//! smallest effect the paper reports). A check whose claim has no effect to scale ("about
//! unchanged") keeps a band set by hand and says why in its paper text.
//!
//! An ordering of several designs ("L < NVLSM < F") is judged step by step, each step being the
//! ratio of the next design's figure to the previous one's, which must be above 1: the ordering
//! does not hold if a step does not, else is inconclusive if a step is, else holds. It has a
//! direction and no size.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The bar a measured quantity is held to.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Band {
    /// `x <= v`.
    AtMost(f64),
    /// `x >= v`.
    AtLeast(f64),
    /// `x < v`.
    Below(f64),
    /// `x > v`.
    Above(f64),
    /// `lo <= x <= hi`.
    Within(f64, f64),
    /// The paper's effect, judged by the rule (module docs): as a band, its size band.
    Paper(f64),
}

impl Band {
    /// The band the direction of an effect is judged on: beyond 1 on the effect's side. `None`
    /// for a band set by hand.
    pub fn direction(self) -> Option<Band> {
        match self {
            Band::Paper(e) if e >= 1.0 => Some(Band::Above(1.0)),
            Band::Paper(_) => Some(Band::Below(1.0)),
            _ => None,
        }
    }

    /// The band the size of an effect is judged on: at least the geometric midpoint between 1
    /// and the paper's effect. A band set by hand is its own.
    pub fn size(self) -> Band {
        match self {
            Band::Paper(e) if e >= 1.0 => Band::AtLeast(round3(e.sqrt())),
            Band::Paper(e) => Band::AtMost(round3(e.sqrt())),
            other => other,
        }
    }

    /// True when `x` is in the band.
    pub fn contains(self, x: f64) -> bool {
        match self {
            Band::Paper(_) => self.size().contains(x),
            Band::AtMost(v) => x <= v,
            Band::AtLeast(v) => x >= v,
            Band::Below(v) => x < v,
            Band::Above(v) => x > v,
            Band::Within(lo, hi) => lo <= x && x <= hi,
        }
    }

    /// True when some point of `[min, max]` is in the band.
    pub fn reaches(self, min: f64, max: f64) -> bool {
        match self {
            Band::Paper(_) => self.size().reaches(min, max),
            Band::AtMost(v) => min <= v,
            Band::AtLeast(v) => max >= v,
            Band::Below(v) => min < v,
            Band::Above(v) => max > v,
            Band::Within(lo, hi) => min <= hi && max >= lo,
        }
    }
}

impl fmt::Display for Band {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Band::AtMost(v) => write!(f, "<= {v}"),
            Band::AtLeast(v) => write!(f, ">= {v}"),
            Band::Below(v) => write!(f, "< {v}"),
            Band::Above(v) => write!(f, "> {v}"),
            Band::Within(lo, hi) => write!(f, "in [{lo}, {hi}]"),
            Band::Paper(e) => write!(
                f,
                "paper {e}: direction {}, size {}",
                self.direction().expect("a paper band has a direction"),
                self.size()
            ),
        }
    }
}

/// `x` to three decimals (the bars the reports print).
fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// What the rounds say about a check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every round is inside the band.
    Holds,
    /// No round is inside the band, and the median is outside.
    DoesNotHold,
    /// The spread over the rounds crosses the bar.
    Inconclusive,
    /// One round measured it: no spread, no verdict.
    OneRound,
    /// No round measured the figure.
    NotMeasured,
    /// The check has no such verdict (an ordering's size).
    NotApplicable,
}

impl Verdict {
    /// The verdict in words.
    pub fn words(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::DoesNotHold => "does not hold",
            Verdict::Inconclusive => "inconclusive",
            Verdict::OneRound => "one round: no verdict",
            Verdict::NotMeasured => "not measured",
            Verdict::NotApplicable => "n/a",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.words())
    }
}

/// A quantity over the rounds that measured it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// The median (the mean of the two middle values for an even count).
    pub median: f64,
    /// The smallest value.
    pub min: f64,
    /// The largest value.
    pub max: f64,
    /// Each measuring round's value, in round order.
    pub values: Vec<f64>,
}

impl Spread {
    /// The spread of the finite `values`; `None` when there is none.
    pub fn of(values: &[f64]) -> Option<Spread> {
        let values: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        let median = median(&values)?;
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Some(Spread {
            median,
            min,
            max,
            values,
        })
    }

    /// The spread of the rounds that have a value.
    pub fn of_rounds(values: &[Option<f64>]) -> Option<Spread> {
        let v: Vec<f64> = values.iter().flatten().copied().collect();
        Spread::of(&v)
    }
}

/// The median of `values` (the mean of the two middle ones for an even count); `None` for
/// none.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// The verdict on a quantity whose rounds spread as `spread`, held to `band`.
pub fn judge(spread: Option<&Spread>, band: Band) -> Verdict {
    let Some(s) = spread else {
        return Verdict::NotMeasured;
    };
    if s.values.len() < 2 {
        return Verdict::OneRound;
    }
    if band.contains(s.min) && band.contains(s.max) {
        Verdict::Holds
    } else if band.reaches(s.min, s.max) {
        Verdict::Inconclusive
    } else {
        Verdict::DoesNotHold
    }
}

/// `a[r] / b[r]` for each round `r` where both were measured and `b[r]` is not zero.
pub fn paired_ratios(a: &[Option<f64>], b: &[Option<f64>]) -> Vec<f64> {
    a.iter()
        .zip(b)
        .filter_map(|(a, b)| match (a, b) {
            (Some(a), Some(b)) if *b != 0.0 => Some(a / b),
            _ => None,
        })
        .filter(|r| r.is_finite())
        .collect()
}

/// The verdict on an ordering from its steps' verdicts: does not hold if one step does not,
/// else not measured if one step was not, else "one round" if one step had one, else
/// inconclusive if one step is, else holds.
pub fn combine(steps: &[Verdict]) -> Verdict {
    for v in [
        Verdict::DoesNotHold,
        Verdict::NotMeasured,
        Verdict::OneRound,
        Verdict::Inconclusive,
    ] {
        if steps.contains(&v) {
            return v;
        }
    }
    if steps.is_empty() {
        Verdict::NotMeasured
    } else {
        Verdict::Holds
    }
}

/// The steps of the ordering "`per_design[0]` < `per_design[1]` < ...", each design's values
/// given per round: each step's ratio (next / previous, per round) with its verdict (above 1),
/// and the ordering's verdict.
pub fn judge_increasing(
    per_design: &[Vec<Option<f64>>],
) -> (Vec<(Option<Spread>, Verdict)>, Verdict) {
    let steps: Vec<(Option<Spread>, Verdict)> = per_design
        .windows(2)
        .map(|w| {
            let spread = Spread::of(&paired_ratios(&w[1], &w[0]));
            let verdict = judge(spread.as_ref(), Band::Above(1.0));
            (spread, verdict)
        })
        .collect();
    let verdicts: Vec<Verdict> = steps.iter().map(|s| s.1).collect();
    (steps, combine(&verdicts))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spread(v: &[f64]) -> Spread {
        Spread::of(v).unwrap()
    }

    #[test]
    fn median_and_spread() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0]), Some(3.0));
        assert_eq!(median(&[5.0, 1.0, 3.0]), Some(3.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        let s = spread(&[0.4, 0.2, 0.9]);
        assert_eq!((s.median, s.min, s.max), (0.4, 0.2, 0.9));
        assert_eq!(s.values, vec![0.4, 0.2, 0.9], "round order is kept");
        // Not-finite values (a ratio over zero) are not rounds.
        let s = spread(&[1.0, f64::NAN, f64::INFINITY, 3.0]);
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
        assert!(Spread::of(&[f64::NAN]).is_none());
        assert_eq!(
            Spread::of_rounds(&[None, Some(2.0), Some(4.0)])
                .unwrap()
                .median,
            3.0
        );
    }

    #[test]
    fn bands_and_verdicts() {
        use Verdict::*;
        let j = |v: &[f64], b: Band| judge(Some(&spread(v)), b);
        // <= 0.5 (the paper's 0.33): all rounds under, all over, across.
        assert_eq!(j(&[0.31, 0.29, 0.35], Band::AtMost(0.5)), Holds);
        assert_eq!(j(&[0.61, 0.72, 0.55], Band::AtMost(0.5)), DoesNotHold);
        assert_eq!(j(&[0.45, 0.48, 0.52], Band::AtMost(0.5)), Inconclusive);
        assert_eq!(
            j(&[0.5, 0.5], Band::AtMost(0.5)),
            Holds,
            "the bar is inclusive"
        );
        assert_eq!(j(&[0.5, 0.5], Band::Below(0.5)), DoesNotHold);
        // >= and >.
        assert_eq!(j(&[1.2, 1.1], Band::AtLeast(1.0)), Holds);
        assert_eq!(j(&[0.9, 1.1], Band::AtLeast(1.0)), Inconclusive);
        assert_eq!(j(&[0.9, 0.95], Band::AtLeast(1.0)), DoesNotHold);
        assert_eq!(j(&[1.0, 1.0], Band::Above(1.0)), DoesNotHold);
        assert_eq!(j(&[1.0, 1.01], Band::Above(1.0)), Inconclusive);
        // [lo, hi]: inside, below, above, across one edge, straddling the whole band.
        let b = Band::Within(0.8, 1.25);
        assert_eq!(j(&[0.9, 1.0, 1.1], b), Holds);
        assert_eq!(j(&[0.5, 0.6], b), DoesNotHold);
        assert_eq!(j(&[1.3, 2.0], b), DoesNotHold);
        assert_eq!(j(&[0.7, 0.9], b), Inconclusive);
        assert_eq!(j(&[1.2, 1.3], b), Inconclusive);
        assert_eq!(j(&[0.5, 2.0], b), Inconclusive);
        // One round: no verdict, whatever the value.
        assert_eq!(j(&[0.79], b), OneRound);
        assert_eq!(j(&[1.0], b), OneRound);
        assert_eq!(OneRound.to_string(), "one round: no verdict");
        assert_eq!(judge(None, b), NotMeasured);
        assert_eq!(b.to_string(), "in [0.8, 1.25]");
        assert_eq!(Band::AtMost(0.5).to_string(), "<= 0.5");
        assert_eq!(Band::AtLeast(1.0).to_string(), ">= 1");
    }

    #[test]
    fn paper_effects_give_direction_and_size_by_the_rule() {
        use Verdict::*;
        let j = |v: &[f64], b: Band| judge(Some(&spread(v)), b);
        // The rule's examples: 4.9x -> 2.214, 0.33 -> 0.574, -41% (0.59) -> 0.768.
        assert_eq!(Band::Paper(4.9).size(), Band::AtLeast(2.214));
        assert_eq!(Band::Paper(0.33).size(), Band::AtMost(0.574));
        assert_eq!(Band::Paper(0.59).size(), Band::AtMost(0.768));
        assert_eq!(Band::Paper(4.9).direction(), Some(Band::Above(1.0)));
        assert_eq!(Band::Paper(0.59).direction(), Some(Band::Below(1.0)));
        assert_eq!(Band::AtMost(0.5).direction(), None);
        assert_eq!(Band::AtMost(0.5).size(), Band::AtMost(0.5));
        // 1.4x faster in every round: the direction holds, the size (>= 2.214) does not.
        let p = Band::Paper(4.9);
        let rounds = [1.3, 1.4, 1.5];
        assert_eq!(j(&rounds, p.direction().unwrap()), Holds);
        assert_eq!(j(&rounds, p.size()), DoesNotHold);
        assert_eq!(
            j(&rounds, p),
            DoesNotHold,
            "as a band, a paper effect is its size"
        );
        // A spread across 1 is an inconclusive direction.
        assert_eq!(j(&[0.95, 1.2, 1.1], p.direction().unwrap()), Inconclusive);
        assert_eq!(p.to_string(), "paper 4.9: direction > 1, size >= 2.214");
    }

    #[test]
    fn ratios_pair_rounds() {
        let a = [Some(2.0), Some(3.0), None, Some(1.0)];
        let b = [Some(4.0), Some(3.0), Some(1.0), Some(0.0)];
        assert_eq!(paired_ratios(&a, &b), vec![0.5, 1.0]);
    }

    #[test]
    fn orderings_judge_every_step() {
        use Verdict::*;
        let r = |v: &[f64]| v.iter().map(|x| Some(*x)).collect::<Vec<_>>();
        // L < NVLSM < F in all three rounds.
        let (steps, v) = judge_increasing(&[
            r(&[10.0, 11.0, 9.0]),
            r(&[15.0, 14.0, 16.0]),
            r(&[20.0, 25.0, 21.0]),
        ]);
        assert_eq!(v, Holds);
        assert_eq!(steps.len(), 2);
        assert_eq!(
            steps[0].0.as_ref().unwrap().values,
            vec![1.5, 14.0 / 11.0, 16.0 / 9.0]
        );
        // The second step flips in one round: inconclusive.
        let (steps, v) = judge_increasing(&[
            r(&[10.0, 11.0, 9.0]),
            r(&[15.0, 14.0, 16.0]),
            r(&[20.0, 13.0, 21.0]),
        ]);
        assert_eq!(
            (steps[0].1, steps[1].1, v),
            (Holds, Inconclusive, Inconclusive)
        );
        // One step reversed in every round: does not hold, whatever the others say.
        let (_, v) = judge_increasing(&[r(&[10.0, 11.0]), r(&[9.0, 10.0]), r(&[20.0, 10.5])]);
        assert_eq!(v, DoesNotHold);
        // Ties do not order.
        assert_eq!(
            judge_increasing(&[r(&[1.0, 1.0]), r(&[1.0, 1.0])]).1,
            DoesNotHold
        );
        // One round has no verdict.
        assert_eq!(judge_increasing(&[r(&[1.0]), r(&[2.0])]).1, OneRound);
        // A design never measured.
        let (steps, v) = judge_increasing(&[r(&[1.0]), vec![None]]);
        assert_eq!((steps[0].1, v), (NotMeasured, NotMeasured));
        assert_eq!(combine(&[]), NotMeasured);
        assert_eq!(combine(&[Holds, Inconclusive, NotMeasured]), NotMeasured);
    }
}
