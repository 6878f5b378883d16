//! The disks in sysfs and procfs: `/sys/block/<disk>` (and a directory per partition inside
//! it), `/sys/dev/block/M:m` links to them, `/proc/partitions`, `/proc/diskstats`
//! (`block/genhd.c` `show_partition`, `diskstats_show`; `block/partitions/core.c`). The
//! directories are computed when listed, so partitions that `BLKRRPART` made or removed
//! show at once. `/sys/block/<disk>` is a directory here, not Linux's link into
//! `/sys/devices/virtual/block`; lsblk and blkid read the same files through either.

use super::{Disk, SECTOR, all_disks};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use um_fs::procfs::{DynDir, Node, ProcFs, ProcInode, registry};
use um_kernel::vfs::mode;

fn dyn_dir(fs: &Arc<ProcFs>, d: impl DynDir + 'static) -> Arc<ProcInode> {
    ProcInode::new(
        fs,
        fs.alloc_ino(),
        mode::S_IFDIR | 0o755,
        Node::Dyn(Box::new(d)),
    )
}

/// A file whose text is made from the disk when read.
fn render(
    fs: &Arc<ProcFs>,
    d: &Arc<Disk>,
    f: impl Fn(&Disk) -> String + Send + Sync + 'static,
) -> Arc<ProcInode> {
    let d = d.clone();
    ProcInode::file(fs, move |_, _| Ok(f(&d).into_bytes()))
}

/// The eleven-plus counters of `diskstats_show` after the name (whole disk only; partitions
/// show zeros).
fn stat_fields(d: &Disk, whole: bool) -> String {
    let s = &d.stats;
    let g = |a: &std::sync::atomic::AtomicU64| if whole { a.load(Ordering::Relaxed) } else { 0 };
    format!(
        "{} 0 {} 0 {} 0 {} 0 0 0 0 {} 0 {} 0 {} 0",
        g(&s.reads),
        g(&s.read_sectors),
        g(&s.writes),
        g(&s.write_sectors),
        g(&s.discards),
        g(&s.discard_sectors),
        g(&s.flushes)
    )
}

fn part_dir(fs: &Arc<ProcFs>, d: &Arc<Disk>, n: u32) -> Arc<ProcInode> {
    let minor = d.first_minor + n;
    let major = d.major;
    let name = d.part_name(n);
    let size_of = move |d: &Disk| {
        d.partitions()
            .iter()
            .find(|p| p.number == n)
            .map_or(0, |p| p.sectors)
    };
    let start_of = move |d: &Disk| {
        d.partitions()
            .iter()
            .find(|p| p.number == n)
            .map_or(0, |p| p.start)
    };
    ProcInode::dir(
        fs,
        vec![
            ("dev", ProcInode::text(fs, format!("{major}:{minor}\n"))),
            ("partition", ProcInode::text(fs, format!("{n}\n"))),
            ("size", render(fs, d, move |d| format!("{}\n", size_of(d)))),
            (
                "start",
                render(fs, d, move |d| format!("{}\n", start_of(d))),
            ),
            (
                "ro",
                render(fs, d, |d| format!("{}\n", u8::from(d.read_only()))),
            ),
            ("alignment_offset", ProcInode::text(fs, "0\n")),
            ("discard_alignment", ProcInode::text(fs, "0\n")),
            (
                "stat",
                render(fs, d, |d| format!("{}\n", stat_fields(d, false))),
            ),
            (
                "uevent",
                ProcInode::text(
                    fs,
                    format!(
                        "MAJOR={major}\nMINOR={minor}\nDEVNAME={name}\nDEVTYPE=partition\nPARTN={n}\n"
                    ),
                ),
            ),
        ],
    )
}

fn queue_dir(fs: &Arc<ProcFs>, d: &Arc<Disk>) -> Arc<ProcInode> {
    let t = |s: &str| ProcInode::text(fs, format!("{s}\n"));
    let discard = d.backend.can_discard();
    let dg = if discard { "512" } else { "0" };
    let dmax = if discard { "4294966784" } else { "0" };
    ProcInode::dir(
        fs,
        vec![
            ("logical_block_size", t("512")),
            ("physical_block_size", t("512")),
            ("hw_sector_size", t("512")),
            ("minimum_io_size", t("512")),
            ("optimal_io_size", t("0")),
            ("rotational", t("1")),
            ("discard_granularity", t(dg)),
            ("discard_max_bytes", t(dmax)),
            ("discard_max_hw_bytes", t(dmax)),
            ("write_zeroes_max_bytes", t("4294966784")),
            ("max_sectors_kb", t("1280")),
            ("max_hw_sectors_kb", t("1280")),
            ("nr_requests", t("64")),
            ("scheduler", t("[none]")),
            ("zoned", t("none")),
            ("dax", t("0")),
            ("write_cache", t("write back")),
            (
                "read_ahead_kb",
                render(fs, d, |d| {
                    format!(
                        "{}\n",
                        d.ra_pages.load(Ordering::Relaxed) * super::page() / 1024
                    )
                }),
            ),
        ],
    )
}

fn disk_dir(fs: &Arc<ProcFs>, d: &Arc<Disk>) -> Arc<ProcInode> {
    struct DiskDir(Arc<Disk>);
    impl DynDir for DiskDir {
        fn entries(&self, fs: &Arc<ProcFs>) -> Vec<(Vec<u8>, Arc<ProcInode>)> {
            let d = &self.0;
            let (major, minor) = (d.major, d.first_minor);
            let mut v: Vec<(Vec<u8>, Arc<ProcInode>)> = vec![
                ("dev", ProcInode::text(fs, format!("{major}:{minor}\n"))),
                (
                    "size",
                    render(fs, d, |d| format!("{}\n", d.size() / SECTOR)),
                ),
                (
                    "ro",
                    render(fs, d, |d| format!("{}\n", u8::from(d.read_only()))),
                ),
                ("removable", ProcInode::text(fs, "0\n")),
                ("hidden", ProcInode::text(fs, "0\n")),
                ("range", ProcInode::text(fs, format!("{}\n", d.minors))),
                ("ext_range", ProcInode::text(fs, format!("{}\n", d.minors))),
                ("capability", ProcInode::text(fs, "0\n")),
                ("alignment_offset", ProcInode::text(fs, "0\n")),
                ("discard_alignment", ProcInode::text(fs, "0\n")),
                ("diskseq", ProcInode::text(fs, format!("{}\n", d.seq))),
                (
                    "stat",
                    render(fs, d, |d| format!("{}\n", stat_fields(d, true))),
                ),
                ("queue", queue_dir(fs, d)),
                (
                    "uevent",
                    ProcInode::text(
                        fs,
                        format!(
                            "MAJOR={major}\nMINOR={minor}\nDEVNAME={}\nDEVTYPE=disk\n",
                            d.name
                        ),
                    ),
                ),
            ]
            .into_iter()
            .map(|(n, i)| (n.as_bytes().to_vec(), i))
            .collect();
            for p in d.partitions() {
                v.push((
                    d.part_name(p.number).into_bytes(),
                    part_dir(fs, d, p.number),
                ));
            }
            v
        }
    }
    dyn_dir(fs, DiskDir(d.clone()))
}

struct BlockDir;

impl DynDir for BlockDir {
    fn entries(&self, fs: &Arc<ProcFs>) -> Vec<(Vec<u8>, Arc<ProcInode>)> {
        all_disks()
            .iter()
            .map(|d| (d.name.clone().into_bytes(), disk_dir(fs, d)))
            .collect()
    }
}

struct DevBlockDir;

impl DynDir for DevBlockDir {
    fn entries(&self, fs: &Arc<ProcFs>) -> Vec<(Vec<u8>, Arc<ProcInode>)> {
        let mut v = Vec::new();
        for d in all_disks() {
            v.push((
                format!("{}:{}", d.major, d.first_minor).into_bytes(),
                ProcInode::link(fs, &format!("../../block/{}", d.name)),
            ));
            for p in d.partitions() {
                v.push((
                    format!("{}:{}", d.major, d.first_minor + p.number).into_bytes(),
                    ProcInode::link(
                        fs,
                        &format!("../../block/{}/{}", d.name, d.part_name(p.number)),
                    ),
                ));
            }
        }
        v
    }
}

/// `show_partition`: `major minor #blocks name`, blocks of 1 KiB.
fn partitions() -> String {
    let mut s = String::from("major minor  #blocks  name\n\n");
    for d in all_disks() {
        s += &format!(
            "{:4}  {:7} {:10} {}\n",
            d.major,
            d.first_minor,
            d.size() / 1024,
            d.name
        );
        for p in d.partitions() {
            s += &format!(
                "{:4}  {:7} {:10} {}\n",
                d.major,
                d.first_minor + p.number,
                p.sectors * SECTOR / 1024,
                d.part_name(p.number)
            );
        }
    }
    s
}

fn diskstats() -> String {
    let mut s = String::new();
    for d in all_disks() {
        s += &format!(
            "{:4} {:7} {} {}\n",
            d.major,
            d.first_minor,
            d.name,
            stat_fields(&d, true)
        );
        for p in d.partitions() {
            s += &format!(
                "{:4} {:7} {} {}\n",
                d.major,
                d.first_minor + p.number,
                d.part_name(p.number),
                stat_fields(&d, false)
            );
        }
    }
    s
}

pub(super) fn register() {
    registry::proc_create("", "partitions", |fs| {
        ProcInode::file(fs, |_, _| Ok(partitions().into_bytes()))
    });
    registry::proc_create("", "diskstats", |fs| {
        ProcInode::file(fs, |_, _| Ok(diskstats().into_bytes()))
    });
    registry::proc_create("sysfs", "block", |fs| dyn_dir(fs, BlockDir));
    registry::proc_create("sysfs/dev", "block", |fs| dyn_dir(fs, DevBlockDir));
}
