//! `fsbench man`: the manual page (roff), generated from the same definitions as `--help`.

use std::path::PathBuf;

use clap::{Args, CommandFactory};

/// `fsbench man`.
#[derive(Debug, Clone, Args)]
pub struct ManArgs {
    /// Write `fsbench.1` and one `fsbench-<command>.1` per subcommand into this directory
    /// instead of printing `fsbench.1` (`man -l fsbench.1` reads it).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// The pages: `(file name, roff)` for fsbench and for each visible subcommand, nested ones included.
pub fn pages() -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    fn walk(cmd: &clap::Command, prefix: &str, out: &mut Vec<(String, Vec<u8>)>) -> std::io::Result<()> {
        let name = if prefix.is_empty() { cmd.get_name().to_string() } else { format!("{prefix}-{}", cmd.get_name()) };
        let mut page = Vec::new();
        clap_mangen::Man::new(cmd.clone().name(name.clone())).render(&mut page)?;
        out.push((format!("{name}.1"), page));
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

/// `fsbench man`: print the main page, or write every page into `--dir`.
pub fn man(args: &ManArgs) -> anyhow::Result<i32> {
    use std::io::Write as _;
    let pages = pages()?;
    match &args.dir {
        None => std::io::stdout().write_all(&pages[0].1)?,
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
