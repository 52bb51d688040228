#!/usr/bin/env bash
# tests/linux/build_image.sh: builds the Linux Soft-RoCE guest of the test bed.
#
# Owns build/linux/bzImage (Debian's kernel, as shipped) and
# build/linux/initrd.img, two gzip'd newc cpio archives one after the other:
# base.cpio.gz (busybox, iproute2, rdma-core's verbs/rdma_cm libraries and
# tools, perftest, the few kernel modules rxe and netem need,
# tests/linux/init as /init), remade only when this script or /init
# changes, and overlay.cpio.gz (build/linux/overlay/ and the libraries its
# programs need beyond the base's), remade every run: a second.
# Everything comes from Debian packages fetched with `apt-get download` into
# build/linux/debs/ (a cache: a package is fetched again only when apt's
# candidate version changes) and unpacked with `dpkg -x`; nothing else is
# downloaded. Host tools: apt-get, dpkg, readelf (binutils), depmod and
# modinfo (kmod), ldconfig, cpio, gzip. Run by `make linux-image`
# (tests/linux/linux.mk); safe to run again by hand.
#
# Environment: LINUX_OUT (default <repo>/build/linux); LINUX_REFRESH=1
# remakes the base with the package versions apt offers now.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
OUT=${LINUX_OUT:-$REPO/build/linux}
DEBS=$OUT/debs            # the .deb cache
TREE=$OUT/tree            # every package unpacked (dpkg -x)
ROOT=$OUT/root            # the initramfs, staged
OVERLAY=$OUT/overlay      # extra files (the peer program)
OVROOT=$OUT/overlay-root  # the overlay and the libraries it needs beyond ROOT's
# What the base archive is made from, besides the packages.
BASE_INPUTS=("$HERE/$(basename "$0")" "$HERE/init")
MULTIARCH=x86_64-linux-gnu

# The packages whose programs go into the image. Debian's dynamic busybox,
# not busybox-static: the static one's shell runs its own applets before
# anything on PATH, so `ip`, `tc` and `ss` would never be iproute2's. Their shared libraries are
# found by following Depends (lib* packages and zlib1g only) and then kept only if some
# program or library in the image NEEDs them.
TOOL_PACKAGES=(busybox libc6 libgcc-s1 iproute2 rdma-core libibverbs1 ibverbs-providers
               librdmacm1 ibverbs-utils rdmacm-utils perftest)

# Kernel modules to load (dependencies are added from modinfo).
MODULES=(e1000 crc32_generic ib_core ib_uverbs rdma_rxe configfs ib_cm iw_cm rdma_cm
         rdma_ucm sch_netem bridge)

# Programs copied from the unpacked packages (busybox provides the rest).
PROGRAMS=(bin/ip bin/ss sbin/tc sbin/bridge usr/bin/rdma)
PROGRAM_DIRS_FROM=(ibverbs-utils rdmacm-utils perftest)   # all of their usr/bin

log() { echo "linux-image: $*"; }
die() { echo "linux-image: error: $*" >&2; exit 1; }

# ---- packages ---------------------------------------------------------------

kernel_package() {
  apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ {print $2; exit}'
}

# The library packages (lib*, zlib1g) the given packages depend on, transitively (names on stdout).
library_closure() {
  local -A seen=()
  local todo=("$@") next p
  while [ ${#todo[@]} -gt 0 ]; do
    next=()
    for p in "${todo[@]}"; do seen[$p]=1; done
    while read -r p; do
      [ -n "${seen[$p]:-}" ] || { seen[$p]=1; next+=("$p"); }
    done < <(apt-cache depends --no-recommends --no-suggests --no-conflicts --no-breaks \
               --no-replaces --no-enhances "${todo[@]}" |
             sed -n -E 's/^ +\|?(Pre)?Depends: (lib[^ <>]*|zlib1g)$/\2/p' | sort -u)
    todo=("${next[@]}")
  done
  printf '%s\n' "${!seen[@]}" | sort
}

# Downloads what the cache lacks; writes the list of .deb files to use.
fetch_packages() {
  local kpkg=$1 file
  mkdir -p "$DEBS"
  mapfile -t pkgs < <(library_closure "${TOOL_PACKAGES[@]}" "$kpkg")
  apt-get download --print-uris "${pkgs[@]}" | awk '{print $2}' > "$OUT/debs.list.new"
  [ -s "$OUT/debs.list.new" ] || die "apt-get download --print-uris gave nothing (apt-get update?)"
  local missing=()
  while read -r file; do
    [ -f "$DEBS/$file" ] || missing+=("$file")
  done < "$OUT/debs.list.new"
  if [ ${#missing[@]} -gt 0 ]; then
    log "downloading ${#missing[@]} packages into $DEBS"
    # apt names the file itself; download by package name (the part before _).
    (cd "$DEBS" && apt-get download -q "${missing[@]%%_*}" 2>&1 |
       grep -v '^W: Download is performed unsandboxed' || true)   # checked below
  fi
  while read -r file; do
    [ -f "$DEBS/$file" ] || die "$file was not downloaded"
  done < "$OUT/debs.list.new"
  mv "$OUT/debs.list.new" "$OUT/debs.list"
}

# Unpacks every listed .deb into TREE, unless TREE already holds exactly these.
unpack_packages() {
  if [ -f "$TREE/.debs" ] && cmp -s "$TREE/.debs" "$OUT/debs.list"; then
    return
  fi
  log "unpacking $(wc -l < "$OUT/debs.list") packages"
  rm -rf "$TREE" && mkdir -p "$TREE"
  while read -r file; do dpkg -x "$DEBS/$file" "$TREE"; done < "$OUT/debs.list"
  cp "$OUT/debs.list" "$TREE/.debs"
}

# ---- the root file system ---------------------------------------------------

stage_busybox() {
  mkdir -p "$ROOT"/{bin,sbin,usr/bin,usr/sbin,usr/local/bin,proc,sys,dev,tmp,run,etc,root,lib64}
  cp "$TREE/bin/busybox" "$ROOT/bin/busybox"
  local applet
  for applet in $("$TREE/bin/busybox" --list-full); do
    [ -e "$ROOT/$applet" ] || ln -s /bin/busybox "$ROOT/$applet"
  done
}

# Copies program $1 (a path in TREE) to the same path in ROOT, removing
# busybox's applet of that name wherever PATH would find it first.
add_program() {
  local d
  for d in bin sbin usr/bin usr/sbin; do
    [ -L "$ROOT/$d/$(basename "$1")" ] && rm -f "$ROOT/$d/$(basename "$1")"
  done
  cp -L "$TREE/$1" "$ROOT/$1"
}

stage_programs() {
  local p pkg
  for p in "${PROGRAMS[@]}"; do add_program "$p"; done
  for pkg in "${PROGRAM_DIRS_FROM[@]}"; do
    for p in $(dpkg -c "$DEBS/$(grep "^${pkg}_" "$OUT/debs.list")" | awk '{print $6}' |
               sed -n 's|^\./\(usr/bin/.\+\)|\1|p'); do
      add_program "$p"
    done
  done
  # libibverbs loads its provider by the .driver file; tc reads its delay
  # distributions (not its ATM and xtables plugins) and iproute2 its tables.
  mkdir -p "$ROOT/etc/libibverbs.d" "$ROOT/usr/lib/$MULTIARCH/libibverbs"
  cp "$TREE/etc/libibverbs.d/rxe.driver" "$ROOT/etc/libibverbs.d/"
  cp -L "$TREE/usr/lib/$MULTIARCH/libibverbs/librxe-rdmav34.so" "$ROOT/usr/lib/$MULTIARCH/libibverbs/"
  mkdir -p "$ROOT/usr/lib/$MULTIARCH/tc"
  cp "$TREE/usr/lib/$MULTIARCH/tc/"*.dist "$ROOT/usr/lib/$MULTIARCH/tc/"
  cp -r "$TREE/etc/iproute2" "$ROOT/etc/"
}

# Where a NEEDED library lives in TREE (first match), or nothing.
find_library() {
  local d
  for d in "lib/$MULTIARCH" "usr/lib/$MULTIARCH" lib64 lib usr/lib; do
    if [ -e "$TREE/$d/$1" ]; then echo "$TREE/$d/$1"; return; fi
  done
}

# The libraries ELF file $1 names as NEEDED.
needed() {
  readelf -d "$1" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'
}

# Copies into $1/lib/<multiarch> every library the ELF files under $1 need,
# transitively, that neither $1 nor the base image ($ROOT) holds.
stage_libraries_into() {
  local dir=$1 libdir="$1/lib/$MULTIARCH" f lib src
  local todo=()
  mkdir -p "$libdir"
  mapfile -t todo < <(find "$dir" -type f \( -perm -u+x -o -name '*.so*' \))
  while [ ${#todo[@]} -gt 0 ]; do
    f=${todo[0]}; todo=("${todo[@]:1}")
    for lib in $(needed "$f"); do
      [ -e "$libdir/$lib" ] || [ -e "$ROOT/lib/$MULTIARCH/$lib" ] && continue
      [ -n "$(find "$dir" -name "$lib" -print -quit)" ] && continue   # the overlay has it
      src=$(find_library "$lib")
      [ -n "$src" ] || die "$lib (needed by ${f#"$dir"/}) is in none of the packages"
      cp -L "$src" "$libdir/$lib"
      todo+=("$libdir/$lib")
    done
  done
}

# Libraries no program NEEDs but glibc opens at run time (dlopen), so the
# NEEDED walk never finds them. libgcc_s.so.1 (Debian's libgcc-s1, which
# libc6 depends on): glibc unwinds a thread's stack with it in pthread_exit
# and cancellation; without it rping (which ends its threads so) aborts
# with "libgcc_s.so.1 must be installed for pthread_exit to work".
DLOPENED=(libgcc_s.so.1)

# The base image's libraries, the dynamic loader and ld.so.cache.
stage_libraries() {
  local lib src
  mkdir -p "$ROOT/lib/$MULTIARCH"
  cp -L "$TREE/lib64/ld-linux-x86-64.so.2" "$ROOT/lib64/"
  for lib in "${DLOPENED[@]}"; do
    src=$(find_library "$lib")
    [ -n "$src" ] || die "$lib (opened by glibc at run time) is in none of the packages"
    cp -L "$src" "$ROOT/lib/$MULTIARCH/$lib"
  done
  stage_libraries_into "$ROOT"
  printf '/lib/%s\n/usr/lib/%s\n/usr/local/lib\n' "$MULTIARCH" "$MULTIARCH" > "$ROOT/etc/ld.so.conf"
  ldconfig -r "$ROOT"
}

# The module file of $1 (a name as modinfo and modules.dep spell it).
module_path() {
  find "$TREE/lib/modules/$KVER" -name "$1.ko" -o -name "$1.ko.xz" -o -name "$1.ko.zst" |
    head -1
}

# Copies MODULES and their dependencies, uncompressed, and runs depmod.
stage_modules() {
  local todo=("${MODULES[@]}") m path rel dst dep
  local -A seen=()
  while [ ${#todo[@]} -gt 0 ]; do
    m=${todo[0]}; todo=("${todo[@]:1}")
    [ -n "${seen[$m]:-}" ] && continue
    seen[$m]=1
    path=$(module_path "$m")
    if [ -z "$path" ]; then
      grep -q "/$m.ko" "$TREE/lib/modules/$KVER/modules.builtin" || die "module $m not found"
      continue                                     # built into the kernel
    fi
    rel=${path#"$TREE"/}; dst="$ROOT/${rel%.xz}"; dst=${dst%.zst}
    mkdir -p "$(dirname "$dst")"
    case $path in
      *.xz) xz -dc "$path" > "$dst" ;;
      *.zst) zstd -qdc "$path" > "$dst" ;;
      *) cp "$path" "$dst" ;;
    esac
    for dep in $(modinfo -F depends "$path" | tr ',' ' '); do todo+=("$dep"); done
  done
  cp "$TREE/lib/modules/$KVER"/modules.{builtin,order} "$ROOT/lib/modules/$KVER/"
  cp "$TREE/lib/modules/$KVER/modules.builtin.modinfo" "$ROOT/lib/modules/$KVER/" 2>/dev/null || true
  depmod -b "$ROOT" "$KVER"
}

stage_init() {
  cp "$HERE/init" "$ROOT/init"
  chmod 755 "$ROOT/init"
  printf 'root:x:0:0:root:/root:/bin/sh\n' > "$ROOT/etc/passwd"
  printf 'root:x:0:\n' > "$ROOT/etc/group"
  printf '127.0.0.1 localhost\n' > "$ROOT/etc/hosts"
}

# OVROOT: the overlay and the libraries its programs need that the base
# lacks (in /lib/<multiarch>, a directory ld.so searches without the cache).
stage_overlay() {
  rm -rf "$OVROOT" && mkdir -p "$OVROOT"
  [ -d "$OVERLAY" ] && cp -a "$OVERLAY/." "$OVROOT/"
  log "overlay: $(find "$OVROOT" -type f | wc -l) files from ${OVERLAY#"$REPO"/}"
  stage_libraries_into "$OVROOT"
}

# A gzip'd newc archive of directory $1 in file $2.
pack_dir() {
  (cd "$1" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) | gzip -6 > "$2.new"
  mv "$2.new" "$2"
}

# The base archive is fetched, staged and packed only when BASE_INPUTS change
# (or LINUX_REFRESH=1 asks apt again for the current package versions).
base_is_current() {
  [ -z "${LINUX_REFRESH:-}" ] && [ -f "$OUT/base.cpio.gz" ] && [ -f "$OUT/kernel-version" ] &&
    [ -f "$TREE/.debs" ] && [ "$(base_key)" = "$(cat "$OUT/base.key" 2>/dev/null)" ]
}

base_key() {
  cat "${BASE_INPUTS[@]}" | sha256sum | cut -d' ' -f1
}

build_base() {
  local kpkg
  kpkg=$(kernel_package)
  if [ -z "$kpkg" ]; then               # a fresh machine: apt's lists are empty
    log "apt-get update"
    $( [ "$(id -u)" -eq 0 ] || echo sudo ) apt-get update -qq
    kpkg=$(kernel_package)
  fi
  [ -n "$kpkg" ] || die "apt-cache knows no linux-image-amd64"
  KVER=${kpkg#linux-image-}
  fetch_packages "$kpkg"
  unpack_packages
  rm -rf "$ROOT"
  stage_busybox
  stage_programs
  stage_libraries
  stage_modules
  stage_init
  pack_dir "$ROOT" "$OUT/base.cpio.gz"
  echo "$KVER" > "$OUT/kernel-version"
  base_key > "$OUT/base.key"
}

# initrd.img: the base archive, then the overlay's (the kernel unpacks
# concatenated archives in turn; a later file replaces an earlier one).
main() {
  mkdir -p "$OUT"
  if base_is_current; then
    log "base image current (LINUX_REFRESH=1 to ask apt again)"
  else
    build_base
  fi
  KVER=$(cat "$OUT/kernel-version")
  stage_overlay
  pack_dir "$OVROOT" "$OUT/overlay.cpio.gz"
  cat "$OUT/base.cpio.gz" "$OUT/overlay.cpio.gz" > "$OUT/initrd.img.new"
  mv "$OUT/initrd.img.new" "$OUT/initrd.img"
  cp "$TREE/boot/vmlinuz-$KVER" "$OUT/bzImage"        # a new time stamp for make
  log "kernel $KVER: $(du -h "$OUT/bzImage" | cut -f1)," \
      "initrd: $(du -h "$OUT/initrd.img" | cut -f1) ($(du -sh "$ROOT" | cut -f1) unpacked)"
}

main "$@"
