"""Every shell command of a run in its own sandbox, and its effect judged.

``Sandbox.run(command)`` starts ``unshare`` (fresh mount and PID namespaces, a
user namespace when the worker is not root, a network namespace without any
route to the host unless the policy says ``host``), whose first process
(``sandbox_init.c``, compiled) builds a filesystem in which:

- the system directories (/usr, /etc, …) are read-only and nothing else of the
  host is there: not the data dir, the database, the secret key, the project's
  checkout, other runs' workspaces, /home, /root or /run;
- the run's workspace and each operator-allowed path are copy-on-write overlays,
  so the command's changes land in an upper dir and not on the real files;
- /tmp is the run's own scratch directory, /dev a few device nodes, /proc its
  own PID namespace (everything the command starts dies with it);
- the environment is an allowlist; the command runs as an unprivileged uid with
  no capabilities, no_new_privs and CPU, memory, process and file-size limits;
- a seccomp filter refuses new namespaces, mount, ptrace of other processes,
  keys, bpf, perf events and the rest of the kernel surface a command never
  needs (``sandbox_init.c``).

The result carries the command's output and its Effect (``roles.tools.effect``),
which the Toolbox applies at once or, when destructive, after the operator's
approval. ``discard`` removes the scratch either way.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from roles.tools.diskquota import Quota, free_refusal, judge
from roles.tools.effect import Effect, Layer, compute_effect
from roles.tools.egress import egress_namespace
from roles.tools.errors import ToolError
from roles.tools.quotawatch import Watchdog
from roles.tools.sandbox_init import ERROR_EXIT, ERROR_PREFIX, find_init, init_args
from roles.tools.sandbox_policy import (  # noqa: F401 (re-exported)
    NETWORK_MODES,
    NOBODY,
    SYSTEM_PATHS,
    Limits,
    SandboxPolicy,
)
from roles.tools.shell import BASH_FLAGS, parse_shell_output, run_process

# The last entry holds aliases the system lacks: a model's ``python`` is python3.
COMMAND_PATH = (
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/.artoo/bin"
)
ALIASES = {"python": "/usr/bin/python3", "pip": "/usr/bin/pip3"}
# The command's own /tmp (the run's scratch directory), also its HOME.
SANDBOX_TMP = "/tmp"  # noqa: S108


class SandboxError(ToolError):
    """The sandbox could not be built; the command did not run."""


@dataclass
class SandboxRun:
    """One finished command: its canonical output, its effect and its scratch."""

    output: str
    effect: Effect
    scratch: Path

    def discard(self) -> None:
        """Remove the command's scratch (the upper dirs): its changes are gone."""
        remove_tree(self.scratch)


class Sandbox:
    """Run one run's shell commands, each in a fresh sandbox."""

    def __init__(
        self,
        policy: SandboxPolicy,
        *,
        run_key: str,
        workspace: Path,
        writable: Sequence[Path] = (),
        own_workspace: bool = True,
    ):
        """``own_workspace`` gives the workspace to the sandbox's uid; without
        it the workspace stays its owner's and commands write there as that
        owner, as in an allowed path (a project's directory of files that are
        not the sandbox's)."""
        self.policy = policy
        self.workspace = Path(workspace)
        self.writable = tuple(Path(p) for p in writable if Path(p).is_dir())
        self.own_workspace = own_workspace
        self.run_dir = policy.state_dir / run_key
        self.tmp = self.run_dir / "tmp"
        self.tmp.mkdir(parents=True, exist_ok=True)
        self._own(self.tmp, 0o700)
        if own_workspace:
            self._own(self.workspace, 0o755)

    def showing(self, paths: Sequence[Path]) -> Sandbox:
        """Return this run's sandbox showing ``paths`` read-only as well."""
        if not paths:
            return self
        shown = (*self.policy.system_paths, *(str(p) for p in paths))
        policy = replace(self.policy, system_paths=shown)
        run_key = self.run_dir.name
        return Sandbox(
            policy,
            run_key=run_key,
            workspace=self.workspace,
            writable=self.writable,
            own_workspace=self.own_workspace,
        )

    def run(
        self,
        command: str,
        *,
        timeout_s: float,
        output_cap: int,
        cancelled: Callable[[], bool],
        track: Callable[[subprocess.Popen, bool], None],
        kill_grace_s: float,
    ) -> SandboxRun:
        """Run ``command`` in a new sandbox; return its output and effect."""
        quota = Quota.of(self.policy.limits)
        watch = Watchdog(quota, self.tmp, self.run_dir, cancelled)
        low = free_refusal(self.policy.state_dir, quota) or watch.refusal_to_start()
        if low:
            raise SandboxError(low)
        scratch = self.run_dir / f"cmd-{uuid.uuid4().hex[:12]}"
        scratch.mkdir(parents=True)
        try:
            layers, spec = self._spec(command, scratch)
            watch.uppers = [x.upper for x in layers]
            output = self._launch(
                spec,
                cwd="/",
                env={"PATH": COMMAND_PATH, "LANG": "C.UTF-8"},
                timeout_s=timeout_s,
                output_cap=output_cap,
                cancelled=watch,
                track=watch.tracking(track),
                kill_grace_s=kill_grace_s,
            )
            code, text = parse_shell_output(output)
            if code == ERROR_EXIT and text.startswith(ERROR_PREFIX):
                raise SandboxError(
                    "the sandbox could not be built, the command did not run: "
                    + text[len(ERROR_PREFIX) :].strip()
                )
            # Measured before the effect is computed: that walk reads every file.
            refused = watch.stopped or judge(
                watch.uppers, quota, code, self.run_dir, self.tmp
            )
            if refused:
                remove_tree(scratch)
                return SandboxRun(f"{output.rstrip()}\n{refused}\n", Effect(), scratch)
            return SandboxRun(output, compute_effect(layers), scratch)
        except BaseException:
            remove_tree(scratch)
            raise

    def _spec(self, command: str, scratch: Path) -> tuple[list[Layer], dict]:
        layers, own, shared = [], [], []
        targets = [self.workspace] + sorted(self.writable, key=lambda p: len(p.parts))
        for index, target in enumerate(targets):
            upper, work = scratch / f"upper{index}", scratch / f"work{index}"
            upper.mkdir()
            work.mkdir()
            # The merged root takes its owner and mode from the upper dir.
            real = target.stat()
            mine = self.own_workspace and target == self.workspace
            direct = writes_as(self.policy, real.st_uid, mine)
            ids = (real.st_uid, real.st_gid) if direct else (self.policy.uid,) * 2
            os.chmod(upper, stat.S_IMODE(real.st_mode))
            os.chown(upper, *ids)
            layers.append(Layer(target, upper))
            entry = {
                "target": str(target),
                "lower": str(target),
                "upper": str(upper),
                "work": str(work),
            }
            if not direct:
                # The owner's files are the command's in an idmapped view of
                # the path: it writes there as the owner would (the apply step
                # writes as the owner too), and nowhere else.
                view = scratch / f"view{index}"
                view.mkdir()
                entry["idmap"] = [real.st_uid, real.st_gid, str(view)]
            # A layer inside a hidden path (the workspace, the user's shared
            # area) is mounted after the masks, so it shows through them.
            masked = any(target.is_relative_to(m) for m in self.policy.masks)
            (own if masked or target == self.workspace else shared).append(entry)
        (scratch / "root").mkdir()
        spec = {
            "root": str(scratch / "root"),
            "system": list(self.policy.system_paths),
            "tmp": str(self.tmp),
            "shared_layers": shared,
            "masks": [str(p) for p in self.policy.masks],
            "aliases": ALIASES,
            "own_layers": own,
            "cwd": str(self.workspace),
            "uid": None if self.policy.rootless else self.policy.uid,
            "limits": self.policy.limits.as_spec(),
            "env": self._env(),
            "argv": ["/bin/bash", *BASH_FLAGS, command],
        }
        return layers, spec

    def _launch(self, spec: dict, **options) -> str:
        """Run the sandbox in the policy's network; return ``run_process``'s text."""
        if self.policy.network != "egress":
            return run_process(self._argv(spec), **options)
        with egress_namespace(rootless=self.policy.rootless) as enter:
            return run_process(enter + self._argv(spec), **options)

    def _argv(self, spec: dict) -> list[str]:
        argv = ["unshare", "--mount", "--pid", "--fork", "--kill-child"]
        argv += ["--propagation", "private"]
        if self.policy.rootless:
            argv += ["--user", "--map-root-user"]
        # egress enters a namespace made beforehand (``_launch``); host keeps
        # the worker's own.
        if self.policy.network == "none":
            argv += ["--net"]
        return argv + ["--", init_path(), *init_args(spec)]

    def _env(self) -> dict[str, str]:
        env = {
            "PATH": COMMAND_PATH,
            "HOME": SANDBOX_TMP,
            "TMPDIR": SANDBOX_TMP,
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "TERM": "dumb",
            "USER": "artoo",
            "LOGNAME": "artoo",
            "SHELL": "/bin/bash",
            "PWD": str(self.workspace),
        }
        for name in self.policy.env_names:
            if name in os.environ:
                env[name] = os.environ[name]
        return env

    def _own(self, path: Path, mode: int) -> None:
        """Let the sandbox's uid write ``path`` (only root can give it away)."""
        if self.policy.rootless:
            return
        st = path.stat()
        if st.st_uid != self.policy.uid:
            os.chown(path, self.policy.uid, self.policy.uid)
        if stat.S_IMODE(st.st_mode) != mode:
            os.chmod(path, mode)


def writes_as(policy: SandboxPolicy, owner: int, workspace: bool) -> bool:
    """Return True when commands write a path with their own uid, False when
    through an idmapped view as its owner ``owner`` (an allowed path of
    another owner, with a root worker)."""
    return policy.rootless or workspace or owner == policy.uid


def init_path() -> str:
    """Return the sandbox init's path; raise SandboxError when it is not built."""
    path, missing = find_init()
    if missing:
        raise SandboxError(missing)
    return path


def give_to_sandbox(path: Path, policy: SandboxPolicy | None) -> None:
    """Make a file the worker created (write_file) writable by later commands."""
    if policy is not None and not policy.rootless:
        os.lchown(path, policy.uid, policy.uid)


def remove_tree(path: Path) -> None:
    """Remove a scratch tree, including overlay work dirs left with mode 000."""

    def unlock(func, failed, _exc):
        parent = os.path.dirname(failed)
        os.chmod(parent, 0o700)
        if os.path.isdir(failed) and not os.path.islink(failed):
            os.chmod(failed, 0o700)
            shutil.rmtree(failed, ignore_errors=True)
        elif os.path.lexists(failed):
            os.unlink(failed)

    if os.path.lexists(path):
        shutil.rmtree(path, onerror=unlock)
