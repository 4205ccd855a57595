"""A clean state per task: a passed task is a commit, a failed one is reset.

Real git in real directories; the project's state machine is stepped by the
Project's own handler (``advance``) on bus messages, as a worker would.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from django.db import transaction

from artoo_web import bus, projectrepo, projects
from artoo_web.handlers.projects import advance
from artoo_web.models import Project, TaskCommit
from roles.projects.contracts import ImplementationResult, QAVerdict
from tests.unit.projects_script import plan, scoped

pytestmark = pytest.mark.django_db

HOSTILE = ["with space.txt", "-rf", "--help.py", "new\nline.txt", "sub dir/-x y"]


@pytest.fixture(autouse=True)
def roots(settings, tmp_path):
    settings.WORKSPACE = tmp_path / "workspace"
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    settings.ARTOO_ALLOWED_PATHS = [allowed]
    return allowed


def sh(path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "safe.directory=*", "-C", str(path), *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def tree(path) -> dict[str, str]:
    """Return every file under ``path`` but .git, with its text."""
    return {
        str(p.relative_to(path)): p.read_text()
        for p in sorted(path.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(path).parts
    }


def started(user, roots) -> Project:
    """Return a project on a repository with two files, its task in hand."""
    repo = roots / "app"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "main.py").write_text("print('hi')\n")
    (repo / "-dash.txt").write_text("dash\n")
    (repo / ".gitignore").write_text("*.log\n")
    (repo / "user.log").write_text("the user's own log\n")
    (repo / "empty").mkdir()
    project = projects.create(user, "Add a flag", str(repo))
    state, _ = plan(scoped()[0], description="Add the flag")
    project.keep_state(state)
    project.save()
    return project


def reply(project: Project, sender: str, type_: str, payload) -> None:
    """Deliver one reply to the Project, as its worker would."""
    with transaction.atomic():
        msg = bus.send(None, sender, "Project", type_, payload, project=project)
        advance(msg)


def run_ended(project: Project, success: bool, files: list[str]) -> None:
    result = ImplementationResult(files=files, result_summary="ran", success=success)
    payload = {"request_id": project.state["awaiting"], "result": result}
    reply(project, "Impl", "RunReply", payload)


def judged(project: Project, passed: bool) -> None:
    project.refresh_from_db()
    verdict = QAVerdict(passed=passed, feedback="" if passed else "flag is wrong")
    payload = {"request_id": project.state["awaiting"], "verdict": verdict}
    reply(project, "QA", "QAReply", payload)


def work(repo) -> None:
    """Change a tracked file, delete one, and create new ones, hostile names too."""
    (repo / "src" / "main.py").write_text("print('flag')\n")
    (repo / "-dash.txt").unlink()
    (repo / "sub dir").mkdir()
    for name in HOSTILE:
        (repo / name).write_text(f"made {name}\n")
    (repo / "build.log").write_text("an ignored file the task made\n")


def test_a_failed_task_is_reset_to_the_last_commit_and_its_diff_is_kept(user, roots):
    project = started(user, roots)
    repo = roots / "app"
    before = tree(repo)
    start = sh(repo, "rev-parse", "HEAD").strip()
    work(repo)
    run_ended(project, success=True, files=["src/main.py", *HOSTILE])
    judged(project, passed=False)
    # Tracked files restored, new files gone, ignored files (the user's and
    # the task's) left alone, and no commit on the branch.
    assert tree(repo) == {**before, "build.log": "an ignored file the task made\n"}
    assert (repo / "empty").is_dir() and not (repo / "sub dir").exists()
    assert sh(repo, "status", "--porcelain") == ""
    assert sh(repo, "rev-parse", "HEAD").strip() == start
    record = TaskCommit.objects.get(project=project)
    assert (record.dispatch_id, record.task_id, record.kind) == (
        "t1-a1",
        "t1",
        "discarded",
    )
    assert record.reason == "flag is wrong"
    assert sorted(record.new_files) == sorted(HOSTILE)
    assert "print('flag')" in record.diff and "-dash.txt" in record.diff
    assert "new\nline.txt" in record.diff or '"new\\nline.txt"' in record.diff
    # The whole attempt is still in the repository, on the last commit.
    kept = sh(repo, "rev-parse", "refs/artoo/discarded/t1-a1").strip()
    assert kept == record.commit
    assert sh(repo, "rev-parse", f"{kept}^").strip() == start
    assert sh(repo, "show", f"{kept}:-rf") == "made -rf\n"
    assert sh(repo, "show", f"{kept}:sub dir/-x y") == "made sub dir/-x y\n"
    assert project.messages.filter(type="ResetTask").count() == 1


def test_the_retry_after_a_reset_commits_only_its_own_work(user, roots, client):
    project = started(user, roots)
    repo = roots / "app"
    (repo / "wrong.py").write_text("wrong\n")
    run_ended(project, success=False, files=["wrong.py"])
    project.refresh_from_db()
    assert not (repo / "wrong.py").exists()
    state, _ = plan(project.load_state(), description="Add the flag again")
    project.keep_state(state)
    project.save()
    work(repo)
    run_ended(project, success=True, files=["src/main.py", *HOSTILE])
    judged(project, passed=True)
    head = sh(repo, "rev-parse", "HEAD").strip()
    assert sh(repo, "log", "-1", "--format=%s") == "t1: Add the flag again\n"
    assert sh(repo, "status", "--porcelain") == ""
    changed = sh(repo, "show", "--name-only", "--format=", "HEAD").splitlines()
    assert "wrong.py" not in changed and "-rf" in changed
    done = TaskCommit.objects.get(project=project, kind="done")
    assert (done.dispatch_id, done.commit) == ("t1-a2", head)
    project.refresh_from_db()
    assert project.last_commit == head
    client.force_login(user)
    page = client.get(f"/projects/{project.id}/").content.decode()
    link = f"/projects/{project.id}/tasks/t1-a2"
    assert link in page and head[:12] in page
    assert f"/projects/{project.id}/tasks/t1-a1" in page  # the discarded attempt
    shown = client.get(link)
    assert shown.status_code == 200
    text = shown.content.decode()
    assert "t1: Add the flag again" in text and "+print(&#x27;flag&#x27;)" in text
    assert "src/main.py" in text and "made -rf" in text


def test_a_discarded_attempts_page_shows_its_kept_diff_and_new_files(
    user, roots, client
):
    project = started(user, roots)
    repo = roots / "app"
    (repo / "<script>.txt").write_text("<script>alert(1)</script>\n")
    run_ended(project, success=False, files=["<script>.txt"])
    client.force_login(user)
    text = client.get(f"/projects/{project.id}/tasks/t1-a1").content.decode()
    assert "Discarded" in text and "refs/artoo/discarded/t1-a1" in text
    assert (
        "&lt;script&gt;alert(1)&lt;/script&gt;" in text and "<script>alert" not in text
    )
    assert "<li><code>&lt;script&gt;.txt</code></li>" in text
    # With the repository gone, the diff kept on the record is shown.
    subprocess.run(["rm", "-rf", str(repo / ".git")], check=True)
    text = client.get(f"/projects/{project.id}/tasks/t1-a1").content.decode()
    assert "this is the diff kept" in text and "alert(1)" in text


def test_another_users_task_page_is_404_and_an_anonymous_one_must_log_in(
    user, other_user, roots, client
):
    project = started(user, roots)
    (roots / "app" / "new.txt").write_text("x\n")
    run_ended(project, success=False, files=["new.txt"])
    url = f"/projects/{project.id}/tasks/t1-a1"
    assert client.get(url).status_code == 302
    client.force_login(other_user)
    assert client.get(url).status_code == 404
    client.force_login(user)
    assert client.get(url).status_code == 200
    assert client.get(f"/projects/{project.id}/tasks/t9-a1").status_code == 404


def test_a_task_stopped_mid_run_is_reset_when_its_run_ends(user, roots):
    project = started(user, roots)
    repo = roots / "app"
    before = tree(repo)
    projects.cancel(project)
    reply_cancel = project.messages.get(type="Cancel")
    with transaction.atomic():
        advance(reply_cancel)
    project.refresh_from_db()
    assert project.status == "cancelled"
    # The stopped Run was still writing; its end discards what it wrote.
    (repo / "late.txt").write_text("written while stopping\n")
    run_ended(project, success=False, files=["late.txt"])
    assert tree(repo) == before
    record = TaskCommit.objects.get(project=project)
    assert record.new_files == ["late.txt"] and "cancelled" in record.reason
    project.refresh_from_db()
    assert project.status == "cancelled" and project.state["awaiting"] == ""


def test_a_commit_the_task_made_itself_is_dropped_from_the_branch(roots):
    repo = roots / "repo"
    (repo / "a.txt").parent.mkdir()
    (repo / "a.txt").write_text("a\n")
    projectrepo.prepare(repo)
    start = projectrepo.head(repo)
    (repo / "a.txt").write_text("changed\n")
    sh(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "own")
    (repo / "b.txt").write_text("b\n")
    kept = projectrepo.discard(repo, "t1-a1", "t1-a1 (discarded)", start)
    assert projectrepo.head(repo) == start
    assert tree(repo) == {"a.txt": "a\n"}
    assert kept.new_files == ["b.txt"] and "+changed" in kept.diff
    # Redelivered: nothing left to discard, the same kept commit is found.
    again = projectrepo.discard(repo, "t1-a1", "t1-a1 (discarded)", start)
    assert again.commit == kept.commit
    assert projectrepo.discard(repo, "t2-a1", "nothing", start) is None


def test_a_file_an_attempt_hid_behind_a_new_ignore_rule_is_not_deleted(roots):
    repo = roots / "repo"
    repo.mkdir()
    (repo / ".gitignore").write_text("*.log\n")
    projectrepo.prepare(repo)
    (repo / ".gitignore").write_text("*.log\nout.tmp\n")
    (repo / "out.tmp").write_text("not kept anywhere\n")
    (repo / "made.py").write_text("x = 1\n")
    kept = projectrepo.discard(repo, "t1-a1", "discarded")
    assert kept.new_files == ["made.py"]
    assert (repo / ".gitignore").read_text() == "*.log\n"
    assert not (repo / "made.py").exists()
    assert (repo / "out.tmp").read_text() == "not kept anywhere\n"


def test_a_directory_inside_another_repository_is_never_reset(roots):
    outer = roots / "outer"
    (outer / "inner").mkdir(parents=True)
    projectrepo.prepare(outer)
    (outer / "inner" / "x.txt").write_text("x\n")
    with pytest.raises(projectrepo.DirectoryError, match="not a repository of its"):
        projectrepo.discard(outer / "inner", "t1-a1", "discarded")
    assert (outer / "inner" / "x.txt").exists()
    with pytest.raises(projectrepo.DirectoryError, match="cannot name"):
        projectrepo.discard(outer, "../x", "discarded")


def test_a_diff_is_cut_at_its_bound(roots, monkeypatch):
    repo = roots / "repo"
    repo.mkdir()
    projectrepo.prepare(repo)
    (repo / "big.txt").write_text("line\n" * 50_000)
    monkeypatch.setattr(projectrepo, "SHOW_BYTES", 1000)
    kept = projectrepo.discard(repo, "t1-a1", "discarded")
    assert len(kept.diff) < 1100 and "cut at 1,000 bytes" in kept.diff


def test_git_runs_no_program_the_repository_names(roots, tmp_path):
    repo = roots / "repo"
    repo.mkdir()
    (repo / "a.txt").write_text("a\n")
    projectrepo.prepare(repo)
    marker = tmp_path / "ran"
    program = f'sh -c "id -u >> {marker}; cat"'
    # Drivers a task's command could write into .git/config, one named with
    # an "=" (which a "-c name=value" override would split at), and a work
    # tree elsewhere on the host.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "secret.txt").write_text("not the project's\n")
    for key, value in [
        ("filter.x.clean", program),
        ("filter.x.smudge", program),
        ("filter.x.required", "true"),
        ("filter.a=b.clean", program),
        ("filter.a=b.process", program),
        ("core.worktree", str(elsewhere)),
        ("core.hooksPath", str(tmp_path)),
        ("log.showSignature", "true"),
        ("gpg.program", program),
    ]:
        sh(repo, "config", key, value)
    (tmp_path / "post-commit").write_text(f"#!/bin/sh\n{program}\n")
    (tmp_path / "post-commit").chmod(0o755)
    (repo / ".gitattributes").write_text("*.txt filter=x\n*.md filter=a=b\n")
    (repo / "b.md").write_text("b\n")
    assert projectrepo.changed_files(repo) == [".gitattributes", "b.md"]
    done = projectrepo.commit(repo, "t1: filters")
    assert "filters" in projectrepo.show(repo, done)
    (repo / "a.txt").write_text("changed\n")
    assert projectrepo.discard(repo, "t2-a1", "t2 (discarded)", done) is not None
    assert (repo / "a.txt").read_text() == "a\n"
    export = tmp_path / "export"
    export.mkdir()
    projectrepo.export(repo, done, export)
    assert (export / "b.md").read_text() == "b\n"
    # A commit holding a link out of the export is refused, nothing written.
    (repo / "out").symlink_to(tmp_path / "elsewhere")
    linked = projectrepo.commit(repo, "t3: a link out")
    elsewhere_too = tmp_path / "export2"
    elsewhere_too.mkdir()
    with pytest.raises(projectrepo.DirectoryError, match="not exported"):
        projectrepo.export(repo, linked, elsewhere_too)
    assert not marker.exists()
    assert "secret.txt" not in projectrepo.tracked(repo, done)
    # The same repository runs them under git's own defaults: the test is live.
    (repo / "c.txt").write_text("c\n")
    sh(repo, "--work-tree", str(repo), "add", "c.txt")
    assert set(marker.read_text().split()) == {"0"}


def test_a_git_that_points_elsewhere_is_refused(roots):
    other = roots / "other"
    other.mkdir()
    (other / "kept.txt").write_text("kept\n")
    projectrepo.prepare(other)
    before = projectrepo.head(other)
    gitfile, symlinked = roots / "gitfile", roots / "symlinked"
    for repo in (gitfile, symlinked):
        repo.mkdir()
        (repo / "new.txt").write_text("new\n")
    (gitfile / ".git").write_text(f"gitdir: {other}/.git\n")
    (symlinked / ".git").symlink_to(other / ".git")
    for repo in (gitfile, symlinked):
        with pytest.raises(projectrepo.DirectoryError, match="not a repository of"):
            projectrepo.prepare(repo)
        with pytest.raises(projectrepo.DirectoryError, match="not a repository of"):
            projectrepo.discard(repo, "t1-a1", "discarded")
    assert projectrepo.head(other) == before
    assert projectrepo.changed_files(other) == []
    # A link inside .git: git would append its reflog to the file it names.
    outside = roots / "outside.txt"
    outside.write_text("root's\n")
    logs = other / ".git" / "logs" / "HEAD"
    logs.unlink()
    logs.symlink_to(outside)
    (other / "new.txt").write_text("new\n")
    with pytest.raises(projectrepo.DirectoryError, match="is a symlink"):
        projectrepo.commit(other, "t1: through the link")
    logs.unlink()
    (other / ".git" / "commondir").write_text(f"{gitfile}\n")
    with pytest.raises(projectrepo.DirectoryError, match="commondir"):
        projectrepo.commit(other, "t1: into another repository")
    (other / ".git" / "commondir").unlink()
    assert outside.read_text() == "root's\n" and projectrepo.head(other) == before


@pytest.fixture
def nobodys():
    """A directory the unprivileged user 65534 owns, where that user can reach."""
    if os.geteuid() != 0:
        pytest.skip("only root can give a directory away")
    top = Path(tempfile.mkdtemp(prefix="artoo-owner-", dir="/var/tmp"))
    top.chmod(0o755)
    repo = top / "repo"
    repo.mkdir()
    (repo / "a.txt").write_text("a\n")
    for path in (repo, repo / "a.txt"):
        os.chown(path, 65534, 65534)
    yield repo
    shutil.rmtree(top)


def test_git_runs_with_the_rights_of_the_directory_s_owner(nobodys, settings):
    settings.ARTOO_ALLOWED_PATHS = [nobodys.parent]
    projectrepo.prepare(nobodys)
    owners = {p.stat().st_uid for p in (nobodys / ".git").rglob("*")}
    assert owners == {65534}
    # A file only root may read is not the owner's to commit.
    (nobodys / "root-only.txt").write_text("root's\n")
    (nobodys / "root-only.txt").chmod(0o600)
    with pytest.raises(projectrepo.DirectoryError, match="Permission denied"):
        projectrepo.commit(nobodys, "t1: take root's file")


def test_a_directory_swapped_for_a_link_after_its_check_makes_nothing_elsewhere(
    roots, tmp_path
):
    outside = tmp_path / "outside"
    outside.mkdir()
    checked = projectrepo.allowed_directory(str(roots / "team" / "new"))
    # Between the check and the making, "team" becomes a link out of the paths.
    (roots / "team").symlink_to(outside)
    with pytest.raises(projectrepo.DirectoryError, match="without a symlink"):
        projectrepo.prepare(checked)
    assert list(outside.iterdir()) == []
    # The last part a link, too.
    (roots / "last").symlink_to(outside)
    with pytest.raises(projectrepo.DirectoryError, match="without a symlink"):
        projectrepo.prepare(roots / "last")
    assert list(outside.iterdir()) == []


def test_missing_directories_are_made_by_the_owner_of_where_they_are_made(
    nobodys, settings
):
    settings.ARTOO_ALLOWED_PATHS = [nobodys.parent]
    deep = nobodys / "a" / "b"
    projectrepo.prepare(deep)
    assert {(nobodys / "a").stat().st_uid, deep.stat().st_uid} == {65534}
    assert (deep / ".git").is_dir()
