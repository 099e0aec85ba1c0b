//! Latency distributions: a log-linear histogram per worker, merged over tasks and repetitions.
//!
//! The histogram is HdrHistogram's (the `hdrhistogram` crate): constant-time
//! recording without allocation, 2 significant digits (every bucket is at most
//! 1% wide) from 1 ns to an hour. It travels from a worker to the parent as its
//! non-empty buckets, `value:count` pairs, and is stored the same way
//! ([`LatencyDist::buckets`]), so merging and CDF plots need nothing else.

use hdrhistogram::Histogram;

use crate::model::LatencyDist;

/// Significant decimal digits: buckets at most 1% wide.
pub const SIGNIFICANT_DIGITS: u8 = 2;

/// Highest latency a histogram holds (longer ones are recorded as this): one hour.
pub const HIGHEST_NS: u64 = 3_600_000_000_000;

/// Most buckets a distribution may carry in from a worker line or a result file:
/// 2 digits over 1 ns .. 1 h have fewer than 6,000 buckets.
pub const MAX_BUCKETS: usize = 8192;

/// A new, empty latency histogram (nanoseconds).
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIGHEST_NS, SIGNIFICANT_DIGITS).expect("valid histogram bounds")
}

/// The non-empty buckets of `h` as `[value_ns, count]`, ascending.
pub fn buckets(h: &Histogram<u64>) -> Vec<[u64; 2]> {
    h.iter_recorded().map(|v| [h.highest_equivalent(v.value_iterated_to()), v.count_at_value()]).collect()
}

/// Add `[value, count]` buckets to `h`; out-of-range values are clamped.
pub fn add_buckets(h: &mut Histogram<u64>, buckets: &[[u64; 2]]) {
    for [v, c] in buckets {
        h.saturating_record_n(*v, *c);
    }
}

/// Percentiles and buckets of a histogram.
pub fn dist(h: &Histogram<u64>) -> LatencyDist {
    if h.is_empty() {
        return LatencyDist { significant_digits: SIGNIFICANT_DIGITS, ..LatencyDist::default() };
    }
    let q = |x: f64| h.highest_equivalent(h.value_at_quantile(x));
    LatencyDist {
        count: h.len(),
        min_ns: h.min(),
        mean_ns: h.mean(),
        p50_ns: q(0.5),
        p90_ns: q(0.9),
        p99_ns: q(0.99),
        p999_ns: q(0.999),
        max_ns: h.highest_equivalent(h.max()),
        significant_digits: SIGNIFICANT_DIGITS,
        buckets: buckets(h),
    }
}

/// Merge distributions (tasks of one repetition, or repetitions of a cell).
pub fn merge<'a>(dists: impl IntoIterator<Item = &'a LatencyDist>) -> LatencyDist {
    let mut h = histogram();
    for d in dists {
        add_buckets(&mut h, &d.buckets);
    }
    dist(&h)
}

/// `value:count value:count ...`: the compact form a worker sends on its result line.
pub fn encode(h: &Histogram<u64>) -> String {
    let mut out = String::new();
    for [v, c] in buckets(h) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&format!("{v}:{c}"));
    }
    out
}

/// Parse [`encode`]'s form; `None` when malformed or longer than [`MAX_BUCKETS`].
pub fn decode(text: &str) -> Option<Vec<[u64; 2]>> {
    let mut out = Vec::new();
    for pair in text.split_ascii_whitespace() {
        if out.len() == MAX_BUCKETS {
            return None;
        }
        let (v, c) = pair.split_once(':')?;
        out.push([v.parse().ok()?, c.parse().ok()?]);
    }
    Some(out)
}

/// A stored percentile of a latency distribution, as `--metric` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Percentile {
    /// Median.
    P50,
    /// 90th percentile.
    P90,
    /// 99th percentile.
    P99,
    /// 99.9th percentile.
    P999,
    /// Longest operation.
    Max,
}

impl Percentile {
    /// Every percentile, in order.
    pub const ALL: [Percentile; 5] =
        [Percentile::P50, Percentile::P90, Percentile::P99, Percentile::P999, Percentile::Max];

    /// Name as given to `--metric` (`p99.9`).
    pub fn name(self) -> &'static str {
        match self {
            Percentile::P50 => "p50",
            Percentile::P90 => "p90",
            Percentile::P99 => "p99",
            Percentile::P999 => "p99.9",
            Percentile::Max => "max",
        }
    }

    /// The percentile named `name` (`p999` is accepted for `p99.9`).
    pub fn parse(name: &str) -> Option<Percentile> {
        let name = if name == "p999" { "p99.9" } else { name };
        Percentile::ALL.into_iter().find(|p| p.name() == name)
    }

    /// Its value in a distribution, nanoseconds.
    pub fn of(self, d: &LatencyDist) -> u64 {
        match self {
            Percentile::P50 => d.p50_ns,
            Percentile::P90 => d.p90_ns,
            Percentile::P99 => d.p99_ns,
            Percentile::P999 => d.p999_ns,
            Percentile::Max => d.max_ns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_within_one_percent() {
        let mut h = histogram();
        for v in 1..=100_000u64 {
            h.record(v * 10).unwrap();
        }
        let d = dist(&h);
        let near = |got: u64, want: u64| (got as f64 / want as f64 - 1.0).abs() < 0.01;
        assert_eq!(d.count, 100_000);
        assert!(near(d.p50_ns, 500_000), "{}", d.p50_ns);
        assert!(near(d.p99_ns, 990_000) && near(d.p999_ns, 999_000) && near(d.max_ns, 1_000_000));
        assert!(d.p50_ns <= d.p90_ns && d.p90_ns <= d.p99_ns && d.p99_ns <= d.p999_ns && d.p999_ns <= d.max_ns);
    }

    #[test]
    fn encoding_round_trips_and_merging_adds_counts() {
        let mut a = histogram();
        a.record_n(1_500, 1000).unwrap();
        a.record(2_000_000).unwrap();
        let wire = encode(&a);
        let mut b = histogram();
        add_buckets(&mut b, &decode(&wire).unwrap());
        assert_eq!(dist(&a), dist(&b));
        let m = merge([&dist(&a), &dist(&b)]);
        assert_eq!(m.count, 2002);
        assert!(m.max_ns >= 2_000_000 && m.max_ns < 2_020_000);
        assert_eq!(decode("12:x"), None);
        assert_eq!(decode(""), Some(vec![]));
        assert_eq!(Percentile::parse("p99.9").map(|p| p.of(&m)), Some(m.p999_ns));
        assert_eq!(Percentile::parse("p999"), Some(Percentile::P999));
        assert_eq!(Percentile::parse("p42"), None);
    }

    #[test]
    fn an_empty_histogram_has_zero_percentiles() {
        let d = dist(&histogram());
        assert_eq!((d.count, d.p99_ns, d.buckets.len()), (0, 0, 0));
    }
}
