"""shell_checks.py: host-driven checks of init, sh and the small tools.

usertests covers the kernel from inside; these checks type commands at the
shell like a user would and look at what comes back, so they cover the
shell's parser (pipes, redirection, lists, background jobs, quoting, cd)
and the tools (echo, cat, wc, grep, ls, ln, rm, mkdir, kill, free).

run_shell_checks(guest, cpus) returns a list of (name, error-or-None);
test_kernel.py counts them with the usertests results.
"""
import re

from guest import GuestError

# (name, command, regex the command's output must match). Names follow
# the usertests convention <module>_<behaviour>.
CHECKS = [
    ("shell_echo", "echo hello   world", r"^hello world\n$"),
    ("shell_redirect_out_then_in", "echo abc > ut_sh1; cat < ut_sh1", r"^abc\n$"),
    ("shell_pipe", "echo one two three | wc", r"^1 3 14\n$"),
    ("shell_three_stage_pipe", "cat ut_sh1 | grep b | wc", r"^1 1 4\n$"),
    ("shell_list", "echo a; echo b ; echo c", r"^a\nb\nc\n$"),
    ("shell_quotes", "echo 'a  b' \"c|d;e\"", r"^a  b c\|d;e\n$"),
    ("shell_cd", "mkdir ut_shd; cd ut_shd; echo in > f; cd ..; cat ut_shd/f",
     r"^in\n$"),
    ("shell_cd_missing", "cd /no/such/dir", r"cannot change"),
    ("shell_not_found", "no_such_program", r"not found"),
    ("shell_syntax_error", "echo a | | wc", r"syntax error"),
    ("shell_comment", "echo visible # hidden", r"^visible\n$"),
    ("tool_grep_regex", "echo hello > ut_g; grep '^h.l*o$' ut_g", r"^hello\n$"),
    ("tool_grep_count", "grep -c l ut_g", r"^1\n$"),
    ("tool_grep_stdin_star", "echo xaaab | grep 'xa*b$'", r"^xaaab\n$"),
    ("tool_grep_no_match", "echo abc | grep '^b'", r"^$"),
    ("tool_wc_file", "wc ut_g", r"^1 1 6 ut_g\n$"),
    ("tool_ls_root", "ls /", r"(?m)^usertests +file +\d+ +\d+$"),
    ("tool_ls_dir", "ls ut_shd", r"(?m)^f +file +\d+ +3$"),
    ("tool_ln_and_rm", "ln ut_g ut_g2; cat ut_g2; rm ut_g ut_g2; cat ut_g",
     r"^hello\ncat: cannot open ut_g\n$"),
    ("tool_rm_nonempty_dir", "rm ut_shd", r"cannot remove"),
    ("tool_kill_missing", "kill 99999", r"no process"),
    ("tool_cleanup", "rm ut_shd/f ut_shd ut_sh1; ls ut_shd", r"cannot open"),
]


def check_output(guest, command, pattern):
    out = guest.run(command, timeout=30)
    if not re.search(pattern, out):
        return f"output {out!r} does not match /{pattern}/"
    return None


def check_free_cpus(guest, cpus):
    out = guest.run("free", timeout=30)
    match = re.search(r"^cpus: +(\d+)$", out, re.MULTILINE)
    if not match or int(match[1]) != cpus:
        return f"free reported {match[1] if match else 'nothing'}, QEMU has {cpus}"
    return None


def check_background(guest):
    guest.send("echo bgdone &")
    # The shell's job number and the job's output, in either order: the
    # job may finish before the shell prints "[pid]", or after its prompt.
    guest.expect(r"^\[\d+\]$[\s\S]*bgdone$|bgdone$[\s\S]*^\[\d+\]$", timeout=30)
    guest.run("", timeout=30)   # resynchronise on a fresh prompt
    return None


def check_init_restarts_shell(guest):
    guest.send("exit")
    guest.expect(r"init: starting sh", timeout=30)
    guest.expect(r"\$ $", timeout=30)
    return check_output(guest, "echo alive", r"^alive\n$")


def run_shell_checks(guest, cpus):
    """Runs every check on a booted guest sitting at a prompt."""
    results = []
    for name, command, pattern in CHECKS:
        results.append((name, _guarded(check_output, guest, command, pattern)))
    results.append(("tool_free_reports_cpus", _guarded(check_free_cpus, guest, cpus)))
    results.append(("shell_background_job", _guarded(check_background, guest)))
    results.append(("init_restarts_shell", _guarded(check_init_restarts_shell, guest)))
    return results


def _guarded(check, *args):
    try:
        return check(*args)
    except GuestError as err:
        return str(err).splitlines()[0]
