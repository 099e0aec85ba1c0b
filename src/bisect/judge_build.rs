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

impl Builds {
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
    }
}
