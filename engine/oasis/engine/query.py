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

import re
from typing import Any

from whoosh import qparser
from whoosh import query as wquery

MIN_WILDCARD_PREFIX = 2
MAX_EXPANSION = 64  # terms one wildcard may stand for
MAX_SCAN = 20_000  # term-list entries one wildcard may look at to find them
MAX_PHRASE_WORDS = 16
MAX_SLOP = 10
MAX_QUERY_TERMS = 128  # leaf (field, term) pairs after expansion
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
