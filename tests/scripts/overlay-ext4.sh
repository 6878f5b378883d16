# overlayfs with its upper layer on ext4 (tests/tests/overlay.rs `ext4_upper`): /dev/ubdb is a
# fresh ext4 image without a journal; a tmpfs lower and an ext4 lower.
/bin/busybox --install -s /bin 2>/dev/null
P=/opt/um/ovlprobe
one() { tr '\n' ' ' | sed 's/ *$//'; }
mount -t proc proc /proc
mkdir -p /e /t
mount -t ext4 /dev/ubdb /e && echo EXT4 mounted
mkdir /e/u /e/w /e/l /e/l/d; echo lower >/e/l/f; echo x >/e/l/d/x
mount -t tmpfs tmpfs /t; mkdir /t/l /t/m /t/l/d; echo a >/t/l/a; echo y >/t/l/d/y
mount -t overlay overlay -o lowerdir=/t/l:/e/l,upperdir=/e/u,workdir=/e/w /t/m && echo OVL mounted
rm /t/m/a; rm -r /t/m/d; mkdir /t/m/d; echo n >/t/m/n; echo more >>/t/m/f
echo "EXT4-UPPER $(ls -A /t/m | one) [$(ls -A /t/m/d)] $(stat -c '%F %t:%T' /e/u/a) $($P getxattr /e/u/d trusted.overlay.opaque) $(cat /t/m/f | one) $(cat /e/l/f)"
umount /t/m; umount /e
mount -t ext4 /dev/ubdb /e
mount -t overlay overlay -o lowerdir=/t/l:/e/l,upperdir=/e/u,workdir=/e/w /t/m
echo "EXT4-AGAIN $(ls -A /t/m | one) [$(ls -A /t/m/d)]"
umount /t/m; umount /e
mount -t ext4 -o ro /dev/ubdb /e
echo "EXT4-RO $(mount -t overlay overlay -o lowerdir=/t/l,upperdir=/e/u,workdir=/e/w /t/m 2>&1 | sed 's/.*: //')"
echo OVERLAY-EXT4-DONE
