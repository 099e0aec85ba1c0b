//! One worker: its fd slots, its pointers into the filesets, and the loop that runs its
//! flow until told to stop. Each op is timed around its system calls only: the pick,
//! the bookkeeping and the accounting are outside the clock.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::account::Account;
use super::error::OpsError;
use super::fileset::{FilesetState, Want};
use super::outcome::{Ended, WorkerOut, count_reached};
use super::pace::Pacer;
use super::spec::{AppendLen, Flow, MAX_SLOTS, Op, Pick, RateUnit, ReadLen, Stop};
use super::sys::{self, Name, Tick};
use crate::rng::SplitMix64;

struct Held {
    fd: OwnedFd,
    set: usize,
    entry: usize,
}

enum Step {
    Done,
    OutOfFiles,
}

/// A worker before it runs.
pub struct Worker<'a> {
    /// `group#i`, for errors.
    pub name: String,
    /// Its number over all groups (names of the directories it makes).
    pub index: u32,
    /// Its flow.
    pub flow: &'a Flow,
    /// The filesets.
    pub sets: &'a [FilesetState],
    /// The pattern written by writes and appends.
    pub wbuf: &'a [u8],
    /// Size of its read buffer.
    pub rbuf_len: usize,
    /// Kinds its flow runs (indexes into `OP_NAMES`).
    pub used: Vec<usize>,
    /// Seed of its random draws.
    pub seed: u64,
}

/// A worker's warm-up: `on` until the shared flag falls; the CPU time it started
/// counting from.
pub struct Warm<'a> {
    /// Raised while the warm-up runs.
    pub flag: &'a AtomicBool,
    /// This worker still in it.
    pub on: bool,
    /// Its CPU time (user, system µs) when its window began.
    pub cpu0: (u64, u64),
}

impl Warm<'_> {
    /// Whether the warm-up ended just now (once): the caller starts its figures afresh.
    /// After that, no load of the shared flag.
    #[inline]
    pub fn ended(&mut self) -> bool {
        if self.on && !self.flag.load(Ordering::Relaxed) {
            self.on = false;
            self.cpu0 = sys::thread_cpu_us();
            return true;
        }
        false
    }
}

struct Running<'a> {
    w: Worker<'a>,
    slots: [Option<Held>; MAX_SLOTS],
    rotors: Vec<usize>,
    dir_rotor: usize,
    made: Vec<(usize, u32, u32)>,
    made_count: u32,
    rng: SplitMix64,
    acct: Account,
    rbuf: Vec<u8>,
}

impl<'a> Worker<'a> {
    /// Run until `stop` is raised or `limits` says so; `ready` is called once set up, and
    /// returns false when the run was called off before it started. While `warming` is
    /// raised the worker is in its warm-up: once it falls, the figures are started afresh.
    pub fn run(
        self,
        stop: &AtomicBool,
        warming: &AtomicBool,
        limits: Stop,
        ready: impl FnOnce() -> bool,
    ) -> Result<WorkerOut, OpsError> {
        let n_sets = self.sets.len();
        let mut r = Running {
            rng: SplitMix64::new(self.seed),
            acct: Account::new(&self.used),
            rbuf: vec![0u8; self.rbuf_len.max(64 << 10)],
            slots: Default::default(),
            rotors: vec![0; n_sets],
            dir_rotor: self.index as usize,
            made: Vec::new(),
            made_count: 0,
            w: self,
        };
        if !ready() {
            return Ok(WorkerOut {
                account: r.acct,
                ended: Ended::Stopped,
                cpu_us: (0, 0),
                end: Instant::now(),
                replay: None,
                pace: None,
            });
        }
        let mut pace = limits.rate.map(Pacer::new);
        let mut warm = Warm { flag: warming, on: warming.load(Ordering::Relaxed), cpu0: sys::thread_cpu_us() };
        let result = r.run_loop(stop, &mut warm, limits, pace.as_mut());
        if warm.on {
            // Stopped within the warm-up: nothing of it is the window's.
            r.acct = Account::new(&r.w.used);
            pace = limits.rate.map(Pacer::new);
            warm.cpu0 = sys::thread_cpu_us();
        }
        let cpu0 = warm.cpu0;
        let cpu1 = sys::thread_cpu_us();
        let end = Instant::now();
        r.close_all();
        match result {
            Ok(ended) => {
                if limits.first_done && ended != Ended::Stopped {
                    stop.store(true, Ordering::Relaxed);
                }
                Ok(WorkerOut {
                    account: r.acct,
                    ended,
                    cpu_us: (cpu1.0.saturating_sub(cpu0.0), cpu1.1.saturating_sub(cpu0.1)),
                    end,
                    replay: None,
                    pace,
                })
            }
            Err(e) => {
                stop.store(true, Ordering::Relaxed);
                Err(e)
            }
        }
    }
}

impl Running<'_> {
    fn run_loop(
        &mut self,
        stop: &AtomicBool,
        warm: &mut Warm,
        limits: Stop,
        mut pace: Option<&mut Pacer>,
    ) -> Result<Ended, OpsError> {
        let pace_loops = pace.as_ref().is_some_and(|p| p.unit() == RateUnit::Loops);
        let pace_ops = pace.as_ref().is_some_and(|p| p.unit() == RateUnit::Ops);
        let counts = limits.ops.is_some() || limits.bytes.is_some();
        let flow = self.w.flow;
        let weights: Vec<f64> = match flow {
            Flow::Mix(txs) => txs.iter().map(|(w, _)| *w).collect(),
            Flow::Loop(_) | Flow::Loadfile(_) => Vec::new(),
        };
        // A loop's end is the next one's start: one clock read per loop.
        let mut t0 = Tick::now();
        loop {
            if stop.load(Ordering::Relaxed) {
                return Ok(Ended::Stopped);
            }
            if pace_loops {
                if !pace.as_deref_mut().is_some_and(|p| p.start(stop)) {
                    return Ok(Ended::Stopped);
                }
                // The wait for the schedule is not the loop's time.
                t0 = Tick::now();
            }
            let ops = match flow {
                Flow::Loop(ops) => ops,
                Flow::Mix(txs) => &txs[self.rng.weighted(&weights)].1,
                Flow::Loadfile(_) => {
                    return Err(OpsError::Worker {
                        worker: self.w.name.clone(),
                        message: "a loadfile group runs as dbench clients, not op loops".into(),
                    });
                }
            };
            for op in ops {
                if stop.load(Ordering::Relaxed) {
                    return Ok(Ended::Stopped);
                }
                if warm.ended() {
                    self.acct = Account::new(&self.w.used);
                    if let Some(p) = pace.as_deref_mut() {
                        p.restart();
                    }
                }
                if pace_ops && !pace.as_deref_mut().is_some_and(|p| p.start(stop)) {
                    return Ok(Ended::Stopped);
                }
                if let Step::OutOfFiles = self.exec(op)? {
                    return Ok(Ended::OutOfFiles);
                }
                if counts && let Some(ended) = count_reached(&self.acct, &limits) {
                    return Ok(ended);
                }
            }
            let t1 = Tick::now();
            self.acct.loop_done(t1 - t0);
            t0 = t1;
            if limits.loops.is_some_and(|n| self.acct.loops >= n) {
                return Ok(Ended::Loops);
            }
        }
    }

    fn close_all(&mut self) {
        for s in &mut self.slots {
            if let Some(h) = s.take() {
                self.w.sets[h.set].closed(h.entry);
            }
        }
    }

    fn fail(&self, op: &Op, path: String, source: std::io::Error) -> OpsError {
        OpsError::Op { op: op.name(), worker: self.w.name.clone(), path, source }
    }

    fn held(&self, op: &Op, slot: usize) -> Result<&Held, OpsError> {
        self.slots[slot].as_ref().ok_or_else(|| OpsError::Worker {
            worker: self.w.name.clone(),
            message: format!("op `{}` on fd slot {slot}, which is not open", op.name()),
        })
    }

    fn slot_path(&self, slot: usize) -> String {
        self.slots[slot].as_ref().map(|h| self.w.sets[h.set].entry_path(h.entry)).unwrap_or_default()
    }

    /// An idle existing entry of `set`, marked busy. When every such entry is busy with
    /// another worker's op (100 webserver threads appending to one log), wait for one to be
    /// released, up to a second, rather than end the worker `out_of_files`: a busy entry is
    /// held for one op only. `None`: none exists (or none came free in that time).
    fn pick(&mut self, set: usize, want: Want, pick: Pick) -> Option<usize> {
        // The clock is read only once a pick has failed: not on every op's path.
        let mut deadline = None;
        loop {
            let s = &self.w.sets[set];
            if let Some(i) = s.pick_existing(want, pick, &mut self.rotors[set], &mut self.rng) {
                return Some(i);
            }
            let now = Instant::now();
            if !s.any_existing(want) || now >= *deadline.get_or_insert(now + Duration::from_secs(1)) {
                return None;
            }
            std::thread::sleep(Duration::from_micros(50));
        }
    }

    /// Put an opened entry in a slot (closing, untimed, what it held).
    fn hold(&mut self, slot: usize, fd: OwnedFd, set: usize, entry: usize) {
        if let Some(old) = self.slots[slot].replace(Held { fd, set, entry }) {
            self.w.sets[old.set].closed(old.entry);
        }
    }

    fn open_flags(&self, set: usize) -> i32 {
        if self.w.sets[set].read_only { libc::O_RDONLY } else { libc::O_RDWR }
    }

    fn exec(&mut self, op: &Op) -> Result<Step, OpsError> {
        let k = op.kind();
        let sets = self.w.sets;
        match *op {
            Op::Create { fileset, slot } => {
                let s = &sets[fileset];
                let Some(i) = s.pick_free() else { return Ok(Step::OutOfFiles) };
                let (dir, name) = s.entry(i);
                let t = Tick::now();
                let r = sys::openat(dir, name.as_cstr(), libc::O_CREAT | libc::O_EXCL | libc::O_RDWR, 0o644);
                let d = t.elapsed();
                match r {
                    Ok(fd) => {
                        s.release(i, true, false, 1);
                        self.acct.record(k, d, 0);
                        self.hold(slot, fd, fileset, i);
                    }
                    Err(e) => {
                        s.release(i, false, false, 0);
                        return Err(self.fail(op, s.entry_path(i), e));
                    }
                }
            }
            Op::Open { fileset, slot, pick } => {
                let Some(i) = self.pick(fileset, Want::Regular, pick) else { return Ok(Step::OutOfFiles) };
                let s = &sets[fileset];
                let (dir, name) = s.entry(i);
                let flags = self.open_flags(fileset);
                let t = Tick::now();
                let r = sys::openat(dir, name.as_cstr(), flags, 0);
                let d = t.elapsed();
                match r {
                    Ok(fd) => {
                        s.release(i, true, false, 1);
                        self.acct.record(k, d, 0);
                        self.hold(slot, fd, fileset, i);
                    }
                    Err(e) => {
                        s.release(i, true, false, 0);
                        return Err(self.fail(op, s.entry_path(i), e));
                    }
                }
            }
            Op::Close { slot } => {
                let h = self.slots[slot].take();
                let Some(h) = h else { return Err(self.held(op, slot).err().expect("slot is empty")) };
                let t = Tick::now();
                drop(h.fd);
                self.acct.record(k, t.elapsed(), 0);
                sets[h.set].closed(h.entry);
            }
            Op::Read { slot, len, io_size } => {
                let fd = self.held(op, slot)?.fd.as_raw_fd();
                let want = match len {
                    ReadLen::Whole => u64::MAX,
                    ReadLen::Bytes(n) => n,
                };
                let t = Tick::now();
                let r = sys::read_from_start(fd, &mut self.rbuf, want, io_size as usize);
                let d = t.elapsed();
                let n = r.map_err(|e| self.fail(op, self.slot_path(slot), e))?;
                self.acct.record(k, d, n);
            }
            Op::WriteWhole { slot, io_size } => {
                let h = self.held(op, slot)?;
                let (fd, size) = (h.fd.as_raw_fd(), sets[h.set].files[h.entry].size);
                let t = Tick::now();
                let r = sys::write_from_start(fd, self.w.wbuf, size, io_size as usize);
                let d = t.elapsed();
                let n = r.map_err(|e| self.fail(op, self.slot_path(slot), e))?;
                self.acct.record(k, d, n);
            }
            Op::Append { slot, len, io_size, fileset } => {
                if self.slots[slot].is_none()
                    && let Some(set) = fileset
                {
                    // filebench opens the file of an empty fd on first use, outside the op's time.
                    let Some(i) = self.pick(set, Want::Regular, Pick::RoundRobin) else { return Ok(Step::OutOfFiles) };
                    let (dir, name) = sets[set].entry(i);
                    let r = sys::openat(dir, name.as_cstr(), self.open_flags(set), 0);
                    sets[set].release(i, true, false, i32::from(r.is_ok()));
                    let fd = r.map_err(|e| self.fail(op, sets[set].entry_path(i), e))?;
                    self.hold(slot, fd, set, i);
                }
                let fd = self.held(op, slot)?.fd.as_raw_fd();
                // Drawn before the clock, but for `up_to`, which needs the size the seek finds.
                let pre = match len {
                    AppendLen::Fixed(n) => n,
                    AppendLen::Uniform(n) => 1 + self.rng.below(n.max(1)),
                    AppendLen::UpTo(_) => 0,
                };
                let rng = &mut self.rng;
                let n_of = |size: u64| match len {
                    AppendLen::UpTo(limit) if size < limit => 1 + rng.below(limit - size),
                    AppendLen::UpTo(_) => 0,
                    _ => pre,
                };
                let t = Tick::now();
                let r = sys::append(fd, self.w.wbuf, n_of, io_size as usize);
                let d = t.elapsed();
                let n = r.map_err(|e| self.fail(op, self.slot_path(slot), e))?;
                self.acct.record(k, d, n);
            }
            Op::Fsync { slot } | Op::Fdatasync { slot } => {
                let fd = self.held(op, slot)?.fd.as_raw_fd();
                let t = Tick::now();
                let r = sys::sync(fd, matches!(op, Op::Fdatasync { .. }));
                let d = t.elapsed();
                r.map_err(|e| self.fail(op, self.slot_path(slot), e))?;
                self.acct.record(k, d, 0);
            }
            Op::Truncate { slot, size } => {
                let fd = self.held(op, slot)?.fd.as_raw_fd();
                let t = Tick::now();
                let r = sys::truncate(fd, size);
                let d = t.elapsed();
                r.map_err(|e| self.fail(op, self.slot_path(slot), e))?;
                self.acct.record(k, d, 0);
            }
            Op::Stat { fileset, pick } => {
                return self
                    .on_existing(op, fileset, Want::Regular, pick, |dir, name| sys::stat_at(dir, name).map(drop));
            }
            Op::Chmod { fileset, mode } => {
                return self.on_existing(op, fileset, Want::Regular, Pick::RoundRobin, |dir, name| {
                    sys::chmod_at(dir, name, mode)
                });
            }
            Op::Chown { fileset, uid, gid } => {
                return self.on_existing(op, fileset, Want::Regular, Pick::RoundRobin, |dir, name| {
                    sys::chown_at(dir, name, uid, gid)
                });
            }
            Op::Delete { fileset } => {
                let s = &sets[fileset];
                // Nothing idle and closed to delete: filebench skips the op, so do we.
                let Some(i) = self.pick(fileset, Want::Closed, Pick::RoundRobin) else { return Ok(Step::Done) };
                let (dir, name) = s.entry(i);
                let t = Tick::now();
                let r = sys::unlink_at(dir, name.as_cstr(), false);
                let d = t.elapsed();
                s.release(i, r.is_err(), false, 0);
                r.map_err(|e| self.fail(op, s.entry_path(i), e))?;
                self.acct.record(k, d, 0);
            }
            Op::Rename { fileset } | Op::Link { fileset } | Op::Symlink { fileset } => {
                let s = &sets[fileset];
                let want = if matches!(op, Op::Rename { .. }) { Want::Closed } else { Want::Regular };
                let Some(src) = self.pick(fileset, want, Pick::RoundRobin) else { return Ok(Step::Done) };
                let Some(dst) = s.pick_free() else {
                    s.release(src, true, s.is_symlink(src), 0);
                    return Ok(Step::Done);
                };
                let src_link = s.is_symlink(src);
                let ((sd, sn), (dd, dn)) = (s.entry(src), s.entry(dst));
                let t = Tick::now();
                let r = match op {
                    Op::Rename { .. } => sys::rename_at(sd, sn.as_cstr(), dd, dn.as_cstr()),
                    Op::Link { .. } => sys::link_at(sd, sn.as_cstr(), dd, dn.as_cstr()),
                    _ => sys::symlink_at(sn.as_cstr(), dd, dn.as_cstr()),
                };
                let d = t.elapsed();
                let ok = r.is_ok();
                let renamed = ok && matches!(op, Op::Rename { .. });
                s.release(src, !renamed, src_link, 0);
                s.release(dst, ok, if renamed { src_link } else { matches!(op, Op::Symlink { .. }) }, 0);
                r.map_err(|e| self.fail(op, format!("{} -> {}", s.entry_path(src), s.entry_path(dst)), e))?;
                self.acct.record(k, d, 0);
            }
            Op::Mkdir { fileset } => {
                let s = &sets[fileset];
                if s.leaf_dirs.is_empty() {
                    return Ok(Step::OutOfFiles);
                }
                let dir = s.leaf_dirs[self.dir_rotor % s.leaf_dirs.len()];
                self.dir_rotor += 1;
                let n = self.made_count;
                let name = Name::worker_dir(self.w.index, n);
                let t = Tick::now();
                let r = sys::mkdir_at(s.dir_fd(dir), name.as_cstr(), 0o755);
                let d = t.elapsed();
                r.map_err(|e| self.fail(op, format!("{}/w{}.{n}", s.dir_path(dir), self.w.index), e))?;
                self.made_count += 1;
                self.made.push((fileset, dir, n));
                self.acct.record(k, d, 0);
            }
            Op::Rmdir { fileset } => {
                let Some(pos) = self.made.iter().rposition(|m| m.0 == fileset) else { return Ok(Step::Done) };
                let (_, dir, n) = self.made.remove(pos);
                let s = &sets[fileset];
                let name = Name::worker_dir(self.w.index, n);
                let t = Tick::now();
                let r = sys::unlink_at(s.dir_fd(dir), name.as_cstr(), true);
                let d = t.elapsed();
                r.map_err(|e| self.fail(op, format!("{}/w{}.{n}", s.dir_path(dir), self.w.index), e))?;
                self.acct.record(k, d, 0);
            }
            Op::Readdir { fileset } => {
                let s = &sets[fileset];
                if s.leaf_dirs.is_empty() {
                    return Ok(Step::OutOfFiles);
                }
                let dir = s.leaf_dirs[self.dir_rotor % s.leaf_dirs.len()];
                self.dir_rotor += 1;
                let t = Tick::now();
                let r = sys::read_dir(s.dir_fd(dir), &mut self.rbuf);
                let d = t.elapsed();
                r.map_err(|e| self.fail(op, s.dir_path(dir), e))?;
                self.acct.record(k, d, 0);
            }
            Op::Delay(d) => {
                let t = Tick::now();
                std::thread::sleep(d);
                self.acct.record(k, t.elapsed(), 0);
            }
        }
        Ok(Step::Done)
    }

    /// Pick an existing file, run `call` on it timed, release it.
    fn on_existing(
        &mut self,
        op: &Op,
        set: usize,
        want: Want,
        pick: Pick,
        call: impl FnOnce(std::os::fd::RawFd, &std::ffi::CStr) -> std::io::Result<()>,
    ) -> Result<Step, OpsError> {
        let Some(i) = self.pick(set, want, pick) else { return Ok(Step::OutOfFiles) };
        let s = &self.w.sets[set];
        let (dir, name) = s.entry(i);
        let t = Tick::now();
        let r = call(dir, name.as_cstr());
        let d: Duration = t.elapsed();
        s.release(i, true, false, 0);
        r.map_err(|e| self.fail(op, s.entry_path(i), e))?;
        self.acct.record(op.kind(), d, 0);
        Ok(Step::Done)
    }
}
