//! A filebench workload file (`.f`) turned into an op-mix scenario (`kind = "ops"`): the
//! subset of its language that describes filesets and per-thread flowop loops.
//!
//! Read: `set $var=value` (numbers with k/m/g suffixes, `cvar(type=cvar-gamma,
//! parameters=mean:N;gamma:G)`, and `set mode quit firstdone|alldone`), `define fileset`
//! (`name`, `entries`, `size`, `dirwidth`, `dirgamma`, `prealloc`, `reuse`, `readonly`;
//! `path` is dropped: fsbench makes the cell's filesystem), `define process` with its
//! `thread` blocks of `flowop`s, and `run N`/`psrun … N` (the duration). `echo`, `create
//! fileset(s)`, `usage` and comments are skipped; `system` commands are never carried (a
//! scenario made from a `.f` runs no command) and say so in a note.
//!
//! The text is someone else's: it is capped in size and lines, every name is checked
//! before it is written into TOML, and anything outside the subset is refused with its
//! line number and the flowop or word that is not understood — never guessed.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Largest `.f` file read, bytes.
pub const MAX_F_BYTES: usize = 1 << 20;
/// Most lines of a `.f` file.
pub const MAX_F_LINES: usize = 20_000;

/// Why a `.f` file was refused: the 1-based line (0: the file as a whole) and what.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportError {
    /// 1-based line number; 0 for the file as a whole.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for ImportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 { write!(f, "{}", self.message) } else { write!(f, "line {}: {}", self.line, self.message) }
    }
}

/// A scenario made from a `.f` file: its TOML text and what was dropped or changed.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    /// The scenario, ready for `fsbench validate`/`run`.
    pub text: String,
    /// One line per thing not carried over as is (a `system` command, `$dir`, …).
    pub notes: Vec<String>,
}

/// A value of a `set` variable or an attribute.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    /// A number (sizes already in bytes).
    Num(f64),
    /// A gamma distribution: mean (bytes) and shape.
    Gamma(f64, f64),
    /// A word (names, `random`, …).
    Word(String),
    /// An attribute given without a value (`reuse`, `dsync`).
    Flag,
    /// A path or quoted text (`$dir`): never written into the scenario.
    Text,
}

struct Fileset {
    name: String,
    entries: u64,
    size: Value,
    dir_width: f64,
    dir_gamma: Option<f64>,
    prealloc: u64,
    reuse: bool,
    read_only: bool,
}

struct Group {
    name: String,
    threads: u64,
    processes: u64,
    ops: Vec<String>,
}

/// Convert `.f` text (read from `origin`) into a scenario named `name`.
pub fn import(text: &str, name: &str) -> Result<Imported, ImportError> {
    if text.len() > MAX_F_BYTES {
        return Err(ImportError { line: 0, message: format!("is larger than {} KiB", MAX_F_BYTES >> 10) });
    }
    if text.lines().count() > MAX_F_LINES {
        return Err(ImportError { line: 0, message: format!("has more than {MAX_F_LINES} lines") });
    }
    let mut p = Parser::default();
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, strip_comment(l).trim().to_string()));
    while let Some((n, line)) = lines.next() {
        p.line(n, &line, &mut lines)?;
    }
    p.finish(name)
}

/// A line without its `#` comment (filebench has no `#` inside quoted words it uses here).
fn strip_comment(l: &str) -> &str {
    l.split('#').next().unwrap_or("")
}

#[derive(Default)]
struct Parser {
    vars: BTreeMap<String, Value>,
    filesets: Vec<Fileset>,
    groups: Vec<Group>,
    duration_s: Option<f64>,
    first_done: bool,
    notes: Vec<String>,
}

impl Parser {
    fn line(
        &mut self,
        n: usize,
        line: &str,
        rest: &mut impl Iterator<Item = (usize, String)>,
    ) -> Result<(), ImportError> {
        let err = |m: String| ImportError { line: n, message: m };
        let (word, args) = line.split_once(char::is_whitespace).map_or((line, ""), |(w, a)| (w, a.trim()));
        match word {
            "" | "echo" | "usage" | "enable" | "debug" | "version" => Ok(()),
            "create" => Ok(()),
            "system" => {
                self.notes.push(format!("line {n}: `system` command not carried (a scenario runs no command)"));
                Ok(())
            }
            "set" => self.set(n, args),
            "run" | "psrun" => {
                let last = args.split_whitespace().last().unwrap_or("60");
                let secs = self.number(n, last)?;
                if !(secs > 0.0 && secs <= 86_400.0) {
                    return Err(err(format!("run time `{last}` is not between 1 s and a day")));
                }
                self.duration_s = Some(secs);
                Ok(())
            }
            "define" => {
                let (what, attrs) = args.split_once(char::is_whitespace).map_or((args, ""), |(w, a)| (w, a.trim()));
                match what {
                    "fileset" | "file" => self.fileset(n, what, attrs),
                    "process" => self.process(n, attrs, rest),
                    other => Err(err(format!("`define {other}` is not in the subset fsbench imports"))),
                }
            }
            other => Err(err(format!("`{other}` is not in the subset fsbench imports"))),
        }
    }

    fn set(&mut self, n: usize, args: &str) -> Result<(), ImportError> {
        let err = |m: String| ImportError { line: n, message: m };
        if let Some(mode) = args.strip_prefix("mode") {
            let mode = mode.trim();
            match mode {
                "quit firstdone" => self.first_done = true,
                "quit alldone" | "quit timeout" => {}
                _ => return Err(err(format!("`set mode {mode}` is not in the subset fsbench imports"))),
            }
            return Ok(());
        }
        let (var, value) = args.split_once('=').ok_or_else(|| err("`set` without `$name=value`".into()))?;
        let var = var.trim();
        let Some(name) = var.strip_prefix('$').filter(|v| is_word(v)) else {
            return Err(err(format!("`{}` is not a `$variable`", printable(var))));
        };
        let v = self.value(n, value.trim())?;
        if self.vars.len() >= 1000 && !self.vars.contains_key(name) {
            return Err(err("more than 1000 variables".into()));
        }
        self.vars.insert(name.to_string(), v);
        Ok(())
    }

    /// A value as written: `$var`, a number with an optional k/m/g suffix, a gamma cvar, or a word.
    fn value(&self, n: usize, v: &str) -> Result<Value, ImportError> {
        let err = |m: String| ImportError { line: n, message: m };
        if let Some(var) = v.strip_prefix('$') {
            return self.vars.get(var).cloned().ok_or_else(|| err(format!("`${}` is not set", printable(var))));
        }
        if let Some(inner) = v.strip_prefix("cvar(").and_then(|r| r.strip_suffix(')')) {
            return gamma_cvar(inner).map_err(err);
        }
        if let Ok(x) = number_with_suffix(v) {
            return Ok(Value::Num(x));
        }
        if is_word(v) {
            return Ok(Value::Word(v.to_string()));
        }
        if v.starts_with('/') || (v.len() >= 2 && v.starts_with('"') && v.ends_with('"')) {
            return Ok(Value::Text);
        }
        Err(err(format!("`{}` is neither a number, a `$variable` nor a name", printable(v))))
    }

    fn number(&self, n: usize, v: &str) -> Result<f64, ImportError> {
        match self.value(n, v)? {
            Value::Num(x) => Ok(x),
            other => Err(ImportError { line: n, message: format!("`{}` is not a number ({other:?})", printable(v)) }),
        }
    }

    /// `name=a,b=c,flag` attributes, values resolved.
    fn attrs(&self, n: usize, attrs: &str) -> Result<BTreeMap<String, Value>, ImportError> {
        let mut out = BTreeMap::new();
        for part in split_attrs(attrs) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let (k, v) = match part.split_once('=') {
                Some((k, v)) => (k.trim(), self.value(n, v.trim())?),
                None => (part, Value::Flag),
            };
            if !is_word(k) {
                return Err(ImportError { line: n, message: format!("`{}` is not an attribute name", printable(k)) });
            }
            out.insert(k.to_string(), v);
        }
        Ok(out)
    }

    fn fileset(&mut self, n: usize, what: &str, attrs: &str) -> Result<(), ImportError> {
        let err = |m: String| ImportError { line: n, message: m };
        let a = self.attrs(n, attrs)?;
        let name = word(&a, "name").ok_or_else(|| err(format!("`define {what}` without `name`")))?;
        let num = |k: &str, default: f64| match a.get(k) {
            None => Ok(default),
            Some(Value::Num(x)) => Ok(*x),
            Some(other) => Err(err(format!("`{k}` of fileset {name} is not a number ({other:?})"))),
        };
        // `define file` is one file, preallocated.
        let single = what == "file";
        let entries = if single { 1.0 } else { num("entries", 1.0)? };
        if !(1.0..=crate::scenario::ops_spec::MAX_ENTRIES as f64).contains(&entries) {
            return Err(err(format!("fileset {name}: `entries` {entries} is out of range")));
        }
        let size = match a.get("size") {
            None => Value::Num(0.0),
            Some(v @ (Value::Num(_) | Value::Gamma(..))) => v.clone(),
            Some(other) => return Err(err(format!("fileset {name}: `size` is not a size ({other:?})"))),
        };
        for k in a.keys() {
            if !["name", "path", "entries", "size", "dirwidth", "dirgamma", "prealloc", "reuse", "readonly", "paralloc"]
                .contains(&k.as_str())
            {
                return Err(err(format!("fileset {name}: attribute `{k}` is not in the subset fsbench imports")));
            }
        }
        if a.contains_key("path") {
            self.notes
                .push(format!("line {n}: fileset {name}'s `path` dropped (fsbench makes each cell's filesystem)"));
        }
        let prealloc = if single { 100.0 } else { num("prealloc", 0.0)? };
        let dir_width = num("dirwidth", 20.0)?.max(1.0);
        // filebench's dirgamma is the shape × 1000.
        let dir_gamma = a.get("dirgamma").map(|_| num("dirgamma", 1500.0)).transpose()?.map(|g| g / 1000.0);
        self.filesets.push(Fileset {
            name,
            entries: entries as u64,
            size,
            dir_width,
            dir_gamma,
            prealloc: prealloc.clamp(0.0, 100.0) as u64,
            reuse: a.contains_key("reuse"),
            read_only: a.contains_key("readonly"),
        });
        Ok(())
    }

    fn process(
        &mut self,
        n: usize,
        attrs: &str,
        rest: &mut impl Iterator<Item = (usize, String)>,
    ) -> Result<(), ImportError> {
        let err = |line: usize, m: String| ImportError { line, message: m };
        let a = self.attrs(n, attrs)?;
        let pname = word(&a, "name").unwrap_or_else(|| format!("process{}", self.groups.len() + 1));
        let processes = match a.get("instances") {
            None => 1.0,
            Some(Value::Num(x)) => *x,
            Some(other) => return Err(err(n, format!("process {pname}: `instances` is not a number ({other:?})"))),
        };
        let mut depth = 0usize;
        let mut current: Option<Group> = None;
        for (m, line) in rest.by_ref() {
            let (word0, args) =
                line.split_once(char::is_whitespace).map_or((line.as_str(), ""), |(w, a)| (w, a.trim()));
            match word0 {
                "" => {}
                "{" => depth += 1,
                "}" => {
                    depth = depth.saturating_sub(1);
                    if let Some(g) = current.take() {
                        if g.ops.is_empty() {
                            return Err(err(m, format!("thread {} has no flowops", g.name)));
                        }
                        self.groups.push(g);
                    }
                    if depth == 0 {
                        return Ok(());
                    }
                }
                "thread" => {
                    let ta = self.attrs(m, args)?;
                    let name = word(&ta, "name").unwrap_or_else(|| pname.clone());
                    let threads = match ta.get("instances") {
                        None => 1.0,
                        Some(Value::Num(x)) => *x,
                        Some(other) => {
                            return Err(err(m, format!("thread {name}: `instances` is not a number ({other:?})")));
                        }
                    };
                    if !(1.0..=4096.0).contains(&threads) || !(1.0..=64.0).contains(&processes) {
                        return Err(err(
                            m,
                            format!("thread {name}: {processes} × {threads} instances are out of range"),
                        ));
                    }
                    current =
                        Some(Group { name, threads: threads as u64, processes: processes as u64, ops: Vec::new() });
                }
                "flowop" => {
                    let g = current.as_mut().ok_or_else(|| err(m, "flowop outside a thread".into()))?;
                    let op = self.flowop(m, args)?;
                    g.ops.push(op);
                }
                other => {
                    return Err(err(m, format!("`{}` inside `define process` is not in the subset", printable(other))));
                }
            }
        }
        Err(err(n, format!("process {pname}: its `{{ … }}` is not closed")))
    }

    /// One flowop as an inline TOML table of the ops language.
    fn flowop(&mut self, n: usize, args: &str) -> Result<String, ImportError> {
        let err = |m: String| ImportError { line: n, message: m };
        let (kind, attrs) = args.split_once(char::is_whitespace).map_or((args, ""), |(w, a)| (w, a.trim()));
        let a = self.attrs(n, attrs)?;
        let fileset = || word(&a, "filesetname").ok_or_else(|| err(format!("flowop {kind} without `filesetname`")));
        let fd = || match a.get("fd") {
            Some(Value::Num(x)) if (1.0..16.0).contains(x) => Ok(*x as u64),
            None => Ok(1),
            Some(_) => Err(err(format!("flowop {kind}: `fd` is not 1..15"))),
        };
        let size = |k: &str| match a.get(k) {
            Some(Value::Num(x)) if *x >= 1.0 => Ok(Some(crate::scenario::units::format_size(*x as u64))),
            None => Ok(None),
            Some(other) => Err(err(format!("flowop {kind}: `{k}` is not a size ({other:?})"))),
        };
        for k in a.keys() {
            if !["name", "filesetname", "fd", "srcfd", "iosize", "random", "dsync", "directio", "value", "workingset"]
                .contains(&k.as_str())
            {
                return Err(err(format!("flowop {kind}: attribute `{k}` is not in the subset fsbench imports")));
            }
        }
        if a.contains_key("dsync") || a.contains_key("directio") {
            self.notes.push(format!("line {n}: flowop {kind}'s dsync/directio not carried (buffered I/O)"));
        }
        let io = |t: &mut String| -> Result<(), ImportError> {
            if let Some(s) = size("iosize")? {
                let _ = write!(t, ", io_size = \"{s}\"");
            }
            Ok(())
        };
        let mut t = String::new();
        match kind {
            "createfile" => {
                let _ = write!(t, "{{ op = \"create\", fileset = \"{}\", fd = {} }}", fileset()?, fd()?);
            }
            "openfile" => {
                let _ = write!(t, "{{ op = \"open\", fileset = \"{}\", fd = {} }}", fileset()?, fd()?);
            }
            "closefile" => {
                let _ = write!(t, "{{ op = \"close\", fd = {} }}", fd()?);
            }
            "readwholefile" => {
                let _ = write!(t, "{{ op = \"read\", fd = {}", fd()?);
                io(&mut t)?;
                t.push_str(" }");
            }
            "writewholefile" => {
                let _ = write!(t, "{{ op = \"write\", fd = {}", fd()?);
                io(&mut t)?;
                t.push_str(" }");
            }
            "appendfile" | "appendfilerand" => {
                let bytes = size("iosize")?.ok_or_else(|| err(format!("flowop {kind} without `iosize`")))?;
                let random = kind == "appendfilerand";
                let _ = write!(t, "{{ op = \"append\", fd = {}, size = \"{bytes}\", random = {random} }}", fd()?);
            }
            "fsync" => {
                let _ = write!(t, "{{ op = \"fsync\", fd = {} }}", fd()?);
            }
            "deletefile" => {
                let _ = write!(t, "{{ op = \"delete\", fileset = \"{}\" }}", fileset()?);
            }
            "statfile" => {
                let _ = write!(t, "{{ op = \"stat\", fileset = \"{}\" }}", fileset()?);
            }
            "makedir" => {
                let _ = write!(t, "{{ op = \"mkdir\", fileset = \"{}\" }}", fileset()?);
            }
            "removedir" => {
                let _ = write!(t, "{{ op = \"rmdir\", fileset = \"{}\" }}", fileset()?);
            }
            "listdir" => {
                let _ = write!(t, "{{ op = \"readdir\", fileset = \"{}\" }}", fileset()?);
            }
            "delay" => {
                let secs = match a.get("value") {
                    Some(Value::Num(x)) if *x >= 0.0 && *x <= 3600.0 => *x,
                    _ => return Err(err("flowop delay without a `value` in seconds (0..3600)".into())),
                };
                let _ = write!(t, "{{ op = \"delay\", time = \"{}ms\" }}", (secs * 1000.0).round() as u64);
            }
            other => {
                return Err(err(format!(
                    "flowop `{}` is not in the subset fsbench imports (createfile, openfile, closefile, \
                     readwholefile, writewholefile, appendfile, appendfilerand, fsync, deletefile, statfile, \
                     makedir, removedir, listdir, delay)",
                    printable(other)
                )));
            }
        }
        Ok(t)
    }

    fn finish(mut self, name: &str) -> Result<Imported, ImportError> {
        if self.groups.is_empty() {
            return Err(ImportError { line: 0, message: "defines no process with a thread of flowops".into() });
        }
        for g in &self.groups {
            for op in &g.ops {
                if let Some(f) = op.split("fileset = \"").nth(1).and_then(|r| r.split('"').next())
                    && !self.filesets.iter().any(|s| s.name == f)
                {
                    return Err(ImportError {
                        line: 0,
                        message: format!("thread {} uses fileset {f}, which is not defined", g.name),
                    });
                }
            }
        }
        let duration = self.duration_s.unwrap_or_else(|| {
            self.notes.push("no `run N`: the duration is filebench's default, 60 s".into());
            60.0
        });
        // The cell's filesystem: the filesets' bytes (entries × mean size) twice over, at least 1 GiB.
        let bytes: f64 = self
            .filesets
            .iter()
            .map(|f| {
                f.entries as f64
                    * match f.size {
                        Value::Num(x) | Value::Gamma(x, _) => x,
                        _ => 0.0,
                    }
            })
            .sum();
        let gib = ((bytes * 2.0) / f64::from(1u32 << 30)).ceil().max(1.0) as u64;
        let mut t = String::new();
        let _ = writeln!(t, "# Imported from a filebench workload file by `fsbench import`.");
        for note in &self.notes {
            let _ = writeln!(t, "# {note}");
        }
        let _ = writeln!(t, "schema = 1\nname = \"{name}\"\ndescription = \"imported from filebench\"\n");
        let _ = writeln!(t, "[matrix]\nfs = [\"ext4\"]\n");
        let _ = writeln!(t, "[filesystems.ext4]\nmkfs = [\"-E\", \"lazy_itable_init=0,lazy_journal_init=0\"]\n");
        let _ = writeln!(t, "[backing]\nkind = \"tmpfs-loop\"\nimage_size = \"{gib}GiB\"\n");
        let _ = writeln!(t, "[workload]\nkind = \"ops\"\nduration = \"{}s\"\nrepetitions = 3", duration.round() as u64);
        if self.first_done {
            let _ = writeln!(t, "first_done = true");
        }
        for f in &self.filesets {
            let _ = writeln!(t, "\n[[workload.fileset]]\nname = \"{}\"\nentries = {}", f.name, f.entries);
            let _ = writeln!(t, "dir_width = {}", f.dir_width);
            if let Some(g) = f.dir_gamma {
                let _ = writeln!(t, "dir_gamma = {g}");
            }
            match f.size {
                Value::Gamma(mean, shape) => {
                    let _ =
                        writeln!(t, "size = \"gamma({}, {shape})\"", crate::scenario::units::format_size(mean as u64));
                }
                Value::Num(x) => {
                    let _ = writeln!(t, "size = \"{}\"", crate::scenario::units::format_size(x as u64));
                }
                _ => {}
            }
            let _ = writeln!(t, "prealloc = {}", f.prealloc);
            if f.reuse {
                let _ = writeln!(t, "reuse = true");
            }
            if f.read_only {
                let _ = writeln!(t, "read_only = true");
            }
        }
        for g in &self.groups {
            let _ = writeln!(t, "\n[[workload.group]]\nname = \"{}\"", g.name);
            let _ = writeln!(t, "threads = {}", g.threads);
            if g.processes > 1 {
                // filebench's process instances: as many forked worker processes.
                let _ = writeln!(t, "processes = {}", g.processes);
            }
            let _ = writeln!(t, "loop = [");
            for op in &g.ops {
                let _ = writeln!(t, "  {op},");
            }
            let _ = writeln!(t, "]");
        }
        Ok(Imported { text: t, notes: self.notes })
    }
}

/// `name` of the attributes, when it is a word.
fn word(a: &BTreeMap<String, Value>, k: &str) -> Option<String> {
    match a.get(k) {
        Some(Value::Word(w)) => Some(w.clone()),
        _ => None,
    }
}

/// A name fit to be written into TOML and used as a fileset or group name.
fn is_word(s: &str) -> bool {
    !s.is_empty() && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

/// Attributes split at commas outside parentheses (`size=cvar(...;...),entries=10`).
fn split_attrs(s: &str) -> Vec<&str> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// `16k`, `1m`, `2g`, `10000`, `1.5`: bytes (or a plain number).
fn number_with_suffix(v: &str) -> Result<f64, ()> {
    let v = v.trim();
    let (digits, mult) = match v.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let m = match c.to_ascii_lowercase() {
                'k' => 1u64 << 10,
                'm' => 1 << 20,
                'g' => 1 << 30,
                _ => return Err(()),
            };
            (&v[..i], m as f64)
        }
        _ => (v, 1.0),
    };
    let x: f64 = digits.parse().map_err(|_| ())?;
    (x.is_finite() && x >= 0.0 && x * mult < 1e15).then_some(x * mult).ok_or(())
}

/// `type=cvar-gamma,parameters=mean:16384;gamma:1.5` as a gamma of that mean and shape.
fn gamma_cvar(inner: &str) -> Result<Value, String> {
    let mut kind = None;
    let (mut mean, mut shape) = (None, Some(1.5));
    for part in split_attrs(inner) {
        match part.trim().split_once('=') {
            Some(("type", t)) => kind = Some(t.trim().to_string()),
            Some(("parameters", ps)) => {
                for p in ps.split(';') {
                    match p.trim().split_once(':') {
                        Some(("mean", m)) => mean = number_with_suffix(m).ok(),
                        Some(("gamma", g)) => shape = number_with_suffix(g).ok(),
                        _ => return Err(format!("cvar parameter `{}` is not mean or gamma", printable(p))),
                    }
                }
            }
            _ => return Err(format!("cvar attribute `{}` is not type or parameters", printable(part))),
        }
    }
    match (kind.as_deref(), mean, shape) {
        (Some("cvar-gamma"), Some(m), Some(g)) if m >= 1.0 && g > 0.0 => Ok(Value::Gamma(m, g)),
        (Some("cvar-gamma"), ..) => Err("cvar-gamma needs a mean ≥ 1 and a gamma > 0".into()),
        (other, ..) => Err(format!("cvar type `{}` is not in the subset (cvar-gamma)", printable(other.unwrap_or("")))),
    }
}

/// `s` cut to 60 characters with control characters escaped, for an error message.
fn printable(s: &str) -> String {
    crate::text::first_line_cut(&s.escape_debug().to_string(), 60)
}

#[cfg(test)]
#[path = "filebench_import_tests.rs"]
mod tests;
