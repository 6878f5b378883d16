//! Gate: boot a static guest program as init (both the static-pie and the non-PIE ET_EXEC build of
//! guest/hello) and check that argv, auxv, getpid and the console work, and that boot found the
//! host's vDSO usable from the guest's.

use um_tests::{Boot, for_each_engine, guest_program};

fn boot_hello(program: &str) {
    let init = guest_program(program);
    for_each_engine(|engine| {
        let out = Boot::new()
            .engine(engine)
            .init(&init)
            .args(&["a", "b", "c"])
            .run();
        out.assert_ok("UM-HELLO-OK argc=4");
        for line in [
            format!("argv[0]={init}").as_str(),
            "argv[1]=a",
            "argv[2]=b",
            "argv[3]=c",
            "hello: AT_RANDOM=non-null",
            "hello: getpid>0 true",
            // The guest's fd 2 is the console too, so its stderr line shows up on stdout.
            "hello: stderr ok",
        ] {
            um_tests::assert_marker(&out, line);
        }
        let pagesz = out
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix("hello: AT_PAGESZ="))
            .unwrap_or_default()
            .to_string();
        if !matches!(pagesz.as_str(), "4096" | "16384" | "65536") {
            panic!("AT_PAGESZ is `{pagesz}`\n{}", out.report());
        }
        out.assert_exit_code(0);
        out.assert_init_exit_logged();
        // The guest's vDSO calls the host's time functions (this host has a vDSO, and stubs
        // get it at one place): see um_kernel::arch::vdso.
        if !out.stderr.contains("call the host's vDSO") {
            panic!("the vDSO does not forward to the host's\n{}", out.report());
        }
    });
}

#[test]
fn hello_static_pie() {
    boot_hello("hello");
}

#[test]
fn hello_static_nopie() {
    boot_hello("hello-static-nopie");
}
