//! A check judged on the rounds: each design's figure per round, the quantity the band holds
//! (a figure or a ratio) with its spread, and the verdicts ([`crate::verdict`]).

use super::*;

/// One design's figure over the rounds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DesignValues {
    /// The design's label.
    pub design: String,
    /// Its figure per round (`null`: not measured in that round).
    pub rounds: Vec<Option<f64>>,
    /// Over the rounds that measured it.
    pub spread: Option<Spread>,
}

/// One step of an ordering: `higher`'s figure / `lower`'s, which must be above 1.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OrderStep {
    /// The design that should have the lower figure.
    pub lower: String,
    /// The design that should have the higher figure.
    pub higher: String,
    /// The ratio higher / lower over the rounds.
    pub ratio: Option<Spread>,
    /// This step's verdict.
    pub verdict: Verdict,
}

/// A check's measured figures and verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckOutcome {
    /// The claim in words.
    pub claim: String,
    /// The paper's number.
    pub paper: String,
    /// The phase its figures come from.
    pub phase: String,
    /// The figure, in words.
    pub metric: String,
    /// What is compared, e.g. `WA w/o log(nvlsm) / WA w/o log(nvlsm-leveled)`, or
    /// `leveled < nvlsm < nvlsm-fragmented`.
    pub compared: String,
    /// The bar, e.g. `<= 0.5`, `in [0.8, 1.25]`, `each step > 1`.
    pub band: String,
    /// The quantity judged (the design's figure, or the ratio a / b of each round) over the
    /// rounds; absent for an ordering (see `steps`) or when nothing was measured.
    pub measured: Option<Spread>,
    /// Each compared design's figure over the rounds.
    pub designs: Vec<DesignValues>,
    /// For an ordering: each step.
    #[serde(default)]
    pub steps: Vec<OrderStep>,
    /// Rounds run.
    pub rounds: usize,
    /// The verdict: the size's for a check judged by the rule, the band's for a band set by
    /// hand, the direction's for an ordering.
    pub verdict: Verdict,
    /// Whether the effect has the paper's sign beyond the rounds' spread (the rule); for a
    /// band set by hand, its verdict.
    #[serde(default = "not_applicable")]
    pub direction: Verdict,
    /// Whether the effect reaches the geometric midpoint between none and the paper's (the
    /// rule); for a band set by hand, its verdict; n/a for an ordering.
    #[serde(default = "not_applicable")]
    pub size: Verdict,
    /// How the band was set: "the rule" or "by hand".
    #[serde(default)]
    pub rule: String,
}

pub(crate) fn not_applicable() -> Verdict {
    Verdict::NotApplicable
}

/// Sets `outcome`'s verdicts on its measured spread against `band`: by the rule for a paper
/// effect, else the hand-set band's verdict for both.
pub(crate) fn judge_band(outcome: &mut CheckOutcome, band: Band) {
    let measured = outcome.measured.as_ref();
    outcome.band = band.to_string();
    outcome.size = judge(measured, band.size());
    match band.direction() {
        Some(direction) => {
            outcome.direction = judge(measured, direction);
            outcome.rule = "the rule".into();
        }
        None => {
            outcome.direction = outcome.size;
            outcome.rule = "by hand".into();
        }
    }
    outcome.verdict = outcome.size;
}

/// Judges `check` on `rounds` (each round: the runs of the check's phase).
pub fn evaluate(check: &Check, rounds: &[Vec<DesignRun>]) -> CheckOutcome {
    let values = |design: &str| -> Vec<Option<f64>> {
        rounds
            .iter()
            .map(|runs| {
                runs.iter()
                    .find(|r| r.design == design)
                    .and_then(|r| check.metric.value(r))
            })
            .collect()
    };
    let designs: Vec<DesignValues> = check
        .compare
        .designs()
        .into_iter()
        .map(|d| {
            let v = values(d);
            DesignValues {
                design: d.to_string(),
                spread: Spread::of_rounds(&v),
                rounds: v,
            }
        })
        .collect();
    let short = check.metric.short();
    let mut outcome = CheckOutcome {
        claim: check.claim.to_string(),
        paper: check.paper.to_string(),
        phase: check.phase.to_string(),
        metric: check.metric.describe(),
        compared: String::new(),
        band: String::new(),
        measured: None,
        designs: Vec::new(),
        steps: Vec::new(),
        rounds: rounds.len(),
        verdict: Verdict::NotMeasured,
        direction: Verdict::NotMeasured,
        size: Verdict::NotApplicable,
        rule: String::new(),
    };
    match check.compare {
        Compare::Value { design, band } => {
            outcome.compared = format!("{short}({design})");
            outcome.measured = designs[0].spread.clone();
            judge_band(&mut outcome, band);
        }
        Compare::Ratio { a, b, band } => {
            outcome.compared = format!("{short}({a}) / {short}({b})");
            outcome.measured = Spread::of(&paired_ratios(&designs[0].rounds, &designs[1].rounds));
            judge_band(&mut outcome, band);
        }
        Compare::Increasing(order) => {
            outcome.compared = format!("{short}: {}", order.join(" < "));
            outcome.band = "each step > 1".into();
            let per: Vec<Vec<Option<f64>>> = designs.iter().map(|d| d.rounds.clone()).collect();
            let (steps, verdict) = judge_increasing(&per);
            outcome.steps = steps
                .into_iter()
                .enumerate()
                .map(|(i, (ratio, verdict))| OrderStep {
                    lower: order[i].to_string(),
                    higher: order[i + 1].to_string(),
                    ratio,
                    verdict,
                })
                .collect();
            outcome.verdict = verdict;
            outcome.direction = verdict;
            outcome.rule = "an ordering: direction only".into();
        }
    }
    outcome.designs = designs;
    outcome
}
