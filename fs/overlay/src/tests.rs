//! Unit tests: overlays of tmpfs layers, driven through the `Inode` interface as the VFS
//! does, with a kernel object and a current task (copy-up and readdir open real files).

use crate::OvlFs;
use crate::params::Config;
use std::sync::{Arc, Mutex, OnceLock};
use um_fs::tmpfs::TmpFs;
use um_kernel::kernel::{EngineKind, HostPhys, Kernel, StubEnv, Uts};
use um_kernel::task::{FsContext, Process, Task, lock};
use um_kernel::vfs::{Dentry, FdTable, Inode, Owner, SetAttr, mode};
use um_kernel::wait::IoCtx;
use um_mm::{FrameAllocator, Granule, Layout, Mm, PageCache};
use um_os_linux::physmem::PhysMem;
use um_uapi::Errno;

fn layout() -> Layout {
    Layout {
        task_size: 0x7f80_0000_0000,
        mmap_base: 0x7f7f_f000_0000,
        stack_top: 0x7f7f_fff0_0000,
        stack_limit: 8 << 20,
        min_addr: 0x10000,
    }
}

/// A kernel and one task, current on this thread (made on first use per thread).
fn task() -> Arc<Task> {
    if let Some(t) = um_kernel::current::current() {
        return t;
    }
    static K: OnceLock<Arc<Kernel>> = OnceLock::new();
    let k = K
        .get_or_init(|| {
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
                    nodename: Mutex::new("box".into()),
                    release: "6.1.0-um".into(),
                    version: "#1 SMP".into(),
                    machine: "x86_64".into(),
                    domainname: Mutex::new("(none)".into()),
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
        })
        .clone();
    let root = Dentry::root(TmpFs::new_root_inode(0o755, 0, 0));
    let fs = FsContext {
        root: root.clone(),
        cwd: root,
        umask: 0o22,
    };
    let mm = Arc::new(Mutex::new(Mm::new(
        k.frames.clone(),
        k.page_cache.clone(),
        layout(),
    )));
    let files = Arc::new(Mutex::new(FdTable::default()));
    let p = Arc::new(Process::new(1, None, mm, files, fs));
    let t = Task::new(1, p, 0);
    um_kernel::current::set_current(Some(t.clone()));
    t
}

fn own() -> Owner {
    Owner::default()
}

fn write(dir: &Arc<dyn Inode>, name: &[u8], data: &[u8]) -> Arc<dyn Inode> {
    let f = match dir.lookup(name) {
        Ok(f) => f,
        Err(_) => dir.create(name, 0o644, own()).unwrap(),
    };
    overwrite(&f, data);
    f
}

/// Writes `data` at the start of file `f` (opened for writing, as open(2) does).
fn overwrite(f: &Arc<dyn Inode>, data: &[u8]) {
    let t = task();
    let io = IoCtx {
        task: &t,
        nonblock: false,
        flags: 0,
    };
    let ops = f.open(&io, 1).unwrap();
    assert_eq!(ops.write(&io, data, 0).unwrap(), data.len());
}

fn read(f: &Arc<dyn Inode>) -> Vec<u8> {
    let t = task();
    let io = IoCtx {
        task: &t,
        nonblock: false,
        flags: 0,
    };
    let ops = f.open(&io, 0).unwrap();
    let mut buf = vec![0u8; 4096];
    let n = ops.read(&io, &mut buf, 0).unwrap();
    buf.truncate(n);
    buf
}

fn names(d: &Arc<dyn Inode>) -> Vec<String> {
    let t = task();
    let io = IoCtx {
        task: &t,
        nonblock: false,
        flags: 0,
    };
    let mut v: Vec<String> = d
        .open(&io, 0)
        .unwrap()
        .readdir()
        .unwrap()
        .into_iter()
        .map(|e| String::from_utf8_lossy(&e.name).into_owned())
        .collect();
    v.sort();
    v
}

struct Layers {
    upper: Arc<dyn Inode>,
    l1: Arc<dyn Inode>,
    l2: Arc<dyn Inode>,
    ovl: Arc<dyn Inode>,
}

/// l1 over l2 under a tmpfs upper: l1 has `a`, `dir/x`, `gone`, `d2/`; l2 has `a`, `t`,
/// `dir/b`.
fn setup() -> Layers {
    task();
    let root = |m| -> Arc<dyn Inode> { TmpFs::new_root_inode(m, 0, 0) };
    // Upper and work directories on one file system (copy-up renames from one to the other).
    let base = root(0o755);
    let upper = base.mkdir(b"u", 0o755, own()).unwrap();
    let work = base.mkdir(b"w", 0o755, own()).unwrap();
    let (l1, l2) = (root(0o755), root(0o755));
    write(&l1, b"a", b"l1-a");
    let d = l1.mkdir(b"dir", 0o755, own()).unwrap();
    write(&d, b"x", b"x");
    write(&l1, b"gone", b"g");
    l1.mkdir(b"d2", 0o700, own()).unwrap();
    write(&l2, b"a", b"l2-a");
    write(&l2, b"t", b"t");
    let d = l2.mkdir(b"dir", 0o755, own()).unwrap();
    write(&d, b"b", b"b");
    let w = work.mkdir(b"work", 0, own()).unwrap();
    WORK.with(|c| *c.borrow_mut() = Some(w.clone()));
    let ovl = OvlFs::new_root(
        Some(upper.clone()),
        Some(w),
        vec![l1.clone(), l2.clone()],
        Config::default(),
        own(),
        false,
    );
    Layers { upper, l1, l2, ovl }
}

thread_local! {
    /// The work directory of the last [`setup`] on this thread.
    static WORK: std::cell::RefCell<Option<Arc<dyn Inode>>> = const { std::cell::RefCell::new(None) };
}

fn is_whiteout(i: &Arc<dyn Inode>) -> bool {
    crate::is_whiteout(&**i)
}

#[test]
fn lookup_merges_and_the_top_layer_wins() {
    let l = setup();
    assert_eq!(read(&l.ovl.lookup(b"a").unwrap()), b"l1-a");
    assert_eq!(read(&l.ovl.lookup(b"t").unwrap()), b"t");
    assert_eq!(names(&l.ovl), [".", "..", "a", "d2", "dir", "gone", "t"]);
    let dir = l.ovl.lookup(b"dir").unwrap();
    assert_eq!(names(&dir), [".", "..", "b", "x"]);
    assert_eq!(l.ovl.lookup(b"nope").err(), Some(Errno::ENOENT));
    // A merged directory: nlink 1, the overlay's device, an inode number of its own that
    // every lookup gives.
    let st = dir.stat().unwrap();
    assert_eq!(st.nlink, 1);
    assert_eq!(st.dev, l.ovl.stat().unwrap().dev);
    assert_eq!(l.ovl.lookup(b"dir").unwrap().stat().unwrap().ino, st.ino);
    assert_eq!(l.ovl.lookup(b"dir").unwrap().id(), dir.id());
}

#[test]
fn write_copies_up_and_keeps_the_lower_file() {
    let l = setup();
    let a = l.ovl.lookup(b"a").unwrap();
    let ino = a.stat().unwrap().ino;
    overwrite(&a, b"NEW!");
    assert_eq!(read(&l.ovl.lookup(b"a").unwrap()), b"NEW!");
    assert_eq!(read(&l.l1.lookup(b"a").unwrap()), b"l1-a");
    assert_eq!(read(&l.upper.lookup(b"a").unwrap()), b"NEW!");
    // st_ino and the identity stay across copy-up, for later lookups too.
    let again = l.ovl.lookup(b"a").unwrap();
    assert_eq!(again.stat().unwrap().ino, ino);
    assert_eq!(again.id(), a.id());
    // ... and its device is the lower layer's pseudo device, not the upper file system's.
    let upper_dev = l.upper.lookup(b"a").unwrap().stat().unwrap().dev;
    assert_ne!(again.stat().unwrap().dev, upper_dev);
    // Deep copy-up makes the parents.
    let x = l.ovl.lookup(b"dir").unwrap().lookup(b"x").unwrap();
    x.setattr(&SetAttr {
        mode: Some(0o600),
        uid: Some(7),
        ..Default::default()
    })
    .unwrap();
    let ux = l.upper.lookup(b"dir").unwrap().lookup(b"x").unwrap();
    let st = ux.stat().unwrap();
    assert_eq!((st.mode & 0o7777, st.uid), (0o600, 7));
    assert_eq!(read(&ux), b"x");
    // The lower's mtime is kept.
    let lst =
        l.l1.lookup(b"dir")
            .unwrap()
            .lookup(b"x")
            .unwrap()
            .stat()
            .unwrap();
    assert_eq!(st.mtime, lst.mtime);
    // The lower entries of the copied-up directory are still merged.
    assert_eq!(names(&l.ovl.lookup(b"dir").unwrap()), [".", "..", "b", "x"]);
    // Nothing is left in the work directory.
    let w = WORK.with(|c| c.borrow().clone()).unwrap();
    assert_eq!(names(&w), [".", ".."]);
}

#[test]
fn unlink_and_rmdir_leave_whiteouts_and_mkdir_is_opaque() {
    let l = setup();
    l.ovl.unlink(b"gone").unwrap();
    assert_eq!(l.ovl.lookup(b"gone").err(), Some(Errno::ENOENT));
    assert!(is_whiteout(&l.upper.lookup(b"gone").unwrap()));
    assert_eq!(l.ovl.rmdir(b"dir").err(), Some(Errno::ENOTEMPTY));
    let dir = l.ovl.lookup(b"dir").unwrap();
    dir.unlink(b"x").unwrap();
    dir.unlink(b"b").unwrap();
    assert_eq!(names(&dir), [".", ".."]);
    l.ovl.rmdir(b"dir").unwrap();
    assert!(is_whiteout(&l.upper.lookup(b"dir").unwrap()));
    assert!(!names(&l.ovl).contains(&"dir".to_string()));
    l.ovl.mkdir(b"dir", 0o755, own()).unwrap();
    let up = l.upper.lookup(b"dir").unwrap();
    assert_eq!(up.getxattr(b"trusted.overlay.opaque").unwrap(), b"y");
    assert_eq!(names(&l.ovl.lookup(b"dir").unwrap()), [".", ".."]);
    // overlayfs's own attribute is not the guest's: its name is escaped.
    let d = l.ovl.lookup(b"dir").unwrap();
    assert_eq!(
        d.getxattr(b"trusted.overlay.opaque").err(),
        Some(Errno::ENODATA)
    );
    assert!(d.listxattr().unwrap().is_empty());
    d.setxattr(b"trusted.overlay.mine", b"1", 0).unwrap();
    assert_eq!(up.getxattr(b"trusted.overlay.overlay.mine").unwrap(), b"1");
    assert_eq!(
        d.listxattr().unwrap(),
        vec![b"trusted.overlay.mine".to_vec()]
    );
    // A file created over a whiteout replaces it.
    write(&l.ovl, b"gone", b"again");
    assert_eq!(read(&l.upper.lookup(b"gone").unwrap()), b"again");
    // Unlinking an upper-only file leaves nothing.
    write(&l.ovl, b"fresh", b"f");
    l.ovl.unlink(b"fresh").unwrap();
    assert_eq!(l.upper.lookup(b"fresh").err(), Some(Errno::ENOENT));
}

#[test]
fn rename_rules() {
    let l = setup();
    let ovl = l.ovl.clone();
    // A lower directory cannot move without redirect_dir.
    assert_eq!(ovl.rename(b"d2", &ovl, b"d3", 0).err(), Some(Errno::EXDEV));
    // A lower file moves, leaving a whiteout.
    ovl.rename(b"t", &ovl, b"t2", 0).unwrap();
    assert_eq!(read(&ovl.lookup(b"t2").unwrap()), b"t");
    assert!(is_whiteout(&l.upper.lookup(b"t").unwrap()));
    assert_eq!(ovl.lookup(b"t").err(), Some(Errno::ENOENT));
    // A new (upper) directory moves.
    ovl.mkdir(b"n", 0o755, own()).unwrap();
    ovl.rename(b"n", &ovl, b"n2", 0).unwrap();
    assert!(ovl.lookup(b"n2").is_ok());
    // NOREPLACE, and a file over a directory.
    assert_eq!(
        ovl.rename(b"t2", &ovl, b"a", um_uapi::abi::fcntl::RENAME_NOREPLACE)
            .err(),
        Some(Errno::EEXIST)
    );
    assert_eq!(
        ovl.rename(b"t2", &ovl, b"dir", 0).err(),
        Some(Errno::EISDIR)
    );
    // Another file system's directory is EXDEV.
    assert_eq!(ovl.rename(b"t2", &l.l2, b"t2", 0).err(), Some(Errno::EXDEV));
}

#[test]
fn devices_and_inode_numbers_without_xino() {
    let l = setup();
    let root = l.ovl.stat().unwrap();
    let upper_dev = l.upper.stat().unwrap().dev;
    assert_ne!(root.dev, upper_dev);
    // Non-directories: a pseudo device per layer file system, their real number.
    let t = l.ovl.lookup(b"t").unwrap().stat().unwrap();
    let a = l.ovl.lookup(b"a").unwrap().stat().unwrap();
    assert_eq!(t.ino, l.l2.lookup(b"t").unwrap().stat().unwrap().ino);
    assert_ne!(t.dev, a.dev);
    assert_ne!(t.dev, root.dev);
    assert_eq!(
        l.ovl.statfs().unwrap().fs_type,
        um_uapi::abi::overlay::OVERLAYFS_SUPER_MAGIC
    );
}

#[test]
fn a_lower_only_overlay_is_read_only_and_obeys_whiteouts() {
    let l = setup();
    l.ovl.unlink(b"gone").unwrap();
    l.ovl.lookup(b"dir").unwrap().unlink(b"x").unwrap();
    let ro = OvlFs::new_root(
        None,
        None,
        vec![l.upper.clone(), l.l1.clone(), l.l2.clone()],
        Config::default(),
        own(),
        false,
    );
    assert_eq!(ro.lookup(b"gone").err(), Some(Errno::ENOENT));
    assert_eq!(names(&ro.lookup(b"dir").unwrap()), [".", "..", "b"]);
    assert_eq!(ro.create(b"n", 0o644, own()).err(), Some(Errno::EROFS));
    assert_eq!(ro.unlink(b"a").err(), Some(Errno::EROFS));
    let a = ro.lookup(b"a").unwrap();
    assert_eq!(
        a.setattr(&SetAttr {
            mode: Some(0o600),
            ..Default::default()
        })
        .err(),
        Some(Errno::EROFS)
    );
    assert_eq!(a.stat().unwrap().mode & mode::S_IFMT, mode::S_IFREG);
}

#[test]
fn special_files_copy_up_with_their_type() {
    let l = setup();
    l.l1.mknod(b"fifo", mode::S_IFIFO | 0o644, 0, own())
        .unwrap();
    l.l1.symlink(b"ln", b"a", own()).unwrap();
    let f = l.ovl.lookup(b"fifo").unwrap();
    f.setattr(&SetAttr {
        mode: Some(0o600),
        ..Default::default()
    })
    .unwrap();
    let uf = l.upper.lookup(b"fifo").unwrap().stat().unwrap();
    assert_eq!(uf.mode, mode::S_IFIFO | 0o600);
    let ln = l.ovl.lookup(b"ln").unwrap();
    ln.setattr(&SetAttr {
        uid: Some(5),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(l.upper.lookup(b"ln").unwrap().readlink().unwrap(), b"a");
}

#[test]
fn mount_walks_the_layers_and_refuses_what_linux_refuses() {
    let t = task();
    let root = lock(&t.process.fs).root.inode.clone();
    for d in [&b"l1"[..], b"l2", b"u", b"w"] {
        root.mkdir(d, 0o755, own()).unwrap();
    }
    write(&root.lookup(b"l1").unwrap(), b"f", b"one");
    write(&root.lookup(b"l2").unwrap(), b"g", b"two");
    let err = |opts: &[u8]| crate::mount(0, opts).err();
    assert_eq!(err(b"lowerdir=/nope"), Some(Errno::ENOENT));
    assert_eq!(err(b"lowerdir=/l1/f:/l2"), Some(Errno::ENOTDIR));
    assert_eq!(err(b"lowerdir=/l1"), Some(Errno::EINVAL));
    assert_eq!(err(b"lowerdir=/l1,upperdir=/u"), Some(Errno::EINVAL));
    assert_eq!(err(b"lowerdir=/l1,bogus"), Some(Errno::EINVAL));
    // Lower layers only, one relative to the cwd: read-only, merged.
    let ro = crate::mount(0, b"lowerdir=l1:/l2").unwrap();
    assert_eq!(names(&ro), [".", "..", "f", "g"]);
    assert_eq!(read(&ro.lookup(b"g").unwrap()), b"two");
    assert_eq!(ro.mkdir(b"x", 0o755, own()).err(), Some(Errno::EROFS));
}

#[test]
fn truncate_copies_up_without_the_data() {
    let l = setup();
    let a = l.ovl.lookup(b"a").unwrap();
    a.setattr(&SetAttr {
        size: Some(0),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(l.upper.lookup(b"a").unwrap().stat().unwrap().size, 0);
    assert_eq!(read(&l.l1.lookup(b"a").unwrap()), b"l1-a");
    // A partial truncate keeps the head of the data.
    let t = l.ovl.lookup(b"t").unwrap();
    write(&l.l2, b"t", b"12345");
    t.setattr(&SetAttr {
        size: Some(2),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(read(&l.upper.lookup(b"t").unwrap()), b"12");
}

#[test]
fn a_reader_opened_before_copy_up_reads_the_copy() {
    let l = setup();
    let t = task();
    let io = IoCtx {
        task: &t,
        nonblock: false,
        flags: 0,
    };
    let a = l.ovl.lookup(b"a").unwrap();
    let reader = a.open(&io, 0).unwrap();
    overwrite(&l.ovl.lookup(b"a").unwrap(), b"L1-A");
    let mut buf = [0u8; 8];
    let n = reader.read(&io, &mut buf, 0).unwrap();
    assert_eq!(&buf[..n], b"L1-A");
    // fstat of the open file is the overlay's view (the origin's inode number).
    assert_eq!(reader.stat().unwrap().ino, a.stat().unwrap().ino);
}

#[test]
fn userxattr_uses_the_user_namespace_of_attributes() {
    task();
    let base = TmpFs::new_root_inode(0o755, 0, 0);
    let upper = base.mkdir(b"u", 0o755, own()).unwrap();
    let w = base
        .mkdir(b"w", 0o755, own())
        .unwrap()
        .mkdir(b"work", 0, own())
        .unwrap();
    let lower: Arc<dyn Inode> = TmpFs::new_root_inode(0o755, 0, 0);
    lower.mkdir(b"d", 0o755, own()).unwrap();
    // With userxattr the opaque mark is user.overlay.opaque.
    let cfg = Config {
        userxattr: true,
        ..Config::default()
    };
    let ovl = OvlFs::new_root(Some(upper.clone()), Some(w), vec![lower], cfg, own(), false);
    ovl.rmdir(b"d").unwrap();
    ovl.mkdir(b"d", 0o755, own()).unwrap();
    let ud = upper.lookup(b"d").unwrap();
    assert_eq!(ud.getxattr(b"user.overlay.opaque").unwrap(), b"y");
    assert_eq!(
        ud.getxattr(b"trusted.overlay.opaque").err(),
        Some(Errno::ENODATA)
    );
    // trusted.overlay.* is an ordinary attribute with userxattr; user.overlay.* is escaped.
    let d = ovl.lookup(b"d").unwrap();
    d.setxattr(b"trusted.overlay.t", b"1", 0).unwrap();
    assert_eq!(ud.getxattr(b"trusted.overlay.t").unwrap(), b"1");
    d.setxattr(b"user.overlay.u", b"2", 0).unwrap();
    assert_eq!(ud.getxattr(b"user.overlay.overlay.u").unwrap(), b"2");
    let mut names = d.listxattr().unwrap();
    names.sort();
    assert_eq!(
        names,
        vec![b"trusted.overlay.t".to_vec(), b"user.overlay.u".to_vec()]
    );
}
