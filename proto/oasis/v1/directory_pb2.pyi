from oasis.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class EngineInfo(_message.Message):
    __slots__ = ("name", "address", "summary")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    name: str
    address: str
    summary: _common_pb2.TopicSummary
    def __init__(self, name: _Optional[str] = ..., address: _Optional[str] = ..., summary: _Optional[_Union[_common_pb2.TopicSummary, _Mapping]] = ...) -> None: ...

class RegisterRequest(_message.Message):
    __slots__ = ("engine", "owner")
    ENGINE_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    engine: EngineInfo
    owner: str
    def __init__(self, engine: _Optional[_Union[EngineInfo, _Mapping]] = ..., owner: _Optional[str] = ...) -> None: ...

class RegisterReply(_message.Message):
    __slots__ = ("lease_seconds",)
    LEASE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    lease_seconds: float
    def __init__(self, lease_seconds: _Optional[float] = ...) -> None: ...

class HeartbeatRequest(_message.Message):
    __slots__ = ("name", "summary", "owner")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    name: str
    summary: _common_pb2.TopicSummary
    owner: str
    def __init__(self, name: _Optional[str] = ..., summary: _Optional[_Union[_common_pb2.TopicSummary, _Mapping]] = ..., owner: _Optional[str] = ...) -> None: ...

class HeartbeatReply(_message.Message):
    __slots__ = ("known", "lease_seconds")
    KNOWN_FIELD_NUMBER: _ClassVar[int]
    LEASE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    known: bool
    lease_seconds: float
    def __init__(self, known: _Optional[bool] = ..., lease_seconds: _Optional[float] = ...) -> None: ...

class DeregisterRequest(_message.Message):
    __slots__ = ("name", "owner")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    name: str
    owner: str
    def __init__(self, name: _Optional[str] = ..., owner: _Optional[str] = ...) -> None: ...

class DeregisterReply(_message.Message):
    __slots__ = ("removed",)
    REMOVED_FIELD_NUMBER: _ClassVar[int]
    removed: bool
    def __init__(self, removed: _Optional[bool] = ...) -> None: ...

class RouteRequest(_message.Message):
    __slots__ = ("query", "k")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    K_FIELD_NUMBER: _ClassVar[int]
    query: str
    k: int
    def __init__(self, query: _Optional[str] = ..., k: _Optional[int] = ...) -> None: ...

class RoutedEngine(_message.Message):
    __slots__ = ("name", "address", "score")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    name: str
    address: str
    score: float
    def __init__(self, name: _Optional[str] = ..., address: _Optional[str] = ..., score: _Optional[float] = ...) -> None: ...

class RouteReply(_message.Message):
    __slots__ = ("engines", "skipped", "omitted", "skipped_engines")
    ENGINES_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_FIELD_NUMBER: _ClassVar[int]
    OMITTED_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_ENGINES_FIELD_NUMBER: _ClassVar[int]
    engines: _containers.RepeatedCompositeFieldContainer[RoutedEngine]
    skipped: _containers.RepeatedScalarFieldContainer[str]
    omitted: _containers.RepeatedScalarFieldContainer[str]
    skipped_engines: _containers.RepeatedCompositeFieldContainer[RoutedEngine]
    def __init__(self, engines: _Optional[_Iterable[_Union[RoutedEngine, _Mapping]]] = ..., skipped: _Optional[_Iterable[str]] = ..., omitted: _Optional[_Iterable[str]] = ..., skipped_engines: _Optional[_Iterable[_Union[RoutedEngine, _Mapping]]] = ...) -> None: ...

class ListEnginesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListEnginesReply(_message.Message):
    __slots__ = ("engines",)
    ENGINES_FIELD_NUMBER: _ClassVar[int]
    engines: _containers.RepeatedCompositeFieldContainer[EngineInfo]
    def __init__(self, engines: _Optional[_Iterable[_Union[EngineInfo, _Mapping]]] = ...) -> None: ...
