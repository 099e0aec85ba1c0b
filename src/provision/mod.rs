//! Provisioning: real filesystems for a cell (tmpfs, sparse image, loop device,
//! mkfs, mount, quota), each held by an RAII guard and torn down in reverse order.
//!
//! Every kernel object is recorded in a journal in the cell's work directory
//! *before* it is acquired, and every kernel setting in the host-wide journal
//! ([`host_tunables`]), so that [`cleanup_stale`] can undo a run that was
//! killed with SIGKILL. Teardown runs on success ([`Provisioned::teardown`]),
//! on error and panic (`Drop`), and after SIGINT/SIGTERM (the runner sees
//! [`crate::signals::interrupted`] and drops what it holds).

pub mod capability;
pub mod cgroup;
pub mod host_tunables;
pub mod journal;
pub mod kmsg;
pub mod loopdev;
pub mod mkfs;
pub mod mount;
pub mod private;
pub mod quota;
pub mod tunables;
pub mod workroot;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::mount::MsFlags;

use crate::model::{CellParams, FilesystemInfo, Layout, QuotaImpl, QuotaMode, SkipReason};
use crate::scenario::{Backing, FsSpec};

use host_tunables::{Holder, HostJournal};
use journal::{Entry, Journal};
use loopdev::LoopDevice;
use quota::QuotaType;

pub use capability::check;
pub use workroot::prepare_work_root;

/// Everything provisioning needs to build one cell's filesystems.
pub struct ProvisionRequest<'a> {
    /// The cell: fs, layout, quota, tasks.
    pub cell: &'a CellParams,
    /// mkfs arguments, mount options, quota implementation of the cell's fs.
    pub fs: &'a FsSpec,
    /// Where the filesystems live.
    pub backing: &'a Backing,
    /// Private per-run work directory (`/tmp/fsbench/<run-id>`); cell dirs are made in it.
    pub workdir: &'a Path,
    /// When set, task i's directory is chowned to uid = gid = `task_uids[i]`; else chmod 0777.
    pub task_uids: Option<Vec<u32>>,
    /// The only block device that may be formatted (from `--allow-device`).
    pub allow_device: Option<&'a Path>,
}

/// Why provisioning (or tearing down) failed, with the object it failed on.
#[derive(Debug, thiserror::Error)]
pub enum ProvisionError {
    /// Real provisioning needs root.
    #[error("{what} needs root (running as uid {uid}); use backing kind \"dir\" to run without root")]
    NotRoot {
        /// What needed it.
        what: String,
        /// The effective uid.
        uid: u32,
    },
    /// A file system call failed.
    #[error("{what} {}: {source}", path.display())]
    Io {
        /// What was being done.
        what: String,
        /// On what.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A system call failed.
    #[error("{what} {}: {source}", path.display())]
    Sys {
        /// What was being done.
        what: String,
        /// On what.
        path: PathBuf,
        /// The errno.
        source: Errno,
    },
    /// `mkfs.<fs>` failed.
    #[error("`{argv}` failed ({status}): {}", first_lines(stderr, 3))]
    Mkfs {
        /// The command line.
        argv: String,
        /// Its exit status.
        status: String,
        /// What it printed.
        stderr: String,
    },
    /// The kernel refused a mount; `kernel` holds what it logged about it.
    #[error("mount -t {fstype} -o {options} {} {} failed: {errno}{}", source_dev.display(), target.display(),
        if kernel.is_empty() { String::new() } else { format!("; kernel: {}", kernel.join("; ")) })]
    MountRefused {
        /// Device mounted.
        source_dev: PathBuf,
        /// Mount point.
        target: PathBuf,
        /// Filesystem type.
        fstype: String,
        /// Options as given.
        options: String,
        /// What mount(2) returned.
        errno: Errno,
        /// The kernel's own messages from /dev/kmsg.
        kernel: Vec<String>,
    },
    /// Quota could not be set up or read.
    #[error("{what} on {}: {detail}", mountpoint.display())]
    Quota {
        /// What was being done.
        what: String,
        /// The filesystem.
        mountpoint: PathBuf,
        /// The tool's or the kernel's answer.
        detail: String,
    },
    /// A block device may not be used.
    #[error("refusing to use {}: {reason}", path.display())]
    Device {
        /// The device.
        path: PathBuf,
        /// Why not.
        reason: String,
    },
    /// The cell cannot run on this host (see [`check`]).
    #[error("{}", .0.reason)]
    Unsupported(SkipReason),
    /// SIGINT or SIGTERM arrived while provisioning.
    #[error("interrupted while provisioning")]
    Interrupted,
    /// The work directory (or a directory in it) is not private to this user,
    /// so what stale cleanup finds there cannot be trusted.
    #[error("refusing work directory {}: {reason}", path.display())]
    UnsafeWorkDir {
        /// The directory.
        path: PathBuf,
        /// What is wrong and how to fix it.
        reason: String,
    },
    /// Some objects could not be released.
    #[error("teardown left objects behind: {}", .0.join("; "))]
    Teardown(Vec<String>),
}

/// The first `n` non-empty lines: tools print usage screens after the one line that matters.
fn first_lines(s: &str, n: usize) -> String {
    s.lines().map(str::trim).filter(|l| !l.is_empty()).take(n).collect::<Vec<_>>().join(" / ")
}

impl ProvisionError {
    pub(crate) fn io(what: &str, path: &Path, source: std::io::Error) -> ProvisionError {
        ProvisionError::Io { what: what.into(), path: path.to_path_buf(), source }
    }
}

/// One acquired object, released by [`Provisioned`] in reverse order.
#[derive(Debug)]
enum Guard {
    /// A mount (tmpfs or filesystem under test): unmount.
    Mount(PathBuf),
    /// A loop device: detach.
    Loop(LoopDevice),
    /// Quota switched on: switch off.
    Quota { device: PathBuf, mountpoint: PathBuf, qtype: QuotaType },
    /// A directory we created outside the cell dir: remove it.
    Scratch(PathBuf),
    /// The cell's cgroup: move stray tasks out and remove it.
    Cgroup(cgroup::CellGroup),
    /// A kernel setting we changed: drop our hold on it in the host-wide journal, which
    /// writes the original back when no other run holds it.
    Restore { journal: HostJournal, holder: Holder, path: PathBuf },
}

impl Guard {
    /// Release one object. `busy` is set once a mount had to be detached
    /// lazily: what lies below it (its loop device, the tmpfs holding the
    /// image) is then still in use and can only be let go of, not waited for.
    /// Returns a note when the kernel finishes the release later.
    fn release(self, lazy: bool, busy: &mut bool) -> Result<Option<String>, ProvisionError> {
        match self {
            Guard::Mount(p) => {
                let retries = if *busy { 1 } else { 20 };
                let r = match mount::unmount_or_detach(&p, retries) {
                    // On error and panic, any failure gets a lazy unmount as a last resort.
                    Err(_) if lazy && nix::mount::umount2(&p, nix::mount::MntFlags::MNT_DETACH).is_ok() => {
                        mount::Unmounted::Detached
                    }
                    r => r?,
                };
                Ok(match r {
                    mount::Unmounted::Clean => None,
                    mount::Unmounted::Detached => {
                        *busy = true;
                        Some(format!(
                            "{} was busy (a process still uses it): detached lazily, the kernel frees it when the \
                             last user exits",
                            p.display()
                        ))
                    }
                })
            }
            Guard::Loop(l) if *busy => {
                let name = l.path().display().to_string();
                Ok((!l.detach_deferred(std::time::Duration::from_millis(500))?)
                    .then(|| format!("{name} detaches itself when the busy filesystem on it goes (autoclear)")))
            }
            Guard::Loop(l) => l.detach().map(|()| None),
            Guard::Quota { device, mountpoint, qtype } => quota::quota_off(&device, &mountpoint, qtype).map(|()| None),
            Guard::Scratch(p) => {
                std::fs::remove_dir_all(&p).map(|()| None).map_err(|e| ProvisionError::io("remove", &p, e))
            }
            Guard::Restore { journal, holder, path } => journal.release(holder, &path).map(|_| None),
            Guard::Cgroup(g) => g.remove().map(|()| None),
        }
    }
}

/// A provisioned cell: its filesystems, per-task directories and the guards
/// that release everything, in reverse order, on teardown or drop.
#[derive(Debug)]
pub struct Provisioned {
    cell_dir: PathBuf,
    journal: Option<Journal>,
    guards: Vec<Guard>,
    task_dirs: Vec<PathBuf>,
    filesystems: Vec<FilesystemInfo>,
    root: PathBuf,
    released: bool,
    notes: Vec<String>,
    cgroup: Option<(crate::model::CellCgroup, Vec<PathBuf>)>,
}

impl Provisioned {
    /// One directory per task, where the task works.
    pub fn task_dirs(&self) -> &[PathBuf] {
        &self.task_dirs
    }

    /// What a reader of the numbers should know about the cell's setup (sysctl values in
    /// effect, cgroup limits of its workers).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The filesystems as built: mkfs argv, options read back, features, quota state.
    pub fn filesystems(&self) -> &[FilesystemInfo] {
        &self.filesystems
    }

    /// The filesystem under test for step workloads (layout S: its mount point;
    /// layout M: the first task's filesystem).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The cell's cgroup with its limits as the kernel holds them, if the scenario asked for one.
    pub fn cgroup(&self) -> Option<&crate::model::CellCgroup> {
        self.cgroup.as_ref().map(|(c, _)| c)
    }

    /// The `cgroup.procs` files every worker of the cell must join (empty without a cgroup).
    pub fn cgroup_procs(&self) -> &[PathBuf] {
        self.cgroup.as_ref().map_or(&[], |(_, procs)| procs.as_slice())
    }

    /// The private cell directory holding the journal, backing tmpfs and mount points.
    pub fn cell_dir(&self) -> &Path {
        &self.cell_dir
    }

    /// Release everything in reverse order and report what could not be released.
    pub fn teardown(mut self) -> Result<(), ProvisionError> {
        self.release(false)
    }

    fn release(&mut self, lazy: bool) -> Result<(), ProvisionError> {
        if self.released {
            return Ok(());
        }
        self.released = true;
        let _releasing = crate::signals::enter(crate::signals::Activity::Releasing);
        let mut errors = Vec::new();
        let mut busy = false;
        while let Some(g) = self.guards.pop() {
            match g.release(lazy, &mut busy) {
                Ok(None) => {}
                Ok(Some(note)) => eprintln!("fsbench: warning: teardown of {}: {note}", self.cell_dir.display()),
                Err(e) => errors.push(e.to_string()),
            }
        }
        if errors.is_empty() {
            // Only now is the journal no longer needed: keep it on failure so
            // that `cleanup_stale` can finish the job later.
            self.journal = None;
            if let Err(e) = std::fs::remove_dir_all(&self.cell_dir) {
                errors.push(ProvisionError::io("remove cell dir", &self.cell_dir, e).to_string());
            }
        }
        if errors.is_empty() { Ok(()) } else { Err(ProvisionError::Teardown(errors)) }
    }

    fn acquire_record(&mut self, e: Entry) -> Result<(), ProvisionError> {
        match self.journal.as_mut() {
            Some(j) => j.record(&e),
            None => Ok(()),
        }
    }
}

impl Drop for Provisioned {
    fn drop(&mut self) {
        // Best effort on error, panic and interrupt: lazy unmount as a last resort.
        if let Err(e) = self.release(true) {
            eprintln!("fsbench: cleanup of {}: {e}", self.cell_dir.display());
        }
    }
}

/// Whether the effective uid is root.
pub use crate::host::is_root;

fn require_root(what: &str) -> Result<(), ProvisionError> {
    if is_root() {
        Ok(())
    } else {
        Err(ProvisionError::NotRoot { what: what.into(), uid: nix::unistd::geteuid().as_raw() })
    }
}

fn check_interrupt() -> Result<(), ProvisionError> {
    if crate::signals::interrupted() { Err(ProvisionError::Interrupted) } else { Ok(()) }
}

/// Build the cell's filesystems. Layout M: one fs per task mounted at
/// `<cell>/mnt/<i>`; layout S: one fs at `<cell>/mnt` with a dir per task.
pub fn provision(req: &ProvisionRequest) -> Result<Provisioned, ProvisionError> {
    capability::check(req).map_err(ProvisionError::Unsupported)?;
    provision_unchecked(req)
}

/// [`provision`] without the capability check (the quota probe is itself a provision).
fn provision_unchecked(req: &ProvisionRequest) -> Result<Provisioned, ProvisionError> {
    check_interrupt()?;
    // Until it returns; on error the guards drop inside, under `Releasing`.
    let _provisioning = crate::signals::enter(crate::signals::Activity::Provisioning);
    // Private and canonical: journal paths are then absolute, like mountinfo's.
    let workdir = workroot::prepare_run_dir(req.workdir)?;
    let cell_dir = tempfile::Builder::new()
        .prefix(&format!("{}-", req.cell.id()))
        .tempdir_in(&workdir)
        .map_err(|e| ProvisionError::io("create cell dir", &workdir, e))?
        .keep();
    // Workers run under per-task uids and must traverse to their directories.
    set_mode(&cell_dir, 0o755)?;
    let journal = Journal::create(&cell_dir)?;
    let mut p = Provisioned {
        cell_dir: cell_dir.clone(),
        journal: Some(journal),
        guards: Vec::new(),
        task_dirs: Vec::new(),
        filesystems: Vec::new(),
        root: cell_dir.clone(),
        released: false,
        notes: Vec::new(),
        cgroup: None,
    };
    match req.backing {
        Backing::TmpfsLoop { .. } => provision_tmpfs_loop(req, &mut p)?,
        Backing::Device { path } => provision_device(req, path, &mut p)?,
        Backing::Dir { path } => provision_dir(req, path, &mut p)?,
    }
    apply_tunables(req, &mut p)?;
    apply_cgroup(req, &mut p)?;
    check_interrupt()?;
    Ok(p)
}

/// The cell's cgroup (`[filesystems.X] cgroup`): made (journaled first), its limits written
/// and read back. Made last, so teardown removes it first, once the workers are gone.
fn apply_cgroup(req: &ProvisionRequest, p: &mut Provisioned) -> Result<(), ProvisionError> {
    let limits = &req.fs.tunables.cgroup;
    if limits.is_empty() {
        return Ok(());
    }
    if !is_root() {
        return Err(ProvisionError::Unsupported(SkipReason {
            reason: format!("a cgroup for the cell's workers needs root (running as uid {})", nix::unistd::geteuid()),
            remedy: Some("run as root, or leave out the filesystem's `cgroup` table".into()),
        }));
    }
    let devices: Vec<(u32, u32)> = p
        .filesystems
        .iter()
        .filter_map(|f| f.device.as_deref())
        .filter_map(|d| {
            use std::os::unix::fs::MetadataExt;
            let rdev = std::fs::metadata(d).ok()?.rdev();
            Some((libc::major(rdev), libc::minor(rdev)))
        })
        .collect();
    let cell_dir = p.cell_dir.clone();
    let mut journal = p.journal.take();
    let made = cgroup::create(limits, &cell_dir, &mut |dir| match journal.as_mut() {
        Some(j) => j.record(&Entry::Cgroup(dir.to_path_buf())),
        None => Ok(()),
    });
    p.journal = journal;
    let group = made?;
    p.guards.push(Guard::Cgroup(group.clone()));
    let record = group.apply(limits, &devices)?;
    // Said with the numbers wherever they are shown: they were measured under these limits.
    for l in limits {
        p.notes.push(format!("workers ran in a cgroup ({}): {} = {}", record.hierarchy, l.key, l.text));
    }
    p.cgroup = Some((record, group.procs_files()));
    Ok(())
}

/// Queue settings on every device under test, then `[sysctl]`: each set through the
/// host-wide journal (shared with other runs that set the same value, refused when a live
/// run holds another), then read back. Applied last, so teardown restores them first,
/// while the devices still exist. A cell that changes nothing never opens the journal.
fn apply_tunables(req: &ProvisionRequest, p: &mut Provisioned) -> Result<(), ProvisionError> {
    let t = &req.fs.tunables;
    let mut changes: Vec<(usize, String, PathBuf, String)> = Vec::new();
    for (i, fs) in p.filesystems.iter().enumerate() {
        let Some(dev) = fs.device.as_deref() else { continue };
        for (k, v) in &t.queue {
            let path = tunables::queue_path(Path::new(dev), k)
                .map_err(|e| ProvisionError::io("queue settings", Path::new(dev), std::io::Error::other(e)))?;
            changes.push((i, k.clone(), path, v.clone()));
        }
    }
    for (k, v) in &t.sysctl {
        changes.push((usize::MAX, k.clone(), tunables::sysctl_path(k), v.clone()));
    }
    if changes.is_empty() {
        return Ok(());
    }
    // Only root may write them or the host-wide journal; a skip, as the kernel's refusal was.
    if !is_root() {
        let key = &changes[0].1;
        return Err(ProvisionError::Unsupported(SkipReason {
            reason: format!("changing {key} needs root (running as uid {})", nix::unistd::geteuid()),
            remedy: Some("run as root, or leave out the scenario's [sysctl] and queue settings".into()),
        }));
    }
    let journal = HostJournal::system();
    let holder = Holder::this_process();
    for (i, key, path, value) in changes {
        let original = journal.set(holder, &key, &path, &value)?;
        p.guards.push(Guard::Restore { journal: journal.clone(), holder, path: path.clone() });
        let now = tunables::read_value(&path).map_err(|e| ProvisionError::io("read back", &path, e))?;
        if i == usize::MAX {
            p.notes.push(format!("sysctl {key} = {now} (was {original})"));
        } else {
            p.filesystems[i].queue.insert(key, now);
        }
    }
    Ok(())
}

fn filesystem_count(cell: &CellParams) -> u32 {
    match cell.layout {
        Layout::M => cell.tasks.max(1),
        Layout::S => 1,
    }
}

fn provision_tmpfs_loop(req: &ProvisionRequest, p: &mut Provisioned) -> Result<(), ProvisionError> {
    require_root("tmpfs-loop backing")?;
    let size = req.backing.image_size(req.cell.layout).expect("tmpfs-loop has image sizes");
    let nfs = filesystem_count(req.cell);
    let backing = p.cell_dir.join("backing");
    p.acquire_record(Entry::Tmpfs(backing.clone()))?;
    std::fs::create_dir(&backing).map_err(|e| ProvisionError::io("create", &backing, e))?;
    // Room for every image in full and a little for tmpfs itself, no more; and never more
    // than the host can give, so that the tmpfs fills (I/O errors in the cell) before the host does.
    let wanted = size.saturating_mul(nfs as u64).saturating_add(1 << 20);
    let tmpfs_opts = format!("size={},mode=0700", crate::host::memory::tmpfs_size_for(wanted));
    nix::mount::mount(
        Some("tmpfs"),
        &backing,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some(tmpfs_opts.as_str()),
    )
    .map_err(|e| ProvisionError::Sys { what: "mount tmpfs on".into(), path: backing.clone(), source: e })?;
    p.guards.push(Guard::Mount(backing.clone()));
    let mnt = p.cell_dir.join("mnt");
    make_dir(&mnt)?;
    for i in 0..nfs {
        check_interrupt()?;
        let image = backing.join(format!("img{i}"));
        let f = std::fs::File::create(&image).map_err(|e| ProvisionError::io("create image", &image, e))?;
        f.set_len(size).map_err(|e| ProvisionError::io("size image", &image, e))?;
        drop(f);
        p.acquire_record(Entry::Loop(image.clone()))?;
        let lo = LoopDevice::attach(&image)?;
        let dev = lo.path().to_path_buf();
        p.guards.push(Guard::Loop(lo));
        let mountpoint = match req.cell.layout {
            Layout::M => mnt.join(i.to_string()),
            Layout::S => mnt.clone(),
        };
        let mut info = make_fs(req, p, &dev, &mountpoint)?;
        info.image = Some(image.to_string_lossy().into_owned());
        info.image_size = Some(size);
        p.filesystems.push(info);
    }
    finish_task_dirs(req, p, &mnt)
}

fn provision_device(req: &ProvisionRequest, path: &Path, p: &mut Provisioned) -> Result<(), ProvisionError> {
    require_root("device backing")?;
    // Resolved once: mkfs, mount and the queue settings then name the device that was
    // checked, not whatever a link named like it points at later.
    let path = &path.canonicalize().map_err(|e| ProvisionError::io("resolve device", path, e))?;
    capability::device_usable(path, req.allow_device)
        .map_err(|reason| ProvisionError::Device { path: path.to_path_buf(), reason })?;
    let mnt = p.cell_dir.join("mnt");
    let mut info = make_fs(req, p, path, &mnt)?;
    info.image = None;
    p.filesystems.push(info);
    finish_task_dirs(req, p, &mnt)
}

/// mkfs, mount, quota and read-back for one filesystem on `dev`.
fn make_fs(
    req: &ProvisionRequest,
    p: &mut Provisioned,
    dev: &Path,
    mountpoint: &Path,
) -> Result<FilesystemInfo, ProvisionError> {
    // A variant (`ext4-nodelalloc`) names a cell; mkfs and mount(2) get its type.
    let fs = req.fs.fs_type(&req.cell.fs);
    let mut args = req.fs.mkfs.clone();
    if req.cell.quota == QuotaMode::On && req.fs.quota == QuotaImpl::Feature {
        args.extend(["-O".to_string(), "quota".to_string()]);
    }
    let argv = mkfs::mkfs_argv(fs, &args, dev);
    check_interrupt()?;
    mkfs::run_mkfs(&argv)?;
    check_interrupt()?;
    p.acquire_record(Entry::Mount(mountpoint.to_path_buf()))?;
    make_dir(mountpoint)?;
    mount::mount_fs(dev, mountpoint, fs, &req.fs.mount)?;
    p.guards.push(Guard::Mount(mountpoint.to_path_buf()));
    if req.cell.quota == QuotaMode::On {
        switch_quota_on(req, p, dev, mountpoint)?;
    }
    let m = mount::find_mount(mountpoint).ok_or_else(|| ProvisionError::Sys {
        what: "mount vanished from /proc/self/mountinfo".into(),
        path: mountpoint.to_path_buf(),
        source: Errno::ENOENT,
    })?;
    Ok(FilesystemInfo {
        fs: fs.to_string(),
        device: Some(dev.to_string_lossy().into_owned()),
        image: None,
        image_size: None,
        mountpoint: mountpoint.to_string_lossy().into_owned(),
        mkfs_argv: argv,
        mount_options_requested: req.fs.mount.clone(),
        mount_options: m.mount_options,
        super_options: m.super_options,
        features: mkfs::features(dev),
        quota_state: Some(quota::state(dev)),
        existing_dir: false,
        queue: Default::default(),
    })
}

fn switch_quota_on(
    req: &ProvisionRequest,
    p: &mut Provisioned,
    dev: &Path,
    mountpoint: &Path,
) -> Result<(), ProvisionError> {
    let mut types = quota::types_from_options(&req.fs.mount);
    if types.is_empty() {
        types = vec![QuotaType::User, QuotaType::Group];
    }
    // Some filesystems switch quota on themselves at mount (xfs with uquota,
    // ext4 with the quota feature): then there is nothing to switch.
    let pending: Vec<QuotaType> = types.into_iter().filter(|t| !quota::is_on(dev, *t)).collect();
    if pending.is_empty() {
        return Ok(());
    }
    if req.fs.quota == QuotaImpl::Feature {
        return Err(ProvisionError::Quota {
            what: "quota feature".into(),
            mountpoint: mountpoint.to_path_buf(),
            detail: format!(
                "quota is off after mounting a filesystem made with -O quota (state: {})",
                quota::state(dev)
            ),
        });
    }
    quota::create_files(mountpoint)?;
    for t in pending {
        quota::quota_on(dev, mountpoint, t)?;
        p.guards.push(Guard::Quota { device: dev.to_path_buf(), mountpoint: mountpoint.to_path_buf(), qtype: t });
    }
    Ok(())
}

fn provision_dir(req: &ProvisionRequest, path: &Path, p: &mut Provisioned) -> Result<(), ProvisionError> {
    let base = path.canonicalize().map_err(|e| ProvisionError::io("backing dir", path, e))?;
    let name = p.cell_dir.file_name().expect("cell dir has a name").to_string_lossy().into_owned();
    let scratch = base.join(format!("fsbench-{name}"));
    p.acquire_record(Entry::Scratch(scratch.clone()))?;
    std::fs::create_dir(&scratch).map_err(|e| ProvisionError::io("create", &scratch, e))?;
    p.guards.push(Guard::Scratch(scratch.clone()));
    set_mode(&scratch, 0o755)?;
    let m = mount::containing_mount(&scratch);
    // The directory's own filesystem, read back: never the scenario's name for the cell,
    // which was not built (mountinfo names ext4 exactly; statfs only knows "ext2/ext3/ext4").
    let fs = m
        .as_ref()
        .map(|m| m.fstype.clone())
        .or_else(|| mount::statfs_type(&scratch).map(String::from))
        .unwrap_or_else(|| "unknown".into());
    p.filesystems.push(FilesystemInfo {
        fs,
        device: None,
        image: None,
        image_size: None,
        mountpoint: scratch.to_string_lossy().into_owned(),
        mkfs_argv: Vec::new(),
        mount_options_requested: Vec::new(),
        mount_options: m.as_ref().map(|m| m.mount_options.clone()).unwrap_or_default(),
        super_options: m.as_ref().map(|m| m.super_options.clone()).unwrap_or_default(),
        features: Vec::new(),
        quota_state: None,
        existing_dir: true,
        queue: Default::default(),
    });
    // Every task gets its own directory, whatever the layout: there is one filesystem.
    for i in 0..req.cell.tasks.max(1) {
        let d = scratch.join(i.to_string());
        make_dir(&d)?;
        prepare_task_dir(req, i, &d)?;
        p.task_dirs.push(d);
    }
    p.root = scratch;
    Ok(())
}

/// Per-task directories: M: each fs's mount root; S: `<mnt>/<i>` on the one fs.
fn finish_task_dirs(req: &ProvisionRequest, p: &mut Provisioned, mnt: &Path) -> Result<(), ProvisionError> {
    for i in 0..req.cell.tasks.max(1) {
        let d = match req.cell.layout {
            Layout::M => mnt.join(i.to_string()),
            Layout::S => {
                let d = mnt.join(i.to_string());
                make_dir(&d)?;
                d
            }
        };
        prepare_task_dir(req, i, &d)?;
        p.task_dirs.push(d);
    }
    set_mode(mnt, 0o755)?;
    p.root = match req.cell.layout {
        Layout::M => mnt.join("0"),
        Layout::S => mnt.to_path_buf(),
    };
    Ok(())
}

fn prepare_task_dir(req: &ProvisionRequest, i: u32, d: &Path) -> Result<(), ProvisionError> {
    match &req.task_uids {
        Some(uids) => {
            let uid = *uids.get(i as usize).ok_or_else(|| {
                ProvisionError::io(
                    "task uid",
                    d,
                    std::io::Error::other(format!("task_uids has {} entries, task {i} has none", uids.len())),
                )
            })?;
            nix::unistd::chown(d, Some(nix::unistd::Uid::from_raw(uid)), Some(nix::unistd::Gid::from_raw(uid)))
                .map_err(|e| ProvisionError::Sys {
                    what: format!("chown {uid}:{uid}"),
                    path: d.to_path_buf(),
                    source: e,
                })?;
            set_mode(d, 0o755)
        }
        // As the seed did (chmod -R 777): any uid may work there.
        None => set_mode(d, 0o777),
    }
}

fn make_dir(d: &Path) -> Result<(), ProvisionError> {
    std::fs::create_dir_all(d).map_err(|e| ProvisionError::io("create", d, e))
}

fn set_mode(d: &Path, mode: u32) -> Result<(), ProvisionError> {
    std::fs::set_permissions(d, std::fs::Permissions::from_mode(mode)).map_err(|e| ProvisionError::io("chmod", d, e))
}

/// Clean up what a killed (kill -9) earlier run left: first the kernel settings of
/// any dead fsbench run on this host, whatever its work root (see [`host_tunables`];
/// root only, as only root changes them), while the loop devices they belong to are
/// still attached; then under `workdir_root`: mounts unmounted, loops detached, dirs
/// removed. Cells whose owning process is still alive are left alone. Returns a line
/// per object cleaned.
pub fn cleanup_stale(workdir_root: &Path) -> Result<Vec<String>, ProvisionError> {
    let mut cleaned = Vec::new();
    if is_root() {
        match HostJournal::system().restore_orphans() {
            Ok(lines) => cleaned.extend(lines),
            // Cells that change a setting meet the same error and fail; the rest can run.
            Err(e) => cleaned.push(format!("could not check the host-wide tunables journal: {e}")),
        }
    }
    cleaned.extend(journal::cleanup_stale(workdir_root)?);
    Ok(cleaned)
}
