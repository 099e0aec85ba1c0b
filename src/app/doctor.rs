//! `fsbench doctor`: what this host can do, with remedies.

use clap::Args;
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};

use crate::exit;
use crate::provision::capability::{Capability, DOCTOR_DEFAULT_FS, capabilities};

/// `fsbench doctor`.
#[derive(Debug, Clone, Args)]
pub struct DoctorArgs {
    /// Also check these filesystem types (default: ext2, ext3, ext4, xfs, btrfs, f2fs, ...).
    #[arg(long, value_delimiter = ',')]
    pub fs: Vec<String>,
    /// Print JSON (`schemas/doctor.schema.json`) instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// Whether `run --kernel` can boot kernels here, and how fast: qemu present, and KVM usable
/// or only TCG (software emulation). Quota remedies point at qemu, so doctor says whether it is there.
fn qemu_row() -> Capability {
    let name = "qemu (run --kernel)".to_string();
    let Some(qemu) = crate::qemu::vm::find_qemu() else {
        return Capability {
            name,
            state: "missing".into(),
            detail: "qemu-system-x86_64 not found (nor $FSBENCH_QEMU)".into(),
            remedy: "apt-get install qemu-system-x86".into(),
        };
    };
    let (state, accel, remedy) = if crate::qemu::vm::kvm_openable() {
        // Opening /dev/kvm is not running a guest on it: here qemu opens it and then hangs at
        // boot. Only a boot can tell, and the boot watchdog falls back to TCG when it hangs.
        (
            "ok",
            "KVM: /dev/kvm opens (whether guests run on it shows at the first boot: if it hangs, \
             fsbench falls back to TCG, software emulation, and says so)",
            String::new(),
        )
    } else {
        (
            // It works, only slower: the detail and the remedy say so.
            "ok",
            "TCG: /dev/kvm not usable, guests run in software emulation, several times slower",
            "load kvm_intel or kvm_amd, or run on a host that passes /dev/kvm through".to_string(),
        )
    };
    Capability { name, state: state.into(), detail: format!("{}; {accel}", qemu.display()), remedy }
}

/// Whether fio workloads can run: fio present, and its version.
fn fio_row() -> Capability {
    let name = "fio (kind = \"fio\")".to_string();
    match crate::workload::fio::fio_version() {
        Some(v) => Capability { name, state: "ok".into(), detail: v, remedy: String::new() },
        None => {
            let skip = crate::provision::capability::fio_missing();
            Capability { name, state: "missing".into(), detail: skip.reason, remedy: skip.remedy.unwrap_or_default() }
        }
    }
}

/// Whether cells can be profiled (`[workload] profile = "cpu"`): perf, its event, the paranoid level.
fn profile_row() -> Capability {
    let name = "profiling (profile = \"cpu\")".to_string();
    match crate::profile::detect(&crate::profile::Probe::host()) {
        Ok(r) => {
            let pmu = if r.event == "cycles" { "the CPU has a PMU" } else { "no PMU: a software event" };
            let kthreads = match &r.system_wide {
                Ok(()) => "kernel threads too (`+kthreads`)".to_string(),
                Err(why) => format!("not the kernel threads: {why}"),
            };
            let detail = format!(
                "{}; event {} ({pmu}) at {} Hz; {kthreads}",
                r.version,
                r.event,
                crate::profile::DEFAULT_FREQUENCY_HZ
            );
            Capability { name, state: "ok".into(), detail, remedy: String::new() }
        }
        Err(why) => {
            Capability { name, state: "missing".into(), detail: why, remedy: "cells run unprofiled and say why".into() }
        }
    }
}

/// `fsbench doctor`: a table of capabilities with state and remedy.
pub fn doctor(args: &DoctorArgs) -> anyhow::Result<i32> {
    // First: the quota probes mount and attach; on SIGINT/SIGTERM their guards must run.
    crate::signals::install();
    let fs_list: Vec<String> =
        if args.fs.is_empty() { DOCTOR_DEFAULT_FS.iter().map(|s| s.to_string()).collect() } else { args.fs.clone() };
    let mut rows = capabilities(&fs_list);
    rows.push(qemu_row());
    rows.push(fio_row());
    rows.push(profile_row());
    if args.json {
        let interrupted = crate::signals::interrupted();
        let doc =
            super::output::DoctorJson { schema: super::output::OUTPUT_SCHEMA_VERSION, capabilities: rows, interrupted };
        print!("{}", super::output::to_json(&doc));
        return Ok(if interrupted { exit::INTERRUPTED } else { exit::SUCCESS });
    }
    let mut table = Table::new();
    // Wrap to the terminal (100 columns when piped); the kernel's messages are long.
    table
        .load_style(UTF8_FULL_CONDENSED)
        .set_content_arrangement(comfy_table::ContentArrangement::Dynamic)
        .set_width(super::print::output_width())
        .set_header(vec!["capability", "state", "detail", "remedy"]);
    for r in &rows {
        table.add_row(vec![r.name.clone(), r.state.clone(), r.detail.clone(), r.remedy.clone()]);
    }
    println!("{table}");
    // The environment preflight `run` records: what moves benchmark numbers, with remedies.
    let env = crate::host::environment::Environment::sample(std::time::Duration::from_millis(500));
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED)
        .set_content_arrangement(comfy_table::ContentArrangement::Dynamic)
        .set_width(super::print::output_width())
        .set_header(vec!["environment", "state", "remedy"]);
    for (name, state, remedy) in env.rows() {
        t.add_row(vec![name, state, remedy]);
    }
    println!("{t}");
    for why in env.busy_reasons() {
        println!("{}", crate::text::wrap(&format!("busy: {why}"), super::print::output_width() as usize, "      "));
    }
    if crate::signals::interrupted() {
        eprintln!("fsbench: doctor interrupted; rows marked unknown were not checked");
        return Ok(exit::INTERRUPTED);
    }
    Ok(exit::SUCCESS)
}
