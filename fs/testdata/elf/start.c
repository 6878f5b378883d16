/* Fixture for fs/src/binfmt_elf.rs tests: a libc-free program with text, data and bss.
 * Built by ./build.sh (x86_64 host gcc/binutils); never executed by the tests, only loaded. */
int data_word = 0x5a5a5a5a;           /* .data: file-backed, writable */
char bss_buf[3 * 4096 + 123];  /* .bss: spans several pages past the end of .data */

void _start(void)
{
    bss_buf[0] = (char)data_word;
    for (;;)
        __asm__ volatile("" ::: "memory");
}
