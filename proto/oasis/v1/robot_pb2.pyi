from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class StartRequest(_message.Message):
    __slots__ = ("seeds", "max_pages")
    SEEDS_FIELD_NUMBER: _ClassVar[int]
    MAX_PAGES_FIELD_NUMBER: _ClassVar[int]
    seeds: _containers.RepeatedScalarFieldContainer[str]
    max_pages: int
    def __init__(self, seeds: _Optional[_Iterable[str]] = ..., max_pages: _Optional[int] = ...) -> None: ...

class StopRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class StatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RobotStatus(_message.Message):
    __slots__ = ("state", "pages_fetched", "pages_indexed", "frontier_size", "recrawl_queue", "in_flight", "concurrency", "errors", "harvest_rate", "recall_estimate", "response_queue", "policy", "recrawls", "changes_seen", "not_modified", "pages_per_second", "freshness_estimate", "budget_per_second", "links_skipped")
    class ErrorsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    class LinksSkippedEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    STATE_FIELD_NUMBER: _ClassVar[int]
    PAGES_FETCHED_FIELD_NUMBER: _ClassVar[int]
    PAGES_INDEXED_FIELD_NUMBER: _ClassVar[int]
    FRONTIER_SIZE_FIELD_NUMBER: _ClassVar[int]
    RECRAWL_QUEUE_FIELD_NUMBER: _ClassVar[int]
    IN_FLIGHT_FIELD_NUMBER: _ClassVar[int]
    CONCURRENCY_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    HARVEST_RATE_FIELD_NUMBER: _ClassVar[int]
    RECALL_ESTIMATE_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_QUEUE_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    RECRAWLS_FIELD_NUMBER: _ClassVar[int]
    CHANGES_SEEN_FIELD_NUMBER: _ClassVar[int]
    NOT_MODIFIED_FIELD_NUMBER: _ClassVar[int]
    PAGES_PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    FRESHNESS_ESTIMATE_FIELD_NUMBER: _ClassVar[int]
    BUDGET_PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    LINKS_SKIPPED_FIELD_NUMBER: _ClassVar[int]
    state: str
    pages_fetched: int
    pages_indexed: int
    frontier_size: int
    recrawl_queue: int
    in_flight: int
    concurrency: int
    errors: _containers.ScalarMap[str, int]
    harvest_rate: float
    recall_estimate: float
    response_queue: int
    policy: str
    recrawls: int
    changes_seen: int
    not_modified: int
    pages_per_second: float
    freshness_estimate: float
    budget_per_second: float
    links_skipped: _containers.ScalarMap[str, int]
    def __init__(self, state: _Optional[str] = ..., pages_fetched: _Optional[int] = ..., pages_indexed: _Optional[int] = ..., frontier_size: _Optional[int] = ..., recrawl_queue: _Optional[int] = ..., in_flight: _Optional[int] = ..., concurrency: _Optional[int] = ..., errors: _Optional[_Mapping[str, int]] = ..., harvest_rate: _Optional[float] = ..., recall_estimate: _Optional[float] = ..., response_queue: _Optional[int] = ..., policy: _Optional[str] = ..., recrawls: _Optional[int] = ..., changes_seen: _Optional[int] = ..., not_modified: _Optional[int] = ..., pages_per_second: _Optional[float] = ..., freshness_estimate: _Optional[float] = ..., budget_per_second: _Optional[float] = ..., links_skipped: _Optional[_Mapping[str, int]] = ...) -> None: ...
