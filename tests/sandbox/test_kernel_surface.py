"""What of the kernel a sandboxed command can reach: the seccomp filter's refusals.

Each probe is a real command in a real sandbox; the syscalls are made through
ctypes so the test sees the errno the kernel (or the filter) returned.
"""

from __future__ import annotations

import platform
import subprocess
from pathlib import Path

import pytest

from roles.tools.errors import ToolError
from roles.tools.sandbox_check import self_check
from roles.tools.sandbox_init import ERROR_EXIT, ERROR_PREFIX
from roles.tools.shell import parse_shell_output
from tests.sandbox.conftest import Operator, make_toolbox

pytestmark = pytest.mark.skipif(
    platform.machine() != "x86_64", reason="the probes use x86_64 syscall numbers"
)

# Every probe prints one ``name: result`` line per syscall it tried, the result
# being "ok" or the errno's name.
PRELUDE = """
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

def call(nr, *args):
    result = libc.syscall(ctypes.c_long(nr), *(ctypes.c_long(a) for a in args))
    return result if result >= 0 else errno.errorcode[ctypes.get_errno()]

def show(name, result):
    print(f"{name}: {'ok' if isinstance(result, int) else result}", flush=True)
"""


@pytest.fixture
def toolbox(policy, workspace):
    return make_toolbox(policy, workspace, Operator(False))


def shell(toolbox, command: str) -> tuple[int | None, str]:
    return parse_shell_output(toolbox.call("shell", {"command": command}))


def probe(toolbox, code: str, before: str = "") -> dict[str, str]:
    """Run Python ``code`` in the sandbox; return its ``name: result`` lines."""
    script = f"python3 - <<'EOF'\n{PRELUDE}\n{code}\nEOF"
    status, out = shell(toolbox, before + script)
    assert status == 0, out
    return dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)


def test_unshare_r_no_longer_gives_root_in_a_nested_namespace(toolbox):
    code, out = shell(toolbox, "unshare -r id")
    assert code != 0
    assert "uid=0" not in out
    assert "Operation not permitted" in out


def test_no_new_mount_namespace_and_no_mount(toolbox):
    code, out = shell(toolbox, "unshare -m true")
    assert code != 0 and "Operation not permitted" in out
    code, out = shell(toolbox, "unshare -rm mount -t tmpfs none /tmp; echo $?")
    assert "Operation not permitted" in out and out.rstrip().endswith("1")


def test_namespace_syscalls_are_refused_with_eperm(toolbox):
    found = probe(
        toolbox,
        """
CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWNET = 0x10000000, 0x20000, 0x40000000
show("unshare user", call(272, CLONE_NEWUSER))
show("unshare user+mount", call(272, CLONE_NEWUSER | CLONE_NEWNS))
show("unshare net", call(272, CLONE_NEWNET))
mounted = libc.mount(b"none", b"/tmp", b"tmpfs", 0, None)
show("mount tmpfs", 0 if mounted == 0 else errno.errorcode[ctypes.get_errno()])
show("setns", call(308, 0, 0))
show("fsopen", call(430, 0, 0))
child = call(56, CLONE_NEWUSER | 17, 0, 0, 0, 0)
if child == 0:
    os._exit(0)
show("clone newuser", child)
show("clone3", call(435, 0, 0))
""",
    )
    assert found == {
        "unshare user": "EPERM",
        "unshare user+mount": "EPERM",
        "unshare net": "EPERM",
        "mount tmpfs": "EPERM",
        "setns": "EPERM",
        "fsopen": "EPERM",
        "clone newuser": "EPERM",
        # libc falls back to clone, whose flags the filter can read.
        "clone3": "ENOSYS",
    }


def test_keys_bpf_and_perf_are_refused_with_eperm(toolbox):
    found = probe(
        toolbox,
        """
KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING = 0, -3
show("keyctl", call(250, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 1))
show("add_key", call(248, 0, 0, 0, 0, 0))
show("request_key", call(249, 0, 0, 0, 0))
show("bpf", call(321, 0, 0, 0))
# Without the filter a NULL attribute is EFAULT: the refusal comes first.
show("perf_event_open", call(298, 0, 0, -1, -1, 0))
show("userfaultfd", call(323, 0))
show("io_uring_setup", call(425, 1, 0))
""",
    )
    assert set(found.values()) == {"EPERM"}, found
    assert len(found) == 7


def test_ptrace_attach_and_reading_another_process_are_refused(toolbox):
    found = probe(
        toolbox,
        """
import subprocess
PTRACE_ATTACH, PTRACE_SEIZE, PTRACE_TRACEME = 16, 0x4206, 0
sibling = subprocess.Popen(["sleep", "30"])
show("attach child", call(101, PTRACE_ATTACH, sibling.pid, 0, 0))
show("seize child", call(101, PTRACE_SEIZE, sibling.pid, 0, 0))
show("attach sibling", call(101, PTRACE_ATTACH, int(os.environ["SIBLING"]), 0, 0))
show("vm_readv child", call(310, sibling.pid, 0, 0, 0, 0, 0))
sibling.kill()
pid = os.fork()
if pid == 0:
    os._exit(0 if call(101, PTRACE_TRACEME, 0, 0, 0) == 0 else 1)
show("traceme", 0 if os.waitpid(pid, 0)[1] == 0 else "EPERM")
# A debugger's round: the child asks to be traced and stops; its tracer
# continues it (PTRACE_CONT, 7), as gdb does with a program it starts.
pid = os.fork()
if pid == 0:
    call(101, PTRACE_TRACEME, 0, 0, 0)
    os.kill(os.getpid(), 19)
    os._exit(0)
os.waitpid(pid, os.WUNTRACED)
show("cont traced child", call(101, 7, pid, 0, 0))
show("child ended", 0 if os.waitpid(pid, 0)[1] == 0 else "EPERM")
""",
        before="sleep 30 & export SIBLING=$!; ",
    )
    assert found == {
        "attach child": "EPERM",
        "seize child": "EPERM",
        "attach sibling": "EPERM",
        "vm_readv child": "EPERM",
        "traceme": "ok",
        "cont traced child": "ok",
        "child ended": "ok",
    }


def test_the_x32_abi_kills_the_process(toolbox):
    code, out = shell(
        toolbox,
        "python3 -c 'import ctypes; ctypes.CDLL(None).syscall(0x40000000 | 39)'; "
        "echo status $?",
    )
    assert "status 159" in out  # 128 + SIGSYS


def test_ordinary_work_still_runs(toolbox, workspace):
    command = (
        "set -e; grep -c line victim.txt | tr 1 x; "
        "python3 -c \"import subprocess; subprocess.run(['true'], check=True)\"; "
        "python3 -c 'import threading; t = threading.Thread(target=print, "
        'args=("thread",)); t.start(); t.join()\'; '
        "git init -q repo && git -C repo status --short; "
        "tar czf data.tgz data && tar tzf data.tgz; "
        "(sleep 0.01 & wait) && seq 3 | xargs -n1 echo n; "
        "grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status"
    )
    code, out = shell(toolbox, command)
    assert code == 0, out
    for expected in ("x", "thread", "data/keep.txt", "n 3", "Seccomp:\t2"):
        assert expected in out
    assert "NoNewPrivs:\t1" in out
    assert (workspace / "repo" / ".git").is_dir()
    assert (workspace / "data.tgz").is_file()


def test_a_missing_init_is_a_clear_error(toolbox, policy, base, monkeypatch):
    monkeypatch.setenv("ARTOO_SANDBOX_INIT", str(base / "no-such-init"))
    with pytest.raises(ToolError, match=r"sandbox init is not built.*make init"):
        toolbox.call("shell", {"command": "echo hi"})
    assert "sandbox init is not built" in (self_check(policy) or "")


def test_the_init_reports_a_bad_spec_and_exits_125():
    from roles.tools.sandbox import init_path

    done = subprocess.run(
        [init_path(), "-r", "/nowhere", "--", "/bin/true"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == ERROR_EXIT
    assert done.stderr.startswith(ERROR_PREFIX + "spec")


def test_the_init_refuses_to_mount_outside_fresh_namespaces(base):
    from roles.tools.sandbox import init_path

    spec = ["-r", str(base), "-t", str(base), "-c", "/", "-u", "65534"]
    done = subprocess.run(
        [init_path(), *spec, "--", "/bin/true"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == ERROR_EXIT
    assert done.stderr.startswith(ERROR_PREFIX + "start outside a new PID")
    assert str(base) not in Path("/proc/self/mountinfo").read_text()
