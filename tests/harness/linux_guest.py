"""linux_guest.py: boot the Linux Soft-RoCE guest in QEMU and drive its console.

Owns LinuxGuest, the Linux peer of guest.Guest: Debian's x86-64 kernel and
the initramfs that tests/linux/build_image.sh makes (`make linux-image`:
build/linux/bzImage, build/linux/initrd.img). Its /init (tests/linux/init)
brings eth0 up with the boot arguments' address, adds the rxe0 Soft-RoCE
device on it, prints

    linux-guest: ready rxe0 <ip> mtu <mtu> gid <IPv4 GID index>

and starts a shell whose prompt is `linux# `. The console machinery (reader
thread, transcript in tests/logs/<name>.log, send/expect/run/wait_exit/kill)
is Guest's; this class only knows how to start the other machine, its
prompt, its panic and how it powers off (send_halt).

    with LinuxGuest("lx", append="ip=10.0.0.3 mtu=9000") as lx:
        lx.boot()                      # ready line, then the prompt
        print(lx.ip, lx.gid_index)     # from the ready line
        print(lx.run("ibv_devinfo -d rxe0"))
        rc, out = lx.run_status("rdma link")   # exit status and output
        lx.halt()                      # poweroff -f; QEMU exits 0

Python standard library only.
"""
import os
import re

from guest import REPO, Guest, GuestError, progress

QEMU_X86 = os.environ.get("QEMU_X86", "qemu-system-x86_64")
LINUX_DIR = os.environ.get("LINUX_IMAGE_DIR", os.path.join(REPO, "build", "linux"))
LINUX_PROMPT = r"^linux# $"
LINUX_PANIC = r"Kernel panic|BUG: |Oops: |linux-guest: rxe0 failed"
READY = r"linux-guest: ready rxe0 (\S+) mtu (\d+) gid (\S+)\n"
BOX_READY = r"linux-guest: ready br0 mtu (\d+)\n"
# Terminal control sequences busybox's line editor writes (cursor queries).
ESCAPE = re.compile(r"\x1b(\[[0-9;?]*[A-Za-z]|[A-Za-z])")
ESCAPE_TAIL = re.compile(r"\x1b(\[[0-9;?]*)?$")


class LinuxGuest(Guest):
    """One Linux guest (x86-64 QEMU, TCG) and its console transcript.

    append: boot arguments after `console=ttyS0 quiet` (ip=, mac=, mtu=,
    eth1=, bridge=, netem0=, netem1=; see tests/linux/init). command: words
    run once after the ready line (`-- words` on the kernel command line;
    no quoting survives, use a script in the overlay for anything more).
    extra_args: more QEMU arguments (-netdev/-device).
    """
    prompt = LINUX_PROMPT
    panic = LINUX_PANIC

    def __init__(self, name, cpus=1, memory="512M", extra_args=(), append="",
                 kernel=None, initrd=None, command=None, log_dir=None, pass_fds=()):
        super().__init__(name, cpus=cpus, memory=memory, extra_args=extra_args,
                         append=append, log_dir=log_dir, pass_fds=pass_fds, rng=False)
        self.kernel = kernel or os.path.join(LINUX_DIR, "bzImage")
        self.initrd = initrd or os.path.join(LINUX_DIR, "initrd.img")
        self.command = command
        self.ip = self.mtu = self.gid_index = None
        self._carry = ""                 # an escape sequence cut by a read

    def required_files(self):
        return (self.kernel, self.initrd)

    def prepare(self, tmpdir):
        """Nothing to copy: the initramfs is read-only to QEMU."""
        return self.qemu_command()

    def qemu_command(self, disk=None):
        append = f"console=ttyS0 quiet {self.append or ''}".strip()
        if self.command:
            append += f" -- {self.command}"
        return [QEMU_X86, "-machine", "q35", "-accel", "tcg", "-cpu", "max",
                "-m", self.memory, "-smp", str(self.cpus), "-nographic", "-no-reboot",
                "-kernel", self.kernel, "-initrd", self.initrd,
                "-append", append] + self.extra_args

    def clean(self, text):
        """\\r and the line editor's escape sequences removed."""
        text = self._carry + text.replace("\r", "")
        tail = ESCAPE_TAIL.search(text)
        self._carry = text[tail.start():] if tail else ""
        text = text[:tail.start()] if tail else text
        return ESCAPE.sub("", text)

    def boot(self, timeout=120, prompt=None):
        """Waits for the ready line (keeps ip, mtu, gid_index) and the prompt."""
        if self.proc is None:
            self.start()
        m = self.expect(READY, timeout)
        self.ip, self.mtu = m[1], int(m[2])
        self.gid_index = int(m[3]) if m[3].isdigit() else None
        return super().boot(timeout, prompt)

    def run_status(self, cmd, timeout=30):
        """Runs cmd; returns (its exit status, what it printed)."""
        out = self.run(f"{cmd}; echo linux-rc=$?", timeout=timeout)
        m = re.search(r"^linux-rc=(\d+)\n", out, re.M)
        if not m:
            raise GuestError(self._why(f"no exit status from {cmd!r}"))
        return int(m[1]), out[:m.start()]

    def interrupt(self):
        """Ctrl-C to the foreground program (a server left running)."""
        self.proc.stdin.write(b"\x03")
        self.proc.stdin.flush()

    def send_halt(self, status=0):
        """poweroff -f; QEMU then exits with status 0 (-no-reboot), whatever
        `status` says (Linux has no exit status to give QEMU)."""
        self.send("poweroff -f")


class NetemBox(LinuxGuest):
    """A Linux guest that is a bridge with tc netem on both ports: eth0 and
    eth1 in br0, `tc qdisc add dev ethN root netem SPEC` on each. Frames
    from the host on eth0's side leave through eth1, so eth1's qdisc
    impairs that direction ("a2b" when guest 0 is on eth0) and eth0's the
    other ("b2a"). nics: QEMU arguments for the two NICs, eth0's first."""

    def __init__(self, name, a2b=None, b2a=None, nics=(), mtu=9000, pass_fds=(), **kw):
        append = f"bridge=1 mtu={mtu}"
        for port, spec in (("netem1", a2b), ("netem0", b2a)):
            if spec:
                append += f" {port}={self.boot_spec(spec)}"
        super().__init__(name, extra_args=nics, append=append, pass_fds=pass_fds, **kw)
        self.specs = {"a2b": a2b, "b2a": b2a}

    @staticmethod
    def boot_spec(spec):
        """A netem spec as one boot argument (spaces become commas)."""
        if "," in spec:
            raise GuestError(f"netem spec {spec!r}: no commas on the boot line")
        return spec.replace(" ", ",")

    def boot(self, timeout=120, prompt=None):
        """Waits for the bridge's ready line and the prompt."""
        if self.proc is None:
            self.start()
        self.mtu = int(self.expect(BOX_READY, timeout)[1])
        return Guest.boot(self, timeout, prompt)

    def set_netem(self, direction, spec):
        """Changes one direction's impairment now ('a2b', 'b2a' or 'both');
        spec None or "" removes it."""
        for d in (("a2b", "b2a") if direction == "both" else (direction,)):
            dev = {"a2b": "eth1", "b2a": "eth0"}[d]
            if spec:
                cmd = f"tc qdisc replace dev {dev} root netem {spec}"
            elif self.specs.get(d):
                cmd = f"tc qdisc del dev {dev} root"
            else:
                continue
            out = self.run(f"{cmd} && echo netem-ok", timeout=30)
            if not re.search(r"^netem-ok$", out, re.M):
                raise GuestError(f"{self.name}: {cmd}: {out.strip()}")
            self.specs[d] = spec or None

    def qdiscs(self):
        """`tc -s qdisc show` of both ports (netem's sent/dropped counters)."""
        return self.run("tc -s qdisc show dev eth0; tc -s qdisc show dev eth1", timeout=30)


def linux_image_present():
    """True if `make linux-image` has been run."""
    return all(os.path.exists(os.path.join(LINUX_DIR, f)) for f in ("bzImage", "initrd.img"))


__all__ = ["LinuxGuest", "NetemBox", "GuestError", "progress", "linux_image_present",
           "LINUX_PROMPT"]
