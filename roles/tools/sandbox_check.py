"""Check once that a sandbox really works on this machine (``make run`` does)."""

from __future__ import annotations

import shutil
import uuid

from roles.tools.errors import ToolError
from roles.tools.sandbox import (
    Sandbox,
    SandboxError,
    SandboxPolicy,
    init_path,
    remove_tree,
    writes_as,
)
from roles.tools.shell import parse_shell_output


def self_check(policy: SandboxPolicy) -> str | None:
    """Return why sandboxes cannot run here, or None when one works end to end.

    It runs a real command that deletes a file and creates another in an
    overlaid workspace and checks that the host saw neither until applied.
    """
    if shutil.which("unshare") is None:
        return "the unshare command (Debian package util-linux) is not installed"
    try:
        init_path()
    except SandboxError as err:
        return str(err)
    probe = policy.state_dir / f"self-check-{uuid.uuid4().hex[:8]}"
    workspace = probe / "workspace"
    try:
        workspace.mkdir(parents=True)
        (workspace / "victim").write_text("keep me\n")
        sandbox = Sandbox(policy, run_key=probe.name, workspace=workspace)
        sandbox.run_dir = probe
        result = sandbox.run(
            "rm victim && echo made > new && id -u",
            timeout_s=30,
            output_cap=10_000,
            cancelled=lambda: False,
            track=lambda proc, running: None,
            kill_grace_s=1,
        )
        code, text = parse_shell_output(result.output)
        kinds = sorted(c.kind for c in result.effect.changes)
        if code != 0:
            return f"a test command failed inside the sandbox: {text.strip()[:300]}"
        if text.strip() == "0":
            return "the test command ran as root inside the sandbox"
        if not (workspace / "victim").exists() or (workspace / "new").exists():
            return "the test command changed the real workspace (no overlay)"
        if kinds != ["created", "deleted"]:
            return f"the overlay did not record the test command's effect: {kinds}"
        return None
    except (OSError, ToolError) as err:
        return str(err)
    finally:
        remove_tree(probe)


def network_warning(policy: SandboxPolicy) -> str | None:
    """Return what the operator must know about the policy's network, or None."""
    if policy.network != "host":
        return None
    return (
        "sandboxed commands share this machine's network: they can reach every "
        "service on it, Redis (and through it the task queues), PostgreSQL and "
        "the web app's port included, as any local process can. Choose egress "
        "(outbound connections only, never this machine's loopback) or none, "
        "and require authentication on those services either way."
    )


def write_owners(policy: SandboxPolicy, paths) -> list[str]:
    """Return, one line per allowed path, as whom commands write there."""
    lines = []
    for path in paths:
        try:
            owner = path.stat().st_uid
        except OSError as err:
            lines.append(f"{path}: not usable ({err.strerror or err})")
            continue
        if policy.rootless:
            who = "as this worker's own user"
        elif writes_as(policy, owner, workspace=False):
            who = f"as the sandbox's uid {policy.uid}, its owner"
        else:
            who = (
                f"as its owner, uid {owner} (the command's uid {policy.uid} owns "
                "that owner's files in its view; other users' files stay closed)"
            )
        lines.append(f"{path}: commands write {who}")
    return lines
