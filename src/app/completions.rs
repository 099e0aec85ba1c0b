//! `fsbench completions SHELL`: a completion script for bash, zsh or fish on stdout.

use clap::{Args, CommandFactory, ValueEnum};

/// Shells fsbench writes completions for.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Shell {
    /// bash: `fsbench completions bash > ~/.local/share/bash-completion/completions/fsbench`.
    Bash,
    /// zsh: write `_fsbench` into a directory of `$fpath`.
    Zsh,
    /// fish: `fsbench completions fish > ~/.config/fish/completions/fsbench.fish`.
    Fish,
}

/// `fsbench completions`.
#[derive(Debug, Clone, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    pub shell: Shell,
}

/// The completion script of `shell` for the whole command line (the workers fsbench starts of
/// itself are not part of it: `app::internal`).
pub fn script(shell: Shell) -> Vec<u8> {
    let mut cmd = super::Cli::command();
    let mut out = Vec::new();
    let generator = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    clap_complete::generate(generator, &mut cmd, "fsbench", &mut out);
    out
}

/// `fsbench completions`: print the script.
pub fn completions(args: &CompletionsArgs) -> anyhow::Result<i32> {
    use std::io::Write as _;
    std::io::stdout().write_all(&script(args.shell))?;
    Ok(crate::exit::SUCCESS)
}
