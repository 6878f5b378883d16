// SPDX-License-Identifier: GPL-2.0-only
/*
 * umdep: depends on umbase (calls umbase_add, reads umbase_calls), so its .modinfo says
 * depends=umbase and modprobe loads umbase first. A character device /dev/umdep: writing a
 * decimal number adds it through umbase_add; reading gives "total=<T> calls=<C>\n".
 *
 * On x86_64 this file is built with -fPIC, so references to global data (umbase_calls and this
 * module's own `umdep_writes`) go through the GOT (R_X86_64_REX_GOTPCRELX / GOTPCRELX).
 */
#include <um_module.h>

MODULE_LICENSE("GPL");
MODULE_AUTHOR("um-rs");
MODULE_DESCRIPTION("example module using symbols exported by umbase");
MODULE_VERSION("1.0");

extern long umbase_add(long v);
extern long umbase_calls;

/* Global (not static) on purpose: with -fPIC its accesses use the GOT as well. */
long umdep_writes;
static long last_total;
static int handle = -1;

static int umdep_open(void *priv, void **file_private)
{
	*file_private = priv;
	return 0;
}

static long umdep_read(void *fp, char *ubuf, unsigned long n, long long *pos)
{
	char msg[64];
	unsigned long len, off = (unsigned long)*pos;

	(void)fp;
	len = (unsigned long)um_snprintf(msg, sizeof(msg), "total=%ld calls=%ld\n", last_total,
					 umbase_calls);
	if (len >= sizeof(msg))
		len = sizeof(msg) - 1;
	if (*pos < 0)
		return -EINVAL;
	if (off >= len)
		return 0;
	if (n > len - off)
		n = len - off;
	if (copy_to_user(ubuf, msg + off, n))
		return -EFAULT;
	*pos += n;
	return (long)n;
}

static long umdep_write(void *fp, const char *ubuf, unsigned long n, long long *pos)
{
	char buf[24];
	long v = 0;
	bool neg = false;
	unsigned long i = 0;

	(void)fp;
	if (n == 0 || n >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, n))
		return -EFAULT;
	buf[n] = '\0';
	if (buf[0] == '-') {
		neg = true;
		i = 1;
	}
	for (; i < n && buf[i] >= '0' && buf[i] <= '9'; i++)
		v = v * 10 + (buf[i] - '0');
	if (i < n && buf[i] != '\n')
		return -EINVAL;
	last_total = umbase_add(neg ? -v : v);
	umdep_writes++;
	*pos += (long long)n;
	return (long)n;
}

static unsigned int umdep_poll(void *fp)
{
	(void)fp;
	return POLLIN | POLLRDNORM | POLLOUT | POLLWRNORM;
}

static int umdep_release(void *fp)
{
	(void)fp;
	return 0;
}

static const struct um_file_operations umdep_fops = {
	.open = umdep_open,
	.read = umdep_read,
	.write = umdep_write,
	.poll = umdep_poll,
	.release = umdep_release,
};

static int __init umdep_init(void)
{
	last_total = umbase_add(0);
	handle = um_register_chrdev("umdep", &umdep_fops, NULL);
	if (handle < 0)
		return handle;
	pr_info("/dev/umdep ready (umbase total %ld)\n", last_total);
	return 0;
}

static void __exit umdep_exit(void)
{
	um_unregister_chrdev(handle);
	pr_info("unloaded after %ld writes\n", umdep_writes);
}

module_init(umdep_init);
module_exit(umdep_exit);
