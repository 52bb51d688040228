#!/usr/bin/env bash
# deps.sh: install the Debian packages the build and the tests need, if missing.
#
# Called by `make deps` (every top-level target depends on it). Checks each
# package with dpkg and installs only what is absent, through apt-get as root
# or sudo otherwise. Safe to run again.
set -euo pipefail

PACKAGES=(
  make gcc libc6-dev python3 pkg-config
  gcc-riscv64-unknown-elf      # cross compiler for the kernel and user programs
  qemu-system-misc             # qemu-system-riscv64
  check                        # unit test framework for the transport core
  spin                         # model checker for proto-spec/model
  clang libclang-rt-14-dev     # libFuzzer and sanitizers
  python3-matplotlib           # bench plots
  iproute2                     # netem.sh namespaces
  tshark                       # reading captured traffic in tests
  libibverbs-dev librdmacm-dev # xrpeer, the Linux-side peer (tests/linux/peer)
  qemu-system-x86              # the Linux Soft-RoCE guest (tests/linux)
  qemu-user                    # qemu-riscv64: bench/net/icrc_variants.py
  kmod cpio                    # its image: depmod/modinfo, the initramfs archive
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then SUDO=; else SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "deps: done"
