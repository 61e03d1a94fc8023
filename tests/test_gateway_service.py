"""The gateway as a real uvicorn process started by `oasis up`, in front of a real broker and two real engines
(the ``gateway_cluster`` fixture): every endpoint, hostile input to each, a dead broker and its recovery."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from xml.etree import ElementTree

import pytest
import requests
from gateway_testcluster import DB_SUBJECTS, HOSTILE_URL, GatewayCluster, oasis

from oasis.runtime.clients import BrokerClient

ENDPOINTS = ("/", "/search", "/opensearch.xml", "/status", "/healthz", "/metrics")
INJECTION = "\"><script>alert('q')</script><img src=x onerror=alert(1)>"


def get(cluster: GatewayCluster, path: str, **kwargs: object) -> requests.Response:
    return requests.get(cluster.gateway + path, timeout=10, **kwargs)  # type: ignore[arg-type]


def test_oasis_status_lists_the_gateway(gateway_cluster: GatewayCluster) -> None:
    out = oasis(gateway_cluster.state, "status", "--json").stdout
    (row,) = [s for s in json.loads(out)["services"] if s["kind"] == "gateway"]
    assert row["name"] == "gateway" and row["health"] == "SERVING"
    assert re.fullmatch(r"127\.0\.0\.1:\d+", row["address"])
    assert gateway_cluster.gateway == f"http://{row['address']}"


def test_json_search_matches_a_direct_broker_call(gateway_cluster: GatewayCluster) -> None:
    reply = get(gateway_cluster, "/search", params={"q": "table index", "format": "json"})
    assert reply.status_code == 200 and reply.headers["content-type"] == "application/json"
    data = reply.json()
    assert data["query"] == "table index" and data["unresponsive_engines"] == []
    broker = BrokerClient(gateway_cluster.broker)
    try:
        direct = broker.search("table index", k=11, deadline_ms=2000)
    finally:
        broker.close()
    assert [r["url"] for r in data["results"]] == [h.url for h in direct.hits[:10]]
    for r in data["results"]:
        assert set(r) >= {"url", "title", "content", "engine", "score"}
        assert r["engine"] == "databases" and r["content"]
        # content is plain text: the engine's highlight tags are gone, a page's own "<b>" text stays text
        if r["url"] == HOSTILE_URL:
            assert "<script>alert('text')</script>" in r["content"] and "&lt;" not in r["content"]
        else:
            assert "<b>" not in r["content"]
    # about how many pages match, the same on every page (it was the hits fetched so far: 11 on page 1, as
    # many as were fetched for a later page)
    assert data["number_of_results"] == len(DB_SUBJECTS) + 1 == direct.matches
    later = get(gateway_cluster, "/search", params={"q": "table index", "format": "json", "pageno": 2}).json()
    assert later["number_of_results"] == data["number_of_results"]
    html = get(gateway_cluster, "/search", params={"q": "table index"}).text
    assert f"of about {len(DB_SUBJECTS) + 1}" in html


def test_a_misspelt_query_is_offered_its_correction(gateway_cluster: GatewayCluster) -> None:
    """No result for a misspelt query, and before nothing else: now the search page offers the corrected query
    as a link ("did you mean") and the JSON lists it in SearXNG's ``corrections``."""
    data = get(gateway_cluster, "/search", params={"q": "transacton isolaton", "format": "json"}).json()
    assert data["results"] == [] and data["corrections"] == ["transaction isolation"]
    html = get(gateway_cluster, "/search", params={"q": "transacton isolaton"}).text
    assert 'did you mean\n  <a href="/search?q=transaction%20isolation">transaction isolation</a>?' in html
    fixed = get(gateway_cluster, "/search", params={"q": "transaction isolation", "format": "json"}).json()
    assert fixed["results"] and fixed["corrections"] == []
    # a misspelt word beside one that matches: the results, and the correction above them
    half = get(gateway_cluster, "/search", params={"q": "transaction isolaton", "format": "json"}).json()
    assert half["results"] and half["corrections"] == ["transaction isolation"]
    html = get(gateway_cluster, "/search", params={"q": "transaction isolaton"}).text
    assert html.index('id="suggestion"') < html.index('class="result"')


def test_pages_follow_on_without_overlap(gateway_cluster: GatewayCluster) -> None:
    seen: list[str] = []
    for pageno in (1, 2, 3):
        data = get(gateway_cluster, "/search", params={"q": "table index", "format": "json",
                                                          "pageno": pageno}).json()  # fmt: skip
        seen += [r["url"] for r in data["results"]]
        assert data["pageno"] == pageno
    assert len(seen) == len(set(seen)) == len(DB_SUBJECTS) + 1  # every databases page once
    html = get(gateway_cluster, "/search", params={"q": "table index", "pageno": 2}).text
    assert 'href="/search?q=table+index&amp;pageno=1"' in html
    assert 'href="/search?q=table+index&amp;pageno=3"' in html


def test_html_results_escape_hostile_pages_and_queries(gateway_cluster: GatewayCluster) -> None:
    reply = get(gateway_cluster, "/search", params={"q": f"table tricks {INJECTION}"})
    assert reply.status_code == 200 and reply.headers["content-type"].startswith("text/html")
    body = reply.text
    assert "<script" not in body and "<img" not in body  # neither the query nor the page's markup
    assert "&lt;script&gt;alert(&#39;q&#39;)&lt;/script&gt;" in body  # the query, shown as typed
    assert "&lt;script&gt;alert(&#39;title&#39;)&lt;/script&gt; table tricks" in body  # the page's title
    assert f'href="{HOSTILE_URL}"' in body
    assert re.search(r"<b>(table|index)</b>", body)  # the engine's highlights survive
    assert "script-src" not in reply.headers["content-security-policy"]  # default-src 'none': no script
    assert "default-src 'none'" in reply.headers["content-security-policy"]
    # per-engine status: both engines routed and answering
    assert re.search(r'data-engine="databases">\s*<td>databases</td><td class="state">ok</td>', body)


@pytest.mark.parametrize("path", ENDPOINTS)
def test_hostile_input_to_every_endpoint(gateway_cluster: GatewayCluster, path: str) -> None:
    hostile = [
        {"q": INJECTION, "format": "json"},
        {"q": INJECTION},
        {"q": "x" * 100_000},
        {"q": "table", "pageno": "-1"},
        {"q": "table", "pageno": "abc"},
        {"q": "table", "pageno": str(10**9)},
        {"format": INJECTION},
    ]
    for params in hostile:
        reply = get(gateway_cluster, path, params=params)
        assert reply.status_code in (200, 400), (path, params, reply.status_code)
        assert "<script" not in reply.text and "<img" not in reply.text, (path, params)
    raw = get(gateway_cluster, path + "?q=%ff%fe&format=json")  # invalid UTF-8
    assert raw.status_code in (200, 400) and "\ufffd" not in raw.text
    if path == "/search":
        assert raw.status_code == 400 and "not valid UTF-8" in raw.json()["error"]


@pytest.mark.parametrize(
    ("query", "status", "message"),
    [
        ("q=" + "x" * 100_000 + "&format=json", 400, "longer than the limit"),
        ("q=" + "x" * 1001 + "&format=json", 400, "1001 characters is longer than the limit of 1000"),
        ("q=%ff&format=json", 400, "not valid UTF-8"),
        ("q=&format=json", 400, "empty query"),
        ("q=table&pageno=-1&format=json", 400, "pageno must be a whole number from 1 to 99"),
        ("q=table&pageno=abc&format=json", 400, "pageno must be a whole number"),
        ("q=table&pageno=1000000000&format=json", 400, "pageno must be from 1 to 99"),
        ("q=table&pageno=99&format=json", 200, ""),  # the deepest page: empty, not an error
    ],
)
def test_search_bad_input_is_a_clear_400(
    gateway_cluster: GatewayCluster, query: str, status: int, message: str
) -> None:
    reply = get(gateway_cluster, "/search?" + query)
    assert reply.status_code == status, reply.text[:300]
    if status == 400:
        assert message in reply.json()["error"]
    else:
        assert reply.json()["results"] == []
    page = get(gateway_cluster, "/search?" + query.replace("&format=json", ""))
    assert page.status_code == status and page.headers["content-type"].startswith("text/html")
    if status == 400:
        assert message.split(" is ")[0] in page.text.replace("&#39;", "'")


def test_opensearch_description_points_at_the_gateway(gateway_cluster: GatewayCluster) -> None:
    reply = get(gateway_cluster, "/opensearch.xml")
    assert reply.headers["content-type"].startswith("application/opensearchdescription+xml")
    ns = {"os": "http://a9.com/-/spec/opensearch/1.1/"}
    root = ElementTree.fromstring(reply.content)
    templates = {u.get("type"): u.get("template") for u in root.findall("os:Url", ns)}
    assert templates["text/html"] == f"{gateway_cluster.gateway}/search?q={{searchTerms}}"
    assert templates["application/json"] == f"{gateway_cluster.gateway}/search?q={{searchTerms}}&format=json"
    # the Host header is the client's: markup in it is escaped, the XML stays well-formed
    hostile = get(gateway_cluster, "/opensearch.xml", headers={"Host": 'a"><x>b'})
    assert hostile.status_code in (200, 400)
    if hostile.status_code == 200:
        ElementTree.fromstring(hostile.content)
        assert "<x>" not in hostile.text
    home = get(gateway_cluster, "/").text
    assert 'rel="search" type="application/opensearchdescription+xml"' in home and "<script" not in home
    assert 'id="syntax"' in home and "<q>-word</q> leaves out" in home  # the query language, in one line


def test_robots_txt_keeps_crawlers_off_result_pages(gateway_cluster: GatewayCluster) -> None:
    """A crawler (Oasis's own robot here, reading it with its real politeness code) may fetch the search page
    and the OpenSearch description, not result pages, the dashboard or the metrics (before: a 404 page,
    which allows everything)."""
    from oasis.robot.config import RobotConfig
    from oasis.robot.politeness import Politeness

    reply = get(gateway_cluster, "/robots.txt")
    assert reply.status_code == 200 and reply.headers["content-type"].startswith("text/plain")
    host = gateway_cluster.gateway.split("://", 1)[1]
    politeness = Politeness(RobotConfig())
    politeness.set_robots(host, 200, reply.content, 0.0)
    base = gateway_cluster.gateway
    assert politeness.can_fetch(f"{base}/") and politeness.can_fetch(f"{base}/opensearch.xml")
    for path in ("/search?q=sql", "/search?q=sql&format=json", "/status", "/metrics", "/healthz"):
        assert not politeness.can_fetch(base + path), path


def test_healthz_and_metrics(gateway_cluster: GatewayCluster) -> None:
    assert get(gateway_cluster, "/healthz").status_code == 200

    def count(code: str) -> float:
        text = get(gateway_cluster, "/metrics").text
        name = f'oasis_gateway_requests_total{{code="{code}",endpoint="/search"}}'
        m = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
        return float(m.group(1)) if m else 0.0

    ok, bad = count("200"), count("400")
    get(gateway_cluster, "/search", params={"q": "table", "format": "json"})
    get(gateway_cluster, "/search", params={"q": "", "format": "json"})
    assert count("200") == ok + 1 and count("400") == bad + 1
    text = get(gateway_cluster, "/metrics").text
    assert 'oasis_gateway_request_seconds_bucket{endpoint="/search"' in text
    assert 'oasis_gateway_broker_seconds_count{outcome="ok"}' in text
    assert 'endpoint="other"' in text or get(gateway_cluster, "/no/such/page").status_code == 404


def test_status_page_shows_the_cluster_and_quality_series(gateway_cluster: GatewayCluster) -> None:
    data = get(gateway_cluster, "/status", params={"format": "json"}).json()
    rows = {s["name"]: s for s in data["services"]}
    assert {"directory", "broker", "gateway", "databases", "python"} <= rows.keys()
    assert all(s["health"] == "SERVING" for s in rows.values()), rows
    assert rows["databases"]["documents"] == len(DB_SUBJECTS) + 1 and rows["python"]["documents"] == 10
    page = get(gateway_cluster, "/status").text
    assert "no quality data yet" in page and "<polyline" not in page
    # the live evaluator's series (STATE_DIR/quality.jsonl, one row per evaluation with every topic, as
    # oasis.cluster.evaluator appends it) appear as plots as soon as they are on disk
    quality = gateway_cluster.state / "quality.jsonl"
    lines = [json.dumps({"time": t, "elapsed": t, "topics": {"databases": {
                 "recall": t / 20, "freshness": 1 - t / 40, "M": min(t / 20, 1 - t / 40)}}})
             for t in range(11)]  # fmt: skip
    quality.write_text("\n".join(lines) + "\n")
    try:
        page = get(gateway_cluster, "/status").text
        assert "no quality data yet" not in page
        assert len(re.findall(r'<polyline class="series-(recall|freshness|M)"', page)) == 3
        assert 'data-topic="databases"' in page and "M 0.500" in page  # M = min(0.5, 0.75)
        assert (
            get(gateway_cluster, "/status", params={"format": "json"}).json()["quality"]["databases"][
                "points"
            ]
            == 11
        )
    finally:
        quality.unlink()


def test_a_dead_broker_is_a_503_until_it_is_back(gateway_cluster: GatewayCluster) -> None:
    broker = gateway_cluster.services["broker"]
    os.kill(int(broker["pid"]), signal.SIGKILL)
    try:
        deadline = time.monotonic() + 10
        while get(gateway_cluster, "/search", params={"q": "table", "format": "json"}).status_code != 503:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        reply = get(gateway_cluster, "/search", params={"q": "table", "format": "json"})
        assert reply.status_code == 503 and reply.headers["retry-after"] == "1"
        assert "broker is unavailable" in reply.json()["error"]
        assert reply.json()["unresponsive_engines"] == [["broker", "UNAVAILABLE"]]
        page = get(gateway_cluster, "/search", params={"q": "table"})
        assert page.status_code == 503 and "Search is unavailable" in page.text
        assert 'value="table"' in page.text  # the search box keeps what was typed
        status = get(gateway_cluster, "/status", params={"format": "json"}).json()
        assert {s["name"]: s["health"] for s in status["services"]}["broker"] == "UNREACHABLE"
        assert get(gateway_cluster, "/healthz").status_code == 200  # the gateway itself is alive
    finally:
        state = str(gateway_cluster.state)
        restart = subprocess.run(
            [sys.executable, "-m", "oasis.cli", "restart", "broker", "--state-dir", state],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert restart.returncode == 0, restart.stderr
        gateway_cluster.reload()
    start = time.monotonic()
    while get(gateway_cluster, "/search", params={"q": "table", "format": "json"}).status_code != 200:
        assert time.monotonic() - start < 10, "the gateway did not recover"
        time.sleep(0.05)
    data = get(gateway_cluster, "/search", params={"q": "table index", "format": "json"}).json()
    assert len(data["results"]) == 10 and data["unresponsive_engines"] == []
    assert get(gateway_cluster, "/search", params={"q": "table"}).status_code == 200
