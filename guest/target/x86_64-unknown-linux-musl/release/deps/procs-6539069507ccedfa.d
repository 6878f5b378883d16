/work/main/guest/target/x86_64-unknown-linux-musl/release/deps/procs-6539069507ccedfa.d: procs/src/main.rs

/work/main/guest/target/x86_64-unknown-linux-musl/release/deps/procs-6539069507ccedfa: procs/src/main.rs

procs/src/main.rs:
