"""Screening text for case-insensitive regexes cheaply.

Python runs a regex search position by position; a case-insensitive alternation over a 2 kB
text takes a fraction of a millisecond, and the texts agentgauge screens (step contents,
outputs, whole traces before they are stored) rarely match. Each pattern's *needles* are told
from its syntax tree: short lower-case ASCII strings one of which every match contains. One
Aho-Corasick pass over the lower-cased text finds the needles of every pattern at once, and a
pattern is searched only when one of its needles is found, so a clean text costs microseconds
while the patterns that match are exactly those whose own ``search`` finds a match.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Sequence
from functools import cached_property
from importlib import resources
from typing import Any, NamedTuple

from ahocorasick_rs import BytesAhoCorasick, Implementation

__all__ = ["Needle", "Screen", "finite_strings", "fits", "leading_strings", "needles", "needles_of"]

_MAX_NEEDLES = 64
_MIN_NEEDLE = 2
_RARE_NEEDLE = 6
_SHORT_RUN = 3
_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")


class Needle(NamedTuple):
    """Lower-case text that every match of a pattern contains.

    Args:
        text: the text.
        word_start: it starts a word: the character before it, if any, is not a word
            character (the pattern has ``\\b`` before it).
    """

    text: str
    word_start: bool = False


def fits(low: str, needle: Needle, at: int) -> bool:
    """Whether ``needle``, found at ``low[at:]``, has the boundary it needs there.

    Args:
        low: the lower-cased text.
        needle: the needle.
        at: where it was found.
    """
    return not (needle.word_start and at and low[at - 1] in _WORD_CHARS)


def finite_strings(items: Any) -> frozenset[str] | None:
    """The lower-cased ASCII strings a parsed regex sequence can match, when there are few of
    them (``None`` otherwise, or for anything but literals, small character sets, groups,
    alternations, ``?`` and zero-width anchors)."""
    out: frozenset[str] = frozenset({""})
    for item in items:
        longer = _followed_by(out, item)
        if longer is None:
            return None
        out = longer
    return out


def leading_strings(items: Any) -> frozenset[str]:
    """Strings one of which every match of a parsed regex sequence begins with: what its
    first literal parts can be, followed by the first repetition of a repeat that ends them
    (``{""}`` when it begins with none of these)."""
    texts: frozenset[str] = frozenset({""})
    for item in items:
        more = _followed_by(texts, item)
        if more is None:
            return _first_of_repeat(texts, item) or texts
        texts = more
    return texts


def _followed_by(out: frozenset[str], item: Any) -> frozenset[str] | None:
    """:func:`finite_strings` of a sequence given that of the items before ``item``: each of
    ``out`` followed by each string ``item`` matches (``None`` past the limit or for an item it
    cannot tell)."""
    op, av = item
    name = op.name
    if name == "LITERAL" and av < 128:
        choices = frozenset({chr(av).lower()})
    elif name == "IN" and (chars := _class_chars(av)) is not None:
        choices = frozenset("".join(chars).lower())
    elif name == "SUBPATTERN":
        found = finite_strings(av[-1])
        if found is None:
            return None
        choices = found
    elif name == "BRANCH":
        branches = [finite_strings(b) for b in av[1]]
        if any(b is None for b in branches):
            return None
        choices = frozenset().union(*(b for b in branches if b is not None))
    elif name == "MAX_REPEAT" or name == "MIN_REPEAT":
        low, high, sub = av
        found = finite_strings(sub)
        if found is None or low > 1 or high != 1:
            return None
        choices = found | {""} if low == 0 else found
    elif name in ("AT", "ASSERT", "ASSERT_NOT"):
        return out  # \b, ^, $, lookarounds: they match no character
    else:
        return None
    if len(out) * len(choices) > _MAX_NEEDLES:
        return None
    return frozenset(a + b for a in out for b in choices)


def kept_needle_table(name: str) -> Any:
    """A table of needles kept in the package (``data/<name>``, JSON), told from patterns
    beforehand because telling them parses each regex; None when the package lacks it (the
    needles are then told from the patterns).

    Args:
        name: the file's name in the package's ``data`` folder.
    """
    try:
        text = resources.files("agentgauge").joinpath("data", name).read_text("utf-8")
    except OSError:
        return None
    return json.loads(text)


def needles(pattern: re.Pattern[str]) -> tuple[Needle, ...] | None:
    """Needles of ``pattern``: one of them is in every match of it in an ASCII text
    (lower-cased); ``None`` when no such short list can be told from the pattern.

    The longest guarantee is taken from a run of consecutive literal parts of the pattern
    (``api[_-]?key`` gives ``apikey``, ``api_key``, ``api-key``); a ``\\b`` right before the
    run marks needles that start a word (``\\bsk-`` is not found in ``task-``).

    Args:
        pattern: the compiled regex.
    """
    return needles_of(pattern.pattern, pattern.flags)


def needles_of(regex: str, flags: int = 0) -> tuple[Needle, ...] | None:
    """:func:`needles` of a regex not compiled (compiling one costs more than this).

    Args:
        regex: the regex.
        flags: its flags.
    """
    try:
        # the standard library's own regex parser: its syntax tree names the literal parts
        parsed = importlib.import_module("re._parser").parse(regex, flags)
        items = list(parsed)
        if len(items) == 1 and items[0][0].name == "BRANCH":
            # alternatives: one of each alternative's needles
            found = [_needles_of_sequence(alt) for alt in items[0][1][1]]
            if any(f is None for f in found):
                return None
            return tuple(sorted({n for f in found if f is not None for n in f}))
        return _needles_of_sequence(items)
    except Exception:  # an internal that changed: no screening, every text is searched
        return None


def _class_chars(items: Any) -> list[str] | None:
    """The characters of a character class of ASCII characters and ranges (``[0-9a-f]``);
    None for a class it cannot tell (negated, ``\\w``, beyond ASCII)."""
    chars: list[str] = []
    for op, av in items:
        if op.name == "LITERAL" and av < 128:
            chars.append(chr(av))
        elif op.name == "RANGE" and av[1] < 128:
            chars += map(chr, range(av[0], av[1] + 1))
        else:
            return None
    return chars


def _first_of_repeat(out: frozenset[str], item: Any) -> frozenset[str] | None:
    """Each of ``out`` followed by each string one repetition of ``item`` matches, when it is
    a repeat that matches at least once (``[0-9a-f]{32}``): the beginnings of what the
    sequence matches, not all of it (``None`` past the limit or for another item)."""
    op, av = item
    if op.name not in ("MAX_REPEAT", "MIN_REPEAT") or av[0] < 1:
        return None
    found = finite_strings(av[2])
    if found is None or len(out) * len(found) > _MAX_NEEDLES:
        return None
    return frozenset(a + b for a in out for b in found)


def _spliced(items: Any) -> list[Any]:
    """A parsed sequence with its groups' contents in their place (a group matches its content
    once: ``\\b(ey[a-z]+)`` is ``\\b``, ``e``, ``y``, ... for the runs of literal parts)."""
    out: list[Any] = []
    for item in items:
        if item[0].name == "SUBPATTERN":
            out += _spliced(item[1][-1])
        else:
            out.append(item)
    return out


def _needles_of_sequence(items: Any) -> tuple[Needle, ...] | None:
    items = _spliced(items)
    best: tuple[int, frozenset[str]] | None = None
    for start in range(len(items)):
        if items[start][0].name == "AT":
            continue  # it matches no character: the run after it gives the same needles
        found = frozenset({""})
        for end in range(start + 1, len(items) + 1):
            # the strings of items[start:end], from those of items[start:end - 1]; a repeat
            # ends a run too short to be rare with its first repetition (what every match of
            # it begins with: twilio's ``SK[0-9a-fA-F]{32}`` is not searched in "task")
            longer = _followed_by(found, items[end - 1])
            ended = longer is None
            if ended:
                if min(map(len, found)) >= _SHORT_RUN:
                    break
                longer = _first_of_repeat(found, items[end - 1])
                if longer is None:
                    break
            assert longer is not None
            found = longer
            if min(map(len, found)) >= _MIN_NEEDLE and (
                best is None or _needle_cost(found) < _needle_cost(best[1])
            ):
                best = (start, found)
            if ended:
                break
    if best is None:
        return None
    start, found = best
    word_start = (
        start > 0
        and _is_word_boundary(items[start - 1])
        and all(text[0] in _WORD_CHARS for text in found)
    )
    # a needle that holds another (at its start, for a word start) is found only where that
    # one is
    kept = [
        text
        for text in found
        if not any(
            other != text and (text.startswith(other) if word_start else other in text)
            for other in found
        )
    ]
    return tuple(sorted(Needle(text, word_start) for text in kept))


def _is_word_boundary(item: Any) -> bool:
    op, av = item
    return bool(op.name == "AT" and av.name == "AT_BOUNDARY")


def _needle_cost(found: frozenset[str]) -> tuple[int, int, int]:
    """Longer needles first (a short one is found by chance in prose, and then the regex
    runs), up to a length that is rare enough; then fewer (each is one more needle)."""
    shortest = min(map(len, found))
    return -min(_RARE_NEEDLE, shortest), len(found), -shortest


class Screen:
    """Case-insensitive regexes, screened so that a clean text costs little.

    An ASCII text is lower-cased once and one Aho-Corasick pass finds the needles of every
    pattern (:func:`needles`); a pattern is searched only when one of its needles is in the
    text, and a pattern without needles always. Any other text (case-insensitive matching
    pairs a few non-ASCII characters with ASCII letters, such as the long s and the Kelvin
    sign) is screened by one combined regex.

    Args:
        patterns: the compiled regexes (``re.IGNORECASE``).
        told: the needles of each pattern (:func:`needles`), when already known; told from
            the patterns when left out.
    """

    def __init__(
        self,
        patterns: Sequence[re.Pattern[str]],
        told: Sequence[tuple[Needle, ...] | None] | None = None,
    ) -> None:
        self.patterns = tuple(patterns)
        found = [needles(p) for p in self.patterns] if told is None else list(told)
        if len(found) != len(self.patterns):
            raise ValueError(f"{len(found)} lists of needles for {len(self.patterns)} patterns")
        self._unscreened = tuple(i for i, needles_ in enumerate(found) if needles_ is None)
        self._owners: list[tuple[Needle, int]] = [
            (needle, i) for i, needles_ in enumerate(found) for needle in needles_ or ()
        ]

    def __getstate__(self) -> dict[str, Any]:
        # what is built on first use is built again where it is unpickled (an automaton
        # cannot be pickled)
        state = dict(self.__dict__)
        state.pop("_automaton", None)
        state.pop("_any", None)
        return state

    @cached_property
    def _automaton(self) -> BytesAhoCorasick | None:
        """Every needle, searched in a lower-cased ASCII text as bytes (built on first use)."""
        if not self._owners:
            return None
        return BytesAhoCorasick(
            [needle.text.encode() for needle, _ in self._owners], implementation=Implementation.DFA
        )

    @cached_property
    def _any(self) -> re.Pattern[str] | None:
        """Every pattern in one regex, for a text beyond ASCII (compiled on first use)."""
        if not self.patterns:
            return None
        try:
            return re.compile("|".join(f"(?:{p.pattern})" for p in self.patterns), re.IGNORECASE)
        except re.error:  # e.g. numbered back-references: screen pattern by pattern
            return None

    def _candidates(self, text: str) -> Sequence[int]:
        """The indexes of the patterns that may match ``text``, in order."""
        if not text.isascii():
            screen = self._any
            if screen is not None and screen.search(text) is None:
                return ()
            return range(len(self.patterns))
        automaton = self._automaton
        if automaton is None:
            return self._unscreened
        low = text.lower()
        found = automaton.find_matches_as_indexes(low.encode(), overlapping=True)
        if not found:  # most texts: no needle at all
            return self._unscreened
        chosen = set(self._unscreened)
        owners = self._owners
        for index, at, _ in found:
            needle, owner = owners[index]
            if owner not in chosen and fits(low, needle, at):
                chosen.add(owner)
        return sorted(chosen)

    def matching(self, text: str) -> list[str]:
        """The source of every pattern that matches ``text``, in order.

        Args:
            text: the text.
        """
        candidates = self._candidates(text)
        if not candidates:  # most texts
            return []
        patterns = self.patterns
        return [patterns[i].pattern for i in candidates if patterns[i].search(text)]

    def search(self, text: str) -> bool:
        """Whether any pattern matches ``text``.

        Args:
            text: the text.
        """
        return any(self.patterns[i].search(text) for i in self._candidates(text))

    def may_match(self, text: str) -> bool:
        """Whether a pattern may match ``text`` (False: certainly none does).

        Args:
            text: the text.
        """
        return bool(self._candidates(text))
