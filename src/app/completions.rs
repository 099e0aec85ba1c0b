//! `fsbench completions SHELL`: a completion script for bash, zsh or fish on stdout.

use clap::{Args, Command, CommandFactory, ValueEnum};

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

/// The completion script of `shell` for the whole command line, hidden commands left out.
pub fn script(shell: Shell) -> Vec<u8> {
    let mut cmd = completable(&super::Cli::command());
    let mut out = Vec::new();
    let generator = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    clap_complete::generate(generator, &mut cmd, "fsbench", &mut out);
    out
}

/// `cmd` as completions offer it: without its hidden subcommands (`__latfs-worker`), at every
/// level. clap_complete's generators leave out hidden arguments and values but complete hidden
/// subcommands, and a command's subcommands can only be added to: a command with a hidden one is
/// built again from what completion reads (names, help, aliases, arguments, the help and version
/// flags and subcommand); one without is kept whole.
fn completable(cmd: &Command) -> Command {
    fn hides(cmd: &Command) -> bool {
        cmd.get_subcommands().any(|s| s.is_hide_set() || hides(s))
    }
    if !hides(cmd) {
        return cmd.clone();
    }
    let hidden_aliases: Vec<String> =
        cmd.get_all_aliases().filter(|a| !cmd.get_visible_aliases().any(|v| v == *a)).map(String::from).collect();
    let mut out = Command::new(cmd.get_name().to_string())
        .visible_aliases(cmd.get_visible_aliases().map(String::from).collect::<Vec<_>>())
        .aliases(hidden_aliases)
        .args(cmd.get_arguments().cloned())
        .groups(cmd.get_groups().cloned())
        .subcommand_required(cmd.is_subcommand_required_set())
        .arg_required_else_help(cmd.is_arg_required_else_help_set())
        .disable_help_subcommand(cmd.is_disable_help_subcommand_set())
        .disable_help_flag(cmd.is_disable_help_flag_set())
        .disable_version_flag(cmd.is_disable_version_flag_set())
        .subcommands(cmd.get_subcommands().filter(|s| !s.is_hide_set()).map(completable));
    if let Some(about) = cmd.get_about() {
        out = out.about(about.clone());
    }
    if let Some(about) = cmd.get_long_about() {
        out = out.long_about(about.clone());
    }
    if let Some(v) = cmd.get_version() {
        out = out.version(v.to_string());
    }
    if let Some(v) = cmd.get_long_version() {
        out = out.long_version(v.to_string());
    }
    if let Some(bin) = cmd.get_bin_name() {
        out = out.bin_name(bin.to_string());
    }
    out
}

/// `fsbench completions`: print the script.
pub fn completions(args: &CompletionsArgs) -> anyhow::Result<i32> {
    use std::io::Write as _;
    std::io::stdout().write_all(&script(args.shell))?;
    Ok(crate::exit::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every command below `cmd` as `(path, arguments, aliases, hidden)`.
    fn tree(cmd: &Command, path: &str, out: &mut Vec<(String, Vec<String>, Vec<String>, bool)>) {
        for s in cmd.get_subcommands() {
            let p = format!("{path} {}", s.get_name());
            let args = s.get_arguments().map(|a| format!("{a:?}")).collect();
            out.push((p.clone(), args, s.get_all_aliases().map(String::from).collect(), s.is_hide_set()));
            tree(s, &p, out);
        }
    }

    #[test]
    fn completable_leaves_out_hidden_commands_and_keeps_the_rest_whole() {
        let full = crate::app::Cli::command();
        let shown = completable(&full);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        tree(&full, "fsbench", &mut a);
        tree(&shown, "fsbench", &mut b);
        assert!(a.iter().any(|c| c.3), "the test needs a hidden command");
        let visible: Vec<_> = a.into_iter().filter(|c| !c.3).collect();
        assert_eq!(b, visible);
        assert_eq!(shown.get_version(), full.get_version());
        assert_eq!(shown.get_about().map(|s| s.to_string()), full.get_about().map(|s| s.to_string()));
        assert_eq!(shown.get_arguments().count(), full.get_arguments().count());
    }
}
