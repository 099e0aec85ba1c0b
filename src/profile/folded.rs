//! Folded stacks (`root;caller;callee count`, one line per distinct stack): capped for
//! storage, and read back from files other people wrote.
//!
//! A stored profile is someone else's bytes when `report` reads it: it is read with a
//! size cap before anything is allocated from it, every frame has its control
//! characters escaped, stacks deeper than [`MAX_DEPTH`] keep their leaf-side frames,
//! and a line that is not `stack count` makes the whole file "no profile" (a garbled
//! profile is never half-believed).

use std::collections::HashMap;

/// Largest folded-stacks file stored per cell, in bytes (the coldest stacks are merged).
pub const MAX_STORED_BYTES: usize = 1 << 20;
/// Largest folded-stacks file read back: a stored one is at most [`MAX_STORED_BYTES`].
pub const MAX_READ_BYTES: u64 = 4 << 20;
/// Most frames of one stack kept when reading (perf's own default limit is 127).
pub const MAX_DEPTH: usize = 512;
/// The root frame of the line that stands for the stacks merged to fit the cap.
pub const REMAINDER: &str = "[other stacks]";
/// The frame perf names when it has no symbol for an address.
pub const UNKNOWN_FRAME: &str = "[unknown]";

/// One profile's stacks: frames from the root (the process's name) to the leaf, and samples.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Folded {
    /// Distinct stacks and their sample counts, hottest first.
    pub stacks: Vec<(Vec<String>, u64)>,
}

/// What capping did: samples and stacks kept, stacks merged into the remainder.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Capped {
    /// Every sample, the remainder's included.
    pub samples: u64,
    /// Lines written (the remainder line included).
    pub stacks: u64,
    /// Stacks merged into the remainder line.
    pub merged: u64,
}

impl Folded {
    /// Every sample of the profile.
    pub fn samples(&self) -> u64 {
        self.stacks.iter().map(|(_, n)| *n).fold(0u64, u64::saturating_add)
    }

    /// Merge equal stacks and order hottest first (ties by stack, so output is stable).
    /// A run of `[unknown]` frames is one frame: a frame-pointer walk gone astray (code
    /// built without frame pointers) yields up to perf's 127 of them in a row, and one such
    /// sample made a flame graph 128 levels tall with every other stack squashed at its foot.
    pub fn normalise(mut self) -> Folded {
        let mut merged: HashMap<Vec<String>, u64> = HashMap::with_capacity(self.stacks.len());
        for (mut s, n) in self.stacks.drain(..) {
            s.dedup_by(|a, b| a == UNKNOWN_FRAME && b == UNKNOWN_FRAME);
            let e = merged.entry(s).or_insert(0);
            *e = e.saturating_add(n);
        }
        let mut stacks: Vec<(Vec<String>, u64)> = merged.into_iter().collect();
        stacks.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        Folded { stacks }
    }

    /// This profile and `other` as one (two sessions of one window).
    pub fn merged(mut self, other: Folded) -> Folded {
        self.stacks.extend(other.stacks);
        self.normalise()
    }

    /// The folded text of at most `max_bytes`: the hottest stacks as they are, the coldest
    /// merged into one [`REMAINDER`] line so that no sample is lost from the total.
    pub fn capped_text(&self, max_bytes: usize) -> (String, Capped) {
        let mut out = String::new();
        let mut c = Capped::default();
        let mut rest = 0u64;
        // Room for the remainder line, whatever its count.
        let budget = max_bytes.saturating_sub(REMAINDER.len() + 22);
        for (frames, n) in &self.stacks {
            c.samples = c.samples.saturating_add(*n);
            let line_len = frames.iter().map(|f| f.len() + 1).sum::<usize>() + 21;
            if rest == 0 && out.len() + line_len <= budget {
                out.push_str(&frames.join(";"));
                out.push_str(&format!(" {n}\n"));
                c.stacks += 1;
            } else {
                rest = rest.saturating_add(*n);
                c.merged += 1;
            }
        }
        if c.merged > 0 {
            out.push_str(&format!("{REMAINDER} {rest}\n"));
            c.stacks += 1;
        }
        (out, c)
    }
}

/// Why a folded-stacks text is not a profile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Garbled {
    /// Larger than [`MAX_READ_BYTES`].
    #[error("larger than the {} MiB a profile may be", MAX_READ_BYTES >> 20)]
    TooLarge,
    /// Not UTF-8.
    #[error("not UTF-8 text")]
    NotText,
    /// A line that is not `stack count`.
    #[error("line {0} is not `frame;frame count`")]
    BadLine(usize),
    /// No samples at all.
    #[error("no samples")]
    Empty,
}

/// Read folded stacks written by anyone: capped, escaped, every line checked.
pub fn parse_untrusted(bytes: &[u8]) -> Result<Folded, Garbled> {
    if bytes.len() as u64 > MAX_READ_BYTES {
        return Err(Garbled::TooLarge);
    }
    let text = std::str::from_utf8(bytes).map_err(|_| Garbled::NotText)?;
    let mut stacks = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let (stack, count) = line.rsplit_once(' ').ok_or(Garbled::BadLine(i + 1))?;
        let n: u64 = count.trim().parse().map_err(|_| Garbled::BadLine(i + 1))?;
        if stack.is_empty() {
            return Err(Garbled::BadLine(i + 1));
        }
        let all: Vec<&str> = stack.split(';').collect();
        // The root names the process; the leaf side is where the time went.
        let skip = all.len().saturating_sub(MAX_DEPTH);
        let mut frames: Vec<String> = Vec::with_capacity(all.len() - skip + 1);
        frames.push(crate::text::escape_control(all[0]));
        if skip > 0 {
            frames.push(format!("[{skip} frames cut]"));
        }
        frames.extend(all.iter().skip(1 + skip).map(|f| crate::text::escape_control(f)));
        if n > 0 {
            stacks.push((frames, n));
        }
    }
    let f = Folded { stacks }.normalise();
    if f.samples() == 0 {
        return Err(Garbled::Empty);
    }
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stack(frames: &[&str], n: u64) -> (Vec<String>, u64) {
        (frames.iter().map(|s| s.to_string()).collect(), n)
    }

    #[test]
    fn a_run_of_unknown_frames_is_one_frame_and_equal_stacks_then_merge() {
        let mut astray = vec!["fsbench"];
        astray.extend(std::iter::repeat_n("[unknown]", 126));
        astray.push("do_syscall_64");
        let f = Folded {
            stacks: vec![
                stack(&astray, 1),
                stack(&["fsbench", "[unknown]", "do_syscall_64"], 2),
                stack(&["fsbench", "[unknown]", "main", "[unknown]"], 3),
            ],
        }
        .normalise();
        assert_eq!(f.stacks[0], stack(&["fsbench", "[unknown]", "do_syscall_64"], 3));
        // Unknown frames apart from each other stay apart.
        assert_eq!(f.stacks[1], stack(&["fsbench", "[unknown]", "main", "[unknown]"], 3));
        assert_eq!(f.samples(), 6);
    }

    #[test]
    fn capping_merges_the_coldest_stacks_and_keeps_every_sample() {
        let f = Folded {
            stacks: (0..1000).map(|i| stack(&["fsbench", &format!("function_number_{i:04}")], 1000 - i)).collect(),
        }
        .normalise();
        let (text, c) = f.capped_text(4096);
        assert!(text.len() <= 4096, "{} bytes", text.len());
        assert_eq!(c.samples, f.samples());
        assert!(c.merged > 800 && c.stacks == 1000 - c.merged + 1, "{c:?}");
        let back = parse_untrusted(text.as_bytes()).unwrap();
        assert_eq!(back.samples(), f.samples(), "the remainder line carries the merged samples");
        assert!(
            back.stacks.iter().any(|(s, n)| s.last().unwrap() == "function_number_0000" && *n == 1000),
            "the hottest stack is kept"
        );
        assert!(
            text.ends_with(&format!("{REMAINDER} {}\n", back.stacks.iter().find(|s| s.0[0] == REMAINDER).unwrap().1))
        );
    }

    #[test]
    fn a_profile_within_the_cap_is_stored_whole() {
        let f =
            Folded { stacks: vec![stack(&["a", "b"], 3), stack(&["a", "c"], 5), stack(&["a", "b"], 2)] }.normalise();
        let (text, c) = f.capped_text(MAX_STORED_BYTES);
        assert_eq!(text, "a;b 5\na;c 5\n");
        assert_eq!(c, Capped { samples: 10, stacks: 2, merged: 0 });
    }

    #[test]
    fn hostile_frames_are_escaped_and_deep_stacks_cut_at_the_root_side() {
        let deep: Vec<String> = (0..2000).map(|i| format!("f{i}")).collect();
        let text = format!("evil\x1b[2J;do\nthis 7\n{} 3\n", deep.join(";"));
        // The embedded newline splits a line into a garbled one: refused whole.
        assert_eq!(parse_untrusted(text.as_bytes()), Err(Garbled::BadLine(1)));
        let text = format!("evil\x1b[2J;x\x07y 7\n{} 3\n", deep.join(";"));
        let f = parse_untrusted(text.as_bytes()).unwrap();
        let evil = &f.stacks[0].0;
        assert!(evil.iter().all(|s| !s.chars().any(char::is_control)), "{evil:?}");
        let cut = &f.stacks[1].0;
        assert_eq!(cut.len(), MAX_DEPTH + 1);
        assert_eq!(cut[0], "f0");
        assert_eq!(cut[1], format!("[{} frames cut]", 2000 - MAX_DEPTH));
        assert_eq!(cut.last().unwrap(), "f1999", "the leaf is kept");
    }

    #[test]
    fn garbled_and_oversized_files_are_no_profile() {
        assert_eq!(parse_untrusted(b"a;b notanumber\n"), Err(Garbled::BadLine(1)));
        assert_eq!(parse_untrusted(b"a;b 1\nnocount\n"), Err(Garbled::BadLine(2)));
        assert_eq!(parse_untrusted(b" 5\n"), Err(Garbled::BadLine(1)));
        assert_eq!(parse_untrusted(b"a;b 99999999999999999999999\n"), Err(Garbled::BadLine(1)));
        assert_eq!(parse_untrusted(b"\xff\xfe 1\n"), Err(Garbled::NotText));
        assert_eq!(parse_untrusted(b""), Err(Garbled::Empty));
        let huge = vec![b'a'; (MAX_READ_BYTES + 1) as usize];
        assert_eq!(parse_untrusted(&huge), Err(Garbled::TooLarge));
    }
}
