"""The docs: every setting is documented, every page is reached from the README."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
# Where the environment is read: Django's settings, and the LLM settings that
# roles/llm/config.py reads from the environment mapping it is handed.
SETTINGS_SOURCES = ("artoo_web/settings.py", "roles/llm/config.py")
SETTING = re.compile(r"ARTOO_[A-Z0-9_]+")
# Pages written beside this one: the README may link them before they land.
PENDING_PAGES = {"docs/telemetry.md", "docs/mcp.md"}
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def settings_read(source: str) -> set[str]:
    """Return the ARTOO_* names a module reads: a call's argument or a subscript."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            candidates = node.args
        elif isinstance(node, ast.Subscript):
            candidates = [node.slice]
        else:
            continue
        names.update(
            arg.value
            for arg in candidates
            if isinstance(arg, ast.Constant)
            and isinstance(arg.value, str)
            and SETTING.fullmatch(arg.value)
        )
    return names


def undocumented(read: set[str], pages: Iterable[str]) -> list[str]:
    """Return the names of ``read`` that no page names whole."""
    named = {name for text in pages for name in SETTING.findall(text)}
    return sorted(read - named)


def doc_pages() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def relative_links(page: Path) -> list[str]:
    """Return the page's links that are neither URLs nor anchors of the page itself."""
    links = LINK.findall(FENCE.sub("", page.read_text()))
    return [link for link in links if not re.match(r"[a-z]+:|#", link)]


def anchors(page: Path) -> set[str]:
    """Return the anchors GitHub gives the page's headings."""
    headings = re.findall(r"^#+\s+(.+)$", FENCE.sub("", page.read_text()), re.MULTILINE)
    return {
        re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings
    }


def test_every_artoo_setting_read_from_the_environment_is_documented():
    read = set()
    for source in SETTINGS_SOURCES:
        read |= settings_read((ROOT / source).read_text())
    # Both files are parsed: a reader renamed out of sight would read as nothing.
    assert {"ARTOO_DATA_DIR", "ARTOO_SANDBOX", "ARTOO_LLM_TIMEOUT_S"} <= read
    missing = undocumented(read, (page.read_text() for page in doc_pages()))
    assert not missing, (
        "read from the environment but named in no docs/*.md page nor README.md: "
        + ", ".join(missing)
    )


def test_a_setting_counts_as_documented_only_under_its_whole_name():
    source = 'A = envbool("ARTOO_SANDBOX", True)\nB = env["ARTOO_SANDBOX_UID"]\n'
    assert settings_read(source) == {"ARTOO_SANDBOX", "ARTOO_SANDBOX_UID"}
    page = "| `ARTOO_SANDBOX_UID` | `65534` | uid commands run as |"
    assert undocumented(settings_read(source), [page]) == ["ARTOO_SANDBOX"]


def test_every_docs_page_the_readme_links_exists():
    links = [link.split("#")[0] for link in relative_links(README)]
    pages = [link for link in links if link.startswith("docs/")]
    assert pages, "README.md links no docs/ page"
    broken = sorted(
        link
        for link in pages
        if not (ROOT / link).is_file() and link not in PENDING_PAGES
    )
    assert not broken, f"README.md links pages that do not exist: {', '.join(broken)}"


def test_every_docs_page_is_linked_from_the_readme():
    linked = {link.split("#")[0] for link in relative_links(README)}
    unlinked = sorted(
        f"docs/{page.name}"
        for page in DOCS.glob("*.md")
        if f"docs/{page.name}" not in linked
    )
    assert not unlinked, f"docs pages README.md does not link: {', '.join(unlinked)}"


def test_links_between_the_docs_reach_a_file_and_a_heading():
    broken = []
    for page in doc_pages():
        for link in relative_links(page):
            path, _, anchor = link.partition("#")
            target = (page.parent / path).resolve()
            pending = target.parent == DOCS and f"docs/{target.name}" in PENDING_PAGES
            if pending and not target.exists():
                continue
            if not target.exists() or (
                anchor and target.suffix == ".md" and anchor not in anchors(target)
            ):
                broken.append(f"{page.relative_to(ROOT)}: {link}")
    assert not broken, "links that reach nothing:\n" + "\n".join(broken)
