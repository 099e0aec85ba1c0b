//! Statistics over repetitions, all of them: summaries with Student's t intervals of
//! the mean ([`summarize`]), the interval of a comparison ([`ratio_interval`],
//! [`relative_change`]), Welch's t-test ([`welch`]), the Holm–Bonferroni correction
//! ([`holm_adjust`]) and the adaptive-repetition stop rule ([`adaptive_stop`]).
//! Student's t distribution comes from the `statrs` crate ([`t_quantile_975`],
//! [`student_t_two_sided_p`]). Paired comparisons (arms measured back to back in one
//! run: the ratio of geometric means, Wilcoxon/Hodges–Lehmann, and the rule for
//! sequential looks) are in [`paired`]. Where the variance of a measurement is (repetitions,
//! rounds, runs) is [`variance_components`]; the intervals of two separate runs that carry
//! the spread between runs (calibrated, or from a history) are in [`between_run`].
//!
//! # The interval of a comparison
//!
//! The gate's verdicts and `compare`'s ratio tables (lat_fs and steps) show one
//! interval, computed here and nowhere else:
//!
//! - **Statistic**: the ratio of the means of the two sides' samples (repetitions of a
//!   lat_fs cell, iterations of a step), `mean(candidate) / mean(baseline)`; in
//!   `compare` the first label is the baseline. The gate states it as the relative
//!   change, the ratio less 1 ([`relative_change`]). `compare` prints this ratio (lat_fs
//!   and steps tables alike), so the gate and `compare` state one statistic.
//! - **Interval**: Fieller's 95% confidence interval of that ratio for independent
//!   samples with unequal variances ([`ratio_interval`]): every ρ with
//!   `(c̄ - ρ b̄)² ≤ t² (s_c²/n_c + ρ² s_b²/n_b)`, t being Student's 97.5% quantile at
//!   the Welch–Satterthwaite degrees of freedom of `c - ρ̂ b`. It carries the
//!   baseline's own noise, so it is not symmetric around the ratio.
//! - **Unbounded** (`-inf`/`inf`: `null` in JSON, `[-inf, +inf]` in the gate's table,
//!   no interval in `compare`'s) when a side has fewer than two samples, or when the
//!   baseline mean is within noise of zero (`b̄² ≤ t² s_b²/n_b`). With no spread on either side it is the point itself. A
//!   baseline mean of exactly zero has no relative change: zero on both sides is no
//!   change, anything else is unbounded.
//! - **Use**: the gate's verdict (`Verdict::decide` in `gate`) with threshold `T` is
//!   regressed or improved only when the whole interval of the change lies beyond `T`
//!   on that side, unchanged only when it lies within `[-T, T]`, and inconclusive
//!   otherwise, so an unbounded interval is always inconclusive. `compare` prints its
//!   part at or above zero ([`positive_ratio_interval`]: every compared quantity is
//!   positive) as `[low, high]` after each ratio, `[low, ∞)` when it is open above (empty
//!   in CSV, `null` in JSON), and nothing when it has no bound at all; its significance marks come from Welch's t-test
//!   on the same samples, not from this interval (Holm–Bonferroni-corrected per
//!   lat_fs table).

//!
//! # Separate runs: the spread between runs
//!
//! The interval above covers the noise the samples show. When a side ran one round, its
//! samples are repetitions of one provisioning in one stretch of time and cannot show the
//! spread between runs; the gate then uses, for the same verdict rule, either
//! - the **calibrated interval** ([`between_run::calibrated_change`]): on the log scale,
//!   `d = mean ln c − mean ln b` with `Var(d) = w_b + w_c + 2 σ²_run` plus `σ²_round` for each
//!   one-round side (`w` the side's `s²/n`, or the calibrated `σ²_rep` for one sample),
//!   `exp(d ± t·sqrt(Var(d))) − 1` with Welch–Satterthwaite degrees of freedom, the variances
//!   from `fsbench calibrate` ([`variance_components`]); the change is the ratio of
//!   geometric means less one; or
//! - without a calibration, no decision: `inconclusive` (the rule is in `gate::between_run`).
//!
//! Against a history of runs (`gate --history N`), the **prediction interval**
//! [`between_run::history_change`]: `ln c − mean ln h ± t(N−1) · s · sqrt(1 + 1/N)`.

mod adaptive_stop;
pub mod between_run;
mod distributions;
pub mod paired;
mod proportions;
mod ratio;
mod significance;
mod summary;
pub mod variance_components;

pub use adaptive_stop::adaptive_stop;
pub use distributions::{student_t_two_sided_p, t_critical, t_quantile_975};
pub use proportions::two_proportion_p;
pub use ratio::{Change, positive_ratio_interval, ratio_interval, relative_change};
pub use significance::{Welch, holm_adjust, welch};
pub use summary::{median, positive_mean_interval, relative_half_width, summarize};
