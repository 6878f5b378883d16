// SPDX-License-Identifier: GPL-2.0-only
/*
 * umchar: a character device, /dev/umchar, holding one buffer.
 *
 * write() appends to the buffer (up to `bufsize` bytes), read() returns it from the file
 * position, poll() reports POLLIN when there is data past the position... and POLLOUT while the
 * buffer has room; ioctls clear it, report its length and the open count. Parameters: `bufsize`
 * (int, fixed at load) and `greeting` (charp: the buffer's initial contents).
 *
 *   insmod umchar.ko bufsize=128 greeting="hello there"
 */
#include <um_module.h>

MODULE_LICENSE("GPL");
MODULE_AUTHOR("um-rs");
MODULE_DESCRIPTION("example character device with open/read/write/ioctl/poll/release");
MODULE_VERSION("1.0");

static int bufsize = 4096;
module_param(bufsize, int, 0444);
MODULE_PARM_DESC(bufsize, "capacity of the buffer in bytes (1..65536)");

static char *greeting = "";
module_param(greeting, charp, 0444);
MODULE_PARM_DESC(greeting, "initial contents of the buffer");

/* ioctls: the numbers a guest program uses too */
#define UMCHAR_IOC_CLEAR _IO('u', 1)
#define UMCHAR_IOC_GETLEN _IOR('u', 2, long)
#define UMCHAR_IOC_OPENS _IOR('u', 3, int)

static char *data;
static unsigned long len;
static int opens;
static int handle = -1;

static int umchar_open(void *priv, void **file_private)
{
	opens++;
	*file_private = priv;
	return 0;
}

static long umchar_read(void *fp, char *ubuf, unsigned long n, long long *pos)
{
	unsigned long off = (unsigned long)*pos;

	(void)fp;
	if (*pos < 0)
		return -EINVAL;
	if (off >= len)
		return 0;
	if (n > len - off)
		n = len - off;
	if (copy_to_user(ubuf, data + off, n))
		return -EFAULT;
	*pos += n;
	return (long)n;
}

static long umchar_write(void *fp, const char *ubuf, unsigned long n, long long *pos)
{
	unsigned long room = (unsigned long)bufsize - len;

	(void)fp;
	if (n == 0)
		return 0;
	if (room == 0)
		return -ENOSPC;
	if (n > room)
		n = room;
	if (copy_from_user(data + len, ubuf, n))
		return -EFAULT;
	len += n;
	*pos = (long long)len;
	return (long)n;
}

static long umchar_ioctl(void *fp, unsigned int cmd, unsigned long arg)
{
	long l = (long)len;

	(void)fp;
	switch (cmd) {
	case UMCHAR_IOC_CLEAR:
		len = 0;
		return 0;
	case UMCHAR_IOC_GETLEN:
		return copy_to_user((void *)arg, &l, sizeof(l)) ? -EFAULT : 0;
	case UMCHAR_IOC_OPENS:
		return copy_to_user((void *)arg, &opens, sizeof(opens)) ? -EFAULT : 0;
	default:
		return -ENOTTY;
	}
}

static unsigned int umchar_poll(void *fp)
{
	unsigned int mask = 0;

	(void)fp;
	if (len > 0)
		mask |= POLLIN | POLLRDNORM;
	if (len < (unsigned long)bufsize)
		mask |= POLLOUT | POLLWRNORM;
	return mask;
}

static int umchar_release(void *fp)
{
	(void)fp;
	opens--;
	return 0;
}

static const struct um_file_operations umchar_fops = {
	.open = umchar_open,
	.read = umchar_read,
	.write = umchar_write,
	.unlocked_ioctl = umchar_ioctl,
	.poll = umchar_poll,
	.release = umchar_release,
};

static int __init umchar_init(void)
{
	unsigned long g = um_strlen(greeting);

	if (bufsize < 1 || bufsize > 65536) {
		pr_err("bufsize=%d out of range 1..65536\n", bufsize);
		return -EINVAL;
	}
	data = kzalloc((unsigned long)bufsize, GFP_KERNEL);
	if (!data)
		return -ENOMEM;
	if (g > (unsigned long)bufsize)
		g = (unsigned long)bufsize;
	for (unsigned long i = 0; i < g; i++)
		data[i] = greeting[i];
	len = g;
	handle = um_register_chrdev("umchar", &umchar_fops, NULL);
	if (handle < 0) {
		pr_err("cannot register /dev/umchar: %d\n", handle);
		kfree(data);
		return handle;
	}
	pr_info("/dev/umchar ready, bufsize=%d greeting=\"%s\"\n", bufsize, greeting);
	return 0;
}

static void __exit umchar_exit(void)
{
	um_unregister_chrdev(handle);
	kfree(data);
	pr_info("unloaded\n");
}

module_init(umchar_init);
module_exit(umchar_exit);
