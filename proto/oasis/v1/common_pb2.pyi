from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TermStat(_message.Message):
    __slots__ = ("term", "df", "cf")
    TERM_FIELD_NUMBER: _ClassVar[int]
    DF_FIELD_NUMBER: _ClassVar[int]
    CF_FIELD_NUMBER: _ClassVar[int]
    term: str
    df: int
    cf: int
    def __init__(self, term: _Optional[str] = ..., df: _Optional[int] = ..., cf: _Optional[int] = ...) -> None: ...

class TopicSummary(_message.Message):
    __slots__ = ("topic", "documents", "total_terms", "terms", "keywords", "term_filter", "term_filter_hashes", "vocabulary")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_TERMS_FIELD_NUMBER: _ClassVar[int]
    TERMS_FIELD_NUMBER: _ClassVar[int]
    KEYWORDS_FIELD_NUMBER: _ClassVar[int]
    TERM_FILTER_FIELD_NUMBER: _ClassVar[int]
    TERM_FILTER_HASHES_FIELD_NUMBER: _ClassVar[int]
    VOCABULARY_FIELD_NUMBER: _ClassVar[int]
    topic: str
    documents: int
    total_terms: int
    terms: _containers.RepeatedCompositeFieldContainer[TermStat]
    keywords: _containers.RepeatedScalarFieldContainer[str]
    term_filter: bytes
    term_filter_hashes: int
    vocabulary: int
    def __init__(self, topic: _Optional[str] = ..., documents: _Optional[int] = ..., total_terms: _Optional[int] = ..., terms: _Optional[_Iterable[_Union[TermStat, _Mapping]]] = ..., keywords: _Optional[_Iterable[str]] = ..., term_filter: _Optional[bytes] = ..., term_filter_hashes: _Optional[int] = ..., vocabulary: _Optional[int] = ...) -> None: ...
