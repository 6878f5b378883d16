/*
 * Guest test `pacfork` (arm64): fork from code built with return-address signing
 * (-mbranch-protection=pac-ret, so every non-leaf function here starts with paciasp and returns
 * through autiasp). A guest fork makes a new stub process by exec, and exec gives a process
 * fresh pointer-authentication keys: if the stub kept them enabled, the child would return from
 * do_fork() through autiasp with a key that did not sign the return address, and on FEAT_FPAC
 * hardware (qemu -cpu max) die of SIGILL at once (um-arm64-notes.md, "PAC"). The parent checks
 * that children, and grandchildren, return through signed frames and exit cleanly.
 *
 * Built by tools/arm64/lane with zig cc -target aarch64-linux-musl -mbranch-protection=pac-ret
 * (the lane checks that the binary holds paciasp instructions). Prints UM-PACFORK-OK.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile int sink;

/* Non-leaf and not inlined, so it signs and authenticates its own return address. */
__attribute__((noinline)) static int depth(int n)
{
    if (n == 0)
        return 0;
    sink = n;
    return depth(n - 1) + n;
}

/* The return from here happens in the child with the frame the parent signed before fork. */
__attribute__((noinline)) static pid_t do_fork(void)
{
    pid_t p = fork();
    sink = (int)p;
    return p;
}

__attribute__((noinline)) static int check_child(pid_t p, const char *what)
{
    int st = 0;
    if (waitpid(p, &st, 0) != p) {
        printf("pacfork: FAIL waitpid (%s)\n", what);
        return 1;
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 42) {
        if (WIFSIGNALED(st))
            printf("pacfork: FAIL %s killed by signal %d\n", what, WTERMSIG(st));
        else
            printf("pacfork: FAIL %s exit status %d\n", what, WEXITSTATUS(st));
        return 1;
    }
    printf("pacfork: %s returned through signed frames\n", what);
    return 0;
}

__attribute__((noinline)) static int child_body(int grandchild)
{
    if (depth(10) != 55)
        return 1;
    if (grandchild) {
        fflush(stdout);
        pid_t g = do_fork();
        if (g == 0) {
            _exit(depth(5) == 15 ? 42 : 1);
        }
        if (g < 0 || check_child(g, "grandchild") != 0)
            return 1;
    }
    return 42;
}

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    for (int i = 0; i < 3; i++) {
        pid_t p = do_fork();
        if (p < 0) {
            printf("pacfork: FAIL fork\n");
            return 1;
        }
        if (p == 0)
            _exit(child_body(i == 2));
        if (check_child(p, i == 2 ? "child (with a grandchild)" : "child") != 0)
            return 1;
    }
    printf("UM-PACFORK-OK\n");
    return 0;
}
