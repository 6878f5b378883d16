// SPDX-License-Identifier: GPL-2.0-only
/*
 * umbase: exports a function and a variable for umdep, so `modprobe umdep` must load umbase
 * first and `rmmod umbase` must fail while umdep is loaded (the export is in use).
 */
#include <um_module.h>

MODULE_LICENSE("GPL");
MODULE_AUTHOR("um-rs");
MODULE_DESCRIPTION("example module exporting symbols (used by umdep)");
MODULE_VERSION("1.0");

/* How many times umbase_add was called: read by umdep through its GOT on x86_64. */
long umbase_calls;
EXPORT_SYMBOL(umbase_calls);

static long umbase_total;

/* Adds v to a running total and returns the new total. */
long umbase_add(long v)
{
	umbase_calls++;
	umbase_total += v;
	return umbase_total;
}
EXPORT_SYMBOL_GPL(umbase_add);

static int __init umbase_init(void)
{
	pr_info("loaded, exporting umbase_add and umbase_calls\n");
	return 0;
}

static void __exit umbase_exit(void)
{
	pr_info("unloaded after %ld calls, total %ld\n", umbase_calls, umbase_total);
}

module_init(umbase_init);
module_exit(umbase_exit);
