/work/main/guest/target/x86_64-unknown-linux-musl/release/procs: /work/main/guest/procs/src/main.rs /work/main/guest/umt/src/lib.rs
