//! `linux`: the kernel as a host program (package `um-bin`).
//!
//! Parses the command line ([`cmdline`]), probes the host and logs each probe, builds the
//! kernel object (physical memory, the stub executable, the syscall table assembled from the
//! subsystems), mounts the root and starts init on a host thread of its own. When init ends,
//! `linux` ends with init's exit status, as the kernel's "Attempted to kill init!" panic.
#![forbid(unsafe_code)]

mod boot;
mod cmdline;
mod run;
mod syscalls;

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("--version" | "-V") => {
            use std::io::Write;
            let _ = writeln!(
                std::io::stdout(),
                "linux (um-bin) {} for {}, reporting Linux {}",
                env!("CARGO_PKG_VERSION"),
                std::env::consts::ARCH,
                boot::UTS_RELEASE
            );
            return;
        }
        // `linux run ROOTFS [CMD...]`: a kernel command line made from a short one.
        Some("run") => match run::args(&args[1..]) {
            Ok(Some(words)) => args = words,
            Ok(None) => return,
            Err(e) => fail(&e),
        },
        _ => {}
    }
    let cmd = match cmdline::parse(args) {
        Ok(c) => c,
        Err(e) => fail(&e),
    };
    if cmd.help {
        use std::io::Write;
        let _ = std::io::stdout().write_all(cmdline::HELP.as_bytes());
        return;
    }
    if let Err(e) = boot::validate(&cmd) {
        fail(&e);
    }
    let code = match boot::boot(cmd) {
        Ok(code) => code,
        Err(e) => fail(&e),
    };
    um_os_linux::term::restore();
    std::process::exit(code);
}

/// One clear error line and exit status 2.
fn fail(msg: &str) -> ! {
    // The host terminal may be in raw mode (the console): put it back before the message.
    um_os_linux::term::restore();
    eprintln!("linux: error: {msg}");
    std::process::exit(2)
}
