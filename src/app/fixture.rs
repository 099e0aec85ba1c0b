//! `fsbench fixture`: deterministic test data (a synthetic kernel tree as .tar.gz).

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::exit::{self, InputError};
use crate::fixture::{GENERATOR_VERSION, check_args, generate_kernel_tree};

/// `fsbench fixture ...`.
#[derive(Debug, Clone, Subcommand)]
pub enum FixtureCommand {
    /// A synthetic kernel source tree with the shape of a real one, as a .tar.gz.
    KernelTree(KernelTreeArgs),
}

/// `fsbench fixture kernel-tree`.
#[derive(Debug, Clone, Args)]
pub struct KernelTreeArgs {
    /// The tree to imitate.
    #[arg(long, default_value = "linux-2.5.63")]
    pub profile: String,
    /// Scale factor on the number of files and directories (1.0 = the real tree).
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// Generator seed: the same seed gives byte-identical output.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output file (.tar.gz).
    #[arg(short, long)]
    pub output: PathBuf,
}

/// `fsbench fixture kernel-tree`: write the archive and print what it holds.
pub fn kernel_tree(args: &KernelTreeArgs) -> anyhow::Result<i32> {
    check_args(&args.profile, args.scale).map_err(|e| InputError::anyhow(e.to_string()))?;
    super::checks::check_output_file("--output", &args.output)?;
    let stats = generate_kernel_tree(&args.profile, args.scale, args.seed, &args.output)?;
    println!(
        "wrote {} (profile {}, scale {}, seed {}, generator v{})",
        args.output.display(),
        args.profile,
        args.scale,
        args.seed,
        GENERATOR_VERSION
    );
    println!("{stats}");
    Ok(exit::SUCCESS)
}
