//! The label that names a run (`--label`).

/// Whether `label` can name a run: 1 to 64 of A-Z a-z 0-9 . _ - + (labels become column
/// names such as `BASE-ext2-M-qoff` in space-separated seed tables and directory names).
pub fn is_valid_label(label: &str) -> bool {
    !label.is_empty() && label.len() <= 64 && label.chars().all(|c| c.is_ascii_alphanumeric() || "._-+".contains(c))
}

/// What [`is_valid_label`] allows, for error messages.
pub const LABEL_RULE: &str = "1 to 64 characters from A-Z a-z 0-9 . _ - +";
