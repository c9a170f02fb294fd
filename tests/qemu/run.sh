#!/usr/bin/env bash
# Functional test against QEMU's emulated NVMe controller (issue 7).
#
# Boots a q35 guest under TCG with an emulated Intel IOMMU and two NVMe
# controllers, on Debian's stock kernel and a busybox initramfs, and runs the
# guest test program inside it as root:
#   0000:00:04.0  serial ls0  a raw disk with a synthetic GGUF at LBA $lba
#   0000:00:05.0  serial ls1  a disk with an MBR partition table (the same
#                             GGUF inside its first partition): bind must refuse it
# With --slow-nvme, a third:
#   0000:00:06.0  serial ls2  a copy of disk 0 behind QEMU's block throttling
#                             (reads at 256 KiB/s after a burst): a read that
#                             waits in QEMU, for the command-timeout test
# The guest program gets the first address as its first argument, then the
# arguments given after "--"; it also sees LS_NVME, LS_NVME_LBA, LS_NVME_PARTITIONED
# and LS_MODEL (the GGUF file, in the initramfs) in its environment, and
# LS_NVME_SLOW (--slow-nvme) and LS_CLI (--cli: the layerstream binary) when asked.
#
# Fails on: no "LS_QEMU_RESULT 0" line (the guest program failed, the guest
# panicked or hung past the timeout), any DMAR fault in the guest's kernel log,
# any translation failure on QEMU's stderr. QEMU 7.2's NVMe completes a command
# with status 0 even when its DMA faulted in the IOMMU, so the last two are the
# only evidence of a bad mapping.
#
# Usage: tests/qemu/run.sh [--build DIR] [--guest PROGRAM] [--timeout S]
#                          [--expect-dma-fault] [--slow-nvme] [--cli] [--keep]
#                          [-- GUEST_ARGS...]
#   --build DIR          where layerstream and ls_qemu_guest are (default: build)
#   --guest PROGRAM      statically linked guest program (default: DIR/ls_qemu_guest)
#   --expect-dma-fault   invert the fault check: pass only if a DMAR fault is seen
#                        (proves the detector works)
#   --slow-nvme          add the throttled third controller (LS_NVME_SLOW)
#   --cli                put DIR/layerstream in the guest with the shared libraries
#                        it loads (LS_CLI=/guest/layerstream)
#   --keep               keep the work directory (console log, QEMU stderr, images)
# Environment: LS_QEMU_CACHE (default ~/.cache/layerstream-qemu): the kernel;
#   LS_QEMU_NO_INSTALL=1: never apt-get install, skip instead.
# Exit status: 0 pass, 1 fail, 77 skipped (prints "SKIPPED: ..." and why).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

build=$root/build
guest=
timeout_s=300
expect_fault=0
slow_nvme=0
with_cli=0
keep=0
guest_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --guest) guest=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --expect-dma-fault) expect_fault=1; shift ;;
    --slow-nvme) slow_nvme=1; shift ;;
    --cli) with_cli=1; shift ;;
    --keep) keep=1; shift ;;
    --) shift; guest_args=("$@"); break ;;
    *) echo "run.sh: unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
guest=${guest:-$build/ls_qemu_guest}
cache=${LS_QEMU_CACHE:-${HOME:-/tmp}/.cache/layerstream-qemu}
t_start=$(date +%s.%N)

skip() { echo "SKIPPED: QEMU NVMe test: $*"; exit 77; }
fail() { echo "FAIL: QEMU NVMe test: $*"; exit 1; }
elapsed() { echo "$(date +%s.%N) $1" | awk '{ printf "%.1f", $1 - $2 }'; }

[ "$(uname -m)" = x86_64 ] || skip "needs an x86_64 host (the guest is q35)"
[ -x "$guest" ] || fail "no guest program $guest (build the ls_qemu_guest target)"
[ -x "$build/layerstream" ] || fail "no $build/layerstream (build the layerstream target)"

# ---- Host packages ---------------------------------------------------------------
# /bin/busybox must be the static one: the initramfs has no libc.
busybox_static() { dpkg-query -W -f '${Status}' busybox-static 2> /dev/null | grep -q 'ok installed'; }
need=()
command -v qemu-system-x86_64 > /dev/null || need+=(qemu-system-x86)
busybox_static || need+=(busybox-static)
command -v cpio > /dev/null || need+=(cpio)
if [ ${#need[@]} -gt 0 ]; then
  [ "${LS_QEMU_NO_INSTALL:-0}" != 1 ] || skip "missing ${need[*]} and LS_QEMU_NO_INSTALL=1"
  [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null || skip "missing ${need[*]}; not root with apt-get to install them"
  echo "run.sh: apt-get install ${need[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}" > /dev/null 2>&1 ||
    { apt-get update > /dev/null 2>&1 &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}" > /dev/null 2>&1; } ||
    skip "apt-get install ${need[*]} failed"
fi
# qboot boots in a fraction of SeaBIOS's time; it ships in qemu-system-data.
bios=()
[ -f /usr/share/qemu/qboot.rom ] && bios=(-bios /usr/share/qemu/qboot.rom)

kdir=$("$here/fetch_kernel.sh" "$cache") || skip "cannot fetch Debian's kernel package into $cache"
t_ready=$(date +%s.%N)

# ---- Work directory: disks and initramfs --------------------------------------------
work=$(mktemp -d "${TMPDIR:-/tmp}/ls-qemu.XXXXXX")
if [ "$keep" = 1 ]; then
  echo "run.sh: work directory $work"
else
  trap 'rm -rf "$work"' EXIT
fi

lba=2048                  # where the GGUF starts, in 512-byte blocks (QEMU's default block size)
"$build/layerstream" synth -q -o "$work/model.gguf" --preset tiny --quant q8_0 ||
  fail "layerstream synth failed"
model_bytes=$(stat -c %s "$work/model.gguf")
disk_mib=$(( (lba * 512 + model_bytes) / 1048576 + 2 ))

# Disk 0: zeros, the GGUF at LBA $lba.
truncate -s "${disk_mib}M" "$work/disk0.img"
dd if="$work/model.gguf" of="$work/disk0.img" bs=512 seek="$lba" conv=notrunc status=none

# Disk 1: the same, plus an MBR whose one Linux partition (type 0x83) starts at
# LBA $lba and runs to the end of the disk.
cp "$work/disk0.img" "$work/disk1.img"
le32() { printf "\\x$(printf %02x $(($1 & 255)))\\x$(printf %02x $(($1 >> 8 & 255)))\\x$(printf %02x $(($1 >> 16 & 255)))\\x$(printf %02x $(($1 >> 24 & 255)))"; }
{
  printf '\x00\xfe\xff\xff\x83\xfe\xff\xff'   # not bootable, CHS unused, type 0x83
  le32 "$lba"
  le32 $((disk_mib * 2048 - lba))
} | dd of="$work/disk1.img" bs=1 seek=446 conv=notrunc status=none
printf '\x55\xaa' | dd of="$work/disk1.img" bs=1 seek=510 conv=notrunc status=none
# Disk 2 (--slow-nvme): disk 0 again; QEMU throttles it below.
[ "$slow_nvme" = 0 ] || cp "$work/disk0.img" "$work/disk2.img"
# Disk 3: the disk of a whole-disk file system (no partition table): disk 0
# with an ext4 superblock's magic (0xEF53 at byte 1024 + 56), for the bind
# refusal of a namespace that holds a file system.
cp "$work/disk0.img" "$work/disk3.img"
printf '\x53\xef' | dd of="$work/disk3.img" bs=1 seek=1080 conv=notrunc status=none

# Initramfs: busybox, /init, the modules, the guest program and the model.
ird=$work/initramfs
mkdir -p "$ird/bin" "$ird/lib/modules" "$ird/guest"
cp /bin/busybox "$ird/bin/busybox"
cp "$here/init.sh" "$ird/init"
cp "$kdir"/modules/*.ko "$kdir/modules.load" "$ird/lib/modules/"
cp "$guest" "$ird/guest/"
cp "$work/model.gguf" "$ird/guest/model.gguf"
guest_env="LS_NVME=0000:00:04.0 LS_NVME_LBA=$lba LS_NVME_PARTITIONED=0000:00:05.0 LS_NVME_FS=0000:00:07.0 LS_MODEL=/guest/model.gguf"
if [ "$with_cli" = 1 ]; then
  # The CLI as built (dynamically linked): the loader and every library ldd
  # lists, at the same paths, so the guest runs the very binary under test.
  cp "$build/layerstream" "$ird/guest/layerstream"
  for lib in $(ldd "$build/layerstream" | grep -o '/[^ ]*'); do
    mkdir -p "$ird$(dirname "$lib")"
    cp -L "$lib" "$ird$lib"
  done
  guest_env+=" LS_CLI=/guest/layerstream"
fi
if [ "$slow_nvme" = 1 ]; then
  echo "nvme0n1 nvme1n1 nvme2n1 nvme3n1" > "$ird/guest/wait"
  guest_env+=" LS_NVME_SLOW=0000:00:06.0"
else
  echo "nvme0n1 nvme1n1 nvme2n1" > "$ird/guest/wait"
fi
{
  echo "export $guest_env"
  printf './%s "$LS_NVME"' "$(basename "$guest")"
  [ ${#guest_args[@]} -eq 0 ] || printf ' %q' "${guest_args[@]}"
  echo
} > "$ird/guest/run"
(cd "$ird" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) > "$work/initramfs.cpio"

# ---- Boot -----------------------------------------------------------------------------
# intel-iommu first: it must exist before the devices it translates for.
# intremap=on: without interrupt remapping VFIO_SET_IOMMU fails with EPERM,
# and remapping under q35 needs the split irqchip. -nic none: no network ROM.
qemu=(qemu-system-x86_64 -machine q35,kernel-irqchip=split -accel tcg -m 1G -smp 1
  "${bios[@]}" -display none -monitor none -serial "file:$work/console.log" -nic none -no-reboot
  -device intel-iommu,intremap=on,caching-mode=on
  -drive "file=$work/disk0.img,if=none,id=d0,format=raw"
  -device nvme,serial=ls0,drive=d0,bus=pcie.0,addr=0x4
  -drive "file=$work/disk1.img,if=none,id=d1,format=raw"
  -device nvme,serial=ls1,drive=d1,bus=pcie.0,addr=0x5
  -drive "file=$work/disk3.img,if=none,id=d3,format=raw"
  -device nvme,serial=ls3,drive=d3,bus=pcie.0,addr=0x7
  -kernel "$kdir/vmlinux" -initrd "$work/initramfs.cpio"
  -append "console=ttyS0 intel_iommu=on quiet panic=-1")
# Throttled: after a burst of a tenth of a second's worth, reads wait in QEMU
# (a 512 KiB read then waits about 2 s), while the guest's own boot-time
# reads of a few KiB hardly notice.
[ "$slow_nvme" = 0 ] || qemu+=(
  -drive "file=$work/disk2.img,if=none,id=d2,format=raw,throttling.bps-read=262144"
  -device nvme,serial=ls2,drive=d2,bus=pcie.0,addr=0x6)
t_boot=$(date +%s.%N)
qemu_rc=0
timeout "$timeout_s" "${qemu[@]}" > "$work/qemu.out" 2> "$work/qemu.err" || qemu_rc=$?
boot_s=$(elapsed "$t_boot")

# ---- Verdict -------------------------------------------------------------------------------
console=$work/console.log
touch "$console"
echo "---- guest (serial console, test lines) ----"
grep -E '^(LS_QEMU|LS_GUEST)' "$console" | grep -v '^LS_QEMU_DMESG' || true
sed -n '/^LS_QEMU_DMESG_BEGIN/,/^LS_QEMU_DMESG_END/p' "$console" > "$work/dmesg.log"
dmar_faults=$(grep -E 'DMAR.*([Ff]ault|\[DMA (Read|Write)|INTR-REMAP)' "$work/dmesg.log" || true)
qemu_faults=$(grep -Ei 'detected (translation failure|IOVA overflow|read error on DMAR|slpte permission|splte reserve)' \
  "$work/qemu.err" || true)
result=$(sed -n 's/^LS_QEMU_RESULT \([0-9]*\).*/\1/p' "$console" | tail -n 1)

problems=()
[ "$qemu_rc" != 124 ] || problems+=("timed out after $timeout_s s")
[ -n "$result" ] || problems+=("no result marker on the console (guest crashed or hung; QEMU exit $qemu_rc)")
[ -z "$result" ] || [ "$result" = 0 ] || problems+=("guest test program exited $result")
[ -s "$work/dmesg.log" ] || problems+=("no kernel log between the dmesg markers")
if [ "$expect_fault" = 1 ]; then
  [ -n "$dmar_faults" ] || problems+=("expected a DMAR fault in the guest's kernel log, saw none")
  [ -n "$qemu_faults" ] || problems+=("expected a translation failure on QEMU's stderr, saw none")
  [ -z "$dmar_faults" ] || echo "DMAR fault seen (expected):"$'\n'"$dmar_faults"
  [ -z "$qemu_faults" ] || echo "QEMU translation failure seen (expected):"$'\n'"$qemu_faults"
else
  [ -z "$dmar_faults" ] || problems+=("DMAR fault in the guest's kernel log:"$'\n'"$dmar_faults")
  [ -z "$qemu_faults" ] || problems+=("translation failure on QEMU's stderr:"$'\n'"$qemu_faults")
  if [ -s "$work/dmesg.log" ] && [ -z "$dmar_faults$qemu_faults" ]; then
    echo "no DMAR fault in the guest's kernel log ($(wc -l < "$work/dmesg.log") lines); no translation failure on QEMU's stderr"
  fi
fi

echo "timing: setup $(echo "$t_ready $t_start" | awk '{ printf "%.1f", $1 - $2 }') s, boot+test ${boot_s} s, total $(elapsed "$t_start") s"
if [ ${#problems[@]} -gt 0 ]; then
  echo "---- last 40 console lines ----"
  tail -n 40 "$console"
  echo "---- QEMU stderr ----"
  tail -n 20 "$work/qemu.err"
  for p in "${problems[@]}"; do echo "FAIL: $p"; done
  exit 1
fi
echo "PASS: QEMU NVMe test ($(basename "$guest") ${guest_args[*]})"
