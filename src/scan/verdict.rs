//! The verdict: each dimension scored 0–100 from what the phases measured, or `n/a` with its reason when
//! the evidence is too thin; the score is the weighted mean of the scored ones, given only when they hold
//! enough of the policy's weight. Rates carry their 95 % Wilson interval.

use serde::{Deserialize, Serialize};

use super::{
    contract::ContractTally,
    finding::{Finding, Severity},
    load::{Latency, Saturation},
    policy::Policy,
};

/// Names of the dimensions, in the policy's weight order.
pub const DIMENSIONS: [&str; 6] = [
    "hygiene",
    "contract",
    "latency",
    "capacity",
    "output",
    "resilience",
];

/// A tool whose level-1 p50 is below this measures the transport at saturation, not the tool.
pub const SLOW_ENOUGH_MS: f64 = 5.0;

/// A share with its 95 % Wilson interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Rate {
    pub count: u64,
    pub of: u64,
    pub low: f64,
    pub high: f64,
}

impl Rate {
    pub fn wilson(count: u64, of: u64) -> Self {
        if of == 0 {
            return Self {
                count,
                of,
                low: 0.0,
                high: 1.0,
            };
        }
        let z = 1.959_963_984_540_054_f64;
        let n = of as f64;
        let p = count as f64 / n;
        let centre = p + z * z / (2.0 * n);
        let spread = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt();
        let scale = 1.0 + z * z / n;
        Self {
            count,
            of,
            low: ((centre - spread) / scale).max(0.0),
            high: ((centre + spread) / scale).min(1.0),
        }
    }

    pub fn describe(&self) -> String {
        format!(
            "{} of {} (95 % interval {:.1}–{:.1} %)",
            self.count,
            self.of,
            self.low * 100.0,
            self.high * 100.0
        )
    }
}

/// One dimension's score, or why it has none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Dimension {
    pub name: String,
    pub weight: f64,
    /// `None`: n/a.
    pub score: Option<f64>,
    /// What the score rests on, or why there is none.
    pub reason: String,
    /// Whether its thresholds hold (`None` when n/a).
    pub passed: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Pass,
    Fail,
    /// Too little evidence to pass or fail.
    NoVerdict,
}

impl Outcome {
    pub fn name(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::Fail => "fail",
            Self::NoVerdict => "no verdict",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Verdict {
    pub outcome: Outcome,
    pub score: Option<f64>,
    pub policy: Policy,
    pub dimensions: Vec<Dimension>,
    /// Why it passed, failed, or has no verdict.
    pub reasons: Vec<String>,
}

/// What the verdict is given, per tool where it is per tool.
pub struct Evidence<'a> {
    pub tools: usize,
    pub findings: &'a [Finding],
    pub contract: Option<&'a ContractTally>,
    /// Each tool's baseline latency.
    pub latency: Vec<(&'a str, &'a Latency)>,
    /// Each tool's saturation, with its level-1 p50.
    pub saturation: Vec<(&'a str, &'a Saturation)>,
    /// Results checked against an outputSchema, and how many broke it.
    pub output: Option<(u64, u64)>,
    /// Each tool's calls in the faults phase (`None`: it did not run).
    pub faults: Option<&'a [super::faults::FaultFigures]>,
}

pub fn judge(policy: &Policy, evidence: &Evidence) -> Verdict {
    let dimensions = vec![
        hygiene(policy, evidence),
        contract(policy, evidence),
        latency(policy, evidence),
        capacity(policy, evidence),
        output(policy, evidence),
        resilience(policy, evidence),
    ];
    let scored_weight: f64 = dimensions
        .iter()
        .filter(|d| d.score.is_some())
        .map(|d| d.weight)
        .sum();
    let total_weight: f64 = dimensions.iter().map(|d| d.weight).sum();
    let mut reasons = Vec::new();
    let critical = evidence
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Critical)
        .count();
    let share = if total_weight > 0.0 {
        scored_weight / total_weight
    } else {
        0.0
    };
    let score = (scored_weight > 0.0 && share + 1e-9 >= policy.min_scored_weight).then(|| {
        dimensions
            .iter()
            .filter_map(|d| Some(d.score? * d.weight))
            .sum::<f64>()
            / scored_weight
    });
    let unscored: Vec<String> = dimensions
        .iter()
        .filter(|d| d.score.is_none())
        .map(|d| format!("{}: {}", d.name, d.reason))
        .collect();
    let outcome = match score {
        None => {
            reasons.push(format!(
                "too little was measured to score: the scored dimensions hold {:.0} % of the policy's weight, \
                 it needs {:.0} %",
                share * 100.0,
                policy.min_scored_weight * 100.0
            ));
            reasons.extend(unscored);
            Outcome::NoVerdict
        }
        Some(score) => {
            let mut failed = false;
            if score < policy.pass_score {
                reasons.push(format!(
                    "score {score:.0} is below the pass score {}",
                    policy.pass_score
                ));
                failed = true;
            }
            if critical > 0 {
                reasons.push(format!("{critical} critical finding(s)"));
                failed = true;
            }
            for d in dimensions.iter().filter(|d| d.passed == Some(false)) {
                reasons.push(format!("{} misses its threshold: {}", d.name, d.reason));
                failed = true;
            }
            if !failed {
                reasons.push(format!(
                    "score {score:.0} ≥ {}, no critical finding, every threshold met",
                    policy.pass_score
                ));
            }
            reasons.extend(unscored.into_iter().map(|u| format!("not scored: {u}")));
            if failed { Outcome::Fail } else { Outcome::Pass }
        }
    };
    Verdict {
        outcome,
        score,
        policy: policy.clone(),
        dimensions,
        reasons,
    }
}

fn dimension(policy: &Policy, index: usize) -> Dimension {
    Dimension {
        name: DIMENSIONS[index].to_owned(),
        weight: policy.weights[index],
        score: None,
        reason: String::new(),
        passed: None,
        rate: None,
    }
}

fn not_scored(mut d: Dimension, reason: impl Into<String>) -> Dimension {
    d.reason = reason.into();
    d
}

fn hygiene(policy: &Policy, evidence: &Evidence) -> Dimension {
    let d = dimension(policy, 0);
    if evidence.tools == 0 {
        return not_scored(d, "no tool was read");
    }
    let hygiene: Vec<&Finding> = evidence
        .findings
        .iter()
        .filter(|f| f.phase == super::Phase::Hygiene)
        .collect();
    let mut bad_tools: Vec<&str> = hygiene
        .iter()
        .filter(|f| f.severity <= Severity::Major)
        .filter_map(|f| f.tool.as_deref())
        .collect();
    bad_tools.sort();
    bad_tools.dedup();
    let minor = hygiene
        .iter()
        .filter(|f| f.severity == Severity::Minor)
        .count();
    let clean = evidence.tools - bad_tools.len().min(evidence.tools);
    let score = (100.0 * clean as f64 / evidence.tools as f64 - 2.0 * minor as f64).max(0.0);
    Dimension {
        score: Some(score),
        passed: Some(bad_tools.is_empty()),
        reason: format!(
            "{clean} of {} tools with no major hygiene finding, {minor} minor finding(s)",
            evidence.tools
        ),
        ..d
    }
}

fn contract(policy: &Policy, evidence: &Evidence) -> Dimension {
    let d = dimension(policy, 1);
    let Some(tally) = evidence.contract else {
        return not_scored(d, "the contract phase did not run");
    };
    if tally.invalid_cases < policy.min_contract_cases {
        return not_scored(
            d,
            format!(
                "{} invalid-input cases; the policy needs {}",
                tally.invalid_cases, policy.min_contract_cases
            ),
        );
    }
    let failures = tally.failures();
    let rate = Rate::wilson(failures, tally.cases);
    let penalty = failures as f64 + 0.25 * tally.refused_unnamed as f64;
    Dimension {
        score: Some((100.0 * (1.0 - penalty / tally.cases as f64)).max(0.0)),
        passed: Some(failures <= policy.contract_failures),
        reason: format!(
            "{} cases: {} invalid input accepted, {} crashes, {} hangs, {} refusals naming no field; failures {}",
            tally.cases,
            tally.accepted_invalid,
            tally.crashed,
            tally.hung,
            tally.refused_unnamed,
            rate.describe()
        ),
        rate: Some(rate),
        ..d
    }
}

fn latency(policy: &Policy, evidence: &Evidence) -> Dimension {
    let d = dimension(policy, 2);
    let enough: Vec<&(&str, &Latency)> = evidence
        .latency
        .iter()
        .filter(|(_, l)| l.ok >= policy.min_latency_samples)
        .collect();
    if enough.is_empty() {
        let most = evidence
            .latency
            .iter()
            .map(|(_, l)| l.ok)
            .max()
            .unwrap_or(0);
        return not_scored(
            d,
            format!(
                "no tool has {} successful baseline calls (the most: {most})",
                policy.min_latency_samples
            ),
        );
    }
    let mut scores = Vec::new();
    let mut notes = Vec::new();
    let mut passed = true;
    for (tool, l) in &enough {
        let p95 = l.p95_ms.unwrap_or(0.0);
        let mut score = if p95 <= policy.p95_ms {
            100.0
        } else {
            100.0 * policy.p95_ms / p95
        };
        passed &= p95 <= policy.p95_ms;
        match l.p99_ms {
            Some(p99) if l.ok >= policy.min_p99_samples => {
                if p99 > policy.p99_ms {
                    score = score.min(100.0 * policy.p99_ms / p99);
                    passed = false;
                }
            }
            _ => notes.push(*tool),
        }
        scores.push(score);
    }
    let left = evidence.latency.len() - enough.len();
    let mut reason = format!(
        "{} tool(s) with ≥ {} samples, p95 ≤ {} ms expected",
        enough.len(),
        policy.min_latency_samples,
        policy.p95_ms
    );
    if left > 0 {
        reason.push_str(&format!("; {left} tool(s) with fewer samples not scored"));
    }
    if !notes.is_empty() {
        reason.push_str(&format!(
            "; p99 not judged for {} (fewer than {} samples)",
            notes.join(", "),
            policy.min_p99_samples
        ));
    }
    Dimension {
        score: Some(scores.iter().sum::<f64>() / scores.len() as f64),
        passed: Some(passed),
        reason,
        ..d
    }
}

fn capacity(policy: &Policy, evidence: &Evidence) -> Dimension {
    let d = dimension(policy, 3);
    let held_up = evidence
        .findings
        .iter()
        .filter(|f| f.kind == super::finding::Kind::HeadOfLine)
        .count();
    let judged: Vec<&(&str, &Saturation)> = evidence
        .saturation
        .iter()
        .filter(|(_, s)| {
            s.steps
                .first()
                .and_then(|step| step.p50_ms)
                .is_some_and(|p50| p50 >= SLOW_ENOUGH_MS)
        })
        .collect();
    if judged.is_empty() && held_up == 0 {
        return not_scored(
            d,
            if evidence.saturation.is_empty() {
                "the saturation phase did not run".to_owned()
            } else {
                format!(
                    "every tool answered in under {SLOW_ENOUGH_MS} ms: its plateau is the transport's"
                )
            },
        );
    }
    let mut scores: Vec<f64> = judged
        .iter()
        .map(|(_, s)| {
            if !s.plateau || s.peak_in_flight >= policy.min_in_flight {
                100.0
            } else {
                100.0 * s.peak_in_flight as f64 / policy.min_in_flight as f64
            }
        })
        .collect();
    scores.extend(std::iter::repeat_n(0.0, held_up));
    let short = judged
        .iter()
        .filter(|(_, s)| s.plateau && s.peak_in_flight < policy.min_in_flight)
        .count();
    Dimension {
        score: Some(scores.iter().sum::<f64>() / scores.len() as f64),
        passed: Some(short == 0 && held_up == 0),
        reason: format!(
            "{} tool(s) judged: {short} stop rising before {} in flight; {held_up} tool(s) hold up other calls",
            judged.len(),
            policy.min_in_flight
        ),
        ..d
    }
}

fn output(policy: &Policy, evidence: &Evidence) -> Dimension {
    let d = dimension(policy, 4);
    let Some((checked, broken)) = evidence.output else {
        return not_scored(d, "the baseline did not run");
    };
    if checked < policy.min_output_samples {
        return not_scored(
            d,
            format!(
                "{checked} results checked against an outputSchema; the policy needs {}",
                policy.min_output_samples
            ),
        );
    }
    let rate = Rate::wilson(broken, checked);
    Dimension {
        score: Some(100.0 * (1.0 - broken as f64 / checked as f64)),
        passed: Some(broken == 0),
        reason: format!("results against their outputSchema: {}", rate.describe()),
        rate: Some(rate),
        ..d
    }
}

fn resilience(policy: &Policy, evidence: &Evidence) -> Dimension {
    let d = dimension(policy, 5);
    let Some(figures) = evidence.faults else {
        return not_scored(d, "the faults phase did not run");
    };
    let logical: u64 = figures.iter().map(|f| f.logical_calls).sum();
    let lost: u64 = figures.iter().map(|f| f.lost_replies).sum();
    if lost < policy.min_lost_replies {
        return not_scored(
            d,
            format!(
                "{lost} replies were lost; the policy needs {}",
                policy.min_lost_replies
            ),
        );
    }
    let failed: u64 = figures.iter().map(|f| f.failed_unfaulted).sum();
    let duplicates: u64 = figures.iter().map(|f| f.duplicate_effects).sum();
    let verified: u64 = figures.iter().map(|f| f.verified).sum();
    let rate = Rate::wilson(failed + duplicates, logical);
    Dimension {
        score: Some(
            (100.0 * (1.0 - (failed + duplicates) as f64 / logical.max(1) as f64)).max(0.0),
        ),
        passed: Some(failed + duplicates == 0),
        reason: format!(
            "{logical} calls, {lost} replies lost: {failed} failed without a fault, {duplicates} of {verified} \
             verified writes took effect twice; {}",
            rate.describe()
        ),
        rate: Some(rate),
        ..d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_intervals_match_the_textbook() {
        // 0 of 20: the upper bound is about 16 %, not 0.
        let none = Rate::wilson(0, 20);
        assert_eq!(none.low, 0.0);
        assert!((none.high - 0.1611).abs() < 1e-3, "{none:?}");
        let some = Rate::wilson(5, 50);
        assert!(
            (some.low - 0.0435).abs() < 1e-3 && (some.high - 0.2136).abs() < 1e-3,
            "{some:?}"
        );
    }

    #[test]
    fn too_little_evidence_is_no_verdict_with_reasons() {
        let policy = Policy::builtin();
        let latency = Latency {
            calls: 3,
            ok: 3,
            p50_ms: Some(1.0),
            p95_ms: Some(1.0),
            p99_ms: None,
            max_ms: Some(1.0),
        };
        let tally = ContractTally {
            cases: 4,
            invalid_cases: 3,
            refused: 3,
            ..Default::default()
        };
        let verdict = judge(
            &policy,
            &Evidence {
                tools: 1,
                findings: &[],
                contract: Some(&tally),
                latency: vec![("t", &latency)],
                saturation: Vec::new(),
                output: Some((0, 0)),
                faults: None,
            },
        );
        assert_eq!(verdict.outcome, Outcome::NoVerdict);
        assert_eq!(verdict.score, None);
        let reasons = verdict.reasons.join("\n");
        assert!(
            reasons.contains("contract: 3 invalid-input cases; the policy needs 10"),
            "{reasons}"
        );
        assert!(
            reasons.contains("latency: no tool has 20 successful baseline calls (the most: 3)"),
            "{reasons}"
        );
    }
}
