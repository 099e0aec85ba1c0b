//! Process exit codes, each with one meaning.

/// Everything ran and nothing failed (skipped cells are not failures).
pub const SUCCESS: i32 = 0;
/// The command ran but something failed: a cell failed, a gate found a regression.
pub const FAILURE: i32 = 1;
/// Bad usage or bad input: unknown option, malformed scenario, unreadable result file.
pub const USAGE: i32 = 2;
/// Interrupted by SIGINT or SIGTERM (after cleaning up), as shells report it.
pub const INTERRUPTED: i32 = 130;
/// `gate --bisect`: this revision cannot be judged (inconclusive or missing); `git bisect run` skips it.
pub const BISECT_SKIP: i32 = 125;
/// `gate --bisect`: the gate itself could not run (bad input); above 127 `git bisect run` stops
/// instead of calling the revision bad.
pub const BISECT_ABORT: i32 = 128;

/// An error in what the user gave us (a file, an option, a result directory):
/// reported without a backtrace and mapped to [`USAGE`].
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct InputError(pub String);

impl InputError {
    /// Wrap a message as an input error inside `anyhow`.
    pub fn anyhow(msg: impl Into<String>) -> anyhow::Error {
        anyhow::Error::new(InputError(msg.into()))
    }
}

/// An error and its causes on one line, `outer: cause: root`, leaving out a cause
/// whose text is already part of what came before (error types that print their
/// source themselves would otherwise repeat it).
pub fn error_chain(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("step `untar`: {source}")]
    struct Outer {
        source: std::io::Error,
    }

    #[test]
    fn causes_already_in_the_message_are_not_repeated() {
        let e = anyhow::Error::new(Outer { source: std::io::Error::other("disk full") }).context("cell failed");
        assert_eq!(error_chain(&e), "cell failed: step `untar`: disk full");
        let e = anyhow::anyhow!("root cause").context("middle").context("top");
        assert_eq!(error_chain(&e), "top: middle: root cause");
    }
}
