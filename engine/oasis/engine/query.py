"""The engine's query language: Whoosh syntax restricted to a cost-bounded form (issue 15, item 2).

User queries reach the engine from the web through the broker, so the parser is an attack surface. The
language kept is: words (searched in title and text), ``"phrases"`` (at most :data:`MAX_PHRASE_WORDS`
words, slop at most :data:`MAX_SLOP`), ``AND`` / ``OR`` / ``NOT`` / ``ANDNOT`` / ``ANDMAYBE``, parentheses,
``^boost``, ``+word`` (required) and ``-word`` (excluded) as web search engines read them (a ``-`` inside a
word, ``e-mail``, is no operator), and ``*`` / ``?`` wildcards after at least :data:`MIN_WILDCARD_PREFIX`
literal letters. Words are alternatives (any of them may match, the more the better); a ``NOT`` among them
excludes (``socket NOT tcp`` is ``socket ANDNOT tcp``, as ``socket -tcp``: :func:`exclusions`).
Removed: field access (``url:``, ``fetch_time:``, ``title:`` are plain words, never internal fields),
ranges, ``*:*``. A query must have a positive part (``NOT x`` alone would match the whole collection).

Each wildcard is expanded here, once, against the index's term list into at most :data:`MAX_EXPANSION`
terms (scanning at most :data:`MAX_SCAN` candidates); a broader one is refused with INVALID_ARGUMENT, so
the cost of a query is bounded by :data:`MAX_QUERY_TERMS` posting lists whatever the collection holds.
"""

from __future__ import annotations

import math
import re
import time
from typing import Any

from whoosh import qparser
from whoosh import query as wquery
from whoosh.reading import distance

MIN_WILDCARD_PREFIX = 2
MAX_EXPANSION = 64  # terms one wildcard may stand for
MAX_SCAN = 20_000  # term-list entries one wildcard may look at to find them
MAX_PHRASE_WORDS = 16
MAX_SLOP = 10
MAX_QUERY_TERMS = 128  # leaf (field, term) pairs after expansion
MAX_CORRECTED = 8  # words of one query a suggestion may correct
MIN_CORRECTED = 3  # letters a word needs before a correction is looked for
MAX_CORRECTED_LETTERS = 24  # longer words are not corrected (the cost of the candidates grows with them)
CANDIDATES = 3  # a word's best corrections, chosen among with the rest of the query
CONTEXT_POSTINGS = 5000  # documents read of a word's postings to weigh a correction in context
CLASSIC_TYPO = 10.0  # how much likelier a swap or a doubling is than another edit (their pages count x10)
_LETTERS = "abcdefghijklmnopqrstuvwxyz"
_LITERAL = re.compile(r"^\w+$")
# ``+`` / ``-`` as operators only at the start of a word (after a space or "(" and before a word, a quote or
# "("): ``e-mail``, ``c++`` and ``x - y`` are words
_PLUS = r"(?<![^\s(])\+(?=[^\s+\-])"
_MINUS = r"(?<![^\s(])-(?=[^\s+\-])"
EXCLUDED_WORD = re.compile(_MINUS)


class QueryRefused(ValueError):
    """The query is outside the engine's query language or over its cost bounds (message fit for a user)."""


def make_parser(schema: Any, fields: list[str]) -> qparser.QueryParser:
    """Whoosh's multifield parser without the plugins that reach internal fields or the whole collection."""
    parser = qparser.MultifieldParser(fields, schema, group=qparser.OrGroup)
    for plugin in (qparser.FieldsPlugin, qparser.RangePlugin, qparser.EveryPlugin):
        parser.remove_plugin_class(plugin)
    parser.add_plugin(qparser.PlusMinusPlugin(plusexpr=_PLUS, minusexpr=_MINUS))
    return parser


def exclusions(q: wquery.Query) -> wquery.Query:
    """``NOT`` among alternatives excludes, as users mean it: Whoosh reads ``socket NOT tcp`` (words joined by
    OR) as ``socket OR (NOT tcp)``, every page without "tcp" too, which :func:`check` then refused; here it is
    ``socket ANDNOT tcp``. ``NOT`` inside an ``AND`` already excludes, and a query of negations alone stays
    one (refused by :func:`check`)."""
    q = q.apply(exclusions)
    if isinstance(q, wquery.Or):
        keep = [c for c in q.subqueries if not isinstance(c, wquery.Not)]
        drop = [c.query for c in q.subqueries if isinstance(c, wquery.Not)]
        if keep and drop:
            a = keep[0] if len(keep) == 1 else wquery.Or(keep, boost=q.boost)
            b = drop[0] if len(drop) == 1 else wquery.Or(drop)
            return wquery.AndNot(a, b)
    return q


def _positive(q: wquery.Query) -> bool:
    """True when ``q`` matches only documents containing at least one of its own terms."""
    if isinstance(q, wquery.Not):
        return False
    if isinstance(q, (wquery.AndNot, wquery.AndMaybe)):
        return _positive(q.a)
    if isinstance(q, wquery.Or):
        return all(_positive(c) for c in q.subqueries)
    if isinstance(q, wquery.And):
        return any(_positive(c) for c in q.subqueries)
    return True


def check(q: wquery.Query) -> None:
    """Refuse the syntax outside the language (before touching the index)."""
    if not _positive(q):
        raise QueryRefused("a query needs at least one word that is not negated")
    for leaf in q.leaves():
        if isinstance(leaf, wquery.Phrase):
            if len(leaf.words) > MAX_PHRASE_WORDS:
                raise QueryRefused(f"a phrase has {len(leaf.words)} words, limit {MAX_PHRASE_WORDS}")
            if leaf.slop > MAX_SLOP:
                raise QueryRefused(f"phrase slop {leaf.slop} is over the limit of {MAX_SLOP}")
        elif isinstance(leaf, wquery.PatternQuery):
            wildcard = isinstance(leaf, wquery.Wildcard)
            literal = leaf._find_prefix(leaf.text) if wildcard else leaf.text
            shown = repr(leaf.text if wildcard else leaf.text + "*")  # as the user wrote it
            if ":" in literal:
                raise QueryRefused(f"{shown}: fields cannot be searched; search for the words alone")
            if literal and not _LITERAL.match(literal):
                raise QueryRefused(
                    f"{shown}: a wildcard applies to one word: letters or digits before * or ?, "
                    "no punctuation"
                )
            if len(literal) < MIN_WILDCARD_PREFIX:
                raise QueryRefused(
                    f"{shown}: a wildcard needs at least {MIN_WILDCARD_PREFIX} letters before * or ?"
                )
        elif isinstance(leaf, wquery.Every):
            raise QueryRefused(
                f"'*' alone would match every page: a wildcard needs at least {MIN_WILDCARD_PREFIX} letters "
                "before * or ?"
            )
        elif not isinstance(leaf, wquery.Term):
            raise QueryRefused(f"unsupported query element {type(leaf).__name__}")


def _expand(leaf: wquery.PatternQuery, reader: Any) -> wquery.Query:
    field = reader.schema[leaf.fieldname]
    if isinstance(leaf, wquery.Prefix):
        candidates = reader.expand_prefix(leaf.fieldname, leaf.text)
        pattern = None
    else:
        candidates = reader.expand_prefix(leaf.fieldname, leaf._find_prefix(leaf.text))
        pattern = re.compile(leaf._get_pattern())
    terms: list[str] = []
    for scanned, btext in enumerate(candidates, start=1):
        if scanned > MAX_SCAN:
            raise QueryRefused(f"{leaf.text!r} is too broad (over {MAX_SCAN} candidate terms)")
        text = field.from_bytes(btext)
        if pattern is None or pattern.match(text):
            terms.append(text)
            if len(terms) > MAX_EXPANSION:
                raise QueryRefused(
                    f"{leaf.text!r} matches more than {MAX_EXPANSION} terms: make it more specific"
                )
    if not terms:
        return wquery.NullQuery
    return wquery.Or([wquery.Term(leaf.fieldname, t, boost=leaf.boost) for t in terms])


def bound(q: wquery.Query, reader: Any) -> wquery.Query:
    """``q`` with every wildcard replaced by the terms it stands for; refused beyond the cost bounds."""
    if isinstance(q, wquery.PatternQuery):
        return _expand(q, reader)
    return q.apply(lambda child: bound(child, reader))


def count_terms(q: wquery.Query) -> int:
    n = 0
    for leaf in q.leaves():
        n += len(leaf.words) if isinstance(leaf, wquery.Phrase) else 1
    return n


def bounded(q: wquery.Query, reader: Any) -> wquery.Query:
    """Expand ``q`` (see :func:`bound`) and check the total number of posting lists it reads."""
    expanded = bound(q, reader).normalize()
    n = count_terms(expanded)
    if n > MAX_QUERY_TERMS:
        raise QueryRefused(f"the query reads {n} term lists, limit {MAX_QUERY_TERMS}")
    return expanded


def _words(q: wquery.Query) -> dict[tuple[int, int], str]:
    """The query's single words (Term leaves, phrases' words left out) by their span in the query text."""
    spans: dict[tuple[int, int], str] = {}
    for leaf in q.leaves():
        start, end = getattr(leaf, "startchar", None), getattr(leaf, "endchar", None)
        if isinstance(leaf, wquery.Term) and isinstance(start, int) and isinstance(end, int):
            spans.setdefault((start, end), str(leaf.text))
    return spans


def _held(reader: Any, term: str) -> bool:
    """Whether the index holds ``term`` under any of its searched fields."""
    return any(reader.doc_frequency(name, term) for name in ("title", "text") if name in reader.schema)


def unknown_words(q: wquery.Query, reader: Any) -> tuple[str, ...]:
    """The query's words (as indexed: stems) that the index holds under no field, in query order, each once:
    what a suggestion would correct. The broker keeps a suggestion only where every engine asked lacks them
    (a word one engine lacks may be another's)."""
    return tuple(dict.fromkeys(t for _span, t in sorted(_words(q).items()) if not _held(reader, t)))


def suggestion(
    q: wquery.Query, query: str, reader: Any, surface: Any, deadline: float = math.inf
) -> str | None:
    """The "did you mean" of ``query``: the query with each word the index holds under no field replaced by
    the closest one it holds, or None when no word could be corrected.

    First the words one edit from the word as typed (a letter left out, added, changed, or two swapped:
    ``isolaton`` -> ``isolation``, whose stem the typed word's does not reach), the one whose stem the most
    pages hold. Else the index's terms (stems) sharing the first letter and within one edit (words of up to
    four letters) or two of the typed word's stem: the nearest, then the one sharing the longest start with
    it (``bost`` -> ``boost``, not ``best``), then the most frequent, at most :data:`MAX_SCAN` read; and
    ``surface(term, typed)`` writes that stem as the collection does, in the form closest to what was typed.
    In a query of several words, each word's candidates are weighed against the others (:func:`_together`).
    At most :data:`MAX_CORRECTED` words are corrected: a suggestion costs about what a wildcard does, and it
    stops at ``deadline`` (time.monotonic), with the words corrected so far."""
    spans = _words(q)
    known: list[str] = []  # the query's words the index holds: the context of the corrections
    options: dict[tuple[int, int], list[tuple[str, str]]] = {}  # span -> its (word, stem) candidates
    for span, term in sorted(spans.items()):
        if len(options) >= MAX_CORRECTED or time.monotonic() > deadline:
            break
        if _held(reader, term):
            known.append(term)
            continue
        if not MIN_CORRECTED <= len(term) <= MAX_CORRECTED_LETTERS or not _LITERAL.match(term):
            continue
        typed = query[span[0] : span[1]]
        found = _one_edit(reader, typed.lower(), deadline)
        if not found:
            limit = 1 if len(typed) <= 4 else 2
            # the first two letters kept (most typing errors are later), else the first: each scan bounded
            best = _closest(reader, term, term[:2], limit, deadline) or _closest(
                reader, term, term[:1], limit, deadline
            )
            found = [] if best is None else [(surface(best, typed.lower()) or best, best)]
        found = [(word, stem) for word, stem in found if word.lower() != typed.lower()]
        if found:
            options[span] = found
    fixed = _together(reader, options, known, deadline)
    if not fixed:
        return None
    out = query
    for (start, end), word in sorted(fixed.items(), reverse=True):
        out = out[:start] + word + out[end:]
    return out


def _closest(reader: Any, term: str, prefix: str, limit: int, deadline: float) -> str | None:
    """The index term starting with ``prefix`` nearest to ``term`` (at most ``limit`` edits; then the longest
    shared start, then the most frequent), reading at most :data:`MAX_SCAN` terms; None if none is near."""
    best: tuple[int, int, int, str] | None = None
    field = reader.schema["text"]
    for scanned, btext in enumerate(reader.expand_prefix("text", prefix), start=1):
        if scanned > MAX_SCAN or (scanned % 256 == 0 and time.monotonic() > deadline):
            break
        word = field.from_bytes(btext)
        k = distance(word, term, limit=limit)
        if k <= limit:
            pairs = enumerate(zip(word, term, strict=False))
            shared = next((i for i, (x, y) in pairs if x != y), min(len(word), len(term)))
            key = (k, -shared, -reader.doc_frequency("text", word), word)
            if best is None or key < best:
                best = key
    return None if best is None else best[3]


def _one_edit(reader: Any, typed: str, deadline: float) -> list[tuple[str, str]]:
    """Of the words one edit from ``typed`` (letters only; Norvig's candidates, 54 n + 25 at most) whose stems
    the index holds, the best :data:`CANDIDATES` as ``(word, stem)``, one word per stem: the most pages hold
    the stem in their text, then the longer word. The commonest typing errors, two letters swapped and a
    letter doubled or undoubled, count their pages :data:`CLASSIC_TYPO` times."""
    if not typed.isascii() or not typed.isalpha():
        return []
    splits = [(typed[:i], typed[i:]) for i in range(len(typed) + 1)]
    classic = {a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1}
    classic |= {a + b[0] + b for a, b in splits if b}
    classic |= {a + b[1:] for a, b in splits if len(b) > 1 and b[0] == b[1]}
    words = {a + b[1:] for a, b in splits if b}
    words |= {a + c + b[1:] for a, b in splits if b for c in _LETTERS}
    words |= {a + c + b for a, b in splits for c in _LETTERS}
    analyzer = reader.schema["text"].analyzer
    ranked: dict[str, tuple[float, int, str]] = {}  # stem -> (weighted pages, length, word): its best word
    for n, word in enumerate(sorted((words | classic) - {typed})):
        if n % 256 == 255 and time.monotonic() > deadline:
            break
        stems = [t.text for t in analyzer(word)]
        if len(stems) != 1:  # a stop word (or none)
            continue
        df = reader.doc_frequency("text", stems[0])
        # the most pages, then the longer word (a letter left out is likelier than one added: logistc ->
        # logistic, not logist, though both stem alike)
        key = (df * (CLASSIC_TYPO if word in classic else 1.0), len(word), word)
        if df and (stems[0] not in ranked or key[:2] > ranked[stems[0]][:2]):
            ranked[stems[0]] = key
    best = sorted(ranked.items(), key=lambda item: item[1][:2], reverse=True)[:CANDIDATES]
    return [(key[2], stem) for stem, key in best]


def _docs(reader: Any, stem: str) -> frozenset[int]:
    """The first :data:`CONTEXT_POSTINGS` documents holding ``stem`` in their text."""
    out: set[int] = set()
    postings = reader.postings("text", stem) if reader.doc_frequency("text", stem) else None
    while postings is not None and postings.is_active() and len(out) < CONTEXT_POSTINGS:
        out.add(postings.id())
        postings.next()
    return frozenset(out)


def _together(
    reader: Any,
    options: dict[tuple[int, int], list[tuple[str, str]]],
    known: list[str],
    deadline: float,
) -> dict[tuple[int, int], str]:
    """The correction chosen for each word: in a query of several words, the candidate whose
    pages overlap most with the other words' (the sum of the Jaccard similarities of their page sets with
    the known words' and the other words' choices), by two rounds of choosing one word at a time from the
    best-ranked ones; a single word keeps its best-ranked candidate. "gradint bosting": the pages of "boost"
    and "gradient" have a Jaccard similarity of 0.46, those of "best" and "gradient" 0.05 (scikit-learn's and
    dask's docs in one index), so "gradient boosting", though "best" is on 18 times as many pages."""
    chosen = {span: found[0] for span, found in options.items()}  # (word, stem)
    if all(len(found) == 1 for found in options.values()) or len(options) + len(known) < 2:
        return {span: word for span, (word, _stem) in chosen.items()}
    docs: dict[str, frozenset[int]] = {}

    def pages(stem: str) -> frozenset[int]:
        if stem not in docs:
            docs[stem] = _docs(reader, stem)
        return docs[stem]

    def jaccard(a: str, b: str) -> float:
        pa, pb = pages(a), pages(b)
        both = len(pa & pb)
        union = len(pa) + len(pb) - both
        return both / union if union else 0.0

    for _round in range(2):
        for span, found in options.items():
            if len(found) < 2 or time.monotonic() > deadline:
                continue
            others = known + [stem for s2, (_w, stem) in chosen.items() if s2 != span]
            # the largest sum, the better-ranked candidate on a tie
            rank = max(range(len(found)), key=lambda i: (sum(jaccard(found[i][1], o) for o in others), -i))
            chosen[span] = found[rank]
    return {span: word for span, (word, _stem) in chosen.items()}
