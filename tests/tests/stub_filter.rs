//! Gate: the seccomp engine's stub filter bites. A guest program (guest/stubjump) jumps into the
//! stub's code page, which is mapped in its host process just above the guest's address space,
//! and makes a syscall from there that the stub itself never makes (getpid). The filter allows
//! only the stub's own calls from that page, so the host kills the stub process: the guest
//! process dies of SIGKILL, the kernel logs that it lost the stub, and carries on (the same
//! program then forks another child and waits for it).

use um_tests::{Boot, guest_program};

/// The stub base the kernel logs at boot (`guest: TASK_SIZE 0x..., stub at 0x...`).
fn stub_base(log: &str) -> String {
    log.lines()
        .find_map(|l| l.split("stub at ").nth(1))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| panic!("no `stub at` line in the kernel log:\n{log}"))
}

#[test]
fn guest_jumping_into_the_stub_page_is_killed() {
    let probe = Boot::new().engine(&["seccomp=on"]).args(&["true"]).run();
    probe.assert_exit_code(0);
    let base = stub_base(&probe.stderr);
    let out = Boot::new()
        .engine(&["seccomp=on"])
        .init(&guest_program("stubjump"))
        .args(&[base.as_str()])
        .run();
    out.assert_ok("UM-STUBJUMP-OK");
    um_tests::assert_marker(&out, "stubjump: child killed SIGKILL");
    um_tests::assert_marker(&out, "stubjump: kernel alive");
    assert!(
        out.stderr.contains("lost its stub process"),
        "the kernel did not log the stub's death:\n{}",
        out.report()
    );
}

/// Issue 21: an unprivileged guest jumps to every syscall instruction of the stub's code pages
/// with the registers of every call that could step outside its address space (mmap of each
/// fd over a region of its own, mprotect/munmap/madvise of stub pages, close/read/write of the
/// stub's fds, futex ops that move waiters, clone of the address space, kill of host pid 1),
/// and checks that no call succeeded and that the secret its root parent keeps never shows in
/// its memory. In the seccomp engine most probes die of the filter; in the ptrace engines the
/// calls are ordinary guest syscalls that fail. The kernel carries on in every engine.
#[test]
fn hostile_guest_cannot_use_the_stub_to_leave_its_address_space() {
    let probe = Boot::new().engine(&["seccomp=on"]).args(&["true"]).run();
    probe.assert_exit_code(0);
    let base = stub_base(&probe.stderr);
    um_tests::for_each_engine(|engine| {
        let out = Boot::new()
            .engine(engine)
            .init(&guest_program("stubjump"))
            .args(&if engine == ["seccomp=on"] {
                vec![base.as_str(), "hostile", "strict"]
            } else {
                vec![base.as_str(), "hostile"]
            })
            .timeout(std::time::Duration::from_secs(300))
            .run();
        out.assert_ok("UM-STUBJUMP-HOSTILE-OK");
        um_tests::assert_marker(&out, "stubjump: kernel alive");
        assert!(
            !out.stdout.contains("BREACH"),
            "a probe breached isolation in {engine:?}:\n{}",
            out.report()
        );
    });
}

#[test]
fn stub_base_is_parsed() {
    assert_eq!(
        stub_base("[ 0.1] guest: TASK_SIZE 0x7f8000000000, stub at 0x7f8000000000\n"),
        "0x7f8000000000"
    );
}
