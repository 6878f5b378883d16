/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * um_module.h - the whole API for out-of-tree modules of the um-rs kernel.
 *
 * A module is one (or more, linked with `ld -r`) ELF relocatable object built freestanding
 * (no libc): `tools/modules/build` compiles it with the right flags for x86_64 and arm64 and
 * writes `<name>.ko`. The kernel (`um-module` crate: loader; `um-modshim`: the functions declared
 * here) parses it, lays it out, resolves the undefined symbols below against its exported-symbol
 * table and other modules' EXPORT_SYMBOLs, applies the relocations, sets parameters from the
 * insmod line, and calls init_module.
 *
 * What this header gives, modelled on Linux (include/linux/module.h, moduleparam.h, init.h,
 * printk.h, slab.h, uaccess.h, firmware.h, ioctl.h):
 *
 *   module_init(fn) / module_exit(fn)   the global symbols `init_module` / `cleanup_module`
 *                                       (aliases of fn); init returns 0 or -errno.
 *   __init / __initdata / __initconst   code/data in .init.text / .init.data / .init.rodata,
 *                                       freed after init returns; __exit puts code in .exit.text.
 *   MODULE_LICENSE/AUTHOR/DESCRIPTION/VERSION/FIRMWARE/INFO
 *                                       `key=value` strings in the .modinfo section, read by
 *                                       `modinfo`. `name=` (from -DKBUILD_MODNAME) and
 *                                       `vermagic=` are emitted by module_init(); `depends=` by
 *                                       the build script (like kbuild's modpost).
 *   module_param(name, type, perm)      a parameter settable on the insmod line (`name=value`)
 *   module_param_named, MODULE_PARM_DESC     and shown in /sys/module/<mod>/parameters/.
 *   EXPORT_SYMBOL / EXPORT_SYMBOL_GPL   make a symbol available to modules loaded later.
 *   printk / pr_info / ...              messages to the kernel log with KERN_* levels; the
 *                                       formatting (um_vsnprintf) is done here, header-only.
 *   kmalloc / kzalloc / kfree           kernel memory (never NULL-checked for you).
 *   copy_to_user / copy_from_user       the only way to touch a user buffer.
 *   um_register_chrdev / ...            a character device /dev/<name> with file operations.
 *   um_proc_create / um_proc_remove     a read-only /proc/<name> entry.
 *   request_firmware / release_firmware read /lib/firmware/<name> from the guest root.
 *
 * Required defines (the build script passes them):
 *   -DKBUILD_MODNAME='"name"'   the module name, a string literal, as in kbuild.
 *   -DUTS_RELEASE='"6.1.0-um"'  the kernel release the module is built for. The kernel refuses a
 *                               module whose vermagic ("<release> <arch>") differs from its own.
 *
 * Compile with: -ffreestanding -nostdlib -fno-common -fno-stack-protector
 * -fno-tree-loop-distribute-patterns (so the compiler does not invent calls to memset/memcpy; if
 * it does anyway, the kernel exports memset/memcpy/memmove/memcmp, declared below).
 */
#ifndef UM_MODULE_H
#define UM_MODULE_H

/* Only the compiler's freestanding headers: no libc. */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#ifndef KBUILD_MODNAME
#error "um_module.h: compile with -DKBUILD_MODNAME='\"<name>\"' (tools/modules/build does)"
#endif
#ifndef UTS_RELEASE
#error "um_module.h: compile with -DUTS_RELEASE='\"<release>\"' (tools/modules/build does)"
#endif

#if defined(__x86_64__)
#define UM_ARCH "x86_64"
#elif defined(__aarch64__)
#define UM_ARCH "aarch64"
#else
#error "um_module.h: modules are built for x86_64 or aarch64"
#endif

/* "<release> <arch>": compared byte for byte by the kernel (Linux: include/linux/vermagic.h). */
#define UM_VERMAGIC UTS_RELEASE " " UM_ARCH

/* ---------------------------------------------------------------------------------------------
 * Helpers (include/linux/stringify.h, compiler_types.h)
 */
#define __stringify_1(x...) #x
#define __stringify(x...) __stringify_1(x)
#define __UM_PASTE2(a, b) a##b
#define __UM_PASTE(a, b) __UM_PASTE2(a, b)
#define __UM_UNIQUE_ID(prefix) __UM_PASTE(__UM_PASTE(__UNIQUE_ID_, prefix), __COUNTER__)
#define __used __attribute__((__used__))
#define __maybe_unused __attribute__((__unused__))
#define __printf(a, b) __attribute__((__format__(printf, a, b)))

/* ---------------------------------------------------------------------------------------------
 * Init and exit (include/linux/init.h, module.h)
 *
 * Sections whose name starts with ".init" are loaded apart and freed once init_module returns,
 * so nothing may point into them afterwards.
 */
#define __init __attribute__((__section__(".init.text"), __cold__, __noinline__))
#define __initdata __attribute__((__section__(".init.data")))
#define __initconst __attribute__((__section__(".init.rodata")))
#define __exit __attribute__((__section__(".exit.text"), __cold__, __noinline__, __used__))

/* One module_init per module: it also records name= and vermagic= in .modinfo. */
#define module_init(initfn)                                                                \
	static inline __maybe_unused int (*__um_inittest(void))(void) { return initfn; }  \
	int init_module(void) __attribute__((__copy__(initfn), __alias__(#initfn)));     \
	MODULE_INFO(name, KBUILD_MODNAME);                                                 \
	MODULE_INFO(vermagic, UM_VERMAGIC)

#define module_exit(exitfn)                                                                \
	static inline __maybe_unused void (*__um_exittest(void))(void) { return exitfn; }  \
	void cleanup_module(void) __attribute__((__copy__(exitfn), __alias__(#exitfn)))

/* ---------------------------------------------------------------------------------------------
 * .modinfo (include/linux/moduleparam.h __MODULE_INFO): NUL-terminated "tag=value" strings.
 */
#define MODULE_INFO(tag, info)                                                             \
	static const char __UM_UNIQUE_ID(tag)[] __used                                     \
		__attribute__((__section__(".modinfo"), __aligned__(1))) = #tag "=" info

#define MODULE_LICENSE(_license) MODULE_INFO(license, _license)
#define MODULE_AUTHOR(_author) MODULE_INFO(author, _author)
#define MODULE_DESCRIPTION(_desc) MODULE_INFO(description, _desc)
#define MODULE_VERSION(_version) MODULE_INFO(version, _version)
#define MODULE_FIRMWARE(_fw) MODULE_INFO(firmware, _fw)
#define MODULE_ALIAS(_alias) MODULE_INFO(alias, _alias)

/* ---------------------------------------------------------------------------------------------
 * Parameters (include/linux/moduleparam.h)
 *
 * module_param(var, type, perm) with type one of: int uint long ulong short ushort bool charp.
 * The variable's C type must match (checked at compile time): bool is C `bool`, charp is
 * `char *` (the kernel points it at a copy of the insmod string, at most 1024 bytes).
 * perm is the mode of /sys/module/<mod>/parameters/<name> (0 hides it; never world-writable).
 *
 * Each parameter is one `struct um_kernel_param` in the section `__param`, plus
 * "parmtype=<name>:<type>" in .modinfo. The loader reads `type` to know how to parse the value.
 */
enum um_param_type {
	UM_PARAM_INT = 0,
	UM_PARAM_UINT = 1,
	UM_PARAM_LONG = 2,
	UM_PARAM_ULONG = 3,
	UM_PARAM_CHARP = 4,
	UM_PARAM_BOOL = 5,
	UM_PARAM_SHORT = 6,
	UM_PARAM_USHORT = 7,
};

struct um_kernel_param {
	const char *name;  /* relocated pointer to the parameter's name */
	void *arg;         /* relocated pointer to the variable */
	unsigned int type; /* enum um_param_type */
	unsigned int perm; /* sysfs mode */
};

typedef int __um_param_ctype_int;
typedef unsigned int __um_param_ctype_uint;
typedef long __um_param_ctype_long;
typedef unsigned long __um_param_ctype_ulong;
typedef short __um_param_ctype_short;
typedef unsigned short __um_param_ctype_ushort;
typedef bool __um_param_ctype_bool;
typedef char *__um_param_ctype_charp;
typedef bool __um_param_ctype__Bool; /* in case `bool` was expanded by an outer macro */
#define __UM_PARAM_TYPE_int UM_PARAM_INT
#define __UM_PARAM_TYPE_uint UM_PARAM_UINT
#define __UM_PARAM_TYPE_long UM_PARAM_LONG
#define __UM_PARAM_TYPE_ulong UM_PARAM_ULONG
#define __UM_PARAM_TYPE_short UM_PARAM_SHORT
#define __UM_PARAM_TYPE_ushort UM_PARAM_USHORT
#define __UM_PARAM_TYPE_bool UM_PARAM_BOOL
#define __UM_PARAM_TYPE_charp UM_PARAM_CHARP
#define __UM_PARAM_TYPE__Bool UM_PARAM_BOOL

/* `type` is only ever pasted or stringized here, never passed on to another macro: `bool` is
 * itself a macro (stdbool.h) and would otherwise arrive as `_Bool`. */
#define module_param_named(name, value, type, perm)                                        \
	__um_module_param(name, value, __um_param_ctype_##type, __UM_PARAM_TYPE_##type, #type, perm)
#define module_param(name, type, perm)                                                     \
	__um_module_param(name, name, __um_param_ctype_##type, __UM_PARAM_TYPE_##type, #type, perm)

#define __um_module_param(name, value, ctype, ptype, typestr, perm)                       \
	_Static_assert(__builtin_types_compatible_p(__typeof__(value), ctype),                \
		       "module_param " #name ": the variable is not of type " typestr);           \
	_Static_assert(((perm) & ~0777) == 0 && ((perm) & 0002) == 0,                         \
		       "module_param " #name ": bad permissions");                               \
	static const char __param_str_##name[] = #name;                                       \
	static struct um_kernel_param __param_##name __used                                   \
		__attribute__((__section__("__param"), __aligned__(8))) = {                      \
			__param_str_##name, (void *)&(value), ptype, (perm)                      \
		};                                                                            \
	MODULE_INFO(parmtype, #name ":" typestr)

#define MODULE_PARM_DESC(name, desc) MODULE_INFO(parm, #name ":" desc)

/* ---------------------------------------------------------------------------------------------
 * Exports (include/linux/export.h): the name goes to `__ksymtab_strings`; the loader finds the
 * symbol's definition in the module and publishes its final address. GPL-only is not enforced.
 */
#define __UM_EXPORT_SYMBOL(sym)                                                            \
	extern __typeof__(sym) sym;                                                        \
	static const char __kstrtab_##sym[] __used                                         \
		__attribute__((__section__("__ksymtab_strings"), __aligned__(1))) = #sym
#define EXPORT_SYMBOL(sym) __UM_EXPORT_SYMBOL(sym)
#define EXPORT_SYMBOL_GPL(sym) __UM_EXPORT_SYMBOL(sym)

/* ---------------------------------------------------------------------------------------------
 * Error numbers (include/uapi/asm-generic/errno-base.h, errno.h; the same on both arches).
 */
#define EPERM 1
#define ENOENT 2
#define EIO 5
#define ENXIO 6
#define E2BIG 7
#define EBADF 9
#define EAGAIN 11
#define ENOMEM 12
#define EACCES 13
#define EFAULT 14
#define EBUSY 16
#define EEXIST 17
#define ENODEV 19
#define EINVAL 22
#define ENOSPC 28
#define ENOTTY 25
#define ERANGE 34
#define ENOSYS 38

/* poll bits (include/uapi/asm-generic/poll.h) */
#define POLLIN 0x0001
#define POLLPRI 0x0002
#define POLLOUT 0x0004
#define POLLERR 0x0008
#define POLLHUP 0x0010
#define POLLRDNORM 0x0040
#define POLLWRNORM 0x0100

/* ioctl numbers (include/uapi/asm-generic/ioctl.h; the same on x86_64 and arm64) */
#define _IOC_NONE 0U
#define _IOC_WRITE 1U
#define _IOC_READ 2U
#define _IOC(dir, type, nr, size)                                                         \
	(((dir) << 30) | ((unsigned int)(size) << 16) | ((unsigned int)(type) << 8) | (nr))
#define _IO(type, nr) _IOC(_IOC_NONE, (type), (nr), 0)
#define _IOR(type, nr, T) _IOC(_IOC_READ, (type), (nr), sizeof(T))
#define _IOW(type, nr, T) _IOC(_IOC_WRITE, (type), (nr), sizeof(T))
#define _IOWR(type, nr, T) _IOC(_IOC_READ | _IOC_WRITE, (type), (nr), sizeof(T))

/* ---------------------------------------------------------------------------------------------
 * The kernel API: undefined symbols in the module, resolved by the kernel at load time.
 * (Implemented in Rust by the um-modshim crate; this list and these signatures are the ABI.)
 */

/* Log `len` bytes of `msg` (no NUL needed) at `level` 0..7 (KERN_EMERG..KERN_DEBUG). */
void um_printk(int level, const char *msg, unsigned long len);

/* Memory (include/linux/slab.h). flags are accepted for source compatibility and ignored. */
#define GFP_KERNEL 0U
#define GFP_ATOMIC 0U
void *kmalloc(unsigned long size, unsigned int flags); /* NULL on failure */
void *kzalloc(unsigned long size, unsigned int flags); /* zeroed; NULL on failure */
void kfree(const void *p);                              /* kfree(NULL) does nothing */

/* Compilers may emit calls to these even in freestanding code; the kernel exports them. */
void *memset(void *s, int c, size_t n);
void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
int memcmp(const void *a, const void *b, size_t n);

/* User memory (include/linux/uaccess.h): pointers from read/write/ioctl are guest addresses.
 * Both return the number of bytes NOT copied (0 on success). */
unsigned long copy_to_user(void *to_user, const void *from, unsigned long n);
unsigned long copy_from_user(void *to, const void *from_user, unsigned long n);

/* A character device: /dev/<name> appears on registration and goes away on unregistration.
 * `priv` is handed to open(); open() may set *file_private, which the other calls receive.
 * read/write return bytes done or -errno and advance *pos themselves; poll never waits. */
struct um_file_operations {
	int (*open)(void *priv, void **file_private);
	long (*read)(void *file_private, char *user_buf, unsigned long len, long long *pos);
	long (*write)(void *file_private, const char *user_buf, unsigned long len, long long *pos);
	long (*unlocked_ioctl)(void *file_private, unsigned int cmd, unsigned long arg);
	unsigned int (*poll)(void *file_private); /* POLLIN/POLLOUT mask */
	int (*release)(void *file_private);
};
/* Returns a handle >= 0, or -errno. */
int um_register_chrdev(const char *name, const struct um_file_operations *fops, void *priv);
void um_unregister_chrdev(int handle);

/* A read-only /proc/<name>: show() writes at most `cap` bytes into `buf` (kernel memory) and
 * returns how many, or -errno. Returns a handle >= 0, or -errno. */
int um_proc_create(const char *name, int (*show)(char *buf, unsigned long cap, void *priv),
		   void *priv);
void um_proc_remove(int handle);

/* Firmware (include/linux/firmware.h): reads /lib/firmware/<name> from the guest root.
 * Returns 0 and sets *fw, or -errno (-ENOENT if the file does not exist). `dev` may be NULL. */
struct firmware {
	unsigned long size;
	const unsigned char *data;
};
int request_firmware(const struct firmware **fw, const char *name, void *dev);
void release_firmware(const struct firmware *fw);

/* ---------------------------------------------------------------------------------------------
 * Small freestanding helpers (lib/string.c), static so they need no kernel symbol.
 */
static inline unsigned long um_strlen(const char *s)
{
	unsigned long n = 0;

	while (s[n])
		n++;
	return n;
}

/* ---------------------------------------------------------------------------------------------
 * Formatting (lib/vsprintf.c, cut down): %d %i %u %x %X %o %c %s %p %% with flags '-' and '0',
 * a width (digits or '*'), a precision for %s (".N" or ".*"), and the length modifiers
 * hh h l ll z. %p prints the raw address as 0x<hex>. Output is always NUL-terminated when
 * size > 0; returns the length the full output would have had (like snprintf).
 */
struct __um_fmtbuf {
	char *buf;
	unsigned long size;
	unsigned long len;
};

static inline void __um_putc(struct __um_fmtbuf *o, char c)
{
	if (o->len + 1 < o->size)
		o->buf[o->len] = c;
	o->len++;
}

static inline void __um_pad(struct __um_fmtbuf *o, char c, int n)
{
	while (n-- > 0)
		__um_putc(o, c);
}

/* One number in `base`, padded to `width` (spaces, or zeros after the sign). */
static inline void __um_put_number(struct __um_fmtbuf *o, unsigned long long v, unsigned int base,
				   bool upper, bool neg, int width, bool left, bool zero)
{
	const char *dig = upper ? "0123456789ABCDEF" : "0123456789abcdef";
	char tmp[24];
	int n = 0;

	do {
		tmp[n++] = dig[v % base];
		v /= base;
	} while (v && n < (int)sizeof(tmp));
	width -= n + (neg ? 1 : 0);
	if (!left && !zero)
		__um_pad(o, ' ', width);
	if (neg)
		__um_putc(o, '-');
	if (!left && zero)
		__um_pad(o, '0', width);
	while (n > 0)
		__um_putc(o, tmp[--n]);
	if (left)
		__um_pad(o, ' ', width);
}

static inline int um_vsnprintf(char *buf, unsigned long size, const char *fmt, va_list ap)
{
	struct __um_fmtbuf o = { buf, size, 0 };

	while (*fmt) {
		bool left = false, zero = false;
		int width = 0, prec = -1, lng = 0;
		char c = *fmt++;

		if (c != '%') {
			__um_putc(&o, c);
			continue;
		}
		for (;; fmt++) {
			if (*fmt == '-')
				left = true;
			else if (*fmt == '0')
				zero = true;
			else
				break;
		}
		if (*fmt == '*') {
			width = va_arg(ap, int);
			if (width < 0) {
				left = true;
				width = -width;
			}
			fmt++;
		} else {
			while (*fmt >= '0' && *fmt <= '9')
				width = width * 10 + (*fmt++ - '0');
		}
		if (*fmt == '.') {
			fmt++;
			prec = 0;
			if (*fmt == '*') {
				prec = va_arg(ap, int);
				fmt++;
			} else {
				while (*fmt >= '0' && *fmt <= '9')
					prec = prec * 10 + (*fmt++ - '0');
			}
		}
		/* lng: -2 hh, -1 h, 0 int, 1 long, 2 long long (z is long on LP64) */
		for (;; fmt++) {
			if (*fmt == 'l')
				lng++;
			else if (*fmt == 'h')
				lng--;
			else if (*fmt == 'z')
				lng = 1;
			else
				break;
		}
		c = *fmt;
		if (!c)
			break;
		fmt++;
		switch (c) {
		case 'd':
		case 'i': {
			long long v = lng >= 2 ? va_arg(ap, long long)
				    : lng == 1 ? va_arg(ap, long)
						 : va_arg(ap, int);
			unsigned long long u;

			if (lng == -1)
				v = (short)v;
			else if (lng <= -2)
				v = (signed char)v;
			u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
			__um_put_number(&o, u, 10, false, v < 0, width, left, zero);
			break;
		}
		case 'u':
		case 'x':
		case 'X':
		case 'o': {
			unsigned long long v = lng >= 2 ? va_arg(ap, unsigned long long)
					     : lng == 1 ? va_arg(ap, unsigned long)
							  : va_arg(ap, unsigned int);

			if (lng == -1)
				v = (unsigned short)v;
			else if (lng <= -2)
				v = (unsigned char)v;
			__um_put_number(&o, v, c == 'u' ? 10 : c == 'o' ? 8 : 16, c == 'X', false,
					width, left, zero);
			break;
		}
		case 'p': {
			unsigned long v = (unsigned long)va_arg(ap, void *);

			__um_putc(&o, '0');
			__um_putc(&o, 'x');
			__um_put_number(&o, v, 16, false, false, width > 2 ? width - 2 : 0, left,
					zero);
			break;
		}
		case 'c':
			if (!left)
				__um_pad(&o, ' ', width - 1);
			__um_putc(&o, (char)va_arg(ap, int));
			if (left)
				__um_pad(&o, ' ', width - 1);
			break;
		case 's': {
			const char *s = va_arg(ap, const char *);
			int n = 0;

			if (!s)
				s = "(null)";
			while (s[n] && (prec < 0 || n < prec))
				n++;
			if (!left)
				__um_pad(&o, ' ', width - n);
			for (int i = 0; i < n; i++)
				__um_putc(&o, s[i]);
			if (left)
				__um_pad(&o, ' ', width - n);
			break;
		}
		case '%':
			__um_putc(&o, '%');
			break;
		default: /* unknown conversion: print it as it was written */
			__um_putc(&o, '%');
			__um_putc(&o, c);
			break;
		}
	}
	if (size)
		buf[o.len < size ? o.len : size - 1] = '\0';
	return (int)o.len;
}

static inline __printf(3, 4) int um_snprintf(char *buf, unsigned long size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = um_vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}

/* ---------------------------------------------------------------------------------------------
 * printk (include/linux/kern_levels.h, printk.h). A message may start with a KERN_* level;
 * without one it is logged at the default level 4 (MESSAGE_LOGLEVEL_DEFAULT). Longer messages
 * than UM_PRINTK_MAX bytes are truncated.
 */
#define KERN_SOH "\001"
#define KERN_EMERG KERN_SOH "0"
#define KERN_ALERT KERN_SOH "1"
#define KERN_CRIT KERN_SOH "2"
#define KERN_ERR KERN_SOH "3"
#define KERN_WARNING KERN_SOH "4"
#define KERN_NOTICE KERN_SOH "5"
#define KERN_INFO KERN_SOH "6"
#define KERN_DEBUG KERN_SOH "7"
#define KERN_DEFAULT ""
#define UM_PRINTK_MAX 512

static inline __printf(1, 2) int printk(const char *fmt, ...)
{
	char buf[UM_PRINTK_MAX];
	int level = 4;
	va_list ap;
	int n;

	if (fmt[0] == KERN_SOH[0] && fmt[1] >= '0' && fmt[1] <= '7') {
		level = fmt[1] - '0';
		fmt += 2;
	}
	va_start(ap, fmt);
	n = um_vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 1)
		n = sizeof(buf) - 1;
	um_printk(level, buf, (unsigned long)n);
	return n;
}

#ifndef pr_fmt
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt
#endif
#define pr_emerg(fmt, ...) printk(KERN_EMERG pr_fmt(fmt), ##__VA_ARGS__)
#define pr_alert(fmt, ...) printk(KERN_ALERT pr_fmt(fmt), ##__VA_ARGS__)
#define pr_crit(fmt, ...) printk(KERN_CRIT pr_fmt(fmt), ##__VA_ARGS__)
#define pr_err(fmt, ...) printk(KERN_ERR pr_fmt(fmt), ##__VA_ARGS__)
#define pr_warn(fmt, ...) printk(KERN_WARNING pr_fmt(fmt), ##__VA_ARGS__)
#define pr_notice(fmt, ...) printk(KERN_NOTICE pr_fmt(fmt), ##__VA_ARGS__)
#define pr_info(fmt, ...) printk(KERN_INFO pr_fmt(fmt), ##__VA_ARGS__)
#define pr_debug(fmt, ...) printk(KERN_DEBUG pr_fmt(fmt), ##__VA_ARGS__)

#endif /* UM_MODULE_H */
