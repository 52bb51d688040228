"""tally.py: one way for the guest test scripts to report.

Each case prints "test NAME: OK|FAILED (info)" and the script ends with
"N passed, M failed", the lines tests/rdma/run_all.py counts. run() turns a
GuestError (a guest that died or never answered) into a failed case.

    t = Tally()
    t.run("matrix_loss1", lambda: one(...))     # fn returns (ok, info)
    t.record("forge_bad_icrc", ok, info)        # a result computed elsewhere
    sys.exit(t.finish())
"""
import time

from guest import GuestError


class Tally:
    def __init__(self):
        self.passed = self.failed = 0

    def record(self, name, ok, info):
        print(f"test {name}: {'OK' if ok else 'FAILED'} ({info})", flush=True)
        self.passed += bool(ok)
        self.failed += not ok

    def run(self, name, fn, timed=True):
        """Runs fn() -> (ok, info); with timed, info starts with the seconds it took."""
        t0 = time.monotonic()
        try:
            ok, info = fn()
        except GuestError as e:
            ok, info = False, f"guest error: {e}"
        self.record(name, ok, f"{time.monotonic() - t0:.0f} s; {info}" if timed else info)

    def finish(self):
        """Prints the count line; returns the exit status (0 if nothing failed)."""
        print(f"{self.passed} passed, {self.failed} failed")
        return 0 if self.failed == 0 else 1
