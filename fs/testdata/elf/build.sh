#!/bin/sh
# Rebuilds the binfmt_elf test fixtures (x86_64). Output is checked in so tests need no compiler.
set -e
cd "$(dirname "$0")"
CFLAGS="-O2 -nostdlib -fno-asynchronous-unwind-tables -fno-stack-protector -Wl,--build-id=none"
# ET_EXEC, no interpreter, fixed addresses (0x400000).
cc $CFLAGS -static -no-pie -fno-pie -o static-exec start.c
# ET_DYN without PT_INTERP (static-pie).
cc $CFLAGS -static-pie -fpie -o static-pie start.c
# static-pie linked for 16K pages (arm64 16K granule layout).
cc $CFLAGS -static-pie -fpie -Wl,-z,max-page-size=0x4000 -o static-pie-16k start.c
strip static-exec static-pie static-pie-16k
