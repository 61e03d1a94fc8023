"""Metrics, JSON logs, snippets for terminals and export writers: the parts, with real servers where there is
one (a real engine servicer behind the real service runtime on loopback, scraped over HTTP)."""

from __future__ import annotations

import argparse
import gzip
import io
import json
import logging
import math
import sys
from pathlib import Path
from typing import Any

import grpc
import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from oasis.engine.config import EngineConfig
from oasis.engine.index import TopicIndex
from oasis.engine.servicer import EngineServicer, add_engine_servicer
from oasis.engine.topic import Topic
from oasis.runtime.clients import EngineClient, IndexDocument
from oasis.runtime.errors import ServiceError
from oasis.runtime.files import read_json
from oasis.runtime.highlight import BOLD, NORMAL, parse_snippet, terminal_safe, terminal_snippet
from oasis.runtime.logs import JsonFormatter
from oasis.runtime.metrics import REGISTRY, metrics_port, split_method
from oasis.runtime.service import RunningServer, ServerConfig, build_server
from oasis.v1 import engine_pb2, engine_pb2_grpc


def scrape(address: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """``{(sample name, sorted labels): value}`` of a live /metrics page."""
    reply = requests.get(f"http://{address}/metrics", timeout=5)
    assert reply.status_code == 200
    out = {}
    for family in text_string_to_metric_families(reply.text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def sample(samples: dict[Any, float], name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


TOPIC = Topic.parse("astronomy", "stars and telescopes", "star,telescope,galaxy")


@pytest.fixture
def engine(tmp_path: Path) -> Any:
    index = TopicIndex.open(tmp_path / "index", TOPIC)
    config = EngineConfig(name="astro", topic=TOPIC, index_dir=tmp_path / "index")
    servicer = EngineServicer(index, config)
    running = build_server(
        ServerConfig(metrics_port=0, address_file=tmp_path / "addr.json", not_serving_seconds=0),
        lambda s: add_engine_servicer(s, servicer),
    )
    yield running, index, tmp_path / "addr.json"
    running.stop(0)
    index.close()


def test_interceptor_counts_calls_by_method_and_code_and_times_them(engine: Any) -> None:
    running, _index, address_file = engine
    assert isinstance(running, RunningServer) and running.metrics is not None
    info = read_json(address_file)
    assert info["metrics"] == running.metrics.address and info["address"] == running.address
    before = scrape(running.metrics.address)
    client = EngineClient(running.address)
    try:
        docs = [
            IndexDocument(url=f"http://sky.test/{i}", title=f"star {i}", text="a telescope sees a galaxy")
            for i in range(5)
        ]
        assert client.index(docs).added == 5
        assert client.start_search("telescope", 10, 5.0).result().hits
        assert client.start_search("galaxy", 10, 5.0).result().hits
        with pytest.raises(ServiceError, match="INVALID_ARGUMENT"):
            client.start_search("", 10, 5.0).result()
        assert len(list(client.export())) == 5
    finally:
        client.close()
    after = scrape(running.metrics.address)

    def moved(name: str, **labels: str) -> float:
        return sample(after, name, **labels) - sample(before, name, **labels)

    engine_search = {"service": "oasis.v1.Engine", "method": "Search"}
    assert moved("oasis_rpc_server_handled_total", **engine_search, code="OK") == 2
    assert moved("oasis_rpc_server_handled_total", **engine_search, code="INVALID_ARGUMENT") == 1
    assert moved("oasis_rpc_server_handling_seconds_count", **engine_search) == 3
    assert moved("oasis_rpc_server_handling_seconds_sum", **engine_search) > 0
    # streams: the bidirectional Index and the server-streaming Export
    assert moved("oasis_rpc_server_handled_total", service="oasis.v1.Engine", method="Index", code="OK") == 1
    assert moved("oasis_rpc_server_handled_total", service="oasis.v1.Engine", method="Export", code="OK") == 1
    # the servicer's own counters (module-level, so any engine in this process moves them)
    assert moved("oasis_engine_index_operations_total", op="added") == 5
    assert moved("oasis_engine_index_batches_total") == 1


def test_a_server_without_metrics_port_has_no_exposition_and_no_interceptor(tmp_path: Path) -> None:
    index = TopicIndex.in_memory(TOPIC)
    config = EngineConfig(name="astro", topic=TOPIC, index_dir=tmp_path)
    running = build_server(
        ServerConfig(address_file=tmp_path / "a.json", not_serving_seconds=0),
        lambda s: add_engine_servicer(s, EngineServicer(index, config)),
    )
    try:
        assert running.metrics is None
        assert "metrics" not in read_json(tmp_path / "a.json")
        labels = {"service": "oasis.v1.Engine", "method": "GetTopic", "code": "OK"}
        before = REGISTRY.get_sample_value("oasis_rpc_server_handled_total", labels) or 0.0
        with grpc.insecure_channel(running.address) as channel:
            engine_pb2_grpc.EngineStub(channel).GetTopic(engine_pb2.GetTopicRequest(), timeout=5)
        assert (REGISTRY.get_sample_value("oasis_rpc_server_handled_total", labels) or 0.0) == before
    finally:
        running.stop(0)


def test_metrics_server_stops_with_the_service(tmp_path: Path) -> None:
    index = TopicIndex.in_memory(TOPIC)
    config = EngineConfig(name="astro", topic=TOPIC, index_dir=tmp_path)
    running = build_server(
        ServerConfig(metrics_port=0, not_serving_seconds=0),
        lambda s: add_engine_servicer(s, EngineServicer(index, config)),
    )
    assert running.metrics is not None
    address = running.metrics.address
    assert scrape(address)
    running.stop(0)
    with pytest.raises(requests.ConnectionError):
        requests.get(f"http://{address}/metrics", timeout=2)


def test_export_streams_a_snapshot_and_refuses_a_negative_limit(engine: Any) -> None:
    running, index, _ = engine
    client = EngineClient(running.address)
    try:
        client.index([IndexDocument(url=f"http://sky.test/{i}", title="t", text="star") for i in range(30)])
        stream = client.export()
        first = next(stream)
        # commits during the stream are not seen: the snapshot was taken at the call
        late = [IndexDocument(url=f"http://sky.test/late{i}", title="t", text="star") for i in range(5)]
        client.index(late)
        rest = list(stream)
        urls = {first.url, *(d.url for d in rest)}
        assert urls == {f"http://sky.test/{i}" for i in range(30)}
        assert all(d.relevance is not None and 0 <= d.relevance <= 1 for d in rest)
        assert len(list(client.export(limit=7))) == 7
        assert len(list(client.export())) == 35
    finally:
        client.close()
    with grpc.insecure_channel(running.address) as channel:
        stub = engine_pb2_grpc.EngineStub(channel)
        with pytest.raises(grpc.RpcError) as err:
            list(stub.Export(engine_pb2.ExportRequest(limit=-1), timeout=5))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert index.stats().documents == 35


def test_metrics_port_flag() -> None:
    assert metrics_port("0") == 0
    assert metrics_port("9100") == 9100
    assert metrics_port("off") is None and metrics_port("-1") is None
    for bad in ("70000", "x", "-5"):
        with pytest.raises(argparse.ArgumentTypeError):
            metrics_port(bad)
    assert split_method("/oasis.v1.Engine/Search") == ("oasis.v1.Engine", "Search")
    with pytest.raises(ValueError, match="metrics_port"):
        ServerConfig(metrics_port=70000)


def test_json_log_lines_carry_the_fields_and_the_traceback() -> None:
    formatter = JsonFormatter(service="engine-a")
    logger = logging.getLogger("oasis.test.json")
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        record = logger.makeRecord(
            "oasis.test.json", logging.ERROR, __file__, 1, "failed %d times", (3,), sys.exc_info(),
            extra={"fields": {"pages": 12, "msg": "must not replace msg"}},
        )  # fmt: skip
    line = formatter.format(record)
    assert "\n" not in line
    entry = json.loads(line)
    assert entry["level"] == "ERROR" and entry["logger"] == "oasis.test.json"
    assert entry["msg"] == "failed 3 times" and entry["service"] == "engine-a"
    assert entry["pages"] == 12
    assert "RuntimeError: boom" in entry["exc"]
    assert entry["ts"].endswith("+00:00") and "T" in entry["ts"]


def test_snippet_to_plain_text_spans_and_terminal_bold() -> None:
    snippet = "x &lt;b&gt; &amp; <b>SQL</b> tables ... <b>index</b>"
    text, spans = parse_snippet(snippet)
    assert text == "x <b> & SQL tables ... index"  # the page's own "<b>" is text, not a tag
    assert [text[a:b] for a, b in spans] == ["SQL", "index"]
    bold = terminal_snippet(snippet, bold=True)
    assert bold == f"x <b> & {BOLD}SQL{NORMAL} tables ... {BOLD}index{NORMAL}"
    assert terminal_snippet(snippet, bold=False) == text
    # unbalanced tags: an unclosed <b> runs to the end, a stray </b> is ignored
    assert parse_snippet("a</b> <b>b c") == ("a b c", [(2, 5)])
    # a crawled page cannot send escape sequences to the terminal
    assert terminal_safe("evil\x1b[2J\x9b31m\ttab\nline") == "evil[2J31m tab line"
    assert "\x1b" not in terminal_snippet("<b>x</b>\x1b]0;title\x07", bold=False)


@pytest.mark.parametrize(
    ("name", "given", "wanted"),
    [
        ("a.jsonl", None, "jsonl"),
        ("a.jsonl.gz", None, "jsonl"),
        ("a.warc", None, "warc"),
        ("a.WARC.GZ", None, "warc"),
        ("dump", None, "jsonl"),
        ("dump", "warc", "warc"),
        ("a.warc.gz", "warc", "warc"),
        ("a.warc.gz", "jsonl", "names a WARC file but --format is jsonl"),
        ("a.jsonl", "warc", "names a JSONL file but --format is warc"),
        ("a.json", "warc", "names a JSONL file but --format is warc"),
        ("a.txt", "csv", "format must be one of"),
    ],
)
def test_the_export_format_follows_the_file_name_unless_given(
    name: str, given: str | None, wanted: str
) -> None:
    from oasis.cluster.export import format_for

    if " " not in wanted:
        assert format_for(Path(name), given) == wanted
    else:
        with pytest.raises(ValueError, match=wanted):
            format_for(Path(name), given)


def test_an_export_reads_back_as_the_documents_it_holds(tmp_path: Path) -> None:
    """``oasis index`` of an export restores its documents (the engine rescores them): JSONL and WARC, gzipped
    or not; lines that hold no document and a gzip stream cut short are skipped with a note, and what was
    read before is kept."""
    from oasis.cluster.export import is_export, read_export, write_jsonl, write_warc

    docs = [
        IndexDocument(url="http://a.test/1", title="Un été", text="straße & <tags>\nline", fetch_time=1.7e9,
                      relevance=0.5),
        IndexDocument(url="http://a.test/2", title="", text="", fetch_time=1.6e9, relevance=0.0),
    ]  # fmt: skip
    wanted = [IndexDocument(url=d.url, title=d.title, text=d.text, fetch_time=d.fetch_time) for d in docs]
    for name in ("x.jsonl", "x.jsonl.gz", "x.warc", "x.warc.gz"):
        path = tmp_path / name
        raw = io.BytesIO()
        if ".warc" in name:
            write_warc(raw, docs, "topic", compress=name.endswith(".gz"))
            data = raw.getvalue()
        else:
            write_jsonl(raw, docs, "topic")
            data = gzip.compress(raw.getvalue()) if name.endswith(".gz") else raw.getvalue()
        path.write_bytes(data)
        assert is_export(path)
        assert list(read_export(path)) == wanted, name
    assert not is_export(tmp_path / "page.html") and not is_export(tmp_path / "x.json")
    damaged = tmp_path / "damaged.jsonl.gz"
    lines = [
        json.dumps({"url": d.url, "title": d.title, "text": d.text, "fetch_time": d.fetch_time}) for d in docs
    ]
    body = (
        "\n".join([lines[0], "{not json", json.dumps({"title": "no url"}), json.dumps([1]), lines[1]]) + "\n"
    )
    damaged.write_bytes(gzip.compress(body.encode())[:-12])  # the stream's end cut off
    notes: list[str] = []
    got = list(read_export(damaged, notes))
    assert got[0] == wanted[0] and len(got) <= 2
    assert [n.split(": no document")[0] for n in notes[:3]] == [f"{damaged} line {k}" for k in (2, 3, 4)]
    assert notes[-1].startswith(f"{damaged}: cannot read on (EOFError")


def test_export_writers_round_trip_through_warcio_and_json(tmp_path: Path) -> None:
    from warcio.archiveiterator import ArchiveIterator

    from oasis.cluster.export import WARC_CONTENT_TYPE, write_jsonl, write_warc

    docs = [
        IndexDocument(url="http://a.test/1", title="Un été", text="straße & <tags>\nline", fetch_time=1.7e9,
                      relevance=0.5),
        IndexDocument(url="http://a.test/2", title="", text="", fetch_time=0.0, relevance=0.0),
    ]  # fmt: skip
    buf = io.BytesIO()
    assert write_jsonl(buf, docs, "topic") == 2
    lines = [json.loads(line) for line in buf.getvalue().decode().splitlines()]
    assert [(d["url"], d["title"], d["text"], d["fetch_time"], d["relevance"]) for d in lines] == [
        (d.url, d.title, d.text, d.fetch_time, d.relevance) for d in docs
    ]
    assert lines[0]["fetch_date"] == "2023-11-14T22:13:20Z"
    for gz in (True, False):
        buf = io.BytesIO()
        assert write_warc(buf, docs, "topic", compress=gz) == 2
        data = buf.getvalue()
        assert (data[:2] == b"\x1f\x8b") == gz
        if gz:
            gzip.decompress(data)  # every record is a complete gzip member
        records = [
            (r.rec_type, r.rec_headers.get_header("WARC-Target-URI"), r.rec_headers.get_header("Oasis-Title"),
             r.rec_headers.get_header("Content-Type"), r.content_stream().read().decode("utf-8"))
            for r in ArchiveIterator(io.BytesIO(data))
        ]  # fmt: skip
        assert records[0][0] == "warcinfo"
        assert records[1:] == [("resource", d.url, d.title, WARC_CONTENT_TYPE, d.text) for d in docs]


def _status(state: str, pages: int, kinds: dict[str, int], freshness: float = 0.0) -> Any:
    from oasis.robot.crawler import CrawlStatus

    return CrawlStatus(
        state=state, pages_fetched=pages, pages_indexed=pages // 2, frontier_size=7, recrawl_size=3,
        in_flight=0, concurrency=2, response_queue=0, errors={}, harvest_rate=0.4, recall_estimate=0.25,
        policy="whittle", elapsed=1.0, pages_per_second=1.0, kinds=kinds, freshness_estimate=freshness,
    )  # fmt: skip


def test_the_freshness_metric_is_the_status_estimate_and_nan_without_one() -> None:
    """The gauge is the robot's own F estimate (the one Robot.Status and `oasis status` give), not the share
    of re-fetches that found the page unchanged (3 of 4 here), which it was before session 30."""
    from oasis.robot.metrics import freshness_estimate, status_families

    def families(status: Any) -> dict[str, Any]:
        return {
            f.name: f
            for f in status_families("r", status, bytes_fetched=100, relevance_sum=2.0, pages_ok=5)
        }

    refetched = _status("running", 9, {"new": 5, "unchanged": 3, "modified": 1}, freshness=0.6)
    assert freshness_estimate(refetched) == 0.6
    assert families(refetched)["oasis_robot_freshness_estimate"].samples[0].value == 0.6
    # no estimate (a robot that does not re-crawl says 0): a gap in a chart, not a made-up 0 or 1
    none = _status("running", 9, {"new": 5})
    assert freshness_estimate(none) is None
    assert math.isnan(families(none)["oasis_robot_freshness_estimate"].samples[0].value)
    assert families(none)["oasis_robot_recrawls"].samples[0].value == 0
    assert families(none)["oasis_robot_recall_estimate"].samples[0].value == 0.25


def test_progress_line_rate_fields_and_quiet_when_the_robot_is_not_running(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from oasis.robot.metrics import ProgressLog

    now = [0.0]
    statuses = iter(
        [
            _status("running", 0, {}),
            _status("running", 50, {"new": 50}),
            _status("done", 80, {"new": 70, "unchanged": 9, "modified": 1}, freshness=0.9),
            _status("done", 80, {"new": 70, "unchanged": 9, "modified": 1}, freshness=0.9),
        ]
    )
    progress = ProgressLog("robot-x", lambda: next(statuses), 10.0, clock=lambda: now[0])
    progress.fields()  # the baseline
    caplog.set_level(logging.INFO, logger="oasis.robot.metrics")
    now[0] = 10.0
    first = progress.log()
    assert first is not None and first["rate"] == 5.0 and first["pages"] == 50
    now[0] = 20.0
    done = progress.log()
    assert done is not None and done["state"] == "done" and done["freshness_est"] == 0.9
    now[0] = 30.0
    assert progress.log() is None  # still done: no repeated line
    lines = [r for r in caplog.records if r.getMessage().startswith("progress robot-x")]
    assert len(lines) == 2
    assert "50 pages (5.0/s)" in lines[0].getMessage() and "R~0.250" in lines[0].getMessage()
    assert lines[1].fields["state"] == "done"  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="> 0"):
        ProgressLog("r", lambda: _status("idle", 0, {}), 0)


def test_a_crawls_warc_reads_back_as_the_replay_reads_it(tmp_path: Path) -> None:
    """``oasis index`` of a crawl's WARC takes the pages the replay's loader takes (one rule,
    ``web.corpus.warc_html_response``): 2xx HTML responses, decoded by their header's charset, URLs
    canonical; redirects and images are no documents."""
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    from oasis.cluster.export import read_export

    records = [
        ("http://ru.test/a?b=1&a=2", "200 OK", "<title>База</title><p>данных</p>".encode("cp1251"),
         "text/html; charset=windows-1251"),
        ("http://ru.test/moved", "301 Moved", b"", "text/html"),
        ("http://ru.test/logo.png", "200 OK", b"\x89PNG", "image/png"),
    ]  # fmt: skip
    path = tmp_path / "crawl.warc.gz"
    with path.open("wb") as out:
        writer = WARCWriter(out, gzip=True)
        for url, status, body, ctype in records:
            headers = StatusAndHeaders(status, [("Content-Type", ctype)], protocol="HTTP/1.1")
            writer.write_record(
                writer.create_warc_record(
                    url, "response", payload=io.BytesIO(body), length=len(body), http_headers=headers
                )
            )
    (doc,) = read_export(path)
    assert (doc.url, doc.title, doc.text) == ("http://ru.test/a?a=2&b=1", "База", "данных")
