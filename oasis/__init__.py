"""Oasis: a distributed, topic-specific search engine (papers/004).

The card's components install under this namespace: ``oasis.v1`` (gRPC API), ``oasis.engine``,
``oasis.directory``, ``oasis.broker``, ``oasis.robot``; ``oasis.web`` (corpora and the replayed web),
``oasis.replay`` (offline evaluation), ``oasis.freshness`` (Whittle indices for re-crawling),
``oasis.bench`` (benchmarks). This package holds the shared service runtime, the cluster launcher and the CLI.
"""

__version__ = "0.1.0"
