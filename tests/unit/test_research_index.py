"""The research index on real files: build, incremental update, confinement, ranking."""

from __future__ import annotations

import os

import pytest

from roles.research import RepoIndex, UpdateStats
from roles.research.toolbox import ResearchToolbox
from roles.tools.errors import ToolError
from roles.tools.files import READ_LIMIT

SKU = "def normalize_sku(raw):\n    return raw.strip().upper()\n"
ORDERS = (
    "from shop.sku import normalize_sku\n\n"
    "def place(order):\n"
    "    first = normalize_sku(order.first)\n"
    "    second = normalize_sku(order.second)\n"
    "    return normalize_sku(first + second)\n"
)


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    (root / "shop").mkdir(parents=True)
    (root / "shop" / "sku.py").write_text(SKU)
    (root / "shop" / "orders.py").write_text(ORDERS)
    (root / "README.md").write_text("A shop that sells widgets.\n")
    return root


@pytest.fixture
def index(repo, tmp_path):
    return RepoIndex(repo, tmp_path / "data")


def paths(hits):
    return [h.path for h in hits]


def test_build_indexes_text_files_and_keeps_the_index_outside_the_repository(
    index, repo, tmp_path
):
    stats = index.update()
    assert stats == UpdateStats(added=3)
    assert index.files() == ["README.md", "shop/orders.py", "shop/sku.py"]
    assert index.path.parent == tmp_path / "data"
    assert index.path.exists()
    assert not any(p.suffix == ".sqlite3" for p in repo.rglob("*"))
    assert paths(index.search("widgets")) == ["README.md"]


def test_a_data_directory_inside_the_repository_is_refused(repo):
    with pytest.raises(ValueError, match="inside the repository"):
        RepoIndex(repo, repo / ".artoo")
    assert not (repo / ".artoo").exists()


def test_a_root_that_is_not_a_directory_is_refused(repo, tmp_path):
    with pytest.raises(ValueError, match="not a directory"):
        RepoIndex(repo / "README.md", tmp_path / "data")


def test_an_unchanged_repository_is_not_read_again(index):
    index.update()
    assert index.update() == UpdateStats(unchanged=3)


def test_a_changed_file_is_reindexed_and_its_old_words_forgotten(index, repo):
    index.update()
    readme = repo / "README.md"
    readme.write_text("A shop that sells gadgets.\n")  # same size as before
    before = readme.stat().st_mtime_ns
    os.utime(readme, ns=(before + 5_000_000_000, before + 5_000_000_000))
    assert index.update() == UpdateStats(changed=1, unchanged=2)
    assert paths(index.search("gadgets")) == ["README.md"]
    assert index.search("widgets") == []


def test_a_deleted_file_leaves_the_index(index, repo):
    index.update()
    (repo / "shop" / "orders.py").unlink()
    assert index.update() == UpdateStats(removed=1, unchanged=2)
    assert "shop/orders.py" not in paths(index.search("normalize_sku"))
    assert index.files() == ["README.md", "shop/sku.py"]


def test_binary_huge_and_git_files_are_not_indexed(index, repo):
    (repo / "logo.png").write_bytes(b"\x89PNG\x00\x00widgets\x00")
    (repo / "big.log").write_text("widgets\n" * (READ_LIMIT // 8 + 1))
    (repo / ".git").mkdir()
    (repo / ".git" / "config").write_text("[core] widgets = true\n")
    stats = index.update()
    assert (stats.added, stats.skipped) == (3, 2)
    assert index.files() == ["README.md", "shop/orders.py", "shop/sku.py"]
    assert paths(index.search("widgets")) == ["README.md"]
    assert index.update() == UpdateStats(unchanged=5)


def test_symlinks_out_of_the_root_are_never_followed(index, repo, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("launch codes\n")
    (repo / "secret.txt").symlink_to(outside / "secret.txt")
    (repo / "vault").symlink_to(outside, target_is_directory=True)
    index.update()
    assert index.search("launch codes") == []
    assert not any("secret" in p or "vault" in p for p in index.files())


def test_the_reading_tools_refuse_paths_out_of_the_root(index, repo, tmp_path):
    (tmp_path / "secret.txt").write_text("launch codes\n")
    (repo / "link.txt").symlink_to(tmp_path / "secret.txt")
    index.update()
    tools = ResearchToolbox(index)
    for path in ("../secret.txt", "link.txt", str(tmp_path / "secret.txt")):
        with pytest.raises(ToolError, match="outside the workspace"):
            tools.call("read_file", {"path": path})
    with pytest.raises(ToolError, match="outside the workspace"):
        tools.call("grep", {"pattern": "launch", "path": "../"})
    with pytest.raises(ToolError, match="without '..'"):
        tools.call("glob", {"pattern": "../*.txt"})
    assert tools.shown == {}


def test_the_defining_file_ranks_first_for_a_function_name(index):
    index.update()
    hits = index.search("normalize_sku")
    assert hits[0].path == "shop/sku.py"
    assert hits[0].line == 1
    assert hits[0].defines is True
    assert "shop/orders.py" in paths(hits)
    assert not any(h.defines for h in hits[1:])


def test_a_question_ranks_the_definition_first_too(index):
    index.update()
    hits = index.search("where is normalize_sku defined?")
    assert (hits[0].path, hits[0].line) == ("shop/sku.py", 1)


def test_query_syntax_in_a_search_is_taken_as_words(index):
    index.update()
    assert index.search('"') == []
    assert index.search("NEAR(widgets OR *) AND -") != []
    assert paths(index.search('sells" OR "x')) == ["README.md"]


def test_a_fifo_in_the_repository_is_passed_over_without_waiting(index, repo):
    os.mkfifo(repo / "pipe.txt")
    assert index.update() == UpdateStats(added=3)
    assert "pipe.txt" not in index.files()
