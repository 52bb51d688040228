#!/usr/bin/env python3
"""suite.py: run the steps of one test suite and end with its summary line.

    suite.py NAME [--stop-on-fail] -- 'STEP COMMAND' ['STEP COMMAND' ...]

Each step is a shell command; its output is passed through as it comes. A
step's count is the last summary line it printed: "N passed, M failed"
(this project's runners), or Check's "Checks: X, Failures: Y, Errors: Z".
A step that printed neither counts as one test, passed if it exited 0. A
step that exited non-zero counts at least one failure even if its summary
said none (a crash after the summary). After the last step (or the first
failing one with --stop-on-fail) it prints

    NAME: P passed, F failed

and exits 1 if any step failed, 0 otherwise. Nested suites compose: a step
that is itself a suite ends with its own total, and that total is its count.
"""
import re
import subprocess
import sys

PLAIN = re.compile(r"^(?:\S+: )?(\d+) passed, (\d+) failed")
CHECK = re.compile(r"Checks: (\d+), Failures: (\d+), Errors: (\d+)")


def summary(line):
    """(passed, failed) if the line is a summary line, else None."""
    m = PLAIN.match(line.strip())
    if m:
        return int(m.group(1)), int(m.group(2))
    m = CHECK.search(line)
    if m:
        total, failures, errors = (int(g) for g in m.groups())
        return total - failures - errors, failures + errors
    return None


def run_step(command):
    """Runs one step, echoing its output; returns its (passed, failed)."""
    last = None
    proc = subprocess.Popen(command, shell=True, executable="/bin/bash", stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, errors="replace", bufsize=1)
    for line in proc.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        last = summary(line) or last
    status = proc.wait()
    passed, failed = last if last else (1, 0) if status == 0 else (0, 0)
    if status != 0 and failed == 0:
        failed = 1
    return passed, failed


def main(argv):
    if "--" not in argv or argv.index("--") < 1:
        print(__doc__.strip().splitlines()[2].strip())
        return 2
    cut = argv.index("--")
    name, opts, steps = argv[0], argv[1:cut], argv[cut + 1:]
    stop = "--stop-on-fail" in opts
    total_passed = total_failed = 0
    for step in steps:
        passed, failed = run_step(step)
        total_passed += passed
        total_failed += failed
        if failed and stop:
            break
    print(f"{name}: {total_passed} passed, {total_failed} failed", flush=True)
    return 1 if total_failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
