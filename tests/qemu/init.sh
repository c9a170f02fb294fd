#!/bin/busybox sh
# /init of the QEMU test guest (tests/qemu/run.sh puts it in the initramfs).
# Mounts proc/sys/dev, loads the modules in /lib/modules/modules.load, waits
# for the block devices named in /guest/wait, runs /guest/run (the test
# command run.sh wrote), prints the kernel log between markers so run.sh can
# scan it for DMAR faults, prints the result marker and powers off.
/bin/busybox --install -s /bin
export PATH=/bin
mkdir -p /proc /sys /dev /tmp
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
echo "LS_QEMU init: kernel $(uname -r), cmdline: $(cat /proc/cmdline)"

while read -r m; do
  insmod "/lib/modules/$m" || echo "LS_QEMU init: insmod $m failed"
done < /lib/modules/modules.load

# The nvme driver finishes its probe asynchronously: wait (10 s at most) for
# every namespace, so the test starts from a settled state.
for b in $(cat /guest/wait); do
  i=0
  while [ ! -e "/sys/block/$b" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  [ -e "/sys/block/$b" ] || echo "LS_QEMU init: /sys/block/$b did not appear"
done

echo "LS_QEMU test start at $(cut -d' ' -f1 /proc/uptime) s: $(tail -n 1 /guest/run)"
(cd /guest && sh /guest/run)
rc=$?
echo "LS_QEMU test end at $(cut -d' ' -f1 /proc/uptime) s"
echo "LS_QEMU_DMESG_BEGIN"
dmesg
echo "LS_QEMU_DMESG_END"
echo "LS_QEMU_RESULT $rc"
poweroff -f
