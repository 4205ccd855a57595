"""R1's code-level rules: the conversational fast path and task_id sanitising.

The fast path (reference §2.1) answers greetings, identity questions and short
questions without the pipeline. Unlike the original, English words match on word
boundaries, so "rune" is not "run" and "playlist" is not "play"; Chinese terms
have no word boundaries and match as substrings.

A task_id is ASCII snake_case, e.g. ``"Liste les fichiers *.py"`` →
``"liste_les_fichiers_py"``; CJK-only text gets ``"task_" + 8 hex digits``.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

MAX_CONVERSATIONAL_CHARS = 100
MAX_QUESTION_WORDS = 8
MAX_QUESTION_CHARS = 30
MAX_TASK_ID_CHARS = 48
TASK_ID_WORDS = 6

ACTION_VERBS = (
    "find", "search", "open", "play", "send", "create", "delete", "remove",
    "list", "show me", "download", "install", "run", "execute", "check",
    "remind", "schedule", "set alarm",
    "查找", "搜索", "打开", "播放", "发送", "创建", "删除", "下载", "安装",
    "运行", "执行", "查看", "列出", "显示", "提醒", "安排", "设置闹钟",
)  # fmt: skip
GREETINGS = (
    "hi", "hello", "hey", "yo", "sup", "howdy", "good morning", "good afternoon",
    "good evening", "good night", "thanks", "thank you", "bye", "goodbye",
    "你好", "嗨", "早上好", "晚上好", "下午好", "谢谢", "再见",
)  # fmt: skip
IDENTITY_PHRASES = (
    "who are you", "what are you", "what's your name", "what is your name",
    "introduce yourself", "tell me about yourself",
    "你是谁", "你叫什么", "介绍一下你自己", "自我介绍",
)  # fmt: skip
QUESTION_STARTS = (
    "what", "who", "why", "how", "when", "where", "is", "are", "do", "does",
    "can", "could", "would", "should", "will",
    "什么", "谁", "为什么", "怎么", "什么时候", "哪里", "是不是", "能不能",
)  # fmt: skip
GREETING_ENDS = (" ", "!", ",", "，", ".", "?", "！", "。")

_UUID_LIKE = re.compile(r"^[0-9a-f]{8}(_[0-9a-f]{4}){3}_[0-9a-f]{12}$")
_EXPECT = re.compile(r"(?:^|\s)#\s*expect:.*$")


def _is_ascii(term: str) -> bool:
    return term.isascii()


def _word_pattern(terms: tuple[str, ...]) -> re.Pattern[str]:
    """Match any ASCII term as whole words (inner spaces flexible)."""
    words = [
        r"\s+".join(re.escape(w) for w in t.split()) for t in terms if _is_ascii(t)
    ]
    return re.compile(r"(?<![a-z0-9_'])(?:" + "|".join(words) + r")(?![a-z0-9_])")


_ACTION_WORDS = _word_pattern(ACTION_VERBS)
_IDENTITY_WORDS = _word_pattern(IDENTITY_PHRASES)


def _contains(lower: str, terms: tuple[str, ...], pattern: re.Pattern[str]) -> bool:
    if pattern.search(lower):
        return True
    return any(t in lower for t in terms if not _is_ascii(t))


def _starts_with_word(lower: str, term: str) -> bool:
    if not lower.startswith(term):
        return False
    # Chinese question words run straight into the next character.
    rest = lower[len(term) :]
    return not _is_ascii(term) or not rest or not (rest[0].isalnum() or rest[0] == "_")


def is_greeting(text: str) -> bool:
    """Return True when ``text`` is, or starts with, a greeting or thanks."""
    lower = " ".join(text.strip().lower().split())
    return any(
        lower == g or any(lower.startswith(g + end) for end in GREETING_ENDS)
        for g in GREETINGS
    )


def is_identity_question(text: str) -> bool:
    """Return True when ``text`` asks who or what the assistant is."""
    return _contains(text.strip().lower(), IDENTITY_PHRASES, _IDENTITY_WORDS)


def is_conversational(text: str) -> bool:
    """Return True when ``text`` gets a direct answer instead of the pipeline.

    Greetings, identity questions and short questions (≤ 8 words, ≤ 30 chars)
    qualify; anything over 100 characters or naming an action verb does not.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    lower = " ".join(text.strip().lower().split())
    if not lower or len(lower) > MAX_CONVERSATIONAL_CHARS:
        return False
    if _contains(lower, ACTION_VERBS, _ACTION_WORDS):
        return False
    if is_greeting(lower) or is_identity_question(lower):
        return True
    if len(lower.split()) > MAX_QUESTION_WORDS or len(lower) > MAX_QUESTION_CHARS:
        return False
    return any(_starts_with_word(lower, q) for q in QUESTION_STARTS)


def sanitise_task_id(value: str) -> str:
    """Return ``value`` as ASCII snake_case (maybe empty), at most 48 chars."""
    ascii_text = (
        unicodedata.normalize("NFKD", value or "")
        .encode("ascii", "ignore")
        .decode("ascii")
    )
    words = re.findall(r"[a-z0-9]+", ascii_text.lower())
    slug = ""
    for word in words:
        candidate = f"{slug}_{word}" if slug else word
        if len(candidate) > MAX_TASK_ID_CHARS:
            break
        slug = candidate
    if not slug and words:
        slug = words[0][:MAX_TASK_ID_CHARS]
    return "" if _UUID_LIKE.match(slug) else slug


def hashed_task_id(text: str) -> str:
    """Return ``task_<8 hex>``, a stable id for text with no usable ASCII."""
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return f"task_{digest[:8]}"


def _first_line_slug(text: str) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    first = lines[0] if lines else ""
    first = _EXPECT.sub("", first.removeprefix("& "))
    return sanitise_task_id(" ".join(re.findall(r"[^\W_]+", first)[:TASK_ID_WORDS]))


def derive_task_id(text: str) -> str:
    """Return a task_id from the first words of ``text``'s first line.

    A shell comment such as ``# expect: …`` and a leading ``& `` are left out;
    text without usable ASCII gets a hashed id.
    """
    return _first_line_slug(text) or hashed_task_id(text or "")


def task_id_for(proposed: str, intent: str, raw_input: str) -> str:
    """Return the model's task_id sanitised, else one derived from the input."""
    return (
        sanitise_task_id(proposed)
        or _first_line_slug(intent)
        or derive_task_id(raw_input)
    )
