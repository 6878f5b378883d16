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
# The calls a shell cannot make (python3): O_TMPFILE, link, utime, truncate, flock,
# fallocate, xattrs, rename over a file and of a lower directory, symlink, mkfifo.
mkdir /mnt/p /mnt/p/l /mnt/p/u /mnt/p/w /mnt/p/m /mnt/p/l/d
echo data >/mnt/p/l/f; echo big >/mnt/p/l/g; echo h >/mnt/p/l/d/h
mount -t overlay overlay -o lowerdir=/mnt/p/l,upperdir=/mnt/p/u,workdir=/mnt/p/w /mnt/p/m
python3 - <<'PY'
import os, fcntl, errno
m='/mnt/p/m'
def t(name, f):
    try: print('DEB-PY-' + name, f())
    except OSError as e: print('DEB-PY-' + name, errno.errorcode[e.errno])
fd = os.open(m, os.O_TMPFILE|os.O_RDWR, 0o600)
os.write(fd, b'tmp')
t('TMPFILE-LINK', lambda: os.link('/proc/self/fd/%d' % fd, m+'/linked', follow_symlinks=True) or open(m+'/linked').read())
t('HARDLINK', lambda: os.link(m+'/f', m+'/f2') or (os.stat(m+'/f').st_nlink, open(m+'/f2').read().strip()))
t('UTIME', lambda: os.utime(m+'/g', (1000000000, 1000000000)) or (os.stat(m+'/g').st_mtime, os.stat('/mnt/p/l/g').st_mtime != 1000000000))
t('TRUNC', lambda: os.truncate(m+'/d/h', 0) or (os.stat(m+'/d/h').st_size, os.stat('/mnt/p/l/d/h').st_size))
def fl():
    f = open(m+'/f', 'rb'); fcntl.flock(f, fcntl.LOCK_EX); fcntl.flock(f, fcntl.LOCK_UN); return 'ok'
t('FLOCK', fl)
def fa():
    fd = os.open(m+'/g', os.O_RDWR); os.posix_fallocate(fd, 0, 8192); return os.fstat(fd).st_size
t('FALLOC', fa)
t('XATTR', lambda: os.setxattr(m+'/f', 'user.k', b'v') or (os.getxattr(m+'/f','user.k'), os.listxattr(m+'/f'), os.listxattr('/mnt/p/l/f')))
t('RMXATTR-LOWER', lambda: os.removexattr(m+'/d', 'user.none'))
t('RENAME-OVER', lambda: os.rename(m+'/f2', m+'/g') or sorted(os.listdir(m)))
t('EXCHANGE-DIRS', lambda: os.rename(m+'/d', m+'/e'))
t('SYMLINK', lambda: os.symlink('f', m+'/s') or os.readlink(m+'/s'))
t('MKNOD', lambda: os.mkfifo(m+'/p') or oct(os.stat(m+'/p').st_mode))
t('UPPER', lambda: sorted(os.listdir('/mnt/p/u')))
t('STATFS', lambda: os.statvfs(m).f_bsize > 0)
PY
umount /mnt/p/m
echo OVERLAY-DEBIAN-DONE
