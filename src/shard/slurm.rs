//! `fsbench submit slurm`: an sbatch array script running the shards, and a dependent merge job.
//!
//! fsbench only writes the script and calls `sbatch`; Slurm schedules. Each
//! array task runs `fsbench run <scenario> --out <root>` and finds its shard in
//! `SLURM_ARRAY_TASK_ID`/`_COUNT`/`_MIN`; its run key is `slurm-<array job id>`
//! (Slurm sets `SLURM_ARRAY_JOB_ID`). The merge job waits for the whole array to
//! end, however its tasks ended (`--dependency=afterany:<id>`: with `afterok` one
//! failed shard would leave the merge pending forever, and the user would never
//! learn which shard is missing), and runs `fsbench merge <root>/<scenario>` with
//! `FSBENCH_RUN_KEY=slurm-<id>`, so it merges exactly that array's shards and names
//! the missing ones by number (exit 1).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::Context;

/// Failures of calling `sbatch`.
#[derive(Debug, thiserror::Error)]
pub enum SlurmError {
    /// The program could not be started (not installed, not in PATH).
    #[error("cannot run {program}: {source} (is Slurm's client installed and in PATH?)")]
    Spawn {
        /// The program.
        program: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// sbatch exited with an error.
    #[error("`{argv}` failed ({status}): {stderr}")]
    Failed {
        /// The command line.
        argv: String,
        /// Its exit status.
        status: std::process::ExitStatus,
        /// What it printed on stderr.
        stderr: String,
    },
    /// sbatch --parsable printed something that is not a job id.
    #[error("sbatch printed `{0}` where a job id was expected")]
    BadJobId(String),
}

/// What the generated jobs run.
#[derive(Debug, Clone)]
pub struct SlurmJob {
    /// The fsbench executable, as the compute nodes see it.
    pub exe: PathBuf,
    /// The scenario file (absolute), or the name of an embedded scenario.
    pub scenario: PathBuf,
    /// Scenario name (the results subdirectory and the job names).
    pub scenario_name: String,
    /// Number of shards (array tasks).
    pub shards: u32,
    /// Partition, when not the default one.
    pub partition: Option<String>,
    /// Shared results root (absolute).
    pub out: PathBuf,
}

/// Quote a word for a POSIX shell.
pub fn shell_quote(word: &str) -> String {
    if !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "/._-=:,+@%".contains(c)) {
        return word.to_string();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
}

fn q(p: &Path) -> String {
    shell_quote(&p.to_string_lossy())
}

impl SlurmJob {
    /// Refuse text that cannot be written into the batch script safely: `#SBATCH` lines are
    /// parsed by sbatch, not a shell, so they cannot be quoted. A newline in `--out` would
    /// end the line and start a command; a space would split an option.
    pub fn check(&self) -> Result<(), String> {
        if let Some(p) = &self.partition
            && (p.is_empty() || !p.chars().all(|c| c.is_ascii_alphanumeric() || "_.,-".contains(c)))
        {
            return Err(format!(
                "--partition `{}`: use partition names of A-Z a-z 0-9 _ . - (comma-separated)",
                crate::text::escape_control(p)
            ));
        }
        for (what, path) in
            [("--out", &self.out), ("the fsbench executable", &self.exe), ("the scenario", &self.scenario)]
        {
            let text = path.to_string_lossy();
            if text.chars().any(|c| c.is_control()) {
                return Err(format!(
                    "{what} `{}` contains a control character (a newline would become a command in the batch script)",
                    crate::text::escape_control(&text)
                ));
            }
        }
        let out = self.out.to_string_lossy();
        if out.chars().any(|c| c.is_whitespace() || "'\"\\%#".contains(c)) {
            return Err(format!(
                "--out `{out}`: sbatch's `#SBATCH --output=` cannot quote spaces, quotes, `%` or `#`; choose a plainer path"
            ));
        }
        Ok(())
    }

    /// Directory of the jobs' stdout/stderr files: `<out>/slurm`.
    pub fn log_dir(&self) -> PathBuf {
        self.out.join("slurm")
    }

    /// The command of the merge job (what `--wrap` runs).
    pub fn merge_command(&self) -> String {
        format!("{} merge {}", q(&self.exe), q(&self.out.join(&self.scenario_name)))
    }

    /// `sbatch` arguments of the merge job that waits for array job `array_job_id`.
    pub fn merge_sbatch_args(&self, array_job_id: &str) -> Vec<String> {
        let mut args = vec![
            "--parsable".to_string(),
            format!("--dependency=afterany:{array_job_id}"),
            format!("--job-name=fsbench-merge-{}", self.scenario_name),
            format!("--output={}", self.log_dir().join("merge-%j.out").display()),
            format!("--export=ALL,{}=slurm-{array_job_id}", super::env::RUN_KEY_VAR),
        ];
        if let Some(p) = &self.partition {
            args.push(format!("--partition={p}"));
        }
        args.push(format!("--wrap={}", self.merge_command()));
        args
    }

    /// The sbatch array script.
    pub fn array_script(&self) -> String {
        let n = self.shards;
        let mut s = String::from("#!/bin/bash\n");
        s.push_str(&format!(
            "# Generated by fsbench {} (`fsbench submit slurm`): scenario {} as {n} shards.\n",
            env!("CARGO_PKG_VERSION"),
            self.scenario_name
        ));
        s.push_str("# Each array task takes its shard from SLURM_ARRAY_TASK_ID/COUNT/MIN and writes\n");
        s.push_str(&format!(
            "# {}/<run-id>-shardKof{n}/. To submit it with its merge job by hand:\n",
            self.out.join(&self.scenario_name).display()
        ));
        s.push_str("#   jid=$(sbatch --parsable THIS_SCRIPT)\n");
        let merge: Vec<String> = self
            .merge_sbatch_args("$jid")
            .iter()
            .map(|a| if a.starts_with("--wrap=") || a.starts_with("--output=") { shell_quote(a) } else { a.clone() })
            .collect();
        s.push_str(&format!("#   sbatch {}\n", merge.join(" ").replace("'$jid'", "\"$jid\"")));
        s.push_str("# (`fsbench submit slurm --submit` does both.)\n");
        s.push_str(&format!("#SBATCH --job-name=fsbench-{}\n", self.scenario_name));
        s.push_str(&format!("#SBATCH --array=1-{n}\n"));
        if let Some(p) = &self.partition {
            s.push_str(&format!("#SBATCH --partition={p}\n"));
        }
        s.push_str("#SBATCH --ntasks=1\n");
        s.push_str(&format!("#SBATCH --output={}\n", self.log_dir().join("fsbench-%A_%a.out").display()));
        s.push_str("set -euo pipefail\n");
        s.push_str(&format!("exec {} run {} --out {} --quiet\n", q(&self.exe), q(&self.scenario), q(&self.out)));
        s
    }
}

/// Run `sbatch` with `args`, feeding `stdin` when given; returns the job id (`--parsable`).
pub fn sbatch(args: &[String], stdin: Option<&str>) -> Result<String, SlurmError> {
    let argv = format!("sbatch {}", args.iter().map(|a| shell_quote(a)).collect::<Vec<_>>().join(" "));
    let mut child = crate::signals::default_in_child(&mut Command::new("sbatch"))
        .args(args)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| SlurmError::Spawn { program: "sbatch".into(), source })?;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // A broken pipe shows up as sbatch's own error below.
        let _ = pipe.write_all(text.as_bytes());
    }
    let out = child.wait_with_output().map_err(|source| SlurmError::Spawn { program: "sbatch".into(), source })?;
    if !out.status.success() {
        return Err(SlurmError::Failed {
            argv,
            status: out.status,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    // `--parsable` prints `jobid` or `jobid;cluster`.
    let id = text.split(';').next().unwrap_or("").trim().to_string();
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit()) {
        return Err(SlurmError::BadJobId(text));
    }
    Ok(id)
}

/// Absolute form of a path given on the command line (the jobs run elsewhere).
pub fn absolute(p: &Path) -> anyhow::Result<PathBuf> {
    if p.is_absolute() {
        return Ok(p.to_path_buf());
    }
    Ok(std::env::current_dir().context("cannot read the current directory")?.join(p))
}

/// The scenario as the jobs name it: an absolute file path, or an embedded scenario's name.
pub fn scenario_arg(p: &Path) -> anyhow::Result<PathBuf> {
    if p.exists() {
        return p.canonicalize().with_context(|| format!("cannot resolve {}", p.display()));
    }
    Ok(p.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_newline_in_out_or_partition_never_reaches_the_slurm_script() {
        let job = |out: &str, partition: Option<&str>| SlurmJob {
            exe: "/usr/bin/fsbench".into(),
            scenario: "/s/q.toml".into(),
            scenario_name: "q".into(),
            shards: 2,
            partition: partition.map(String::from),
            out: out.into(),
        };
        assert!(job("/shared/results", Some("batch,debug")).check().is_ok());
        assert!(job("/shared/r\nrm -rf ~", None).check().unwrap_err().contains("control character"));
        assert!(job("/shared/results", Some("x\n#SBATCH --uid=0")).check().is_err());
        assert!(job("/shared/my results", None).check().is_err());
    }

    fn job() -> SlurmJob {
        SlurmJob {
            exe: "/opt/fsbench/bin/fsbench".into(),
            scenario: "/home/lab/my scenario.toml".into(),
            scenario_name: "quickstart".into(),
            shards: 8,
            partition: Some("bench".into()),
            out: "/shared/results".into(),
        }
    }

    #[test]
    fn array_script_runs_the_shards_from_the_environment() {
        let s = job().array_script();
        assert!(s.starts_with("#!/bin/bash\n"));
        for line in [
            "#SBATCH --array=1-8",
            "#SBATCH --partition=bench",
            "#SBATCH --output=/shared/results/slurm/fsbench-%A_%a.out",
        ] {
            assert!(s.lines().any(|l| l == line), "missing `{line}` in\n{s}");
        }
        assert!(
            s.contains(
                "exec /opt/fsbench/bin/fsbench run '/home/lab/my scenario.toml' --out /shared/results --quiet\n"
            ),
            "{s}"
        );
        assert!(!s.contains("--shard"), "the shard comes from SLURM_ARRAY_TASK_*");
        // #SBATCH lines must come before the first command or sbatch ignores them.
        let first_cmd = s.lines().position(|l| !l.starts_with('#')).unwrap();
        assert!(s.lines().skip(first_cmd).all(|l| !l.starts_with("#SBATCH")));
    }

    #[test]
    fn merge_job_depends_on_the_array_and_selects_its_key() {
        let a = job().merge_sbatch_args("4242");
        assert!(a.contains(&"--dependency=afterany:4242".to_string()));
        assert!(a.contains(&"--export=ALL,FSBENCH_RUN_KEY=slurm-4242".to_string()));
        assert_eq!(a.last().unwrap(), "--wrap=/opt/fsbench/bin/fsbench merge /shared/results/quickstart");
    }

    #[test]
    fn shell_quoting() {
        assert_eq!(shell_quote("/a/b.toml"), "/a/b.toml");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
