// SPDX-License-Identifier: GPL-2.0-only
/*
 * umfw: loads firmware with request_firmware (the kernel reads /lib/firmware/<fw_name> from
 * the guest root), computes its CRC-32 (the zlib/IEEE one, as `python3 -c "import zlib"` does)
 * and logs "umfw: umfw.bin size=<N> crc32=<hex>"; /proc/umfw shows the same line. Fails to load
 * with the firmware's error (-ENOENT) when the file is missing.
 *
 * On arm64 this file is built with -mcmodel=large (addresses from literal pools: ABS64).
 */
#include <um_module.h>

MODULE_LICENSE("GPL");
MODULE_AUTHOR("um-rs");
MODULE_DESCRIPTION("example module loading firmware with request_firmware");
MODULE_VERSION("1.0");
MODULE_FIRMWARE("umfw.bin");

static char *fw_name = "umfw.bin";
module_param(fw_name, charp, 0444);
MODULE_PARM_DESC(fw_name, "firmware file under /lib/firmware");

static unsigned long fw_size;
static unsigned int fw_crc;
static int handle = -1;

static unsigned int crc32(const unsigned char *p, unsigned long n)
{
	unsigned int crc = 0xffffffffu;

	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
	}
	return ~crc;
}

static int umfw_show(char *buf, unsigned long cap, void *priv)
{
	(void)priv;
	return um_snprintf(buf, cap, "%s size=%lu crc32=%08x\n", fw_name, fw_size, fw_crc);
}

static int __init umfw_init(void)
{
	const struct firmware *fw;
	int err = request_firmware(&fw, fw_name, NULL);

	if (err) {
		pr_err("request_firmware(%s) failed: %d\n", fw_name, err);
		return err;
	}
	fw_size = fw->size;
	fw_crc = crc32(fw->data, fw->size);
	release_firmware(fw);
	handle = um_proc_create("umfw", umfw_show, NULL);
	if (handle < 0)
		return handle;
	pr_info("%s size=%lu crc32=%08x\n", fw_name, fw_size, fw_crc);
	return 0;
}

static void __exit umfw_exit(void)
{
	um_proc_remove(handle);
}

module_init(umfw_init);
module_exit(umfw_exit);
