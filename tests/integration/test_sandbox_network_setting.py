"""ARTOO_SANDBOX_NETWORK: none by default, host only when said, and said loudly."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command

from artoo_web.env import envnetwork
from devtools import launcher
from roles.tools.sandbox import remove_tree

NAME = "ARTOO_SANDBOX_NETWORK"


@pytest.mark.parametrize(
    ("raw", "mode"),
    [
        (None, "none"),
        ("", "none"),
        ("none", "none"),
        (" Egress ", "egress"),
        ("host", "host"),
        ("false", "none"),
        ("0", "none"),
        ("off", "none"),
    ],
)
def test_the_network_mode_is_read_with_none_as_default(raw, mode):
    env = {} if raw is None else {NAME: raw}
    assert envnetwork(NAME, env) == mode


@pytest.mark.parametrize("raw", ["true", "1", "on", "yes"])
def test_the_old_true_is_refused_and_host_must_be_chosen(raw):
    with pytest.raises(ImproperlyConfigured, match=f"set {NAME}=host"):
        envnetwork(NAME, {NAME: raw})


@pytest.mark.parametrize("raw", ["loopback", "slirp", "2"])
def test_a_malformed_network_mode_is_refused(raw):
    with pytest.raises(ImproperlyConfigured, match="none, egress or host"):
        envnetwork(NAME, {NAME: raw})


def load_settings(tmp_path, raw: str) -> subprocess.CompletedProcess:
    """Configure Django with the real settings module and print the mode."""
    env = {
        "PATH": "/usr/bin:/bin",
        "ARTOO_DATA_DIR": str(tmp_path),
        "SECRET_KEY": "k",
        "DJANGO_SETTINGS_MODULE": "artoo_web.settings",
        NAME: raw,
    }
    probe = (
        "import django; django.setup(); from django.conf import settings; "
        "print(settings.ARTOO_SANDBOX_NETWORK)"
    )
    return subprocess.run(
        [sys.executable, "-c", probe],
        cwd=launcher.ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_settings_refuse_to_start_on_the_old_true(tmp_path):
    result = load_settings(tmp_path, "true")
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert f"{NAME}=host" in result.stderr


def test_the_settings_take_egress(tmp_path):
    result = load_settings(tmp_path, "egress")
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "egress"


@pytest.fixture
def sandbox_dir():
    # Not under /tmp: each sandboxed command gets a /tmp of its own.
    path = Path(tempfile.mkdtemp(prefix="artoo-check-", dir="/var/tmp"))
    yield path
    remove_tree(path)


def check_sandbox(settings, sandbox_dir, mode: str) -> tuple[str, str]:
    settings.ARTOO_SANDBOX = "on"
    settings.ARTOO_SANDBOX_NETWORK = mode
    settings.SANDBOX_DIR = sandbox_dir
    out, err = io.StringIO(), io.StringIO()
    call_command("check_sandbox", stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_check_sandbox_warns_that_host_reaches_every_service(settings, sandbox_dir):
    out, err = check_sandbox(settings, sandbox_dir, "host")
    assert "sandbox: ok (network: host)" in out
    assert "WARNING: ARTOO_SANDBOX_NETWORK=host" in err
    assert "Redis" in err and "PostgreSQL" in err


def test_check_sandbox_is_quiet_about_the_default_network(settings, sandbox_dir):
    out, err = check_sandbox(settings, sandbox_dir, "none")
    assert "sandbox: ok (network: none)" in out
    assert "WARNING" not in err


def test_check_sandbox_says_as_whom_commands_write_each_allowed_path(
    settings, sandbox_dir, tmp_path
):
    granted = sandbox_dir.parent / f"{sandbox_dir.name}-granted"
    granted.mkdir()
    try:
        settings.ARTOO_ALLOWED_PATHS = [granted]
        out, _ = check_sandbox(settings, sandbox_dir, "none")
    finally:
        remove_tree(granted)
    owner = "as its owner, uid 0" if os.geteuid() == 0 else "worker's own user"
    assert f"allowed path {granted}: commands write {owner}" in out
