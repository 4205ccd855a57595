"""What a request asks for when it asks for a total, read from its words.

A count, a sum or an average (``asks_for_aggregate``, ``asks_for_sum``,
``asks_for_count``), a count of files (``asks_for_file_count``), every line of
a file (``ALL_LINES``), the lines that hold a word (``counted_word``) or the
thing a count is of (``counted_noun``: lines, rows, words)::

    counted_word("How many lines of app.log contain ERROR?")  # "ERROR"

``roles.claims.computed`` holds the evidence rule these questions are judged by.
"""

from __future__ import annotations

import re

AGGREGATE = re.compile(
    r"\b(how many|total|sum|count|number of|average|mean)\b", re.IGNORECASE
)
# A sum or an average (not a count): awk, bc and friends print 0 for a field
# that holds text or does not exist, so a computed 0 is a sign of the wrong
# column far more often than a real total.
SUM = re.compile(r"\b(total|sum|average|mean)\b", re.IGNORECASE)
COUNT = re.compile(r"\b(how many|count|number of)\b", re.IGNORECASE)
# "How many lines does FILE have", "count the lines of FILE": every line of a
# file, not the lines that hold something ("lines that contain ERROR").
ALL_LINES = re.compile(
    r"\b(?:how many lines (?:does|do|has|have|are in|in|is in)"
    r"|(?:count|number of) (?:the )?lines (?:of|in))\b",
    re.IGNORECASE,
)
# The thing a count is of, named right after the words that ask how many ("how
# many lines it has", "the number of rows", "count the words"): what every
# line, row or word counter computes, whatever the rest of the sentence says.
# Words in between describe it ("how many non-empty lines"), never a verb
# that makes the noun another thing's ("how many users have 10 lines").
_BETWEEN = r"(?!(?:have|has|had|are|is|was|were|do|does|did|in|of|with)\b)[\w-]+\s+"
COUNTED_NOUN = re.compile(
    r"\b(?:how many|number of|count(?:\s+of)?(?:\s+the)?)\s+"
    rf"(?:{_BETWEEN}){{0,2}}"
    r"(?P<noun>lines?|rows?|records?|entries|entry|words?)\b",
    re.IGNORECASE,
)
NOUN_KINDS = {
    "line": "lines", "lines": "lines", "row": "rows", "rows": "rows",
    "record": "rows", "records": "rows", "entry": "rows", "entries": "rows",
    "word": "words", "words": "words",
}  # fmt: skip
# What a count leaves out: "not counting the header", "excluding comments",
# "without the blank lines", "except the first line", "ignoring empty lines".
EXCLUDED = re.compile(
    r"\b(?:not\s+counting|excluding|except(?:\s+for)?|without(?:\s+counting)?"
    r"|other\s+than|apart\s+from|leaving\s+out|ignoring|skipping)\s+"
    r"(?P<what>(?:the\s+)?[^\W\d][\w -]{1,60}?)\s*(?=[.,;:?!)]|$)",
    re.IGNORECASE | re.MULTILINE,
)
SOME_LINES = re.compile(
    r"\b(?:contain\w*|match\w*|mention\w*|with|that|which|where|start\w*|end\w*"
    r"|hold\w*|non-?empty|blank|empty|unique|distinct)\b",
    re.IGNORECASE,
)
# The word a count is of: "lines that contain ERROR", "lines containing the
# word 'timeout'". Only a quoted word, one after "the word/string", or one in
# capitals counts: "with amount over 1000" names a column, not a word to count.
COUNTED_WORD = re.compile(
    r"\b(?:contain(?:s|ing)?|mention(?:s|ing)?|hold(?:s|ing)?|match(?:es|ing)?)\s+"
    r"(?:the\s+(?:word|string|text|term)\s+)?"
    r"(?:(?P<q>['\"`])(?P<quoted>[^'\"`\n]+)(?P=q)|(?P<bare>[A-Za-z_][\w.-]*))"
)
# "How many Python files", "the number of .py files", "count the directories":
# a count of files, which a listing piped into a counter computes. The words
# between may not make it a count of something in the files ("how many lines
# in the files").
_NOT_FILES = r"(?:lines?|words?|bytes?|char\w*|rows?|in|of|do|does|did|have|has|are|is)"
FILES_COUNTED = re.compile(
    r"\b(?:how many|number of|count(?:\s+of)?(?:\s+the)?)\s+"
    rf"(?!{_NOT_FILES}\b)(?:(?!{_NOT_FILES}\b)[\w.*'-]+\s+){{0,3}}"
    r"(?:files|directories|folders|scripts|modules)\b",
    re.IGNORECASE,
)
WORD_INTRO = re.compile(r"\bthe\s+(?:word|string|text|term)\s+$", re.IGNORECASE)


def asks_for_aggregate(*texts: str) -> bool:
    """Return True when any of ``texts`` asks for a count, a total or an average."""
    return any(AGGREGATE.search(text or "") for text in texts)


def asks_for_sum(*texts: str) -> bool:
    """Return True when ``texts`` ask for a sum or an average and not a count."""
    joined = "\n".join(t or "" for t in texts)
    return SUM.search(joined) is not None and COUNT.search(joined) is None


def asks_for_count(*texts: str) -> bool:
    """Return True when ``texts`` ask how many of something there are."""
    return any(COUNT.search(text or "") for text in texts)


def asks_for_file_count(*texts: str) -> bool:
    """Return True when ``texts`` ask how many files (or directories) there are."""
    return any(FILES_COUNTED.search(text or "") for text in texts)


def counted_noun(*texts: str) -> str:
    """Return the kind of count (``lines``, ``rows``, ``words``) the noun after
    "how many" names in ``texts``, else ""."""
    for text in texts:
        found = COUNTED_NOUN.search(text or "")
        if found:
            return NOUN_KINDS[found["noun"].lower()]
    return ""


# How deep a question about a directory's files looks: only the files directly
# in it, or those of its subdirectories too. Stated in words, or not at all.
DEPTH_TOP = re.compile(
    r"\bdirectly\s+(?:in|under|inside|within)\b|\btop[- ]level\b"
    r"|\bnon-?recursive(?:ly)?\b|\bnot\s+recursive(?:ly)?\b"
    r"|\b(?:not|without|excluding|ignoring)\s+(?:(?:counting|including|looking|going|"
    r"descending|recursing)\s+)?(?:in(?:to)?\s+|inside\s+)?(?:its\s+|the\s+|any\s+)?"
    r"sub-?(?:director(?:y|ies)|folders?|dirs?)\b",
    re.IGNORECASE,
)
DEPTH_ALL = re.compile(
    r"\brecursive(?:ly)?\b|\bat\s+any\s+depth\b|\banywhere\s+(?:in|under|below)\b"
    r"|\b(?:including|and|with|in|plus)\s+(?:all\s+)?(?:of\s+)?(?:its\s+|their\s+|the\s+)?"
    r"(?:all\s+)?sub-?(?:director(?:y|ies)|folders?|dirs?)\b",
    re.IGNORECASE,
)


# What kind of entry a question about a path asks for: "which directory …",
# "what folder …" or "which (log) file …".
ASKS_DIRECTORY = re.compile(
    r"\b(?:which|what)\s+(?:[\w-]+\s+)?(?:sub-?)?(?:director(?:y|ies)|folders?|dirs?)\b",
    re.IGNORECASE,
)
ASKS_FILE = re.compile(r"\b(?:which|what)\s+(?:[\w-]+\s+)?files?\b", re.IGNORECASE)


def path_kind(request: str) -> str:
    """Return the kind of entry a question asks for, as its words state it:
    ``directory``, ``file``, or "" when they state neither (or both)."""
    directory = ASKS_DIRECTORY.search(request or "")
    file = ASKS_FILE.search(request or "")
    if directory and not file:
        return "directory"
    return "file" if file and not directory else ""


def depth(request: str) -> str:
    """Return how deep a question about a directory's files looks, as its
    words state it: ``top`` (only the files directly in it), ``all`` (those
    of its subdirectories too), or "" when they state neither."""
    if DEPTH_TOP.search(request or ""):
        return "top"
    return "all" if DEPTH_ALL.search(request or "") else ""


def excluded(request: str) -> str:
    """Return what a count question says to leave out ("the header" in "how
    many rows, not counting the header"), else ""."""
    if not asks_for_count(request):
        return ""
    found = EXCLUDED.search(request or "")
    return " ".join(found["what"].split()) if found else ""


def counted_word(request: str) -> str:
    """Return the word a count question counts ("ERROR" in "how many lines
    contain ERROR"), else ""."""
    if not asks_for_count(request):
        return ""
    for found in COUNTED_WORD.finditer(request or ""):
        if found["quoted"]:
            return found["quoted"]
        word = found["bare"]
        introduced = WORD_INTRO.search(request[: found.start("bare")])
        if introduced or (word.isupper() and len(word) > 1):
            return word.rstrip(".")
    return ""


# What a request states in literal form that a count is conditioned on: a
# quoted text, a word in capitals standing alone (ERROR, TODO; not README.md),
# an absolute path (/bin/bash in "accounts that use /bin/bash"), a time (10:00).
_CONDITIONS = re.compile(
    r"(?P<q>['\"`])(?P<quoted>[^'\"`\n]{2,})(?P=q)"
    r"|(?<![\w./-])(?P<caps>[A-Z][A-Z0-9_]{2,})(?![\w./-])"
    r"|(?<![\w.~])(?P<path>/[^\s'\"`,;()<>|?!]+[^\s'\"`,;()<>|?!.:])"
    r"|(?<![\w:])(?P<time>\d{1,2}:\d{2})(?![\w:])"
)


def stated_conditions(request: str) -> list[str]:
    """Return the literal values a count question states (``_CONDITIONS``), in
    order, once each; none unless it asks how many."""
    if not asks_for_count(request):
        return []
    found = [
        next(v for k, v in m.groupdict().items() if v and k != "q")
        for m in _CONDITIONS.finditer(request or "")
    ]
    return list(dict.fromkeys(found))


PLACES = frozenset("in inside within under at from".split())
DETERMINERS = frozenset("a an the this that these those my our your their its".split())
# The words of a request for names that say what is asked and where, not which
# of the entries there: function words, question and list verbs, words that
# put an entry in a place, quantifiers that take every entry, politeness.
NOT_RESTRICTING = (
    PLACES
    | DETERMINERS
    | frozenset(
        """some any all every each both of on into across throughout below
        beneath and or is are was were be been being do does did have has had
        there here exist exists present appear appears occur occurs found
        located stored kept contain contains containing hold holds mention
        mentions mentioned which what who whose where when how list show give
        tell find name names print display get return enumerate identify report
        see check look please could can would will you me i we us just kindly
        quickly hey hi thanks thank let know want need like everything anything
        entire whole contents content listing entries entry items item things
        thing""".split()
    )
)
# Nouns for any entry of a directory: "files and directories" restricts nothing.
ENTRY_NOUNS = frozenset(
    """file files directory directories folder folders dir dirs subdirectory
    subdirectories subfolder subfolders""".split()
)
_RESTRICT_WORD = re.compile(r"[^\W\d_][\w'-]*")
_NAMED_FILE = re.compile(r"(?<![\w.~])(?:/[^\s'\"`,;()<>|]+|[\w-]+\.[A-Za-z]\w{0,7}\b)")


def restricting_words(text: str) -> list[str]:
    """Return the words of a request for names that restrict which entries it
    asks for (``["empty", "files"]`` in "List the empty files in /srv/data"),
    else [] ("What files are in /srv/data?": every entry).

    What remains of ``text`` without the paths and file names it states and
    the words that say what is asked and where (``NOT_RESTRICTING``, and the
    place a preposition names: "in the data directory") restricts when it is
    two words or more, other than nouns for any directory entry: one word
    alone is the kind of entry asked for ("users")."""
    # A path or file name stands as "there": a place, and no restriction.
    words = _RESTRICT_WORD.findall(_NAMED_FILE.sub(" there ", text or ""))
    left = [w for w in _without_places(words) if w.lower() not in NOT_RESTRICTING]
    if len(left) < 2 or all(w.lower() in ENTRY_NOUNS for w in left):
        return []
    return left


def _without_places(words: list[str]) -> list[str]:
    """Return ``words`` without the places a preposition names: the word after
    "in" (past a determiner) and the entry nouns right after it ("in the data
    directory")."""
    kept: list[str] = []
    state = ""  # "at": after a preposition; "named": after the place's word
    for word in words:
        low = word.lower()
        if low in PLACES:
            state = "at"
        elif state == "at" and low in DETERMINERS:
            continue
        elif state == "at" or (state == "named" and low in ENTRY_NOUNS):
            state = "named"
        else:
            state = ""
            kept.append(word)
    return kept


# An extreme of entries ("the newest file", "edited last", "the largest log",
# "the most lines", "the highest timeout"): the key they are ordered by and
# the end asked, ``max`` or ``min``.
TIME_ENDS = {"newest": "max", "latest": "max", "oldest": "min", "earliest": "min"}
SIZE_ENDS = {"largest": "max", "biggest": "max", "heaviest": "max"}
SIZE_ENDS |= {"smallest": "min", "tiniest": "min", "lightest": "min"}
MOST_ENDS = {"most": "max", "highest": "max", "greatest": "max", "maximum": "max"}
MOST_ENDS |= {"fewest": "min", "least": "min", "lowest": "min", "minimum": "min"}
# "modified last", "last changed", "edited first".
WHEN_ENDS = {"last": "max", "latest": "max", "first": "min", "earliest": "min"}
CHANGED = frozenset(
    """modify modified modifies change changed changes edit edited edits update
    updated updates touch touched write written wrote writes save saved saves
    alter altered""".split()
)
ACCESSED = frozenset("access accessed read opened used".split())
# Nouns that name the key itself ("the most lines", "the largest size").
KEY_NOUNS = {"line": "lines", "lines": "lines", "word": "words", "words": "words"}
KEY_NOUNS |= dict.fromkeys("byte bytes size space disk".split(), "size")
KEY_NOUNS |= dict.fromkeys("modification mtime timestamp change".split(), "modified")
# Words after an extreme that name no thing: it is of the entries themselves
# ("which file is the newest?", "the oldest of them", "the largest one").
_NO_NOUN = PLACES | frozenset("of one ones among is are was were there here".split())
_COUNTED = frozenset("number amount count".split())
_ORDER_WORD = re.compile(r"[^\W_][\w'-]*|[?.!,;:()]")


def order_asked(text: str) -> tuple[str, str]:
    """Return the key and the end of the extreme a request asks for, else
    ``("", "")``: ``("modified", "max")`` for "Which file was modified most
    recently?", ``("size", "min")`` for "the smallest file", ``("lines",
    "max")`` for "the log with the most lines", ``("content", "max")`` for
    "the host with the most memory". A key the words leave open ("the
    latest backup", "the largest order") is none."""
    # A path or file name stands as "there", its words none of the question's.
    named = _NAMED_FILE.sub(" there ", text or "")
    words = [w.lower() for w in _ORDER_WORD.findall(named)]
    for at, word in enumerate(words):
        found = _order_at(words, at, word)
        if found[0]:
            return found
    return "", ""


def _order_at(words: list[str], at: int, word: str) -> tuple[str, str]:
    before = words[at - 1] if at else ""
    after, counted = _noun_after(words, at + 1)
    if word in ("recent", "recently") and before in ("most", "least"):
        end = "max" if before == "most" else "min"
        near = {words[at - 2] if at > 1 else "", after}
        if near & ACCESSED:
            return "accessed", end
        if near & CHANGED or (word == "recent" and _of_entries(words, at + 1)):
            return "modified", end
        if word == "recent" and KEY_NOUNS.get(after) == "modified":
            return "modified", end
        return "", ""
    if word in CHANGED | ACCESSED and (after in WHEN_ENDS or before in WHEN_ENDS):
        end = WHEN_ENDS.get(after) or WHEN_ENDS[before]
        return ("modified" if word in CHANGED else "accessed"), end
    if word in ("alphabetically", "alphabetical"):
        near = {before, after, *words[max(0, at - 3) : at]}
        ends = [WHEN_ENDS[w] for w in near if w in ("first", "last")]
        return ("name", ends[0]) if len(set(ends)) == 1 else ("", "")
    ends = {**TIME_ENDS, **SIZE_ENDS, **MOST_ENDS}
    if before == "at" or word not in ends or after in ("recent", "recently"):
        # "at most 3 lines", "at least one"; "most recently" is read above.
        return "", ""
    if after in KEY_NOUNS:
        return KEY_NOUNS[after], ends[word]
    of_entries = not counted and _of_entries(words, at + 1)
    if word in TIME_ENDS and of_entries:
        return "modified", TIME_ENDS[word]
    if word in SIZE_ENDS and of_entries:
        return "size", SIZE_ENDS[word]
    extreme = ends[word] if counted else MOST_ENDS.get(word)
    if extreme and after and not of_entries:
        # "the most memory", "the highest timeout", "the largest number of
        # errors": a value the entries hold.
        return "content", extreme
    return "", ""


def _noun_after(words: list[str], at: int) -> tuple[str, bool]:
    """Return the word after ``at`` past determiners and "number of" (""
    at the end of a clause), and whether a "number of" came first."""
    counted = False
    while at < len(words) and words[at] in DETERMINERS:
        at += 1
    if words[at : at + 2] in ([c, "of"] for c in _COUNTED):
        counted, at = True, at + 2
    word = words[at] if at < len(words) else ""
    return ("" if not word[:1].isalpha() else word), counted


def _of_entries(words: list[str], at: int) -> bool:
    """True when the words after an extreme leave it of the entries
    themselves: none, a place, or a noun for an entry within three words
    ("the smallest non-empty file", "the largest log file")."""
    after = _noun_after(words, at)[0]
    if not after or after in _NO_NOUN:
        return True
    for word in words[at : at + 4]:
        if word in ENTRY_NOUNS:
            return True
        if not word[:1].isalpha() or word in _NO_NOUN:
            return False
    return False
