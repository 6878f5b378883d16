//! Syscall numbers of Linux on arm64: GENERATED, do not edit by hand.
//!
//! Source: `/usr/include/asm-generic/unistd.h` from the Debian package `linux-libc-dev` 6.1.187-1
//! (Linux 6.1.187 UAPI headers;
//! evaluated as `arch/arm64/include/uapi/asm/unistd.h` does for 64-bit tasks:
//! `__ARCH_WANT_RENAMEAT`, `__ARCH_WANT_NEW_STAT`, `__ARCH_WANT_SET_GET_RLIMIT`,
//! `__ARCH_WANT_TIME32_SYSCALLS`, `__ARCH_WANT_SYS_CLONE3`, `__ARCH_WANT_MEMFD_SECRET`,
//! `__BITS_PER_LONG == 64`, with the `__NR3264_*` numbers under their 64-bit names).
//! Regenerate with `tools/gen-syscalls.py`;
//! `tools/gen-syscalls.py --check` fails when this file is stale.
//!
//! [`nr`] holds one constant per syscall (`nr::OPENAT`), [`TABLE`] lists `(number, name)`
//! sorted by number, and [`name`]/[`number`] translate between the two.

/// One constant per syscall, named after the Linux syscall in upper case.
pub mod nr {
    pub const IO_SETUP: u32 = 0;
    pub const IO_DESTROY: u32 = 1;
    pub const IO_SUBMIT: u32 = 2;
    pub const IO_CANCEL: u32 = 3;
    pub const IO_GETEVENTS: u32 = 4;
    pub const SETXATTR: u32 = 5;
    pub const LSETXATTR: u32 = 6;
    pub const FSETXATTR: u32 = 7;
    pub const GETXATTR: u32 = 8;
    pub const LGETXATTR: u32 = 9;
    pub const FGETXATTR: u32 = 10;
    pub const LISTXATTR: u32 = 11;
    pub const LLISTXATTR: u32 = 12;
    pub const FLISTXATTR: u32 = 13;
    pub const REMOVEXATTR: u32 = 14;
    pub const LREMOVEXATTR: u32 = 15;
    pub const FREMOVEXATTR: u32 = 16;
    pub const GETCWD: u32 = 17;
    pub const LOOKUP_DCOOKIE: u32 = 18;
    pub const EVENTFD2: u32 = 19;
    pub const EPOLL_CREATE1: u32 = 20;
    pub const EPOLL_CTL: u32 = 21;
    pub const EPOLL_PWAIT: u32 = 22;
    pub const DUP: u32 = 23;
    pub const DUP3: u32 = 24;
    pub const FCNTL: u32 = 25;
    pub const INOTIFY_INIT1: u32 = 26;
    pub const INOTIFY_ADD_WATCH: u32 = 27;
    pub const INOTIFY_RM_WATCH: u32 = 28;
    pub const IOCTL: u32 = 29;
    pub const IOPRIO_SET: u32 = 30;
    pub const IOPRIO_GET: u32 = 31;
    pub const FLOCK: u32 = 32;
    pub const MKNODAT: u32 = 33;
    pub const MKDIRAT: u32 = 34;
    pub const UNLINKAT: u32 = 35;
    pub const SYMLINKAT: u32 = 36;
    pub const LINKAT: u32 = 37;
    pub const RENAMEAT: u32 = 38;
    pub const UMOUNT2: u32 = 39;
    pub const MOUNT: u32 = 40;
    pub const PIVOT_ROOT: u32 = 41;
    pub const NFSSERVCTL: u32 = 42;
    pub const STATFS: u32 = 43;
    pub const FSTATFS: u32 = 44;
    pub const TRUNCATE: u32 = 45;
    pub const FTRUNCATE: u32 = 46;
    pub const FALLOCATE: u32 = 47;
    pub const FACCESSAT: u32 = 48;
    pub const CHDIR: u32 = 49;
    pub const FCHDIR: u32 = 50;
    pub const CHROOT: u32 = 51;
    pub const FCHMOD: u32 = 52;
    pub const FCHMODAT: u32 = 53;
    pub const FCHOWNAT: u32 = 54;
    pub const FCHOWN: u32 = 55;
    pub const OPENAT: u32 = 56;
    pub const CLOSE: u32 = 57;
    pub const VHANGUP: u32 = 58;
    pub const PIPE2: u32 = 59;
    pub const QUOTACTL: u32 = 60;
    pub const GETDENTS64: u32 = 61;
    pub const LSEEK: u32 = 62;
    pub const READ: u32 = 63;
    pub const WRITE: u32 = 64;
    pub const READV: u32 = 65;
    pub const WRITEV: u32 = 66;
    pub const PREAD64: u32 = 67;
    pub const PWRITE64: u32 = 68;
    pub const PREADV: u32 = 69;
    pub const PWRITEV: u32 = 70;
    pub const SENDFILE: u32 = 71;
    pub const PSELECT6: u32 = 72;
    pub const PPOLL: u32 = 73;
    pub const SIGNALFD4: u32 = 74;
    pub const VMSPLICE: u32 = 75;
    pub const SPLICE: u32 = 76;
    pub const TEE: u32 = 77;
    pub const READLINKAT: u32 = 78;
    pub const NEWFSTATAT: u32 = 79;
    pub const FSTAT: u32 = 80;
    pub const SYNC: u32 = 81;
    pub const FSYNC: u32 = 82;
    pub const FDATASYNC: u32 = 83;
    pub const SYNC_FILE_RANGE: u32 = 84;
    pub const TIMERFD_CREATE: u32 = 85;
    pub const TIMERFD_SETTIME: u32 = 86;
    pub const TIMERFD_GETTIME: u32 = 87;
    pub const UTIMENSAT: u32 = 88;
    pub const ACCT: u32 = 89;
    pub const CAPGET: u32 = 90;
    pub const CAPSET: u32 = 91;
    pub const PERSONALITY: u32 = 92;
    pub const EXIT: u32 = 93;
    pub const EXIT_GROUP: u32 = 94;
    pub const WAITID: u32 = 95;
    pub const SET_TID_ADDRESS: u32 = 96;
    pub const UNSHARE: u32 = 97;
    pub const FUTEX: u32 = 98;
    pub const SET_ROBUST_LIST: u32 = 99;
    pub const GET_ROBUST_LIST: u32 = 100;
    pub const NANOSLEEP: u32 = 101;
    pub const GETITIMER: u32 = 102;
    pub const SETITIMER: u32 = 103;
    pub const KEXEC_LOAD: u32 = 104;
    pub const INIT_MODULE: u32 = 105;
    pub const DELETE_MODULE: u32 = 106;
    pub const TIMER_CREATE: u32 = 107;
    pub const TIMER_GETTIME: u32 = 108;
    pub const TIMER_GETOVERRUN: u32 = 109;
    pub const TIMER_SETTIME: u32 = 110;
    pub const TIMER_DELETE: u32 = 111;
    pub const CLOCK_SETTIME: u32 = 112;
    pub const CLOCK_GETTIME: u32 = 113;
    pub const CLOCK_GETRES: u32 = 114;
    pub const CLOCK_NANOSLEEP: u32 = 115;
    pub const SYSLOG: u32 = 116;
    pub const PTRACE: u32 = 117;
    pub const SCHED_SETPARAM: u32 = 118;
    pub const SCHED_SETSCHEDULER: u32 = 119;
    pub const SCHED_GETSCHEDULER: u32 = 120;
    pub const SCHED_GETPARAM: u32 = 121;
    pub const SCHED_SETAFFINITY: u32 = 122;
    pub const SCHED_GETAFFINITY: u32 = 123;
    pub const SCHED_YIELD: u32 = 124;
    pub const SCHED_GET_PRIORITY_MAX: u32 = 125;
    pub const SCHED_GET_PRIORITY_MIN: u32 = 126;
    pub const SCHED_RR_GET_INTERVAL: u32 = 127;
    pub const RESTART_SYSCALL: u32 = 128;
    pub const KILL: u32 = 129;
    pub const TKILL: u32 = 130;
    pub const TGKILL: u32 = 131;
    pub const SIGALTSTACK: u32 = 132;
    pub const RT_SIGSUSPEND: u32 = 133;
    pub const RT_SIGACTION: u32 = 134;
    pub const RT_SIGPROCMASK: u32 = 135;
    pub const RT_SIGPENDING: u32 = 136;
    pub const RT_SIGTIMEDWAIT: u32 = 137;
    pub const RT_SIGQUEUEINFO: u32 = 138;
    pub const RT_SIGRETURN: u32 = 139;
    pub const SETPRIORITY: u32 = 140;
    pub const GETPRIORITY: u32 = 141;
    pub const REBOOT: u32 = 142;
    pub const SETREGID: u32 = 143;
    pub const SETGID: u32 = 144;
    pub const SETREUID: u32 = 145;
    pub const SETUID: u32 = 146;
    pub const SETRESUID: u32 = 147;
    pub const GETRESUID: u32 = 148;
    pub const SETRESGID: u32 = 149;
    pub const GETRESGID: u32 = 150;
    pub const SETFSUID: u32 = 151;
    pub const SETFSGID: u32 = 152;
    pub const TIMES: u32 = 153;
    pub const SETPGID: u32 = 154;
    pub const GETPGID: u32 = 155;
    pub const GETSID: u32 = 156;
    pub const SETSID: u32 = 157;
    pub const GETGROUPS: u32 = 158;
    pub const SETGROUPS: u32 = 159;
    pub const UNAME: u32 = 160;
    pub const SETHOSTNAME: u32 = 161;
    pub const SETDOMAINNAME: u32 = 162;
    pub const GETRLIMIT: u32 = 163;
    pub const SETRLIMIT: u32 = 164;
    pub const GETRUSAGE: u32 = 165;
    pub const UMASK: u32 = 166;
    pub const PRCTL: u32 = 167;
    pub const GETCPU: u32 = 168;
    pub const GETTIMEOFDAY: u32 = 169;
    pub const SETTIMEOFDAY: u32 = 170;
    pub const ADJTIMEX: u32 = 171;
    pub const GETPID: u32 = 172;
    pub const GETPPID: u32 = 173;
    pub const GETUID: u32 = 174;
    pub const GETEUID: u32 = 175;
    pub const GETGID: u32 = 176;
    pub const GETEGID: u32 = 177;
    pub const GETTID: u32 = 178;
    pub const SYSINFO: u32 = 179;
    pub const MQ_OPEN: u32 = 180;
    pub const MQ_UNLINK: u32 = 181;
    pub const MQ_TIMEDSEND: u32 = 182;
    pub const MQ_TIMEDRECEIVE: u32 = 183;
    pub const MQ_NOTIFY: u32 = 184;
    pub const MQ_GETSETATTR: u32 = 185;
    pub const MSGGET: u32 = 186;
    pub const MSGCTL: u32 = 187;
    pub const MSGRCV: u32 = 188;
    pub const MSGSND: u32 = 189;
    pub const SEMGET: u32 = 190;
    pub const SEMCTL: u32 = 191;
    pub const SEMTIMEDOP: u32 = 192;
    pub const SEMOP: u32 = 193;
    pub const SHMGET: u32 = 194;
    pub const SHMCTL: u32 = 195;
    pub const SHMAT: u32 = 196;
    pub const SHMDT: u32 = 197;
    pub const SOCKET: u32 = 198;
    pub const SOCKETPAIR: u32 = 199;
    pub const BIND: u32 = 200;
    pub const LISTEN: u32 = 201;
    pub const ACCEPT: u32 = 202;
    pub const CONNECT: u32 = 203;
    pub const GETSOCKNAME: u32 = 204;
    pub const GETPEERNAME: u32 = 205;
    pub const SENDTO: u32 = 206;
    pub const RECVFROM: u32 = 207;
    pub const SETSOCKOPT: u32 = 208;
    pub const GETSOCKOPT: u32 = 209;
    pub const SHUTDOWN: u32 = 210;
    pub const SENDMSG: u32 = 211;
    pub const RECVMSG: u32 = 212;
    pub const READAHEAD: u32 = 213;
    pub const BRK: u32 = 214;
    pub const MUNMAP: u32 = 215;
    pub const MREMAP: u32 = 216;
    pub const ADD_KEY: u32 = 217;
    pub const REQUEST_KEY: u32 = 218;
    pub const KEYCTL: u32 = 219;
    pub const CLONE: u32 = 220;
    pub const EXECVE: u32 = 221;
    pub const MMAP: u32 = 222;
    pub const FADVISE64: u32 = 223;
    pub const SWAPON: u32 = 224;
    pub const SWAPOFF: u32 = 225;
    pub const MPROTECT: u32 = 226;
    pub const MSYNC: u32 = 227;
    pub const MLOCK: u32 = 228;
    pub const MUNLOCK: u32 = 229;
    pub const MLOCKALL: u32 = 230;
    pub const MUNLOCKALL: u32 = 231;
    pub const MINCORE: u32 = 232;
    pub const MADVISE: u32 = 233;
    pub const REMAP_FILE_PAGES: u32 = 234;
    pub const MBIND: u32 = 235;
    pub const GET_MEMPOLICY: u32 = 236;
    pub const SET_MEMPOLICY: u32 = 237;
    pub const MIGRATE_PAGES: u32 = 238;
    pub const MOVE_PAGES: u32 = 239;
    pub const RT_TGSIGQUEUEINFO: u32 = 240;
    pub const PERF_EVENT_OPEN: u32 = 241;
    pub const ACCEPT4: u32 = 242;
    pub const RECVMMSG: u32 = 243;
    pub const WAIT4: u32 = 260;
    pub const PRLIMIT64: u32 = 261;
    pub const FANOTIFY_INIT: u32 = 262;
    pub const FANOTIFY_MARK: u32 = 263;
    pub const NAME_TO_HANDLE_AT: u32 = 264;
    pub const OPEN_BY_HANDLE_AT: u32 = 265;
    pub const CLOCK_ADJTIME: u32 = 266;
    pub const SYNCFS: u32 = 267;
    pub const SETNS: u32 = 268;
    pub const SENDMMSG: u32 = 269;
    pub const PROCESS_VM_READV: u32 = 270;
    pub const PROCESS_VM_WRITEV: u32 = 271;
    pub const KCMP: u32 = 272;
    pub const FINIT_MODULE: u32 = 273;
    pub const SCHED_SETATTR: u32 = 274;
    pub const SCHED_GETATTR: u32 = 275;
    pub const RENAMEAT2: u32 = 276;
    pub const SECCOMP: u32 = 277;
    pub const GETRANDOM: u32 = 278;
    pub const MEMFD_CREATE: u32 = 279;
    pub const BPF: u32 = 280;
    pub const EXECVEAT: u32 = 281;
    pub const USERFAULTFD: u32 = 282;
    pub const MEMBARRIER: u32 = 283;
    pub const MLOCK2: u32 = 284;
    pub const COPY_FILE_RANGE: u32 = 285;
    pub const PREADV2: u32 = 286;
    pub const PWRITEV2: u32 = 287;
    pub const PKEY_MPROTECT: u32 = 288;
    pub const PKEY_ALLOC: u32 = 289;
    pub const PKEY_FREE: u32 = 290;
    pub const STATX: u32 = 291;
    pub const IO_PGETEVENTS: u32 = 292;
    pub const RSEQ: u32 = 293;
    pub const KEXEC_FILE_LOAD: u32 = 294;
    pub const PIDFD_SEND_SIGNAL: u32 = 424;
    pub const IO_URING_SETUP: u32 = 425;
    pub const IO_URING_ENTER: u32 = 426;
    pub const IO_URING_REGISTER: u32 = 427;
    pub const OPEN_TREE: u32 = 428;
    pub const MOVE_MOUNT: u32 = 429;
    pub const FSOPEN: u32 = 430;
    pub const FSCONFIG: u32 = 431;
    pub const FSMOUNT: u32 = 432;
    pub const FSPICK: u32 = 433;
    pub const PIDFD_OPEN: u32 = 434;
    pub const CLONE3: u32 = 435;
    pub const CLOSE_RANGE: u32 = 436;
    pub const OPENAT2: u32 = 437;
    pub const PIDFD_GETFD: u32 = 438;
    pub const FACCESSAT2: u32 = 439;
    pub const PROCESS_MADVISE: u32 = 440;
    pub const EPOLL_PWAIT2: u32 = 441;
    pub const MOUNT_SETATTR: u32 = 442;
    pub const QUOTACTL_FD: u32 = 443;
    pub const LANDLOCK_CREATE_RULESET: u32 = 444;
    pub const LANDLOCK_ADD_RULE: u32 = 445;
    pub const LANDLOCK_RESTRICT_SELF: u32 = 446;
    pub const MEMFD_SECRET: u32 = 447;
    pub const PROCESS_MRELEASE: u32 = 448;
    pub const FUTEX_WAITV: u32 = 449;
    pub const SET_MEMPOLICY_HOME_NODE: u32 = 450;
}

/// The largest syscall number in the table.
pub const MAX_NR: u32 = 450;

/// Every syscall as `(number, name)`, sorted by number.
pub static TABLE: &[(u32, &str)] = &[
    (0, "io_setup"),
    (1, "io_destroy"),
    (2, "io_submit"),
    (3, "io_cancel"),
    (4, "io_getevents"),
    (5, "setxattr"),
    (6, "lsetxattr"),
    (7, "fsetxattr"),
    (8, "getxattr"),
    (9, "lgetxattr"),
    (10, "fgetxattr"),
    (11, "listxattr"),
    (12, "llistxattr"),
    (13, "flistxattr"),
    (14, "removexattr"),
    (15, "lremovexattr"),
    (16, "fremovexattr"),
    (17, "getcwd"),
    (18, "lookup_dcookie"),
    (19, "eventfd2"),
    (20, "epoll_create1"),
    (21, "epoll_ctl"),
    (22, "epoll_pwait"),
    (23, "dup"),
    (24, "dup3"),
    (25, "fcntl"),
    (26, "inotify_init1"),
    (27, "inotify_add_watch"),
    (28, "inotify_rm_watch"),
    (29, "ioctl"),
    (30, "ioprio_set"),
    (31, "ioprio_get"),
    (32, "flock"),
    (33, "mknodat"),
    (34, "mkdirat"),
    (35, "unlinkat"),
    (36, "symlinkat"),
    (37, "linkat"),
    (38, "renameat"),
    (39, "umount2"),
    (40, "mount"),
    (41, "pivot_root"),
    (42, "nfsservctl"),
    (43, "statfs"),
    (44, "fstatfs"),
    (45, "truncate"),
    (46, "ftruncate"),
    (47, "fallocate"),
    (48, "faccessat"),
    (49, "chdir"),
    (50, "fchdir"),
    (51, "chroot"),
    (52, "fchmod"),
    (53, "fchmodat"),
    (54, "fchownat"),
    (55, "fchown"),
    (56, "openat"),
    (57, "close"),
    (58, "vhangup"),
    (59, "pipe2"),
    (60, "quotactl"),
    (61, "getdents64"),
    (62, "lseek"),
    (63, "read"),
    (64, "write"),
    (65, "readv"),
    (66, "writev"),
    (67, "pread64"),
    (68, "pwrite64"),
    (69, "preadv"),
    (70, "pwritev"),
    (71, "sendfile"),
    (72, "pselect6"),
    (73, "ppoll"),
    (74, "signalfd4"),
    (75, "vmsplice"),
    (76, "splice"),
    (77, "tee"),
    (78, "readlinkat"),
    (79, "newfstatat"),
    (80, "fstat"),
    (81, "sync"),
    (82, "fsync"),
    (83, "fdatasync"),
    (84, "sync_file_range"),
    (85, "timerfd_create"),
    (86, "timerfd_settime"),
    (87, "timerfd_gettime"),
    (88, "utimensat"),
    (89, "acct"),
    (90, "capget"),
    (91, "capset"),
    (92, "personality"),
    (93, "exit"),
    (94, "exit_group"),
    (95, "waitid"),
    (96, "set_tid_address"),
    (97, "unshare"),
    (98, "futex"),
    (99, "set_robust_list"),
    (100, "get_robust_list"),
    (101, "nanosleep"),
    (102, "getitimer"),
    (103, "setitimer"),
    (104, "kexec_load"),
    (105, "init_module"),
    (106, "delete_module"),
    (107, "timer_create"),
    (108, "timer_gettime"),
    (109, "timer_getoverrun"),
    (110, "timer_settime"),
    (111, "timer_delete"),
    (112, "clock_settime"),
    (113, "clock_gettime"),
    (114, "clock_getres"),
    (115, "clock_nanosleep"),
    (116, "syslog"),
    (117, "ptrace"),
    (118, "sched_setparam"),
    (119, "sched_setscheduler"),
    (120, "sched_getscheduler"),
    (121, "sched_getparam"),
    (122, "sched_setaffinity"),
    (123, "sched_getaffinity"),
    (124, "sched_yield"),
    (125, "sched_get_priority_max"),
    (126, "sched_get_priority_min"),
    (127, "sched_rr_get_interval"),
    (128, "restart_syscall"),
    (129, "kill"),
    (130, "tkill"),
    (131, "tgkill"),
    (132, "sigaltstack"),
    (133, "rt_sigsuspend"),
    (134, "rt_sigaction"),
    (135, "rt_sigprocmask"),
    (136, "rt_sigpending"),
    (137, "rt_sigtimedwait"),
    (138, "rt_sigqueueinfo"),
    (139, "rt_sigreturn"),
    (140, "setpriority"),
    (141, "getpriority"),
    (142, "reboot"),
    (143, "setregid"),
    (144, "setgid"),
    (145, "setreuid"),
    (146, "setuid"),
    (147, "setresuid"),
    (148, "getresuid"),
    (149, "setresgid"),
    (150, "getresgid"),
    (151, "setfsuid"),
    (152, "setfsgid"),
    (153, "times"),
    (154, "setpgid"),
    (155, "getpgid"),
    (156, "getsid"),
    (157, "setsid"),
    (158, "getgroups"),
    (159, "setgroups"),
    (160, "uname"),
    (161, "sethostname"),
    (162, "setdomainname"),
    (163, "getrlimit"),
    (164, "setrlimit"),
    (165, "getrusage"),
    (166, "umask"),
    (167, "prctl"),
    (168, "getcpu"),
    (169, "gettimeofday"),
    (170, "settimeofday"),
    (171, "adjtimex"),
    (172, "getpid"),
    (173, "getppid"),
    (174, "getuid"),
    (175, "geteuid"),
    (176, "getgid"),
    (177, "getegid"),
    (178, "gettid"),
    (179, "sysinfo"),
    (180, "mq_open"),
    (181, "mq_unlink"),
    (182, "mq_timedsend"),
    (183, "mq_timedreceive"),
    (184, "mq_notify"),
    (185, "mq_getsetattr"),
    (186, "msgget"),
    (187, "msgctl"),
    (188, "msgrcv"),
    (189, "msgsnd"),
    (190, "semget"),
    (191, "semctl"),
    (192, "semtimedop"),
    (193, "semop"),
    (194, "shmget"),
    (195, "shmctl"),
    (196, "shmat"),
    (197, "shmdt"),
    (198, "socket"),
    (199, "socketpair"),
    (200, "bind"),
    (201, "listen"),
    (202, "accept"),
    (203, "connect"),
    (204, "getsockname"),
    (205, "getpeername"),
    (206, "sendto"),
    (207, "recvfrom"),
    (208, "setsockopt"),
    (209, "getsockopt"),
    (210, "shutdown"),
    (211, "sendmsg"),
    (212, "recvmsg"),
    (213, "readahead"),
    (214, "brk"),
    (215, "munmap"),
    (216, "mremap"),
    (217, "add_key"),
    (218, "request_key"),
    (219, "keyctl"),
    (220, "clone"),
    (221, "execve"),
    (222, "mmap"),
    (223, "fadvise64"),
    (224, "swapon"),
    (225, "swapoff"),
    (226, "mprotect"),
    (227, "msync"),
    (228, "mlock"),
    (229, "munlock"),
    (230, "mlockall"),
    (231, "munlockall"),
    (232, "mincore"),
    (233, "madvise"),
    (234, "remap_file_pages"),
    (235, "mbind"),
    (236, "get_mempolicy"),
    (237, "set_mempolicy"),
    (238, "migrate_pages"),
    (239, "move_pages"),
    (240, "rt_tgsigqueueinfo"),
    (241, "perf_event_open"),
    (242, "accept4"),
    (243, "recvmmsg"),
    (260, "wait4"),
    (261, "prlimit64"),
    (262, "fanotify_init"),
    (263, "fanotify_mark"),
    (264, "name_to_handle_at"),
    (265, "open_by_handle_at"),
    (266, "clock_adjtime"),
    (267, "syncfs"),
    (268, "setns"),
    (269, "sendmmsg"),
    (270, "process_vm_readv"),
    (271, "process_vm_writev"),
    (272, "kcmp"),
    (273, "finit_module"),
    (274, "sched_setattr"),
    (275, "sched_getattr"),
    (276, "renameat2"),
    (277, "seccomp"),
    (278, "getrandom"),
    (279, "memfd_create"),
    (280, "bpf"),
    (281, "execveat"),
    (282, "userfaultfd"),
    (283, "membarrier"),
    (284, "mlock2"),
    (285, "copy_file_range"),
    (286, "preadv2"),
    (287, "pwritev2"),
    (288, "pkey_mprotect"),
    (289, "pkey_alloc"),
    (290, "pkey_free"),
    (291, "statx"),
    (292, "io_pgetevents"),
    (293, "rseq"),
    (294, "kexec_file_load"),
    (424, "pidfd_send_signal"),
    (425, "io_uring_setup"),
    (426, "io_uring_enter"),
    (427, "io_uring_register"),
    (428, "open_tree"),
    (429, "move_mount"),
    (430, "fsopen"),
    (431, "fsconfig"),
    (432, "fsmount"),
    (433, "fspick"),
    (434, "pidfd_open"),
    (435, "clone3"),
    (436, "close_range"),
    (437, "openat2"),
    (438, "pidfd_getfd"),
    (439, "faccessat2"),
    (440, "process_madvise"),
    (441, "epoll_pwait2"),
    (442, "mount_setattr"),
    (443, "quotactl_fd"),
    (444, "landlock_create_ruleset"),
    (445, "landlock_add_rule"),
    (446, "landlock_restrict_self"),
    (447, "memfd_secret"),
    (448, "process_mrelease"),
    (449, "futex_waitv"),
    (450, "set_mempolicy_home_node"),
];

/// Every syscall as `(name, number)`, sorted by name (for [`number`]).
static BY_NAME: &[(&str, u32)] = &[
    ("accept", 202),
    ("accept4", 242),
    ("acct", 89),
    ("add_key", 217),
    ("adjtimex", 171),
    ("bind", 200),
    ("bpf", 280),
    ("brk", 214),
    ("capget", 90),
    ("capset", 91),
    ("chdir", 49),
    ("chroot", 51),
    ("clock_adjtime", 266),
    ("clock_getres", 114),
    ("clock_gettime", 113),
    ("clock_nanosleep", 115),
    ("clock_settime", 112),
    ("clone", 220),
    ("clone3", 435),
    ("close", 57),
    ("close_range", 436),
    ("connect", 203),
    ("copy_file_range", 285),
    ("delete_module", 106),
    ("dup", 23),
    ("dup3", 24),
    ("epoll_create1", 20),
    ("epoll_ctl", 21),
    ("epoll_pwait", 22),
    ("epoll_pwait2", 441),
    ("eventfd2", 19),
    ("execve", 221),
    ("execveat", 281),
    ("exit", 93),
    ("exit_group", 94),
    ("faccessat", 48),
    ("faccessat2", 439),
    ("fadvise64", 223),
    ("fallocate", 47),
    ("fanotify_init", 262),
    ("fanotify_mark", 263),
    ("fchdir", 50),
    ("fchmod", 52),
    ("fchmodat", 53),
    ("fchown", 55),
    ("fchownat", 54),
    ("fcntl", 25),
    ("fdatasync", 83),
    ("fgetxattr", 10),
    ("finit_module", 273),
    ("flistxattr", 13),
    ("flock", 32),
    ("fremovexattr", 16),
    ("fsconfig", 431),
    ("fsetxattr", 7),
    ("fsmount", 432),
    ("fsopen", 430),
    ("fspick", 433),
    ("fstat", 80),
    ("fstatfs", 44),
    ("fsync", 82),
    ("ftruncate", 46),
    ("futex", 98),
    ("futex_waitv", 449),
    ("get_mempolicy", 236),
    ("get_robust_list", 100),
    ("getcpu", 168),
    ("getcwd", 17),
    ("getdents64", 61),
    ("getegid", 177),
    ("geteuid", 175),
    ("getgid", 176),
    ("getgroups", 158),
    ("getitimer", 102),
    ("getpeername", 205),
    ("getpgid", 155),
    ("getpid", 172),
    ("getppid", 173),
    ("getpriority", 141),
    ("getrandom", 278),
    ("getresgid", 150),
    ("getresuid", 148),
    ("getrlimit", 163),
    ("getrusage", 165),
    ("getsid", 156),
    ("getsockname", 204),
    ("getsockopt", 209),
    ("gettid", 178),
    ("gettimeofday", 169),
    ("getuid", 174),
    ("getxattr", 8),
    ("init_module", 105),
    ("inotify_add_watch", 27),
    ("inotify_init1", 26),
    ("inotify_rm_watch", 28),
    ("io_cancel", 3),
    ("io_destroy", 1),
    ("io_getevents", 4),
    ("io_pgetevents", 292),
    ("io_setup", 0),
    ("io_submit", 2),
    ("io_uring_enter", 426),
    ("io_uring_register", 427),
    ("io_uring_setup", 425),
    ("ioctl", 29),
    ("ioprio_get", 31),
    ("ioprio_set", 30),
    ("kcmp", 272),
    ("kexec_file_load", 294),
    ("kexec_load", 104),
    ("keyctl", 219),
    ("kill", 129),
    ("landlock_add_rule", 445),
    ("landlock_create_ruleset", 444),
    ("landlock_restrict_self", 446),
    ("lgetxattr", 9),
    ("linkat", 37),
    ("listen", 201),
    ("listxattr", 11),
    ("llistxattr", 12),
    ("lookup_dcookie", 18),
    ("lremovexattr", 15),
    ("lseek", 62),
    ("lsetxattr", 6),
    ("madvise", 233),
    ("mbind", 235),
    ("membarrier", 283),
    ("memfd_create", 279),
    ("memfd_secret", 447),
    ("migrate_pages", 238),
    ("mincore", 232),
    ("mkdirat", 34),
    ("mknodat", 33),
    ("mlock", 228),
    ("mlock2", 284),
    ("mlockall", 230),
    ("mmap", 222),
    ("mount", 40),
    ("mount_setattr", 442),
    ("move_mount", 429),
    ("move_pages", 239),
    ("mprotect", 226),
    ("mq_getsetattr", 185),
    ("mq_notify", 184),
    ("mq_open", 180),
    ("mq_timedreceive", 183),
    ("mq_timedsend", 182),
    ("mq_unlink", 181),
    ("mremap", 216),
    ("msgctl", 187),
    ("msgget", 186),
    ("msgrcv", 188),
    ("msgsnd", 189),
    ("msync", 227),
    ("munlock", 229),
    ("munlockall", 231),
    ("munmap", 215),
    ("name_to_handle_at", 264),
    ("nanosleep", 101),
    ("newfstatat", 79),
    ("nfsservctl", 42),
    ("open_by_handle_at", 265),
    ("open_tree", 428),
    ("openat", 56),
    ("openat2", 437),
    ("perf_event_open", 241),
    ("personality", 92),
    ("pidfd_getfd", 438),
    ("pidfd_open", 434),
    ("pidfd_send_signal", 424),
    ("pipe2", 59),
    ("pivot_root", 41),
    ("pkey_alloc", 289),
    ("pkey_free", 290),
    ("pkey_mprotect", 288),
    ("ppoll", 73),
    ("prctl", 167),
    ("pread64", 67),
    ("preadv", 69),
    ("preadv2", 286),
    ("prlimit64", 261),
    ("process_madvise", 440),
    ("process_mrelease", 448),
    ("process_vm_readv", 270),
    ("process_vm_writev", 271),
    ("pselect6", 72),
    ("ptrace", 117),
    ("pwrite64", 68),
    ("pwritev", 70),
    ("pwritev2", 287),
    ("quotactl", 60),
    ("quotactl_fd", 443),
    ("read", 63),
    ("readahead", 213),
    ("readlinkat", 78),
    ("readv", 65),
    ("reboot", 142),
    ("recvfrom", 207),
    ("recvmmsg", 243),
    ("recvmsg", 212),
    ("remap_file_pages", 234),
    ("removexattr", 14),
    ("renameat", 38),
    ("renameat2", 276),
    ("request_key", 218),
    ("restart_syscall", 128),
    ("rseq", 293),
    ("rt_sigaction", 134),
    ("rt_sigpending", 136),
    ("rt_sigprocmask", 135),
    ("rt_sigqueueinfo", 138),
    ("rt_sigreturn", 139),
    ("rt_sigsuspend", 133),
    ("rt_sigtimedwait", 137),
    ("rt_tgsigqueueinfo", 240),
    ("sched_get_priority_max", 125),
    ("sched_get_priority_min", 126),
    ("sched_getaffinity", 123),
    ("sched_getattr", 275),
    ("sched_getparam", 121),
    ("sched_getscheduler", 120),
    ("sched_rr_get_interval", 127),
    ("sched_setaffinity", 122),
    ("sched_setattr", 274),
    ("sched_setparam", 118),
    ("sched_setscheduler", 119),
    ("sched_yield", 124),
    ("seccomp", 277),
    ("semctl", 191),
    ("semget", 190),
    ("semop", 193),
    ("semtimedop", 192),
    ("sendfile", 71),
    ("sendmmsg", 269),
    ("sendmsg", 211),
    ("sendto", 206),
    ("set_mempolicy", 237),
    ("set_mempolicy_home_node", 450),
    ("set_robust_list", 99),
    ("set_tid_address", 96),
    ("setdomainname", 162),
    ("setfsgid", 152),
    ("setfsuid", 151),
    ("setgid", 144),
    ("setgroups", 159),
    ("sethostname", 161),
    ("setitimer", 103),
    ("setns", 268),
    ("setpgid", 154),
    ("setpriority", 140),
    ("setregid", 143),
    ("setresgid", 149),
    ("setresuid", 147),
    ("setreuid", 145),
    ("setrlimit", 164),
    ("setsid", 157),
    ("setsockopt", 208),
    ("settimeofday", 170),
    ("setuid", 146),
    ("setxattr", 5),
    ("shmat", 196),
    ("shmctl", 195),
    ("shmdt", 197),
    ("shmget", 194),
    ("shutdown", 210),
    ("sigaltstack", 132),
    ("signalfd4", 74),
    ("socket", 198),
    ("socketpair", 199),
    ("splice", 76),
    ("statfs", 43),
    ("statx", 291),
    ("swapoff", 225),
    ("swapon", 224),
    ("symlinkat", 36),
    ("sync", 81),
    ("sync_file_range", 84),
    ("syncfs", 267),
    ("sysinfo", 179),
    ("syslog", 116),
    ("tee", 77),
    ("tgkill", 131),
    ("timer_create", 107),
    ("timer_delete", 111),
    ("timer_getoverrun", 109),
    ("timer_gettime", 108),
    ("timer_settime", 110),
    ("timerfd_create", 85),
    ("timerfd_gettime", 87),
    ("timerfd_settime", 86),
    ("times", 153),
    ("tkill", 130),
    ("truncate", 45),
    ("umask", 166),
    ("umount2", 39),
    ("uname", 160),
    ("unlinkat", 35),
    ("unshare", 97),
    ("userfaultfd", 282),
    ("utimensat", 88),
    ("vhangup", 58),
    ("vmsplice", 75),
    ("wait4", 260),
    ("waitid", 95),
    ("write", 64),
    ("writev", 66),
];

/// The Linux name of syscall `nr` (`"openat"`), or `None` if the number is unassigned.
pub fn name(nr: u32) -> Option<&'static str> {
    TABLE
        .binary_search_by_key(&nr, |&(n, _)| n)
        .ok()
        .map(|i| TABLE[i].1)
}

/// The number of the syscall called `name` in Linux (`"openat"`), if this arch has it.
pub fn number(name: &str) -> Option<u32> {
    BY_NAME
        .binary_search_by(|&(n, _)| n.cmp(name))
        .ok()
        .map(|i| BY_NAME[i].1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_known_numbers() {
        assert_eq!(nr::OPENAT, 56);
        assert_eq!(number("openat"), Some(56));
        assert_eq!(nr::READ, 63);
        assert_eq!(number("read"), Some(63));
        assert_eq!(nr::WRITE, 64);
        assert_eq!(number("write"), Some(64));
        assert_eq!(nr::EXIT_GROUP, 94);
        assert_eq!(number("exit_group"), Some(94));
        assert_eq!(nr::CLONE, 220);
        assert_eq!(number("clone"), Some(220));
        assert_eq!(nr::EXECVE, 221);
        assert_eq!(number("execve"), Some(221));
        assert_eq!(nr::MMAP, 222);
        assert_eq!(number("mmap"), Some(222));
        assert_eq!(nr::CLONE3, 435);
        assert_eq!(number("clone3"), Some(435));
        assert_eq!(nr::RSEQ, 293);
        assert_eq!(number("rseq"), Some(293));
        assert_eq!(nr::FSTAT, 80);
        assert_eq!(number("fstat"), Some(80));
        assert_eq!(nr::NEWFSTATAT, 79);
        assert_eq!(number("newfstatat"), Some(79));
        assert_eq!(nr::LSEEK, 62);
        assert_eq!(number("lseek"), Some(62));
        assert_eq!(nr::FCNTL, 25);
        assert_eq!(number("fcntl"), Some(25));
        assert_eq!(nr::RT_SIGRETURN, 139);
        assert_eq!(number("rt_sigreturn"), Some(139));
    }

    #[test]
    fn tables_are_sorted_and_round_trip() {
        assert!(TABLE.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(BY_NAME.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(TABLE.len(), BY_NAME.len());
        assert_eq!(TABLE.last().map(|e| e.0), Some(MAX_NR));
        for &(nr, nm) in TABLE {
            assert_eq!(name(nr), Some(nm));
            assert_eq!(number(nm), Some(nr));
        }
        assert_eq!(name(MAX_NR + 1), None);
        assert_eq!(number("no_such_syscall"), None);
    }
}
