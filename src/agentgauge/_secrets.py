"""Finding credentials in text: the rules of gitleaks' default configuration, and a few of
agentgauge's own for formats those rules leave to their entropy checks.

The gitleaks rules (``data/gitleaks_rules.json``: gitleaks' own ``gitleaks.toml`` as published,
its rules tied to file paths left out) are read the way gitleaks reads them: a match's secret is
its ``secretGroup`` (else its first non-empty group, else the whole match); a secret whose
Shannon entropy is not above the rule's ``entropy`` is no finding, nor one that the global or
the rule's allowlists allow (regexes on the secret, the match or the line; stop words).

Every rule is searched only near its *needles*: lower-case strings one of which each match
holds (told from the regex by :func:`agentgauge._screen.needles`, else the rule's gitleaks
``keywords``). One Aho-Corasick pass over the lower-cased text finds the needles of every rule,
and a rule is searched in a window around each needle it owns, as wide as its longest match:
a clean text costs one pass and a few short searches, whatever its length.
"""

from __future__ import annotations

import importlib
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, cached_property
from importlib import resources
from typing import Any, NamedTuple

from ahocorasick_rs import AhoCorasick, BytesAhoCorasick, Implementation

from agentgauge._screen import (
    Needle,
    fits,
    kept_needle_table,
    leading_strings,
    needles,
    needles_of,
)

__all__ = ["Rule", "RuleSet", "agentgauge_rules", "credential_rules", "gitleaks_rules"]

# a gitleaks keyword this long is rare enough in prose: its rule's regex is not read for more
_RARE_KEYWORD = 3
# a match of a rule without a longest match starts at most this far before its needle
_UNBOUNDED_BEFORE = 512
_BOUNDED = 1 << 16
# the start of gitleaks' rules made from its keyword template, and how far it reaches back
_TEMPLATE_START = r"[\w.-]{0,50}?"
_TEMPLATE_RUN = 50
# some rules open with that start inside a case-insensitive group
_CASELESS_GROUP = "(?i:"
_SURROGATE = re.compile("[\ud800-\udfff]")
_POSIX_CLASSES = {
    "[:alnum:]": "a-zA-Z0-9",
    "[:alpha:]": "a-zA-Z",
    "[:digit:]": "0-9",
    "[:lower:]": "a-z",
    "[:upper:]": "A-Z",
    "[:xdigit:]": "0-9A-Fa-f",
    "[:space:]": r"\s",
    "[:word:]": r"\w",
}


def python_regex(go: str) -> tuple[str, int]:
    """A gitleaks regex (Go's RE2 syntax) as a Python regex: an ``(?i)`` anywhere makes the
    whole pattern case-insensitive (a little wider than RE2's scoped flag: text is hidden
    rather than kept), ``\\z`` is ``\\Z`` and POSIX classes are spelled out.

    Args:
        go: the regex as gitleaks writes it.
    """
    flags = 0
    if "(?i)" in go:
        flags = re.IGNORECASE
        go = go.replace("(?i)", "")
    go = go.replace(r"\z", r"\Z")
    for name, chars in _POSIX_CLASSES.items():
        go = go.replace(name, chars)
    return go, flags


def _entropy(text: str) -> float:
    """Shannon entropy in bits per character (gitleaks' ``shannonEntropy``)."""
    if not text:
        return 0.0
    size = len(text)
    return -sum(n / size * math.log2(n / size) for n in Counter(text).values())


@dataclass(frozen=True, slots=True)
class _Allow:
    """A gitleaks allowlist: a finding it matches is no finding."""

    target: str  # "secret", "match" or "line"
    regexes: tuple[re.Pattern[str], ...]
    stopwords: AhoCorasick | None

    def allows(self, secret: str, match: str, line: str) -> bool:
        text = {"match": match, "line": line}.get(self.target, secret)
        if any(r.search(text) for r in self.regexes):
            return True
        return self.stopwords is not None and bool(
            self.stopwords.find_matches_as_indexes(secret.lower())
        )


def _allow(spec: dict[str, Any]) -> _Allow:
    words = [w.lower() for w in spec.get("stopwords", ())]
    return _Allow(
        target=spec.get("regexTarget", "secret"),
        regexes=tuple(re.compile(*python_regex(r)) for r in spec.get("regexes", ())),
        stopwords=AhoCorasick(words) if words else None,
    )


class Rule:
    r"""One kind of credential; its regex and allowlists are compiled on first use.

    Args:
        id: its name (gitleaks' rule id, or agentgauge's).
        regex: the regex, in Python's syntax.
        flags: its flags.
        needles: one of them is near every match (lower-case).
        entropy: a secret's Shannon entropy must be above it (0: no check).
        group: the group that is the secret (0: the first non-empty one, else the match).
        allow: gitleaks allowlists, as its configuration writes them.
        prefix: how many word characters, dots and dashes before a match its allowlists see
            (gitleaks' rules that start with ``[\w.-]{0,50}?``: that lazy start, searched from
            every position, costs more than the rest of the rule, so it is told afterwards).
        lowered: the regex is written in lower case and searched in the lower-cased text
            (positions are the same), without ``re.IGNORECASE``, which makes each character
            of a search several times dearer.
        plain_needs: in a plain text (:meth:`RuleSet.may_match`), a match also needs one of
            these needles somewhere in the text: there the rule is searched in the whole
            text where one of them is found, and not at its own needles.
    """

    def __init__(
        self,
        id: str,
        regex: str,
        flags: int,
        needles: tuple[Needle, ...],
        entropy: float = 0.0,
        group: int = 0,
        allow: Sequence[dict[str, Any]] = (),
        prefix: int = 0,
        lowered: bool = False,
        plain_needs: tuple[str, ...] = (),
    ) -> None:
        self.id = id
        self.regex = regex
        self.flags = flags
        self.needles = needles
        self.entropy = entropy
        self.group = group
        self._allow_specs = tuple(allow)
        self.prefix = prefix
        self.lowered = lowered
        self.plain_needs = plain_needs

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        """The compiled regex."""
        return re.compile(self.regex, self.flags)

    @cached_property
    def reach(self) -> tuple[int, int | None]:
        """How far before a needle a match may start (0: every match starts with a needle),
        and how far after it a match may end (None: anywhere after)."""
        parser: Any = importlib.import_module("re._parser")
        items = list(parser.parse(self.regex, self.flags))
        high = _width(self.regex, self.flags)
        tail = high if high < _BOUNDED else None
        return (
            0 if _starts_with_needle(items, self.needles) else min(high, _UNBOUNDED_BEFORE)
        ), tail

    @cached_property
    def allow(self) -> tuple[_Allow, ...]:
        """The allowlists, compiled."""
        return tuple(_allow(spec) for spec in self._allow_specs)

    def secret(self, match: re.Match[str]) -> tuple[int, int] | None:
        """Where the secret of ``match`` is, or None when gitleaks' checks drop it.

        Args:
            match: a match of :attr:`pattern`.
        """
        groups = match.re.groups
        span = match.span()
        if self.group and self.group <= groups:
            span = match.span(self.group)
        else:
            for index in range(1, groups + 1):
                start, end = match.span(index)
                if end > start:
                    span = (start, end)
                    break
        text = match.string
        secret = text[span[0] : span[1]].strip("\n")
        if not secret or (self.entropy and _entropy(secret) <= self.entropy):
            return None
        if self.allow:
            begin = match.start()
            if self.prefix:  # the word characters gitleaks' template matches before the keyword
                begin = _run_start(text, begin, self.prefix)
            whole = text[begin : match.end()]
            first = text.rfind("\n", 0, begin) + 1
            last = text.find("\n", match.end())
            line = text[first : len(text) if last < 0 else last]
            if any(a.allows(secret, whole, line) for a in self.allow):
                return None
        return span


_Search = tuple[int, Needle, int, int | None, re.Pattern[str], bool]
"""A rule owning a needle, as searched where the needle is: its index, the needle, how far
before and after the needle a match may reach, its regex, whether it searches the lower-cased
text."""


class RuleSet:
    """Rules searched together: one Aho-Corasick pass finds every rule's needles.

    Args:
        rules: the rules.
        quiet: needle text -> a regex that, matching the lower-cased text right after the
            needle, says that no match of the needle's rules starts there (the needle is not
            searched there).
        plain_quiet: needle text -> lower-case continuations after which the needle is quiet
            in a *plain* text (the caller says which texts are: :meth:`may_match`). The
            automaton for plain texts holds, instead of the needle, the needle followed by each
            character that leaves those continuations, so that it never reports the needle
            where one of them follows (no place of it to look at one by one).
        checks: extra needle text -> a check of the whole text, made (once) when the needle is
            in it: True means a match.
    """

    def __init__(
        self,
        rules: Sequence[Rule],
        quiet: Mapping[str, str] | None = None,
        plain_quiet: Mapping[str, Sequence[str]] | None = None,
        checks: Mapping[str, Callable[[str], bool]] | None = None,
    ) -> None:
        self.rules = tuple(rules)
        owners: dict[str, list[tuple[Needle, int]]] = {}
        for i, rule in enumerate(self.rules):
            for needle in rule.needles:
                owners.setdefault(needle.text, []).append((needle, i))
        # each needle's text once, with the rules that own it
        self._owners = list(owners.values())
        texts = list(owners)
        self._index = {t: i for i, t in enumerate(texts)}
        # the checks' needles come after the rules' (an index past the owners is a check)
        self._checks = tuple((checks or {}).values())
        every = [*texts, *(checks or {})]
        quiet = {t: tail for t, tail in (quiet or {}).items() if t in owners}
        self._quiet = {
            self._index[t]: re.compile(f"{re.escape(t)}(?={tail})").match
            for t, tail in quiet.items()
        }
        self._plans: list[tuple[_Search, ...] | None] = [None] * len(texts)
        # the automata are built on first use (each text is searched by one of them)
        self._texts = every
        # needles found all over clean text (a usage block's "input_tokens") but quiet there:
        # one regex finds a place where one is not, and while there is none, an ASCII text
        # is searched without them (no place of theirs to look at one by one)
        self._every = range(len(every))
        self._loud = [i for i in self._every if i not in self._quiet]
        self._quiet_texts = tuple(quiet)
        self._not_quiet = (
            re.compile("|".join(f"{re.escape(t)}(?!{tail})" for t, tail in quiet.items())).search
            if quiet
            else None
        )
        # a plain text's automaton: the needles quiet in plain text, each followed by what
        # leaves its quiet continuations; the automaton's patterns -> the needles' indexes
        calm = {t: tuple(after) for t, after in (plain_quiet or {}).items() if t in owners}
        # the rules that a plain text needs another needle for: by the needles they need,
        # and their own needles (not in the plain automaton when no other rule owns them)
        self._needed: dict[int, list[int]] = {}
        for i, rule in enumerate(self.rules):
            for text in rule.plain_needs:
                if text in owners:
                    self._needed.setdefault(self._index[text], []).append(i)
        aside = {t for t, own in owners.items() if all(self.rules[i].plain_needs for _, i in own)}
        self._plain_patterns = [t for t in every if t not in calm and t not in aside]
        self._plain_indexes = [i for i, t in enumerate(every) if t not in calm and t not in aside]
        for text, after in calm.items():
            for pattern in _leaving(text, after):
                self._plain_patterns.append(pattern)
                self._plain_indexes.append(self._index[text])
        # a quiet needle this close to a text's end has no character after it to tell
        self._calm_ends = tuple((t, len(t) + max(map(len, a), default=0)) for t, a in calm.items())

    @cached_property
    def _automaton(self) -> AhoCorasick:
        """Every needle, for any text."""
        return AhoCorasick(self._texts, implementation=Implementation.DFA)

    @cached_property
    def _ascii(self) -> BytesAhoCorasick:
        """Every needle, for an ASCII text, searched as bytes (where positions are the same and
        no character offsets need working out)."""
        return _bytes_automaton(self._texts)

    @cached_property
    def _ascii_loud(self) -> BytesAhoCorasick:
        """The needles but the quiet ones, in the same order."""
        return _bytes_automaton([self._texts[i] for i in self._loud])

    @cached_property
    def _ascii_plain(self) -> BytesAhoCorasick:
        """The automaton for plain ASCII texts (see ``plain_quiet``)."""
        return _bytes_automaton(self._plain_patterns)

    def _plan(self, index: int) -> tuple[_Search, ...]:
        """How the rules owning needle ``index`` are searched where it is found (worked out
        on its first find: a rule's reach parses its regex)."""
        plan = tuple(
            (owner, needle, *rule.reach, rule.pattern, rule.lowered)
            for needle, owner in self._owners[index]
            for rule in (self.rules[owner],)
        )
        self._plans[index] = plan
        return plan

    def _found(self, low: str) -> list[tuple[int, int, int]]:
        """The needles found in the lower-cased text: their index, start and end."""
        if low.isascii():
            return self._ascii.find_matches_as_indexes(low.encode(), overlapping=True)
        return self._automaton.find_matches_as_indexes(low, overlapping=True)

    def _hits(self, text: str, low: str) -> Iterator[tuple[Rule, int, int]]:
        """Each rule with a needle of it found in ``text`` (lower-cased: ``low``): where it
        starts, and where a match holding it must end."""
        found = self._found(low)
        size = len(text)
        searched: dict[int, int] = {}
        quiet = self._quiet
        owned = len(self._owners)
        for index, at, _ in found:
            if index >= owned or (index in quiet and quiet[index](low, at)):
                continue  # a check's needle, or a quiet place
            for needle, owner in self._owners[index]:
                if not fits(low, needle, at):
                    continue
                rule = self.rules[owner]
                lead, tail = rule.reach
                stop = size if tail is None else min(size, at + tail)
                if lead:  # a search from before the needle: once for what it covers
                    if stop <= searched.get(owner, -1):
                        continue
                    searched[owner] = stop
                yield rule, at, stop

    @staticmethod
    def _matches(rule: Rule, text: str, at: int, stop: int) -> Iterator[re.Match[str]]:
        """The matches of ``rule`` that may hold its needle found at ``at``."""
        lead = rule.reach[0]
        if not lead:
            match = rule.pattern.match(text, at, stop)
            if match is not None:
                yield match
            return
        # every match of the window: the later needles it holds are not searched again
        yield from rule.pattern.finditer(text, max(0, at - lead), stop)

    def may_match(self, text: str, *, plain: bool = False) -> bool:
        """Whether a rule's regex matches where one of its needles is (before gitleaks'
        entropy and allowlist checks), or a check says so: False means :meth:`secrets`
        finds nothing.

        Args:
            text: the text.
            plain: the needles of ``plain_quiet`` are quiet in this text where their
                continuations follow them.
        """
        # :meth:`_hits` and :meth:`_matches` unrolled: a clean text (the common case) finds
        # a few needles, and the generators' calls would cost more than the searches
        low = text.lower() if text.isascii() else _lowered(text)
        # the needles' indexes in the automaton that found them
        indexes: Sequence[int] = self._every
        # the rules searched in the whole (plain) text, for a needle they need
        needed: set[int] = set()
        if plain and low.isascii():
            for calm, reach in self._calm_ends:
                if calm in low[-reach:]:  # too close to the end to tell
                    plain = False
        else:
            plain = False
        if not low.isascii():
            found = self._automaton.find_matches_as_indexes(low, overlapping=True)
        elif plain:
            found = self._ascii_plain.find_matches_as_indexes(low.encode(), overlapping=True)
            indexes = self._plain_indexes
        elif (
            self._not_quiet is None
            or not any(t in low for t in self._quiet_texts)
            or self._not_quiet(low) is None
        ):
            # the quiet needles are quiet everywhere: the others, in the same order
            found = self._ascii_loud.find_matches_as_indexes(low.encode(), overlapping=True)
            indexes = self._loud
        else:
            found = self._ascii.find_matches_as_indexes(low.encode(), overlapping=True)
        if not found:
            return False
        size = len(text)
        searched: dict[int, int] = {}
        quiet, plans, owned = self._quiet, self._plans, len(self._owners)
        checked: set[int] = set()
        for number, at, _ in found:
            index = indexes[number]
            if index >= owned:  # a check's needle: the check, once
                if index not in checked:
                    checked.add(index)
                    if self._checks[index - owned](text):
                        return True
                continue
            if plain and index in self._needed:
                for owner in self._needed[index]:
                    if owner not in needed:
                        needed.add(owner)
                        rule = self.rules[owner]
                        if rule.pattern.search(low if rule.lowered else text) is not None:
                            return True
            if index in quiet and quiet[index](low, at):
                continue
            plan = plans[index]
            if plan is None:
                plan = self._plan(index)
            for owner, needle, lead, tail, pattern, lowered in plan:
                if needle.word_start and not fits(low, needle, at):
                    continue
                stop = size if tail is None else min(size, at + tail)
                subject = low if lowered else text
                if not lead:
                    if pattern.match(subject, at, stop) is not None:
                        return True
                    continue
                if stop <= searched.get(owner, -1):
                    continue
                searched[owner] = stop
                # the window is searched once for every needle it holds: a match after this
                # needle is one a later needle would have found
                if pattern.search(subject, max(0, at - lead), stop) is not None:
                    return True
        return False

    def secrets(self, text: str) -> list[tuple[int, int]]:
        """Where the secrets in ``text`` are (overlapping spans merged), in order.

        Args:
            text: the text.
        """
        spans = []
        low = _lowered(text)
        for rule, at, stop in self._hits(text, low):
            for match in self._matches(rule, low if rule.lowered else text, at, stop):
                span = rule.secret(match)
                if span is not None:
                    spans.append(span)
        merged: list[tuple[int, int]] = []
        for start, end in sorted(spans):
            if merged and start <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
            else:
                merged.append((start, end))
        return merged

    def hide(self, text: str, replacement: str) -> str:
        """``text`` with each secret replaced.

        Args:
            text: the text.
            replacement: what stands for a secret.
        """
        spans = self.secrets(text)
        if not spans:
            return text
        parts = []
        last = 0
        for start, end in spans:
            parts += [text[last:start], replacement]
            last = end
        parts.append(text[last:])
        return "".join(parts)


def _bytes_automaton(texts: Sequence[str]) -> BytesAhoCorasick:
    return BytesAhoCorasick([t.encode() for t in texts], implementation=Implementation.DFA)


def _leaving(needle: str, after: Sequence[str]) -> list[str]:
    """``needle`` followed by each character of a lower-cased ASCII text that leaves
    ``after`` (where what follows the needle can no longer be one of them, nor is one): the
    places where the needle is not quiet, as literal strings. (Each character the patterns
    name is one more the automaton tells apart: upper-case letters, which such a text does
    not hold, are left out.)"""
    done = set(after)
    # the beginnings of the continuations short of one (the empty one first)
    starts = {c[:i] for c in after for i in range(len(c))}
    starts = {s for s in starts if not any(s.startswith(d) for d in done)}
    ahead = starts | done
    return [
        needle + start + chr(c)
        for start in sorted(starts)
        for c in range(128)
        if not 65 <= c <= 90 and start + chr(c) not in ahead
    ]


def _lowered(text: str) -> str:
    """``text`` lower-cased, character for character (positions kept), with the two letters
    that Python's case-insensitive matching pairs with ASCII ones and ``str.lower`` keeps
    (``ſ`` with s, dotless ``ı`` with i; the Kelvin sign ``K`` is lowered to k)."""
    if text.isascii():
        return text.lower()
    low = text.lower()
    if len(low) != len(text):  # a letter whose lower case is two characters
        low = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    # str.replace, not str.translate, which costs ~0.1 µs a character
    low = low.replace("ſ", "s").replace("ı", "i")
    try:
        low.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate, which the automaton cannot take
        low = _SURROGATE.sub("\ufffd", low)
    return low


@cache
def _width(regex: str, flags: int) -> int:
    parser: Any = importlib.import_module("re._parser")
    return int(parser.parse(regex, flags).getwidth()[1])


def _starts_with_needle(items: list[Any], found: Sequence[Needle]) -> bool:
    """Whether every match of the parsed regex ``items`` starts with one of the needles: the
    strings its first literal parts can be each begin with one (a group that opens the regex,
    such as gitleaks' ``\\b(p8e-...)``, is read as its content)."""
    while items and items[0][0].name in ("AT", "SUBPATTERN"):
        op, av = items[0]
        items = items[1:] if op.name == "AT" else [*av[-1], *items[1:]]
    return all(any(t.startswith(n.text) for n in found) for t in leading_strings(items))


def _run_start(text: str, start: int, most: int) -> int:
    """Where the run of word characters, dots and dashes that ends at ``start`` begins, at
    most ``most`` characters back."""
    begin = start
    while (
        begin > start - most
        and begin > 0
        and (text[begin - 1].isalnum() or text[begin - 1] in "_.-")
    ):
        begin -= 1
    return begin


# agentgauge's rules: formats an agent's trace holds that gitleaks' rules miss or keep behind
# an entropy or exact-length check (a pasted, shortened or example key is still hidden)
# what comes between a name and its value; the value never starts with what redaction wrote
_VALUE = r"""["']?\s*[:=]\s*["']?(?!\[credential hidden\]|\*\*\*)"""
# a value in quotes (spaces and all), else up to a space or a separator
_ASSIGNED = (
    r"""["']?\s*[:=]\s*(?!["']?(?:\[credential hidden\]|\*\*\*))"""
    r"""(?:"([^"\n]+)"|'([^'\n]+)'|([^\s"',;}&]+))"""
)


class _Own(NamedTuple):
    id: str
    regex: str
    flags: int = 0
    keywords: tuple[str, ...] = ()  # when the regex's own needles are too many to list


_OWN: tuple[_Own, ...] = (
    _Own(
        "password-assignment",
        r"""(?:passw(?:or)?d|\bpwd?)""" + _ASSIGNED,
        re.I,
    ),
    _Own("api-key-assignment", r"""api[_-]?key""" + _ASSIGNED, re.I),
    _Own(
        "secret-assignment",
        r"""(?:secret|token|credential)s?""" + _VALUE + r"""([A-Za-z0-9_\-.+/=~]{16,})""",
        re.I,
    ),
    _Own(
        "aws-secret-access-key",
        r"""aws_?secret_?(?:access_?)?key""" + _VALUE + r"""([A-Za-z0-9/+=]{16,})""",
        re.I,
    ),
    _Own(
        "authorization-header",
        r"""authorization["']?\s*[:=]\s*["']?(?:(?:basic|bearer|token|digest|negotiate)\s+)?"""
        # the value is not a scheme: with the scheme's group left out, "Bearer" would be one
        r"""(?!\[credential hidden\]|\*\*\*|(?:basic|bearer|token|digest|negotiate)\s)"""
        r"""([^\s"',;}]{6,})""",
        re.I,
    ),
    _Own("bearer-token", r"\bbearer\s+([A-Za-z0-9_\-.=/+~]{12,})", re.I),
    _Own("basic-auth", r"\bBasic\s+((?=[A-Za-z0-9+/]*[0-9+/=])[A-Za-z0-9+/]{12,}={0,2})"),
    _Own(
        "cookie",
        r"""\b(?:set-)?cookie["']?\s*:\s*["']?(?!\[credential hidden\]|\*\*\*)"""
        r"""([^\s"'][^\n"']{3,})""",
        re.I,
    ),
    _Own("openai-style-key", r"\b(?:sk|rk|pk)-(?:[a-z]+-)?[A-Za-z0-9_\-]{16,}"),
    _Own("stripe-style-key", r"\b[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"),
    _Own("github-token", r"\bgh[pousr]_[A-Za-z0-9]{20,}"),
    _Own("github-fine-grained-token", r"\bgithub_pat_[A-Za-z0-9_]{20,}"),
    _Own("gitlab-token", r"\bgl(?:pat|dt|ft|rt|oas|cbt)-[A-Za-z0-9_\-]{20,}"),
    _Own("huggingface-token", r"\bhf_[A-Za-z0-9]{30,}"),
    _Own("google-api-key", r"\bAIza[A-Za-z0-9_\-]{30,}"),
    _Own("slack-token", r"\bxox[abposre]-[A-Za-z0-9\-]{10,}"),
    _Own(
        "aws-key-id",
        r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b",
        keywords=("a3t", "akia", "asia", "abia", "acca"),
    ),
    _Own("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*"),
    _Own("anthropic-key", r"\bsk-ant-[A-Za-z0-9_\-]{16,}"),
    _Own(
        "private-key",
        r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[\s\S]*?-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----|[\s\S]*)",
        re.I,
    ),
    _Own("azure-sas-signature", r"[?&;]sig=([A-Za-z0-9%+/=]{8,})", re.I),
)


@cache
def agentgauge_rules() -> tuple[Rule, ...]:
    """agentgauge's own rules (key assignments, headers, token formats without a length or
    entropy condition)."""
    return tuple(Rule(own.id, own.regex, own.flags, _kept_needles(_OWN_RULES, own)) for own in _OWN)


@cache
def gitleaks_rules() -> tuple[Rule, ...]:
    """The rules of gitleaks' default configuration that apply to any text, each with
    gitleaks' global allowlist before its own."""
    data = json.loads(
        resources.files("agentgauge").joinpath("data", "gitleaks_rules.json").read_text("utf-8")
    )
    everywhere = data["allowlist"]
    rules = []
    for spec in data["rules"]:
        regex, flags, prefix = _gitleaks_regex(spec)
        rules.append(
            Rule(
                spec["id"],
                regex,
                flags,
                _kept_needles(
                    _GITLEAKS_RULES,
                    _Own(spec["id"], regex, flags, tuple(k.lower() for k in spec["keywords"])),
                ),
                float(spec.get("entropy", 0.0)),
                int(spec.get("secretGroup", 0)),
                (everywhere, *spec.get("allowlists", ())),
                prefix,
            )
        )
    return tuple(rules)


def _gitleaks_regex(spec: Mapping[str, Any]) -> tuple[str, int, int]:
    """A gitleaks rule's regex in Python's syntax, its flags, and the word characters its
    template matches before the keyword (the template's opening taken off the regex)."""
    regex, flags = python_regex(spec["regex"])
    prefix = 0
    for opening in ("", _CASELESS_GROUP):
        if regex.startswith(opening + _TEMPLATE_START):
            regex, prefix = opening + regex[len(opening + _TEMPLATE_START) :], _TEMPLATE_RUN
    return regex, flags, prefix


def _keyword_needles(regex: str, flags: int, keywords: Sequence[str]) -> tuple[Needle, ...]:
    """A gitleaks rule's needles: its keywords, or the needles its regex shows where each holds
    a keyword and says more (it is longer, or starts a word), unless the keywords begin every
    match and those do not (a search from before each would cost more). Every match holds
    one of them, and so a keyword: the rule finds what it did. Keywords that begin every match
    of a regex opening with ``\\b`` start a word (jwt's ``ey`` is not searched in "they")."""
    given = tuple(Needle(k) for k in keywords)
    parser: Any = importlib.import_module("re._parser")
    items = list(parser.parse(regex, flags))
    leading = _starts_with_needle(items, given)
    if min(map(len, keywords), default=0) >= _RARE_KEYWORD:
        # found by chance in prose too seldom to look for longer needles; but where they start
        # a word, they are passed over inside one (authress' "ext_" in a "context_rule" key)
        return _word_start_keywords(items, keywords) if leading else given
    shown = needles_of(regex, flags) or ()
    if (
        shown
        and all(
            any(k in n.text and (len(n.text) > len(k) or n.word_start) for k in keywords)
            for n in shown
        )
        and (_starts_with_needle(items, shown) or not leading)
    ):
        return shown
    return _word_start_keywords(items, keywords) if leading else given


def _word_start_keywords(items: list[Any], keywords: Sequence[str]) -> tuple[Needle, ...]:
    """The keywords that begin every match of a parsed regex as needles: they start a word
    where the regex opens with ``\\b`` (jwt's ``ey`` is not searched in "they")."""
    at_word = _opens_at_word_boundary(items)
    return tuple(
        Needle(k, word_start=at_word and (k[:1].isalnum() or k[:1] == "_")) for k in keywords
    )


def _opens_at_word_boundary(items: list[Any]) -> bool:
    """Whether a parsed regex begins with ``\\b`` (inside the groups that open it too)."""
    while items and items[0][0].name == "SUBPATTERN":
        items = [*items[0][1][-1], *items[1:]]
    return bool(items) and items[0][0].name == "AT" and items[0][1].name == "AT_BOUNDARY"


_OWN_RULES = "agentgauge"
_GITLEAKS_RULES = "gitleaks"
_NEEDLE_TABLE = "credential_needles.json"


def _told_needles(source: str, rule: _Own) -> tuple[Needle, ...]:
    """The needles of a rule, told from its regex (and its keywords)."""
    if source == _GITLEAKS_RULES:
        return _keyword_needles(rule.regex, rule.flags, rule.keywords)
    return (
        tuple(Needle(k) for k in rule.keywords) or needles(re.compile(rule.regex, rule.flags)) or ()
    )


@cache
def _needle_table() -> dict[str, dict[str, list[Any]]]:
    """The built-in rules' needles as :func:`needle_table` tells them, kept in the package:
    telling them parses the regexes, most of the time making the rules took."""
    table: dict[str, dict[str, list[Any]]] = kept_needle_table(_NEEDLE_TABLE) or {}
    return table


def _kept_needles(source: str, rule: _Own) -> tuple[Needle, ...]:
    """A rule's needles from the kept table when it holds this very rule (its regex, flags and
    keywords), else told from its regex."""
    kept = _needle_table().get(source, {}).get(rule.id)
    if kept is not None and kept[:3] == [rule.regex, rule.flags, list(rule.keywords)]:
        return tuple(Needle(text, word_start) for text, word_start in kept[3])
    return _told_needles(source, rule)


def needle_table() -> dict[str, dict[str, list[Any]]]:
    """The needles of every built-in rule, told from the rules themselves: what
    ``data/credential_needles.json`` keeps (rule source -> rule id -> its regex, flags,
    keywords and needles)."""
    data = json.loads(
        resources.files("agentgauge").joinpath("data", "gitleaks_rules.json").read_text("utf-8")
    )
    table: dict[str, dict[str, list[Any]]] = {_GITLEAKS_RULES: {}, _OWN_RULES: {}}
    rules = [(_OWN_RULES, own) for own in _OWN]
    for spec in data["rules"]:
        regex, flags, _ = _gitleaks_regex(spec)
        keywords = tuple(k.lower() for k in spec["keywords"])
        rules.append((_GITLEAKS_RULES, _Own(spec["id"], regex, flags, keywords)))
    for source, rule in rules:
        told = _told_needles(source, rule)
        table[source][rule.id] = [
            rule.regex,
            rule.flags,
            list(rule.keywords),
            [[n.text, n.word_start] for n in told],
        ]
    return table


@cache
def credential_rules() -> RuleSet:
    """Every credential rule, gitleaks' and agentgauge's, in one :class:`RuleSet` (built on
    first use: reading and compiling the rules is work an import should not do)."""
    return RuleSet([*gitleaks_rules(), *agentgauge_rules()])
