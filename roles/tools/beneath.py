"""Files reached beneath a directory, never through a symlink, a mount or "..".

The worker applies what sandboxed commands wrote, and runs ``read_file`` and
``write_file``, as root. A path string would follow whatever its directories
became meanwhile: a directory swapped for a symlink to ``/etc`` sends root's
write there. ``Root`` opens a directory once and reaches every path below it
with ``openat2(2)`` and ``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS``; a symlink, a
mount point or a ".." met on the way raises NotBeneath, and the final component
is never followed. Every change goes through directory fds (``mkdirat``,
``unlinkat``, ``renameat2``, ``linkat``, ``symlinkat``)::

    with Root("/srv/work") as root, as_owner(*root.owner):
        fd = root.open("d/new.txt", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)

``as_owner`` makes the calling thread's file accesses those of the directory's
owner (``setfsuid``/``setfsgid``, per thread on Linux), so root's capabilities
are not used where that owner's rights suffice.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# (openat2, renameat2) syscall numbers; openat2 is 437 on every architecture.
SYSCALLS = {"x86_64": (437, 316), "aarch64": (437, 276)}
RESOLVE_NO_XDEV = 0x01
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08
RESOLVE = (
    RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV
)
RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
O_PATH = getattr(os, "O_PATH", 0o10000000)
DIR_FLAGS = O_PATH | os.O_DIRECTORY
CHUNK = 1 << 20

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class NotBeneath(OSError):
    """A path met a symlink, a mount point or ".." on its way: it is refused."""


class _OpenHow(ctypes.Structure):
    _fields_ = [
        ("flags", ctypes.c_uint64),
        ("mode", ctypes.c_uint64),
        ("resolve", ctypes.c_uint64),
    ]


def _syscall(index: int, *args) -> int:
    number = SYSCALLS.get(platform.machine(), SYSCALLS["x86_64"])[index]
    result = _libc.syscall(ctypes.c_long(number), *args)
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return result


def openat2(dir_fd: int, path: str, flags: int, mode: int = 0) -> int:
    """Open ``path`` beneath ``dir_fd``; raise NotBeneath on a symlink or mount."""
    how = _OpenHow(flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, RESOLVE)
    try:
        return _syscall(
            0,
            ctypes.c_int(dir_fd),
            ctypes.c_char_p(os.fsencode(path)),
            ctypes.byref(how),
            ctypes.c_size_t(ctypes.sizeof(how)),
        )
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.EXDEV):
            raise NotBeneath(err.errno, f"{path}: {err.strerror}") from None
        raise


def renameat2(src_fd: int, src: str, dst_fd: int, dst: str, flags: int) -> None:
    """Rename one name to another across directory fds, with ``RENAME_*`` flags."""
    _syscall(
        1,
        ctypes.c_int(src_fd),
        ctypes.c_char_p(os.fsencode(src)),
        ctypes.c_int(dst_fd),
        ctypes.c_char_p(os.fsencode(dst)),
        ctypes.c_uint(flags),
    )


class Root:
    """A directory opened once; every path given is relative to it."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self.fd = os.open(path, DIR_FLAGS | os.O_NOFOLLOW | os.O_CLOEXEC)

    def __enter__(self) -> Root:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Close the directory's fd."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    @property
    def owner(self) -> tuple[int, int]:
        """Return the uid and gid that own the directory."""
        st = os.fstat(self.fd)
        return st.st_uid, st.st_gid

    def open(self, rel: str, flags: int, mode: int = 0) -> int:
        """Return an fd of ``rel`` (never a symlink's target), opened beneath."""
        return openat2(self.fd, rel or ".", flags, mode)

    @contextmanager
    def at(self, rel: str) -> Iterator[tuple[int, str]]:
        """Yield the fd of the directory holding ``rel`` and its last name."""
        head, _, name = rel.rpartition("/")
        if not name or name in (".", ".."):
            raise NotBeneath(errno.EINVAL, f"{rel!r} does not name an entry")
        fd = self.open(head, DIR_FLAGS)
        try:
            # O_PATH|O_NOFOLLOW opens a final symlink itself, not its target.
            if stat.S_ISLNK(os.fstat(fd).st_mode):
                raise NotBeneath(errno.ELOOP, f"{head}: is a symlink")
            yield fd, name
        finally:
            os.close(fd)

    def lstat(self, rel: str) -> os.stat_result | None:
        """Return the stat of ``rel`` itself, or None when it does not exist."""
        if not rel:
            return os.fstat(self.fd)
        try:
            with self.at(rel) as (fd, name):
                return os.stat(name, dir_fd=fd, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return None

    def listdir(self, rel: str) -> list[str]:
        """Return the names in the directory ``rel``."""
        fd = self.open(rel, os.O_RDONLY | os.O_DIRECTORY)
        try:
            return os.listdir(fd)
        finally:
            os.close(fd)

    def mkdir(self, rel: str, mode: int) -> None:
        """Make the directory ``rel`` with exactly ``mode``."""
        with self.at(rel) as (fd, name):
            os.mkdir(name, mode, dir_fd=fd)
        self.chmod(rel, mode)

    def chmod(self, rel: str, mode: int) -> None:
        """Set the mode of ``rel`` (a file or directory, never a symlink)."""
        self._by_fd(rel, lambda proc: os.chmod(proc, mode))

    def utime(self, rel: str, atime_ns: int, mtime_ns: int) -> None:
        """Set the times of ``rel`` (never a symlink's target)."""
        self._by_fd(rel, lambda proc: os.utime(proc, ns=(atime_ns, mtime_ns)))

    def _by_fd(self, rel: str, change) -> None:
        # An O_PATH fd names the very inode resolved beneath; its /proc link
        # lets chmod and utime reach a file its owner may not read.
        fd = self.open(rel, O_PATH)
        try:
            if stat.S_ISLNK(os.fstat(fd).st_mode):
                raise NotBeneath(errno.ELOOP, f"{rel}: is a symlink")
            change(f"/proc/self/fd/{fd}")
        finally:
            os.close(fd)

    def unlink(self, rel: str) -> None:
        """Remove ``rel``: a file, a symlink, or a directory and all it holds."""
        with self.at(rel) as (fd, name):
            remove_at(fd, name)

    def rmdir(self, rel: str) -> None:
        """Remove the empty directory ``rel``."""
        with self.at(rel) as (fd, name):
            os.rmdir(name, dir_fd=fd)

    def symlink(self, value: str, rel: str) -> None:
        """Make the symlink ``rel`` pointing at ``value`` (never written through)."""
        with self.at(rel) as (fd, name):
            os.symlink(value, name, dir_fd=fd)

    def link(self, src: str, rel: str) -> None:
        """Make ``rel`` a second name of the file ``src`` (a symlink not followed)."""
        with self.at(src) as (src_fd, src_name), self.at(rel) as (fd, name):
            os.link(
                src_name, name, src_dir_fd=src_fd, dst_dir_fd=fd, follow_symlinks=False
            )

    def rename(self, src: str, rel: str, flags: int = 0) -> None:
        """Rename ``src`` to ``rel``: ``RENAME_NOREPLACE`` fails when ``rel``
        exists, ``RENAME_EXCHANGE`` swaps the two, 0 replaces."""
        with self.at(src) as (src_fd, src_name), self.at(rel) as (fd, name):
            if flags:
                renameat2(src_fd, src_name, fd, name, flags)
            else:
                os.replace(src_name, name, src_dir_fd=src_fd, dst_dir_fd=fd)


def remove_at(dir_fd: int, name: str) -> None:
    """Remove ``name`` in ``dir_fd``, a directory's content first, by fds only."""
    st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(name, dir_fd=dir_fd)
        return
    fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
    try:
        for child in os.listdir(fd):
            remove_at(fd, child)
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=dir_fd)


@contextmanager
def as_owner(uid: int, gid: int) -> Iterator[None]:
    """Make this thread's file accesses those of ``uid``/``gid`` (root only)."""
    if os.geteuid() != 0:
        yield
        return
    # setfsuid returns the previous id whatever happens; it is read back.
    old_gid = _libc.setfsgid(ctypes.c_uint(gid))
    old_uid = _libc.setfsuid(ctypes.c_uint(uid))
    try:
        if _libc.setfsuid(ctypes.c_uint(-1 & 0xFFFFFFFF)) != uid:
            raise PermissionError(errno.EPERM, f"could not act as uid {uid}")
        yield
    finally:
        _libc.setfsuid(ctypes.c_uint(old_uid))
        _libc.setfsgid(ctypes.c_uint(old_gid))


@contextmanager
def as_root() -> Iterator[None]:
    """Undo ``as_owner`` for this thread within the block (a scratch file read)."""
    with as_owner(0, 0):
        yield


def copy_sparse(src: int, dst: int, size: int, digest=None) -> None:
    """Copy ``size`` bytes of ``src`` to ``dst``, keeping holes; feed ``digest``
    every byte (a hole as zeros) when given."""
    offset = 0
    while offset < size:
        start, end = _data(src, offset, size)
        if digest is not None:
            _zeros(digest, start - offset)
        while start < end:
            chunk = os.pread(src, min(CHUNK, end - start), start)
            if not chunk:
                break
            os.pwrite(dst, chunk, start)
            if digest is not None:
                digest.update(chunk)
            start += len(chunk)
        offset = end
    os.ftruncate(dst, size)


def _data(fd: int, offset: int, size: int) -> tuple[int, int]:
    """Return the next data segment at or after ``offset`` (size, size past it)."""
    try:
        start = os.lseek(fd, offset, os.SEEK_DATA)
    except OSError as err:
        if err.errno == errno.ENXIO:
            return size, size
        return offset, size  # no SEEK_DATA here: all of it is data
    try:
        end = os.lseek(fd, start, os.SEEK_HOLE)
    except OSError:
        end = size
    return min(start, size), min(end, size)


def _zeros(digest, count: int) -> None:
    zeros = bytes(min(CHUNK, count))
    while count > 0:
        digest.update(zeros[: min(CHUNK, count)])
        count -= CHUNK
