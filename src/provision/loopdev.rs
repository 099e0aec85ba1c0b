//! Loop devices through /dev/loop-control and the loop ioctls (no losetup).

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::errno::Errno;

use super::ProvisionError;

// From <linux/loop.h>; libc does not export them.
const LOOP_SET_FD: libc::c_ulong = 0x4C00;
const LOOP_CLR_FD: libc::c_ulong = 0x4C01;
const LOOP_SET_STATUS64: libc::c_ulong = 0x4C04;
const LOOP_CONFIGURE: libc::c_ulong = 0x4C0A;
const LOOP_CTL_GET_FREE: libc::c_ulong = 0x4C82;
const LO_FLAGS_AUTOCLEAR: u32 = 4;
const LO_NAME_SIZE: usize = 64;

/// `struct loop_info64`.
#[repr(C)]
#[derive(Clone, Copy)]
struct LoopInfo64 {
    lo_device: u64,
    lo_inode: u64,
    lo_rdevice: u64,
    lo_offset: u64,
    lo_sizelimit: u64,
    lo_number: u32,
    lo_encrypt_type: u32,
    lo_encrypt_key_size: u32,
    lo_flags: u32,
    lo_file_name: [u8; LO_NAME_SIZE],
    lo_crypt_name: [u8; LO_NAME_SIZE],
    lo_encrypt_key: [u8; 32],
    lo_init: [u64; 2],
}

/// `struct loop_config`.
#[repr(C)]
struct LoopConfig {
    fd: u32,
    block_size: u32,
    info: LoopInfo64,
    reserved: [u64; 8],
}

const _: () = assert!(std::mem::size_of::<LoopInfo64>() == 232);
const _: () = assert!(std::mem::size_of::<LoopConfig>() == 304);

/// Whether this host can make loop devices (the control node exists).
pub fn loop_control_available() -> Result<(), String> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/loop-control")
        .map(|_| ())
        .map_err(|e| format!("/dev/loop-control: {e}"))
}

/// An attached loop device. Detached when released or dropped; it is also
/// marked autoclear, so the kernel detaches it if this process dies first.
#[derive(Debug)]
pub struct LoopDevice {
    path: PathBuf,
    image: PathBuf,
    file: Option<File>,
}

impl LoopDevice {
    /// Attach `image` to a free loop device.
    pub fn attach(image: &Path) -> Result<LoopDevice, ProvisionError> {
        let sys = |what: &str, path: &Path, e: Errno| ProvisionError::Sys {
            what: what.into(),
            path: path.to_path_buf(),
            source: e,
        };
        let backing = OpenOptions::new()
            .read(true)
            .write(true)
            .open(image)
            .map_err(|e| ProvisionError::io("open image", image, e))?;
        let ctl_path = Path::new("/dev/loop-control");
        let ctl = OpenOptions::new()
            .read(true)
            .write(true)
            .open(ctl_path)
            .map_err(|e| ProvisionError::io("open", ctl_path, e))?;
        // Other processes race for the same free device: retry on EBUSY.
        for _ in 0..32 {
            // SAFETY: LOOP_CTL_GET_FREE takes no argument and returns a device number.
            let n = unsafe { libc::ioctl(ctl.as_raw_fd(), LOOP_CTL_GET_FREE as _) };
            if n < 0 {
                return Err(sys("LOOP_CTL_GET_FREE", ctl_path, Errno::last()));
            }
            let path = PathBuf::from(format!("/dev/loop{n}"));
            let dev = match open_node(&path, n as u32) {
                Ok(f) => f,
                Err(e) => return Err(ProvisionError::io("open loop device", &path, e)),
            };
            match configure(&dev, &backing, image) {
                Ok(()) => return Ok(LoopDevice { path, image: image.to_path_buf(), file: Some(dev) }),
                Err(Errno::EBUSY) => continue,
                Err(e) => return Err(sys("LOOP_CONFIGURE", &path, e)),
            }
        }
        Err(sys("attach loop device (all candidates busy)", image, Errno::EBUSY))
    }

    /// The device node, `/dev/loop3`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `loop3`.
    pub fn name(&self) -> String {
        self.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
    }

    /// The image file behind it.
    pub fn image(&self) -> &Path {
        &self.image
    }

    /// Detach and wait until the kernel has let go of the image.
    pub fn detach(mut self) -> Result<(), ProvisionError> {
        self.detach_inner()
    }

    /// Detach when the device may still be held by a lazily detached
    /// filesystem: the kernel then only marks it autoclear and detaches it at
    /// last close. Returns whether it is already gone; waits at most `wait`.
    pub fn detach_deferred(mut self, wait: Duration) -> Result<bool, ProvisionError> {
        let Some(file) = self.file.take() else { return Ok(true) };
        // SAFETY: LOOP_CLR_FD takes no argument.
        let rc = unsafe { libc::ioctl(file.as_raw_fd(), LOOP_CLR_FD as _, 0) };
        let err = (rc < 0).then(Errno::last);
        drop(file);
        if wait_detached(&self.name(), &self.image, wait).is_ok() {
            return Ok(true);
        }
        match err {
            // Attached with LO_FLAGS_AUTOCLEAR: it goes when its last opener closes.
            None | Some(Errno::EBUSY) => Ok(false),
            Some(e) => {
                Err(ProvisionError::Sys { what: "detach loop device".into(), path: self.path.clone(), source: e })
            }
        }
    }

    fn detach_inner(&mut self) -> Result<(), ProvisionError> {
        let Some(file) = self.file.take() else { return Ok(()) };
        // SAFETY: LOOP_CLR_FD takes no argument. With other openers (a mount
        // that is still going away) the kernel defers the detach to last close.
        let rc = unsafe { libc::ioctl(file.as_raw_fd(), LOOP_CLR_FD as _, 0) };
        let err = (rc < 0).then(Errno::last);
        drop(file);
        let name = self.name();
        wait_detached(&name, &self.image, Duration::from_secs(5)).map_err(|_| ProvisionError::Sys {
            what: format!("detach loop device (LOOP_CLR_FD: {})", err.map(|e| e.desc()).unwrap_or("ok")),
            path: self.path.clone(),
            source: err.unwrap_or(Errno::EBUSY),
        })
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        if let Err(e) = self.detach_inner() {
            eprintln!("fsbench: cleanup: {e}");
        }
    }
}

fn open_node(path: &Path, n: u32) -> std::io::Result<File> {
    match OpenOptions::new().read(true).write(true).open(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // No devtmpfs/udev node yet: make it (block major 7).
            let dev = libc::makedev(7, n);
            nix::sys::stat::mknod(
                path,
                nix::sys::stat::SFlag::S_IFBLK,
                nix::sys::stat::Mode::from_bits_truncate(0o660),
                dev,
            )
            .map_err(std::io::Error::from)?;
            OpenOptions::new().read(true).write(true).open(path)
        }
        r => r,
    }
}

fn configure(dev: &File, backing: &File, image: &Path) -> Result<(), Errno> {
    let mut info: LoopInfo64 = unsafe { std::mem::zeroed() };
    info.lo_flags = LO_FLAGS_AUTOCLEAR;
    let name = image.as_os_str().as_encoded_bytes();
    let len = name.len().min(LO_NAME_SIZE - 1);
    info.lo_file_name[..len].copy_from_slice(&name[..len]);
    let cfg = LoopConfig { fd: backing.as_raw_fd() as u32, block_size: 0, info, reserved: [0; 8] };
    // SAFETY: cfg is a valid struct loop_config living across the call.
    let rc = unsafe { libc::ioctl(dev.as_raw_fd(), LOOP_CONFIGURE as _, &cfg as *const LoopConfig) };
    if rc == 0 {
        return Ok(());
    }
    let e = Errno::last();
    if e != Errno::EINVAL && e != Errno::ENOTTY {
        return Err(e);
    }
    // Kernels before 5.8 lack LOOP_CONFIGURE: attach, then set the status.
    // SAFETY: LOOP_SET_FD takes the backing fd as its argument.
    if unsafe { libc::ioctl(dev.as_raw_fd(), LOOP_SET_FD as _, backing.as_raw_fd() as libc::c_ulong) } < 0 {
        return Err(Errno::last());
    }
    // SAFETY: info is a valid struct loop_info64.
    if unsafe { libc::ioctl(dev.as_raw_fd(), LOOP_SET_STATUS64 as _, &info as *const LoopInfo64) } < 0 {
        let e = Errno::last();
        unsafe { libc::ioctl(dev.as_raw_fd(), LOOP_CLR_FD as _, 0) };
        return Err(e);
    }
    Ok(())
}

/// The backing file of `loopN` as sysfs reports it, if attached.
pub fn backing_file(name: &str) -> Option<PathBuf> {
    backing_file_at(&Path::new("/sys/block").join(name))
}

/// The backing file of the loop device whose sysfs directory is `dev_dir`
/// (`/sys/dev/block/7:3`), if it is an attached loop device.
pub fn backing_file_at(dev_dir: &Path) -> Option<PathBuf> {
    let s = std::fs::read_to_string(dev_dir.join("loop/backing_file")).ok()?;
    let s = s.trim_end_matches('\n');
    Some(PathBuf::from(s.strip_suffix(" (deleted)").unwrap_or(s)))
}

/// Every attached loop device whose backing file is exactly `image`, as `loopN`.
pub fn loops_backed_by(image: &Path) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir("/sys/block") else { return Vec::new() };
    let mut out: Vec<String> = rd
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("loop") && backing_file(name).is_some_and(|b| b == image))
        .collect();
    out.sort();
    out
}

/// Every attached loop device whose backing file lies under `dir`, as (`loopN`, backing file).
pub fn loops_backed_under(dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(rd) = std::fs::read_dir("/sys/block") else { return Vec::new() };
    let mut out: Vec<(String, PathBuf)> = rd
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.starts_with("loop") {
                return None;
            }
            backing_file(&name).filter(|b| b.starts_with(dir)).map(|b| (name, b))
        })
        .collect();
    out.sort();
    out
}

fn wait_detached(name: &str, image: &Path, timeout: Duration) -> Result<(), ()> {
    let start = Instant::now();
    loop {
        match backing_file(name) {
            Some(b) if b == image => {}
            _ => return Ok(()),
        }
        if start.elapsed() > timeout {
            return Err(());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Detach `/dev/<name>` if it is still backed by `image` (stale cleanup).
pub fn detach_by_name(name: &str, image: &Path) -> Result<(), ProvisionError> {
    let path = PathBuf::from(format!("/dev/{name}"));
    if let Ok(f) = OpenOptions::new().read(true).open(&path) {
        // SAFETY: LOOP_CLR_FD takes no argument.
        unsafe { libc::ioctl(f.as_raw_fd(), LOOP_CLR_FD as _, 0) };
    }
    wait_detached(name, image, Duration::from_secs(5)).map_err(|_| ProvisionError::Sys {
        what: "detach stale loop device".into(),
        path,
        source: Errno::EBUSY,
    })
}
