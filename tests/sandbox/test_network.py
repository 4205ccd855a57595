"""What a sandboxed command can reach on the network, mode by mode.

By default (``none``) a command has a network namespace of its own with nothing
in it: not the host's Redis, not its PostgreSQL, not the web app's port. With
``egress`` it connects out through slirp4netns but never to the host's
loopback; ``host`` is the operator's explicit choice to share everything.
"""

from __future__ import annotations

import os
import socket
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from roles.tools.sandbox import SandboxPolicy
from roles.tools.shell import parse_shell_output
from tests.sandbox.conftest import Operator, have, make_toolbox

REDIS, POSTGRES = 6379, 5432
needs_slirp = pytest.mark.skipif(not have("slirp4netns"), reason="needs slirp4netns")


def connect(policy, workspace, host: str, port: int) -> tuple[int | None, str]:
    """Open a TCP connection from inside a sandbox and send a line on it."""
    toolbox = make_toolbox(policy, workspace, Operator(False))
    command = f"exec 3<>/dev/tcp/{host}/{port} && echo hello >&3 && echo REACHED"
    return parse_shell_output(toolbox.call("shell", {"command": command}))


@contextmanager
def listening(host: str = "127.0.0.1"):
    """Listen on a free port of ``host``, standing in for the web app's."""
    with socket.socket() as server:
        server.bind((host, 0))
        server.listen(8)
        server.setblocking(False)
        yield server


def accepted(server: socket.socket) -> bytes | None:
    """Return what the first connection sent, or None when nobody connected.

    The command has ended when this is called, so a connection it made is
    already in the backlog: no waiting is needed to see it.
    """
    try:
        peer, _ = server.accept()
    except BlockingIOError:
        return None
    with peer:
        peer.settimeout(10)
        return peer.recv(100)


def host_answers(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(2)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def outside_address() -> str | None:
    """Return an address of this machine that is not on its loopback."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.254.254.254", 9))
        except OSError:
            return None
        address = probe.getsockname()[0]
    return None if address.startswith("127.") else address


def slirp_children() -> list[int]:
    """Return the slirp4netns and namespace holders this process left running."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            name = Path(f"/proc/{entry}/comm").read_text().strip()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == os.getpid() and name in ("slirp4netns", "cat", "sh"):
            found.append(int(entry))
    return found


def test_the_default_network_is_none(base):
    assert SandboxPolicy(state_dir=base).network == "none"


def test_an_unknown_network_mode_is_refused(base):
    with pytest.raises(ValueError, match="none, egress, host"):
        SandboxPolicy(state_dir=base, network="on")


@pytest.mark.parametrize("port", [REDIS, POSTGRES], ids=["redis", "postgresql"])
def test_by_default_a_command_cannot_reach_the_hosts_services(policy, workspace, port):
    if not host_answers(port):
        pytest.skip(f"nothing listens on 127.0.0.1:{port} here")

    code, out = connect(policy, workspace, "127.0.0.1", port)

    assert code != 0
    assert "REACHED" not in out
    assert "Connection refused" in out  # its own loopback, where nothing listens


@pytest.mark.parametrize("port", [REDIS, POSTGRES], ids=["redis", "postgresql"])
def test_with_the_host_network_the_hosts_services_are_reached(policy, workspace, port):
    if not host_answers(port):
        pytest.skip(f"nothing listens on 127.0.0.1:{port} here")

    code, out = connect(replace(policy, network="host"), workspace, "127.0.0.1", port)

    assert code == 0, out
    assert "REACHED" in out


def test_by_default_the_web_apps_port_is_never_connected_to(policy, workspace):
    with listening() as server:
        code, out = connect(policy, workspace, "127.0.0.1", server.getsockname()[1])

        assert accepted(server) is None
    assert code != 0
    assert "Connection refused" in out  # its own loopback, where nothing listens


def test_with_the_host_network_the_web_apps_port_is_reached(policy, workspace):
    with listening() as server:
        port = server.getsockname()[1]
        code, out = connect(
            replace(policy, network="host"), workspace, "127.0.0.1", port
        )

        assert accepted(server) == b"hello\n"
    assert code == 0, out


@needs_slirp
@pytest.mark.parametrize("host", ["127.0.0.1", "10.0.2.2"], ids=["loopback", "gateway"])
def test_egress_never_reaches_the_hosts_loopback(policy, workspace, host):
    with listening() as server:
        port = server.getsockname()[1]
        code, out = connect(replace(policy, network="egress"), workspace, host, port)

        assert accepted(server) is None
    assert code != 0
    assert "REACHED" not in out
    assert slirp_children() == []


@needs_slirp
def test_egress_connects_out_and_leaves_nothing_running(policy, workspace):
    address = outside_address()
    if address is None:
        pytest.skip("this machine has no address outside its loopback")
    with listening(address) as server:
        port = server.getsockname()[1]
        code, out = connect(replace(policy, network="egress"), workspace, address, port)

        assert accepted(server) == b"hello\n"
    assert code == 0, out
    assert slirp_children() == []


@needs_slirp
def test_egress_gives_the_command_a_loopback_of_its_own(policy, workspace):
    toolbox = make_toolbox(
        replace(policy, network="egress"), workspace, Operator(False)
    )
    serve = (
        "import socket; s = socket.create_server(('127.0.0.1', 0)); "
        "c = socket.create_connection(s.getsockname()); print('own loopback')"
    )
    code, out = parse_shell_output(
        toolbox.call("shell", {"command": f'python3 -c "{serve}"'})
    )
    assert code == 0, out
    assert "own loopback" in out


def test_by_default_a_command_serves_itself_on_its_own_loopback(policy, workspace):
    serve = (
        'python3 -c "import socket; s = socket.socket(); '
        "s.bind(('127.0.0.1', 0)); s.listen(); c = socket.create_connection("
        "s.getsockname()); print('reached', s.accept()[1][0])\""
    )
    toolbox = make_toolbox(policy, workspace, Operator(False))
    code, out = parse_shell_output(toolbox.call("shell", {"command": serve}))
    assert (code, out.strip()) == (0, "reached 127.0.0.1")
