// SPDX-License-Identifier: GPL-2.0-only
/*
 * Host-side check of include/module/um_module.h: its header-only um_snprintf must format like
 * the C library's snprintf for every conversion it supports, and printk must pass the KERN_*
 * level on. Built and run by `tools/modules/build --test-header`.
 */
#include <stdio.h>
#include <string.h>

#define KBUILD_MODNAME "hdrtest"
#define UTS_RELEASE "0.0.0-test"

static int last_level = -1;
static char last_msg[600];

void um_printk(int level, const char *msg, unsigned long len)
{
	last_level = level;
	snprintf(last_msg, sizeof(last_msg), "%.*s", (int)len, msg);
}

#include "um_module.h"

static int bad;

#define CHECK(...)                                                                         \
	do {                                                                               \
		char a[256], b[256];                                                       \
		int n1 = um_snprintf(a, sizeof(a), __VA_ARGS__);                           \
		int n2 = snprintf(b, sizeof(b), __VA_ARGS__);                              \
		if (n1 != n2 || strcmp(a, b)) {                                            \
			printf("MISMATCH %s: [%s] %d vs libc [%s] %d\n", #__VA_ARGS__, a, n1, b, \
			       n2);                                                        \
			bad++;                                                             \
		}                                                                          \
	} while (0)

int main(void)
{
	char small[5];

	CHECK("%d %i %u", -5, 42, 7u);
	CHECK("%x %X %lx %ld %lu", 255u, 255u, 0xdeadbeefcafeUL, -1234567890123L,
	      18446744073709551615UL);
	CHECK("[%5d] [%-5d] [%05d] [%-5u]", 42, 42, -42, 7u);
	CHECK("%s|%10s|%-10s|%.3s|%.*s", "abc", "abc", "abc", "abcdef", 2, "xyz");
	CHECK("%c%c %3c %-3c|", 'a', 'b', 'c', 'd');
	CHECK("%% %lld %llu %llx", -9223372036854775807LL - 1, 18446744073709551615ULL,
	      0x123456789abcdefULL);
	CHECK("%hd %hu %hhd %hhu", (short)-3, (unsigned short)65535, (signed char)-1,
	      (unsigned char)255);
	CHECK("%zu %o %08x", (size_t)99, 8u, 0xabcu);
	CHECK("%*d|%-*d|", 6, 1, 6, 2);
	CHECK("%ld", -9223372036854775807L - 1);
	CHECK("%p", (void *)0x7f001234);
	if (um_snprintf(small, sizeof(small), "hello world") != 11 || strcmp(small, "hell")) {
		printf("MISMATCH truncation: [%s]\n", small);
		bad++;
	}
	printk(KERN_INFO "info %d\n", 5);
	if (last_level != 6 || strcmp(last_msg, "info 5\n")) {
		printf("MISMATCH printk KERN_INFO: %d [%s]\n", last_level, last_msg);
		bad++;
	}
	pr_err("err %s\n", "x");
	if (last_level != 3 || strcmp(last_msg, "hdrtest: err x\n")) {
		printf("MISMATCH pr_err: %d [%s]\n", last_level, last_msg);
		bad++;
	}
	printk("plain\n");
	if (last_level != 4) {
		printf("MISMATCH default level: %d\n", last_level);
		bad++;
	}
	printf("header-test: %s\n", bad ? "FAILED" : "ok");
	return bad != 0;
}
