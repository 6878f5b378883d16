/*
 * sigsys-floor: the host's own SECCOMP_RET_TRAP trap-and-return floor, for tools/perfbench.
 *
 * Installs a seccomp filter that returns SECCOMP_RET_TRAP for getppid (and allows everything
 * else, killing on a foreign audit arch) and a SIGSYS handler that just returns, then times
 * N getppid calls: each one enters the host kernel, is trapped, delivers SIGSYS, runs the empty
 * handler and rt_sigreturns. That is the least a seccomp-based user-mode kernel can pay per guest
 * syscall before doing any work. For reference it first times N plain getppid calls.
 *
 * Output (same format as the guest perfbench):
 *   perfbench row=syscall-plain iters=N total_ns=T per_op_ns=P
 *   perfbench row=syscall iters=N total_ns=T per_op_ns=P        (trapped: the floor)
 * Usage: sigsys-floor [ITERS]   (default 1000000)
 * Built by tools/perfbench with: gcc -O2 -o build/perfbench/sigsys-floor sigsys-floor.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#define AUDIT_ARCH_NATIVE AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define AUDIT_ARCH_NATIVE AUDIT_ARCH_AARCH64
#else
#error "unsupported architecture"
#endif

static volatile unsigned long traps;

static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)si;
    (void)uc;
    traps++;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void report(const char *row, unsigned long n, uint64_t ns)
{
    printf("perfbench row=%s iters=%lu total_ns=%llu per_op_ns=%.2f\n", row, n,
           (unsigned long long)ns, (double)ns / (double)n);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000;
    if (n == 0) {
        fprintf(stderr, "usage: sigsys-floor [ITERS]\n");
        return 2;
    }

    uint64_t t0 = now_ns();
    for (unsigned long i = 0; i < n; i++)
        syscall(SYS_getppid);
    report("syscall-plain", n, now_ns() - t0);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigsys;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSYS, &sa, NULL) != 0) {
        perror("sigsys-floor: sigaction");
        return 1;
    }

    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_NATIVE, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {
        .len = (unsigned short)(sizeof filter / sizeof filter[0]),
        .filter = filter,
    };
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        perror("sigsys-floor: PR_SET_NO_NEW_PRIVS");
        return 1;
    }
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
        perror("sigsys-floor: PR_SET_SECCOMP");
        return 1;
    }

    t0 = now_ns();
    for (unsigned long i = 0; i < n; i++)
        syscall(SYS_getppid);
    uint64_t ns = now_ns() - t0;
    if (traps != n) {
        fprintf(stderr, "sigsys-floor: %lu traps for %lu calls\n", traps, n);
        return 1;
    }
    report("syscall", n, ns);
    return 0;
}
