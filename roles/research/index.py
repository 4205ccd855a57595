"""A lexical index of a repository's text files in SQLite FTS5.

The index lives in the data directory, one file per repository root
(``research-<digest>.sqlite3``), never inside the repository. ``update`` walks
the root without following a symlink (a linked file or directory is not
indexed: a target inside the root is indexed at its own path), skips ``.git``
and tool caches, files over the read limit and files that look binary, and
re-reads only the files whose mtime or size changed; files gone from the root
leave the index. Each text file is stored in chunks of ``CHUNK_LINES`` lines,
the chunks of file ``id`` at rowids ``id * SLOT`` onwards so that a file's
chunks are replaced by rowid range (FTS5 cannot index ``path``)::

    files(id, path, mtime_ns, size, indexed)
    chunks(path, start, body)        -- FTS5, body tokenised by unicode61

``search`` ranks lines: a line that defines a word of the query (``def name``,
``class name``, ``name =``, ``name:``) first, then lines holding more of the
query's words, then the chunk's bm25; at most ``PER_FILE`` lines a file.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import stat
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from roles.tools.files import READ_LIMIT, SCAN_LIMIT

CHUNK_LINES = 40
# Room for the chunks of a file at the read limit made only of newlines.
SLOT = 8192
SCHEMA = 1
PER_FILE = 3
LINE_CHARS = 200
CANDIDATES = 200
SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "__pycache__",
        "node_modules",
        ".venv",
        "venv",
        ".tox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
    }
)
WORD = re.compile(r"[^\W_]+(?:_+[^\W_]+)*", re.UNICODE)
# Words too common in questions to rank a line by.
STOPWORDS = frozenset(
    "a an and are as at be by does do for from how in is it of on or the this "
    "that to what where which who why with".split()
)
DEFINES = (
    r"\b(?:def|class|function|func|fn|struct|enum|interface|trait|type|macro)"
    r"\s+{word}\b",
    r"^\s*(?:export\s+)?(?:const|let|var)\s+{word}\b",
    r"^\s*[\"']?{word}[\"']?\s*(?:=|:(?!:))",
    r"^\s*\[{word}\]\s*$",
)


@dataclass(frozen=True)
class UpdateStats:
    """What one ``update`` did: files added, changed, removed, skipped, kept."""

    added: int = 0
    changed: int = 0
    removed: int = 0
    skipped: int = 0
    unchanged: int = 0


@dataclass(frozen=True)
class Hit:
    """One ranked line: where it is, its text, and whether it defines a word."""

    path: str
    line: int
    text: str
    defines: bool


def index_path(root: Path, data_dir: Path) -> Path:
    """Return the index file of ``root`` in ``data_dir``."""
    digest = hashlib.sha256(str(Path(root).resolve()).encode()).hexdigest()[:16]
    return Path(data_dir) / f"research-{digest}.sqlite3"


class RepoIndex:
    """The lexical index of one repository root, stored in ``data_dir``."""

    def __init__(self, root: Path, data_dir: Path):
        self.root = Path(root).expanduser().resolve()
        if not self.root.is_dir():
            raise ValueError(f"repository root {self.root} is not a directory")
        data = Path(data_dir).expanduser().resolve()
        if data.is_relative_to(self.root):
            raise ValueError(
                f"data directory {data} is inside the repository {self.root}; "
                "the index must live outside it"
            )
        data.mkdir(parents=True, exist_ok=True)
        self.path = index_path(self.root, data)

    def connect(self) -> sqlite3.Connection:
        """Open the index, creating its tables on first use."""
        conn = sqlite3.connect(self.path, timeout=30)
        if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA:
            # An index of another layout is a cache: rebuild it.
            conn.executescript(
                "DROP TABLE IF EXISTS files; DROP TABLE IF EXISTS chunks;"
                "CREATE TABLE files (id INTEGER PRIMARY KEY, path TEXT UNIQUE, "
                "mtime_ns INTEGER, size INTEGER, indexed INTEGER);"
                "CREATE VIRTUAL TABLE chunks USING fts5("
                "path UNINDEXED, start UNINDEXED, body, tokenize='unicode61');"
                f"PRAGMA user_version = {SCHEMA};"
            )
        return conn

    def update(self) -> UpdateStats:
        """Bring the index up to date with the files under the root."""
        counts = dict.fromkeys(("added", "changed", "removed", "skipped"), 0)
        counts["unchanged"] = 0
        with closing(self.connect()) as conn, conn:
            known = {
                p: (i, m, s)
                for i, p, m, s in conn.execute(
                    "SELECT id, path, mtime_ns, size FROM files"
                )
            }
            seen = set()
            for rel, info in self.walk():
                seen.add(rel)
                if known.get(rel, ())[1:] == (info.st_mtime_ns, info.st_size):
                    counts["unchanged"] += 1
                    continue
                text = self.read(rel, info)
                counts["skipped"] += text is None
                counts["changed" if rel in known else "added"] += text is not None
                self._store(conn, known.get(rel, (None,))[0], rel, info, text)
            for rel in known.keys() - seen:
                _drop_chunks(conn, known[rel][0])
                conn.execute("DELETE FROM files WHERE id = ?", (known[rel][0],))
                counts["removed"] += 1
        return UpdateStats(**counts)

    def walk(self) -> Iterator[tuple[str, os.stat_result]]:
        """Yield (relative path, lstat) of each regular file under the root."""
        count = 0
        for folder, dirs, names in os.walk(self.root, followlinks=False):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
            for name in sorted(names):
                full = Path(folder) / name
                try:
                    info = full.lstat()
                except OSError:
                    continue
                if not stat.S_ISREG(info.st_mode):
                    continue  # symlinks, sockets, fifos: never followed or read
                yield full.relative_to(self.root).as_posix(), info
                count += 1
                if count >= SCAN_LIMIT:
                    return

    def read(self, rel: str, info: os.stat_result) -> str | None:
        """Return a file's text, or None when it is huge, binary or unreadable."""
        if info.st_size > READ_LIMIT:
            return None
        # A file swapped for a link or a fifo since the walk is neither
        # followed nor waited on.
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK
        try:
            fd = os.open(self.root / rel, flags)
        except OSError:
            return None
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            data = handle.read(READ_LIMIT + 1)
        if len(data) > READ_LIMIT or b"\x00" in data[:8192]:
            return None
        return data.decode("utf-8", errors="replace")

    def _store(self, conn, file_id, rel, info: os.stat_result, text) -> None:
        row = (info.st_mtime_ns, info.st_size, int(text is not None))
        if file_id is None:
            file_id = conn.execute(
                "INSERT INTO files (path, mtime_ns, size, indexed) VALUES (?, ?, ?, ?)",
                (rel, *row),
            ).lastrowid
        else:
            _drop_chunks(conn, file_id)
            conn.execute(
                "UPDATE files SET mtime_ns = ?, size = ?, indexed = ? WHERE id = ?",
                (*row, file_id),
            )
        if text is None:
            return
        lines = text.splitlines()
        conn.executemany(
            "INSERT INTO chunks (rowid, path, start, body) VALUES (?, ?, ?, ?)",
            [
                (
                    file_id * SLOT + number,
                    rel,
                    start + 1,
                    "\n".join(lines[start : start + CHUNK_LINES]),
                )
                for number, start in enumerate(
                    range(0, max(len(lines), 1), CHUNK_LINES)
                )
            ],
        )

    def files(self) -> list[str]:
        """Return the indexed text files' relative paths, sorted."""
        with closing(self.connect()) as conn:
            rows = conn.execute("SELECT path FROM files WHERE indexed = 1 ORDER BY 1")
            return [path for (path,) in rows]

    def chunks(self) -> Iterator[tuple[str, int, str]]:
        """Yield (path, first line, text) of every chunk, file by file."""
        with closing(self.connect()) as conn:
            yield from conn.execute(
                "SELECT path, start, body FROM chunks ORDER BY rowid"
            )

    def search(self, query: str, limit: int = 10) -> list[Hit]:
        """Return the lines that best match ``query``'s words, best first."""
        words = query_words(query)
        if not words:
            return []
        match = " OR ".join(f'"{w}"' for w in words)
        with closing(self.connect()) as conn:
            rows = conn.execute(
                "SELECT path, start, body, bm25(chunks) FROM chunks "
                "WHERE chunks MATCH ? ORDER BY bm25(chunks) LIMIT ?",
                (match, CANDIDATES),
            ).fetchall()
        return rank_lines(rows, words, limit)


def _drop_chunks(conn: sqlite3.Connection, file_id: int) -> None:
    conn.execute(
        "DELETE FROM chunks WHERE rowid BETWEEN ? AND ?",
        (file_id * SLOT, file_id * SLOT + SLOT - 1),
    )


def query_words(query: str) -> list[str]:
    """Return the distinct words of ``query`` worth matching, lower-cased."""
    words = [w.lower() for w in WORD.findall(query)]
    kept = [w for w in words if w not in STOPWORDS] or words
    return list(dict.fromkeys(kept))[:16]


def rank_lines(rows, words: list[str], limit: int) -> list[Hit]:
    """Return the best ``limit`` lines of the matched chunks ``rows``."""
    parts = {
        w: re.compile(rf"(?<![^\W_]){re.escape(w)}(?![^\W_])", re.I) for w in words
    }
    defines = [
        re.compile(d.format(word=re.escape(w)), re.I) for w in words for d in DEFINES
    ]
    scored = []
    for path, start, body, bm25 in rows:
        for offset, text in enumerate(body.split("\n")):
            held = sum(1 for p in parts.values() if p.search(text))
            if not held:
                continue
            defining = any(d.search(text) for d in defines)
            key = (not defining, -held, bm25, path, start + offset)
            scored.append(
                (key, Hit(path, start + offset, text.strip()[:LINE_CHARS], defining))
            )
    scored.sort(key=lambda item: item[0])
    hits, per_file = [], {}
    for _, hit in scored:
        if per_file.get(hit.path, 0) >= PER_FILE:
            continue
        per_file[hit.path] = per_file.get(hit.path, 0) + 1
        hits.append(hit)
        if len(hits) >= limit:
            break
    return hits
