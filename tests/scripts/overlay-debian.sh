# overlayfs on Debian 12 (tests/tests/overlay.rs `debian_coreutils`): coreutils mv's copy after
# EXDEV, python3's raw errno, userxattr (user.overlay.opaque), cp -a, mountinfo. Layers on a
# tmpfs on /mnt: the (shared, read-only) tree is not written.
mount -t proc proc /proc 2>/dev/null
mount -t tmpfs tmpfs /mnt
cd /mnt && mkdir l u w m l/d l/ld && echo x >l/d/x && echo f >l/f && echo q >l/ld/q
mount -t overlay overlay -o lowerdir=/mnt/l,upperdir=/mnt/u,workdir=/mnt/w,userxattr /mnt/m && echo "DEB-MOUNT ok"
echo "DEB-RENAME $(python3 -c "
import os
try:
    os.rename('/mnt/m/ld', '/mnt/m/ld2'); print('ok')
except OSError as e:
    print(os.strerror(e.errno))")"
mv /mnt/m/d /mnt/m/d2 && echo "DEB-MV $(ls /mnt/m | tr '\n' ' ')$(cat /mnt/m/d2/x) $(stat -c '%F %t:%T' /mnt/u/d)"
rm -r /mnt/m/ld && mkdir /mnt/m/ld
echo "DEB-OPAQUE $(python3 -c "import os; print(os.getxattr('/mnt/u/ld', 'user.overlay.opaque').decode())") [$(ls -A /mnt/m/ld)]"
cp -a /mnt/m/f /mnt/m/f2 && chmod 700 /mnt/m/f && echo "DEB-CHMOD $(stat -c '%a' /mnt/m/f /mnt/l/f | tr '\n' ' ')"
echo "DEB-MOUNTINFO $(grep ' /mnt/m ' /proc/self/mountinfo | sed 's/.* - //; s/,uuid=on//')"
umount /mnt/m && echo "DEB-UMOUNT ok"
echo OVERLAY-DEBIAN-DONE
