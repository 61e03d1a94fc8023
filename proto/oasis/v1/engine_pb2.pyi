from oasis.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Topic(_message.Message):
    __slots__ = ("name", "description", "keywords")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    KEYWORDS_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    keywords: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., keywords: _Optional[_Iterable[str]] = ...) -> None: ...

class Document(_message.Message):
    __slots__ = ("url", "title", "text", "fetch_time", "has_relevance", "relevance")
    URL_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    FETCH_TIME_FIELD_NUMBER: _ClassVar[int]
    HAS_RELEVANCE_FIELD_NUMBER: _ClassVar[int]
    RELEVANCE_FIELD_NUMBER: _ClassVar[int]
    url: str
    title: str
    text: str
    fetch_time: float
    has_relevance: bool
    relevance: float
    def __init__(self, url: _Optional[str] = ..., title: _Optional[str] = ..., text: _Optional[str] = ..., fetch_time: _Optional[float] = ..., has_relevance: _Optional[bool] = ..., relevance: _Optional[float] = ...) -> None: ...

class IndexRequest(_message.Message):
    __slots__ = ("seq", "upsert", "delete_url", "flush")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    UPSERT_FIELD_NUMBER: _ClassVar[int]
    DELETE_URL_FIELD_NUMBER: _ClassVar[int]
    FLUSH_FIELD_NUMBER: _ClassVar[int]
    seq: int
    upsert: Document
    delete_url: str
    flush: bool
    def __init__(self, seq: _Optional[int] = ..., upsert: _Optional[_Union[Document, _Mapping]] = ..., delete_url: _Optional[str] = ..., flush: _Optional[bool] = ...) -> None: ...

class RejectedOp(_message.Message):
    __slots__ = ("seq", "url", "reason")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    seq: int
    url: str
    reason: str
    def __init__(self, seq: _Optional[int] = ..., url: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class IndexAck(_message.Message):
    __slots__ = ("acked_through", "added", "replaced", "deleted", "rejected")
    ACKED_THROUGH_FIELD_NUMBER: _ClassVar[int]
    ADDED_FIELD_NUMBER: _ClassVar[int]
    REPLACED_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    acked_through: int
    added: int
    replaced: int
    deleted: int
    rejected: _containers.RepeatedCompositeFieldContainer[RejectedOp]
    def __init__(self, acked_through: _Optional[int] = ..., added: _Optional[int] = ..., replaced: _Optional[int] = ..., deleted: _Optional[int] = ..., rejected: _Optional[_Iterable[_Union[RejectedOp, _Mapping]]] = ...) -> None: ...

class DeleteRequest(_message.Message):
    __slots__ = ("urls",)
    URLS_FIELD_NUMBER: _ClassVar[int]
    urls: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, urls: _Optional[_Iterable[str]] = ...) -> None: ...

class DeleteReply(_message.Message):
    __slots__ = ("deleted",)
    DELETED_FIELD_NUMBER: _ClassVar[int]
    deleted: int
    def __init__(self, deleted: _Optional[int] = ...) -> None: ...

class SearchRequest(_message.Message):
    __slots__ = ("query", "limit", "offset", "suggest")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    SUGGEST_FIELD_NUMBER: _ClassVar[int]
    query: str
    limit: int
    offset: int
    suggest: bool
    def __init__(self, query: _Optional[str] = ..., limit: _Optional[int] = ..., offset: _Optional[int] = ..., suggest: _Optional[bool] = ...) -> None: ...

class Hit(_message.Message):
    __slots__ = ("url", "title", "snippet", "score", "relevance", "fetch_time")
    URL_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    SNIPPET_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    RELEVANCE_FIELD_NUMBER: _ClassVar[int]
    FETCH_TIME_FIELD_NUMBER: _ClassVar[int]
    url: str
    title: str
    snippet: str
    score: float
    relevance: float
    fetch_time: float
    def __init__(self, url: _Optional[str] = ..., title: _Optional[str] = ..., snippet: _Optional[str] = ..., score: _Optional[float] = ..., relevance: _Optional[float] = ..., fetch_time: _Optional[float] = ...) -> None: ...

class SearchReply(_message.Message):
    __slots__ = ("hits", "total", "engine", "max_score", "suggestion", "suggestion_matches", "unknown")
    HITS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    ENGINE_FIELD_NUMBER: _ClassVar[int]
    MAX_SCORE_FIELD_NUMBER: _ClassVar[int]
    SUGGESTION_FIELD_NUMBER: _ClassVar[int]
    SUGGESTION_MATCHES_FIELD_NUMBER: _ClassVar[int]
    UNKNOWN_FIELD_NUMBER: _ClassVar[int]
    hits: _containers.RepeatedCompositeFieldContainer[Hit]
    total: int
    engine: str
    max_score: float
    suggestion: str
    suggestion_matches: int
    unknown: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, hits: _Optional[_Iterable[_Union[Hit, _Mapping]]] = ..., total: _Optional[int] = ..., engine: _Optional[str] = ..., max_score: _Optional[float] = ..., suggestion: _Optional[str] = ..., suggestion_matches: _Optional[int] = ..., unknown: _Optional[_Iterable[str]] = ...) -> None: ...

class PageText(_message.Message):
    __slots__ = ("title", "text")
    TITLE_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    title: str
    text: str
    def __init__(self, title: _Optional[str] = ..., text: _Optional[str] = ...) -> None: ...

class ScoreRequest(_message.Message):
    __slots__ = ("pages",)
    PAGES_FIELD_NUMBER: _ClassVar[int]
    pages: _containers.RepeatedCompositeFieldContainer[PageText]
    def __init__(self, pages: _Optional[_Iterable[_Union[PageText, _Mapping]]] = ...) -> None: ...

class ScoreReply(_message.Message):
    __slots__ = ("relevance", "model_documents", "model")
    RELEVANCE_FIELD_NUMBER: _ClassVar[int]
    MODEL_DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    relevance: _containers.RepeatedScalarFieldContainer[float]
    model_documents: int
    model: str
    def __init__(self, relevance: _Optional[_Iterable[float]] = ..., model_documents: _Optional[int] = ..., model: _Optional[str] = ...) -> None: ...

class GetTopicRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class StatsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class StatsReply(_message.Message):
    __slots__ = ("engine", "topic", "documents", "last_commit", "index_bytes")
    ENGINE_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    LAST_COMMIT_FIELD_NUMBER: _ClassVar[int]
    INDEX_BYTES_FIELD_NUMBER: _ClassVar[int]
    engine: str
    topic: str
    documents: int
    last_commit: float
    index_bytes: int
    def __init__(self, engine: _Optional[str] = ..., topic: _Optional[str] = ..., documents: _Optional[int] = ..., last_commit: _Optional[float] = ..., index_bytes: _Optional[int] = ...) -> None: ...

class SummaryRequest(_message.Message):
    __slots__ = ("max_terms",)
    MAX_TERMS_FIELD_NUMBER: _ClassVar[int]
    max_terms: int
    def __init__(self, max_terms: _Optional[int] = ...) -> None: ...

class ListDocumentsRequest(_message.Message):
    __slots__ = ("after", "limit")
    AFTER_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    after: str
    limit: int
    def __init__(self, after: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class DocumentInfo(_message.Message):
    __slots__ = ("url", "title", "fetch_time", "relevance")
    URL_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    FETCH_TIME_FIELD_NUMBER: _ClassVar[int]
    RELEVANCE_FIELD_NUMBER: _ClassVar[int]
    url: str
    title: str
    fetch_time: float
    relevance: float
    def __init__(self, url: _Optional[str] = ..., title: _Optional[str] = ..., fetch_time: _Optional[float] = ..., relevance: _Optional[float] = ...) -> None: ...

class ListDocumentsReply(_message.Message):
    __slots__ = ("documents", "more")
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    MORE_FIELD_NUMBER: _ClassVar[int]
    documents: _containers.RepeatedCompositeFieldContainer[DocumentInfo]
    more: bool
    def __init__(self, documents: _Optional[_Iterable[_Union[DocumentInfo, _Mapping]]] = ..., more: _Optional[bool] = ...) -> None: ...

class ExportRequest(_message.Message):
    __slots__ = ("limit",)
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    limit: int
    def __init__(self, limit: _Optional[int] = ...) -> None: ...
