"""The topic an engine serves: a name, a free-text description and weighted keywords (pure, no grpc)."""

from __future__ import annotations

from dataclasses import dataclass

MAX_NAME_CHARS = 200
MAX_DESCRIPTION_CHARS = 10_000
MAX_KEYWORD_CHARS = 200
MAX_KEYWORDS = 200


class InvalidTopic(ValueError):
    """The topic's name, description or keywords are unusable."""


@dataclass(frozen=True, kw_only=True)
class Topic:
    """A topic profile. ``keywords`` are stripped, de-duplicated (case-insensitively, first spelling kept)."""

    name: str
    description: str = ""
    keywords: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        name = self.name.strip() if isinstance(self.name, str) else ""
        if not name:
            raise InvalidTopic("topic name is empty")
        if len(name) > MAX_NAME_CHARS:
            raise InvalidTopic(f"topic name longer than {MAX_NAME_CHARS} characters")
        if len(self.description) > MAX_DESCRIPTION_CHARS:
            raise InvalidTopic(f"topic description longer than {MAX_DESCRIPTION_CHARS} characters")
        seen: set[str] = set()
        keywords: list[str] = []
        for raw in self.keywords:
            kw = raw.strip()
            if not kw or kw.lower() in seen:
                continue
            if len(kw) > MAX_KEYWORD_CHARS:
                raise InvalidTopic(f"keyword longer than {MAX_KEYWORD_CHARS} characters: {kw[:40]!r}...")
            seen.add(kw.lower())
            keywords.append(kw)
        if len(keywords) > MAX_KEYWORDS:
            raise InvalidTopic(f"more than {MAX_KEYWORDS} keywords")
        if not keywords and not self.description.strip():
            raise InvalidTopic(f"topic {name!r} needs a description or at least one keyword")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "description", self.description.strip())
        object.__setattr__(self, "keywords", tuple(keywords))

    @classmethod
    def parse(cls, name: str, description: str, keywords_csv: str) -> Topic:
        """Build from command-line strings: keywords separated by commas."""
        return cls(name=name, description=description, keywords=tuple(keywords_csv.split(",")))
