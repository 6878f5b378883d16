//! eBPF for the cgroup v2 device controller (Linux `kernel/bpf/syscall.c`,
//! `kernel/bpf/cgroup.c`, bpf(2)): what runc and crun need to confine a container's devices.
//!
//! Owns: loaded programs ([`Prog`], each behind an `anon_inode:bpf-prog` descriptor and in an
//! id table of weak references, as `prog_idr`), the programs attached to each cgroup with
//! `BPF_CGROUP_DEVICE` ([`Attached`], Linux `cgroup->bpf.progs[atype]` and `flags`), the
//! effective program array of a group (`compute_effective_progs`) and the device check
//! registered with [`um_kernel::devcgroup`] (`__cgroup_bpf_check_dev_permission`). Only
//! `BPF_PROG_TYPE_CGROUP_DEVICE` programs load; [`verifier`] checks and runs them.
//! Neighbours: [`sys`] (the bpf(2) commands), `um_cgroup` (the hierarchy, a cgroup2
//! directory's group), `um_kernel::devcgroup` (the hook the file layer calls on device
//! opens and mknod), `um-bin` (calls [`init`] and registers [`sys::register`]).
//!
//! An attachment holds its program: closing the descriptor does not detach it. Attachments
//! of removed groups are dropped at the next attach.

#![forbid(unsafe_code)]

pub mod sys;
pub mod verifier;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use um_cgroup::tree::CgId;
use um_kernel::devcgroup::DevAccess;
use um_kernel::task::lock;
use um_uapi::abi::bpf::{BPF_F_ALLOW_MULTI, BpfCgroupDevCtx, BpfInsn};
use um_uapi::abi::pod::Pod;

/// A loaded program (Linux `struct bpf_prog` + `bpf_prog_aux`).
#[derive(Debug)]
pub struct Prog {
    pub id: u32,
    pub prog_type: u32,
    pub insns: Vec<BpfInsn>,
    pub name: [u8; 16],
    pub gpl: bool,
    /// `CLOCK_BOOTTIME` nanoseconds at load.
    pub load_time: u64,
    pub uid: u32,
    pub tag: [u8; 8],
}

impl Prog {
    /// Runs the program on a device access: whether it allows it (`R0 != 0`).
    pub fn allows(&self, a: DevAccess) -> bool {
        let ctx = BpfCgroupDevCtx {
            access_type: a.access << 16 | a.kind,
            major: a.major,
            minor: a.minor,
        };
        let b: [u8; 12] = ctx.as_bytes().try_into().unwrap_or([0; 12]);
        verifier::run(&self.insns, &b) != 0
    }
}

/// One group's `BPF_CGROUP_DEVICE` programs and attach flags.
#[derive(Default, Debug)]
pub struct Attached {
    pub progs: Vec<Arc<Prog>>,
    /// `BPF_F_ALLOW_OVERRIDE` / `BPF_F_ALLOW_MULTI` as attached (`cgrp->bpf.flags`).
    pub flags: u32,
}

/// Everything loaded and attached.
#[derive(Default)]
pub struct State {
    /// id -> program while any reference lives (`prog_idr`).
    pub ids: BTreeMap<u32, Weak<Prog>>,
    pub next_id: u32,
    pub cgroups: HashMap<CgId, Attached>,
}

/// The state, behind one lock (Linux `cgroup_mutex` for attachments, `prog_idr_lock`).
pub fn state() -> MutexGuard<'static, State> {
    static S: OnceLock<Mutex<State>> = OnceLock::new();
    lock(S.get_or_init(Default::default))
}

impl State {
    /// A new id (`bpf_prog_alloc_id`: cyclic from 1, skipping live ones).
    pub fn alloc_id(&mut self) -> u32 {
        self.ids.retain(|_, w| w.strong_count() > 0);
        loop {
            self.next_id = self.next_id.checked_add(1).unwrap_or(1).max(1);
            if !self.ids.contains_key(&self.next_id) {
                break;
            }
        }
        self.next_id
    }

    /// The live program with id `id`.
    pub fn by_id(&self, id: u32) -> Option<Arc<Prog>> {
        self.ids.get(&id).and_then(Weak::upgrade)
    }

    /// The effective programs of group `cg` (`compute_effective_progs`): the nearest group
    /// with programs contributes all of them, and each ancestor above it whose attach flags
    /// include `BPF_F_ALLOW_MULTI` adds its own.
    pub fn effective(&self, h: &um_cgroup::tree::Hierarchy, cg: CgId) -> Vec<Arc<Prog>> {
        let mut out = Vec::new();
        let mut cur = Some(cg);
        while let Some(c) = cur {
            if let Some(a) = self.cgroups.get(&c)
                && (out.is_empty() || a.flags & BPF_F_ALLOW_MULTI != 0)
            {
                out.extend(a.progs.iter().cloned());
            }
            cur = h.get(c).ok().and_then(|g| g.parent);
        }
        out
    }
}

/// `__cgroup_bpf_check_dev_permission`: every effective program of the process's group must
/// allow the access.
fn check(pid: u32, access: DevAccess) -> bool {
    let progs = {
        let h = um_cgroup::hierarchy();
        let cg = h.group_of(pid);
        state().effective(&h, cg)
    };
    progs.iter().all(|p| p.allows(access))
}

/// Installs the device check (called once at boot, after `um_cgroup::init`).
pub fn init() {
    um_kernel::devcgroup::set_check(check);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::{attach, detach};
    use um_cgroup::tree::{Hierarchy, ROOT};
    use um_uapi::Errno;
    use um_uapi::abi::bpf::{
        BPF_DEVCG_ACC_READ, BPF_DEVCG_DEV_CHAR, BPF_F_ALLOW_OVERRIDE, BPF_F_REPLACE,
        BPF_PROG_TYPE_CGROUP_DEVICE,
    };

    /// A program returning `ret` (`r0 = ret; exit`).
    fn prog(st: &mut State, ret: i32) -> Arc<Prog> {
        let id = st.alloc_id();
        let p = Arc::new(Prog {
            id,
            prog_type: BPF_PROG_TYPE_CGROUP_DEVICE,
            insns: vec![
                BpfInsn {
                    code: 0xb7,
                    regs: 0,
                    off: 0,
                    imm: ret,
                },
                BpfInsn {
                    code: 0x95,
                    regs: 0,
                    off: 0,
                    imm: 0,
                },
            ],
            name: [0; 16],
            gpl: false,
            load_time: 0,
            uid: 0,
            tag: [0; 8],
        });
        st.ids.insert(id, Arc::downgrade(&p));
        p
    }

    fn tree() -> (Hierarchy, CgId, CgId) {
        let mut h = Hierarchy::default();
        let a = h.mkdir(ROOT, b"a", 0, 0, 0o755, |_| false).unwrap();
        let b = h.mkdir(a, b"b", 0, 0, 0o755, |_| false).unwrap();
        (h, a, b)
    }

    const NULL: DevAccess = DevAccess {
        kind: BPF_DEVCG_DEV_CHAR,
        major: 1,
        minor: 3,
        access: BPF_DEVCG_ACC_READ,
    };

    #[test]
    fn attach_rules_follow_cgroup_bpf_attach() {
        let (h, a, b) = tree();
        let mut st = State::default();
        let (allow, deny) = (prog(&mut st, 1), prog(&mut st, 0));
        // Invalid combinations.
        let both = BPF_F_ALLOW_OVERRIDE | BPF_F_ALLOW_MULTI;
        assert_eq!(
            attach(&mut st, &h, a, allow.clone(), None, both),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            attach(
                &mut st,
                &h,
                a,
                allow.clone(),
                Some(deny.clone()),
                BPF_F_REPLACE
            ),
            Err(Errno::EINVAL)
        );
        // A non-overridable program in `a` forbids any in `b`.
        attach(&mut st, &h, a, deny.clone(), None, 0).unwrap();
        assert_eq!(
            attach(&mut st, &h, b, allow.clone(), None, 0),
            Err(Errno::EPERM)
        );
        // Single mode replaces; changing the mode of a non-empty list is EPERM.
        attach(&mut st, &h, a, allow.clone(), None, 0).unwrap();
        assert_eq!(st.cgroups[&a].progs.len(), 1);
        assert_eq!(
            attach(&mut st, &h, a, deny.clone(), None, BPF_F_ALLOW_MULTI),
            Err(Errno::EPERM)
        );
        // Legacy detach needs no program; then `a` is empty, and multi mode may start.
        detach(&mut st, a, None).unwrap();
        assert_eq!(detach(&mut st, a, None), Err(Errno::ENOENT));
        attach(&mut st, &h, a, allow.clone(), None, BPF_F_ALLOW_MULTI).unwrap();
        assert_eq!(
            attach(&mut st, &h, a, allow.clone(), None, BPF_F_ALLOW_MULTI),
            Err(Errno::EINVAL),
            "the same program twice"
        );
        // Under a multi parent the child may attach; both run for the child.
        attach(&mut st, &h, b, allow.clone(), None, BPF_F_ALLOW_MULTI).unwrap();
        assert_eq!(st.effective(&h, b).len(), 2);
        assert!(st.effective(&h, b).iter().all(|p| p.allows(NULL)));
        // Replace the parent's program with the denying one: the child is denied too.
        let multi_replace = BPF_F_ALLOW_MULTI | BPF_F_REPLACE;
        attach(
            &mut st,
            &h,
            a,
            deny.clone(),
            Some(allow.clone()),
            multi_replace,
        )
        .unwrap();
        assert!(!st.effective(&h, b).iter().all(|p| p.allows(NULL)));
        assert_eq!(
            attach(
                &mut st,
                &h,
                a,
                allow.clone(),
                Some(allow.clone()),
                multi_replace
            ),
            Err(Errno::ENOENT),
            "replacing a program that is not attached"
        );
        // Multi detach needs the program.
        assert_eq!(detach(&mut st, a, None), Err(Errno::EINVAL));
        detach(&mut st, a, Some(&deny)).unwrap();
        assert_eq!(st.effective(&h, b).len(), 1);
        // The root's group is unaffected.
        assert!(st.effective(&h, ROOT).is_empty());
    }

    #[test]
    fn a_non_multi_ancestor_is_overridden_by_the_nearest_group() {
        let (h, a, b) = tree();
        let mut st = State::default();
        let (allow, deny) = (prog(&mut st, 1), prog(&mut st, 0));
        attach(&mut st, &h, a, deny.clone(), None, BPF_F_ALLOW_OVERRIDE).unwrap();
        attach(&mut st, &h, b, allow.clone(), None, 0).unwrap();
        let eff = st.effective(&h, b);
        assert_eq!(eff.len(), 1);
        assert!(Arc::ptr_eq(&eff[0], &allow));
        assert!(Arc::ptr_eq(&st.effective(&h, a)[0], &deny));
        // Ids: live programs are found, dropped ones are not.
        let id = deny.id;
        assert!(st.by_id(id).is_some());
        detach(&mut st, a, None).unwrap();
        drop(deny);
        assert!(st.by_id(id).is_none());
    }
}
