// SPDX-License-Identifier: GPL-2.0-only
/*
 * umveneer: calls many kernel functions, several times each, from core text, init text and
 * tail calls. On arm64 these are CALL26/JUMP26 branches with a +-128 MiB reach: when the
 * kernel is farther than that from the module, each distinct target goes through one PLT
 * veneer (adrp x16; add x16; br x16) per text region, shared by all calls to that target.
 * On x86_64 the same calls are R_X86_64_PLT32; out of +-2 GiB they go through a stub.
 *
 * /proc/umveneer shows how many kernel calls succeeded; init logs the same line.
 */
#include <um_module.h>

MODULE_LICENSE("GPL");
MODULE_AUTHOR("um-rs");
MODULE_DESCRIPTION("example module whose kernel calls go through PLT veneers when far");
MODULE_VERSION("1.0");

static int rounds = 3;
module_param(rounds, int, 0644);
MODULE_PARM_DESC(rounds, "allocation rounds done by each read of /proc/umveneer");

static bool verbose;
module_param(verbose, bool, 0644);

static int handle = -1;
static long calls;

/* A tail call: compiles to `b kfree` (R_AARCH64_JUMP26) / `jmp kfree` (R_X86_64_PLT32). */
static __attribute__((noinline)) void umveneer_free(void *p)
{
	kfree(p);
}

static __attribute__((noinline)) long exercise(int n)
{
	long ok = 0;

	for (int i = 0; i < n; i++) {
		char *a = kmalloc(64, GFP_KERNEL);
		char *b = kzalloc(32, GFP_KERNEL);

		if (a && b && b[0] == 0 && b[31] == 0)
			ok++;
		calls += 2;
		if (verbose)
			pr_debug("round %d: %p %p\n", i, a, b);
		umveneer_free(a);
		kfree(b);
	}
	return ok;
}

static int umveneer_show(char *buf, unsigned long cap, void *priv)
{
	long ok = exercise(rounds);

	(void)priv;
	return um_snprintf(buf, cap, "rounds=%d ok=%ld calls=%ld\n", rounds, ok, calls);
}

static int __init umveneer_init(void)
{
	long ok = exercise(rounds);
	char *p = kmalloc(16, GFP_KERNEL);

	if (!p)
		return -ENOMEM;
	kfree(p);
	handle = um_proc_create("umveneer", umveneer_show, NULL);
	if (handle < 0)
		return handle;
	pr_info("init: rounds=%d ok=%ld calls=%ld\n", rounds, ok, calls);
	return 0;
}

static void __exit umveneer_exit(void)
{
	um_proc_remove(handle);
	pr_info("unloaded after %ld kernel calls\n", calls);
}

module_init(umveneer_init);
module_exit(umveneer_exit);
