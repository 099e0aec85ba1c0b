//! Where the variance of a measurement is: the three nested levels of an A/A experiment
//! (repetitions within a round, rounds within a run, runs), estimated by the method of
//! moments of the nested one-way analysis of variance (Sokal & Rohlf, *Biometry*, the
//! unbalanced nested design; Kalibera & Jones 2013 use the same decomposition).
//!
//! The model, for a value `y` (already on the log scale) of repetition `k` of round `j`
//! of run `i`: `y_ijk = μ + a_i + b_ij + e_ijk`, with independent effects of variances
//! `σ²_run`, `σ²_round` and `σ²_rep`. With `n_ij` repetitions in round `ij`, `n_i` in run
//! `i`, `N` in all, `B` rounds and `A` runs:
//!
//! - `MS_rep = Σ (y_ijk − ȳ_ij)² / (N − B)` estimates `σ²_rep`;
//! - `MS_round = Σ n_ij (ȳ_ij − ȳ_i)² / (B − A)` estimates `σ²_rep + n₀ σ²_round`,
//!   `n₀ = (N − Σ_i Σ_j n_ij² / n_i) / (B − A)`;
//! - `MS_run = Σ n_i (ȳ_i − ȳ)² / (A − 1)` estimates `σ²_rep + n₀' σ²_round + n₀'' σ²_run`,
//!   `n₀' = (Σ_i Σ_j n_ij² / n_i − Σ n_ij² / N) / (A − 1)`, `n₀'' = (N − Σ n_i² / N) / (A − 1)`.
//!
//! Solving these for the three variances gives the estimates; each is then clamped at 0
//! (a negative moment estimate means "no variance seen at this level"). In a balanced
//! design the `n₀` are the repetitions per round, per round again, and per run. A level
//! with no degrees of freedom (one round per run: steps cells) has no estimate: its
//! variance is taken as 0 and marked as not estimated.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The variance at one level and how much data it rests on.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LevelVariance {
    /// Method-of-moments estimate, on the log scale, clamped at 0.
    pub variance: f64,
    /// Units at this level (repetitions, rounds or runs) the estimate is over.
    pub n: usize,
    /// Degrees of freedom of its mean square (`N − B`, `B − A`, `A − 1`); 0: not estimated.
    pub df: usize,
}

/// The three levels of one cell's (or step's) variance.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct VarianceComponents {
    /// Between repetitions of one round.
    pub repetition: LevelVariance,
    /// Between rounds of one run (each round provisions the cell afresh).
    pub round: LevelVariance,
    /// Between runs.
    pub run: LevelVariance,
    /// Grand mean of the values (log scale).
    pub mean: f64,
}

/// The values of one run: one `Vec` of repetitions per round.
pub type RunValues = Vec<Vec<f64>>;

/// Estimate the variance components of `runs` (each a list of rounds, each a list of
/// repetition values on the log scale). Empty rounds and runs are left out. `None` when
/// fewer than two runs or no repetition level (every round a single value) remain: the
/// levels cannot be told apart.
pub fn variance_components(runs: &[RunValues]) -> Option<VarianceComponents> {
    let runs: Vec<Vec<&Vec<f64>>> = runs
        .iter()
        .map(|rounds| rounds.iter().filter(|r| !r.is_empty()).collect::<Vec<_>>())
        .filter(|rounds| !rounds.is_empty())
        .collect();
    let a = runs.len();
    let b: usize = runs.iter().map(Vec::len).sum();
    let n_all: usize = runs.iter().flatten().map(|r| r.len()).sum();
    if a < 2 || n_all <= b {
        return None;
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let grand = runs.iter().flatten().flat_map(|r| r.iter()).sum::<f64>() / n_all as f64;
    let (mut ss_rep, mut ss_round, mut ss_run) = (0.0, 0.0, 0.0);
    // Σ_i Σ_j n_ij² / n_i, Σ n_ij², Σ n_i².
    let (mut sum_nij2_over_ni, mut sum_nij2, mut sum_ni2) = (0.0, 0.0, 0.0);
    for rounds in &runs {
        let ni: usize = rounds.iter().map(|r| r.len()).sum();
        let run_mean = rounds.iter().flat_map(|r| r.iter()).sum::<f64>() / ni as f64;
        for r in rounds {
            let m = mean(r);
            ss_rep += r.iter().map(|y| (y - m).powi(2)).sum::<f64>();
            ss_round += r.len() as f64 * (m - run_mean).powi(2);
            let nij2 = (r.len() * r.len()) as f64;
            sum_nij2_over_ni += nij2 / ni as f64;
            sum_nij2 += nij2;
        }
        ss_run += ni as f64 * (run_mean - grand).powi(2);
        sum_ni2 += (ni * ni) as f64;
    }
    let n = n_all as f64;
    let (df_rep, df_round, df_run) = (n_all - b, b - a, a - 1);
    let ms_rep = ss_rep / df_rep as f64;
    let round_raw = if df_round > 0 {
        let ms_round = ss_round / df_round as f64;
        let n0 = (n - sum_nij2_over_ni) / df_round as f64;
        (ms_round - ms_rep) / n0
    } else {
        0.0
    };
    let ms_run = ss_run / df_run as f64;
    let n0_round = (sum_nij2_over_ni - sum_nij2 / n) / df_run as f64;
    let n0_run = (n - sum_ni2 / n) / df_run as f64;
    let run_raw = (ms_run - ms_rep - n0_round * round_raw) / n0_run;
    let level = |variance: f64, n: usize, df: usize| LevelVariance { variance: variance.max(0.0), n, df };
    Some(VarianceComponents {
        repetition: level(ms_rep, n_all, df_rep),
        round: level(round_raw, b, df_round),
        run: level(run_raw, a, df_run),
        mean: grand,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_balanced_example_matches_the_hand_computed_mean_squares() {
        // Two runs × two rounds × two repetitions.
        // Round means: 1, 3 | 6, 8; run means 2, 7; grand mean 4.5.
        // SS_rep = 8 × 1 = 8 (each value 1 from its round mean), df 4: MS_rep = 2.
        // SS_round = 2 × (1 + 1 + 1 + 1) = 8, df 2: MS_round = 4 → σ²_round = (4 − 2) / 2 = 1.
        // SS_run = 4 × (2.5² + 2.5²) = 50, df 1: MS_run = 50 → σ²_run = (50 − 2 − 2·1) / 4 = 11.5.
        let runs = vec![vec![vec![0.0, 2.0], vec![2.0, 4.0]], vec![vec![5.0, 7.0], vec![7.0, 9.0]]];
        let v = variance_components(&runs).unwrap();
        assert!((v.repetition.variance - 2.0).abs() < 1e-12, "{v:?}");
        assert!((v.round.variance - 1.0).abs() < 1e-12, "{v:?}");
        assert!((v.run.variance - 11.5).abs() < 1e-12, "{v:?}");
        assert!((v.mean - 4.5).abs() < 1e-12);
        assert_eq!((v.repetition.n, v.round.n, v.run.n), (8, 4, 2));
        assert_eq!((v.repetition.df, v.round.df, v.run.df), (4, 2, 1));
    }

    #[test]
    fn an_unbalanced_example_matches_the_hand_computed_coefficients() {
        // Run 1: rounds [1, 3] and [4]; run 2: round [6, 8, 10]. N 6, B 3, A 2.
        // Round means 2, 4, 8; run means 8/3, 8; grand 32/6.
        // SS_rep = 2 + 0 + 8 = 10, df 3 → MS_rep = 10/3.
        // SS_round = 2 (2 − 8/3)² + 1 (4 − 8/3)² = 8/9 + 16/9 = 8/3, df 1 → MS_round = 8/3.
        // n₀ = (6 − (4/3 + 1/3 + 9/3)) / 1 = 4/3 → σ²_round = (8/3 − 10/3) / (4/3) = −0.5.
        // SS_run = 3 (8/3 − 16/3)² + 3 (8 − 16/3)² = 64/3 + 64/3 = 128/3, df 1.
        // n₀' = (14/3 − 14/6) / 1 = 7/3; n₀'' = 6 − 18/6 = 3.
        // σ²_run = (128/3 − 10/3 − (7/3)(−0.5)) / 3 = (118/3 + 7/6) / 3 = 243/18 = 13.5.
        let runs = vec![vec![vec![1.0, 3.0], vec![4.0]], vec![vec![6.0, 8.0, 10.0]]];
        let v = variance_components(&runs).unwrap();
        assert!((v.repetition.variance - 10.0 / 3.0).abs() < 1e-12, "{v:?}");
        // Negative moment estimate: clamped, and the unclamped value is what σ²_run solves with.
        assert_eq!(v.round.variance, 0.0);
        assert!((v.run.variance - 13.5).abs() < 1e-12, "{v:?}");
    }

    #[test]
    fn one_round_per_run_is_the_two_level_design_and_too_little_data_is_none() {
        // Steps: one round per run. Runs [1, 3], [5, 7]: MS_rep 2, MS_run 16 (n₀'' 2) → 7.
        let v = variance_components(&[vec![vec![1.0, 3.0]], vec![vec![5.0, 7.0]]]).unwrap();
        assert_eq!((v.round.variance, v.round.df), (0.0, 0));
        assert!((v.run.variance - 7.0).abs() < 1e-12 && (v.repetition.variance - 2.0).abs() < 1e-12);
        assert!(variance_components(&[vec![vec![1.0, 3.0]]]).is_none());
        assert!(variance_components(&[vec![vec![1.0]], vec![vec![2.0]]]).is_none());
        assert!(variance_components(&[vec![vec![1.0, 2.0]], vec![vec![]]]).is_none());
    }
}
