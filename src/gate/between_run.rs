//! The unpaired gate across separate runs: when a side ran fewer than two rounds, its
//! samples show only the spread within one run (one provisioning, one stretch of the
//! machine's time), never the spread between runs. Then the interval of the comparison
//! carries the calibrated between-run variance ([`crate::stats::between_run::calibrated_change`]);
//! without a usable calibration the comparison cannot be decided from within-run spread
//! alone, and is `inconclusive` with the remedies named. Both sides with two rounds or
//! more are judged on their rounds' means as before.

use super::{Metric, Verdict};
use crate::calibration::Calibration;
use crate::stats::between_run::{BetweenRunSpread, calibrated_change};
use crate::stats::{Change, relative_change};

/// The row note of a one-round comparison without a calibration (the rule's home is
/// [`crate::verdict::separate_runs_decidable`]).
pub use crate::verdict::WITHIN_RUN_ONLY;

/// The remedies, said once per report when a row has [`WITHIN_RUN_ONLY`].
pub fn remedies(rows: usize) -> String {
    crate::verdict::within_run_remedies(rows)
}

/// One side of a comparison: samples and the rounds they span.
pub use crate::stats::between_run::RunSide as Side;

/// The change, verdict and (when the rule above decided it) a note of one comparison of
/// two separate runs named `name` on `metric` at `threshold`.
pub fn judge(
    name: &str,
    metric: Metric,
    b: Side,
    c: Side,
    threshold: f64,
    calibration: Option<&Calibration>,
) -> (Option<Change>, Verdict, Option<String>) {
    let within = relative_change(b.samples, c.samples);
    if b.samples.is_empty() || c.samples.is_empty() || crate::verdict::separate_runs_decidable(b.rounds, c.rounds) {
        return (within, Verdict::decide(within, threshold, metric.direction()), None);
    }
    let Some(cell) = calibration.and_then(|cal| cal.cell(name, metric.name())) else {
        let v = match Verdict::decide(within, threshold, metric.direction()) {
            Verdict::Missing => Verdict::Missing,
            _ => Verdict::Inconclusive,
        };
        return (within, v, Some(WITHIN_RUN_ONLY.into()));
    };
    let l = &cell.levels;
    let spread = BetweenRunSpread {
        repetition: (l.repetition.variance, l.repetition.df),
        round: (l.round.variance, l.round.df),
        run: (l.run.variance, l.run.df),
    };
    match calibrated_change(b, c, &spread) {
        Some(ch) => (Some(ch), Verdict::decide(Some(ch), threshold, metric.direction()), None),
        None => (
            within,
            Verdict::Inconclusive,
            Some("a value is not positive: no log ratio for the calibrated interval".into()),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibration::CellCalibration;
    use crate::stats::variance_components::{LevelVariance, VarianceComponents};

    fn calibration(run_var: f64) -> Calibration {
        let lv = |variance, df| LevelVariance { variance, n: df + 1, df };
        let mut c = crate::calibration::tests_support::sample("2026-11-01T00:00:00Z");
        c.cells.push(CellCalibration {
            name: "x".into(),
            metric: "total_loops".into(),
            key: String::new(),
            levels: VarianceComponents { repetition: lv(1e-4, 30), round: lv(1e-4, 8), run: lv(run_var, 5), mean: 0.0 },
            repetition_seconds: 1.0,
            round_seconds: 1.0,
        });
        c
    }

    #[test]
    fn one_round_without_calibration_is_inconclusive_and_says_why() {
        let b = [1000.0, 1001.0, 999.0, 1000.5];
        let c = [900.0, 901.0, 899.0, 900.5];
        let one = |s| Side { samples: s, rounds: 1 };
        let (ch, v, note) = judge("x", Metric::TotalLoops, one(&b), one(&c), 0.05, None);
        // The within-run interval alone would say regressed.
        assert_eq!(Verdict::decide(ch, 0.05, Metric::TotalLoops.direction()), Verdict::Regressed);
        assert_eq!((v, note.as_deref()), (Verdict::Inconclusive, Some(WITHIN_RUN_ONLY)));
        // Two rounds on both sides: the rounds' means decide.
        let many = |s| Side { samples: s, rounds: 4 };
        assert_eq!(judge("x", Metric::TotalLoops, many(&b), many(&c), 0.05, None).1, Verdict::Regressed);
        // A calibration with a small run variance decides; a large one does not.
        assert_eq!(
            judge("x", Metric::TotalLoops, one(&b), one(&c), 0.05, Some(&calibration(1e-5))).1,
            Verdict::Regressed
        );
        let (_, v, _) = judge("x", Metric::TotalLoops, one(&b), one(&c), 0.05, Some(&calibration(0.01)));
        assert_eq!(v, Verdict::Inconclusive);
        // A calibration for another cell does not apply.
        assert_eq!(
            judge("y", Metric::TotalLoops, one(&b), one(&c), 0.05, Some(&calibration(1e-5))).1,
            Verdict::Inconclusive
        );
        assert!(remedies(3).contains("fsbench calibrate") && remedies(3).contains("[compare] arms"));
    }
}
