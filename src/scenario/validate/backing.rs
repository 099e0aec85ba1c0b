//! `[backing]`: where the filesystems under test live (loop images over tmpfs, a
//! directory, a device) and how big the images are.

use std::path::{Path, PathBuf};

use crate::scenario::diagnose::{Ctx, Seg, p, with};
use crate::scenario::error::did_you_mean;
use crate::scenario::file::BackingFile;
use crate::scenario::units::parse_size;
use crate::scenario::*;

/// Smallest image fsbench will create: below this mkfs of most filesystems fails.
const MIN_IMAGE_SIZE: u64 = 16 << 20;
/// Largest (sparse) image: beyond this the number is a typo, not a plan.
const MAX_IMAGE_SIZE: u64 = 16 << 40;

fn size_value(ctx: &Ctx, path: &[Seg], v: &toml::Value) -> Result<u64, ScenarioError> {
    let s = match v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Integer(i) if *i > 0 => i.to_string(),
        other => {
            return Err(ctx.value_help(
                path,
                format!("expected a size, found {}", other.type_str()),
                "write a size with a unit, e.g. \"1GiB\"",
            ));
        }
    };
    let bytes = parse_size(&s).map_err(|e| ctx.value(path, e))?;
    if bytes < MIN_IMAGE_SIZE {
        return Err(ctx.value_help(
            path,
            format!("image size `{s}` is below the minimum of 16MiB"),
            "most mkfs tools refuse smaller images",
        ));
    }
    if bytes > MAX_IMAGE_SIZE {
        return Err(ctx.value_help(
            path,
            format!("image size `{s}` is larger than 16TiB"),
            "images are sparse, but a size this large is almost certainly a typo",
        ));
    }
    Ok(bytes)
}

pub(super) fn validate_backing(ctx: &Ctx, b: &BackingFile, base_dir: &Path) -> Result<Backing, ScenarioError> {
    match b.kind.as_str() {
        "tmpfs-loop" => {
            if b.path.is_some() {
                return Err(ctx.at(
                    &p("backing.path"),
                    true,
                    "`backing.path` is not used with `kind = \"tmpfs-loop\"`",
                    Some("fsbench makes its own tmpfs; use `kind = \"dir\"` to run in an existing directory".into()),
                ));
            }
            let (mut m, mut s) = (1u64 << 30, 10u64 << 30);
            match &b.image_size {
                None => {}
                Some(toml::Value::Table(t)) => {
                    for (k, v) in t {
                        let path = with(p("backing.image_size"), Seg::Key(k.clone()));
                        match k.as_str() {
                            "M" => m = size_value(ctx, &path, v)?,
                            "S" => s = size_value(ctx, &path, v)?,
                            other => {
                                return Err(ctx.at(
                                    &path,
                                    true,
                                    format!("unknown layout `{other}` in `backing.image_size`"),
                                    Some("use `M` and/or `S`".into()),
                                ));
                            }
                        }
                    }
                }
                Some(v) => {
                    let size = size_value(ctx, &p("backing.image_size"), v)?;
                    (m, s) = (size, size);
                }
            }
            Ok(Backing::TmpfsLoop { image_size_m: m, image_size_s: s })
        }
        "dir" | "device" => {
            if b.image_size.is_some() {
                return Err(ctx.at(
                    &p("backing.image_size"),
                    true,
                    format!("`backing.image_size` is not used with `kind = \"{}\"`", b.kind),
                    None,
                ));
            }
            let path = match b.path.as_deref().filter(|p| !p.is_empty()) {
                Some(path) => base_dir.join(path),
                // A directory backing without a path runs in a private directory of the run.
                None if b.kind == "dir" => PathBuf::new(),
                None => {
                    return Err(ctx.value_help(
                        &p("backing.kind"),
                        "`kind = \"device\"` needs `backing.path`",
                        "add path = \"/dev/...\" and pass the same device to --allow-device",
                    ));
                }
            };
            Ok(if b.kind == "dir" { Backing::Dir { path } } else { Backing::Device { path } })
        }
        other => Err(ctx.at(
            &p("backing.kind"),
            false,
            format!("unknown backing kind `{other}`"),
            did_you_mean(other, &["tmpfs-loop", "dir", "device"])
                .or(Some("use `tmpfs-loop`, `dir` or `device`".into())),
        )),
    }
}
