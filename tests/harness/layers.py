#!/usr/bin/env python3
"""layers.py: the kernel's folders form layers; no file depends on a layer above its own.

docs/kernel.md holds the order, top to bottom, on the line that starts with
"Layer order:". Two kinds of dependency are checked:
  - includes: a file in folder A writing `#include "B/x.h"` depends on B;
  - links: an object of folder A with an undefined symbol that an object of
    folder B defines depends on B (read with nm from the built objects).
A dependency may stay inside a folder or go down the order, never up. The
transport core (kernel/transport) is the bottom: it includes nothing of the
kernel and links against nothing of it.

Inside the core, its files form layers of their own: docs/kernel.md's line
that starts with "Core order:" lists them top first, one backquoted group of
file names per layer. The same two checks run over the core's files (a call
through a type's table of operations is no link, so it may go up). Every
file of kernel/transport must be in a group.

Usage: tests/harness/layers.py [--objects build/kernel] [--nm NM] [--core-only]
Prints one PASS/FAIL line per check and every back-edge found; exit 1 on any.
"""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
KERNEL = os.path.join(ROOT, "kernel")
CORE = os.path.join(KERNEL, "transport")
BOOT = "boot"          # the files directly in kernel/: main.c, the entry code, the selftest


def layer_order(doc=os.path.join(ROOT, "docs", "kernel.md")):
  """The folders, top first, from docs/kernel.md's "Layer order:" line."""
  for line in open(doc):
    if line.startswith("Layer order:"):
      names = re.findall(r"`([a-z]+)`", line)
      if names:
        return names
  raise SystemExit("layers.py: no 'Layer order:' line in " + doc)


def core_order(doc=os.path.join(ROOT, "docs", "kernel.md")):
  """The core's layers, top first: a list of sets of file names, from the "Core order:" line."""
  for line in open(doc):
    if line.startswith("Core order:"):
      groups = [set(g.split()) for g in re.findall(r"`([^`]+)`", line)]
      if groups:
        return groups
  raise SystemExit("layers.py: no 'Core order:' line in " + doc)


def folder_of(path):
  """kernel/<folder>/x.c -> folder; kernel/x.c -> boot."""
  rel = os.path.relpath(path, KERNEL).split(os.sep)
  return rel[0] if len(rel) > 1 else BOOT


def sources():
  for dirpath, _, files in os.walk(KERNEL):
    for f in sorted(files):
      if f.endswith((".c", ".h", ".S")):
        yield os.path.join(dirpath, f)


def include_edges():
  """(from_file, header_path) for every quoted include that names a kernel file."""
  for src in sources():
    for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', open(src).read(), re.MULTILINE):
      here = os.path.normpath(os.path.join(os.path.dirname(src), inc))
      there = os.path.normpath(os.path.join(KERNEL, inc))
      target = here if os.path.exists(here) else there if os.path.exists(there) else None
      if target is None:
        yield src, None, inc
      else:
        yield src, target, inc


def link_edges(objdir, nm):
  """(from_object, to_object, symbol) for every undefined symbol another object defines."""
  defined, undefined = {}, {}
  for dirpath, _, files in os.walk(objdir):
    for f in files:
      if not f.endswith(".o"):
        continue
      obj = os.path.join(dirpath, f)
      out = subprocess.run([nm, obj], capture_output=True, text=True, check=True).stdout
      for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDBRGSVW":
          defined[parts[2]] = obj
        elif len(parts) == 2 and parts[0] == "U":
          undefined.setdefault(obj, []).append(parts[1])
  for obj, syms in undefined.items():
    for s in syms:
      if s in defined and defined[s] != obj:
        yield obj, defined[s], s


def obj_folder(obj, objdir):
  rel = os.path.relpath(obj, objdir).split(os.sep)
  return rel[0] if len(rel) > 1 else BOOT


def check(order, edges):
  """Back-edges among (from_folder, to_folder, what) triples."""
  rank = {name: i for i, name in enumerate(order)}
  bad, unknown = [], set()
  for a, b, what in edges:
    for f in (a, b):
      if f not in rank:
        unknown.add(f)
    if a in rank and b in rank and a != b and rank[b] < rank[a]:
      bad.append("back-edge %s -> %s: %s" % (a, b, what))
  return bad, sorted(unknown)


def report(name, bad, unknown):
  ok = not bad and not unknown
  print(("PASS " if ok else "FAIL ") + name)
  for f in unknown:
    print("  folder not in docs/kernel.md's layer order: " + f)
  for b in bad:
    print("  " + b)
  return ok


def check_core(objdir, nm):
  """The core's inner order: its files' includes and its objects' symbol uses."""
  groups = core_order()
  rank = {}
  for i, g in enumerate(groups):
    for name in g:
      rank[name] = i
  names = sorted(f for f in os.listdir(CORE) if f.endswith((".c", ".h")))
  layer = lambda f: "core layer %d" % rank[f] if f in rank else f
  unlisted = [f for f in names if f not in rank]
  ok = report("test_core_every_file_in_a_layer (%d files, %d layers)" % (len(names), len(groups)),
              ["%s is in no group of docs/kernel.md's 'Core order:' line" % f for f in unlisted], [])
  bad = []
  n_inc = 0
  for f in names:
    for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', open(os.path.join(CORE, f)).read(), re.MULTILINE):
      if inc in rank and f in rank:
        n_inc += 1
        if rank[inc] < rank[f]:
          bad.append("back-edge %s (%s) includes %s (%s)" % (f, layer(f), inc, layer(inc)))
  ok &= report("test_core_layers_includes_go_down (%d includes)" % n_inc, bad, [])
  cdir = objdir if os.path.basename(os.path.normpath(objdir)) == "transport" else os.path.join(objdir, "transport")
  if not os.path.isdir(cdir):
    print("FAIL test_core_layers_links_go_down: no objects in %s (build the core first)" % cdir)
    return False
  bad = []
  uses = list(link_edges(cdir, nm))
  for a, b, sym in uses:
    fa = os.path.basename(a)[:-2] + ".c"
    fb = os.path.basename(b)[:-2] + ".c"
    if fa in rank and fb in rank and rank[fb] < rank[fa]:
      bad.append("back-edge %s (%s) uses %s of %s (%s)" % (fa, layer(fa), sym, fb, layer(fb)))
  ok &= report("test_core_layers_links_go_down (%d symbol uses)" % len(uses), bad, [])
  return ok


def main():
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--objects", default=os.path.join(ROOT, "build", "kernel"))
  ap.add_argument("--nm", default="riscv64-unknown-elf-nm")
  ap.add_argument("--core-only", action="store_true",
                  help="only the core's inner order (--objects: the core's objects, e.g. build/transport)")
  args = ap.parse_args()
  if args.core_only:
    return 0 if check_core(args.objects, args.nm) else 1
  order = layer_order()
  ok = True

  inc, missing = [], []
  for src, target, inc_text in include_edges():
    if target is None:
      missing.append("%s includes \"%s\", which is no kernel file" % (os.path.relpath(src, ROOT), inc_text))
      continue
    if not target.startswith(KERNEL + os.sep):
      continue
    inc.append((folder_of(src), folder_of(target),
                "%s includes %s" % (os.path.relpath(src, ROOT), os.path.relpath(target, ROOT))))
  bad, unknown = check(order, inc)
  ok &= report("test_kernel_layers_includes_go_down (%d includes)" % len(inc), bad + missing, unknown)

  if not os.path.isdir(args.objects):
    print("FAIL test_kernel_layers_links_go_down: no objects in %s (build the kernel first)" % args.objects)
    return 1
  unbuilt = [os.path.relpath(src, ROOT) for src in sources()
             if not src.endswith(".h") and not os.path.exists(
               os.path.join(args.objects, os.path.splitext(os.path.relpath(src, KERNEL))[0] + ".o"))]
  folders = sorted({folder_of(src) for src in sources()} - set(order))
  ok &= report("test_kernel_layers_every_file_in_a_layer (%d folders)" % len(order),
               ["%s has no object in %s (not built into the kernel?)" % (u, args.objects) for u in unbuilt], folders)
  links = [(obj_folder(a, args.objects), obj_folder(b, args.objects),
            "%s uses %s of %s" % (os.path.relpath(a, args.objects), s, os.path.relpath(b, args.objects)))
           for a, b, s in link_edges(args.objects, args.nm)]
  bad, unknown = check(order, links)
  ok &= report("test_kernel_layers_links_go_down (%d symbol uses)" % len(links), bad, unknown)
  ok &= check_core(args.objects, args.nm)
  return 0 if ok else 1


if __name__ == "__main__":
  sys.exit(main())
