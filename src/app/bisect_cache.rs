//! `fsbench bisect-cache list|prune`: what `bisect --git`'s build cache holds, and removing
//! old builds from it (docs/bisect.md, "The build cache").

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use clap::{Args, Subcommand};

use crate::bisect::build_cache::{self, BuildCache};
use crate::bisect::build_prune::{self, Item, Kind, Prune};
use crate::exit::{self, InputError};
use crate::text::escape_control;

/// `fsbench bisect-cache ...`.
#[derive(Debug, Clone, Subcommand)]
pub enum BisectCacheCommand {
    /// List the builds in the cache, most recently used first, with their commits and sizes.
    List(CacheArgs),
    /// Remove builds: all but the N most recently used (`--keep N`), or those unused for
    /// DAYS days (`--older-than DAYS`). Only what fsbench made is removed.
    Prune(PruneArgs),
}

/// The cache a command reads.
#[derive(Debug, Clone, Args)]
pub struct CacheArgs {
    /// The build cache (default: `$XDG_CACHE_HOME/fsbench/builds`, as `bisect --build-cache`).
    #[arg(long, value_name = "DIR")]
    pub build_cache: Option<PathBuf>,
}

/// `fsbench bisect-cache prune`.
#[derive(Debug, Clone, Args)]
pub struct PruneArgs {
    #[command(flatten)]
    pub cache: CacheArgs,
    /// Keep the N most recently used builds; remove the others, every failed build's log and
    /// every scratch directory a killed build left.
    #[arg(long, value_name = "N", conflicts_with = "older_than", required_unless_present = "older_than")]
    pub keep: Option<usize>,
    /// Remove the builds and failed logs not used for DAYS days (a fraction is allowed), and
    /// every scratch directory a killed build left.
    #[arg(long, value_name = "DAYS")]
    pub older_than: Option<f64>,
    /// Only say what would be removed.
    #[arg(long)]
    pub dry_run: bool,
}

fn open(args: &CacheArgs) -> anyhow::Result<BuildCache> {
    let dir = args.build_cache.clone().unwrap_or_else(build_cache::default_dir);
    BuildCache::open(&dir).map_err(|e| InputError::anyhow(format!("{e:#}")))
}

fn line(i: &Item, now: SystemTime) -> String {
    let days = now.duration_since(i.used).unwrap_or(Duration::ZERO).as_secs_f64() / 86_400.0;
    let what = match (i.kind, &i.commit) {
        (Kind::Entry, Some(c)) => format!("commit {}", escape_control(c)),
        (Kind::Entry, None) => "build".into(),
        (Kind::FailedLog, _) => "failed build's log".into(),
        (Kind::Scratch, _) => "scratch of an unfinished build".into(),
    };
    format!(
        "{:<24} {:>10}  used {:>6.1} days ago  {}",
        what,
        crate::text::bytes_short(i.bytes),
        days,
        escape_control(&i.name)
    )
}

/// `fsbench bisect-cache list`.
pub fn list(args: &CacheArgs) -> anyhow::Result<i32> {
    let cache = open(args)?;
    let c = build_prune::contents(&cache)?;
    let now = SystemTime::now();
    println!("build cache {}", cache.dir().display());
    for i in &c.items {
        println!("  {}", line(i, now));
    }
    let total: u64 = c.items.iter().map(|i| i.bytes).sum();
    let builds = c.items.iter().filter(|i| i.kind == Kind::Entry).count();
    println!("{builds} builds, {} in all", crate::text::bytes_short(total));
    if !c.foreign.is_empty() {
        println!("{} other names (not fsbench's: never removed)", c.foreign.len());
    }
    Ok(exit::SUCCESS)
}

/// `fsbench bisect-cache prune`.
pub fn prune(args: &PruneArgs) -> anyhow::Result<i32> {
    let rule = match (args.keep, args.older_than) {
        (Some(n), _) => Prune::Keep(n),
        (None, Some(d)) if d.is_finite() && (0.0..=36_500.0).contains(&d) => {
            Prune::OlderThan(Duration::from_secs_f64(d * 86_400.0))
        }
        (None, Some(d)) => return Err(InputError::anyhow(format!("--older-than {d}: days from 0 to 36500"))),
        (None, None) => return Err(InputError::anyhow("prune needs --keep N or --older-than DAYS")),
    };
    let cache = open(&args.cache)?;
    let c = build_prune::contents(&cache)?;
    let now = SystemTime::now();
    let chosen = build_prune::selected(&c, rule, now);
    let verb = if args.dry_run { "would remove" } else { "removing" };
    for i in &chosen {
        println!("{verb} {}", line(i, now));
    }
    let freed = if args.dry_run { chosen.iter().map(|i| i.bytes).sum() } else { build_prune::remove(&cache, &chosen)? };
    let kept = c.items.iter().filter(|i| i.kind == Kind::Entry).count()
        - chosen.iter().filter(|i| i.kind == Kind::Entry).count();
    println!(
        "{} {} names ({}); {kept} builds kept in {}",
        if args.dry_run { "would remove" } else { "removed" },
        chosen.len(),
        crate::text::bytes_short(freed),
        cache.dir().display()
    );
    if !c.foreign.is_empty() {
        println!("{} other names left alone (not fsbench's)", c.foreign.len());
    }
    Ok(exit::SUCCESS)
}
