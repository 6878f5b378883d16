//! Boot: from a parsed command line to a running init.

use crate::cmdline::{Cmdline, ConChannel, SeccompMode};
use native::host::ProbeMode;
use std::sync::{Arc, Mutex, OnceLock};
use um_drivers::console::Channel;
use um_fs::hostfs::HostInode;
use um_kernel::arch::{self, native};
use um_kernel::engine::ptrace::Intercept;
use um_kernel::kernel::{EngineKind, Kernel, StubEnv, Uts};
use um_kernel::printk;
use um_kernel::run;
use um_kernel::task::{FsContext, Process, Task};
use um_kernel::vfs::{Dentry, FdTable, OpenFile};
use um_mm::{FrameAllocator, Granule, Layout, Mm, PageCache};
use um_os_linux::physmem::PhysMem;
use um_os_linux::{probe, stub};

/// The release `uname -r` reports.
const RELEASE: &str = "6.1.0-um";
/// The release `uname -r` reports (`linux --version` says it).
pub const UTS_RELEASE: &str = RELEASE;

/// Checks what can be checked before anything is printed: bad input is one line, exit 2.
pub fn validate(c: &Cmdline) -> Result<(), String> {
    if let Some(dev) = &c.root_dev {
        if c.rootfstype.as_deref() == Some("hostfs") {
            return Err(format!(
                "root=/dev/{dev} rootfstype=hostfs: hostfs has no device; use rootflags=DIR"
            ));
        }
    } else {
        if c.rootfstype.as_deref().is_some_and(|t| t != "hostfs") {
            return Err(format!(
                "rootfstype={}: needs root=/dev/NAME (a block device)",
                c.rootfstype.as_deref().unwrap_or_default()
            ));
        }
        let root = c
            .rootflags
            .as_ref()
            .ok_or("no root file system: give rootfstype=hostfs rootflags=DIR")?;
        let md =
            std::fs::metadata(root).map_err(|e| format!("rootflags={}: {e}", root.display()))?;
        if !md.is_dir() {
            return Err(format!("rootflags={}: not a directory", root.display()));
        }
    }
    if c.mem < 16 << 20 {
        return Err(format!("mem={}: at least 16M is needed", c.mem));
    }
    let host = probe::host_memory();
    if c.mem > host {
        return Err(format!(
            "mem={} bytes cannot be backed: the host has {} bytes of memory and swap",
            c.mem, host
        ));
    }
    guest_granule(c.pagesize, probe::page_size() as u64)?;
    if let Some(p) = &c.log {
        // Opened here, so an unwritable path is the one error line before anything boots.
        let f = std::fs::File::create(p).map_err(|e| format!("log={}: {e}", p.display()))?;
        printk::set_log_file(f);
    }
    // The ubd disks' host files are opened (and locked) here, so a missing file, a bad COW
    // header or an image another kernel holds is one line before the boot starts.
    um_drivers::block::ubd::configure(&c.ubd, c.ubd_sync)?;
    um_drivers::net::check(&c.eth0)?;
    Ok(())
}

/// `4K`, `16K`, or plain bytes.
fn size_name(n: u64) -> String {
    if n >= 1024 && n % 1024 == 0 {
        format!("{}K", n >> 10)
    } else {
        n.to_string()
    }
}

/// The guest page size for `pagesize=` (`requested`) on a host with `host_page`-byte pages,
/// given the sizes the arch supports: the requested one if the arch has it and it is at least
/// the host's (a guest page is one host mapping of a physical-memory frame), else the smallest
/// supported size that is at least the host's.
fn choose_granule(
    requested: Option<u64>,
    host_page: u64,
    supported: &[u64],
    refusal: &str,
) -> Result<Granule, String> {
    let size = match requested {
        Some(n) => {
            if !supported.contains(&n) {
                return Err(format!("pagesize={}: {refusal}", size_name(n)));
            }
            if n < host_page {
                return Err(format!(
                    "pagesize={}: smaller than the host's page size ({}); a guest page must be at \
                     least one host page",
                    size_name(n),
                    size_name(host_page)
                ));
            }
            n
        }
        None => supported
            .iter()
            .copied()
            .filter(|&n| n >= host_page)
            .min()
            .ok_or_else(|| {
                format!(
                    "the host's page size ({}) is larger than any guest page size this \
                     architecture offers ({})",
                    size_name(host_page),
                    supported
                        .iter()
                        .map(|&n| size_name(n))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })?,
    };
    Granule::new(size).ok_or_else(|| format!("pagesize={}: not a page size", size_name(size)))
}

/// [`choose_granule`] for the native arch.
fn guest_granule(requested: Option<u64>, host_page: u64) -> Result<Granule, String> {
    choose_granule(
        requested,
        host_page,
        native::abi::PAGE_SIZES,
        native::abi::PAGE_SIZE_REFUSAL,
    )
}

/// The hostname when `hostname=` is not given: the first word of the root's `/etc/hostname`
/// (what Alpine's and Debian's init scripts would set), else the root directory's name, else
/// Linux's `(none)`. `/etc/hostname` is read only when neither it nor `/etc` is a symbolic
/// link, so the name never comes from outside the guest's root.
pub fn default_hostname(root: Option<&std::path::Path>) -> String {
    let Some(root) = root else {
        return "(none)".into();
    };
    let plain = |p: &std::path::Path, dir: bool| {
        std::fs::symlink_metadata(p).is_ok_and(|m| if dir { m.is_dir() } else { m.is_file() })
    };
    let etc = root.join("etc");
    let file = etc.join("hostname");
    if plain(&etc, true) && plain(&file, false) {
        let text = std::fs::read(&file).unwrap_or_default();
        let text = String::from_utf8_lossy(&text[..text.len().min(256)]).into_owned();
        if let Some(w) = text.split_whitespace().next() {
            return crate::cmdline::truncate_nodename(w);
        }
    }
    let name = root
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let name: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    if name.trim_matches('-').is_empty() {
        return "(none)".into();
    }
    crate::cmdline::truncate_nodename(&name)
}

/// Boots and runs until init exits; returns the host exit status.
pub fn boot(c: Cmdline) -> Result<i32, String> {
    printk::init(c.loglevel);
    log::info!(
        "Linux version {RELEASE} (um-rs {}) #1 SMP",
        env!("CARGO_PKG_VERSION")
    );
    log::info!("Kernel command line: {}", c.words.join(" "));
    // Before anything asks how many CPUs there are.
    if let Some(n) = c.ncpus {
        um_kernel::cpus::set_online(n);
    }
    log::info!(
        "smp: {} CPUs (host: {})",
        um_kernel::cpus::online(),
        um_kernel::cpus::host()
    );
    let host_page = probe::page_size();
    log::info!("host: page size {host_page} bytes");
    let va_bits = probe::user_va_bits();
    log::info!("host: {va_bits}-bit user address space");
    log::info!("host: kernel {}", probe::host_release());
    let seccomp_ok = probe::seccomp_trap_available().unwrap_or(false);
    log::info!(
        "host: seccomp filters with SECCOMP_RET_TRAP {}",
        if seccomp_ok {
            "available"
        } else {
            "unavailable"
        }
    );
    let works = |ok: bool| if ok { "works" } else { "unavailable" };
    let sysemu = native::host::probe_intercept(ProbeMode::Sysemu).unwrap_or(false);
    log::info!("host: PTRACE_SYSEMU {}", works(sysemu));
    let cancel = native::host::probe_intercept(ProbeMode::Cancel).unwrap_or(false);
    log::info!(
        "host: PTRACE_SYSCALL with cancellation (-1) {}",
        works(cancel)
    );
    let substitute = native::host::probe_intercept(ProbeMode::Substitute).unwrap_or(false);
    log::info!(
        "host: PTRACE_SYSCALL with substitution (getppid) {}",
        works(substitute)
    );

    let seccomp_usable = seccomp_ok && native::host::SECCOMP_STUB;
    let use_seccomp = match c.seccomp {
        SeccompMode::On if c.nosysemu => {
            return Err(String::from(
                "seccomp=on with nosysemu/nocancel: those are ptrace engine options",
            ));
        }
        SeccompMode::On if !native::host::SECCOMP_STUB => {
            return Err(String::from(
                "seccomp=on: the seccomp engine is not built for this architecture yet; use seccomp=off",
            ));
        }
        SeccompMode::On if !seccomp_ok => {
            return Err(String::from(
                "seccomp=on: this host cannot install seccomp filters with SECCOMP_RET_TRAP",
            ));
        }
        SeccompMode::On => true,
        SeccompMode::Auto if c.nosysemu => false,
        SeccompMode::Auto => {
            if !seccomp_usable {
                log::info!(
                    "engine: seccomp unusable here ({}); falling back to ptrace",
                    if seccomp_ok {
                        "no seccomp stub for this architecture yet"
                    } else {
                        "no SECCOMP_RET_TRAP filters"
                    }
                );
            }
            seccomp_usable
        }
        SeccompMode::Off => false,
    };
    let intercept = if c.nocancel {
        if !substitute {
            return Err(String::from(
                "nocancel: this host cannot substitute syscalls under ptrace",
            ));
        }
        Intercept::Substitute
    } else if c.nosysemu {
        if !cancel {
            return Err(String::from(
                "nosysemu: this host cannot cancel syscalls under ptrace; try nocancel",
            ));
        }
        Intercept::Cancel
    } else if sysemu {
        Intercept::Sysemu
    } else if cancel {
        Intercept::Cancel
    } else if substitute {
        Intercept::Substitute
    } else {
        return Err(String::from(
            "this host can neither emulate, cancel nor substitute syscalls under ptrace",
        ));
    };
    let engine = if use_seccomp {
        let per_us = native::host::spin_ticks_per_us();
        let tuning = um_kernel::engine::seccomp::Tuning {
            spin: std::time::Duration::from_micros(c.seccomp_spin_us),
            spin_ticks: c.seccomp_spin_us * per_us,
        };
        log::info!(
            "engine: seccomp (stub filter + futex handoff, spin {} us = {} ticks)",
            c.seccomp_spin_us,
            tuning.spin_ticks
        );
        EngineKind::Seccomp(tuning)
    } else {
        EngineKind::Ptrace(intercept)
    };
    if !use_seccomp {
        log::info!(
            "engine: ptrace ({})",
            match intercept {
                Intercept::Sysemu => "PTRACE_SYSEMU",
                Intercept::Cancel => "PTRACE_SYSCALL, cancelling with -1",
                Intercept::Substitute => "PTRACE_SYSCALL, substituting getppid",
            }
        );
    }

    let granule = guest_granule(c.pagesize, host_page as u64)?;
    Granule::set_system(granule);
    log::info!(
        "guest: page size {} ({})",
        size_name(granule.size()),
        if c.pagesize.is_some() {
            "pagesize="
        } else {
            "default"
        }
    );
    let (host_hwcap, host_hwcap2) = probe::hwcaps();
    let hwcaps = native::hwcap::guest_hwcaps(native::hwcap::Hwcaps {
        hwcap: host_hwcap,
        hwcap2: host_hwcap2,
    });
    log::info!(
        "guest: AT_HWCAP {:#x}, AT_HWCAP2 {:#x} (host {host_hwcap:#x}, {host_hwcap2:#x}, masked)",
        hwcaps.hwcap,
        hwcaps.hwcap2
    );
    let phys = Arc::new(
        PhysMem::new(c.mem as usize)
            .map_err(|e| format!("mem={}: cannot be backed: {e}", c.mem))?,
    );
    log::info!("Memory: {}K available", c.mem >> 10);
    let frames = Arc::new(FrameAllocator::new(
        Arc::new(um_kernel::kernel::HostPhys(phys.clone())),
        granule,
    ));
    // Host mappings are made after the PTE changes (by the seccomp stub's mapper thread, while
    // other threads may run guest code): a frame a PTE drops waits until they are gone.
    frames.set_deferred_free(true);
    let page_cache = Arc::new(PageCache::new(frames.clone()));

    let base = native::stub::stub_base(va_bits);
    let code = native::host::stub_code();
    let elf = stub::build_stub_elf(arch::ELF_MACHINE, code.code, base, code.entry);
    let image = stub::StubImage::new(&elf, c.stub_exe.as_deref())
        .map_err(|e| format!("cannot create the stub executable: {e}"))?;
    let host_vdso = match probe_host_vdso(&image, &phys, base, va_bits) {
        Ok(h) => Some(h),
        Err(why) => {
            log::info!("vdso: time functions make syscalls ({why})");
            None
        }
    };
    let forwarded = um_kernel::arch::vdso::init(host_vdso.as_ref().map(|(h, _)| h));
    if let Some((h, _)) = &host_vdso {
        log::info!(
            "vdso: {} call the host's vDSO (at {:#x} in every stub)",
            forwarded.join(", "),
            h.addr
        );
    }
    let task_size = base;
    let stack_top = task_size - (1 << 20);
    let stack_limit = 8 << 20;
    let layout = Layout {
        task_size,
        stack_top,
        stack_limit,
        mmap_base: granule.align_down(stack_top - stack_limit - (128 << 20)),
        min_addr: 0x10000,
    };
    log::info!("guest: TASK_SIZE {task_size:#x}, stub at {base:#x}");

    let table = crate::syscalls::table();
    log::info!("syscalls: {} implemented", table.len());
    let hostname = match &c.hostname {
        Some(h) => h.clone(),
        None if c.root_dev.is_some() => "(none)".into(),
        None => default_hostname(c.rootflags.as_deref()),
    };
    log::info!("hostname: {hostname}");

    let kernel = Arc::new(Kernel {
        phys,
        frames,
        page_cache,
        layout,
        stub: StubEnv {
            image,
            base,
            va_bits,
            keep: host_vdso.as_ref().map(|(_, keep)| *keep),
        },
        tasks: Default::default(),
        syscalls: table,
        uts: Uts {
            sysname: "Linux".into(),
            nodename: std::sync::Mutex::new(hostname.clone()),
            release: RELEASE.into(),
            version: "#1 SMP".into(),
            machine: native::abi::UTS_MACHINE.into(),
            domainname: std::sync::Mutex::new("(none)".into()),
        },
        engine,
        hwcap: hwcaps.hwcap,
        hwcap2: hwcaps.hwcap2,
        prefault_pages: c
            .prefault
            .map_or(crate::cmdline::DEFAULT_PREFAULT_PAGES, |b| {
                b / granule.size()
            }) as usize,
        exec_template: OnceLock::new(),
        shutdown_hooks: Default::default(),
        thread_exit_hooks: Default::default(),
        process_exit_hooks: Default::default(),
        fork_hooks: Default::default(),
    });
    um_kernel::shootdown::install(&kernel);
    // A process's locks go with it: its POSIX record locks, and the OFD/flock locks of the
    // descriptions it held the last descriptor of (the hook runs before its table is emptied).
    um_kernel::task::lock(&kernel.process_exit_hooks).push(Box::new(|p| {
        let table = p.files();
        let files = um_kernel::task::lock(&table);
        for (_, e) in files.iter() {
            um_fs::locks::on_close(&e.file, p.pid, Arc::strong_count(&e.file) == 1);
        }
        drop(files);
        um_fs::locks::release_process(p.pid);
    }));
    // SysV IPC: its exit hook (SEM_UNDO, shm detach times) and /proc/sysvipc.
    um_ipc::init(&kernel);
    // Networking: /proc/sys/net.
    um_net::init();
    // cgroup v2: the cgroup2 file system type and the fork/exit hooks of membership.
    um_cgroup::init(&kernel);
    // BPF device programs of cgroups: the device check of opens and mknod.
    um_bpf::init();
    // Loadable modules: /proc/modules, /sys/module, modules_disabled.
    um_modules::init();

    // File systems that live outside um-fs register with the mount table.
    um_fs::mount::register_fs(
        "devpts",
        Arc::new(|_flags, _data| Ok(um_drivers::devpts_root())),
    );
    um_ext4::register();
    // A journaled ext4 still mounted when the kernel ends commits and closes its journal.
    um_kernel::task::lock(&kernel.shutdown_hooks).push(Box::new(um_ext4::shutdown));
    // overlayfs: the `overlay` type and /sys/module/overlay/parameters.
    um_overlayfs::init();
    // The block layer's procfs/sysfs entries register before anything can mount them, and
    // the disks come before the root (which may be on one of them).
    um_drivers::block::register();
    um_drivers::block::ubd::add_all();
    let root = if let Some(dev) = &c.root_dev {
        // init/do_mounts.c mount_root: the device by name, the type from rootfstype=,
        // rootflags= as the mount's data.
        let fstype = c.rootfstype.as_deref().unwrap_or("ext4");
        let rdev = um_kernel::vfs::bdev_by_name(dev).ok_or_else(|| {
            format!("VFS: Cannot open root device \"{dev}\": no such block device (give ubd0=FILE)")
        })?;
        let ro = c.readonly || !c.rw_given;
        let data = c
            .rootflags
            .as_ref()
            .map(|p| p.as_os_str().as_encoded_bytes().to_vec())
            .unwrap_or_default();
        let flags = if ro { um_fs::mount::MS_RDONLY } else { 0 };
        let inode = um_fs::mount::mount_bdev(fstype, rdev, flags, &data)
            .map_err(|e| format!("VFS: Cannot mount root device \"{dev}\" as {fstype}: {e}"))?;
        let (ma, mi) = um_kernel::vfs::decode_dev(rdev);
        log::info!(
            "VFS: Mounted root ({fstype} filesystem) {} on device {ma}:{mi}.",
            if ro { "readonly" } else { "read-write" }
        );
        let root = Dentry::root(inode);
        um_fs::mount::boot_mounts_as(&kernel, &root, &format!("/dev/{dev}"), fstype, ro);
        root
    } else {
        let root_path = c.rootflags.clone().ok_or("no root")?;
        let root_inode = HostInode::new_root(&root_path, c.readonly, kernel.page_cache.clone())
            .map_err(|e| format!("rootflags={}: {e}", root_path.display()))?;
        let root = Dentry::root(root_inode);
        log::info!(
            "VFS: Mounted root (hostfs filesystem) {} on device 0:0.",
            if c.readonly { "readonly" } else { "read-write" }
        );
        um_fs::mount::boot_mounts(&kernel, &root);
        root
    };
    for b in &c.binds {
        let inode = HostInode::new_root(&b.host, b.readonly, kernel.page_cache.clone())
            .map_err(|e| format!("bind={}: {e}", b.host.display()))?;
        let host = b.host.display().to_string();
        um_fs::mount::boot_bind(&root, b.guest.as_bytes(), inode, &host, b.readonly).map_err(
            |e| {
                format!(
                    "bind=...:{}: {e} (it must be a directory of the root)",
                    b.guest
                )
            },
        )?;
        log::info!("hostfs: {host} mounted on {}", b.guest);
    }
    // Loop devices: /dev/loop0-7 and /dev/loop-control.
    um_drivers::block::loop_dev::register();
    // The virtual NIC (eth0=) and ip=, before init runs (Linux's ipconfig is a late initcall).
    um_drivers::net::init(&kernel, &c.eth0, &c.ip)?;

    let chan = |ch: ConChannel| match ch {
        ConChannel::Null => Channel::Null,
        ConChannel::Fd(fd) => Channel::Fd(fd),
    };
    let console = OpenFile::new(
        um_drivers::init(&kernel, chan(c.con_in), chan(c.con_out)),
        2,
        None,
    );
    let mut files = FdTable::default();
    for fd in 0..3 {
        files
            .install_at(fd, console.clone(), false)
            .map_err(|e| format!("console: {e}"))?;
    }

    let pid = kernel.tasks.alloc_pid();
    let mm = Mm::new(kernel.frames.clone(), kernel.page_cache.clone(), layout).into_shared();
    let fs = FsContext {
        root: root.clone(),
        cwd: root,
        umask: 0o022,
    };
    let process = Arc::new(Process::new(pid, None, mm, Arc::new(Mutex::new(files)), fs));
    let task = Task::new(pid, process, 0);
    kernel.tasks.insert(task.clone());

    let mut argv = vec![c.init.clone().into_bytes()];
    argv.extend(c.init_args.iter().map(|a| a.clone().into_bytes()));
    let envp = vec![b"HOME=/".to_vec(), b"TERM=linux".to_vec()];
    let path = c.init.clone().into_bytes();
    log::info!("Run {} as init process", c.init);
    let start = run::Start::Exec {
        path,
        argv,
        envp,
        exec: um_fs::exec::exec_init,
    };
    let handle = run::spawn(&kernel, task, start)
        .map_err(|e| format!("cannot start the init thread: {e}"))?;
    // init's exit ends `linux` from the thread that runs its exit (run::shutdown); this thread
    // only waits. That need not be init's first thread: when another of init's threads calls
    // exit_group, the first may end before the last one shuts the kernel down.
    let _ = handle.join();
    let gone = |k: &Kernel| {
        k.tasks
            .process(pid)
            .is_none_or(|p| p.live_threads(k).is_empty())
    };
    while !gone(&kernel) {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    std::thread::sleep(std::time::Duration::from_secs(5));
    Err(String::from(
        "the init thread ended without shutting the kernel down",
    ))
}

/// Finds where the host's vDSO (and its vvar pages) sit in stub processes, for the guest's vDSO
/// to call (see `um_kernel::arch::vdso`): two throwaway stubs must have them at the same place (stubs are
/// exec'd without address randomisation), above the stub region, with the image this process
/// has. Returns the host vDSO and the range of special mappings the engines must keep.
fn probe_host_vdso(
    image: &stub::StubImage,
    phys: &PhysMem,
    base: u64,
    va_bits: u32,
) -> Result<(um_kernel::arch::vdso::HostVdso, (u64, u64)), String> {
    let own = probe::own_vdso().ok_or("the host maps no vDSO")?;
    let mut seen: Option<Vec<(u64, u64, String)>> = None;
    for _ in 0..2 {
        let s = stub::spawn(
            image,
            phys.fd(),
            &[um_os_linux::stub_layout::DATA_SIZE as usize],
            None,
        )
        .map_err(|e| format!("probe stub: {e}"))?;
        let maps = probe::special_mappings(s.pid);
        stub::kill_and_reap(s.pid);
        let mut maps = maps.map_err(|e| format!("reading a stub's maps: {e}"))?;
        // The vDSO and its data pages ([vvar], [vvar_vclock]); not x86's [vsyscall] page, which
        // is in the kernel's half and cannot be unmapped anyway.
        maps.retain(|m| m.2 == "[vdso]" || m.2.starts_with("[vvar"));
        match &seen {
            Some(m) if *m != maps => {
                return Err("stubs do not get the host's vDSO at one place".into());
            }
            _ => seen = Some(maps),
        }
    }
    let maps = seen.unwrap_or_default();
    let vdso = maps
        .iter()
        .find(|m| m.2 == "[vdso]")
        .ok_or("a stub has no host vDSO")?;
    if (vdso.1 - vdso.0) as usize != own.len() {
        return Err("a stub's vDSO differs from this process's".into());
    }
    let lo = maps.iter().map(|m| m.0).min().unwrap_or(0);
    let hi = maps.iter().map(|m| m.1).max().unwrap_or(0);
    let page = probe::page_size() as u64;
    let above = base + um_os_linux::stub_layout::STUB_REGION;
    if lo < above || hi > (1u64 << va_bits) - page {
        return Err(format!(
            "the host's vDSO pages in stubs ({lo:#x}-{hi:#x}) are not above the stub region"
        ));
    }
    Ok((
        um_kernel::arch::vdso::HostVdso {
            addr: vdso.0,
            image: own,
        },
        (lo, hi),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ARM64: &[u64] = &[4096, 16384];
    const X86: &[u64] = &[4096];

    #[test]
    fn page_size_choice() {
        let g = |r, host, sup| choose_granule(r, host, sup, "no");
        // Defaults: the smallest supported size that covers the host's page.
        assert_eq!(g(None, 4096, ARM64), Ok(Granule::K4));
        assert_eq!(g(None, 16384, ARM64), Ok(Granule::K16));
        assert_eq!(g(None, 4096, X86), Ok(Granule::K4));
        // Explicit sizes.
        assert_eq!(g(Some(16384), 4096, ARM64), Ok(Granule::K16));
        assert_eq!(g(Some(4096), 4096, ARM64), Ok(Granule::K4));
        assert_eq!(g(Some(16384), 16384, ARM64), Ok(Granule::K16));
        // A guest page smaller than the host's.
        let e = g(Some(4096), 16384, ARM64).unwrap_err();
        assert!(
            e.starts_with("pagesize=4K: smaller than the host's page size (16K)"),
            "{e}"
        );
        // An arch without 16K pages.
        let e =
            choose_granule(Some(16384), 4096, X86, "x86_64 guests have 4K pages only").unwrap_err();
        assert_eq!(e, "pagesize=16K: x86_64 guests have 4K pages only");
        // A 64K host.
        let e = g(None, 65536, ARM64).unwrap_err();
        assert!(e.contains("(64K)") && e.contains("(4K, 16K)"), "{e}");
    }

    #[test]
    fn native_arch_page_sizes() {
        assert_eq!(guest_granule(None, 4096), Ok(Granule::K4));
        let r = guest_granule(Some(16384), 4096);
        if cfg!(target_arch = "aarch64") {
            assert_eq!(r, Ok(Granule::K16));
        } else {
            assert!(r.unwrap_err().starts_with("pagesize=16K: "));
        }
    }

    #[test]
    fn hostname_from_the_root() {
        let base = std::env::temp_dir().join(format!("um-hostname-{}", std::process::id()));
        let root = base.join("my_root.fs");
        std::fs::create_dir_all(root.join("etc")).unwrap();
        // No /etc/hostname: the directory's name, made a valid hostname.
        assert_eq!(default_hostname(Some(&root)), "my-root.fs");
        std::fs::write(root.join("etc/hostname"), "alpine\n").unwrap();
        assert_eq!(default_hostname(Some(&root)), "alpine");
        // An empty file does not count.
        std::fs::write(root.join("etc/hostname"), "\n").unwrap();
        assert_eq!(default_hostname(Some(&root)), "my-root.fs");
        // A symbolic link out of the root is not followed.
        std::fs::write(base.join("outside"), "secret\n").unwrap();
        std::fs::remove_file(root.join("etc/hostname")).unwrap();
        std::os::unix::fs::symlink(base.join("outside"), root.join("etc/hostname")).unwrap();
        assert_eq!(default_hostname(Some(&root)), "my-root.fs");
        assert_eq!(default_hostname(None), "(none)");
        let _ = std::fs::remove_dir_all(&base);
    }
}
