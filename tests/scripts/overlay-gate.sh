# overlayfs gate (tests/tests/overlay.rs): run by busybox sh as init of a private tree under
# `linux`, and natively in a chroot of the same tree under `unshare -m`; every line but the
# ones marked HOSTVAR is compared between the two. Layers: /ovl/hl on the tree's file system
# (hostfs under `linux`), /t/l2 and the upper /t/u on a tmpfs.
P=/opt/um/ovlprobe
/bin/busybox --install -s /bin 2>/dev/null
say() { echo "$*"; }
one() { tr '\n' ' ' | sed 's/ *$//'; }
mkdir -p /proc /sys /t
mount -t proc proc /proc 2>/dev/null
mount -t sysfs sysfs /sys 2>/dev/null
rm -rf /ovl
mkdir -p /ovl/hl/dir/sub /ovl/hl/rmd /ovl/hl/op /ovl/hl/mvdir
echo hl-a >/ovl/hl/a
echo hl-x >/ovl/hl/dir/x
echo deep >/ovl/hl/dir/sub/deep
echo gone >/ovl/hl/gone
echo f >/ovl/hl/rmd/f
echo old >/ovl/hl/op/old
echo m >/ovl/hl/mvdir/m
echo own >/ovl/hl/owned
chmod 644 /ovl/hl/owned
touch -d '2001-01-01 00:00:00' /ovl/hl/owned
echo mapped-text >/ovl/hl/mapme
mount -t tmpfs tmpfs /t
mkdir /t/l2 /t/l2/dir /t/u /t/w /t/m /t/m2 /t/ro
echo shadow >/t/l2/a
echo tl >/t/l2/tfile
echo b >/t/l2/dir/b
M=/t/m
mount -t overlay overlay -o lowerdir=/ovl/hl:/t/l2,upperdir=/t/u,workdir=/t/w $M && say "MOUNT ok"
say "READ-A $(cat $M/a)"
say "READ-T $(cat $M/tfile)"
say "LS-ROOT $(ls $M | one)"
say "LS-DIR $(ls $M/dir | one)"
say "LS-UPPER0 [$(ls -A /t/u | one)]"
say "WORK $(ls -A /t/w | one) $(stat -c '%a %F' /t/w/work)"
echo more >>$M/a
say "WRITE-A $(cat $M/a | one)"
say "LOWER-A $(cat /ovl/hl/a)"
say "UPPER-A $(cat /t/u/a | one)"
rm $M/gone
say "UNLINK $(test -e $M/gone && echo still || echo gone) $(stat -c '%F %t:%T %a %s' /t/u/gone)"
rm -r $M/rmd
say "RMDIR $(test -e $M/rmd && echo still || echo gone) $(stat -c '%F %t:%T' /t/u/rmd)"
rm -r $M/op
mkdir $M/op
say "OPAQUE [$(ls -A $M/op)] $($P getxattr /t/u/op trusted.overlay.opaque) $($P getxattr $M/op trusted.overlay.opaque)"
say "SET-PRIVATE $($P setxattr $M/a trusted.overlay.opaque y)"
say "LS-MERGED $(ls -A $M | one)"
say "LS-UPPER $(ls -A /t/u | one)"
say "RENAME-LOWERDIR $($P rename $M/mvdir $M/mvdir2)"
mv $M/mvdir $M/mvdir3
say "MV-DIR $(ls $M/mvdir3) $(test -e $M/mvdir && echo left || echo moved) $(stat -c '%F %t:%T' /t/u/mvdir)"
say "RENAME-FILE $($P rename $M/tfile $M/tfile2) $(cat $M/tfile2) $(test -e $M/tfile && echo left || echo moved) $(stat -c '%F %t:%T' /t/u/tfile)"
mkdir $M/newdir
say "RENAME-UPPERDIR $($P rename $M/newdir $M/newdir2) $(ls -d $M/newdir2)"
chmod 600 $M/owned
chown 12:34 $M/owned
say "CHOWN $(stat -c '%a %u %g %Y' $M/owned) lower $(stat -c '%a %u %g %Y' /ovl/hl/owned) upper $(cat /t/u/owned)"
$P mmap $M/mapme
say "MAP-LOWER $(cat /ovl/hl/mapme) MAP-MERGED $(cat $M/mapme)"
dm=$(stat -c %d $M)
du=$(stat -c %d /t/u)
da=$(stat -c %d $M/a)
db=$(stat -c %d $M/dir/b)
dx=$(stat -c %d $M/dir/x)
say "DEV dir-is-overlay=$([ "$dm" != "$du" ] && echo y) upper-file=$([ "$da" = "$du" ] && echo y) lower-own=$([ "$db" != "$du" ] && [ "$db" != "$dm" ] && echo y) layers-differ=$([ "$db" != "$dx" ] && echo y)"
say "INO upper=$([ "$(stat -c %i $M/a)" = "$(stat -c %i /t/u/a)" ] && echo y) stable=$([ "$(stat -c %i $M/dir)" = "$(stat -c %i $M/dir/.)" ] && echo y)"
say "STATFS $(stat -f -c %t $M)"
say "MOUNTINFO $(grep " $M " /proc/self/mountinfo | sed 's/.* - //; s/,uuid=on//')"
say "PARAMS $(cd /sys/module/overlay/parameters && cat redirect_dir index metacopy nfs_export xino_auto redirect_max | one)"
say "FILESYSTEMS $(grep -c 'nodev.overlay$' /proc/filesystems)"
mount -t overlay overlay -o lowerdir=/t/u:/ovl/hl:/t/l2 /t/m2 && say "MOUNT2 ok"
say "OVL2-LS $(ls -A /t/m2 | one)"
say "OVL2-OPAQUE [$(ls -A /t/m2/op)] $(cat /t/m2/a | one) $(stat -c '%a %u %g' /t/m2/owned)"
say "OVL2-RO $($P rename /t/m2/a /t/m2/b)"
umount /t/m2 && say "UMOUNT2 ok"
mkdir /ovl/hu /ovl/hw
mount -t overlay overlay -o lowerdir=/t/l2,upperdir=/ovl/hu,workdir=/ovl/hw /t/m2 && say "MOUNT-HOSTFS-UPPER ok"
rm /t/m2/a
echo new >/t/m2/n
rm -r /t/m2/dir
mkdir /t/m2/dir
say "HOSTFS-UPPER $(ls -A /t/m2 | one) [$(ls -A /t/m2/dir)] $(stat -c '%F %t:%T' /ovl/hu/a) $(cat /ovl/hu/n) $($P getxattr /ovl/hu/dir trusted.overlay.opaque)"
umount /t/m2
mount -t tmpfs -o ro tmpfs /t/ro
say "RO-UPPER $(mount -t overlay overlay -o lowerdir=/t/l2,upperdir=/t/ro,workdir=/t/w /t/m2 2>&1 | sed 's/.*: //')"
say "ONE-LOWER $(mount -t overlay overlay -o lowerdir=/t/l2 /t/m2 2>&1 | sed 's/.*: //')"
say "NO-WORKDIR $(mount -t overlay overlay -o lowerdir=/t/l2,upperdir=/t/u /t/m2 2>&1 | sed 's/.*: //')"
umount $M && say "UMOUNT ok"
say "AFTER [$(ls -A $M | one)] $(ls -A /t/u | one)"
say "OVERLAY-GATE-DONE"
