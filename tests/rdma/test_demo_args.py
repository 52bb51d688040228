#!/usr/bin/env python3
"""test_demo_args.py: make demo's settings, on the host, no guest booted.

tests/rdma/demo.py --check parses DEMO_* (and the options) as a run would
and prints them; a bad value must print exactly one line "demo: NAME=VALUE:
why (expected ...)" and exit 2, no traceback. Loss is written as linkemu
writes it: "5%" or the fraction "0.05" (netem/impair.c). A step of make
test-unit; prints "test-demo-args: N passed, M failed".
"""
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
DEMO = os.path.join(HERE, "demo.py")


def demo(env=None, args=()):
    """(exit status, output lines) of demo.py --check with env added."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("DEMO_")}
    e.update(env or {})
    p = subprocess.run([sys.executable, DEMO, "--check", *args], env=e, capture_output=True, text=True,
                       timeout=60)
    return p.returncode, (p.stdout + p.stderr).strip().splitlines()


class DemoArgs(unittest.TestCase):
    def ok(self, env, want, args=()):
        status, lines = demo(env, args)
        self.assertEqual(status, 0, lines)
        self.assertEqual(len(lines), 1, lines)
        self.assertIn(want, lines[0])

    def bad(self, env, starts, why, args=()):
        status, lines = demo(env, args)
        self.assertEqual(status, 2, lines)
        self.assertEqual(len(lines), 1, f"want one line, got {lines}")
        self.assertTrue(lines[0].startswith(starts), lines[0])
        self.assertIn(why, lines[0])
        self.assertIn("expected", lines[0])

    def test_demo_loss_percent(self):
        self.ok({"DEMO_LOSS": "5%", "DEMO_SEED": "7"}, "loss 5% (fraction 0.05), seed 7")

    def test_demo_loss_fraction(self):
        self.ok({"DEMO_LOSS": "0.05"}, "loss 5% (fraction 0.05)")

    def test_demo_loss_default_one_percent(self):
        self.ok({}, "loss 1% (fraction 0.01)")

    def test_demo_loss_option_as_env(self):
        self.ok({"DEMO_LOSS": "abc"}, "loss 2%", args=("--loss", "2%"))

    def test_demo_loss_not_a_number(self):
        self.bad({"DEMO_LOSS": "abc"}, "demo: DEMO_LOSS=abc: ", "not a loss rate")

    def test_demo_loss_bare_one_is_a_fraction(self):
        self.bad({"DEMO_LOSS": "1"}, "demo: DEMO_LOSS=1: ", "write 1% for 1 percent")

    def test_demo_loss_above_limit(self):
        self.bad({"DEMO_LOSS": "50%"}, "demo: DEMO_LOSS=50%: ", "above the demo's")

    def test_demo_size_forms(self):
        self.ok({"DEMO_SIZE": "16MiB"}, "size 16777216 bytes")
        self.ok({"DEMO_SIZE": "4096"}, "size 4096 bytes")

    def test_demo_size_bad(self):
        self.bad({"DEMO_SIZE": "12x"}, "demo: DEMO_SIZE=12x: ", "not a size")
        self.bad({"DEMO_SIZE": "1000MiB"}, "demo: DEMO_SIZE=1000MiB: ", "largest file")

    def test_demo_seed_and_mode_bad(self):
        self.bad({"DEMO_SEED": "-3"}, "demo: DEMO_SEED=-3: ", "not a seed")
        self.bad({"DEMO_MODE": "fast"}, "demo: DEMO_MODE=fast: ", "not a mode")
        self.bad({"DEMO_SR": "yes"}, "demo: DEMO_SR=yes: ", "not a switch")

    def test_demo_mode_forms(self):
        self.ok({"DEMO_MODE": "sr"}, "modes sr")
        self.ok({"DEMO_SR": "0"}, "modes gbn")


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=1).result
    failed = len(result.failures) + len(result.errors)
    print(f"test-demo-args: {result.testsRun - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
