//! Run one step op through the library, for benches/steps.sh (side by side
//! with GNU tar and rm under /usr/bin/time -v).
//!
//! Usage: steps_direct untar ARCHIVE DEST | steps_direct rm_rf PATH

use std::path::Path;

use fsbench::workload::{steps, untar};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("untar") if args.len() == 4 => {
            let s = untar::unpack_tar_gz(Path::new(&args[2]), Path::new(&args[3]), &untar::Trust::Own)?;
            eprintln!("{} files, {} dirs, {} bytes", s.files, s.dirs, s.bytes);
        }
        Some("rm_rf") if args.len() == 3 => {
            let s = steps::rm_rf(Path::new(&args[2]), &|| false)?;
            eprintln!("{} files, {} dirs removed", s.files, s.dirs);
        }
        _ => anyhow::bail!("usage: steps_direct untar ARCHIVE DEST | steps_direct rm_rf PATH"),
    }
    Ok(())
}
