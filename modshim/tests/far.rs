//! End to end on the host CPU: the example module `umveneer` (the loader's checked-in fixture
//! for the host arch) placed where the host maps memory, far out of direct-branch range of the
//! kernel's API functions, so every call it makes to the kernel goes through a veneer (arm64
//! PLT entry) or stub (x86_64). Its init runs, allocates and frees through the kernel API,
//! creates a `/proc` entry, whose `show` runs too; then its exit.
//!
//! The kernel side is a minimal [`KernelApi`] that records log lines and the `/proc` entry.

use std::path::PathBuf;
use std::sync::Mutex;
use um_modshim::{Fops, KernelApi, ModuleMem, Opaque, Owner, ProcShow, RegionReq};
use um_uapi::Errno;

type ProcEntry = (Vec<u8>, ProcShow, Opaque);

static PROCS: Mutex<Vec<ProcEntry>> = Mutex::new(Vec::new());
static LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn log() -> Vec<String> {
    LOG.lock().unwrap().clone()
}

struct TestApi;

impl KernelApi for TestApi {
    fn printk(&self, _owner: Option<Owner>, _level: i32, msg: &[u8]) {
        LOG.lock()
            .unwrap()
            .push(String::from_utf8_lossy(msg).into_owned());
    }
    fn copy_to_user(&self, _to: u64, _data: &[u8]) -> bool {
        false
    }
    fn copy_from_user(&self, _from: u64, _buf: &mut [u8]) -> bool {
        false
    }
    fn register_chrdev(&self, _: Owner, _: &[u8], _: Fops, _: Opaque) -> Result<i32, Errno> {
        Err(Errno::ENODEV)
    }
    fn unregister_chrdev(&self, _: Owner, _: i32) {}
    fn proc_create(
        &self,
        _: Owner,
        name: &[u8],
        show: ProcShow,
        data: Opaque,
    ) -> Result<i32, Errno> {
        let mut p = PROCS.lock().unwrap();
        p.push((name.to_vec(), show, data));
        Ok(p.len() as i32 - 1)
    }
    fn proc_remove(&self, _: Owner, _: i32) {}
    fn request_firmware(&self, _: Owner, _: &[u8]) -> Result<Vec<u8>, Errno> {
        Err(Errno::ENOENT)
    }
}

fn fixture(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../module/tests/fixtures")
        .join(std::env::consts::ARCH)
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()))
}

#[test]
fn module_far_from_the_kernel_calls_it_through_veneers() {
    assert!(um_modshim::install(Box::new(TestApi)));

    let obj = um_module::ModuleObject::parse(&fixture("umveneer.ko")).expect("parse umveneer.ko");
    let layout = obj.layout();
    let reqs: Vec<RegionReq> = layout
        .regions
        .iter()
        .map(|r| RegionReq {
            size: r.size,
            align: r.align,
            init: r.kind.is_init(),
        })
        .collect();
    let (mem, addrs) = ModuleMem::alloc_far(&reqs).expect("module memory");
    let kernel = um_modshim::kernel_symbol("kmalloc").unwrap();
    let reach: u64 = if cfg!(target_arch = "aarch64") {
        128 << 20
    } else {
        2 << 30
    };
    assert!(
        addrs.iter().all(|&a| a.abs_diff(kernel) > reach),
        "the host mapped the module near the kernel ({addrs:x?} vs {kernel:#x}); nothing to test"
    );
    let bases: Vec<_> = layout
        .regions
        .iter()
        .zip(&addrs)
        .map(|(r, &a)| (r.kind, a))
        .collect();
    let resolver = |name: &str| um_modshim::kernel_symbol(name);
    let linked = um_module::link(&obj, &bases, &resolver, "rounds=4").expect("link");
    assert!(
        !linked.veneers.is_empty(),
        "no veneers although the kernel is out of reach"
    );
    for r in &linked.regions {
        let i = bases.iter().position(|(k, _)| *k == r.kind).unwrap();
        let prot = match r.prot {
            um_module::Prot::ReadExec => um_modshim::Prot::ReadExec,
            um_module::Prot::Read => um_modshim::Prot::Read,
            um_module::Prot::ReadWrite => um_modshim::Prot::ReadWrite,
        };
        mem.install(i, &r.bytes, prot).expect("install");
    }
    let owner = 1;
    let r = um_modshim::call_init(&mem, owner, linked.init.expect("init_module"));
    assert_eq!(r, Ok(0), "log: {:?}", log());
    mem.free_init();
    let lines = log();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("init: rounds=4 ok=4 calls=8")),
        "{lines:?}"
    );
    let (name, show, data) = PROCS.lock().unwrap()[0].clone();
    assert_eq!(name, b"umveneer");
    let mut buf = vec![0u8; 256];
    let n = show.show(data, &mut buf).expect("show");
    assert_eq!(&buf[..n], b"rounds=4 ok=4 calls=16\n");
    assert_eq!(um_modshim::outstanding(owner), (0, 0, 0), "kmalloc leak");
    um_modshim::call_exit(&mem, owner, linked.exit.expect("cleanup_module")).unwrap();
    assert!(
        log()
            .iter()
            .any(|l| l.contains("unloaded after 16 kernel calls")),
        "{:?}",
        log()
    );
}
