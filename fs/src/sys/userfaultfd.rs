//! userfaultfd(2) (Linux `fs/userfaultfd.c` `SYSCALL_DEFINE1(userfaultfd)`). The descriptor,
//! its ioctls and the fault hand-off are [`crate::userfaultfd`].

use um_kernel::syscall::{SyscallCtx, SyscallTable};
use um_uapi::SysResult;

fn userfaultfd(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    crate::userfaultfd::new_fd(c, a[0] as u32)
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("userfaultfd", userfaultfd);
}
