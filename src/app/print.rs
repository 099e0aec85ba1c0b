//! How command output is laid out for whoever reads it.

/// The width tables are laid out for: the terminal's, or 100 columns when output is piped
/// (a log, a mail, a PR comment), so nothing depends on how wide the writer's terminal was.
pub fn output_width() -> u16 {
    use std::io::IsTerminal as _;
    let tty = std::io::stdout().is_terminal();
    let cols = if tty { comfy_table::Table::new().width() } else { None };
    cols.unwrap_or(100).clamp(40, 1000)
}
