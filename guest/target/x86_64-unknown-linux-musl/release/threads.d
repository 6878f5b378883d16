/work/main/guest/target/x86_64-unknown-linux-musl/release/threads: /work/main/guest/threads/src/main.rs
