"""The first process inside a command's sandbox: build its filesystem, then exec.

Run by ``roles.tools.sandbox`` as ``unshare --mount --pid --fork --kill-child
[--user --map-root-user] [--net] -- python -I -S sandbox_init.py SPEC``, so it
starts as root of fresh mount and PID namespaces. It reads the JSON spec, mounts
a tmpfs as the new root, binds the system directories read-only, gives the
command its own /dev, /proc and /tmp, mounts one overlay per writable path (the
upper dir records every change the command makes), hides the masked paths,
pivots into the new root, sets the resource limits, drops to an unprivileged uid
and execs the command. It imports nothing outside the standard library.

Any failure before the exec prints ``artoo-sandbox-error: <step>: <why>`` on
stderr and exits with ``ERROR_EXIT``.
"""

import ctypes
import json
import os
import resource
import sys

ERROR_EXIT = 125
ERROR_PREFIX = "artoo-sandbox-error: "

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MS_REC = 0x4000
MNT_DETACH = 0x2
CLONE_NEWUSER = 0x10000000
PR_SET_NO_NEW_PRIVS = 38
SYS_PIVOT_ROOT = 155
SYS_MOUNT_SETATTR = 442
AT_FDCWD = -100
AT_RECURSIVE = 0x8000
MOUNT_ATTR_RDONLY = 0x1
MOUNT_ATTR_NOSUID = 0x2
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
# Inside the nested user namespace the command runs as this uid and gid.
INNER_ID = 1000
ALIAS_DIR = "/.artoo/bin"  # last on the command's PATH
TMP = "/tmp"  # noqa: S108 (the sandbox's own /tmp, bound to the run's scratch)

libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = (
    ctypes.c_char_p,
    ctypes.c_char_p,
    ctypes.c_char_p,
    ctypes.c_ulong,
    ctypes.c_char_p,
)
libc.umount2.argtypes = (ctypes.c_char_p, ctypes.c_int)


class MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


class SetupError(Exception):
    """A step of the sandbox set-up failed."""


def _check(result: int, step: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise SetupError(f"{step}: {os.strerror(errno)}")


def mount(source, target, fstype, flags=0, data=None, step="mount") -> None:
    """Call mount(2), raising SetupError naming ``step`` on failure."""
    _check(
        libc.mount(
            source.encode() if source else None,
            target.encode(),
            fstype.encode() if fstype else None,
            flags,
            data.encode() if data else None,
        ),
        f"{step} {target}",
    )


def read_only(target: str, recursive: bool) -> None:
    """Make the mount at ``target`` (and below it, if recursive) read-only."""
    attr = MountAttr(MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, 0, 0, 0)
    flags = AT_RECURSIVE if recursive else 0
    _check(
        libc.syscall(
            SYS_MOUNT_SETATTR,
            AT_FDCWD,
            target.encode(),
            flags,
            ctypes.byref(attr),
            ctypes.sizeof(attr),
        ),
        f"read-only {target}",
    )


def inside(root: str, path: str) -> str:
    return root + path if path != "/" else root


def bind_system(root: str, path: str) -> None:
    """Show a system directory read-only (a symlink such as /bin stays one)."""
    target = inside(root, path)
    if os.path.islink(path):
        os.symlink(os.readlink(path), target)
        return
    os.makedirs(target, exist_ok=True)
    mount(path, target, None, MS_BIND | MS_REC, step="bind")
    read_only(target, recursive=True)


def make_dev(root: str) -> None:
    """Give the command a minimal /dev: a few device nodes and its own /dev/shm."""
    dev = inside(root, "/dev")
    os.makedirs(dev, exist_ok=True)
    mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k")
    for name in DEVICES:
        if not os.path.exists("/dev/" + name):
            continue
        open(f"{dev}/{name}", "w").close()
        mount("/dev/" + name, f"{dev}/{name}", None, MS_BIND, step="bind")
    for name, value in (
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ):
        os.symlink(value, f"{dev}/{name}")
    os.mkdir(f"{dev}/shm")
    mount("tmpfs", f"{dev}/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")


def add_aliases(root: str, aliases: dict) -> None:
    """Link each missing command name to the one it stands for (python: python3)."""
    alias_dir = inside(root, ALIAS_DIR)
    os.makedirs(alias_dir, exist_ok=True)
    for name, target in aliases.items():
        shown = [f"{d}/{name}" for d in ("/usr/bin", "/bin", "/usr/local/bin")]
        if os.path.lexists(inside(root, target)) and not any(
            os.path.lexists(inside(root, path)) for path in shown
        ):
            os.symlink(target, f"{alias_dir}/{name}")


def mount_overlay(root: str, layer: dict) -> None:
    """Mount the copy-on-write view of one writable path."""
    target = inside(root, layer["target"])
    os.makedirs(target, exist_ok=True)
    options = (
        f"lowerdir={layer['lower']},upperdir={layer['upper']},workdir={layer['work']}"
    )
    if os.getuid() != 0 or spec_uses_userns:
        options += ",userxattr"
    mount("overlay", target, "overlay", MS_NOSUID, options, step="overlay")


def mask(root: str, path: str) -> None:
    """Hide a path that lies in a visible tree under an empty read-only tmpfs."""
    target = inside(root, path)
    if os.path.isdir(target):
        mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, "size=4k,mode=0755")
        masked.append(path)


def pivot(root: str) -> None:
    """Make ``root`` the root and detach the old one, so nothing else is reachable."""
    os.chdir(root)
    _check(libc.syscall(SYS_PIVOT_ROOT, b".", b"."), "pivot_root")
    _check(libc.umount2(b".", MNT_DETACH), "detach old root")
    os.chdir("/")


def set_limits(limits: dict) -> None:
    """Apply the resource limits (soft and hard) before the command starts."""
    names = {
        "cpu_s": resource.RLIMIT_CPU,
        "memory_bytes": resource.RLIMIT_AS,
        "processes": resource.RLIMIT_NPROC,
        "file_bytes": resource.RLIMIT_FSIZE,
        "open_files": resource.RLIMIT_NOFILE,
    }
    for key, which in names.items():
        if limits.get(key):
            value = int(limits[key])
            resource.setrlimit(which, (value, value))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def drop_privileges(uid) -> None:
    """Become an unprivileged user with no capabilities and no way back."""
    if uid is None:
        # Rootless: a nested user namespace maps INNER_ID to the caller's uid.
        _check(libc.unshare(CLONE_NEWUSER), "unshare user namespace")
        with open("/proc/self/setgroups", "w") as handle:
            handle.write("deny")
        with open("/proc/self/uid_map", "w") as handle:
            handle.write(f"{INNER_ID} 0 1")
        with open("/proc/self/gid_map", "w") as handle:
            handle.write(f"{INNER_ID} 0 1")
        uid = gid = INNER_ID
    else:
        gid = uid
        os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def build(spec: dict) -> None:
    """Build the sandbox's filesystem at spec['root'] and enter it."""
    root = spec["root"]
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755", step="root")
    for path in spec["system"]:
        if os.path.lexists(path):
            bind_system(root, path)
    make_dev(root)
    add_aliases(root, spec.get("aliases", {}))
    os.makedirs(inside(root, "/proc"), exist_ok=True)
    mount("proc", inside(root, "/proc"), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    os.makedirs(inside(root, TMP), exist_ok=True)
    mount(spec["tmp"], inside(root, TMP), None, MS_BIND, step="bind tmp")
    for layer in spec["shared_layers"]:
        mount_overlay(root, layer)
    for path in spec["masks"]:
        mask(root, path)
    for layer in spec["own_layers"]:
        mount_overlay(root, layer)
    for path in masked:
        read_only(inside(root, path), recursive=False)
    pivot(root)
    read_only("/", recursive=False)


def main(argv: list[str]) -> int:
    global spec_uses_userns
    spec = json.loads(argv[1])
    spec_uses_userns = spec["uid"] is None
    try:
        build(spec)
        set_limits(spec["limits"])
        drop_privileges(spec["uid"])
        os.chdir(spec["cwd"])
        os.execve(spec["argv"][0], spec["argv"], spec["env"])  # noqa: S606
    except (SetupError, OSError, ValueError) as err:
        sys.stderr.write(f"{ERROR_PREFIX}{err}\n")
        sys.stderr.flush()
    return ERROR_EXIT


masked: list[str] = []
spec_uses_userns = False

if __name__ == "__main__":
    sys.exit(main(sys.argv))
