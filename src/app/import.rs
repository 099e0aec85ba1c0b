//! `fsbench import FILE.f`: a filebench workload file as an op-mix scenario, on stdout or
//! into `-o FILE` (the subset `scenario::filebench_import` reads; anything else refused
//! with its line, exit 2).

use std::io::Read;
use std::path::PathBuf;

use clap::Args;

use crate::exit::{self, InputError};
use crate::scenario::filebench_import::{MAX_F_BYTES, import};

/// `fsbench import`.
#[derive(Debug, Clone, Args)]
pub struct ImportArgs {
    /// The filebench workload file (`varmail.f`, …).
    pub file: PathBuf,
    /// The scenario's name; default the file's name without `.f`.
    #[arg(long)]
    pub name: Option<String>,
    /// Write the scenario here (refused if it exists) instead of on stdout.
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
}

/// `fsbench import`: convert, check that fsbench reads the result, print or write it.
pub fn import_filebench(args: &ImportArgs) -> anyhow::Result<i32> {
    let shown = args.file.display().to_string();
    let mut text = String::new();
    std::fs::File::open(&args.file)
        .and_then(|f| f.take(MAX_F_BYTES as u64 + 1).read_to_string(&mut text))
        .map_err(|e| InputError::anyhow(format!("{shown}: cannot be read: {e}")))?;
    let stem = args.file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let name = args.name.clone().unwrap_or(stem);
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)) {
        return Err(InputError::anyhow(format!(
            "scenario name `{}` must be letters, digits, `.`, `_` or `-` (give one with --name)",
            name.escape_debug()
        )));
    }
    let imported = import(&text, &name).map_err(|e| InputError::anyhow(format!("{shown}: {e}")))?;
    // What fsbench itself would read: a conversion it cannot run is a bug here, said as one.
    crate::scenario::parse_str(&imported.text, &format!("{name}.toml")).map_err(|e| {
        anyhow::anyhow!("the scenario made from {shown} does not validate (a bug in fsbench import): {e}")
    })?;
    for note in &imported.notes {
        eprintln!("fsbench: note: {note}");
    }
    match &args.output {
        None => print!("{}", imported.text),
        Some(out) => {
            use std::io::Write as _;
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(out)
                .map_err(|e| InputError::anyhow(format!("{}: cannot be created: {e}", out.display())))?;
            f.write_all(imported.text.as_bytes())?;
            eprintln!("fsbench: wrote {} (check it with `fsbench plan {}`)", out.display(), out.display());
        }
    }
    Ok(exit::SUCCESS)
}
