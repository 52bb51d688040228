"""guest.py: boot an xv6-rdma kernel in QEMU and drive its serial console.

Owns the Guest class that every in-guest test uses (usertests, network and
RDMA tests). A Guest

  * boots qemu-system-riscv64 (virt machine, no firmware) on a PRIVATE COPY
    of fs.img, so any number of guests can run at the same time;
  * reads the console in its own thread and keeps the whole transcript,
    both in memory and in tests/logs/<name>.log;
  * offers send(line), expect(regex, timeout), run(cmd, until, timeout)
    and wait_exit(timeout);
  * always kills QEMU when the test ends, fails, or the interpreter exits.

Typical use (see README.md for a two-guest example):

    with Guest("g1", cpus=3) as g:
        g.boot()                       # waits for the "$ " prompt
        out = g.run("echo hi")         # text printed by the command
        g.send("halt 0")
        assert g.wait_exit(30) == 0

Python standard library only.
"""
import atexit
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PROMPT = r"\$ $"                       # the shell's prompt at the end of output
PANIC = r"panic|PANIC"                 # kernel death; expect() fails at once
QEMU = os.environ.get("QEMU", "qemu-system-riscv64")
# Where transcripts go; set GUEST_LOG_DIR when several people or suites run
# guests with the same names at the same time.
LOG_DIR = os.environ.get("GUEST_LOG_DIR", "tests/logs")

_live_guests = set()


class GuestError(Exception):
    """The guest did not do what the test expected (timeout, panic, exit)."""


def progress(name, message):
    """One progress line on stdout, prefixed with a timestamp and the guest."""
    print(f"[{time.strftime('%H:%M:%S')}] {name}: {message}", flush=True)


def poll(probe, done, timeout, interval=0.2):
    """Calls probe() until done(value) holds or timeout seconds pass;
    returns (the last value, whether done held). For conditions a test
    waits for (a counter reaching a value), instead of a fixed sleep."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if done(value):
            return value, True
        if time.monotonic() > deadline:
            return value, False
        time.sleep(interval)


class Guest:
    """One QEMU guest and its console transcript.

    cpus, memory: QEMU -smp / -m. extra_args: more QEMU arguments (for
    example -netdev/-device for network tests). append: kernel boot
    arguments (-append). kernel, fs_img: paths relative to the repository.
    rng: attach the virtio-rng entropy device (bus 7) the kernel seeds its
    random generator from; False boots the old command line without it.

    Subclasses (linux_guest.LinuxGuest) reuse the console machinery and
    override what is xv6's: prompt, panic, required_files(), prepare(),
    clean() and send_halt().
    """
    prompt = PROMPT            # the shell prompt boot() and run() wait for
    panic = PANIC              # expect() fails at once when this shows up

    def __init__(self, name, cpus=3, memory="128M", extra_args=(),
                 append=None, kernel="kernel/kernel", fs_img="fs.img",
                 log_dir=None, eol="\n", pass_fds=(), rng=True):
        self.name = name
        self.rng = rng
        self.pass_fds = tuple(pass_fds)   # host fds QEMU inherits (e.g. a netdev socket)
        self.cpus = cpus
        self.memory = memory
        self.extra_args = list(extra_args)
        self.append = append
        self.kernel = os.path.join(REPO, kernel)
        self.fs_img = os.path.join(REPO, fs_img)
        self.log_path = os.path.join(REPO, log_dir or LOG_DIR, f"{name}.log")
        self.eol = eol
        self.proc = None
        self.boot_seconds = None
        self._text = ""          # everything the guest printed, \r removed
        self._lines = []         # (monotonic time, line) of complete lines
        self._partial = ""       # the line being received
        self._pos = 0            # expect() searches from here
        self._cond = threading.Condition()
        self._eof = False
        self._tmpdir = None
        self._log = None
        self._reader = None
        self._started_at = None

    # ---- lifecycle --------------------------------------------------------

    def qemu_command(self, disk):
        cmd = [QEMU, "-machine", "virt", "-bios", "none",
               "-kernel", self.kernel, "-m", self.memory,
               "-smp", str(self.cpus), "-nographic",
               "-global", "virtio-mmio.force-legacy=false",
               "-drive", f"file={disk},if=none,format=raw,id=disk0",
               "-device", "virtio-blk-device,drive=disk0,bus=virtio-mmio-bus.0"]
        if self.rng:
            cmd += ["-device", "virtio-rng-device,bus=virtio-mmio-bus.7"]
        if self.append is not None:
            cmd += ["-append", self.append]
        return cmd + self.extra_args

    def required_files(self):
        """Files that must exist before QEMU can start."""
        return (self.kernel, self.fs_img)

    def prepare(self, tmpdir):
        """Copies the disk into tmpdir (private); returns the QEMU command."""
        disk = os.path.join(tmpdir, "fs.img")
        shutil.copyfile(self.fs_img, disk)
        return self.qemu_command(disk)

    def start(self):
        """Copy the disk image and start QEMU; returns self."""
        for path in self.required_files():
            if not os.path.exists(path):
                raise GuestError(f"{path} does not exist (run make first)")
        self._tmpdir = tempfile.mkdtemp(prefix=f"guest-{self.name}-")
        cmd = self.prepare(self._tmpdir)
        os.makedirs(os.path.dirname(self.log_path), exist_ok=True)
        self._log = open(self.log_path, "wb")
        self._log.write(("# " + " ".join(cmd) + "\n").encode())
        progress(self.name, f"starting QEMU, {self.cpus} cpus, log {self.log_path}")
        self._started_at = time.monotonic()
        _cleanup_on_sigterm()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, cwd=REPO,
                                     pass_fds=self.pass_fds)
        _live_guests.add(self)
        self._reader = threading.Thread(target=self._read_console,
                                        name=f"console-{self.name}",
                                        daemon=True)
        self._reader.start()
        return self

    def _read_console(self):
        fd = self.proc.stdout.fileno()
        while True:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                chunk = b""
            if not chunk:
                break
            self._log.write(chunk)
            self._log.flush()
            text = self.clean(chunk.decode("utf-8", errors="replace"))
            now = time.monotonic()
            with self._cond:
                self._text += text
                *complete, self._partial = (self._partial + text).split("\n")
                self._lines += [(now, line) for line in complete]
                self._cond.notify_all()
        with self._cond:
            self._eof = True
            self._cond.notify_all()

    def clean(self, text):
        """Console text as the transcript keeps it (\r removed)."""
        return text.replace("\r", "")

    def boot(self, timeout=60, prompt=None):
        """Start QEMU if needed and wait for the first shell prompt.

        Returns (and keeps in self.boot_seconds) the boot-to-prompt time.
        """
        if self.proc is None:
            self.start()
        self.expect(prompt or self.prompt, timeout)
        self.boot_seconds = time.monotonic() - self._started_at
        progress(self.name, f"shell prompt after {self.boot_seconds:.2f} s")
        return self.boot_seconds

    def send_halt(self, status=0):
        """Type the command that powers the guest off with exit status `status`."""
        self.send(f"halt {status}")

    def halt(self, status=0, timeout=30):
        """Power off from the shell; returns QEMU's exit status."""
        self.send_halt(status)
        return self.wait_exit(timeout)

    def wait_exit(self, timeout=30):
        """Wait for QEMU to exit by itself; returns its exit status."""
        try:
            status = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise GuestError(f"{self.name}: QEMU still running after {timeout} s")
        if self._reader:
            self._reader.join(5)
        progress(self.name, f"QEMU exited with status {status}")
        return status

    def kill(self):
        """Stop QEMU (if still running) and remove the private disk copy."""
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self._reader:
            self._reader.join(5)
        if self._log and not self._log.closed:
            self._log.close()
        if self._tmpdir:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None
        _live_guests.discard(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.kill()
        return False

    # ---- console ----------------------------------------------------------

    def send(self, line):
        """Type one line (a newline is added) on the guest's console."""
        if self.proc is None or self.proc.poll() is not None:
            raise GuestError(f"{self.name}: cannot send, QEMU is not running")
        self.proc.stdin.write((line + self.eol).encode())
        self.proc.stdin.flush()

    def type_keys(self, keys):
        """Type keys as they are (no newline added): control characters,
        part of a line."""
        if self.proc is None or self.proc.poll() is not None:
            raise GuestError(f"{self.name}: cannot type, QEMU is not running")
        self.proc.stdin.write(keys.encode())
        self.proc.stdin.flush()

    def expect(self, pattern, timeout=30, fail=""):
        """Wait until `pattern` appears in output not yet consumed.

        Returns the re.Match (on the transcript) and consumes output up to
        its end. The pattern is tried on output as it arrives, so end one
        that captures a number or word with what follows it (usually \n):
        "rkey ([0-9a-f]+)" can match the first half of a key. Raises GuestError on timeout, on QEMU exiting, or when the
        `fail` pattern (a kernel panic, self.panic, by default; None for
        no such check) shows up first.
        """
        if fail == "":
            fail = self.panic
        want = re.compile(pattern, re.MULTILINE)
        bad = re.compile(fail, re.MULTILINE) if fail else None
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                match = want.search(self._text, self._pos)
                failed = bad.search(self._text, self._pos) if bad else None
                if failed and (not match or failed.start() < match.start()):
                    raise GuestError(self._why(f"saw /{fail}/ while waiting "
                                               f"for /{pattern}/"))
                if match:
                    self._pos = match.end()
                    return match
                left = deadline - time.monotonic()
                if self._eof or left <= 0:
                    what = "QEMU exited" if self._eof else f"timeout {timeout} s"
                    raise GuestError(self._why(f"{what} waiting for /{pattern}/"))
                self._cond.wait(min(left, 1.0))

    def spawn(self, cmd, ready, timeout=60):
        """Start `cmd &` and wait until both its `ready` line and the shell's
        "[pid]" and prompt after it have appeared, in whichever order the
        console interleaved them; consume past both. Returns ready's match.

        Waiting for the ready line alone leaves the job's prompt unread, and
        the next run() would take that stale prompt for its own."""
        start = len(self.output())
        self.send(f"{cmd} &")
        want = re.compile(ready, re.MULTILINE)
        # "[pid]" then the prompt; a job's line or the echo of typed input
        # may land between them or right after the "$ ", so no line anchors.
        job = re.compile(r"\[\d+\][\s\S]*?\$ ")
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                m, j = want.search(self._text, start), job.search(self._text, start)
                if m and j:
                    self._pos = max(self._pos, m.end(), j.end())
                    return m
                if re.search(self.panic, self._text[start:]):
                    raise GuestError(self._why(f"panic while starting {cmd!r}"))
                left = deadline - time.monotonic()
                if self._eof or left <= 0:
                    what = "QEMU exited" if self._eof else f"timeout {timeout} s"
                    seen = "the ready line" if m else ("the job's prompt" if j else "neither")
                    raise GuestError(self._why(f"{what} starting {cmd!r} (saw {seen}) waiting for /{ready}/"))
                self._cond.wait(min(left, 1.0))

    def _why(self, message):
        tail = self._text[-600:]
        return f"{self.name}: {message}; last output:\n{tail}"

    def run(self, cmd, until=None, timeout=30):
        """Type cmd, wait for `until` (the next prompt); return the output.

        The returned text is what the guest printed after the echoed command
        line and before the match.
        """
        start = len(self.output())
        self.send(cmd)
        match = self.expect(until or self.prompt, timeout)
        text = self._text[start:match.start()]
        first, _, rest = text.partition("\n")
        return rest if first.strip() == cmd.strip() else text

    def output(self):
        """The whole transcript so far."""
        with self._cond:
            return self._text

    def timed_lines(self):
        """Complete lines so far as (seconds since QEMU started, line)."""
        with self._cond:
            return [(t - self._started_at, line) for t, line in self._lines]


def _kill_all():
    for guest in list(_live_guests):
        guest.kill()


def _cleanup_on_sigterm():
    """Make SIGTERM (timeout, make being stopped) run the atexit cleanup.

    Only possible from the main thread, and only if nobody else installed
    a handler; otherwise the caller keeps responsibility.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, lambda sig, frame: sys.exit(128 + sig))


atexit.register(_kill_all)
