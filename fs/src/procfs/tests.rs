//! procfs end to end without a guest: a kernel object with one process and thread, its
//! procfs, and walks through `self`, the magic links and the generated files.

use super::*;
use crate::namei::{self, Last};
use std::sync::{Mutex, OnceLock};
use um_kernel::kernel::HostPhys;
use um_kernel::kernel::{EngineKind, StubEnv, Uts};
use um_kernel::task::{FsContext, Process, Task, lock};
use um_kernel::vfs::{Dentry, FdTable, OpenFile};
use um_mm::{Backing, FrameAllocator, Granule, Layout, MapFlags, Mm, PageCache, Prot};
use um_os_linux::physmem::PhysMem;

fn test_kernel() -> Arc<Kernel> {
    let phys = Arc::new(PhysMem::new(4 << 20).unwrap());
    let frames = Arc::new(FrameAllocator::new(
        Arc::new(HostPhys(phys.clone())),
        Granule::K4,
    ));
    let page_cache = Arc::new(PageCache::new(frames.clone()));
    let elf = um_os_linux::stub::build_stub_elf(62, &[0xcc; 16], 0x7f80_0000_0000, 0);
    Arc::new(Kernel {
        phys,
        frames,
        page_cache,
        layout: layout(),
        stub: StubEnv {
            image: um_os_linux::stub::StubImage::new(&elf, None).unwrap(),
            base: 0x7f80_0000_0000,
            va_bits: 47,
            keep: None,
        },
        tasks: Default::default(),
        syscalls: Default::default(),
        uts: Uts {
            sysname: "Linux".into(),
            nodename: std::sync::Mutex::new("box".into()),
            release: "6.1.0-um".into(),
            version: "#1 SMP".into(),
            machine: "x86_64".into(),
            domainname: std::sync::Mutex::new("(none)".into()),
        },
        engine: EngineKind::Ptrace(um_kernel::engine::ptrace::Intercept::Sysemu),
        hwcap: 0,
        hwcap2: 0,
        prefault_pages: 0,
        exec_template: Default::default(),
        shutdown_hooks: Default::default(),
        thread_exit_hooks: Default::default(),
        process_exit_hooks: Default::default(),
        fork_hooks: Default::default(),
    })
}

fn layout() -> Layout {
    Layout {
        task_size: 0x7f80_0000_0000,
        mmap_base: 0x7f7f_f000_0000,
        stack_top: 0x7f7f_fff0_0000,
        stack_limit: 8 << 20,
        min_addr: 0x10000,
    }
}

/// Serialises the tests: they share the thread-local current task pattern and host dirs.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static M: OnceLock<Mutex<()>> = OnceLock::new();
    lock(M.get_or_init(Default::default))
}

struct World {
    k: Arc<Kernel>,
    task: Arc<Task>,
    root: Arc<Dentry>,
    proc_root: Arc<Dentry>,
    fs: FsContext,
}

fn world() -> World {
    let k = test_kernel();
    let dir = std::env::temp_dir().join(format!("um-procfs-test-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("file"), b"hello").unwrap();
    let host = crate::hostfs::HostInode::new_root(&dir, false, k.page_cache.clone()).unwrap();
    let root = Dentry::root(host);
    let cwd = Dentry::child(&root, b"sub", root.inode.lookup(b"sub").unwrap());
    let fs = FsContext {
        root: root.clone(),
        cwd,
        umask: 0o22,
    };
    let mm = Arc::new(Mutex::new(Mm::new(
        k.frames.clone(),
        k.page_cache.clone(),
        layout(),
    )));
    let files = Arc::new(Mutex::new(FdTable::default()));
    let p = Arc::new(Process::new(1, None, mm, files, fs.clone()));
    let task = Task::new(1, p, 0);
    k.tasks.insert(task.clone());
    um_kernel::current::set_current(Some(task.clone()));
    let proc_root = Dentry::root(mount(&k).unwrap());
    World {
        k,
        task,
        root,
        proc_root,
        fs,
    }
}

fn read_all(w: &World, d: &Arc<Dentry>) -> String {
    let io = IoCtx {
        task: &w.task,
        nonblock: false,
        flags: 0,
    };
    let f = d.inode.open(&io, 0).unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 100];
    loop {
        let n = f.read(&io, &mut buf, out.len() as u64).unwrap();
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    String::from_utf8(out).unwrap()
}

fn walk(w: &World, path: &str, last: Last) -> SysResult<Arc<Dentry>> {
    namei::walk(&w.fs, &w.proc_root, path.as_bytes(), last)
}

#[test]
fn self_and_magic_links_stay_inside() {
    let _g = serial();
    let w = world();
    let s = walk(&w, "self", Last::NoFollow).unwrap();
    assert_eq!(s.inode.readlink().unwrap(), b"1");
    assert_eq!(
        walk(&w, "thread-self", Last::NoFollow)
            .unwrap()
            .inode
            .readlink()
            .unwrap(),
        b"1/task/1"
    );
    // /proc/self/root is the process root dentry itself, and `..` cannot climb above it.
    let r = walk(&w, "self/root", Last::Follow).unwrap();
    assert!(Arc::ptr_eq(&r, &w.root));
    let up = walk(&w, "self/root/../..", Last::Follow).unwrap();
    assert!(Arc::ptr_eq(&up, &w.root));
    let f = walk(&w, "self/root/file", Last::Follow).unwrap();
    assert_eq!(f.path(), b"/file");
    let rl = walk(&w, "1/root", Last::NoFollow).unwrap();
    assert_eq!(rl.inode.readlink().unwrap(), b"/");
    let cwd = walk(&w, "self/cwd", Last::NoFollow).unwrap();
    assert_eq!(cwd.inode.readlink().unwrap(), b"/sub");
    assert!(walk(&w, "self/exe", Last::Follow).is_err());
    // fd/N opens the same dentry.
    let io = IoCtx {
        task: &w.task,
        nonblock: false,
        flags: 0,
    };
    let ops = f.inode.open(&io, 0).unwrap();
    let file = OpenFile::new(ops, 0o2, Some(f.clone()));
    lock(&w.task.process.files())
        .install(file, true, 0)
        .unwrap();
    let l = walk(&w, "self/fd/0", Last::NoFollow).unwrap();
    assert_eq!(l.inode.readlink().unwrap(), b"/file");
    assert_eq!(l.inode.stat().unwrap().mode, mode::S_IFLNK | 0o700);
    assert!(Arc::ptr_eq(
        &walk(&w, "self/fd/0", Last::Follow).unwrap(),
        &f
    ));
    let info = read_all(&w, &walk(&w, "self/fdinfo/0", Last::Follow).unwrap());
    assert!(
        info.starts_with("pos:\t0\nflags:\t02000002\nmnt_id:\t"),
        "{info}"
    );
    assert!(walk(&w, "self/fd/1", Last::Follow).is_err());
    let ents = walk(&w, "self/fd", Last::Follow)
        .unwrap()
        .inode
        .open(&io, 0)
        .unwrap()
        .readdir()
        .unwrap();
    assert_eq!(
        ents.iter().map(|e| e.name.clone()).collect::<Vec<_>>(),
        [b".".to_vec(), b"..".to_vec(), b"0".to_vec()]
    );
    um_kernel::current::set_current(None);
    assert_eq!(s.inode.readlink(), Err(Errno::ENOENT));
}

#[test]
fn process_files() {
    let _g = serial();
    let w = world();
    let p = w.task.process.clone();
    // Arguments in guest memory.
    let mm = lock(&p.mm).clone();
    let a = {
        let mut m = lock(&mm);
        let a = m
            .mmap(
                0,
                0x2000,
                Prot::READ | Prot::WRITE,
                MapFlags::PRIVATE | MapFlags::ANONYMOUS,
                Backing::Anon,
            )
            .unwrap();
        m.write_bytes(a, b"sh\0-c\0echo hi\0A=1\0").unwrap();
        a
    };
    *lock(&p.arg_range) = (a, a + 14, a + 14, a + 18);
    *lock(&p.comm) = b"sh".to_vec();
    assert_eq!(
        read_all(&w, &walk(&w, "1/cmdline", Last::Follow).unwrap()),
        "sh\0-c\0echo hi\0"
    );
    assert_eq!(
        read_all(&w, &walk(&w, "self/environ", Last::Follow).unwrap()),
        "A=1\0"
    );
    let stat = read_all(&w, &walk(&w, "self/stat", Last::Follow).unwrap());
    assert!(stat.starts_with("1 (sh) R 0 1 1 0 -1 0 "), "{stat}");
    assert_eq!(stat.split(' ').count(), 52);
    let status = read_all(&w, &walk(&w, "self/status", Last::Follow).unwrap());
    assert!(status.starts_with("Name:\tsh\nUmask:\t0022\nState:\tR (running)\n"));
    assert!(status.contains("\nVmSize:\t       8 kB\n"), "{status}");
    let maps = read_all(&w, &walk(&w, "self/maps", Last::Follow).unwrap());
    assert_eq!(maps.lines().count(), 1);
    assert!(maps.contains(" rw-p 00000000 00:00 0 \n"), "{maps}");
    let statm = read_all(&w, &walk(&w, "self/statm", Last::Follow).unwrap());
    assert!(statm.starts_with("2 "), "{statm}");
    // Thread directories.
    let t = read_all(&w, &walk(&w, "1/task/1/stat", Last::Follow).unwrap());
    assert!(t.starts_with("1 (sh) R "));
    assert!(walk(&w, "1/task/1/task", Last::Follow).is_err());
    assert!(walk(&w, "1/task/2", Last::Follow).is_err());
    assert!(walk(&w, "2", Last::Follow).is_err());
    // comm and oom_score_adj take writes.
    let io = IoCtx {
        task: &w.task,
        nonblock: false,
        flags: 0,
    };
    let c = walk(&w, "self/comm", Last::Follow).unwrap();
    c.inode
        .open(&io, 1)
        .unwrap()
        .write(&io, b"renamed\n", 0)
        .unwrap();
    assert_eq!(read_all(&w, &c), "renamed\n\n");
    let o = walk(&w, "self/oom_score_adj", Last::Follow).unwrap();
    let f = o.inode.open(&io, 1).unwrap();
    f.write(&io, b"500\n", 0).unwrap();
    assert_eq!(f.write(&io, b"5000\n", 0), Err(Errno::EINVAL));
    assert_eq!(read_all(&w, &o), "500\n");
    assert_eq!(
        read_all(&w, &walk(&w, "self/oom_adj", Last::Follow).unwrap()),
        "8\n"
    );
    let lim = read_all(&w, &walk(&w, "self/limits", Last::Follow).unwrap());
    assert!(lim.contains(
        "\nMax open files            1024                 4096                 files     \n"
    ));
    // auxv: the saved vector as native words.
    *lock(&p.auxv) = vec![(9, 0x1234), (0, 0)];
    let auxv = walk(&w, "self/auxv", Last::Follow).unwrap();
    let f = auxv.inode.open(&io, 0).unwrap();
    let mut b = [0u8; 64];
    assert_eq!(f.read(&io, &mut b, 0), Ok(32));
    assert_eq!(u64::from_le_bytes(b[0..8].try_into().unwrap()), 9);
    assert_eq!(u64::from_le_bytes(b[8..16].try_into().unwrap()), 0x1234);
    // mem: the address space at the file offset, read and written; an unmapped address EIO,
    // a transfer running into one stops there.
    let mem = walk(&w, "self/mem", Last::Follow).unwrap();
    let f = mem.inode.open(&io, 2).unwrap();
    let mut b = [0u8; 5];
    assert_eq!(f.read(&io, &mut b, a + 6), Ok(5));
    assert_eq!(&b, b"echo ");
    assert_eq!(f.write(&io, b"ECHO", a + 6), Ok(4));
    assert_eq!(f.read(&io, &mut b, a + 6), Ok(5));
    assert_eq!(&b, b"ECHO ");
    assert_eq!(f.read(&io, &mut b, a + 0x2000), Err(Errno::EIO));
    let mut big = vec![0u8; 0x3000];
    assert_eq!(f.read(&io, &mut big, a), Ok(0x2000));
    // The root lists the process.
    let ents = w.proc_root.inode.open(&io, 0).unwrap().readdir().unwrap();
    let names: Vec<String> = ents
        .iter()
        .map(|e| String::from_utf8(e.name.clone()).unwrap())
        .collect();
    for n in ["1", "self", "meminfo", "sys", "mounts"] {
        assert!(names.iter().any(|x| x == n), "{n} in {names:?}");
    }
}

#[test]
fn system_files() {
    let _g = serial();
    let w = world();
    let m = read_all(&w, &walk(&w, "meminfo", Last::Follow).unwrap());
    assert!(
        m.starts_with("MemTotal:           4096 kB\nMemFree:"),
        "{m}"
    );
    let up = read_all(&w, &walk(&w, "uptime", Last::Follow).unwrap());
    assert_eq!(up.split(' ').count(), 2);
    let la = read_all(&w, &walk(&w, "loadavg", Last::Follow).unwrap());
    assert!(la.starts_with("0.00 0.00 0.00 1/1 1"), "{la}");
    let v = read_all(&w, &walk(&w, "version", Last::Follow).unwrap());
    assert!(v.starts_with("Linux version 6.1.0-um "));
    let st = read_all(&w, &walk(&w, "stat", Last::Follow).unwrap());
    assert!(st.starts_with("cpu  "));
    assert!(st.contains("\nbtime ") && st.contains("\nprocesses 1\n"));
    assert_eq!(
        read_all(&w, &walk(&w, "sys/kernel/hostname", Last::Follow).unwrap()),
        "box\n"
    );
    assert_eq!(
        read_all(&w, &walk(&w, "sys/kernel/ostype", Last::Follow).unwrap()),
        "Linux\n"
    );
    assert_eq!(
        read_all(
            &w,
            &walk(&w, "sys/kernel/cap_last_cap", Last::Follow).unwrap()
        ),
        "40\n"
    );
    assert_eq!(
        walk(&w, "mounts", Last::NoFollow)
            .unwrap()
            .inode
            .readlink()
            .unwrap(),
        b"self/mounts"
    );
    let vm = walk(&w, "sys/vm/overcommit_memory", Last::Follow).unwrap();
    let io = IoCtx {
        task: &w.task,
        nonblock: false,
        flags: 0,
    };
    assert_eq!(
        vm.inode.open(&io, 1).unwrap().write(&io, b"x", 0),
        Err(Errno::EINVAL)
    );
    assert_eq!(vm.inode.open(&io, 1).unwrap().write(&io, b"1\n", 0), Ok(2));
    assert_eq!(
        w.proc_root.inode.statfs().unwrap().fs_type,
        PROC_SUPER_MAGIC
    );
    // sysfs.
    let sys = Dentry::root(crate::sysfs::mount(&w.k).unwrap());
    let online = namei::walk(&w.fs, &sys, b"devices/system/cpu/online", Last::Follow).unwrap();
    let text = read_all(&w, &online);
    assert!(text == "0\n" || text.starts_with("0-"), "{text}");
    assert!(namei::walk(&w.fs, &sys, b"fs/cgroup", Last::Follow).is_ok());
    assert!(namei::walk(&w.fs, &sys, b"module", Last::Follow).is_ok());
    assert_ne!(sys.inode.fs_id(), w.proc_root.inode.fs_id());
}

#[test]
fn registered_entries_listed_once() {
    let k = test_kernel();
    let fs = ProcFs::new_instance(&k, PROC_SUPER_MAGIC, PROC_DEV);
    registry::proc_create("test/registry", "b", |fs| ProcInode::text(fs, "b\n"));
    registry::register_sysctl("test/registry", |fs| {
        vec![
            ("a", ProcInode::text(fs, "a\n")),
            ("b", ProcInode::text(fs, "shadowed\n")),
        ]
    });
    let names: Vec<&str> = registry::entries(&fs, "test/registry")
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, ["b", "a"]);
    assert!(registry::entries(&fs, "test/other").is_empty());
}

#[test]
fn registered_entries_take_their_place_in_name_order() {
    let k = test_kernel();
    let fs = ProcFs::new_instance(&k, PROC_SUPER_MAGIC, PROC_DEV);
    registry::proc_create("test/ordered", "net", |fs| ProcInode::text(fs, "n\n"));
    registry::proc_create("test/ordered", "zz", |fs| ProcInode::text(fs, "z\n"));
    let mut v = vec![
        ("fs", ProcInode::text(&fs, "f\n")),
        ("kernel", ProcInode::text(&fs, "k\n")),
        ("vm", ProcInode::text(&fs, "v\n")),
    ];
    registry::insert_in_order(&fs, "test/ordered", &mut v);
    let names: Vec<&str> = v.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, ["fs", "kernel", "net", "vm", "zz"]);
}
