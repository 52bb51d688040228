"""linux_guest.py: a Linux Soft-RoCE guest in a tests/net/launch.py test bed.

Owns how run_interop.py puts the Linux guest (tests/linux/: Debian's
kernel, an initramfs with rxe, rdma-core and build/linux/overlay/) on a
linkemu port in place of an xv6 guest: the same address and MAC
convention (launch.guest_ip / guest_mac), the same inherited UDP socket as
its e1000's -netdev dgram. The guest's /init prints

    linux-guest: ready rxe0 <ip> mtu <mtu> gid <index>

and then gives a shell with the prompt `linux# `.

    tb = Testbed(2, ...)
    lnx = attach(tb, 1, eth_mtu=9000)   # guest 1 becomes Linux
    boot_mixed(tb)                      # linkemu, then every guest, ready

Kept small and separate so it can give way to the test bed's own Linux
support (branch linux-guest) without touching run_interop.py's checks.
"""
import os

from guest import PROMPT, Guest, GuestError, progress
from launch import REPO

KERNEL = os.environ.get("LINUX_KERNEL", os.path.join(REPO, "build", "linux", "bzImage"))
INITRD = os.environ.get("LINUX_INITRD", os.path.join(REPO, "build", "linux", "initrd.img"))
QEMU_X86 = os.environ.get("QEMU_X86", "qemu-system-x86_64")
LINUX_PROMPT = r"linux# "
# The kernel prints "panic" in its command line (panic=-1); a real one says this.
LINUX_PANIC = r"Kernel panic - "


class LinuxGuest(Guest):
    """Guest's console handling with an x86 Linux command line."""

    def __init__(self, name, fd, ip, mac, eth_mtu, memory="512M", cpus=1):
        append = f"console=ttyS0 panic=-1 ip={ip} mac={mac} mtu={eth_mtu}"
        super().__init__(name, cpus=cpus, memory=memory, append=append, pass_fds=(fd,),
                         kernel=KERNEL, fs_img=INITRD)
        self.fd, self.mac, self.prompt = fd, mac, LINUX_PROMPT

    def qemu_command(self, disk):
        # The disk copy Guest.start makes (of the initrd) is unused.
        return [QEMU_X86, "-m", self.memory, "-smp", str(self.cpus), "-nographic", "-no-reboot",
                "-kernel", self.kernel, "-initrd", self.fs_img, "-append", self.append,
                "-netdev", f"dgram,id=n0,local.type=fd,local.str={self.fd}",
                "-device", f"e1000,netdev=n0,mac={self.mac}"]

    def expect(self, pattern, timeout=30, fail=LINUX_PANIC):
        return super().expect(pattern, timeout, fail)

    def boot(self, timeout=240, prompt=None):
        """Waits for /init's ready line (rxe0 up), then the shell prompt."""
        if self.proc is None:
            self.start()
        m = self.expect(r"linux-guest: (ready rxe0 [^\n]*|rxe0 failed[^\n]*)\n", timeout)
        if not m.group(1).startswith("ready"):
            raise GuestError(f"{self.name}: {m.group(1)}")
        self.expect(self.prompt, 60)
        progress(self.name, m.group(1))
        return m.group(1)


def attach(tb, i, eth_mtu=1500):
    """Makes guest i of Testbed tb a Linux guest (before tb boots)."""
    g = LinuxGuest(f"{tb.name}-linux{i}", tb.socks[i].fileno(), tb.ip(i), tb.mac(i), eth_mtu)
    tb.guests[i] = g
    return g


def boot_mixed(tb, timeout=240):
    """Starts linkemu and every guest at once; waits until all are ready."""
    tb.start_linkemu()
    for g in tb.guests:
        if not hasattr(g, "prompt"):
            g.prompt = PROMPT
        g.start()
    for g in tb.guests:
        g.boot(timeout)
