//! `fsbench man`: the manual pages (roff), generated from the same definitions as `--help`,
//! with the two sections clap does not know: EXIT STATUS and EXAMPLES.

use std::path::PathBuf;

use clap::{Args, CommandFactory};
use clap_mangen::roff::{Roff, bold, roman};

/// `fsbench man`.
#[derive(Debug, Clone, Args)]
pub struct ManArgs {
    /// The command whose page to print (`fsbench man run`, `fsbench man bundle pack`);
    /// without one, the top page `fsbench.1`.
    #[arg(value_name = "COMMAND")]
    pub command: Vec<String>,
    /// Write `fsbench.1` and one `fsbench-<command>.1` per subcommand into this directory
    /// instead of printing one page (`man -l fsbench.1` reads it).
    #[arg(long, value_name = "DIR", conflicts_with = "command")]
    pub dir: Option<PathBuf>,
}

/// The exit codes every command shares, as the EXIT STATUS section lists them.
const EXIT_STATUS: &[(i32, &str)] = &[
    (crate::exit::SUCCESS, "everything ran and nothing failed (skipped cells are not failures)"),
    (crate::exit::FAILURE, "the command ran but something failed: a cell failed, a gate found a regression"),
    (crate::exit::USAGE, "bad usage or bad input: an unknown option, a malformed scenario, an unreadable result"),
    (crate::exit::INTERRUPTED, "interrupted by SIGINT or SIGTERM, after cleaning up"),
];

/// Examples per command page (`fsbench-run`), as `(command line, what it does)`.
fn examples(page: &str) -> &'static [(&'static str, &'static str)] {
    match page {
        "fsbench" => &[
            ("fsbench run", "run the embedded quickstart scenario on this host"),
            ("fsbench plan scenarios/quota-smp.toml", "show the cells and which would be skipped here"),
            ("fsbench report latest", "print the newest run as tables"),
            ("fsbench man run", "the manual page of one command"),
        ],
        "fsbench-run" => &[
            ("fsbench run scenarios/quota-smp.toml --label BASE", "reproduce seed 000, labelled BASE"),
            ("fsbench run scenarios/quota-smp.toml --only fs=ext4,tasks=1", "run part of the matrix"),
            ("fsbench run scenarios/kernel-untar.toml --set workload.iterations=3", "override a scenario value"),
        ],
        "fsbench-validate" => &[("fsbench validate scenarios/*.toml", "check every bundled scenario")],
        "fsbench-plan" => &[
            ("fsbench plan scenarios/quota-smp.toml", "the cells, what each needs, which are skipped"),
            ("fsbench plan --json | jq '.cells | length'", "count the cells"),
        ],
        "fsbench-doctor" => &[("fsbench doctor", "what this host can run")],
        "fsbench-list" => &[("fsbench list", "the scenarios at hand")],
        "fsbench-report" => &[
            ("fsbench report latest", "the newest run under ./results"),
            ("fsbench report results/quota-smp", "list the runs of one scenario"),
            ("fsbench report quota-smp@BASE --html base.html", "one run as a page"),
        ],
        "fsbench-compare" => {
            &[("fsbench compare BASE=quota-smp@BASE NEW=quota-smp@latest", "two runs side by side, with ratios")]
        }
        "fsbench-gate" => &[(
            "fsbench gate --baseline quota-smp@BASE --candidate quota-smp@latest --html gate.html",
            "fail on a significant slowdown (for CI)",
        )],
        "fsbench-bundle-pack" => &[(
            "fsbench bundle pack scenarios/quota-smp.toml -o quota-smp.fsbench",
            "one file another lab can verify and run",
        )],
        "fsbench-bundle-run" => &[("fsbench bundle run quota-smp.fsbench", "verify and run a bundle")],
        "fsbench-man" => &[
            ("fsbench man | man -l -", "read the top page"),
            ("fsbench man gate | man -l -", "read one command's page"),
            ("fsbench man --dir /usr/local/share/man/man1", "install every page"),
        ],
        _ => &[],
    }
}

/// The EXAMPLES, EXIT STATUS and SEE ALSO sections of `page`.
fn extra_sections(page: &str, subpages: &[String]) -> Roff {
    let mut roff = Roff::default();
    let ex = examples(page);
    if !ex.is_empty() {
        roff.control("SH", ["EXAMPLES"]);
        for (cmd, what) in ex {
            roff.control("TP", []);
            roff.text([bold(*cmd)]);
            roff.text([roman(*what)]);
        }
    }
    roff.control("SH", ["EXIT STATUS"]);
    for (code, meaning) in EXIT_STATUS {
        roff.control("TP", []);
        roff.text([bold(code.to_string())]);
        roff.text([roman(*meaning)]);
    }
    if page == "fsbench-gate" {
        roff.control("TP", []);
        roff.text([bold("125, 128")]);
        roff.text([roman("with --bisect: skip this revision, or stop the bisection (see --bisect)")]);
    }
    if !subpages.is_empty() {
        // The pages named above exist only once installed: say how to read them either way.
        roff.control("SH", ["SEE ALSO"]);
        roff.text([roman(format!(
            "{}. Read one with `{} COMMAND | man -l -`; install all with `fsbench man --dir DIR`.",
            subpages.join(", "),
            page.replacen("fsbench", "fsbench man", 1).replace('-', " ")
        ))]);
    }
    roff
}

/// One page: clap's sections, then ours.
fn render_page(cmd: &clap::Command, name: &str) -> std::io::Result<Vec<u8>> {
    let subpages: Vec<String> = cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
        .map(|s| format!("{name}-{}(1)", s.get_name()))
        .collect();
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone().name(name.to_string())).render(&mut page)?;
    extra_sections(name, &subpages).to_writer(&mut page)?;
    Ok(page)
}

/// The pages: `(file name, roff)` for fsbench and for each visible subcommand, nested ones included.
pub fn pages() -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    fn walk(cmd: &clap::Command, prefix: &str, out: &mut Vec<(String, Vec<u8>)>) -> std::io::Result<()> {
        let name = if prefix.is_empty() { cmd.get_name().to_string() } else { format!("{prefix}-{}", cmd.get_name()) };
        out.push((format!("{name}.1"), render_page(cmd, &name)?));
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
            walk(sub, &name, out)?;
        }
        Ok(())
    }
    let mut cmd = super::Cli::command();
    cmd.build();
    let mut out = Vec::new();
    walk(&cmd, "", &mut out)?;
    Ok(out)
}

/// `fsbench man`: print the top page or one command's, or write every page into `--dir`.
pub fn man(args: &ManArgs) -> anyhow::Result<i32> {
    use std::io::Write as _;
    let pages = pages()?;
    match &args.dir {
        None => {
            let file = std::iter::once("fsbench").chain(args.command.iter().map(String::as_str)).collect::<Vec<_>>();
            let file = format!("{}.1", file.join("-"));
            let Some((_, page)) = pages.iter().find(|(name, _)| *name == file) else {
                let known: Vec<&str> = pages
                    .iter()
                    .skip(1)
                    .map(|(n, _)| n.trim_start_matches("fsbench-").trim_end_matches(".1"))
                    .collect();
                return Err(crate::exit::InputError::anyhow(format!(
                    "no manual page for `{}`: the commands are {}",
                    args.command.join(" "),
                    known.join(", ").replace('-', " ")
                )));
            };
            std::io::stdout().write_all(page)?
        }
        Some(dir) => {
            super::checks::check_output_dir("--dir", dir)?;
            std::fs::create_dir_all(dir)?;
            for (name, page) in &pages {
                crate::results::write_atomic(&dir.join(name), page)?;
            }
            eprintln!("wrote {} manual pages to {}", pages.len(), dir.display());
        }
    }
    Ok(crate::exit::SUCCESS)
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;

    #[test]
    fn every_example_parses_as_a_command_line() {
        let pages = pages().unwrap();
        for (file, _) in &pages {
            for (line, _) in examples(file.trim_end_matches(".1")) {
                let argv = line.split('|').next().unwrap().split_whitespace();
                if let Err(e) = super::super::Cli::try_parse_from(argv) {
                    panic!("{file}: `{line}` does not parse: {e}");
                }
            }
        }
    }

    #[test]
    fn every_page_has_exit_status_and_the_top_page_says_how_to_read_the_others() {
        for (file, page) in pages().unwrap() {
            let text = String::from_utf8(page).unwrap();
            assert!(text.contains("EXIT STATUS"), "{file}");
        }
        let top = String::from_utf8(pages().unwrap().remove(0).1).unwrap();
        assert!(top.contains(".SH EXAMPLES"), "{top}");
        assert!(top.contains("fsbench man COMMAND"), "{top}");
    }
}
