#!/usr/bin/env bash
# user/upstream/fetch.sh: fetches librdmacm's example programs rdma_server.c
# and rdma_client.c, unmodified, from Debian's rdma-core source package
# into build/upstream/ (docs/rdma.md, "Upstream examples, unmodified").
#
# The project does not carry other projects' code, so the files come from
# Debian at build time. apt runs with private state under build/apt/ (a
# deb-src line of its own, its own lists and cache; the machine's apt
# configuration is not touched): `apt-get update` checks the Sources index
# against the release file signed by Debian's archive key, and `apt-get
# source --tar-only` checks the upstream tarball against the size and
# hashes that index names. Only the two files are taken out of it.
#
# The suite is Debian 13 (trixie, rdma-core 56.x): the registry this project
# reaches serves that tarball, while bookworm's rdma-core_44.0.orig.tar.gz
# answers 404 there. UPSTREAM_SUITE overrides it.
#
# Usage: bash user/upstream/fetch.sh OUTDIR   (make: build/upstream)
set -euo pipefail

OUT=${1:?usage: fetch.sh OUTDIR}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
SUITE=${UPSTREAM_SUITE:-trixie}
PACKAGE=rdma-core
FILES=(librdmacm/examples/rdma_server.c librdmacm/examples/rdma_client.c)
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
APT_DIR=$(dirname "$OUT")/apt

die() {
  echo "upstream: error: $*" >&2
  echo "upstream: the unmodified librdmacm examples come from Debian's $PACKAGE source" \
       "package ($SUITE); without them fs.img cannot hold rdma_server / rdma_client." >&2
  exit 1
}

[ -r "$KEYRING" ] || die "$KEYRING is missing (package debian-archive-keyring)"
mkdir -p "$APT_DIR/lists/partial" "$APT_DIR/cache/archives/partial" "$APT_DIR/src"
echo "deb-src [signed-by=$KEYRING] http://deb.debian.org/debian $SUITE main" > "$APT_DIR/sources.list"
APT=(apt-get -q -o "Dir::Etc::SourceList=$APT_DIR/sources.list" -o Dir::Etc::SourceParts=-
     -o "Dir::State::Lists=$APT_DIR/lists" -o "Dir::Cache=$APT_DIR/cache"
     -o APT::Sandbox::User="$(id -un)")

echo "upstream: apt-get update ($SUITE deb-src, state in $APT_DIR)"
"${APT[@]}" update > "$APT_DIR/update.log" 2>&1 ||
  die "apt-get update of $SUITE's Sources failed (log: $APT_DIR/update.log): $(tail -n 3 "$APT_DIR/update.log")"

echo "upstream: apt-get source --tar-only $PACKAGE"
rm -f "$APT_DIR/src/"*
(cd "$APT_DIR/src" && "${APT[@]}" source --download-only --tar-only "$PACKAGE") \
  > "$APT_DIR/source.log" 2>&1 ||
  die "downloading the $PACKAGE source tarball failed (log: $APT_DIR/source.log): $(grep -E '^(E|Err):' "$APT_DIR/source.log" | head -n 3)"
tarball=$(ls "$APT_DIR/src/${PACKAGE}_"*.orig.tar.* 2>/dev/null | head -n 1)
[ -n "$tarball" ] || die "apt-get source left no ${PACKAGE}_*.orig.tar.* in $APT_DIR/src"

# The tarball's top directory is rdma-core-<version>/.
top=$(tar tf "$tarball" | awk -F/ 'NR == 1 { print $1 }')
for f in "${FILES[@]}"; do
  tar xf "$tarball" -O "$top/$f" > "$OUT/$(basename "$f").tmp" ||
    die "$tarball has no $top/$f"
done
for f in "${FILES[@]}"; do
  mv "$OUT/$(basename "$f").tmp" "$OUT/$(basename "$f")"
done
echo "$(basename "$tarball") $(sha256sum "$tarball" | cut -d' ' -f1)" > "$OUT/SOURCE"
rm -f "$tarball"
echo "upstream: $(cat "$OUT/SOURCE" | cut -d' ' -f1): ${FILES[*]} -> $OUT"
