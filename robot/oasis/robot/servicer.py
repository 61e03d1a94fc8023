"""The Robot gRPC service: thin Start / Stop / Status over a :class:`~oasis.robot.crawler.Crawler`."""

from __future__ import annotations

import logging
from typing import Any

import grpc

from oasis.robot.crawler import DONE, IDLE, RUNNING, STOPPED, STOPPING, Crawler, CrawlStatus
from oasis.v1 import robot_pb2, robot_pb2_grpc

logger = logging.getLogger(__name__)

SERVICE_NAME = robot_pb2.DESCRIPTOR.services_by_name["Robot"].full_name
_STATE = {IDLE: "idle", RUNNING: "running", STOPPING: "running", STOPPED: "stopped", DONE: "done"}
MAX_SEEDS = 10_000


def status_to_proto(s: CrawlStatus) -> robot_pb2.RobotStatus:
    return robot_pb2.RobotStatus(
        state=_STATE.get(s.state, s.state),
        pages_fetched=s.pages_fetched,
        pages_indexed=s.pages_indexed,
        frontier_size=s.frontier_size,
        recrawl_queue=s.recrawl_size,
        in_flight=s.in_flight,
        concurrency=s.concurrency,
        errors=s.errors,
        harvest_rate=s.harvest_rate,
        recall_estimate=s.recall_estimate,
        response_queue=s.response_queue,
        policy=s.policy,
        recrawls=s.recrawls,
        changes_seen=s.changes_seen,
        not_modified=s.not_modified,
        pages_per_second=s.recent_pages_per_second,
        freshness_estimate=s.freshness_estimate,
        budget_per_second=s.budget_per_second,
        links_skipped=s.links_skipped,
    )


class RobotServicer(robot_pb2_grpc.RobotServicer):
    def __init__(self, crawler: Crawler) -> None:
        self._crawler = crawler

    def Start(self, request: robot_pb2.StartRequest, context: grpc.ServicerContext) -> robot_pb2.RobotStatus:
        if len(request.seeds) > MAX_SEEDS:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"at most {MAX_SEEDS} seeds per Start")
        if request.max_pages < 0:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "max_pages must be >= 0")
        if request.seeds:
            added = self._crawler.add_seeds(list(request.seeds))
            if not added and not self._crawler.status().frontier_size:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, "no valid http(s) seed URL")
        self._crawler.start(max_pages=request.max_pages or None)
        return status_to_proto(self._crawler.status())

    def Stop(self, request: robot_pb2.StopRequest, context: grpc.ServicerContext) -> robot_pb2.RobotStatus:
        self._crawler.stop()
        return status_to_proto(self._crawler.status())

    def Status(
        self, request: robot_pb2.StatusRequest, context: grpc.ServicerContext
    ) -> robot_pb2.RobotStatus:
        return status_to_proto(self._crawler.status())


def add_robot_servicer(server: Any, servicer: RobotServicer) -> list[str]:
    robot_pb2_grpc.add_RobotServicer_to_server(servicer, server)
    return [SERVICE_NAME]
