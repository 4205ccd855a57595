"""Build the LevelDB keys of the Megram store (paper §6.6).

Four key kinds for Megrams, ``|`` as separator::

    m|<id>                    -> Megram JSON (primary record)
    x|<space>|<entity>|<id>   -> summary (pair index, scanned by prefix)
    l|<level>|<id>            -> b""  (level index)
    r|<id>                    -> ISO 8601 UTC time of the last recall

and two for the lexical index of task intents (``memory/intents.py``), one
entry per space and owner (``memory/owners.py``; entries indexed before owners
were recorded have none, and no ``|<owner>``)::

    i|<space>|<owner>         -> {"intent": "list the python files", "words": [..],
                                  "space": "intent:list_py", "owner": "user:7"}
    w|<word>|<space>|<owner>  -> b""  (word index, scanned by prefix)

A ``|`` inside a space or entity becomes ``_`` (``tool:a|b`` is indexed as
``x|tool:a_b|...``); the stored record keeps the original text, so readers
compare the original space and entity to tell escaped look-alikes apart.
The pair-index value is a summary of the record, rewritten with it in the
same batch: four little-endian doubles (created_at as a POSIX timestamp, f,
sigma, k), followed by the JSON ``[space, entity, owner]`` when the record has
an owner, else by ``[space, entity]`` only when one of them held a ``|``.
QueryMK needs nothing else, so it never reads a record.

Ids never contain ``|`` (the store refuses them), so the id is always the text
after the last separator.
"""

from __future__ import annotations

SEP = "|"
RECORD = b"m|"
INDEX = b"x|"
LEVEL = b"l|"
RECALL = b"r|"
INTENT = b"i|"
WORD = b"w|"


def key_part(text: str) -> str:
    """Return ``text`` with the separator replaced, safe inside a key."""
    return text.replace(SEP, "_")


def record_key(megram_id: str) -> bytes:
    """Return the key of a Megram's primary record."""
    return RECORD + megram_id.encode()


def recall_key(megram_id: str) -> bytes:
    """Return the key holding a Megram's last recall time."""
    return RECALL + megram_id.encode()


def level_key(level: str, megram_id: str) -> bytes:
    """Return the level-index key of a Megram."""
    return LEVEL + f"{level}{SEP}{megram_id}".encode()


def level_prefix(level: str) -> bytes:
    """Return the prefix shared by every level-index key of ``level``."""
    return LEVEL + f"{level}{SEP}".encode()


def pair_prefix(space: str, entity: str) -> bytes:
    """Return the prefix shared by every index key of a (space, entity) pair."""
    return INDEX + f"{key_part(space)}{SEP}{key_part(entity)}{SEP}".encode()


def space_prefix(space: str) -> bytes:
    """Return the prefix shared by every index key of a space."""
    return INDEX + f"{key_part(space)}{SEP}".encode()


def index_key(space: str, entity: str, megram_id: str) -> bytes:
    """Return the pair-index key of a Megram."""
    return pair_prefix(space, entity) + megram_id.encode()


def id_of(key: bytes) -> str:
    """Return the Megram id at the end of an index, level or recall key."""
    return key[key.rfind(b"|") + 1 :].decode()


def intent_part(space: str, owner: str = "") -> str:
    """Return the key part naming a task space of an owner in the intent index."""
    return key_part(space) + (f"{SEP}{key_part(owner)}" if owner else "")


def intent_key(space: str, owner: str = "") -> bytes:
    """Return the key holding the indexed intent of a task space of an owner."""
    return INTENT + intent_part(space, owner).encode()


def word_prefix(word: str) -> bytes:
    """Return the prefix shared by every word-index key of ``word``."""
    return WORD + f"{key_part(word)}{SEP}".encode()


def word_key(word: str, space: str, owner: str = "") -> bytes:
    """Return the word-index key tying ``word`` to a task space of an owner."""
    return word_prefix(word) + intent_part(space, owner).encode()
