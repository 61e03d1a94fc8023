from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class EngineState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ENGINE_STATE_UNSPECIFIED: _ClassVar[EngineState]
    ENGINE_STATE_OK: _ClassVar[EngineState]
    ENGINE_STATE_TIMEOUT: _ClassVar[EngineState]
    ENGINE_STATE_ERROR: _ClassVar[EngineState]
    ENGINE_STATE_SKIPPED: _ClassVar[EngineState]
    ENGINE_STATE_SUSPENDED: _ClassVar[EngineState]
ENGINE_STATE_UNSPECIFIED: EngineState
ENGINE_STATE_OK: EngineState
ENGINE_STATE_TIMEOUT: EngineState
ENGINE_STATE_ERROR: EngineState
ENGINE_STATE_SKIPPED: EngineState
ENGINE_STATE_SUSPENDED: EngineState

class BrokerSearchRequest(_message.Message):
    __slots__ = ("query", "k", "deadline_ms", "max_engines")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    K_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_ENGINES_FIELD_NUMBER: _ClassVar[int]
    query: str
    k: int
    deadline_ms: int
    max_engines: int
    def __init__(self, query: _Optional[str] = ..., k: _Optional[int] = ..., deadline_ms: _Optional[int] = ..., max_engines: _Optional[int] = ...) -> None: ...

class MergedHit(_message.Message):
    __slots__ = ("url", "title", "snippet", "score", "engine", "raw_score")
    URL_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    SNIPPET_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    ENGINE_FIELD_NUMBER: _ClassVar[int]
    RAW_SCORE_FIELD_NUMBER: _ClassVar[int]
    url: str
    title: str
    snippet: str
    score: float
    engine: str
    raw_score: float
    def __init__(self, url: _Optional[str] = ..., title: _Optional[str] = ..., snippet: _Optional[str] = ..., score: _Optional[float] = ..., engine: _Optional[str] = ..., raw_score: _Optional[float] = ...) -> None: ...

class EngineStatus(_message.Message):
    __slots__ = ("name", "state", "message", "latency_ms", "hits", "matches")
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    LATENCY_MS_FIELD_NUMBER: _ClassVar[int]
    HITS_FIELD_NUMBER: _ClassVar[int]
    MATCHES_FIELD_NUMBER: _ClassVar[int]
    name: str
    state: EngineState
    message: str
    latency_ms: float
    hits: int
    matches: int
    def __init__(self, name: _Optional[str] = ..., state: _Optional[_Union[EngineState, str]] = ..., message: _Optional[str] = ..., latency_ms: _Optional[float] = ..., hits: _Optional[int] = ..., matches: _Optional[int] = ...) -> None: ...

class BrokerSearchReply(_message.Message):
    __slots__ = ("hits", "engines", "partial", "took_ms", "suggestion")
    HITS_FIELD_NUMBER: _ClassVar[int]
    ENGINES_FIELD_NUMBER: _ClassVar[int]
    PARTIAL_FIELD_NUMBER: _ClassVar[int]
    TOOK_MS_FIELD_NUMBER: _ClassVar[int]
    SUGGESTION_FIELD_NUMBER: _ClassVar[int]
    hits: _containers.RepeatedCompositeFieldContainer[MergedHit]
    engines: _containers.RepeatedCompositeFieldContainer[EngineStatus]
    partial: bool
    took_ms: float
    suggestion: str
    def __init__(self, hits: _Optional[_Iterable[_Union[MergedHit, _Mapping]]] = ..., engines: _Optional[_Iterable[_Union[EngineStatus, _Mapping]]] = ..., partial: _Optional[bool] = ..., took_ms: _Optional[float] = ..., suggestion: _Optional[str] = ...) -> None: ...
