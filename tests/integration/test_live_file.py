"""Commands beside `make run` read its live file: the key and the service URLs."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

from devtools import launcher

ROOT = launcher.ROOT
PROBE = (
    "import django; django.setup(); from django.conf import settings; "
    "print(settings.SECRET_KEY); print(settings.REDIS_URL); "
    "print(settings.DATABASES['default']['ENGINE'])"
)


def leave_live_file(data_dir, env: dict, *, running=True, pid=None) -> None:
    """Write the live file as `make run` leaves it (artoo_web/livefile.py)."""
    data = {"pid": pid or os.getpid(), "running": running, "env": env}
    (data_dir / "live.json").write_text(json.dumps(data))


def plain_env(data_dir, **extra) -> dict:
    """Return the environment of a fresh terminal: no key, no service URLs."""
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root")}
    return {**env, "ARTOO_DATA_DIR": str(data_dir), **extra}


def python(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def settings_seen(env: dict) -> list[str]:
    env = {**env, "DJANGO_SETTINGS_MODULE": "artoo_web.settings"}
    result = python(env, "-c", PROBE)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.splitlines()


def test_live_file_is_readable_by_its_owner_only(tmp_path):
    from artoo_web import livefile

    written = livefile.write(tmp_path, {"SECRET_KEY": "k", "OTHER": "x"}, 1)

    assert stat.S_IMODE(written.stat().st_mode) == 0o600
    assert livefile.read(tmp_path)["env"] == {"SECRET_KEY": "k"}


def test_settings_take_the_key_redis_and_database_from_the_live_file(tmp_path):
    live = {
        "SECRET_KEY": "live-key",
        "REDIS_URL": "redis://127.0.0.1:1/3",
        "DATABASE_URL": "postgres://artoo@127.0.0.1:1/artoo",
    }
    leave_live_file(tmp_path, live)

    seen = settings_seen(plain_env(tmp_path))

    assert seen == [
        "live-key",
        "redis://127.0.0.1:1/3",
        "django.db.backends.postgresql",
    ]


def test_the_environment_wins_over_the_live_file(tmp_path):
    leave_live_file(tmp_path, {"SECRET_KEY": "live-key", "REDIS_URL": "redis://x:1/0"})
    env = plain_env(tmp_path, SECRET_KEY="env-key", REDIS_URL="redis://y:2/0")

    assert settings_seen(env)[:2] == ["env-key", "redis://y:2/0"]


def test_a_stopped_instance_still_lends_its_key_to_offline_commands(tmp_path):
    leave_live_file(tmp_path, {"SECRET_KEY": "live-key"}, running=False)

    assert settings_seen(plain_env(tmp_path))[0] == "live-key"


def not_running(env: dict, *command: str) -> str:
    result = python(env, "manage.py", *command)
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "artoo is not running: start it with make run" in result.stderr
    return result.stderr


@pytest.mark.parametrize("command", [["artoo", "echo hi"], ["memory", "summary"]])
def test_commands_needing_the_services_say_when_nothing_runs(tmp_path, command):
    assert "no live file" in not_running(plain_env(tmp_path), *command)

    leave_live_file(tmp_path, {"SECRET_KEY": "k", "REDIS_URL": "redis://x/0"})
    assert "stopped" not in not_running(plain_env(tmp_path), *command)
    leave_live_file(tmp_path, {"SECRET_KEY": "k"}, running=False)
    assert "stopped" in not_running(plain_env(tmp_path), *command)


def test_a_live_file_whose_redis_is_gone_says_artoo_is_not_running(tmp_path):
    dead = f"redis://127.0.0.1:{launcher.free_port()}/0"
    leave_live_file(tmp_path, {"SECRET_KEY": "k", "REDIS_URL": dead})

    message = not_running(plain_env(tmp_path), "memory", "summary")

    assert "does not answer" in message
    assert dead not in message


def test_a_live_file_left_by_a_killed_launcher_says_artoo_is_not_running(tmp_path):
    killed = subprocess.Popen(["true"])
    killed.wait()
    leave_live_file(tmp_path, {"SECRET_KEY": "k"}, pid=killed.pid)

    assert "stopped" in not_running(plain_env(tmp_path), "artoo", "echo hi")
