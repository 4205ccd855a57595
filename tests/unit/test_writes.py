"""What a tool call writes, read from the parsed command."""

import pytest

from roles.claims.evidence import ToolCall
from roles.claims.writes import written_paths


@pytest.mark.parametrize(
    ("command", "paths"),
    [
        ("echo hi > /srv/out/r.txt", ["/srv/out/r.txt"]),
        ("sort -u /a | tee /srv/b.txt /srv/c.txt", ["/srv/b.txt", "/srv/c.txt"]),
        ("cd /srv && sed -i 's/a/b/' x.ini", ["/srv/x.ini"]),
        ("sed -e 's/a/b/' -i /etc/x.conf", ["/etc/x.conf"]),
        ("mv /srv/a.jpeg /srv/a.jpg", ["/srv/a.jpeg", "/srv/a.jpg"]),
        ("cp notes.txt /srv/backup/", ["/srv/backup"]),
        ("tar -czf /srv/site.tgz -C /srv site", ["/srv/site.tgz"]),
        ("tar --create --file=/srv/b.tar /srv/site", ["/srv/b.tar"]),
        ("find /srv/tmp -name '*.bak' -delete", ["/srv/tmp"]),
        ("wc -l /srv/a.log; grep -c x /srv/b", []),
        ("cat /srv/a | awk '{print $1}' 2>/dev/null", ["/dev/null"]),
        ("echo 'a > /srv/not-a-redirect'", []),
    ],
)
def test_written_paths_of_a_shell_command(command, paths):
    assert written_paths(ToolCall("shell", {"command": command})) == paths


def test_an_expanded_operand_may_be_any_path_the_command_names():
    loop = 'for f in /srv/p/*.jpeg; do mv "$f" "${f%.jpeg}.jpg"; done'
    assert "/srv/p/" in written_paths(ToolCall("shell", {"command": loop}))


def test_the_file_tools_write_their_path():
    call = ToolCall("write_file", {"path": "/srv/a.txt", "content": "x"})
    assert written_paths(call) == ["/srv/a.txt"]
    assert written_paths(ToolCall("read_file", {"path": "/srv/a.txt"})) == []


@pytest.mark.parametrize("command", ["", "'", "((((" * 2000, "\x00" * 10, 7])
def test_hostile_commands_write_nothing(command):
    assert written_paths(ToolCall("shell", {"command": command})) == []
