//! Run a scenario's cells under other kernels, each in a qemu virtual machine.
//!
//! For each kernel the host builds an initramfs (this fsbench binary as
//! `/init`, the mkfs and quota tools, their libraries, the kernel modules the
//! cells need, the scenario and its fixtures), boots it with
//! qemu-system-x86_64, and the guest runs the ordinary `fsbench run` under the
//! guest kernel. The guest's run directory comes back over a second serial
//! port and becomes an ordinary run under `<out>`, labelled with the kernel's
//! label and carrying the guest's uname, so `fsbench compare` puts kernels side
//! by side. KVM is used when it boots; otherwise TCG, with a warning.
//!
//! Host side: [`kernel`] (which kernels, their modules), [`run`] (boot each, with
//! deadlines and the KVM fallback), `guest_files` and [`initramfs`] (what the guest
//! gets), [`vm`] (one qemu process), `adopt` (its results become a run here), [`member`]
//! (a kernel-paired run's members: one cell per fresh guest, its result a member).
//! Guest side: [`guest`] (PID 1 in the virtual machine).

mod adopt;
pub mod cpio;
pub mod guest;
mod guest_files;
pub mod initramfs;
pub mod kernel;
pub mod member;
pub mod modules;
mod request;
pub mod run;
pub mod settings;
pub mod vm;

use std::path::PathBuf;

pub use kernel::{image_release, modules_dir, parse_kernel_arg};
pub use run::{BOOT_TIMEOUT_ENV, CELL_TIMEOUT_ENV, GuestEnd, KernelRun, KernelsRequest, run_kernels};

use crate::exit;
use crate::scenario::{Backing, KernelSpec, Scenario};

/// What can go wrong preparing or running a guest.
#[derive(Debug, thiserror::Error)]
pub enum QemuError {
    /// A file operation failed.
    #[error("cannot {what} {}: {source}", path.display())]
    Io {
        /// What was being done.
        what: String,
        /// On which file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The modules directory cannot be used.
    #[error("kernel modules in {}: {detail}", dir.display())]
    Modules {
        /// The modules directory.
        dir: PathBuf,
        /// What is wrong.
        detail: String,
    },
    /// The initramfs cannot be built.
    #[error("cannot build the initramfs: {what}")]
    Initramfs {
        /// What is missing or failed.
        what: String,
    },
    /// A `--kernel` option is malformed.
    #[error("--kernel `{arg}`: {detail}")]
    KernelArg {
        /// The option value.
        arg: String,
        /// What is wrong.
        detail: String,
    },
}

/// Check what can be checked before any boot (device backing, kernel images, module
/// directories, qemu itself) and return the qemu binary to use.
pub fn prepare(scenario: &Scenario, kernels: &[KernelSpec], allow_device: bool) -> anyhow::Result<PathBuf> {
    if matches!(scenario.backing, Backing::Device { .. }) || allow_device {
        return Err(exit::InputError::anyhow(
            "device backing cannot run in a virtual machine (the guest has no access to host block devices)",
        ));
    }
    let host = crate::host::identity::HostInfo::detect();
    for k in kernels {
        let refuse = |e: String| exit::InputError::anyhow(format!("kernel `{}`: {e}", k.label));
        if !k.image.is_file() {
            return Err(refuse(format!("image {} does not exist", k.image.display())));
        }
        settings::check_resources(k, host.memory_bytes, host.cpu_count).map_err(refuse)?;
        settings::check_path(&k.image, "image").map_err(refuse)?;
        let modules = modules_dir(k).map_err(|e| refuse(e.to_string()))?;
        settings::check_path(&modules, "modules directory").map_err(refuse)?;
    }
    vm::find_qemu().ok_or_else(|| {
        exit::InputError::anyhow("qemu-system-x86_64 not found: apt-get install qemu-system-x86 (or set FSBENCH_QEMU)")
    })
}
