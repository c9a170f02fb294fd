#!/usr/bin/env bash
# Fetch Debian's stock kernel into the cache and prepare what the guest boots:
#   CACHE/KVER/vmlinux        the kernel, uncompressed (it boots faster than vmlinuz)
#   CACHE/KVER/modules/*.ko   the modules the test needs and their dependencies
#   CACHE/KVER/modules.load   their file names, in load order (dependencies first)
# Prints CACHE/KVER on stdout. Usage: fetch_kernel.sh CACHE
# The package is the one linux-image-amd64 depends on today; when the mirror
# cannot be reached, the newest kernel already in the cache is used.
set -euo pipefail
cache=$1
mkdir -p "$cache"

# The modules the guest loads; their dependencies are added from each
# module's own "depends=" field (the .deb has no modules.dep: depmod makes it
# at install time).
wanted="vfio vfio_iommu_type1 vfio-pci nvme"

pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
  awk '/Depends: linux-image-[0-9]/ { print $2; exit }' || true)
if [ -z "$pkg" ]; then
  dir=$(ls -d "$cache"/*/modules.load 2> /dev/null | sort -V | tail -n 1 || true)
  [ -n "$dir" ] || { echo "fetch_kernel: no kernel package known and none cached" >&2; exit 1; }
  echo "fetch_kernel: apt-cache does not know linux-image-amd64; using the cached ${dir%/modules.load}" >&2
  echo "${dir%/modules.load}"
  exit 0
fi
kver=${pkg#linux-image-}
out=$cache/$kver
if [ -f "$out/vmlinux" ] && [ -f "$out/modules.load" ]; then
  echo "$out"
  exit 0
fi

work=$(mktemp -d "$cache/tmp.XXXXXX")
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download "$pkg" >&2) || { echo "fetch_kernel: apt-get download $pkg failed" >&2; exit 1; }
dpkg-deb -x "$work"/*.deb "$work/root"
moddir="$work/root/lib/modules/$kver"
vmlinuz="$work/root/boot/vmlinuz-$kver"

# vmlinuz is a boot stub followed by the compressed kernel: find the stream by
# its magic and decompress it (Debian 12 uses xz; gzip and zstd are here too).
unpack_kernel() {
  local src=$1 dst=$2 pair magic tool off
  for pair in '\xfd7zXZ\x00:xz -dc' '\x1f\x8b\x08:gzip -dc' '\x28\xb5\x2f\xfd:zstd -dc'; do
    magic=${pair%%:*}
    tool=${pair#*:}
    # Every occurrence of the magic; the first that decodes to ELF is the kernel.
    for off in $(LC_ALL=C grep -obUaP "$magic" "$src" | cut -d: -f1); do
      tail -c +$((off + 1)) "$src" | $tool 2>/dev/null > "$dst" || true
      [ "$(head -c 4 "$dst" | od -An -tx1 | tr -d ' ')" = 7f454c46 ] && return 0
    done
  done
  return 1
}

mkdir -p "$work/out/modules"
unpack_kernel "$vmlinuz" "$work/out/vmlinux" || { echo "fetch_kernel: cannot unpack $vmlinuz" >&2; exit 1; }

# name (dashes and underscores are the same to the kernel) -> path
declare -A path_of
while IFS= read -r f; do
  n=${f##*/}
  n=${n%.ko}
  path_of[${n//-/_}]=$f
done < <(find "$moddir/kernel" -name '*.ko')

declare -A seen
order=()
add_module() {
  local key=${1//-/_} f deps d
  [ -z "${seen[$key]:-}" ] || return 0
  seen[$key]=1
  f=${path_of[$key]:-}
  [ -n "$f" ] || { echo "fetch_kernel: module $1 not in $pkg" >&2; exit 1; }
  deps=$(tr '\0' '\n' < "$f" | sed -n 's/^depends=//p' | head -n 1)
  for d in ${deps//,/ }; do add_module "$d"; done
  order+=("${f##*/}")
  cp "$f" "$work/out/modules/"
}
for m in $wanted; do add_module "$m"; done
printf '%s\n' "${order[@]}" > "$work/out/modules.load"
cp "$work/root/boot/config-$kver" "$work/out/config"

# One rename: a concurrent run either sees the whole directory or none (if
# two fetch at once, the second rename fails and its copy is dropped).
mv -T "$work/out" "$out" 2> /dev/null || true
[ -f "$out/modules.load" ] || { echo "fetch_kernel: could not create $out" >&2; exit 1; }
echo "$out"
