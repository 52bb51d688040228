#!/usr/bin/env python3
"""fsck.py: check a file-system image (the layout in kernel/lib/fs_format.h)
from the host. Run it on an image whose log is empty (after a clean halt).

usage: python3 tools/fsck.py fs.img

Checks: the superblock; the log header is empty; every block an inode
maps (direct, single- and double-indirect, and the pointer blocks) lies
in the data area, is mapped once only and is marked in the bitmap; no
data block is marked without being mapped (a leak); a file's size fits
the blocks it maps; every directory entry names an inode in use; every
inode in use is named by some directory; each inode's link count equals
the entries naming it ("." and ".." not counted). Prints one line per
problem (at most 20) and a summary; exit status 1 if there was any.
"""
import collections
import struct
import sys

BS = 1024
MAGIC = 0x78367264
NDIRECT = 11
NINDIRECT = BS // 4
INODE_SIZE = 64
T_DIR, T_FILE, T_DEVICE = 1, 2, 3
DIRENT = struct.Struct("<H14s")


class Image:
    def __init__(self, path):
        with open(path, "rb") as f:
            self.data = f.read()

    def block(self, n):
        return self.data[n * BS:(n + 1) * BS]

    def words(self, n):
        return struct.unpack(f"<{NINDIRECT}I", self.block(n))

    def super(self):
        return Super._make(struct.unpack("<8I", self.block(1)[:32]))


Super = collections.namedtuple("Super", "magic total ninodes log_start log_blocks inode_start "
                                        "bitmap_start data_start")


def read_inode(img, inode_start, i):
    """(type, nlink, size, the NDIRECT + 2 block pointers) of inode i."""
    blk = img.block(inode_start + i * INODE_SIZE // BS)
    off = i * INODE_SIZE % BS
    t, _major, _minor, nlink, size = struct.unpack("<4hI", blk[off:off + 12])
    ptrs = struct.unpack(f"<{NDIRECT + 2}I", blk[off + 12:off + 12 + 4 * (NDIRECT + 2)])
    return t, nlink, size, ptrs


def check(path):
    img = Image(path)
    problems = []
    sb = img.super()
    total, inode_start, bitmap_start, data_start = sb.total, sb.inode_start, sb.bitmap_start, sb.data_start
    if sb.magic != MAGIC:
        return [f"superblock: magic {sb.magic:#x}, not {MAGIC:#x}"], {}
    if struct.unpack("<I", img.block(sb.log_start)[:4])[0] != 0:
        problems.append("log header: count is not 0 (the log was not replayed)")

    owner = {}                     # block -> inode that maps it

    def claim(b, i, what):
        if not data_start <= b < total:
            problems.append(f"inode {i}: {what} block {b} outside the data area")
            return False
        if b in owner:
            problems.append(f"block {b} mapped by inode {owner[b]} and by inode {i} ({what})")
            return False
        owner[b] = i
        return True

    inodes = {}
    for i in range(1, sb.ninodes):
        t, nlink, size, ptrs = read_inode(img, inode_start, i)
        if t == 0:
            continue
        if t not in (T_DIR, T_FILE, T_DEVICE):
            problems.append(f"inode {i}: type {t}")
            continue
        data_blocks = []
        for b in ptrs[:NDIRECT]:
            if b and claim(b, i, "data"):
                data_blocks.append(b)
        if ptrs[NDIRECT] and claim(ptrs[NDIRECT], i, "indirect"):
            for b in img.words(ptrs[NDIRECT]):
                if b and claim(b, i, "data"):
                    data_blocks.append(b)
        if ptrs[NDIRECT + 1] and claim(ptrs[NDIRECT + 1], i, "double-indirect"):
            for ind in img.words(ptrs[NDIRECT + 1]):
                if ind and claim(ind, i, "indirect"):
                    for b in img.words(ind):
                        if b and claim(b, i, "data"):
                            data_blocks.append(b)
        if size > len(data_blocks) * BS:
            problems.append(f"inode {i}: size {size} but only {len(data_blocks)} data blocks")
        inodes[i] = (t, nlink, size, data_blocks)

    bitmap = b"".join(img.block(bitmap_start + k) for k in range((total + BS * 8 - 1) // (BS * 8)))
    for b in range(data_start, total):
        used = bitmap[b // 8] >> (b % 8) & 1
        if b in owner and not used:
            problems.append(f"block {b}: mapped by inode {owner[b]} but free in the bitmap")
        elif used and b not in owner:
            problems.append(f"block {b}: marked in the bitmap but mapped by no inode (leak)")

    links = {i: 0 for i in inodes}
    for i, (t, _nlink, size, blocks) in inodes.items():
        if t != T_DIR:
            continue
        raw = b"".join(img.block(b) for b in blocks)[:size]
        for off in range(0, len(raw) - DIRENT.size + 1, DIRENT.size):
            inum, name = DIRENT.unpack(raw[off:off + DIRENT.size])
            name = name.split(b"\0")[0]
            if inum == 0 or name in (b".", b".."):
                continue
            if inum not in inodes:
                problems.append(f"directory {i}: entry {name!r} names free inode {inum}")
                continue
            links[inum] += 1
    for i, (t, nlink, _size, _blocks) in inodes.items():
        if i == 1:
            continue                 # the root is named by nobody
        if links[i] == 0:
            problems.append(f"inode {i}: in use (type {t}) but no directory names it")
        elif links[i] != nlink:
            problems.append(f"inode {i}: nlink {nlink} but {links[i]} directory entries")
    return problems, {"inodes": len(inodes), "blocks": len(owner)}


def root_file(path, name):
    """The bytes of the file called name in the root directory of the image
    at path, or None if there is none (the image should pass check())."""
    img = Image(path)
    inode_start = img.super().inode_start

    def inode(i):
        _t, _nlink, size, ptrs = read_inode(img, inode_start, i)
        blocks = list(ptrs[:NDIRECT])
        if ptrs[NDIRECT]:
            blocks += list(img.words(ptrs[NDIRECT]))
        if ptrs[NDIRECT + 1]:
            for ind in img.words(ptrs[NDIRECT + 1]):
                blocks += list(img.words(ind)) if ind else [0] * NINDIRECT
        nblocks = (size + BS - 1) // BS
        data = b"".join(img.block(b) if b else bytes(BS) for b in blocks[:nblocks])
        return data[:size]

    root = inode(1)
    for off in range(0, len(root) - DIRENT.size + 1, DIRENT.size):
        inum, raw = DIRENT.unpack(root[off:off + DIRENT.size])
        if inum and raw.split(b"\0")[0] == name.encode():
            return inode(inum)
    return None


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2])
        return 2
    problems, stats = check(sys.argv[1])
    for p in problems[:20]:
        print("fsck: " + p)
    if len(problems) > 20:
        print(f"fsck: ... and {len(problems) - 20} more")
    print(f"fsck: {sys.argv[1]}: {len(problems)} problems"
          + (f", {stats['inodes']} inodes, {stats['blocks']} blocks in use" if stats else ""))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
