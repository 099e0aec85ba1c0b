//! Candidates built when the bisection needs them (`bisect --git`): a [`StepJudge`] that
//! builds (or finds in the build cache) both kernels of a step before the inner judge
//! compares them. A candidate whose build fails is a **skip** (as `git bisect run`'s exit
//! 125), the very answer a kernel that does not boot gives, so the search steps around it.

use std::path::Path;

use super::build_cache::{BuildCache, BuildSpec, Built, Entry};
use super::git::Commit;
use super::search::StepJudge;
use super::step::{StepMeasure, StepVerdict};
use crate::exit::InputError;
use crate::model::pairing::PairStop;
use crate::scenario::KernelSpec;

/// A judge told of each candidate once it is built (its image and modules are known
/// only then).
pub trait BuiltJudge: StepJudge {
    /// Candidate `position` is built as `kernel`.
    fn built(&mut self, position: usize, kernel: &KernelSpec);
}

impl BuiltJudge for super::judge_kernels::KernelJudge<'_> {
    fn built(&mut self, _position: usize, kernel: &KernelSpec) {
        self.members.set_kernel(kernel.clone());
    }
}

/// The candidates of a git range and their builds so far.
pub struct Builds {
    /// Where builds are kept.
    pub cache: BuildCache,
    /// How each is built.
    pub spec: BuildSpec,
    /// The candidates, oldest first.
    pub commits: Vec<Commit>,
    /// Each candidate's kernel (image in its cache entry, whether built yet or not).
    pub kernels: Vec<KernelSpec>,
    /// Each candidate's build once tried: the entry, or why it failed.
    tried: Vec<Option<Result<Entry, String>>>,
    /// Builds run by this process (cache hits not counted).
    pub ran: usize,
    /// No progress lines.
    pub quiet: bool,
}

/// What `bisect --git` was given.
#[derive(Debug, Clone)]
pub struct GitArgs {
    /// `--git TREE`.
    pub tree: std::path::PathBuf,
    /// `--range GOOD..BAD`.
    pub range: String,
    /// `--build CMD`.
    pub build: String,
    /// `--config FILE`.
    pub config: Option<std::path::PathBuf>,
    /// `--build-cache DIR` (default: [`super::build_cache::default_dir`]).
    pub cache: Option<std::path::PathBuf>,
}

/// Largest `--config` file read.
pub const MAX_CONFIG_BYTES: u64 = 16 << 20;

/// Read a `--config` file once (its content is hashed into the cache key and handed to the
/// build): bad input when it cannot be read.
fn read_config(path: &Path) -> anyhow::Result<(std::path::PathBuf, Vec<u8>)> {
    use std::io::Read;
    let bad = |why: String| InputError::anyhow(format!("--config {}: {why}", path.display()));
    let f = std::fs::File::open(path).map_err(|e| bad(e.to_string()))?;
    let mut bytes = Vec::new();
    f.take(MAX_CONFIG_BYTES + 1).read_to_end(&mut bytes).map_err(|e| bad(e.to_string()))?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(bad(format!("larger than {} MiB", MAX_CONFIG_BYTES >> 20)));
    }
    Ok((std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()), bytes))
}

impl Builds {
    /// The candidates of `a`'s range and their build, checked (bad input: the range, an
    /// empty build command, an unreadable config), the cache opened; nothing built.
    pub fn open(a: &GitArgs, quiet: bool) -> anyhow::Result<Builds> {
        if a.build.trim().is_empty() {
            return Err(InputError::anyhow("--build: an empty build command"));
        }
        let commits = super::git::candidates(&a.tree, &a.range)?;
        let config = a.config.as_deref().map(read_config).transpose()?;
        let tree = std::path::absolute(&a.tree).unwrap_or_else(|_| a.tree.clone());
        let spec = BuildSpec { tree, command: a.build.clone(), config };
        let cache = BuildCache::open(&a.cache.clone().unwrap_or_else(super::build_cache::default_dir))?;
        Ok(Builds::new(cache, spec, commits, quiet))
    }

    /// The builds of a resumed bisection of a git range, from its log: the same commits,
    /// the same command, a config file whose content has not changed.
    pub fn resume(log: &super::log::BisectLog, g: &super::log::GitRecord, quiet: bool) -> anyhow::Result<Builds> {
        let a = GitArgs {
            tree: g.tree.clone().into(),
            range: format!("{}..{}", g.good, g.bad),
            build: g.build.clone(),
            config: g.config.clone().map(Into::into),
            cache: Some(g.cache.clone().into()),
        };
        let b = Builds::open(&a, quiet)?;
        if b.spec.config_sha256() != g.config_sha256 {
            return Err(InputError::anyhow(format!(
                "--resume: the config file {} changed since the bisection started",
                g.config.as_deref().unwrap_or("-")
            )));
        }
        let labels: Vec<&str> = log.candidates.iter().map(|c| c.label.as_str()).collect();
        if b.commits.iter().map(|c| c.short.as_str()).ne(labels.iter().copied()) {
            return Err(InputError::anyhow("--resume: the range's commits are not the candidates the log holds"));
        }
        Ok(b)
    }

    /// What the log keeps of the range and the build.
    pub fn record(&self) -> super::log::GitRecord {
        super::log::GitRecord {
            tree: self.spec.tree.display().to_string(),
            good: self.commits[0].id.clone(),
            bad: self.commits[self.commits.len() - 1].id.clone(),
            build: self.spec.command.clone(),
            config: self.spec.config.as_ref().map(|(p, _)| p.display().to_string()),
            config_sha256: self.spec.config_sha256(),
            cache: self.cache.dir().display().to_string(),
        }
    }

    /// Fill the log's git record and each candidate's commit.
    pub fn annotate(&self, log: &mut super::log::BisectLog) {
        log.git = Some(self.record());
        for (c, commit) in log.candidates.iter_mut().zip(&self.commits) {
            c.commit = Some(commit.id.clone());
        }
    }

    /// The candidates `commits`, built by `spec` into `cache`; nothing is built yet.
    pub fn new(cache: BuildCache, spec: BuildSpec, commits: Vec<Commit>, quiet: bool) -> Builds {
        let kernels = commits.iter().map(|c| kernel(&cache, &spec, c, None)).collect();
        let tried = vec![None; commits.len()];
        Builds { cache, spec, commits, kernels, tried, ran: 0, quiet }
    }

    /// How many candidates the cache already holds.
    pub fn cached(&self) -> usize {
        self.commits.iter().filter(|c| self.cache.lookup(&self.spec.key(&c.id)).is_some()).count()
    }

    /// Candidate `i` built (from the cache, or now): `Ok(None)` when a signal stopped the
    /// build, `Ok(Some(Err(why)))` when it failed.
    pub fn ensure(&mut self, i: usize) -> anyhow::Result<Option<Result<&KernelSpec, String>>> {
        if self.tried[i].is_none() {
            let c = &self.commits[i];
            let hit = self.cache.lookup(&self.spec.key(&c.id));
            let built = match hit {
                Some(e) => Built::Ready(e),
                None => {
                    self.ran += 1;
                    self.cache.build(&self.spec, &c.id, &c.short, self.quiet)?
                }
            };
            self.tried[i] = match built {
                Built::Ready(e) => {
                    self.kernels[i] = kernel(&self.cache, &self.spec, c, e.modules.as_deref());
                    Some(Ok(e))
                }
                Built::Failed(why) => {
                    if !self.quiet {
                        eprintln!("fsbench: the build of {} failed, skipping it: {why}", c.short);
                    }
                    Some(Err(why))
                }
                Built::Interrupted => return Ok(None),
            };
        }
        Ok(Some(match &self.tried[i] {
            Some(Ok(_)) => Ok(&self.kernels[i]),
            Some(Err(why)) => Err(why.clone()),
            None => unreachable!("tried above"),
        }))
    }

    /// Build the endpoints first (before anything boots). Both failing is bad input: the
    /// build command does not work for this range (exit 2, the reasons named); one failing
    /// is left to the search (an endpoint that cannot be measured).
    pub fn endpoints(&mut self) -> anyhow::Result<bool> {
        let last = self.commits.len() - 1;
        let Some(good) = self.ensure(0)?.map(|r| r.err()) else { return Ok(false) };
        let Some(bad) = self.ensure(last)?.map(|r| r.err()) else { return Ok(false) };
        if let (Some(g), Some(b)) = (good, bad) {
            return Err(InputError::anyhow(format!(
                "the build command failed for both endpoints, so nothing can be measured: {}: {g}; {}: {b}",
                self.commits[0].short, self.commits[last].short
            )));
        }
        Ok(true)
    }
}

/// Candidate `c`'s kernel: labelled by its short id, its image in its cache entry.
fn kernel(cache: &BuildCache, spec: &BuildSpec, c: &Commit, modules: Option<&Path>) -> KernelSpec {
    let image = cache.entry_dir(&spec.key(&c.id)).join(super::build_cache::IMAGE);
    let mut k = KernelSpec {
        label: c.short.clone(),
        image,
        modules: None,
        cmdline: String::new(),
        memory: crate::scenario::DEFAULT_GUEST_MEMORY,
        cpus: crate::scenario::DEFAULT_GUEST_CPUS,
    };
    k.modules = modules.map(Path::to_path_buf);
    k
}

/// Every step's two candidates built before `inner` compares them; a failed build is a skip.
pub struct BuildingJudge<'a, J: BuiltJudge> {
    /// The candidates and their builds.
    pub builds: &'a mut Builds,
    /// Compares two built candidates.
    pub inner: J,
}

impl<J: BuiltJudge> StepJudge for BuildingJudge<'_, J> {
    fn judge(&mut self, baseline: usize, candidate: usize) -> anyhow::Result<Option<StepMeasure>> {
        for i in [baseline, candidate] {
            match self.builds.ensure(i)? {
                None => return Ok(None),
                Some(Err(why)) => {
                    let why = format!("the build of {} failed: {why}", self.builds.commits[i].short);
                    return Ok(Some(skipped(why)));
                }
                Some(Ok(k)) => {
                    let k = k.clone();
                    self.inner.built(i, &k);
                }
            }
        }
        self.inner.judge(baseline, candidate)
    }
}

/// A step not measured because a candidate could not be built.
fn skipped(why: String) -> StepMeasure {
    StepMeasure {
        verdict: StepVerdict::Skip,
        paired_verdict: "missing".into(),
        ratio: None,
        ratio_low: None,
        ratio_high: None,
        level: 0.0,
        pairs: 0,
        dropped: 0,
        stop: PairStop::MemberFailed,
        reason: Some(why),
        run: None,
        cells: Vec::new(),
        profile: None,
    }
}
