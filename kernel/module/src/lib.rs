//! `um-modules`: loadable modules, the kernel side (Linux `kernel/module/main.c`): the
//! registry of loaded modules, loading (`init_module`/`finit_module`) and unloading
//! (`delete_module`). The pure loader (parse, lay out, link) is the `um-module` crate below
//! it; this crate keeps what is loaded and sits above `um-fs`, so the VFS names no module.
//!
//! A load parses the object (`um-module`), checks its machine and vermagic, reserves the name
//! (state `Coming`), allocates its regions (`um-modshim`'s arena near the kernel text), links
//! it against the kernel's exported symbols and the exports of live modules, copies and
//! protects the regions, takes a reference on every module it uses, and calls `init_module`;
//! then it is `Live` and its init regions are freed. Any failure undoes everything. An unload
//! follows `delete_module(2)`: refused while other modules use the module (EWOULDBLOCK), while
//! it is not live (EBUSY), or while it has users and `O_NONBLOCK` is given without `O_TRUNC`;
//! it calls `cleanup_module`, removes what the module left registered, drops its references,
//! and frees its memory.
//!
//! One lock (`ops`) serialises loads and unloads, as Linux's `module_mutex` does; readers
//! (`/proc/modules`, `/sys/module`) take snapshots of the list.
//!
//! What module code calls back (printk, character devices, `/proc` entries, firmware, user
//! copies) is [`api`]; parameter text is [`params`]. Neighbours: [`sys`] (the
//! syscalls), `procfs` (`/proc/modules`, `/proc/<entry>`, `/sys/module`, registered with
//! `um_fs::procfs::registry` by [`init`]),
//! `um_fs::devfs` (the `/dev` nodes of module character devices).

#![forbid(unsafe_code)]

pub mod api;
pub mod params;
mod procfs;
pub mod sys;

use params::ParamType;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use um_kernel::kernel::Kernel;
use um_kernel::task::{Task, lock};
use um_kernel::wait::{WaitQueue, wait_event};
use um_modshim::{ModuleMem, RegionReq};
use um_uapi::{Errno, SysResult};

/// `/proc/sys/kernel/modules_disabled` (kernel/module/main.c `modules_disabled`): once set, no
/// module can be loaded or removed until the kernel ends. A guest root that can load modules
/// runs native code in this process, with the host user's power (as root can in Linux); an
/// init script that does not need modules can close that door.
static MODULES_DISABLED: AtomicBool = AtomicBool::new(false);

/// Whether module loading and removal were turned off.
pub fn modules_disabled() -> bool {
    MODULES_DISABLED.load(Ordering::Acquire)
}

/// Turns module loading and removal off for good.
pub fn disable_modules() {
    MODULES_DISABLED.store(true, Ordering::Release);
}

/// Longest module name plus its NUL (Linux `MODULE_NAME_LEN` on 64-bit).
pub const MODULE_NAME_LEN: usize = 56;
/// `finit_module` flag: ignore symbol version hashes (there are none here).
pub const MODULE_INIT_IGNORE_MODVERSIONS: u32 = 1;
/// `finit_module` flag: ignore the vermagic string (load with the kernel tainted).
pub const MODULE_INIT_IGNORE_VERMAGIC: u32 = 2;
pub use um_uapi::abi::fcntl::O_NONBLOCK;
pub use um_uapi::abi::fcntl::O_TRUNC;

/// Where a module is in its life (Linux `enum module_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Being initialised.
    Coming,
    /// Running.
    Live,
    /// Being removed.
    Going,
}

impl State {
    /// `/sys/module/<m>/initstate`.
    pub fn name(self) -> &'static str {
        match self {
            State::Coming => "coming",
            State::Live => "live",
            State::Going => "going",
        }
    }
}

/// A module parameter visible in sysfs.
#[derive(Clone, Debug)]
pub struct Param {
    pub name: String,
    pub ty: ParamType,
    /// Mode bits of `/sys/module/<m>/parameters/<name>` (0: hidden).
    pub perm: u32,
    /// Address of the variable in module memory.
    pub addr: u64,
}

/// A loaded module (Linux `struct module`).
pub struct Module {
    /// Registry id: tells apart two loads of the same name (and owns registrations).
    pub id: u64,
    pub name: String,
    state: Mutex<State>,
    /// Unloaded (by force, or after its last reference): calls into it are refused.
    gone: AtomicBool,
    /// `module_refcount`: one per module using it, one per open file of its devices and per
    /// call into it in progress.
    refcnt: AtomicI64,
    /// The modules whose exports it uses (each holds a reference from it).
    uses: Mutex<Vec<Arc<Module>>>,
    pub modinfo: Vec<(String, String)>,
    pub params: Vec<Param>,
    pub exports: Vec<(String, u64)>,
    /// Bytes of the regions kept after init (`/proc/modules`, `coresize`) and of the init ones.
    pub core_size: u64,
    pub init_size: u64,
    /// Taint flags (`O` out-of-tree, `P` proprietary, `F` forced), `/proc/modules` style.
    pub taints: String,
    has_init: bool,
    exit: Option<u64>,
    mem: Arc<ModuleMem>,
}

impl Module {
    /// Its state.
    pub fn state(&self) -> State {
        *lock(&self.state)
    }

    /// `module_refcount`.
    pub fn refcount(&self) -> i64 {
        self.refcnt.load(Ordering::Relaxed)
    }

    /// Whether it was unloaded.
    pub fn is_gone(&self) -> bool {
        self.gone.load(Ordering::Acquire)
    }

    /// `try_module_get`: a reference unless it is going away.
    pub fn try_get(&self) -> bool {
        let st = lock(&self.state);
        if *st == State::Going || self.is_gone() {
            return false;
        }
        self.refcnt.fetch_add(1, Ordering::AcqRel);
        true
    }

    /// `module_put`.
    pub fn put(&self) {
        self.refcnt.fetch_sub(1, Ordering::AcqRel);
        registry().refs.wake_all();
    }

    /// The memory its code and data live in.
    pub fn mem(&self) -> &Arc<ModuleMem> {
        &self.mem
    }

    /// A `.modinfo` value.
    pub fn info(&self, key: &str) -> Option<&str> {
        self.modinfo
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Whether it has an init but no exit function ("[permanent]").
    pub fn permanent(&self) -> bool {
        self.has_init && self.exit.is_none()
    }
}

/// The loaded modules.
struct Registry {
    /// Newest first, as `/proc/modules` lists them.
    list: Mutex<Vec<Arc<Module>>>,
    /// Serialises loads and unloads (`module_mutex`).
    ops: Mutex<()>,
    /// Woken when a reference is dropped (a blocking `delete_module` waits on it).
    refs: WaitQueue,
    next_id: AtomicU64,
    kernel: OnceLock<Weak<Kernel>>,
}

fn registry() -> &'static Registry {
    static R: OnceLock<Registry> = OnceLock::new();
    R.get_or_init(|| Registry {
        list: Mutex::new(Vec::new()),
        ops: Mutex::new(()),
        refs: WaitQueue::new(),
        next_id: AtomicU64::new(1),
        kernel: OnceLock::new(),
    })
}

/// The kernel (for the firmware loader), once a module was loaded.
pub(crate) fn kernel() -> Option<Arc<Kernel>> {
    registry().kernel.get().and_then(Weak::upgrade)
}

/// Boot-time wiring (before init can mount procfs or sysfs): `/proc/modules`, the modules'
/// `/proc` entries, `/sys/module`, `/proc/sys/kernel/modules_disabled`. The syscalls are
/// [`sys::register`]'s, called with the others by `um-bin`.
pub fn init() {
    procfs::register();
}

/// The loaded modules, newest first.
pub fn modules() -> Vec<Arc<Module>> {
    lock(&registry().list).clone()
}

/// The loaded module called `name`.
pub fn find(name: &str) -> Option<Arc<Module>> {
    lock(&registry().list)
        .iter()
        .find(|m| m.name == name)
        .cloned()
}

/// The module with registry id `id`.
pub fn by_id(id: u64) -> Option<Arc<Module>> {
    lock(&registry().list).iter().find(|m| m.id == id).cloned()
}

/// The names of the modules that use `m` (its "Used by" list).
pub fn users(m: &Module) -> Vec<String> {
    lock(&registry().list)
        .iter()
        .filter(|u| lock(&u.uses).iter().any(|x| x.id == m.id))
        .map(|u| u.name.clone())
        .collect()
}

/// The vermagic this kernel accepts: "<release> <machine>" (`include/module/um_module.h`).
pub fn vermagic(k: &Kernel) -> String {
    format!("{} {}", k.uts.release, k.uts.machine)
}

/// Taints the kernel with `flag` (one letter of `/proc/modules`); true the first time, when
/// Linux logs why (`add_taint`, `test_taint`).
fn taint_kernel(flag: char) -> bool {
    static TAINTS: Mutex<String> = Mutex::new(String::new());
    let mut t = lock(&TAINTS);
    if t.contains(flag) {
        return false;
    }
    t.push(flag);
    true
}

/// Licences Linux treats as GPL-compatible (`include/linux/license.h`).
fn license_is_gpl_compatible(l: &str) -> bool {
    matches!(
        l,
        "GPL"
            | "GPL v2"
            | "GPL and additional rights"
            | "Dual BSD/GPL"
            | "Dual MIT/GPL"
            | "Dual MPL/GPL"
    )
}

/// The machine a module for this kernel must be built for.
fn native_machine() -> um_module::Machine {
    if um_kernel::arch::ELF_MACHINE == um_module::Machine::Aarch64.elf_machine() {
        um_module::Machine::Aarch64
    } else {
        um_module::Machine::X86_64
    }
}

/// Resolves a module's undefined symbols: the kernel's exports first, then those of live
/// modules, remembering which modules were used.
struct Resolver {
    live: Vec<Arc<Module>>,
    used: Mutex<Vec<Arc<Module>>>,
}

impl um_module::SymbolResolver for Resolver {
    fn resolve(&self, name: &str) -> Option<u64> {
        if let Some(a) = um_modshim::kernel_symbol(name) {
            return Some(a);
        }
        for m in &self.live {
            if let Some((_, a)) = m.exports.iter().find(|(n, _)| n == name) {
                let mut used = lock(&self.used);
                if !used.iter().any(|u| u.id == m.id) {
                    used.push(m.clone());
                }
                return Some(*a);
            }
        }
        None
    }
}

/// Who exports `sym` already: "kernel" or a module's name.
fn exporter_of(sym: &str, live: &[Arc<Module>]) -> Option<String> {
    if um_modshim::kernel_symbol(sym).is_some() {
        return Some("kernel".into());
    }
    live.iter()
        .find(|m| m.exports.iter().any(|(n, _)| n == sym))
        .map(|m| m.name.clone())
}

/// Removes a module that never became live or is being unloaded: what it left registered, its
/// references on other modules, its list entry; its memory goes with the last reference.
fn teardown(m: &Arc<Module>) {
    api::remove_owned(m);
    let (blocks, bytes, fw) = um_modshim::outstanding(m.id);
    if blocks > 0 || fw > 0 {
        log::info!(
            "{}: left {blocks} kmalloc blocks ({bytes} bytes) and {fw} firmware blobs allocated",
            m.name
        );
    }
    m.gone.store(true, Ordering::Release);
    for u in lock(&m.uses).drain(..) {
        u.put();
    }
    lock(&registry().list).retain(|x| x.id != m.id);
    registry().refs.wake_all();
}

/// Loads a module from its ELF image (Linux `load_module` + `do_init_module`). `args` is the
/// parameter string of the insmod line; `flags` the `finit_module` flags.
pub fn load(k: &Arc<Kernel>, image: &[u8], args: &str, flags: u32) -> SysResult<()> {
    let reg = registry();
    let _ = reg.kernel.set(Arc::downgrade(k));
    api::install();
    let _ops = lock(&reg.ops);

    let obj = um_module::ModuleObject::parse(image).map_err(|e| {
        log::warn!("module: {}", e.msg);
        e.errno
    })?;
    let name = obj.name().to_string();
    if name.is_empty() || name.len() >= MODULE_NAME_LEN || name.contains('/') {
        log::warn!("module: bad module name '{name}'");
        return Err(Errno::ENOEXEC);
    }
    if obj.machine() != native_machine() {
        log::warn!(
            "{name}: module is for {}, this kernel is {}",
            obj.machine().name(),
            native_machine().name()
        );
        return Err(Errno::ENOEXEC);
    }
    // check_modinfo: a vermagic that differs is refused; a missing (or ignored) one loads a
    // forced module, which taints the kernel (as with CONFIG_MODULE_FORCE_LOAD).
    let mut taints = String::new();
    let want = vermagic(k);
    match obj.vermagic() {
        Some(v) if flags & MODULE_INIT_IGNORE_VERMAGIC == 0 => {
            if v != want {
                log::error!("{name}: version magic '{v}' should be '{want}'");
                return Err(Errno::ENOEXEC);
            }
        }
        _ => {
            if taint_kernel('F') {
                log::warn!("{name}: bad vermagic: kernel tainted.");
            }
            taints.push('F');
        }
    }
    let info = obj.modinfo().to_vec();
    let license = info
        .iter()
        .find(|(k, _)| k == "license")
        .map(|(_, v)| v.as_str());
    match license {
        Some(l) if license_is_gpl_compatible(l) => {}
        Some(l) => {
            if taint_kernel('P') {
                log::warn!("{name}: module license '{l}' taints kernel.");
            }
            taints.push('P');
        }
        None => {
            if taint_kernel('P') {
                log::warn!("{name}: module license 'unspecified' taints kernel.");
            }
            taints.push('P');
        }
    }
    if !info.iter().any(|(k, v)| k == "intree" && v == "Y") {
        if taint_kernel('O') {
            log::warn!("{name}: loading out-of-tree module taints kernel.");
        }
        taints.push('O');
    }
    if find(&name).is_some() {
        return Err(Errno::EEXIST);
    }

    // Memory: one region per kind, placed before linking (the loader needs the addresses).
    let layout = obj.layout();
    let reqs: Vec<RegionReq> = layout
        .regions
        .iter()
        .map(|r| RegionReq {
            size: r.size,
            align: r.align,
            init: matches!(
                r.kind,
                um_module::RegionKind::InitText | um_module::RegionKind::InitData
            ),
        })
        .collect();
    let (mem, addrs) = ModuleMem::alloc(&reqs).inspect_err(|e| {
        log::warn!("{name}: cannot allocate module memory: {e:?}");
    })?;
    let bases: Vec<(um_module::RegionKind, u64)> = layout
        .regions
        .iter()
        .zip(&addrs)
        .map(|(r, &a)| (r.kind, a))
        .collect();

    let live: Vec<Arc<Module>> = modules()
        .into_iter()
        .filter(|m| m.state() == State::Live)
        .collect();
    let resolver = Resolver {
        live: live.clone(),
        used: Mutex::new(Vec::new()),
    };
    let linked = um_module::link(&obj, &bases, &resolver, args).map_err(|e| {
        // The loader's messages name the module already.
        if e.msg.starts_with(&format!("{name}: ")) {
            log::warn!("{}", e.msg);
        } else {
            log::warn!("{name}: {}", e.msg);
        }
        e.errno
    })?;
    for (sym, _) in &linked.exports {
        if let Some(owner) = exporter_of(sym, &live) {
            log::warn!("{name}: exports duplicate symbol {sym} (owned by {owner})");
            return Err(Errno::ENOEXEC);
        }
    }
    for r in &linked.regions {
        let Some(i) = bases.iter().position(|(kind, _)| *kind == r.kind) else {
            log::warn!("{name}: loader returned a region that was not allocated");
            return Err(Errno::ENOEXEC);
        };
        let prot = match r.prot {
            um_module::Prot::ReadExec => um_modshim::Prot::ReadExec,
            um_module::Prot::Read => um_modshim::Prot::Read,
            um_module::Prot::ReadWrite => um_modshim::Prot::ReadWrite,
        };
        mem.install(i, &r.bytes, prot).inspect_err(|e| {
            log::warn!("{name}: cannot install a module region: {e:?}");
        })?;
    }
    let params = linked
        .params
        .iter()
        .map(|p| Param {
            name: p.name.clone(),
            ty: p.ty,
            perm: p.perm,
            addr: p.addr,
        })
        .collect();
    let (core_size, init_size) = mem.sizes();
    let used = std::mem::take(&mut *lock(&resolver.used));
    for u in &used {
        if !u.try_get() {
            log::warn!("{name}: module {} is going away", u.name);
            for v in used.iter().take_while(|v| v.id != u.id) {
                v.put();
            }
            return Err(Errno::EBUSY);
        }
    }
    let m = Arc::new(Module {
        id: reg.next_id.fetch_add(1, Ordering::Relaxed),
        name: name.clone(),
        state: Mutex::new(State::Coming),
        gone: AtomicBool::new(false),
        refcnt: AtomicI64::new(0),
        uses: Mutex::new(used),
        modinfo: info,
        params,
        exports: linked.exports.clone(),
        core_size,
        init_size,
        taints,
        has_init: linked.init.is_some(),
        exit: linked.exit,
        mem: mem.clone(),
    });
    lock(&reg.list).insert(0, m.clone());

    if let Some(init) = linked.init {
        let r = match um_modshim::call_init(&mem, m.id, init) {
            Ok(r) => r,
            Err(e) => -e.get(),
        };
        if r < 0 {
            *lock(&m.state) = State::Going;
            mem.free_init();
            teardown(&m);
            return Err(Errno::new(-r).unwrap_or(Errno::EINVAL));
        }
        if r > 0 {
            log::warn!(
                "{name}: 'init' suspiciously returned {r}, it should follow 0/-E convention"
            );
        }
    }
    *lock(&m.state) = State::Live;
    mem.free_init();
    log::debug!(
        "{name}: loaded at {:#x}, {core_size} bytes ({init_size} freed after init)",
        mem.base()
    );
    Ok(())
}

/// Unloads module `name` (Linux `delete_module` + `free_module`), with `delete_module(2)`'s
/// flags. `task` is the caller (a blocking unload sleeps on it).
pub fn unload(task: &Arc<Task>, name: &str, flags: u32) -> SysResult<()> {
    let reg = registry();
    let _ops = lock(&reg.ops);
    let m = find(name).ok_or(Errno::ENOENT)?;
    if !users(&m).is_empty() {
        return Err(Errno::EWOULDBLOCK);
    }
    if m.state() != State::Live {
        return Err(Errno::EBUSY);
    }
    let force = flags & O_TRUNC != 0;
    if m.permanent() && !force {
        return Err(Errno::EBUSY);
    }
    {
        let mut st = lock(&m.state);
        if m.refcount() != 0 && !force {
            if flags & O_NONBLOCK != 0 {
                return Err(Errno::EWOULDBLOCK);
            }
            // No O_NONBLOCK: no new references from now on; wait for the last one to go.
            *st = State::Going;
            drop(st);
            let r = wait_event(task, &[&reg.refs], None, || {
                (m.refcount() == 0).then_some(())
            });
            if r.is_err() {
                *lock(&m.state) = State::Live;
                return Err(Errno::EINTR);
            }
        } else {
            *st = State::Going;
        }
    }
    if force && (m.refcount() != 0 || m.permanent()) {
        // try_force_unload: TAINT_FORCED_RMMOD.
        taint_kernel('R');
        log::warn!("{name}: forced unload with {} users", m.refcount());
    }
    if let Some(exit) = m.exit {
        if let Err(e) = um_modshim::call_exit(&m.mem, m.id, exit) {
            log::error!("{name}: cannot call cleanup_module: {e:?}");
        }
    }
    teardown(&m);
    Ok(())
}

/// A module that is not in the registry, for tests of what shows modules.
#[cfg(test)]
pub(crate) fn test_module(name: &str, state: State, refcnt: i64, taints: &str) -> Module {
    let (mem, _) = ModuleMem::alloc(&[]).expect("empty module memory");
    Module {
        id: u64::MAX,
        name: name.into(),
        state: Mutex::new(state),
        gone: AtomicBool::new(false),
        refcnt: AtomicI64::new(refcnt),
        uses: Mutex::new(Vec::new()),
        modinfo: vec![("version".into(), "1.0".into())],
        params: Vec::new(),
        exports: Vec::new(),
        core_size: 12288,
        init_size: 4096,
        taints: taints.into(),
        has_init: true,
        exit: None,
        mem,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn licences() {
        assert!(license_is_gpl_compatible("GPL"));
        assert!(license_is_gpl_compatible("Dual BSD/GPL"));
        assert!(!license_is_gpl_compatible("Proprietary"));
        assert_eq!(State::Live.name(), "live");
    }

    #[test]
    fn references() {
        let m = test_module("t", State::Live, 0, "");
        assert!(m.permanent());
        assert_eq!(m.info("version"), Some("1.0"));
        assert!(m.try_get());
        assert_eq!(m.refcount(), 1);
        *lock(&m.state) = State::Going;
        assert!(!m.try_get(), "no new references while going");
        m.put();
        assert_eq!(m.refcount(), 0);
    }
}
