/work/main/guest/target/x86_64-unknown-linux-musl/release/deps/umt-891a3a13e49d3697.d: umt/src/lib.rs

/work/main/guest/target/x86_64-unknown-linux-musl/release/deps/libumt-891a3a13e49d3697.rlib: umt/src/lib.rs

/work/main/guest/target/x86_64-unknown-linux-musl/release/deps/libumt-891a3a13e49d3697.rmeta: umt/src/lib.rs

umt/src/lib.rs:
