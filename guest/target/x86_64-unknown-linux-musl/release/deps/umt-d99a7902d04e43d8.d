/work/main/guest/target/x86_64-unknown-linux-musl/release/deps/umt-d99a7902d04e43d8.d: umt/src/lib.rs Cargo.toml

/work/main/guest/target/x86_64-unknown-linux-musl/release/deps/libumt-d99a7902d04e43d8.rmeta: umt/src/lib.rs Cargo.toml

umt/src/lib.rs:
Cargo.toml:

# env-dep:CLIPPY_ARGS=-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__
# env-dep:CLIPPY_CONF_DIR
