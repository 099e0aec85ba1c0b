//! Per-worker accounting of the ops: count, bytes, time inside the system calls and a
//! latency histogram per op kind, the loops and their latency; merged over the workers
//! into the cell's [`OpsRepetition`] figures.

use std::time::Duration;

use hdrhistogram::Histogram;

use crate::model::OpStat;
use crate::monitor::latency;
use crate::scenario::op_kinds::{DELAY_KIND, KIND_COUNT, kind_name};

/// One op kind's running figures.
pub struct KindAcc {
    /// Ops completed.
    pub count: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Nanoseconds inside the system calls.
    pub total_ns: u64,
    /// Latency histogram, nanoseconds.
    pub hist: Histogram<u64>,
}

/// One worker's figures (histograms only for the kinds it runs).
pub struct Account {
    /// Indexed by account index ([`super::spec::kind_name`]).
    pub kinds: Vec<Option<KindAcc>>,
    /// Loops completed.
    pub loops: u64,
    /// Loop latency, nanoseconds.
    pub loop_hist: Histogram<u64>,
    /// Ops completed, every kind but `delay` (`workload.ops`).
    pub ops: u64,
    /// Bytes moved, every kind (`workload.bytes`).
    pub bytes: u64,
}

impl Account {
    /// An account for a worker running the kinds `used` (account indexes).
    pub fn new(used: &[usize]) -> Account {
        let mut kinds: Vec<Option<KindAcc>> = (0..KIND_COUNT).map(|_| None).collect();
        for &k in used {
            kinds[k] = Some(KindAcc { count: 0, bytes: 0, total_ns: 0, hist: latency::histogram() });
        }
        Account { kinds, loops: 0, loop_hist: latency::histogram(), ops: 0, bytes: 0 }
    }

    /// One op of kind `k` took `d` and moved `bytes`.
    #[inline]
    pub fn record(&mut self, k: usize, d: Duration, bytes: u64) {
        let ns = d.as_nanos().min(u64::MAX as u128) as u64;
        let a = self.kinds[k].as_mut().expect("an account for every kind of the flow");
        a.count += 1;
        a.bytes += bytes;
        a.total_ns += ns;
        a.hist.saturating_record(ns.max(1));
        self.ops += u64::from(k != DELAY_KIND);
        self.bytes += bytes;
    }

    /// One loop took `d`.
    pub fn loop_done(&mut self, d: Duration) {
        self.loops += 1;
        self.loop_hist.saturating_record((d.as_nanos().min(u64::MAX as u128) as u64).max(1));
    }

    /// Add another worker's figures.
    pub fn merge(&mut self, other: &Account) {
        for (mine, theirs) in self.kinds.iter_mut().zip(&other.kinds) {
            if let Some(t) = theirs {
                let m =
                    mine.get_or_insert_with(|| KindAcc { count: 0, bytes: 0, total_ns: 0, hist: latency::histogram() });
                m.count += t.count;
                m.bytes += t.bytes;
                m.total_ns += t.total_ns;
                m.hist.add(&t.hist).expect("histograms of one shape add");
            }
        }
        self.loops += other.loops;
        self.ops += other.ops;
        self.bytes += other.bytes;
        self.loop_hist.add(&other.loop_hist).expect("histograms of one shape add");
    }

    /// The per-kind lines over a window of `secs` seconds, in `order` (kind indexes), and
    /// the total over every kind but `delay`.
    pub fn stats(&self, order: &[usize], secs: f64) -> (Vec<OpStat>, OpStat) {
        let line = |op: &str, count: u64, bytes: u64, total_ns: u64, h: &Histogram<u64>| OpStat {
            op: op.to_string(),
            count,
            bytes,
            ops_per_s: if secs > 0.0 { count as f64 / secs } else { 0.0 },
            mb_per_s: if secs > 0.0 { bytes as f64 / secs / 1e6 } else { 0.0 },
            total_ns,
            latency: latency::dist(h),
        };
        let mut lines = Vec::new();
        let mut all = latency::histogram();
        let (mut count, mut bytes, mut ns) = (0, 0, 0);
        for &k in order {
            if let Some(a) = &self.kinds[k] {
                lines.push(line(kind_name(k), a.count, a.bytes, a.total_ns, &a.hist));
                if kind_name(k) != "delay" {
                    all.add(&a.hist).expect("histograms of one shape add");
                    count += a.count;
                    bytes += a.bytes;
                    ns += a.total_ns;
                }
            }
        }
        (lines, line("total", count, bytes, ns, &all))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_accounts_sum_counts_bytes_and_histograms() {
        let (open, read, delay) = (1, 3, 19);
        let mut a = Account::new(&[open, read, delay]);
        let mut b = Account::new(&[open, read]);
        a.record(open, Duration::from_micros(10), 0);
        a.record(read, Duration::from_micros(100), 4096);
        a.record(delay, Duration::from_millis(1), 0);
        b.record(open, Duration::from_micros(20), 0);
        b.loop_done(Duration::from_micros(150));
        a.merge(&b);
        let (lines, total) = a.stats(&[open, read, delay], 2.0);
        assert_eq!(
            lines.iter().map(|l| (l.op.as_str(), l.count)).collect::<Vec<_>>(),
            [("open", 2), ("read", 1), ("delay", 1)]
        );
        assert_eq!(total.count, 3);
        assert_eq!(total.bytes, 4096);
        assert_eq!(lines[0].ops_per_s, 1.0);
        assert!((lines[0].latency.max_ns as f64 - 20_000.0).abs() < 200.0);
        assert_eq!(a.loops, 1);
        assert_eq!((a.ops, a.bytes), (3, 4096), "delay is not an op");
    }
}
