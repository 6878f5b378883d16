//! The files loadable modules show: `/proc/modules` (Linux `kernel/module/procfs.c`), the
//! `/proc/<name>` entries modules create (`um_proc_create`), and `/sys/module/<name>/`
//! (`kernel/module/sysfs.c`, `kernel/params.c`): `refcnt`, `initstate`, `coresize`,
//! `initsize`, `taint`, `version`, `holders/` and `parameters/<p>` (mode = the parameter's
//! perm; readable, and writable when its perm has write bits).
//!
//! Module nodes get inode numbers derived from the module's registry id (above the range the
//! instance's counter hands out), so a path keeps its number while the module stays loaded.
//! Neighbours: the crate root (the registry these render), `um_fs::procfs` (the nodes and
//! the registry through which [`register`] adds them), `um_fs::sysfs` (shows `/sys/module`).

use crate::{Module, params};
use std::sync::Arc;
use um_fs::procfs::{DynDir, Node, ProcFs, ProcInode, Put};
use um_kernel::kernel::Kernel;
use um_kernel::vfs::mode;
use um_kernel::wait::IoCtx;
use um_uapi::{Errno, SysResult};

/// First inode number of module nodes: `(id << 12) | n` above it.
const MODULE_INO_BASE: u64 = 1 << 40;
/// Inode numbers of module-made `/proc` entries: plus the handle.
const PROC_ENTRY_INO_BASE: u64 = 1 << 39;

/// Taint letters in Linux's order (`taint_flags`: P, F, ..., O, E).
fn taint_letters(t: &str) -> String {
    "PFOE".chars().filter(|c| t.contains(*c)).collect()
}

/// One `/proc/modules` line (`m_show`).
pub fn modules_line(m: &Module) -> String {
    let mut s = format!("{} {} {} ", m.name, m.core_size, m.refcount());
    let users = crate::users(m);
    for u in &users {
        s.push_str(u);
        s.push(',');
    }
    if m.permanent() {
        s.push_str("[permanent],");
    }
    if users.is_empty() && !m.permanent() {
        s.push('-');
    }
    let state = match m.state() {
        crate::State::Going => "Unloading",
        crate::State::Coming => "Loading",
        crate::State::Live => "Live",
    };
    // The address as Linux shows it to readers without CAP_SYSLOG rights (kptr_restrict).
    s.push_str(&format!(" {state} 0x{:016x}", 0));
    let taints = taint_letters(&m.taints);
    let mark = match m.state() {
        crate::State::Going => "-",
        crate::State::Coming => "+",
        crate::State::Live => "",
    };
    if !taints.is_empty() || !mark.is_empty() {
        s.push_str(&format!(" ({taints}{mark})"));
    }
    s.push('\n');
    s
}

/// `/proc/modules`.
fn proc_modules(fs: &Arc<ProcFs>) -> Arc<ProcInode> {
    ProcInode::file(fs, |_, _| {
        Ok(crate::modules()
            .iter()
            .map(|m| modules_line(m))
            .collect::<String>()
            .into_bytes())
    })
}

/// The inode of a module-made `/proc` entry.
fn proc_entry_inode(fs: &Arc<ProcFs>, e: Arc<crate::api::ProcEntry>, ino: u64) -> Arc<ProcInode> {
    ProcInode::new(
        fs,
        ino,
        mode::S_IFREG | 0o444,
        Node::File {
            render: Box::new(move |_, _| crate::api::proc_render(&e)),
            put: None,
        },
    )
}

/// The module-made `/proc/<name>` entries, computed entries of the procfs root
/// (`procfs::registry::register_root_dyn`).
struct ProcEntries;

impl DynDir for ProcEntries {
    fn entries(&self, fs: &Arc<ProcFs>) -> Vec<(Vec<u8>, Arc<ProcInode>)> {
        crate::api::proc_entries()
            .into_iter()
            .enumerate()
            .map(|(i, e)| {
                let name = e.name.clone();
                (
                    name,
                    proc_entry_inode(fs, e, PROC_ENTRY_INO_BASE + i as u64),
                )
            })
            .collect()
    }
}

/// Registers this crate's procfs and sysfs files (at boot, before init can mount either):
/// `/proc/modules`, the `/proc/<name>` entries modules make, `/sys/module` and
/// `/proc/sys/kernel/modules_disabled`.
pub fn register() {
    use um_fs::procfs::registry;
    registry::proc_create("", "modules", proc_modules);
    registry::register_root_dyn(Arc::new(ProcEntries));
    registry::proc_create("sysfs", "module", sys_module_dir);
    registry::register_sysctl("sys/kernel", |fs| {
        vec![(
            "modules_disabled",
            // kernel/sysctl.c: proc_dointvec_minmax with min = max = 1, so only the
            // transition 0 -> 1 (writing 1) is accepted.
            ProcInode::file_rw(
                fs,
                |_, _| {
                    let v = u8::from(crate::modules_disabled());
                    Ok(format!("{v}\n").into_bytes())
                },
                |_, _, data| {
                    let s = std::str::from_utf8(data).map_err(|_| Errno::EINVAL)?;
                    if s.trim().parse::<i64>().map_err(|_| Errno::EINVAL)? != 1 {
                        return Err(Errno::EINVAL);
                    }
                    crate::disable_modules();
                    Ok(data.len())
                },
            ),
        )]
    });
}

/// Hands out the inode numbers of one module's nodes.
struct Inos(u64);

impl Inos {
    fn next(&mut self) -> u64 {
        self.0 += 1;
        self.0
    }
}

/// A read-only file of module `id`'s state.
fn mod_file(
    fs: &Arc<ProcFs>,
    inos: &mut Inos,
    id: u64,
    f: impl Fn(&Module) -> String + Send + Sync + 'static,
) -> Arc<ProcInode> {
    ProcInode::new(
        fs,
        inos.next(),
        mode::S_IFREG | 0o444,
        Node::File {
            render: Box::new(move |_, _| {
                let m = crate::by_id(id).ok_or(Errno::ENODEV)?;
                Ok(f(&m).into_bytes())
            }),
            put: None,
        },
    )
}

fn dir_with_ino(
    fs: &Arc<ProcFs>,
    ino: u64,
    entries: Vec<(String, Arc<ProcInode>)>,
) -> Arc<ProcInode> {
    ProcInode::new(
        fs,
        ino,
        mode::S_IFDIR | 0o755,
        Node::Dir {
            entries: entries
                .into_iter()
                .map(|(n, i)| (n.into_bytes(), i))
                .collect(),
            pids: false,
        },
    )
}

/// The text of parameter `p` of module `m` (`param_attr_show`).
fn param_show(m: &Module, p: &crate::Param) -> SysResult<Vec<u8>> {
    let mut raw = vec![0u8; p.ty.size()];
    if !m.mem().read(p.addr, &mut raw) {
        return Err(Errno::EIO);
    }
    if p.ty == params::ParamType::Charp {
        let ptr = u64::from_le_bytes(raw.try_into().map_err(|_| Errno::EIO)?);
        let mut s = if ptr == 0 {
            b"(null)".to_vec()
        } else {
            um_modshim::read_kernel_cstr(ptr, 4095).ok_or(Errno::EIO)?
        };
        s.push(b'\n');
        return Ok(s);
    }
    Ok(params::format(p.ty, &raw).into_bytes())
}

/// A write to parameter `p` of module `m` (`param_attr_store`).
fn param_store(m: &Module, p: &crate::Param, data: &[u8]) -> SysResult<usize> {
    let text = std::str::from_utf8(data).map_err(|_| Errno::EINVAL)?;
    let bytes = if p.ty == params::ParamType::Charp {
        let s = text.strip_suffix('\n').unwrap_or(text);
        let ptr = um_modshim::alloc_cstring(m.id, s.as_bytes()).ok_or(Errno::ENOMEM)?;
        ptr.to_le_bytes().to_vec()
    } else {
        params::parse(p.ty, text)?
    };
    if !m.mem().write(p.addr, &bytes) {
        return Err(Errno::EIO);
    }
    Ok(data.len())
}

/// `/sys/module/<name>/` of module `m`.
fn module_dir(fs: &Arc<ProcFs>, m: &Module) -> Arc<ProcInode> {
    let base = MODULE_INO_BASE + (m.id << 12);
    let mut inos = Inos(base);
    let id = m.id;
    let mut entries: Vec<(String, Arc<ProcInode>)> = vec![
        (
            "refcnt".into(),
            mod_file(fs, &mut inos, id, |m| format!("{}\n", m.refcount())),
        ),
        (
            "initstate".into(),
            mod_file(fs, &mut inos, id, |m| format!("{}\n", m.state().name())),
        ),
        (
            "coresize".into(),
            mod_file(fs, &mut inos, id, |m| format!("{}\n", m.core_size)),
        ),
        (
            "initsize".into(),
            mod_file(fs, &mut inos, id, |m| format!("{}\n", m.init_size)),
        ),
        (
            "taint".into(),
            mod_file(fs, &mut inos, id, |m| {
                format!("{}\n", taint_letters(&m.taints))
            }),
        ),
    ];
    if m.info("version").is_some() {
        entries.push((
            "version".into(),
            mod_file(fs, &mut inos, id, |m| {
                format!("{}\n", m.info("version").unwrap_or(""))
            }),
        ));
    }
    let holders: Vec<(String, Arc<ProcInode>)> = crate::users(m)
        .into_iter()
        .map(|u| {
            let link = ProcInode::new(
                fs,
                inos.next(),
                mode::S_IFLNK | 0o777,
                Node::Link(format!("../../{u}").into_bytes()),
            );
            (u, link)
        })
        .collect();
    let holders_ino = inos.next();
    entries.push(("holders".into(), dir_with_ino(fs, holders_ino, holders)));
    let visible: Vec<&crate::Param> = m.params.iter().filter(|p| p.perm & 0o777 != 0).collect();
    if !visible.is_empty() {
        let mut files = Vec::new();
        for p in visible {
            let (pr, pw) = (p.clone(), p.clone());
            let put: Option<Put> = (p.perm & 0o222 != 0).then(|| {
                Box::new(move |_: &Arc<Kernel>, _: &IoCtx<'_>, data: &[u8]| {
                    let m = crate::by_id(id).ok_or(Errno::ENODEV)?;
                    param_store(&m, &pw, data)
                }) as Put
            });
            let node = ProcInode::new(
                fs,
                inos.next(),
                mode::S_IFREG | (p.perm & 0o777),
                Node::File {
                    render: Box::new(move |_, _| {
                        let m = crate::by_id(id).ok_or(Errno::ENODEV)?;
                        param_show(&m, &pr)
                    }),
                    put,
                },
            );
            files.push((p.name.clone(), node));
        }
        let pino = inos.next();
        entries.push(("parameters".into(), dir_with_ino(fs, pino, files)));
    }
    dir_with_ino(fs, base, entries)
}

/// `/sys/module`: one directory per loaded module.
struct SysModule;

impl DynDir for SysModule {
    /// The loaded modules, then the built-in ones with parameters that other crates
    /// register in the procfs registry's "sysfs/module" (Linux `param_sysfs_builtin`:
    /// `/sys/module/overlay/parameters` of a built-in overlayfs).
    fn entries(&self, fs: &Arc<ProcFs>) -> Vec<(Vec<u8>, Arc<ProcInode>)> {
        let mut v: Vec<(Vec<u8>, Arc<ProcInode>)> = crate::modules()
            .iter()
            .map(|m| (m.name.clone().into_bytes(), module_dir(fs, m)))
            .collect();
        for (name, inode) in um_fs::procfs::registry::entries(fs, "sysfs/module") {
            if !v.iter().any(|(n, _)| n == name.as_bytes()) {
                v.push((name.as_bytes().to_vec(), inode));
            }
        }
        v
    }
}

/// The `/sys/module` directory.
pub fn sys_module_dir(fs: &Arc<ProcFs>) -> Arc<ProcInode> {
    ProcInode::new(
        fs,
        fs.alloc_ino(),
        mode::S_IFDIR | 0o755,
        Node::Dyn(Box::new(SysModule)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_modules_lines() {
        use crate::{State, test_module};
        // Init without exit: "[permanent]" instead of "-".
        let m = test_module("umt", State::Live, 0, "OP");
        assert_eq!(
            modules_line(&m),
            "umt 12288 0 [permanent], Live 0x0000000000000000 (PO)\n"
        );
        let m = test_module("umt", State::Going, 2, "");
        assert_eq!(
            modules_line(&m),
            "umt 12288 2 [permanent], Unloading 0x0000000000000000 (-)\n"
        );
    }

    #[test]
    fn taints_in_linux_order() {
        assert_eq!(taint_letters("OFP"), "PFO");
        assert_eq!(taint_letters(""), "");
    }
}
