//! What each path of an untrusted archive really is, entry by entry: a directory, a
//! file, or a symbolic link with its target. One decision per entry ([`ArchiveTree::enter`]),
//! made the same by a dry run (`bundle verify`) and by extraction, so that a dry run
//! refuses exactly what extraction would.
//!
//! It decides three things:
//! - **Name clashes.** A directory where the archive made a file or link, or a file,
//!   link or hard link where it made a directory, is refused with the entry named
//!   (extraction would fail on it: `EEXIST`, `EISDIR`, `ENOTDIR`). Replacing a file or a
//!   link by another non-directory is GNU tar's overwrite and allowed.
//! - **No entry written through a link.** A path whose directories pass through one of
//!   the archive's symlinks is refused (GNU tar would follow it; real archives made by
//!   `tar c` never do this).
//! - **Symlink targets judged physically.** A target is resolved component by component
//!   from the link's own directory the way the kernel will resolve it later: a `..`
//!   climbs from where the walk *really* is, so a component that is one of the archive's
//!   earlier symlinks is replaced by that link's own resolution (up to 40 links, as
//!   `MAXSYMLINKS`). A target that climbs above the top of the archive is refused, as is
//!   one that passes through a file or through the link itself.
//!
//! A judgement holds only while what it walked through stays as it was, so it *pins*
//! it: a name the walk needed as a directory that the archive has not made yet is
//! recorded as a directory (a later file or link there is refused), and a link the walk
//! went through may not be replaced afterwards. Directories are never replaced (a clash),
//! so every judgement made stays true to the end of the archive: when extraction ends,
//! every symlink it made resolves inside the destination, whatever order they came in.
//!
//! The model is held in memory, so it has its own caps ([`ArchiveTree::with_caps`]): the
//! paths it holds (entries and the directories their names and link targets imply) and
//! the bytes of names and targets it keeps. One entry adds at most a path's worth of
//! either (its name and its target are within `PATH_MAX`), and the caps are checked after
//! each entry, so a hostile archive is stopped within one entry of them, with an error
//! that names the entry and the cap.
//!
//! What the archive did not make (the destination's own contents) is not modelled:
//! writing is safe regardless, because every write resolves beneath the destination
//! without following any link ([`crate::beneath`]); these rules keep the *links left
//! behind* from leading a later reader (the next iteration, a step) out of the tree.

use std::collections::HashMap;

use super::UntarError;

/// Most symbolic links one target may pass through (Linux's `MAXSYMLINKS`).
const MAX_LINK_HOPS: u32 = 40;

/// The name an untrusted archive may not use at its top: fsbench stages a bundle's
/// archive in this directory of the filesystem under test, out of the archive's reach,
/// so that no entry can replace the archive the next iteration reads.
pub const ARCHIVE_STAGING_DIR: &str = ".fsbench-archive";

/// What an entry asks to make at its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NewEntry<'a> {
    /// A directory (merged with one already there).
    Dir,
    /// A regular file.
    File,
    /// A symbolic link with this target.
    Symlink(&'a [u8]),
    /// A hard link to this earlier entry (a plain relative path).
    HardLink(&'a [u8]),
}

/// One path of the archive's tree.
#[derive(Debug)]
enum Node {
    Dir {
        children: HashMap<Box<[u8]>, usize>,
        /// Not (yet) made by an entry: a symlink judged through it needs it to be a directory.
        implied_by: Option<Box<[u8]>>,
    },
    File,
    Symlink {
        target: Box<[u8]>,
        /// Another symlink was judged through this one: it may not be replaced.
        pinned_by: Option<Box<[u8]>>,
    },
}

/// Why a symlink target was refused by the walk.
enum Bad {
    /// Climbs above the top; `via` is the archive link whose resolution climbed, if any.
    Leaves {
        via: Option<Vec<u8>>,
    },
    ThroughFile(Vec<u8>),
    ThroughItself,
    TooManyLinks,
}

/// What a successful judgement relies on, recorded once it succeeds.
enum Pin {
    /// This path, not made yet, must become a directory if anything.
    Dir(Vec<Box<[u8]>>),
    /// This link (node index) was walked through.
    Link(usize),
}

/// The archive's tree as its entries so far have made it.
#[derive(Debug)]
pub(super) struct ArchiveTree {
    /// Node 0 is the top of the archive.
    nodes: Vec<Node>,
    /// Bytes of names, link targets and the link names kept in `implied_by`/`pinned_by`.
    name_bytes: usize,
    /// Most nodes held before the archive is refused.
    max_nodes: usize,
    /// Most `name_bytes` held before the archive is refused.
    max_name_bytes: usize,
}

impl Default for ArchiveTree {
    fn default() -> Self {
        let l = super::UnpackLimits::default();
        ArchiveTree::with_caps(l.max_tree_nodes, l.max_tree_name_bytes)
    }
}

/// An entry refused with `reason`, named as written in the archive.
pub(super) fn refuse(raw: &[u8], reason: String) -> UntarError {
    UntarError::Unsafe { entry: String::from_utf8_lossy(raw).into_owned(), reason }
}

fn shown(p: &[u8]) -> String {
    String::from_utf8_lossy(p).into_owned()
}

fn join(comps: &[Box<[u8]>]) -> Vec<u8> {
    comps.join(&b'/')
}

/// A plain relative path (only normal components) split into its components.
fn components(rel: &[u8]) -> impl Iterator<Item = &[u8]> {
    rel.split(|&b| b == b'/')
}

impl ArchiveTree {
    /// An empty tree that refuses an archive once it holds more than `max_nodes` paths or
    /// `max_name_bytes` bytes of names and targets.
    pub(super) fn with_caps(max_nodes: usize, max_name_bytes: usize) -> Self {
        ArchiveTree {
            nodes: vec![Node::Dir { children: HashMap::new(), implied_by: None }],
            name_bytes: 0,
            max_nodes,
            max_name_bytes,
        }
    }

    /// Judge the entry `rel` (`raw` as written, for messages) and record what it makes.
    /// `Err` refuses it; nothing may then be written for it. A symlink whose target is
    /// refused is still recorded, so a dry run names the entries written through it too.
    /// Past a memory cap the error is [`UntarError::Limit`], which ends the extraction.
    pub(super) fn enter(&mut self, raw: &[u8], rel: &[u8], new: NewEntry<'_>) -> Result<(), UntarError> {
        let judged = self.judge(raw, rel, new);
        let over = if self.nodes.len() > self.max_nodes {
            Some(("paths the archive's tree model holds in memory", self.max_nodes))
        } else if self.name_bytes > self.max_name_bytes {
            Some(("bytes of names and link targets the archive's tree model holds in memory", self.max_name_bytes))
        } else {
            None
        };
        if let Some((what, limit)) = over {
            return Err(UntarError::Limit { entry: shown(raw), what, limit: limit as u64 });
        }
        judged
    }

    fn judge(&mut self, raw: &[u8], rel: &[u8], new: NewEntry<'_>) -> Result<(), UntarError> {
        if components(rel).next() == Some(ARCHIVE_STAGING_DIR.as_bytes()) {
            return Err(refuse(
                raw,
                format!(
                    "`{ARCHIVE_STAGING_DIR}` is reserved at the top of an archive (fsbench stages the archive there)"
                ),
            ));
        }
        let existing = self.check_parents(raw, rel)?.and_then(|p| self.child(p, last(rel)));
        match new {
            NewEntry::Dir => {
                if let Some(i) = existing
                    && !matches!(self.nodes[i], Node::Dir { .. })
                {
                    return Err(refuse(
                        raw,
                        format!(
                            "name clash: `{}` is already a {} of the archive; a directory cannot replace it",
                            shown(rel),
                            self.what(i)
                        ),
                    ));
                }
                self.make_dirs(&components(rel).map(Box::from).collect::<Vec<_>>(), None);
                Ok(())
            }
            NewEntry::File => {
                self.check_replace(raw, rel, existing, "file")?;
                self.put(rel, Node::File);
                Ok(())
            }
            NewEntry::Symlink(target) => self.symlink(raw, rel, existing, target),
            NewEntry::HardLink(target) => self.hardlink(raw, rel, existing, target),
        }
    }

    /// The directories of `rel` must be directories (or not made yet): not a link of
    /// the archive, not a file. Returns the parent's node when it exists.
    fn check_parents(&self, raw: &[u8], rel: &[u8]) -> Result<Option<usize>, UntarError> {
        let mut at = 0usize;
        let mut end = 0usize;
        let dirs: Vec<&[u8]> = components(rel).collect();
        for name in &dirs[..dirs.len().saturating_sub(1)] {
            end += name.len() + usize::from(end > 0);
            let Some(next) = self.child(at, name) else { return Ok(None) };
            match &self.nodes[next] {
                Node::Dir { .. } => at = next,
                Node::Symlink { .. } => {
                    return Err(refuse(
                        raw,
                        format!(
                            "path goes through the symbolic link `{}` of the archive (entries may not be written through links)",
                            shown(&rel[..end])
                        ),
                    ));
                }
                Node::File => {
                    return Err(refuse(
                        raw,
                        format!("name clash: `{}` is a file of the archive, not a directory", shown(&rel[..end])),
                    ));
                }
            }
        }
        Ok(Some(at))
    }

    /// A non-directory `what` may replace a file or a link nobody was judged through.
    fn check_replace(&self, raw: &[u8], rel: &[u8], existing: Option<usize>, what: &str) -> Result<(), UntarError> {
        let Some(i) = existing else { return Ok(()) };
        let reason = match &self.nodes[i] {
            Node::Dir { implied_by: Some(l), .. } => format!(
                "`{}` must stay a directory: the symbolic link `{}` of the archive was judged through it",
                shown(rel),
                shown(l)
            ),
            Node::Dir { .. } => format!(
                "name clash: `{}` is already a directory of the archive; a {what} cannot replace it",
                shown(rel)
            ),
            Node::Symlink { pinned_by: Some(l), .. } => format!(
                "would replace the symbolic link `{}` of the archive, through which the symbolic link `{}` was judged",
                shown(rel),
                shown(l)
            ),
            Node::File | Node::Symlink { .. } => return Ok(()),
        };
        Err(refuse(raw, reason))
    }

    fn symlink(&mut self, raw: &[u8], rel: &[u8], existing: Option<usize>, target: &[u8]) -> Result<(), UntarError> {
        let t = shown(target);
        if target.is_empty() {
            return Err(refuse(raw, "symlink with an empty target".into()));
        }
        if target.contains(&0) {
            return Err(refuse(raw, "NUL byte in link target".into()));
        }
        if target.starts_with(b"/") {
            return Err(refuse(raw, format!("symlink with an absolute target `{t}`")));
        }
        if target.len() >= libc::PATH_MAX as usize {
            return Err(refuse(raw, format!("symlink target of {} bytes exceeds PATH_MAX", target.len())));
        }
        self.check_replace(raw, rel, existing, "symbolic link")?;
        let mut stack: Vec<Box<[u8]>> = components(rel).map(Box::from).collect();
        stack.pop();
        // The link's own directories are made by extraction, not implied by its target.
        self.make_dirs(&stack, None);
        let (mut pins, mut hops) = (Vec::new(), 0);
        let walked = self.walk(&mut stack, target, false, rel, &mut pins, &mut hops);
        if walked.is_ok() {
            for pin in pins {
                match pin {
                    Pin::Dir(path) => {
                        self.make_dirs(&path, Some(rel));
                    }
                    Pin::Link(i) => {
                        if let Node::Symlink { pinned_by: p @ None, .. } = &mut self.nodes[i] {
                            *p = Some(rel.into());
                            self.name_bytes += rel.len();
                        }
                    }
                }
            }
        }
        self.put(rel, Node::Symlink { target: target.into(), pinned_by: None });
        let reason = match walked {
            Ok(()) => return Ok(()),
            Err(Bad::Leaves { via }) => {
                let from = match rel.iter().rposition(|&b| b == b'/') {
                    Some(i) => format!("from `{}`", shown(&rel[..i])),
                    None => "from the top of the archive".into(),
                };
                let via = via.map(|v| format!(" through the symbolic link `{}`", shown(&v))).unwrap_or_default();
                format!("symlink target `{t}` leaves the archive ({from}){via}")
            }
            Err(Bad::ThroughFile(f)) => {
                format!("symlink target `{t}` goes through `{}`, a file of the archive", shown(&f))
            }
            Err(Bad::ThroughItself) => format!("symlink target `{t}` goes through the link itself"),
            Err(Bad::TooManyLinks) => {
                format!("symlink target `{t}` goes through more than {MAX_LINK_HOPS} symbolic links")
            }
        };
        Err(refuse(raw, reason))
    }

    /// Resolve `target` from the directory `stack` as the kernel will: `..` climbs from
    /// where the walk really is, and a component that is one of the archive's links is
    /// replaced by that link's resolution. With `continues` the last component is walked
    /// into too (the caller goes on from it); else it is only named.
    fn walk(
        &self,
        stack: &mut Vec<Box<[u8]>>,
        target: &[u8],
        continues: bool,
        link: &[u8],
        pins: &mut Vec<Pin>,
        hops: &mut u32,
    ) -> Result<(), Bad> {
        let comps: Vec<&[u8]> = components(target).filter(|c| !c.is_empty() && *c != b".").collect();
        // The last archive link this walk went through: a climb after it is its doing.
        let mut via: Option<Vec<u8>> = None;
        for (i, &c) in comps.iter().enumerate() {
            if c == b".." {
                if stack.pop().is_none() {
                    return Err(Bad::Leaves { via });
                }
                continue;
            }
            stack.push(c.into());
            if i + 1 == comps.len() && !continues {
                break;
            }
            let here = join(stack);
            if here == link {
                return Err(Bad::ThroughItself);
            }
            let Some(n) = self.find(stack) else {
                pins.push(Pin::Dir(stack.clone()));
                continue;
            };
            match &self.nodes[n] {
                Node::Dir { .. } => {}
                Node::File => return Err(Bad::ThroughFile(here)),
                Node::Symlink { target: t, .. } => {
                    *hops += 1;
                    if *hops > MAX_LINK_HOPS {
                        return Err(Bad::TooManyLinks);
                    }
                    pins.push(Pin::Link(n));
                    stack.pop();
                    self.walk(stack, t, true, link, pins, hops).map_err(|b| match b {
                        // The outermost link names the climb: the one this target names.
                        Bad::Leaves { .. } => Bad::Leaves { via: Some(here.clone()) },
                        other => other,
                    })?;
                    via = Some(here);
                }
            }
        }
        Ok(())
    }

    fn hardlink(&mut self, raw: &[u8], rel: &[u8], existing: Option<usize>, target: &[u8]) -> Result<(), UntarError> {
        if target == rel {
            return Err(refuse(raw, "hard link to itself".into()));
        }
        let found = self.check_parents(raw, target)?.and_then(|p| self.child(p, last(target)));
        let Some(i) = found else {
            return Err(refuse(
                raw,
                format!("hard link target `{}` is not an earlier entry of the archive", shown(target)),
            ));
        };
        match &self.nodes[i] {
            Node::Dir { .. } => Err(refuse(raw, format!("hard link to the directory `{}`", shown(target)))),
            // A hard link to a symlink is a second symlink with the same target: judged where it lands.
            Node::Symlink { target: t, .. } => {
                let t = t.clone();
                self.symlink(raw, rel, existing, &t).map_err(|e| match e {
                    UntarError::Unsafe { entry, reason } => UntarError::Unsafe {
                        entry,
                        reason: format!("hard link to the symlink `{}`: {reason}", shown(target)),
                    },
                    other => other,
                })
            }
            Node::File => {
                self.check_replace(raw, rel, existing, "hard link")?;
                self.put(rel, Node::File);
                Ok(())
            }
        }
    }

    fn child(&self, dir: usize, name: &[u8]) -> Option<usize> {
        match &self.nodes[dir] {
            Node::Dir { children, .. } => children.get(name).copied(),
            _ => None,
        }
    }

    /// The node at a path, if the archive made it (`None` below a non-directory too).
    fn find(&self, comps: &[Box<[u8]>]) -> Option<usize> {
        comps.iter().try_fold(0, |at, c| self.child(at, c))
    }

    fn what(&self, i: usize) -> &'static str {
        match self.nodes[i] {
            Node::Dir { .. } => "directory",
            Node::File => "file",
            Node::Symlink { .. } => "symbolic link",
        }
    }

    /// Directories along `comps`, made where missing (`implied_by`: needed by that link's judgement).
    /// Callers have checked that no component is a file or link.
    fn make_dirs(&mut self, comps: &[Box<[u8]>], implied_by: Option<&[u8]>) -> usize {
        let mut at = 0;
        for c in comps {
            at = match self.child(at, c) {
                Some(next) => next,
                None => self.add(at, c, Node::Dir { children: HashMap::new(), implied_by: implied_by.map(Box::from) }),
            };
        }
        at
    }

    /// Record a non-directory at `rel`, making its directories and replacing what was there.
    fn put(&mut self, rel: &[u8], node: Node) {
        if let Node::Symlink { target, .. } = &node {
            self.name_bytes += target.len();
        }
        let mut comps: Vec<Box<[u8]>> = components(rel).map(Box::from).collect();
        let name = comps.pop().expect("a path has a name");
        let parent = self.make_dirs(&comps, None);
        match self.child(parent, &name) {
            Some(i) => self.nodes[i] = node,
            None => {
                self.add(parent, &name, node);
            }
        }
    }

    fn add(&mut self, parent: usize, name: &[u8], node: Node) -> usize {
        self.name_bytes += name.len();
        if let Node::Dir { implied_by: Some(l), .. } = &node {
            self.name_bytes += l.len();
        }
        let i = self.nodes.len();
        self.nodes.push(node);
        if let Node::Dir { children, .. } = &mut self.nodes[parent] {
            children.insert(name.into(), i);
        }
        i
    }
}

fn last(rel: &[u8]) -> &[u8] {
    rel.rsplit(|&b| b == b'/').next().unwrap_or(rel)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sym(t: &mut ArchiveTree, rel: &str, target: &str) -> Result<(), String> {
        t.enter(rel.as_bytes(), rel.as_bytes(), NewEntry::Symlink(target.as_bytes())).map_err(|e| e.to_string())
    }
    fn enter(t: &mut ArchiveTree, rel: &str, new: NewEntry<'_>) -> Result<(), String> {
        t.enter(rel.as_bytes(), rel.as_bytes(), new).map_err(|e| e.to_string())
    }

    #[test]
    fn symlinks_may_climb_only_within_the_tree() {
        let mut p = ArchiveTree::default();
        assert!(sym(&mut p, "a/b/link", "c/d").is_ok());
        assert!(sym(&mut p, "a/link", "./c").is_ok());
        // In-tree `..` links, as in kernel trees and /usr/include.
        assert!(sym(&mut p, "a/b/up", "../c").is_ok());
        assert!(sym(&mut p, "a/b/top", "../../x/../y").is_ok());
        let e = sym(&mut p, "a/b/out", "../../../x").unwrap_err();
        assert!(e.contains("`a/b/out`") && e.contains("leaves the archive (from `a/b`)"), "{e}");
        assert!(sym(&mut p, "top", "..").is_err());
        assert!(sym(&mut p, "link", "/etc/passwd").unwrap_err().contains("absolute"));
        assert!(sym(&mut p, "link2", "").is_err());
    }

    /// The review's attack: `l1 -> ../y`, `lN -> l(N-1)/../..`: each stays inside when its
    /// components are taken for directories, but in fact each climbs one more level.
    #[test]
    fn a_chain_of_links_is_resolved_physically() {
        let mut p = ArchiveTree::default();
        sym(&mut p, "d/e/l1", "../y").unwrap();
        // l1 really is d/y, so l1/../.. is the top: still inside.
        sym(&mut p, "d/e/l2", "l1/../..").unwrap();
        let e = sym(&mut p, "d/e/l3", "l2/../..").unwrap_err();
        assert!(e.contains("leaves the archive (from `d/e`) through the symbolic link `d/e/l2`"), "{e}");
        // Links to `.` and `..` are places like any other.
        sym(&mut p, "dot", ".").unwrap();
        assert!(sym(&mut p, "x", "dot/..").unwrap_err().contains("through the symbolic link `dot`"));
        sym(&mut p, "q/up", "..").unwrap();
        assert!(sym(&mut p, "q/r/x", "../up/..").unwrap_err().contains("leaves the archive"));
        assert!(sym(&mut p, "self", "self/..").unwrap_err().contains("the link itself"));
        sym(&mut p, "loop1", "loop2").unwrap();
        sym(&mut p, "loop2", "loop1").unwrap();
        assert!(sym(&mut p, "x2", "loop1/..").unwrap_err().contains("more than 40"));
    }

    /// A judgement pins what it walked through: later entries cannot make it false.
    #[test]
    fn later_entries_cannot_change_what_a_link_was_judged_through() {
        let mut p = ArchiveTree::default();
        // `a` not made yet: taken as a directory, so `p/x` is the top.
        sym(&mut p, "p/x", "a/../..").unwrap();
        let e = sym(&mut p, "p/a", "..").unwrap_err();
        assert!(e.contains("`p/a` must stay a directory: the symbolic link `p/x`"), "{e}");
        assert!(enter(&mut p, "p/a", NewEntry::File).is_err());
        enter(&mut p, "p/a", NewEntry::Dir).unwrap();
        // A link walked through may not be replaced.
        sym(&mut p, "m/l", "n").unwrap();
        sym(&mut p, "m/y", "l/..").unwrap();
        let e = sym(&mut p, "m/l", "..").unwrap_err();
        assert!(e.contains("would replace the symbolic link `m/l`") && e.contains("`m/y` was judged"), "{e}");
        // An unpinned link may be replaced by a file (GNU tar's overwrite).
        sym(&mut p, "free", "n").unwrap();
        enter(&mut p, "free", NewEntry::File).unwrap();
        enter(&mut p, "free/x", NewEntry::File).unwrap_err();
    }

    #[test]
    fn nothing_is_written_through_the_archives_links_and_hard_links_are_rejudged() {
        let mut p = ArchiveTree::default();
        sym(&mut p, "l1", ".").unwrap();
        let e = enter(&mut p, "l1/l1/x", NewEntry::File).unwrap_err();
        assert!(e.contains("symbolic link `l1`"), "{e}");
        sym(&mut p, "a/b/up", "../c").unwrap();
        // The same target one directory higher climbs out.
        enter(&mut p, "a/h", NewEntry::HardLink(b"a/b/up")).unwrap();
        let e = enter(&mut p, "h", NewEntry::HardLink(b"a/b/up")).unwrap_err();
        assert!(e.contains("hard link to the symlink `a/b/up`") && e.contains("leaves the archive"), "{e}");
        // Hard links through a link, to a directory, to nothing, to themselves.
        assert!(enter(&mut p, "h2", NewEntry::HardLink(b"l1/a")).unwrap_err().contains("symbolic link `l1`"));
        assert!(enter(&mut p, "h3", NewEntry::HardLink(b"a/b")).unwrap_err().contains("to the directory"));
        assert!(enter(&mut p, "h4", NewEntry::HardLink(b"nope")).unwrap_err().contains("not an earlier entry"));
        enter(&mut p, "f", NewEntry::File).unwrap();
        assert!(enter(&mut p, "f", NewEntry::HardLink(b"f")).unwrap_err().contains("itself"));
        enter(&mut p, "g", NewEntry::HardLink(b"f")).unwrap();
        // A file replacing a link ends its rule.
        enter(&mut p, "l1", NewEntry::File).unwrap();
        assert!(enter(&mut p, "l1/x", NewEntry::File).unwrap_err().contains("name clash: `l1` is a file"));
    }

    /// Story: the model had no cap of its own; a million links whose targets each name
    /// two thousand directories not made yet would have held billions of paths in memory.
    #[test]
    fn the_model_refuses_an_archive_past_its_memory_caps_naming_the_entry() {
        let deep = vec!["d"; 2000].join("/");
        let mut p = ArchiveTree::with_caps(3000, 1 << 20);
        sym(&mut p, "l1", &deep).unwrap();
        let e = sym(&mut p, "l2", &deep.replace('d', "e")).unwrap_err();
        assert!(
            e.contains("`l2`") && e.contains("limit on paths the archive's tree model holds in memory (3000)"),
            "{e}"
        );
        let mut p = ArchiveTree::with_caps(1000, 4096);
        let name = "n".repeat(200);
        for i in 0..20 {
            enter(&mut p, &format!("{i}{name}"), NewEntry::File).unwrap();
        }
        let e = enter(&mut p, &format!("x/{name}"), NewEntry::File).unwrap_err();
        assert!(e.contains("bytes of names and link targets") && e.contains("(4096)"), "{e}");
        // Real trees stay far below the defaults: a directory of 10,000 files.
        let mut p = ArchiveTree::default();
        for i in 0..10_000 {
            enter(&mut p, &format!("linux/fs/file{i}.c"), NewEntry::File).unwrap();
        }
    }

    #[test]
    fn name_clashes_are_refused_with_the_entry_named() {
        let mut p = ArchiveTree::default();
        enter(&mut p, "a", NewEntry::File).unwrap();
        let e = enter(&mut p, "a", NewEntry::Dir).unwrap_err();
        assert!(e.contains("`a`") && e.contains("name clash: `a` is already a file"), "{e}");
        enter(&mut p, "d/x", NewEntry::File).unwrap();
        let e = enter(&mut p, "d", NewEntry::File).unwrap_err();
        assert!(e.contains("name clash: `d` is already a directory of the archive; a file"), "{e}");
        assert!(sym(&mut p, "d", "x").unwrap_err().contains("a symbolic link cannot replace it"));
        enter(&mut p, "d", NewEntry::Dir).unwrap();
        assert!(enter(&mut p, ".fsbench-archive/x", NewEntry::File).unwrap_err().contains("reserved"));
    }
}
