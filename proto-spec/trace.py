#!/usr/bin/env python3
"""Rule traceability for the xv6-rdma protocol spec.

Collects every rule ID defined in proto-spec/*.md (a line that starts with
"[AREA-TOPIC-N]"), then scans the source trees for citations of rule IDs and
reports, per rule, which code files and which test files cite it.

A file is a *test* if it lies under tests/ or proto-spec/model/, otherwise
*code*; Markdown files are documentation and are not scanned. Exit status:
  0  every citation names a defined rule (uncited rules are only warned about)
  1  a citation names an unknown rule, a spec file cross-references an unknown
     rule, a rule ID is defined twice, or (with --strict) a rule has no test.
A rule whose text starts with "*Deprecated:*" keeps its ID but needs no test;
citing it is a warning (cite the rule it was merged into instead).
Usage: proto-spec/trace.py [--strict] [--quiet] [--root DIR]
"""

import argparse
import os
import re
import sys

RULE_RE = re.compile(r"\[([A-Z][A-Z0-9]*-[A-Z][A-Z0-9]*-[0-9]+)\]")
DEF_RE = re.compile(r"^\[([A-Z][A-Z0-9]*-[A-Z][A-Z0-9]*-[0-9]+)\]")
SCAN_DIRS = ["kernel", "user", "tests", "netem", "bench", "proto-spec/model"]
TEST_DIRS = ["tests", "proto-spec/model"]
SKIP_DIRS = {".git", "build", "__pycache__", "node_modules"}
SKIP_EXT = {".o", ".a", ".so", ".img", ".bin", ".elf", ".png", ".pcap", ".d",
            ".gz", ".xz", ".pdf", ".trail",
            ".md"}  # prose that mentions a rule neither implements nor tests it


def spec_files(root):
    d = os.path.join(root, "proto-spec")
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".md"))


def collect_rules(root, errors):
    """Rule ID -> (file, line). Also returns every cross reference in the spec."""
    rules, refs, deprecated = {}, [], set()
    for path in spec_files(root):
        rel = os.path.relpath(path, root)
        with open(path, encoding="utf-8") as f:
            for n, text in enumerate(f, 1):
                m = DEF_RE.match(text)
                if m:
                    rid = m.group(1)
                    if rid in rules:
                        errors.append("%s:%d: rule %s defined twice (first at %s:%d)"
                                      % (rel, n, rid, *rules[rid]))
                    else:
                        rules[rid] = (rel, n)
                        if text[m.end():].lstrip().startswith("*Deprecated"):
                            deprecated.add(rid)
                start = m.end() if m else 0
                for r in RULE_RE.finditer(text, start):
                    refs.append((rel, n, r.group(1)))
    return rules, refs, deprecated


def is_test(rel):
    return any(rel == d or rel.startswith(d + "/") for d in TEST_DIRS)


def scan_citations(root):
    """Yields (relative path, line number, rule ID) for every citation."""
    for top in SCAN_DIRS:
        base = os.path.join(root, top)
        if not os.path.isdir(base):
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
            for name in sorted(filenames):
                if os.path.splitext(name)[1] in SKIP_EXT:
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                try:
                    with open(path, encoding="utf-8", errors="strict") as f:
                        lines = f.readlines()
                except (UnicodeDecodeError, OSError):
                    continue  # binary or unreadable: not a source file
                for n, text in enumerate(lines, 1):
                    for m in RULE_RE.finditer(text):
                        yield rel, n, m.group(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--strict", action="store_true",
                    help="fail if any rule is cited by no test")
    ap.add_argument("--quiet", action="store_true",
                    help="print only the summary, warnings and errors")
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), help="repository root")
    args = ap.parse_args()

    errors = []
    rules, refs, deprecated = collect_rules(args.root, errors)
    warnings = []
    for rel, n, rid in refs:
        if rid not in rules:
            errors.append("%s:%d: spec cross-reference to unknown rule %s" % (rel, n, rid))

    code, test = {r: set() for r in rules}, {r: set() for r in rules}
    for rel, n, rid in scan_citations(args.root):
        if rid not in rules:
            errors.append("%s:%d: citation of unknown rule %s" % (rel, n, rid))
            continue
        if rid in deprecated:
            warnings.append("%s:%d: citation of deprecated rule %s" % (rel, n, rid))
        (test if is_test(rel) else code)[rid].add(rel)

    if not args.quiet:
        for rid in sorted(rules, key=lambda r: (rules[r][0], rules[r][1])):
            if rid in deprecated:
                continue
            c = ", ".join(sorted(code[rid])) or "-"
            t = ", ".join(sorted(test[rid])) or "-"
            print("%-16s code: %s | test: %s" % (rid, c, t))

    live = [r for r in rules if r not in deprecated]
    untested = [r for r in live if not test[r]]
    uncoded = [r for r in live if not code[r]]
    areas = {}
    for r in live:
        a = r.split("-")[0]
        tot, tst = areas.get(a, (0, 0))
        areas[a] = (tot + 1, tst + (1 if test[r] else 0))
    print("trace: %d rules (+%d deprecated); cited by code: %d; cited by tests: %d; "
          "by neither: %d" % (len(live), len(deprecated), len(live) - len(uncoded),
                              len(live) - len(untested),
                              len([r for r in live if not code[r] and not test[r]])))
    print("trace: per area (tested/total): " + ", ".join(
        "%s %d/%d" % (a, areas[a][1], areas[a][0]) for a in sorted(areas)))
    if untested:
        level = "ERROR" if args.strict else "WARNING"
        print("trace: %s: %d rules cited by no test:" % (level, len(untested)))
        ordered = sorted(untested, key=lambda r: (rules[r][0], rules[r][1]))
        for i in range(0, len(ordered), 8):
            print("  " + " ".join(ordered[i:i + 8]))
    for w in warnings:
        print("trace: WARNING: " + w)
    for e in errors:
        print("trace: ERROR: " + e, file=sys.stderr)
    if errors or (args.strict and untested):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
