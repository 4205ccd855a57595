"""Law 1 by effect: the spellings that destroy or overwrite a file, all gated.

Each spelling runs for real in the sandbox twice: denied, every file of the
workspace is byte for byte and mode for mode what it was; approved, the
destruction reaches the real file. The first 23 passed the old syntactic gate
unasked; the next 37 it already caught; the rest are what an attacker tries
next.
"""

from __future__ import annotations

import pytest

from tests.sandbox.conftest import (
    VICTIM_TEXT,
    Operator,
    have,
    make_toolbox,
    prepare,
    snapshot,
)

TAR_OVER = (
    "mkdir -p /tmp/t && echo evil > /tmp/t/victim.txt && "
    "tar -C /tmp/t -cf /tmp/t.tar victim.txt && tar -xf /tmp/t.tar"
)

# (spelling, programs it needs, what it aims at)
SPELLED_AROUND_THE_GATE = [
    ("/usr/bin/env rm victim.txt", (), "victim.txt"),
    ("timeout 5 rm victim.txt", ("timeout",), "victim.txt"),
    ("eval rm victim.txt", (), "victim.txt"),
    ("X=rm; $X victim.txt", (), "victim.txt"),
    ("$(echo rm) victim.txt", (), "victim.txt"),
    ("`echo rm` victim.txt", (), "victim.txt"),
    ("rm$IFS'victim.txt'", (), "victim.txt"),
    ("echo cm0gdmljdGltLnR4dA== | base64 -d | sh", ("base64",), "victim.txt"),
    ("python3 -c \"import os; os.remove('victim.txt')\"", ("python3",), "victim.txt"),
    ("python3 -c \"open('victim.txt', 'w')\"", ("python3",), "victim.txt"),
    ("python3 -c \"import shutil; shutil.rmtree('data')\"", ("python3",), "data"),
    (
        "python3 -c \"import pathlib; pathlib.Path('victim.txt').unlink()\"",
        ("python3",),
        "victim.txt",
    ),
    ("perl -e 'unlink \"victim.txt\"'", ("perl",), "victim.txt"),
    ("perl -pi -e 's/precious/gone/' victim.txt", ("perl",), "victim.txt"),
    ("sed -i 's/precious/gone/' victim.txt", ("sed",), "victim.txt"),
    ('awk \'BEGIN { print "x" > "victim.txt" }\'', ("awk",), "victim.txt"),
    ("ex -sc '%d|x' victim.txt", ("ex",), "victim.txt"),
    ("install /dev/null victim.txt", ("install",), "victim.txt"),
    ("ln -sf /dev/null victim.txt", (), "victim.txt"),
    ("ln -f other.txt victim.txt", (), "victim.txt"),
    ("sqlite3 :memory: '.output victim.txt' 'select 1;'", ("sqlite3",), "victim.txt"),
    (TAR_OVER, ("tar",), "victim.txt"),
    ("chmod 000 victim.txt", (), "victim.txt"),
]

GATED_BEFORE = [
    ("rm victim.txt", (), "victim.txt"),
    ("rm -f victim.txt", (), "victim.txt"),
    ("rm -rf data", (), "data"),
    ("/bin/rm victim.txt", (), "victim.txt"),
    ("\\rm victim.txt", (), "victim.txt"),
    ("command rm victim.txt", (), "victim.txt"),
    ("(rm victim.txt)", (), "victim.txt"),
    ("{ rm victim.txt; }", (), "victim.txt"),
    ("true && rm victim.txt", (), "victim.txt"),
    ("false || rm victim.txt", (), "victim.txt"),
    ("echo first; rm victim.txt", (), "victim.txt"),
    ("rm victim.txt & wait", (), "victim.txt"),
    ("nohup rm victim.txt", ("nohup",), "victim.txt"),
    ("nice rm victim.txt", ("nice",), "victim.txt"),
    ("env rm victim.txt", (), "victim.txt"),
    ("time rm victim.txt", (), "victim.txt"),
    ("exec rm victim.txt", (), "victim.txt"),
    ("if true; then rm victim.txt; fi", (), "victim.txt"),
    ("while true; do rm victim.txt; break; done", (), "victim.txt"),
    ("rmdir emptydir", (), "emptydir"),
    ("unlink victim.txt", (), "victim.txt"),
    ("truncate -s 0 victim.txt", (), "victim.txt"),
    ("shred -u victim.txt", ("shred",), "victim.txt"),
    ("dd if=/dev/zero of=victim.txt bs=1 count=1", ("dd",), "victim.txt"),
    ("find . -name victim.txt -delete", ("find",), "victim.txt"),
    ("find . -name victim.txt -exec rm {} \\;", ("find",), "victim.txt"),
    ("echo victim.txt | xargs rm", ("xargs",), "victim.txt"),
    ("git init -q . && git clean -fdq", ("git",), "victim.txt"),
    ("mv other.txt victim.txt", (), "victim.txt"),
    ("cp other.txt victim.txt", (), "victim.txt"),
    ("cp -t . data/keep.txt && mv keep.txt victim.txt", (), "victim.txt"),
    ("echo x > victim.txt", (), "victim.txt"),
    ("echo x >| victim.txt", (), "victim.txt"),
    ("cat /dev/null > victim.txt", (), "victim.txt"),
    ("tee victim.txt < /dev/null", (), "victim.txt"),
    ("bash -c 'rm victim.txt'", (), "victim.txt"),
    ("sh -c 'rm victim.txt'", (), "victim.txt"),
]


GIT = "git -c user.name=a -c user.email=a@example.org"
PATCH = "--- a\\n+++ b\\n@@ -1 +1 @@\\n-precious data\\n+gone\\n"

# Spellings an attacker tries next: in-place writers, archivers that remove
# what they pack, editors, other interpreters, moves and repository commands.
TRIED_BY_AN_ATTACKER = [
    ("cp --remove-destination other.txt victim.txt", (), "victim.txt"),
    ("cp /dev/null victim.txt", (), "victim.txt"),
    ("install -m 644 other.txt victim.txt", ("install",), "victim.txt"),
    (
        "mkdir -p /tmp/empty && rsync -a --delete /tmp/empty/ data/",
        ("rsync",),
        "data/keep.txt",
    ),
    (
        "printf X | dd of=victim.txt conv=notrunc status=none",
        ("dd",),
        "victim.txt",
    ),
    (
        "fallocate --punch-hole --offset 0 --length 4096 victim.txt",
        ("fallocate",),
        "victim.txt",
    ),
    ("cat other.txt 1<> victim.txt", (), "victim.txt"),
    ("exec 3<>victim.txt; echo X >&3", (), "victim.txt"),
    ("sh -c 'exec 5>victim.txt'", (), "victim.txt"),
    ("echo x > /proc/self/cwd/victim.txt", (), "victim.txt"),
    ("sort -o victim.txt other.txt", ("sort",), "victim.txt"),
    ("find . -name victim.txt -exec truncate -s 0 {} +", ("find",), "victim.txt"),
    ("chmod a= victim.txt", (), "victim.txt"),
    ("gzip victim.txt", ("gzip",), "victim.txt"),
    ("bzip2 victim.txt", ("bzip2",), "victim.txt"),
    ("xz victim.txt", ("xz",), "victim.txt"),
    ("zip -qm v.zip victim.txt", ("zip",), "victim.txt"),
    ("tar -cf /tmp/a.tar --remove-files victim.txt", ("tar",), "victim.txt"),
    ("printf '1c\\ngone\\n.\\nw\\nq\\n' | ed -s victim.txt", ("ed",), "victim.txt"),
    ("vim -es -c '%d' -c 'wq' victim.txt", ("vim",), "victim.txt"),
    (f"printf -- '{PATCH}' | patch -s victim.txt", ("patch",), "victim.txt"),
    ("echo '0: 41' | xxd -r - victim.txt", ("xxd",), "victim.txt"),
    ("node -e \"require('fs').unlinkSync('victim.txt')\"", ("node",), "victim.txt"),
    ('perl -e \'rename "other.txt", "victim.txt"\'', ("perl",), "victim.txt"),
    ("perl -e 'truncate \"victim.txt\", 3'", ("perl",), "victim.txt"),
    (
        "python3 -c \"import os; open('n', 'w').write('x'); "
        "os.replace('n', 'victim.txt')\"",
        ("python3",),
        "victim.txt",
    ),
    (
        "python3 -c \"import mmap; f = open('victim.txt', 'r+b'); "
        "m = mmap.mmap(f.fileno(), 0); m[0:1] = b'X'; m.flush()\"",
        ("python3",),
        "victim.txt",
    ),
    (
        "python3 -c \"import os; os.write(os.open('victim.txt', os.O_WRONLY), b'X')\"",
        ("python3",),
        "victim.txt",
    ),
    (
        "python3 -c \"import os; os.truncate('victim.txt', 1)\"",
        ("python3",),
        "victim.txt",
    ),
    (
        "python3 -c \"import shutil; shutil.move('other.txt', 'victim.txt')\"",
        ("python3",),
        "victim.txt",
    ),
    ("mv victim.txt /tmp/", (), "victim.txt"),
    ("mv data /tmp/data", (), "data"),
    ("ln -s other.txt l && mv -T l victim.txt", (), "victim.txt"),
    (
        f"git init -q && {GIT} commit -q --allow-empty -m e && git add victim.txt "
        "&& git reset -q --hard",
        ("git",),
        "victim.txt",
    ),
    (
        f"git init -q && {GIT} commit -q --allow-empty -m e && {GIT} stash -qu",
        ("git",),
        "victim.txt",
    ),
    (
        f"git init -q && git add victim.txt && {GIT} commit -qm s && "
        "git rm -q victim.txt",
        ("git",),
        "victim.txt",
    ),
]

SPELLINGS = SPELLED_AROUND_THE_GATE + GATED_BEFORE + TRIED_BY_AN_ATTACKER


def test_the_suite_has_every_spelling_once():
    assert len(SPELLED_AROUND_THE_GATE) == 23
    assert len(GATED_BEFORE) == 37
    assert len({s for s, _, _ in SPELLINGS}) == len(SPELLINGS)


@pytest.mark.parametrize(("command", "needs", "aim"), SPELLINGS, ids=lambda v: v)
def test_denied_spelling_changes_nothing(policy, base, command, needs, aim):
    if not have(*needs):
        pytest.skip(f"{needs} not installed")
    workspace = base / "ws"
    prepare(workspace)
    before = snapshot(workspace)
    operator = Operator(decision=False)
    toolbox = make_toolbox(policy, workspace, operator)

    output = toolbox.call("shell", {"command": command})

    assert len(operator.asks) == 1, output
    paths = [c["path"].rstrip("/") for c in operator.asks[0].changes]
    assert str(workspace / aim) in paths
    assert output.startswith("[LAW1]") and "denied by the operator" in output
    assert snapshot(workspace) == before


@pytest.mark.parametrize(("command", "needs", "aim"), SPELLINGS, ids=lambda v: v)
def test_approved_spelling_reaches_the_file(policy, base, command, needs, aim):
    if not have(*needs):
        pytest.skip(f"{needs} not installed")
    workspace = base / "ws"
    prepare(workspace)
    target = workspace / aim
    before = snapshot(workspace)
    operator = Operator(decision=True)
    toolbox = make_toolbox(policy, workspace, operator)

    toolbox.call("shell", {"command": command})

    assert len(operator.asks) == 1
    after = snapshot(workspace)
    assert after != before
    if aim == "victim.txt":
        st = target.lstat() if target.is_symlink() or target.exists() else None
        destroyed = (
            st is None
            or target.is_symlink()
            or (st.st_mode & 0o777) == 0
            or target.read_text() != VICTIM_TEXT
        )
        assert destroyed
    else:
        assert not target.exists()
