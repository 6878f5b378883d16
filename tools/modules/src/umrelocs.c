// SPDX-License-Identifier: GPL-2.0-only
/*
 * umrelocs: a test-only module (never installed) whose assembly uses every relocation type the
 * loader supports on its architecture, so the fixtures under module/tests/fixtures/ cover them
 * all. The external symbols rel_* are chosen by the tests' resolver: rel_s16 must fit 16 bits,
 * rel_s32 32 bits, rel_s32s a sign-extended 32 bits, rel_s48 48 bits; rel_far and ext_* may be
 * anywhere. Loading it into a running kernel makes no sense.
 */
#include <um_module.h>

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("relocation coverage fixture for the module loader tests");

#if defined(__x86_64__)
__asm__(
	".pushsection .text.umrelocs,\"ax\",@progbits\n"
	".globl umrelocs_code\n"
	"umrelocs_code:\n"
	"	call ext_fn@PLT\n"                      /* R_X86_64_PLT32 ext_fn-4 */
	"	jmp ext_fn@PLT\n"                       /* R_X86_64_PLT32 ext_fn-4 (same stub) */
	"	call ext_fn2@PLT\n"                     /* R_X86_64_PLT32 ext_fn2-4 */
	"	leaq umrelocs_data(%rip), %rax\n"       /* R_X86_64_PC32 */
	"	movq ext_data@GOTPCREL(%rip), %rax\n"   /* R_X86_64_REX_GOTPCRELX */
	"	movq umrelocs_data@GOTPCREL(%rip), %rcx\n" /* REX_GOTPCRELX, module's own symbol */
	"	call *ext_fn2@GOTPCREL(%rip)\n"         /* R_X86_64_GOTPCRELX */
	"	movl ext_data@GOTPCREL(%rip), %edx\n"   /* R_X86_64_GOTPCRELX (same GOT slot) */
	"	movl $rel_s32, %eax\n"                  /* R_X86_64_32 */
	"	movq $rel_s32s, %rax\n"                 /* R_X86_64_32S */
	"	ret\n"
	".popsection\n"
	".pushsection .data.umrelocs,\"aw\",@progbits\n"
	".balign 16\n"
	".globl umrelocs_data\n"
	"umrelocs_data:\n"
	"	.quad rel_far\n"                        /* R_X86_64_64 */
	"	.quad rel_far + 0x10\n"                 /* R_X86_64_64 with an addend */
	"	.quad umrelocs_code - .\n"              /* R_X86_64_PC64 */
	"	.long umrelocs_code - .\n"              /* R_X86_64_PC32 in data */
	"	.long ext_data@GOTPCREL\n"              /* R_X86_64_GOTPCREL */
	"	.long ext_fn2@GOTPCREL\n"               /* R_X86_64_GOTPCREL */
	".popsection\n");
#elif defined(__aarch64__)
__asm__(
	".pushsection .text.umrelocs,\"ax\",%progbits\n"
	".globl umrelocs_code\n"
	"umrelocs_code:\n"
	"	movz x0, #:abs_g0:rel_s16\n"            /* R_AARCH64_MOVW_UABS_G0 */
	"	movk x0, #:abs_g0_nc:rel_far\n"         /* R_AARCH64_MOVW_UABS_G0_NC */
	"	movz x0, #:abs_g1:rel_s32\n"            /* R_AARCH64_MOVW_UABS_G1 */
	"	movk x0, #:abs_g1_nc:rel_far\n"         /* R_AARCH64_MOVW_UABS_G1_NC */
	"	movz x0, #:abs_g2:rel_s48\n"            /* R_AARCH64_MOVW_UABS_G2 */
	"	movk x0, #:abs_g2_nc:rel_far\n"         /* R_AARCH64_MOVW_UABS_G2_NC */
	"	movk x0, #:abs_g3:rel_far\n"            /* R_AARCH64_MOVW_UABS_G3 */
	"	adrp x1, umrelocs_data\n"               /* R_AARCH64_ADR_PREL_PG_HI21 */
	"	add x1, x1, :lo12:umrelocs_data\n"      /* R_AARCH64_ADD_ABS_LO12_NC */
	"	adrp x2, :pg_hi21_nc:umrelocs_data\n"   /* R_AARCH64_ADR_PREL_PG_HI21_NC */
	"	ldrb w3, [x1, :lo12:umrelocs_data+1]\n" /* R_AARCH64_LDST8_ABS_LO12_NC */
	"	ldrh w3, [x1, :lo12:umrelocs_data+2]\n" /* R_AARCH64_LDST16_ABS_LO12_NC */
	"	ldr w3, [x1, :lo12:umrelocs_data+4]\n"  /* R_AARCH64_LDST32_ABS_LO12_NC */
	"	ldr x3, [x1, :lo12:umrelocs_data+8]\n"  /* R_AARCH64_LDST64_ABS_LO12_NC */
	"	ldr q3, [x1, :lo12:umrelocs_data+16]\n" /* R_AARCH64_LDST128_ABS_LO12_NC */
	"	adr x4, umrelocs_lit\n"                 /* R_AARCH64_ADR_PREL_LO21 */
	"	ldr x5, umrelocs_lit\n"                 /* R_AARCH64_LD_PREL_LO19 */
	"	bl ext_fn\n"                            /* R_AARCH64_CALL26 */
	"	bl ext_fn\n"                            /* R_AARCH64_CALL26 (same veneer) */
	"	bl ext_fn2\n"                           /* R_AARCH64_CALL26 */
	"	b ext_fn\n"                             /* R_AARCH64_JUMP26 (same veneer) */
	".popsection\n"
	".pushsection .rodata.umrelocs,\"a\",%progbits\n"
	".balign 16\n"
	".globl umrelocs_lit\n"
	"umrelocs_lit:\n"
	"	.xword 0x1122334455667788\n"
	".popsection\n"
	".pushsection .data.umrelocs,\"aw\",%progbits\n"
	".balign 16\n"
	".globl umrelocs_data\n"
	"umrelocs_data:\n"
	"	.space 32\n"
	"	.xword rel_far\n"                       /* R_AARCH64_ABS64 */
	"	.word rel_s32\n"                        /* R_AARCH64_ABS32 */
	"	.hword rel_s16\n"                       /* R_AARCH64_ABS16 */
	"	.balign 8\n"
	"	.xword umrelocs_code - .\n"             /* R_AARCH64_PREL64 */
	"	.word umrelocs_code - .\n"              /* R_AARCH64_PREL32 */
	"	.hword umrelocs_lit - .\n"              /* R_AARCH64_PREL16 */
	".popsection\n");
#endif

extern void ext_fn(void);

/* Init text calls a kernel function too: its stub/veneer goes in the init text region. */
static int __init umrelocs_init(void)
{
	ext_fn();
	return 0;
}

static void __exit umrelocs_exit(void)
{
	ext_fn();
}

module_init(umrelocs_init);
module_exit(umrelocs_exit);
