//! `linux-sandbox`: runs a program (normally `linux`) inside a host seccomp filter like an
//! Android app's: a syscall numbered -1 kills the process, and with `--no-execveat` `execveat`
//! fails with EACCES (as exec of a memfd does there). See `um_os_linux::sandbox`.
//!
//! Usage: `linux-sandbox [--no-execveat] [--] PROGRAM [ARGS...]`
//!
//! Inside it the ptrace engine's cancel path cannot work (the boot probe finds it unusable and
//! `nosysemu` is refused with a clear line), `nocancel`, `PTRACE_SYSEMU` and the seccomp engine
//! work, and with `--no-execveat` stubs start only with `stub_exe=PATH`.
#![forbid(unsafe_code)]

use std::os::unix::process::CommandExt;

const USAGE: &str = "usage: linux-sandbox [--no-execveat] [--] PROGRAM [ARGS...]";

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut refuse_execveat = false;
    while let Some(a) = args.first() {
        match a.as_str() {
            "--no-execveat" => refuse_execveat = true,
            "--" => {
                args.remove(0);
                break;
            }
            "-h" | "--help" => {
                use std::io::Write;
                let _ = writeln!(std::io::stdout(), "{USAGE}");
                return;
            }
            s if s.starts_with('-') => fail(&format!("unknown option {s:?}\n{USAGE}")),
            _ => break,
        }
        args.remove(0);
    }
    let Some(program) = args.first().cloned() else {
        fail(USAGE);
    };
    if let Err(e) = um_os_linux::sandbox::enter(refuse_execveat) {
        fail(&format!("cannot install the sandbox filter: {e}"));
    }
    let e = std::process::Command::new(&program).args(&args[1..]).exec();
    fail(&format!("cannot run {program}: {e}"));
}

fn fail(msg: &str) -> ! {
    eprintln!("linux-sandbox: {msg}");
    std::process::exit(2)
}
