//! System-wide procfs files: `meminfo`, `cpuinfo`, `stat`, `uptime`, `loadavg`, `version`,
//! `filesystems`, `cmdline`, `mounts`, ... and the `/proc/sys` sysctl tree (Linux
//! `fs/proc/{meminfo,cpuinfo,stat,uptime,loadavg,version,cmdline}.c`, `kernel/sysctl.c`).
//!
//! Figures come from the kernel object (frames, page cache, task table, uts). CPU figures
//! that only the host knows (`cpuinfo`, the per-CPU jiffies of `stat`) are read from the
//! host's own `/proc` (kernel-side, never on a guest's behalf). Neighbours: [`super::fmt`]
//! (the formats), [`super::pid`].

use super::{ProcFs, ProcInode, fmt};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, OnceLock};
use um_kernel::kernel::Kernel;
use um_kernel::printk;
use um_kernel::task::lock;
use um_mm::commit::Commit;
use um_uapi::{Errno, SysResult};

/// The host's `/proc/cpuinfo`, read once.
fn host_cpuinfo() -> &'static str {
    static C: OnceLock<String> = OnceLock::new();
    C.get_or_init(|| std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default())
}

/// Number of CPUs the guest sees (`ncpus=`, default one per host CPU: `um_kernel::cpus`).
pub fn ncpus() -> u32 {
    um_kernel::cpus::online()
}

/// The host's `/proc/cpuinfo` blocks (one per CPU, separated by blank lines) made `n`: the
/// first `n`, or repeated (renumbered) when the guest has more CPUs than the host.
fn cpu_blocks(h: &str, n: u32) -> String {
    let blocks: Vec<&str> = h
        .split("\n\n")
        .filter(|b| b.lines().any(|l| l.starts_with("processor")))
        .collect();
    if blocks.is_empty() || blocks.len() == n as usize {
        return h.to_string();
    }
    let mut out = String::with_capacity(h.len());
    for i in 0..n as usize {
        for line in blocks[i % blocks.len()].lines() {
            match line.split_once(':') {
                Some((k, _)) if k.trim_end() == "processor" => {
                    out.push_str(&format!("{k}: {i}\n"));
                }
                _ => {
                    out.push_str(line);
                    out.push('\n');
                }
            }
        }
        out.push('\n');
    }
    out
}

/// `/proc/cpuinfo`: the host's, one block per host CPU, with the feature line (arm64
/// `Features`, x86_64 `flags`) made to follow the guest's masked `AT_HWCAP`/`AT_HWCAP2`
/// (`arch::native::hwcap`); a minimal one if the host's is unreadable.
fn cpuinfo(k: &Kernel) -> Vec<u8> {
    let h = host_cpuinfo();
    if !h.is_empty() {
        use um_kernel::arch::native::hwcap;
        let caps = hwcap::Hwcaps {
            hwcap: k.hwcap,
            hwcap2: k.hwcap2,
        };
        let h = cpu_blocks(h, ncpus());
        return rewrite_features(&h, hwcap::CPUINFO_KEY, |v| hwcap::cpuinfo_features(v, caps))
            .into_bytes();
    }
    let mut s = String::new();
    for i in 0..ncpus() {
        s.push_str(&format!(
            "processor\t: {i}\nvendor_id\t: unknown\nmodel name\t: um\nbogomips\t: 1000.00\n\n"
        ));
    }
    s.into_bytes()
}

/// `text` with the value of every `key<tabs>: value` line replaced by `f(value)`, in Linux's
/// format (`key\t: a b c`, the key's own padding kept; no space after the colon when empty).
fn rewrite_features(text: &str, key: &str, f: impl Fn(&str) -> String) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        match line.split_once(':') {
            Some((k, v)) if k.trim_end() == key => {
                let value = f(v.trim());
                out.push_str(k);
                out.push(':');
                if !value.is_empty() {
                    out.push(' ');
                    out.push_str(&value);
                }
                out.push('\n');
            }
            _ => out.push_str(line),
        }
    }
    out
}

/// The ten jiffy counters of each `cpu` line of the host's `/proc/stat`.
fn host_cpu_lines() -> Vec<[u64; 10]> {
    let s = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    s.lines()
        .filter(|l| l.starts_with("cpu"))
        .map(|l| {
            let mut v = [0u64; 10];
            for (i, f) in l.split_whitespace().skip(1).take(10).enumerate() {
                v[i] = f.parse().unwrap_or(0);
            }
            v
        })
        .collect()
}

/// The host counters when the first procfs was made: `/proc/stat` counts from there, as the
/// guest's "since boot".
fn cpu_baseline() -> &'static Vec<[u64; 10]> {
    static B: OnceLock<Vec<[u64; 10]>> = OnceLock::new();
    B.get_or_init(host_cpu_lines)
}

/// Realtime seconds now.
fn realtime_secs() -> i64 {
    super::now().0
}

/// The highest pid in use (Linux prints the last one allocated).
fn last_pid(k: &Kernel) -> u32 {
    k.tasks.all().iter().map(|t| t.tid).max().unwrap_or(0)
}

/// `/proc/stat` (fs/proc/stat.c `show_stat`).
fn stat(k: &Kernel) -> Vec<u8> {
    let now = host_cpu_lines();
    let base = cpu_baseline();
    let mut s = String::new();
    let n = ncpus() as usize;
    for i in 0..=n {
        let cur = now.get(i).copied().unwrap_or_default();
        let b = base.get(i).copied().unwrap_or_default();
        let v: Vec<String> = (0..10)
            .map(|j| cur[j].saturating_sub(b[j]).to_string())
            .collect();
        if i == 0 {
            s.push_str(&format!("cpu  {}\n", v.join(" ")));
        } else {
            s.push_str(&format!("cpu{} {}\n", i - 1, v.join(" ")));
        }
    }
    let tasks = k.tasks.all();
    let running = tasks
        .iter()
        .filter(|t| t.in_guest.load(Ordering::Relaxed))
        .count()
        .max(1);
    let btime = realtime_secs() - printk::uptime().as_secs() as i64;
    s.push_str("intr 0\nctxt 0\n");
    s.push_str(&format!(
        "btime {btime}\nprocesses {}\nprocs_running {running}\nprocs_blocked 0\n",
        last_pid(k)
    ));
    s.push_str("softirq 0 0 0 0 0 0 0 0 0 0 0\n");
    s.into_bytes()
}

/// `/proc/meminfo` from the frame allocator and the page cache.
fn meminfo(k: &Kernel) -> Vec<u8> {
    let page_kb = k.frames.granule().size() / 1024;
    let total = k.frames.total_frames() as u64 * page_kb;
    let free = k.frames.free_frames() as u64 * page_kb;
    let cached = (k.page_cache.cached_pages() as u64 * page_kb).min(total - free);
    let anon = (total - free).saturating_sub(cached);
    let hp = um_mm::hugetlb::pool();
    let h = hp.stats(hp.default_size()).unwrap_or_default();
    fmt::meminfo_text(&fmt::MemInfo {
        huge_pages: [h.nr, h.free, h.resv, h.surplus],
        hugepagesize: h.size / 1024,
        hugetlb: hp.total_bytes() / 1024,
        total,
        free,
        available: free + cached,
        cached,
        shmem: 0,
        anon,
        mapped: cached,
        page_kb,
        commit_limit: k.frames.commit().limit_pages() * page_kb,
        committed: k.frames.commit().committed_pages() * page_kb,
    })
    .into_bytes()
}

/// `/proc/uptime`: seconds since boot, and idle time summed over CPUs (approximated as all
/// the time no guest thread ran, i.e. uptime per CPU).
fn uptime() -> Vec<u8> {
    let up = printk::uptime().as_millis() as u64 / 10;
    // The reader's time namespace shifts the first figure (fs/proc/uptime.c:
    // timens_add_boottime). Guest uptime starts at this boot, so an offset Linux accepts (it
    // checks against the host's boot time) can take it below zero here: then it is shown as
    // seconds and hundredths of the normalised pair, which is what sysinfo's rounded-up figure
    // agrees with.
    let (s, ns) = um_kernel::timens::uptime();
    let idle = up * ncpus() as u64;
    match u64::try_from(s) {
        Ok(s) => fmt::uptime_line(s * 100 + ns as u64 / 10_000_000, idle).into_bytes(),
        Err(_) => format!(
            "{s}.{:02} {}.{:02}\n",
            ns / 10_000_000,
            idle / 100,
            idle % 100
        )
        .into_bytes(),
    }
}

/// `/proc/loadavg`. Load averages are not tracked: zeros.
fn loadavg(k: &Kernel) -> Vec<u8> {
    let tasks = k.tasks.all();
    let running = tasks
        .iter()
        .filter(|t| t.in_guest.load(Ordering::Relaxed))
        .count()
        .max(1);
    fmt::loadavg_line([0, 0, 0], running, tasks.len(), last_pid(k)).into_bytes()
}

/// `/proc/version` (fs/proc/version.c `linux_proc_banner`).
fn version(k: &Kernel) -> Vec<u8> {
    format!(
        "{} version {} (root@um) (rustc) {}\n",
        k.uts.sysname, k.uts.release, k.uts.version
    )
    .into_bytes()
}

/// `/proc/filesystems`: `nodev` marks the ones that need no device.
fn filesystems() -> Vec<u8> {
    let mut s = String::new();
    for (nodev, name) in [
        (true, "sysfs"),
        (true, "tmpfs"),
        (true, "bdev"),
        (true, "proc"),
        (true, "devtmpfs"),
        (true, "devpts"),
        (true, "pipefs"),
        (true, "sockfs"),
        (true, "ramfs"),
        (true, "hostfs"),
        (true, "hugetlbfs"),
    ] {
        s.push_str(if nodev { "nodev\t" } else { "\t" });
        s.push_str(name);
        s.push('\n');
    }
    // The types other crates registered (overlay, cgroup2, mqueue, devpts ...), those not
    // listed above: docker and podman look for `overlay` here.
    for name in crate::mount::fs_names() {
        if !s
            .lines()
            .any(|l| l.split('\t').nth(1) == Some(name.as_str()))
        {
            s.push_str("nodev\t");
            s.push_str(&name);
            s.push('\n');
        }
    }
    // The block-device file systems (ext4 ...): what `mount` without `-t` tries in turn.
    for name in crate::mount::bdev_fs_names() {
        s.push('\t');
        s.push_str(&name);
        s.push('\n');
    }
    s.into_bytes()
}

/// `/proc/cmdline`: the kernel command line, as `linux` was started (UML shows the same), up
/// to the `--` that starts init's own arguments.
fn cmdline() -> Vec<u8> {
    let args: Vec<String> = std::env::args().skip(1).take_while(|a| a != "--").collect();
    let mut s = args.join(" ");
    s.push('\n');
    s.into_bytes()
}

/// A random UUID as `/proc/sys/kernel/random/uuid` prints it (version 4).
fn uuid() -> String {
    let mut b = [0u8; 16];
    let _ = um_os_linux::host::getrandom(&mut b);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: Vec<String> = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}\n",
        h[0..4].concat(),
        h[4..6].concat(),
        h[6..8].concat(),
        h[8..10].concat(),
        h[10..16].concat()
    )
}

/// The boot id: one random UUID per boot.
fn boot_id() -> String {
    static B: OnceLock<String> = OnceLock::new();
    B.get_or_init(uuid).clone()
}

/// A sysctl that accepts writes of anything parseable as an integer and ignores them.
fn int_knob(fs: &Arc<ProcFs>, v: i64) -> Arc<ProcInode> {
    ProcInode::file_rw(
        fs,
        move |_, _| Ok(format!("{v}\n").into_bytes()),
        |_, _, data| {
            let s = std::str::from_utf8(data).map_err(|_| Errno::EINVAL)?;
            s.trim().parse::<i64>().map_err(|_| Errno::EINVAL)?;
            Ok(data.len())
        },
    )
}

/// A `vm.*` overcommit knob of the kernel's [`Commit`] (mm/util.c's sysctls): an unsigned
/// decimal; writes need root (the files are 0644, as Linux's), other text is `EINVAL`.
fn commit_knob(
    fs: &Arc<ProcFs>,
    get: fn(&Commit) -> u64,
    set: fn(&Commit, u64) -> SysResult<()>,
) -> Arc<ProcInode> {
    ProcInode::file_rw(
        fs,
        move |k, _| Ok(format!("{}\n", get(k.frames.commit())).into_bytes()),
        move |k, io, data| {
            if lock(&io.task.process.creds).euid != 0 {
                return Err(Errno::EPERM);
            }
            let s = std::str::from_utf8(data).map_err(|_| Errno::EINVAL)?;
            let v = s.trim().parse::<u64>().map_err(|_| Errno::EINVAL)?;
            set(k.frames.commit(), v)?;
            Ok(data.len())
        },
    )
}

/// Which counter of a huge page pool a file shows (`/proc/sys/vm/nr_hugepages`,
/// `/sys/kernel/mm/hugepages/hugepages-<N>kB/*`; mm/hugetlb.c `hstate_attrs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HugeKnob {
    /// `nr_hugepages` (and `nr_hugepages_mempolicy`): the persistent pages; writable.
    Nr,
    /// `nr_overcommit_hugepages`; writable.
    Overcommit,
    /// `free_hugepages`.
    Free,
    /// `resv_hugepages`.
    Resv,
    /// `surplus_hugepages`.
    Surplus,
}

/// A file of the huge page pool of `size` bytes (None: the default size, as the `vm.*`
/// sysctls are). Writes need root and an unsigned decimal; `nr_hugepages` grows the pool as
/// far as free memory allows (`__nr_hugepages_store_common`): the count read back says how
/// far it got.
pub(crate) fn huge_knob(fs: &Arc<ProcFs>, size: Option<u64>, knob: HugeKnob) -> Arc<ProcInode> {
    let render = move |_: &Arc<Kernel>, _: &um_kernel::wait::IoCtx<'_>| {
        let p = um_mm::hugetlb::pool();
        let h = p
            .stats(size.unwrap_or_else(|| p.default_size()))
            .unwrap_or_default();
        let v = match knob {
            HugeKnob::Nr => h.persistent(),
            HugeKnob::Overcommit => h.overcommit,
            HugeKnob::Free => h.free,
            HugeKnob::Resv => h.resv,
            HugeKnob::Surplus => h.surplus,
        };
        Ok(format!("{v}\n").into_bytes())
    };
    if !matches!(knob, HugeKnob::Nr | HugeKnob::Overcommit) {
        return ProcInode::file(fs, render);
    }
    ProcInode::file_rw(fs, render, move |k, io, data| {
        if lock(&io.task.process.creds).euid != 0 {
            return Err(Errno::EPERM);
        }
        let s = std::str::from_utf8(data).map_err(|_| Errno::EINVAL)?;
        let v = s.trim().parse::<u64>().map_err(|_| Errno::EINVAL)?;
        let p = um_mm::hugetlb::pool();
        let size = size.unwrap_or_else(|| p.default_size());
        if knob == HugeKnob::Nr {
            let avail = k.frames.free_frames() as u64 * k.frames.granule().size();
            p.set_nr(size, v, avail)?;
        } else {
            p.set_overcommit(size, v)?;
        }
        Ok(data.len())
    })
}

/// A kernel-object file.
fn kfile(fs: &Arc<ProcFs>, f: fn(&Kernel) -> Vec<u8>) -> Arc<ProcInode> {
    ProcInode::file(fs, move |k, _| Ok(f(k)))
}

/// A uts string file.
fn uts(fs: &Arc<ProcFs>, f: fn(&Kernel) -> &str) -> Arc<ProcInode> {
    ProcInode::file(fs, move |k, _| Ok(format!("{}\n", f(k)).into_bytes()))
}

/// A writable uts name (`hostname`, `domainname`; kernel/utsname_sysctl.c `proc_do_uts_string`
/// through `proc_dostring`): a write replaces the name with the text up to the first newline,
/// at most `__NEW_UTS_LEN` bytes; root only (the file is 0644, and CAP_SYS_ADMIN is checked
/// by sysctl's permission).
fn uts_rw(
    fs: &Arc<ProcFs>,
    f: for<'a> fn(&'a um_kernel::utsns::UtsNs, &'a Kernel) -> &'a Mutex<String>,
) -> Arc<ProcInode> {
    // The names of the caller's UTS namespace (kernel/utsname_sysctl.c `get_uts`).
    ProcInode::file_rw(
        fs,
        move |k, _| {
            let ns = um_kernel::utsns::current();
            Ok(format!("{}\n", lock(f(&ns, k))).into_bytes())
        },
        move |k, io, data| {
            if lock(&io.task.process.creds).euid != 0 {
                return Err(Errno::EPERM);
            }
            let line = data.split(|&b| b == b'\n').next().unwrap_or(&[]);
            let line = &line[..line.len().min(um_kernel::kernel::NEW_UTS_LEN)];
            let ns = um_kernel::utsns::of(&io.task.process);
            *lock(f(&ns, k)) = String::from_utf8_lossy(line).into_owned();
            Ok(data.len())
        },
    )
}

/// `/proc/sys`.
fn sys_tree(fs: &Arc<ProcFs>) -> Arc<ProcInode> {
    let random = ProcInode::dir(
        fs,
        vec![
            (
                "boot_id",
                ProcInode::file(fs, |_, _| Ok(boot_id().into_bytes())),
            ),
            ("entropy_avail", ProcInode::text(fs, "256\n")),
            ("poolsize", ProcInode::text(fs, "256\n")),
            ("uuid", ProcInode::file(fs, |_, _| Ok(uuid().into_bytes()))),
        ],
    );
    let kernel = ProcInode::dir(
        fs,
        vec![
            ("cap_last_cap", ProcInode::text(fs, "40\n")),
            (
                "core_pattern",
                ProcInode::file_rw(
                    fs,
                    |_, _| Ok(format!("{}\n", crate::coredump::core_pattern()).into_bytes()),
                    |_, io, data| {
                        if lock(&io.task.process.creds).euid != 0 {
                            return Err(Errno::EPERM);
                        }
                        crate::coredump::set_core_pattern(data)?;
                        Ok(data.len())
                    },
                ),
            ),
            ("domainname", uts_rw(fs, |ns, k| ns.domainname(k))),
            ("hostname", uts_rw(fs, |ns, k| ns.nodename(k))),
            ("ngroups_max", ProcInode::text(fs, "65536\n")),
            // The caller's pid namespace's last pid (procfs/pid.rs, um_kernel::pidns).
            ("ns_last_pid", super::pid::ns_last_pid(fs)),
            ("osrelease", uts(fs, |k| &k.uts.release)),
            ("ostype", uts(fs, |k| &k.uts.sysname)),
            // kernel/sysctl.c: 0..65535, what unmapped ids show as (um_kernel::userns).
            (
                "overflowgid",
                id_knob(fs, &um_kernel::userns::OVERFLOW_GID, 65535),
            ),
            (
                "overflowuid",
                id_knob(fs, &um_kernel::userns::OVERFLOW_UID, 65535),
            ),
            ("panic", int_knob(fs, 0)),
            ("pid_max", ProcInode::text(fs, "4194304\n")),
            ("printk", ProcInode::text(fs, "7\t4\t1\t7\n")),
            ("random", random),
            (
                // kernel/seccomp.c: the actions a guest filter may return, and the ones that
                // are logged (fixed here: every one but ALLOW; user notification is not
                // offered, um_kernel::seccomp).
                "seccomp",
                ProcInode::dir(
                    fs,
                    vec![
                        (
                            "actions_avail",
                            ProcInode::text(
                                fs,
                                "kill_process kill_thread trap errno trace log allow\n",
                            ),
                        ),
                        (
                            "actions_logged",
                            ProcInode::text(fs, "kill_process kill_thread trap errno trace log\n"),
                        ),
                    ],
                ),
            ),
            ("tainted", int_knob(fs, 0)),
            (
                "threads-max",
                ProcInode::file(fs, |k, _| {
                    // kernel/fork.c set_max_threads: totalram pages / (8 * THREAD_SIZE / PAGE_SIZE).
                    let pages = k.frames.total_frames() as u64;
                    Ok(format!("{}\n", (pages / 32).max(20)).into_bytes())
                }),
            ),
            ("version", uts(fs, |k| &k.uts.version)),
        ]
        .into_iter()
        // Registered by other subsystems (procfs/registry.rs): the IPC limits of um-ipc.
        .chain(super::registry::entries(fs, "sys/kernel"))
        .collect(),
    );
    let vm = ProcInode::dir(
        fs,
        vec![
            (
                "admin_reserve_kbytes",
                commit_knob(fs, Commit::admin_reserve_kb, |c, v| {
                    c.set_admin_reserve_kb(v);
                    Ok(())
                }),
            ),
            (
                "overcommit_kbytes",
                commit_knob(fs, Commit::kbytes, |c, v| {
                    c.set_kbytes(v);
                    Ok(())
                }),
            ),
            (
                "overcommit_memory",
                commit_knob(
                    fs,
                    |c| u64::from(c.mode()),
                    |c, v| c.set_mode(u32::try_from(v).map_err(|_| Errno::EINVAL)?),
                ),
            ),
            (
                "overcommit_ratio",
                commit_knob(fs, Commit::ratio, |c, v| {
                    c.set_ratio(v);
                    Ok(())
                }),
            ),
            // mm/compaction.c: writing compacts all memory; nothing to do here.
            ("compact_memory", int_knob(fs, 0)),
            // fs/drop_caches.c: 1 page cache, 2 slab, 3 both (4 quiets the message). The
            // page cache here holds only what mappings use or files keep, so nothing drops.
            ("drop_caches", int_knob(fs, 0)),
            (
                "hugetlb_shm_group",
                ProcInode::file_rw(
                    fs,
                    |_, _| Ok(format!("{}\n", crate::hugetlbfs::shm_group()).into_bytes()),
                    |_, io, data| {
                        if lock(&io.task.process.creds).euid != 0 {
                            return Err(Errno::EPERM);
                        }
                        let s = std::str::from_utf8(data).map_err(|_| Errno::EINVAL)?;
                        let v = s.trim().parse::<u32>().map_err(|_| Errno::EINVAL)?;
                        crate::hugetlbfs::set_shm_group(v);
                        Ok(data.len())
                    },
                ),
            ),
            ("nr_hugepages", huge_knob(fs, None, HugeKnob::Nr)),
            ("nr_hugepages_mempolicy", huge_knob(fs, None, HugeKnob::Nr)),
            (
                "nr_overcommit_hugepages",
                huge_knob(fs, None, HugeKnob::Overcommit),
            ),
            ("swappiness", int_knob(fs, 60)),
            (
                "user_reserve_kbytes",
                commit_knob(fs, Commit::user_reserve_kb, |c, v| {
                    c.set_user_reserve_kb(v);
                    Ok(())
                }),
            ),
        ],
    );
    let mut fs_entries = vec![
        (
            "aio-max-nr",
            ProcInode::file(fs, |_, _| {
                Ok(format!("{}\n", crate::aio::max_nr()).into_bytes())
            }),
        ),
        (
            "aio-nr",
            ProcInode::file(
                fs,
                |_, _| Ok(format!("{}\n", crate::aio::nr()).into_bytes()),
            ),
        ),
        (
            "file-max",
            ProcInode::file(fs, |k, _| {
                // fs/file_table.c files_maxfiles_init: 10% of memory at 1 KiB per file.
                let kb = k.frames.total_frames() as u64 * k.frames.granule().size() / 1024;
                Ok(format!("{}\n", (kb / 10).max(8192)).into_bytes())
            }),
        ),
        ("inotify", crate::inotify::proc_sys_dir(fs)),
        ("lease-break-time", crate::locks::proc_lease_break_time(fs)),
        ("nr_open", ProcInode::text(fs, "1048576\n")),
        // fs/pipe.c limits: pipe-max-size is what the pipe code enforces for non-root.
        (
            "pipe-max-size",
            ProcInode::file_rw(
                fs,
                |_, _| Ok(format!("{}\n", crate::pipe::pipe_max_size()).into_bytes()),
                |_, io, data| {
                    if lock(&io.task.process.creds).euid != 0 {
                        return Err(Errno::EPERM);
                    }
                    let s = std::str::from_utf8(data).map_err(|_| Errno::EINVAL)?;
                    let v = s.trim().parse::<u64>().map_err(|_| Errno::EINVAL)?;
                    crate::pipe::set_pipe_max_size(v)?;
                    Ok(data.len())
                },
            ),
        ),
        ("pipe-user-pages-hard", int_knob(fs, 0)),
        ("pipe-user-pages-soft", int_knob(fs, 16384)),
    ];
    // Registered by other subsystems: `mqueue` of um-ipc.
    super::registry::insert_in_order(fs, "sys/fs", &mut fs_entries);
    let fsdir = ProcInode::dir(fs, fs_entries);
    // kernel/ucount.c user_table: the namespace limits (um_kernel::userns::limits).
    let user = ProcInode::dir(
        fs,
        um_kernel::userns::limits::LIMITS
            .iter()
            .map(|(name, v)| (*name, limit_knob(fs, v)))
            .collect(),
    );
    let mut v = vec![
        ("fs", fsdir),
        ("kernel", kernel),
        ("user", user),
        ("vm", vm),
    ];
    // Registered by other subsystems (procfs/registry.rs): `net` of um-net.
    super::registry::insert_in_order(fs, "sys", &mut v);
    ProcInode::dir(fs, v)
}

/// An id sysctl kept in `v`, written by root only (`EPERM`), `0..=max` (`EINVAL`,
/// `proc_dointvec_minmax`).
fn id_knob(fs: &Arc<ProcFs>, v: &'static std::sync::atomic::AtomicU32, max: u32) -> Arc<ProcInode> {
    use std::sync::atomic::Ordering::Relaxed;
    ProcInode::file_rw(
        fs,
        move |_, _| Ok(format!("{}\n", v.load(Relaxed)).into_bytes()),
        move |_, io, data| {
            if lock(&io.task.process.creds).euid != 0 {
                return Err(Errno::EPERM);
            }
            let s = std::str::from_utf8(data).map_err(|_| Errno::EINVAL)?;
            let n = s.trim().parse::<u32>().map_err(|_| Errno::EINVAL)?;
            if n > max {
                return Err(Errno::EINVAL);
            }
            v.store(n, Relaxed);
            Ok(data.len())
        },
    )
}

/// A `/proc/sys/user` limit: `0..=INT_MAX` (`EINVAL`), written by root of the initial user
/// namespace only (`EPERM`).
fn limit_knob(fs: &Arc<ProcFs>, v: &'static std::sync::atomic::AtomicU64) -> Arc<ProcInode> {
    use std::sync::atomic::Ordering::Relaxed;
    ProcInode::file_rw(
        fs,
        move |_, _| Ok(format!("{}\n", v.load(Relaxed)).into_bytes()),
        move |_, io, data| {
            if lock(&io.task.process.creds).euid != 0
                || !um_kernel::userns::of(&io.task.process).is_root()
            {
                return Err(Errno::EPERM);
            }
            let s = std::str::from_utf8(data).map_err(|_| Errno::EINVAL)?;
            let n = s.trim().parse::<u64>().map_err(|_| Errno::EINVAL)?;
            if n > i32::MAX as u64 {
                return Err(Errno::EINVAL);
            }
            v.store(n, Relaxed);
            Ok(data.len())
        },
    )
}

/// The fixed entries of the procfs root.
pub fn entries(fs: &Arc<ProcFs>) -> Vec<(Vec<u8>, Arc<ProcInode>)> {
    let _ = cpu_baseline();
    let mut v: Vec<(&str, Arc<ProcInode>)> = vec![
        ("cmdline", ProcInode::file(fs, |_, _| Ok(cmdline()))),
        (
            "config.gz",
            ProcInode::file(fs, |_, _| Ok(super::config::config_gz())),
        ),
        ("cpuinfo", kfile(fs, cpuinfo)),
        ("filesystems", ProcInode::file(fs, |_, _| Ok(filesystems()))),
        ("loadavg", kfile(fs, loadavg)),
        ("meminfo", kfile(fs, meminfo)),
        ("mounts", ProcInode::link(fs, "self/mounts")),
        ("stat", kfile(fs, stat)),
        (
            "swaps",
            ProcInode::text(fs, "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"),
        ),
        ("sys", sys_tree(fs)),
        ("uptime", ProcInode::file(fs, |_, _| Ok(uptime()))),
        ("version", kfile(fs, version)),
    ];
    // Entries other subsystems registered (procfs/registry.rs: `/proc/sysvipc` of um-ipc).
    super::registry::insert_in_order(fs, "", &mut v);
    v.into_iter()
        .map(|(n, i)| (n.as_bytes().to_vec(), i))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_shape() {
        let u = uuid();
        assert_eq!(u.len(), 37);
        let parts: Vec<&str> = u.trim_end().split('-').collect();
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            [8, 4, 4, 4, 12]
        );
        assert!(parts[2].starts_with('4'));
        assert_eq!(boot_id(), boot_id());
    }

    #[test]
    fn filesystems_marks_nodev() {
        let f = String::from_utf8(filesystems()).unwrap();
        assert!(f.contains("nodev\tproc\n"));
        assert!(f.contains("nodev\ttmpfs\n"));
        assert!(f.lines().all(|l| l.contains('\t')));
    }

    #[test]
    fn cpus() {
        assert!(ncpus() >= 1);
        let h = "processor\t: 0\nflags\t\t: a\n\nprocessor\t: 1\nflags\t\t: b\n\n";
        let one = cpu_blocks(h, 1);
        assert_eq!(one.matches("processor").count(), 1);
        let three = cpu_blocks(h, 3);
        assert!(three.contains("processor\t: 2\nflags\t\t: a\n"), "{three}");
        assert_eq!(cpu_blocks(h, 2), h);
    }

    #[test]
    fn feature_line_rewritten() {
        let arm = "processor\t: 0\nBogoMIPS\t: 125.00\nFeatures\t: fp asimd sve paca\n\
                   CPU implementer\t: 0x41\n\nprocessor\t: 1\nFeatures\t: fp asimd sve paca\n";
        let out = rewrite_features(arm, "Features", |v| {
            v.split(' ')
                .filter(|f| *f != "sve" && *f != "paca")
                .collect::<Vec<_>>()
                .join(" ")
        });
        assert_eq!(
            out,
            "processor\t: 0\nBogoMIPS\t: 125.00\nFeatures\t: fp asimd\n\
             CPU implementer\t: 0x41\n\nprocessor\t: 1\nFeatures\t: fp asimd\n"
        );
        // Empty value: the key and the colon only (Linux's `seq_puts(m, "Features\t:")` and
        // nothing after it); the other lines are kept byte for byte.
        let x86 = "flags\t\t: fpu fsgsbase\nbugs\t\t: spectre_v1\nfpu\t\t: yes";
        let out = rewrite_features(x86, "flags", |_| String::new());
        assert_eq!(out, "flags\t\t:\nbugs\t\t: spectre_v1\nfpu\t\t: yes");
    }

    #[test]
    fn native_cpuinfo_follows_the_mask() {
        use um_kernel::arch::native::hwcap;
        let h = host_cpuinfo();
        if h.is_empty() {
            return;
        }
        let (h1, h2) = um_os_linux::probe::hwcaps();
        let caps = hwcap::guest_hwcaps(hwcap::Hwcaps {
            hwcap: h1,
            hwcap2: h2,
        });
        let out = rewrite_features(h, hwcap::CPUINFO_KEY, |v| hwcap::cpuinfo_features(v, caps));
        assert!(out.contains("processor\t: 0"));
        assert_eq!(out.lines().count(), h.lines().count());
        for l in out.lines().filter(|l| l.starts_with(hwcap::CPUINFO_KEY)) {
            // Masked on both arches: x86_64 fsgsbase; arm64 SVE and PAC.
            let words: Vec<&str> = l.split_whitespace().collect();
            for masked in ["fsgsbase", "sve", "paca", "pacg", "mte"] {
                assert!(!words.contains(&masked), "{l}");
            }
        }
    }
}
