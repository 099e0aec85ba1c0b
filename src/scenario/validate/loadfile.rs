//! `loadfile = "…"` of an ops group: read the dbench loadfile (beneath the scenario's
//! directory, or an absolute path such as the `dbench` package's
//! `/usr/share/dbench/client.txt`), bounded before it is read whole, and parse it; a
//! refused line is shown as `file:line`.

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use crate::scenario::diagnose::{Ctx, Seg};
use crate::scenario::loadfile_parse::parse;
use crate::scenario::loadfile_spec::{Loadfile, MAX_LOADFILE_BYTES};
use crate::scenario::*;

/// The loadfile `file` named at `at`, parsed.
pub(super) fn read_loadfile(
    ctx: &Ctx,
    at: &[Seg],
    file: &str,
    base_dir: &Path,
) -> Result<Arc<Loadfile>, ScenarioError> {
    let help = "name a file in the scenario's directory or below it (no `..`, no symbolic link), or an absolute path";
    if file.is_empty() || file.contains('\0') {
        return Err(ctx.value_help(at, "the loadfile's name is empty or contains NUL", help));
    }
    let origin =
        if Path::new(file).is_absolute() { file.to_string() } else { base_dir.join(file).display().to_string() };
    let text = read_text(file, base_dir).map_err(|e| {
        let why = match e.raw_os_error() {
            Some(libc::EFBIG) => format!("is larger than {} MiB", MAX_LOADFILE_BYTES >> 20),
            Some(libc::EINVAL) | Some(libc::EXDEV) => "is not beneath the scenario's directory".to_string(),
            Some(libc::ELOOP) => "is or passes through a symbolic link".to_string(),
            _ => format!("cannot be read: {e}"),
        };
        ctx.value_help(at, format!("loadfile `{file}` {why}"), help)
    })?;
    let lf = parse(&text, &origin).map_err(|e| {
        let place = if e.line == 0 { origin.clone() } else { format!("{origin}:{}", e.line) };
        ctx.value(at, format!("loadfile {place}: {}", e.message))
    })?;
    Ok(Arc::new(lf))
}

/// The text of loadfile `file` (absolute, or relative to `base_dir` and beneath it,
/// through no symbolic link), bounded to [`MAX_LOADFILE_BYTES`] before it is read whole
/// (`EFBIG` past it). What validation parses and what `bundle pack` carries are the same read.
pub(crate) fn read_text(file: &str, base_dir: &Path) -> std::io::Result<String> {
    let f = if Path::new(file).is_absolute() {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(file)?
    } else {
        let rel = std::ffi::CString::new(file)?;
        let dir = crate::beneath::open_dir(if base_dir.as_os_str().is_empty() { Path::new(".") } else { base_dir })?;
        std::fs::File::from(crate::beneath::open_beneath(
            &dir,
            &rel,
            libc::O_RDONLY,
            0,
            crate::beneath::Resolver::Auto,
        )?)
    };
    let mut text = String::new();
    // One byte past the cap tells a file that is too big from one that just fits.
    f.take(MAX_LOADFILE_BYTES + 1).read_to_string(&mut text)?;
    if text.len() as u64 > MAX_LOADFILE_BYTES {
        return Err(std::io::Error::from_raw_os_error(libc::EFBIG));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use crate::scenario::ops_spec::Flow;
    use crate::scenario::parse_overridden;

    fn scenario(group: &str) -> String {
        format!(
            "schema = 1\nname = \"t\"\n[matrix]\nfs = [\"ext4\"]\n[backing]\nkind = \"tmpfs-loop\"\nimage_size = \"1GiB\"\n\
             [workload]\nkind = \"ops\"\nduration = \"1s\"\n[[workload.group]]\nthreads = 3\n{group}\n"
        )
    }

    fn refused(dir: &std::path::Path, group: &str) -> String {
        parse_overridden(&scenario(group), "f.toml", dir, &[]).expect_err(group).to_string()
    }

    #[test]
    fn a_loadfile_group_needs_no_fileset_and_reads_its_file_beneath_the_scenario() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("c.txt"), "Close 1 NT_STATUS_OK\nFlush 1 NT_STATUS_OK\n").unwrap();
        let s = parse_overridden(&scenario("loadfile = \"c.txt\""), "f.toml", dir.path(), &[]).unwrap();
        let crate::scenario::Workload::Ops(o) = &s.workload else { panic!() };
        assert!(o.spec.filesets.is_empty());
        let Flow::Loadfile(lf) = &o.spec.groups[0].flow else { panic!() };
        assert_eq!((lf.ops.len(), o.spec.groups[0].threads), (2, 3));
    }

    #[test]
    fn bad_loadfiles_are_refused_at_the_key_with_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::write(p.join("bad.txt"), "Close 1 NT_STATUS_OK\nUnlink \"\\clients\\..\\x\" 0 NT_STATUS_OK\n")
            .unwrap();
        let e = refused(p, "loadfile = \"bad.txt\"");
        assert!(e.contains(&format!("{}:2: path", p.join("bad.txt").display())) && e.contains("`..`"), "{e}");
        std::os::unix::fs::symlink("bad.txt", p.join("link.txt")).unwrap();
        assert!(refused(p, "loadfile = \"link.txt\"").contains("symbolic link"));
        assert!(refused(p, "loadfile = \"../x.txt\"").contains("not beneath"));
        assert!(refused(p, "loadfile = \"/nonexistent/client.txt\"").contains("cannot be read"));
        let e = refused(p, "loadfile = \"bad.txt\"\nloop = [{ op = \"close\", fd = 1 }]");
        assert!(e.contains("`loadfile` and `loop` exclude each other"), "{e}");
        std::fs::write(p.join("empty.txt"), "# nothing\n").unwrap();
        assert!(refused(p, "loadfile = \"empty.txt\"").contains("has no ops"));
    }
}
