//! sysfs, minimal (Linux `fs/sysfs/`, `drivers/base/cpu.c`): the directory skeleton programs
//! expect, and the CPU masks under `/sys/devices/system/cpu`.
//!
//! Built from procfs nodes ([`crate::procfs::ProcInode`]) in an instance of its own, with
//! sysfs's magic and device number. `/sys/fs/cgroup` is an empty directory to mount a cgroup
//! file system on; `/sys/module` lists the loaded modules (`procfs::modules`);
//! `/sys/kernel/mm/hugepages/hugepages-<N>kB/` has one directory per huge page pool
//! (mm/hugetlb.c `hugetlb_sysfs_add_hstate`, `um_mm::hugetlb`). Neighbours:
//! [`crate::procfs`], `crate::mount` (which mounts it).

use crate::procfs::{ProcFs, ProcInode, fmt};
use std::sync::Arc;
use um_kernel::kernel::Kernel;
use um_kernel::vfs::Inode;
use um_uapi::SysResult;

/// `SYSFS_MAGIC`.
pub const SYSFS_MAGIC: i64 = 0x6265_6572;
/// sysfs's anonymous device number.
pub const SYSFS_DEV: (u32, u32) = (0, 21);

/// The CPU list files: every host CPU is online, possible and present.
fn cpu_dir(fs: &Arc<ProcFs>) -> Arc<ProcInode> {
    let n = crate::procfs::ncpus();
    let list = format!("{}\n", fmt::cpu_list(n));
    let mut entries: Vec<(String, Arc<ProcInode>)> = (0..n)
        .map(|i| {
            (
                format!("cpu{i}"),
                ProcInode::dir(fs, vec![("online", ProcInode::text(fs, "1\n"))]),
            )
        })
        .collect();
    for name in ["online", "possible", "present"] {
        entries.push((name.to_string(), ProcInode::text(fs, list.clone())));
    }
    entries.push((
        "kernel_max".to_string(),
        ProcInode::text(fs, format!("{}\n", n.max(1) - 1)),
    ));
    entries.push(("offline".to_string(), ProcInode::text(fs, "\n")));
    let borrowed: Vec<(&str, Arc<ProcInode>)> = entries
        .iter()
        .map(|(n, i)| (n.as_str(), i.clone()))
        .collect();
    ProcInode::dir(fs, borrowed)
}

/// `/sys/kernel/mm/hugepages`: a directory per supported huge page size, with the pool's
/// counters (`nr_hugepages` and `nr_overcommit_hugepages` writable by root).
fn hugepages_dir(fs: &Arc<ProcFs>) -> Arc<ProcInode> {
    use crate::procfs::{HugeKnob, huge_knob};
    let dirs: Vec<(String, Arc<ProcInode>)> = um_mm::hugetlb::pool()
        .sizes()
        .into_iter()
        .map(|size| {
            let k = |knob| huge_knob(fs, Some(size), knob);
            let files = vec![
                ("free_hugepages", k(HugeKnob::Free)),
                ("nr_hugepages", k(HugeKnob::Nr)),
                ("nr_hugepages_mempolicy", k(HugeKnob::Nr)),
                ("nr_overcommit_hugepages", k(HugeKnob::Overcommit)),
                ("resv_hugepages", k(HugeKnob::Resv)),
                ("surplus_hugepages", k(HugeKnob::Surplus)),
            ];
            (
                format!("hugepages-{}kB", size / 1024),
                ProcInode::dir(fs, files),
            )
        })
        .collect();
    ProcInode::dir(
        fs,
        dirs.iter().map(|(n, i)| (n.as_str(), i.clone())).collect(),
    )
}

/// Mounts a new sysfs and returns its root inode.
pub fn mount(k: &Arc<Kernel>) -> SysResult<Arc<dyn Inode>> {
    let fs = ProcFs::new_instance(k, SYSFS_MAGIC, SYSFS_DEV);
    let empty = |fs: &Arc<ProcFs>| ProcInode::dir(fs, Vec::new());
    let system = ProcInode::dir(&fs, vec![("cpu", cpu_dir(&fs))]);
    let devices = ProcInode::dir(
        &fs,
        vec![
            ("system", system),
            ("virtual", empty(&fs)),
            ("platform", empty(&fs)),
        ],
    );
    let kernel = ProcInode::dir(
        &fs,
        vec![
            ("debug", empty(&fs)),
            (
                "mm",
                ProcInode::dir(&fs, vec![("hugepages", hugepages_dir(&fs))]),
            ),
            ("security", empty(&fs)),
            ("uevent_seqnum", ProcInode::text(&fs, "0\n")),
        ],
    );
    let fsdir = ProcInode::dir(&fs, vec![("cgroup", empty(&fs))]);
    // Directories the block layer (um-drivers) and the module registry (um-modules) provide
    // through the registry (`procfs::registry`, directory names "sysfs" and "sysfs/dev");
    // empty without them.
    let slot = |dir: &str, name: &str| {
        crate::procfs::registry::entries(&fs, dir)
            .into_iter()
            .find(|(n, _)| *n == name)
            .map_or_else(|| empty(&fs), |(_, i)| i)
    };
    let dev = ProcInode::dir(
        &fs,
        vec![("block", slot("sysfs/dev", "block")), ("char", empty(&fs))],
    );
    let root = ProcInode::dir(
        &fs,
        vec![
            ("block", slot("sysfs", "block")),
            ("bus", empty(&fs)),
            (
                "class",
                // Classes other crates register ("sysfs/class": um-net's `net`).
                ProcInode::dir(&fs, crate::procfs::registry::entries(&fs, "sysfs/class")),
            ),
            ("dev", dev),
            ("devices", devices),
            ("firmware", empty(&fs)),
            ("fs", fsdir),
            ("kernel", kernel),
            // `/sys/module`: loadable modules' directories (um-modules registers it).
            ("module", slot("sysfs", "module")),
            ("power", empty(&fs)),
        ],
    );
    Ok(root)
}
