//! fio's JSON output file (`--output-format=json+`) read into typed figures.
//!
//! Every field used is required: a shape fio changed, or a file with fio's error
//! text around the JSON (axboe/fio#731), is an error naming the fio version and the
//! missing field, never a silent zero. The cell's percentiles over several jobs come
//! from fio's latency histograms (`clat_ns.bins`, which json+ adds) merged, since
//! percentiles of different jobs cannot be combined from the percentiles alone.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::model::{FioDirection, FioJobStats, FioLatency};

/// Why an output file could not be read.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum FioJsonError {
    /// Text before or after the JSON document (fio prints errors into the output file).
    #[error("{version} wrote text around its JSON output: `{text}`")]
    TextAround {
        /// fio's version, as `fio --version` said it.
        version: String,
        /// The first line of the stray text.
        text: String,
    },
    /// The file is not JSON at all.
    #[error("{version} wrote output that is not JSON ({reason})")]
    NotJson {
        /// fio's version.
        version: String,
        /// serde_json's reason.
        reason: String,
    },
    /// A field fsbench reads is missing or of another type.
    #[error(
        "{version}'s JSON has no {what} at `{path}`: fio changed its output format? (fsbench reads fio 3.x's json+)"
    )]
    Shape {
        /// fio's version (the JSON's own, when it has one).
        version: String,
        /// The JSON path (`jobs[0].write.clat_ns.bins`).
        path: String,
        /// What was expected there (`number`, `object`).
        what: &'static str,
    },
    /// A job reported an error.
    #[error("{version}: job `{job}` failed with error {code} ({name})")]
    JobError {
        /// fio's version.
        version: String,
        /// The job's name.
        job: String,
        /// fio's error number (an errno).
        code: i64,
        /// The errno's name, where known.
        name: String,
    },
    /// No job completed any I/O: nothing to measure.
    #[error("{version} completed no I/O in any job")]
    NoIo {
        /// fio's version.
        version: String,
    },
}

/// One fio output file, read.
#[derive(Debug, Clone, PartialEq)]
pub struct FioOutput {
    /// `fio version` from the file (`fio-3.33`).
    pub version: String,
    /// Each job (clone) as fio reported it.
    pub jobs: Vec<FioJobStats>,
    /// The jobs summed, with percentiles over their merged histograms.
    pub total: FioJobStats,
}

/// Read fio's output file text; `binary_version` (from `fio --version`) names fio in
/// errors found before the file's own version is known.
pub fn parse(text: &str, binary_version: &str) -> Result<FioOutput, FioJsonError> {
    let trimmed = text.trim();
    let start = trimmed.find('{');
    let end = trimmed.rfind('}');
    let (Some(start), Some(end)) = (start, end) else {
        return Err(stray(binary_version, trimmed));
    };
    if start > 0 {
        return Err(stray(binary_version, &trimmed[..start]));
    }
    if end + 1 < trimmed.len() {
        return Err(stray(binary_version, &trimmed[end + 1..]));
    }
    let doc: Value = serde_json::from_str(trimmed)
        .map_err(|e| FioJsonError::NotJson { version: binary_version.to_string(), reason: e.to_string() })?;
    let r = Reader { version: binary_version.to_string() };
    let version = r.str(&doc, "fio version")?.to_string();
    let r = Reader { version };
    let jobs_v = doc.get("jobs").and_then(Value::as_array).ok_or_else(|| r.shape("jobs", "array"))?;
    let mut jobs = Vec::with_capacity(jobs_v.len());
    let mut bins: BTreeMap<&str, Vec<&serde_json::Map<String, Value>>> = BTreeMap::new();
    for (i, j) in jobs_v.iter().enumerate() {
        let at = format!("jobs[{i}]");
        let name = r.str(j, &format!("{at}.jobname"))?.to_string();
        let code = r.num(j, &format!("{at}.error"))? as i64;
        if code != 0 {
            let name_of = nix::errno::Errno::from_raw(code as i32);
            return Err(FioJsonError::JobError {
                version: r.version.clone(),
                job: name,
                code,
                name: format!("{name_of}"),
            });
        }
        let mut stats = FioJobStats {
            name,
            usr_cpu: r.num(j, &format!("{at}.usr_cpu"))?,
            sys_cpu: r.num(j, &format!("{at}.sys_cpu"))?,
            ..Default::default()
        };
        for dir in ["read", "write"] {
            let (d, b) = r.direction(j, &format!("{at}.{dir}"))?;
            if let Some(b) = b {
                bins.entry(dir).or_default().push(b);
            }
            if dir == "read" {
                stats.read = d;
            } else {
                stats.write = d;
            }
        }
        stats.all = combined(&[&stats.read, &stats.write], &[]);
        // Per job, the percentiles over both directions come from its two histograms.
        let own: Vec<_> = ["read", "write"]
            .iter()
            .filter_map(|d| {
                j.get(*d).and_then(|x| x.get("clat_ns")).and_then(|c| c.get("bins")).and_then(Value::as_object)
            })
            .collect();
        stats.all.clat_ns = merged_latency(&[&stats.read, &stats.write], &own);
        jobs.push(stats);
    }
    if jobs.is_empty() {
        return Err(r.shape("jobs[0]", "job"));
    }
    let mut total = FioJobStats { name: "total".into(), ..Default::default() };
    let reads: Vec<&FioDirection> = jobs.iter().map(|j| &j.read).collect();
    let writes: Vec<&FioDirection> = jobs.iter().map(|j| &j.write).collect();
    let no_bins = Vec::new();
    total.read = combined(&reads, bins.get("read").unwrap_or(&no_bins));
    total.write = combined(&writes, bins.get("write").unwrap_or(&no_bins));
    let all_bins: Vec<_> = bins.values().flatten().copied().collect();
    total.all = combined(&[&total.read, &total.write], &all_bins);
    total.usr_cpu = jobs.iter().map(|j| j.usr_cpu).sum();
    total.sys_cpu = jobs.iter().map(|j| j.sys_cpu).sum();
    if total.all.total_ios == 0 {
        return Err(FioJsonError::NoIo { version: r.version });
    }
    Ok(FioOutput { version: r.version, jobs, total })
}

fn stray(version: &str, text: &str) -> FioJsonError {
    let line = text.trim().lines().next().unwrap_or("").chars().take(200).collect();
    FioJsonError::TextAround { version: version.to_string(), text: line }
}

/// Directions summed: IOPS, bandwidth and I/O counts added, the mean weighted by I/O
/// count, percentiles from `bins` merged (zero without bins).
fn combined(parts: &[&FioDirection], bins: &[&serde_json::Map<String, Value>]) -> FioDirection {
    let total_ios: u64 = parts.iter().map(|d| d.total_ios).sum();
    FioDirection {
        iops: parts.iter().map(|d| d.iops).sum(),
        bw_bytes: parts.iter().map(|d| d.bw_bytes).sum(),
        total_ios,
        clat_ns: merged_latency(parts, bins),
    }
}

/// The latency of `parts` together: the I/O-weighted mean, percentiles from the merged histograms.
fn merged_latency(parts: &[&FioDirection], bins: &[&serde_json::Map<String, Value>]) -> FioLatency {
    let total_ios: u64 = parts.iter().map(|d| d.total_ios).sum();
    let mean = if total_ios == 0 {
        0.0
    } else {
        parts.iter().map(|d| d.clat_ns.mean * d.total_ios as f64).sum::<f64>() / total_ios as f64
    };
    let mut hist: BTreeMap<u64, u64> = BTreeMap::new();
    for b in bins {
        for (k, v) in b.iter() {
            if let (Ok(ns), Some(n)) = (k.parse::<u64>(), v.as_u64()) {
                *hist.entry(ns).or_default() += n;
            }
        }
    }
    let n: u64 = hist.values().sum();
    let pct = |p: f64| -> f64 {
        if n == 0 {
            return 0.0;
        }
        let want = ((p / 100.0) * n as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (ns, c) in &hist {
            seen += c;
            if seen >= want {
                return *ns as f64;
            }
        }
        hist.keys().next_back().copied().unwrap_or(0) as f64
    };
    FioLatency { mean, p50: pct(50.0), p90: pct(90.0), p99: pct(99.0), p99_9: pct(99.9) }
}

/// Reads required fields, naming fio's version and the path of what is missing.
struct Reader {
    version: String,
}

impl Reader {
    fn shape(&self, path: &str, what: &'static str) -> FioJsonError {
        FioJsonError::Shape { version: self.version.clone(), path: path.to_string(), what }
    }

    /// The value at the last segment of `path` (after the last `.`) in `v`.
    fn field<'v>(&self, v: &'v Value, path: &str) -> Option<&'v Value> {
        v.get(path.rsplit_once('.').map_or(path, |(_, k)| k))
    }

    fn str<'v>(&self, v: &'v Value, path: &str) -> Result<&'v str, FioJsonError> {
        self.field(v, path).and_then(Value::as_str).ok_or_else(|| self.shape(path, "string"))
    }

    fn num(&self, v: &Value, path: &str) -> Result<f64, FioJsonError> {
        self.field(v, path).and_then(Value::as_f64).ok_or_else(|| self.shape(path, "number"))
    }

    /// One direction of a job, with its histogram when it did I/O.
    #[allow(clippy::type_complexity)]
    fn direction<'v>(
        &self,
        job: &'v Value,
        path: &str,
    ) -> Result<(FioDirection, Option<&'v serde_json::Map<String, Value>>), FioJsonError> {
        let d = self.field(job, path).filter(|x| x.is_object()).ok_or_else(|| self.shape(path, "object"))?;
        let total_ios = self.num(d, &format!("{path}.total_ios"))? as u64;
        let clat_path = format!("{path}.clat_ns");
        let clat =
            self.field(d, &clat_path).filter(|x| x.is_object()).ok_or_else(|| self.shape(&clat_path, "object"))?;
        let mut out = FioDirection {
            iops: self.num(d, &format!("{path}.iops"))?,
            bw_bytes: self.num(d, &format!("{path}.bw_bytes"))?,
            total_ios,
            clat_ns: FioLatency { mean: self.num(clat, &format!("{clat_path}.mean"))?, ..Default::default() },
        };
        if total_ios == 0 {
            return Ok((out, None));
        }
        let pct_path = format!("{clat_path}.percentile");
        let pct =
            self.field(clat, &pct_path).filter(|x| x.is_object()).ok_or_else(|| self.shape(&pct_path, "object"))?;
        // Percentile keys hold dots themselves (`99.900000`): looked up whole, not by the path's last segment.
        let at = |key: &str| {
            pct.get(key).and_then(Value::as_f64).ok_or_else(|| self.shape(&format!("{pct_path}.{key}"), "number"))
        };
        out.clat_ns.p50 = at("50.000000")?;
        out.clat_ns.p90 = at("90.000000")?;
        out.clat_ns.p99 = at("99.000000")?;
        out.clat_ns.p99_9 = at("99.900000")?;
        let bins_path = format!("{clat_path}.bins");
        let bins =
            self.field(clat, &bins_path).and_then(Value::as_object).ok_or_else(|| self.shape(&bins_path, "object"))?;
        Ok((out, Some(bins)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// fio 3.33's json+ output of two 1 s jobs (a 2-clone randwrite with fsync, a randread), captured here.
    const FIO_3_33: &str = include_str!("../../../tests/fixtures/fio/fio-3.33-jsonplus.json");

    #[test]
    fn fio_3_33_output_is_read_per_job_and_summed() {
        let out = parse(FIO_3_33, "fio-3.33").unwrap();
        assert_eq!(out.version, "fio-3.33");
        assert_eq!(out.jobs.len(), 3);
        let iops: f64 = out.jobs.iter().map(|j| j.read.iops + j.write.iops).sum();
        assert!((out.total.all.iops - iops).abs() < 1e-6);
        assert!(out.total.all.iops > 0.0 && out.total.all.bw_bytes > 0.0);
        let l = &out.total.all.clat_ns;
        assert!(l.p50 > 0.0 && l.p50 <= l.p90 && l.p90 <= l.p99 && l.p99 <= l.p99_9, "{l:?}");
        // One job alone: the merged histogram gives fio's own percentile (fio reports the bucket value).
        let j = &out.jobs[2];
        assert_eq!(j.all.clat_ns.p99, j.read.clat_ns.p99, "{j:?}");
    }

    #[test]
    fn a_changed_shape_names_the_version_and_the_field() {
        let renamed = FIO_3_33.replacen("\"total_ios\"", "\"totalios\"", 1);
        let e = parse(&renamed, "fio-3.33").unwrap_err();
        assert_eq!(
            e.to_string(),
            "fio-3.33's JSON has no number at `jobs[0].read.total_ios`: fio changed its output format? (fsbench reads fio 3.x's json+)"
        );
        let no_bins = FIO_3_33.replace("\"bins\"", "\"bons\"");
        assert!(
            matches!(parse(&no_bins, "fio-3.33"), Err(FioJsonError::Shape { path, .. }) if path.ends_with("clat_ns.bins"))
        );
        let no_version = FIO_3_33.replacen("\"fio version\"", "\"version\"", 1);
        assert!(
            parse(&no_version, "fio-3.99")
                .unwrap_err()
                .to_string()
                .starts_with("fio-3.99's JSON has no string at `fio version`")
        );
    }

    #[test]
    fn error_text_around_the_json_is_an_error_not_a_zero() {
        let before = format!(
            "fio: pid=123, err=28/file:io_u.c:1889, func=io_u error, error=No space left on device\n{FIO_3_33}"
        );
        let e = parse(&before, "fio-3.33").unwrap_err();
        assert!(e.to_string().contains("text around its JSON output: `fio: pid=123"), "{e}");
        let after = format!("{FIO_3_33}\nfio: file hash not empty on exit\n");
        assert!(matches!(parse(&after, "fio-3.33"), Err(FioJsonError::TextAround { .. })));
        assert!(matches!(parse("", "fio-3.33"), Err(FioJsonError::TextAround { .. })));
        assert!(matches!(parse("{\"fio version\": ", "fio-3.33"), Err(FioJsonError::TextAround { .. })));
        assert!(matches!(parse("{ nope }", "fio-3.33"), Err(FioJsonError::NotJson { .. })));
        let failed = FIO_3_33.replacen("\"error\" : 0", "\"error\" : 28", 1);
        assert!(parse(&failed, "fio-3.33").unwrap_err().to_string().contains("failed with error 28 (ENOSPC"), "");
    }
}
