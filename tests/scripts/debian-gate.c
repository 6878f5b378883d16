/*
 * The C program of the Debian gate (tests/scripts/debian-gate.sh, step `gcc`): compiled with the
 * Debian tree's gcc inside the guest and run there; its output must equal, byte for byte, the
 * output of this same source compiled with the host's cc and run natively
 * (tests/scripts/debian-gate-host.sh writes that as prog.expected).
 *
 * It is small (the arm64 lane compiles it under TCG emulation) and prints the same on every
 * architecture and libc: fixed-width integers, only correctly rounded double operations (+, /,
 * sqrt; no multiply-add a compiler could fuse), libc formatting and parsing, qsort, threads
 * (pthread_create/join), fork, a pipe and waitpid.
 */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define N 10000
#define NTHREADS 4

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 33;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

struct job {
    uint64_t seed, sum;
};

static void *work(void *p)
{
    struct job *j = p;
    uint64_t s = j->seed, sum = 0;
    for (int i = 0; i < 200000; i++)
        sum += lcg(&s) % 1000003;
    j->sum = sum;
    return NULL;
}

static void die(const char *what)
{
    perror(what);
    exit(1);
}

int main(void)
{
    static uint32_t v[N];
    uint64_t s = 42;
    for (int i = 0; i < N; i++)
        v[i] = (uint32_t)lcg(&s);
    qsort(v, N, sizeof v[0], cmp_u32);
    uint64_t h = 1469598103934665603ULL; /* FNV-1a over the sorted values */
    for (int i = 0; i < N; i++) {
        h ^= v[i];
        h *= 1099511628211ULL;
    }
    printf("qsort: min=%" PRIu32 " max=%" PRIu32 " fnv=%016" PRIx64 "\n", v[0], v[N - 1], h);

    double x = 0;
    for (int i = 1; i <= 1000; i++)
        x += 1.0 / i;
    printf("double: harmonic(1000)=%.17g sqrt(2)=%.17g third=%a\n", x, sqrt(2.0), 1.0 / 3);
    double e = strtod("2.718281828459045235360287", NULL);
    char buf[96];
    int n = snprintf(buf, sizeof buf, "%.6e|%10.3f|%-5d|%x|%s|%lld", e, -e, 42, 255u, "str",
                     (long long)INT64_MIN);
    printf("format: %s len=%d strlen=%zu\n", buf, n, strlen(buf));

    struct job jobs[NTHREADS];
    pthread_t t[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        jobs[i].seed = (uint64_t)i + 1;
        if (pthread_create(&t[i], NULL, work, &jobs[i]) != 0)
            die("pthread_create");
    }
    uint64_t total = 0;
    for (int i = 0; i < NTHREADS; i++) {
        if (pthread_join(t[i], NULL) != 0)
            die("pthread_join");
        printf("thread %d: sum=%" PRIu64 "\n", i, jobs[i].sum);
        total += jobs[i].sum;
    }
    printf("threads: total=%" PRIu64 "\n", total);

    fflush(stdout);
    int fd[2];
    if (pipe(fd) != 0)
        die("pipe");
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        close(fd[0]);
        dprintf(fd[1], "child says %d", 6 * 7);
        _exit(7);
    }
    close(fd[1]);
    char msg[64] = {0};
    size_t got = 0;
    for (;;) {
        ssize_t r = read(fd[0], msg + got, sizeof msg - 1 - got);
        if (r < 0)
            die("read");
        if (r == 0)
            break;
        got += (size_t)r;
    }
    int st;
    if (waitpid(pid, &st, 0) != pid)
        die("waitpid");
    printf("fork: '%s' exited=%d status=%d\n", msg, WIFEXITED(st), WEXITSTATUS(st));
    return 0;
}
