"""How the shipped robot was chosen and trained (issue 10 item 4; docs/replay.md "The shipped robot").

Every choice is made on the training split (:data:`TRAINING`); the evaluation split is run once with
``oasis replay``. Two commands:

    python -m oasis.replay.shipped compare --traversals 3 [--table FILE] '{"shrink": 3}' ...
        per configuration (JSON overrides of SHIPPED, with ``start`` "empty" unless --table): on each training
        run, the first traversal's raw P over greedy-anchor's, over greedy-anchor-dir's, greedy-anchor-mean's
        and the strongest of the three (the non-learning baselines of the robot's evidence: the margin over
        the strongest is what learning adds), and the last traversal's over the first (%);
        --table starts each run from that table capped at the configuration's ``carry``; --cv starts each
        run from a table trained (with the same configuration) on the other group of the training split
        (synthetic seeds 1-3 <-> postgresql-doc-15): a table carried to another relevance scale; --ceiling
        adds, per run, the best of the configurations in hindsight (:func:`hindsight_ceiling`): what even a
        per-web choice among them, known after the crawl, reaches against greedy-anchor
    python -m oasis.replay.shipped train --out FILE [--traversals 3] [--runs 0,3] [CONFIG-JSON]
        learn one table over the training runs in order (carried from run to run) and write it
    python -m oasis.replay.shipped evaluate --split holdout-38 --out DIR [--traversals 10] [--random-runs 5]
        [--orders 10]
        (or --corpus C --topic T, repeated): each run exactly ``oasis replay --policies EVAL_POLICIES
        --traversals 10 --random-runs 5 --out DIR/run-K``, then issue 10's table: the robot's first traversal
        vs greedy-anchor, vs greedy-anchor-mean and vs the strongest same-evidence baseline, its best later
        traversal vs its first, the memorising hybrid vs greedy-oracle, the first traversal paired with
        greedy-anchor's over --orders link orders (default 10; 0: not) and the last traversal with the
        robot's own first on the same orders, with and without its memory of the web (the URL-keyed
        directory term and the replayed in-link weight, :data:`FEATURES_ONLY`: memorisation apart), and the
        targets' counts
        (:func:`evaluation_table`); DIR/evaluation.json holds the rows; with --split, the split's row for the
        record of clean splits (:func:`oasis.replay.record.record_row`). Run an unseen split once.
    python -m oasis.replay.shipped clean [--out DIR]
        every clean split's single run as recorded (``oasis.replay.record``: the README's split table), the
        totals, and a sign test of each paired count (ahead vs behind, improves vs falls; level left out);
        --out: DIR/clean.json and DIR/clean.png (one column per split)
    python -m oasis.replay.shipped noise --out DIR [--shuffles 20] [--runs ...]
        per run, the robot as shipped and greedy-anchor-shuffled (its exact ties in a random order, the mean
        and spread of --shuffles runs) against greedy-anchor's first traversal: how much of a run's P the
        order among pages the evidence cannot tell apart decides (:func:`tie_noise`); a table, noise.json
        and noise.png in DIR
    python -m oasis.replay.shipped inlink --out DIR [--runs ...] [--split holdout-N]
        per run, the first traversal of greedy-anchor, greedy-anchor-mean (the in-link mean, no learning) and
        the robot as shipped: the robot's margin over greedy-anchor against the in-link mean's, their
        correlation, and the corpora whose topics disagree on whether the mean helps (:func:`inlink_evidence`:
        what decides the first-traversal target); a table, inlink.json and inlink.png in DIR
    python -m oasis.replay.shipped orders --out DIR [--orders 10] [--runs ...] [--split holdout-N]
        [--config JSON] [--traversals N] [--versus JSON]
        per run, the robot as shipped (or with --config's overrides) against greedy-anchor, first traversal,
        paired on --orders link orders (order 0: the web as served; the others: every page's links
        shuffled, the same order for both): the mean margin, its standard error, how many orders the robot
        is ahead on, and whether it is ahead or behind by more than 2 standard errors (:func:`link_orders`);
        a table, orders.json and orders.png. With --traversals N > 1 the robot learns on over N traversals
        of each order, and its traversal N is paired with its own first on the same order (improves or
        falls by 2 standard errors, else flat; the best and worst later traversal): orders-later.png too.
        With --versus JSON a second robot runs on the same orders and the first robot's margins are
        compared with its run by run (:func:`versus`: better or worse by 2 standard errors, else level);
        with --traversals N too, the second robot learns over N traversals as well, and its own traversal N
        vs its first is reported beside the first robot's (``versus.later`` in orders.json)
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import statistics
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from oasis.replay.experiment import Experiment, ExperimentConfig, Prepared, prepare
from oasis.robot.scheduling.config import SHIPPED, ControllerConfig
from oasis.robot.scheduling.qtable import QTable
from oasis.robot.scheduling.residual import WEB_ROWS, cap_visits

logger = logging.getLogger(__name__)

TRAINING = (
    ("synthetic:pages=3000,hosts=4,seed=1", "databases"),
    ("synthetic:pages=3000,hosts=4,seed=2", "python"),
    ("synthetic:pages=3000,hosts=4,seed=3", "databases"),
    ("debian:postgresql-doc-15", "index btree gin gist hash"),
    ("debian:postgresql-doc-15", "replication standby wal archiving"),
    # session 6: two more real documentation webs with many directories (postgresql's is one directory)
    ("debian:python-pytest-doc", "fixtures parametrize"),
    ("debian:python-pytest-doc", "assert warnings capture output"),
    ("debian:python-distributed-doc", "scheduler workers memory"),
    ("debian:python-distributed-doc", "dashboard diagnostics performance"),
    # session 7: every earlier evaluation split has been seen and is training now (holdout-3 is the new one)
    ("debian:python3.11-doc", "asyncio coroutines event loop tasks"),
    ("debian:python3.11-doc", "unicode strings encoding codecs"),
    ("debian:python-django-doc", "authentication users permissions login"),
    ("debian:python-django-doc", "forms validation widgets"),
    ("synthetic:pages=3000,hosts=4,seed=11", "web"),
    ("synthetic:pages=3000,hosts=4,seed=12", "web"),
    ("synthetic:pages=3000,hosts=4,seed=13", "web"),
    ("debian:python-sqlalchemy-doc", "session transaction commit rollback"),
    ("debian:python-sqlalchemy-doc", "relationship loading joined eager lazy"),
    ("debian:python-celery-doc", "periodic tasks beat schedule crontab"),
    ("debian:python-celery-doc", "worker concurrency prefork pool"),
    ("debian:python-scrapy-doc", "item pipeline feed exports exporters"),
    ("debian:python-scrapy-doc", "downloader middleware spider middleware"),
    ("debian:python-tornado-doc", "websocket httpserver httpclient http headers"),
    ("debian:python-tornado-doc", "coroutines locks queues synchronization"),
    # session 9: holdout-3 (session 7) and holdout-4 (session 8) have been seen (holdout-5 is the new one)
    ("debian:python-kombu-doc", "connections transports producers consumers"),
    ("debian:python-kombu-doc", "serialization connection producer pools automatic failover"),
    ("debian:python-pymongo-doc", "tls ssl client side field level encryption"),
    ("debian:python-pymongo-doc", "migration guide compatibility policy deprecations"),
    ("debian:python-gevent-doc", "monkey patching event loop cooperative multitasking timeouts"),
    ("debian:python-gevent-doc", "name resolution dns monitoring debugging profiling"),
    ("debian:python-cherrypy3-doc", "configure deploy installation"),
    ("debian:python-cherrypy3-doc", "extend testing"),
    # session 9: holdout-5 was run once with session 8's robot before any session-9 choice, and is seen now
    ("debian:python-pil-doc", "installation building from source platform support"),
    ("debian:python-pil-doc", "imagefilter imageenhance imagechops channel operations"),
    ("debian:sphinx-doc", "extensions autodoc intersphinx"),
    ("debian:sphinx-doc", "templating jinja html theme development"),
    # session 10: holdout-6 was run once with session 8's robot (unchanged) before any session-10 choice
    ("debian:python-dask-doc", "dataframe groupby joins shuffling indexing"),
    ("debian:python-dask-doc", "deploy clusters kubernetes docker ssh adaptive"),
    ("debian:python-fonttools-doc", "variable fonts designspace varlib instancer interpolation"),
    ("debian:python-fonttools-doc", "subset merge woff2 compression"),
    # session 11: holdout-7 was run once with session 8's robot (unchanged) before any session-11 choice
    ("debian:python-pygame-doc", "sprite module making games tutorial"),
    ("debian:python-pygame-doc", "display surface draw shapes color"),
    ("debian:python-flask-doc", "templates jinja autoescaping filters context processors"),
    ("debian:python-flask-doc", "testing fixtures test client cli runner"),
    # session 11: holdout-8 was run once with session 11's robot (the learned in-link weight, exploration)
    ("debian:python-cryptography-doc", "fernet symmetric encryption passwords"),
    ("debian:python-cryptography-doc", "x509 certificate transparency ocsp"),
    ("debian:python-lxml-doc", "xpath xslt document traversal"),
    ("debian:python-lxml-doc", "validation dtd relaxng xmlschema schematron"),
    # session 13: holdout-9 was run once with session 11's robot (unchanged), paired over link orders
    ("debian:python-werkzeug-doc", "url routing rule converters maps adapters"),
    ("debian:python-werkzeug-doc", "serving testing test client debugger reloader"),
    ("debian:python-ipython-doc", "configuration customization profiles startup files"),
    ("debian:python-ipython-doc", "interactive tutorial magic commands history"),
    # session 14: holdout-10 was run once with session 11's robot (unchanged), paired over link orders
    ("debian:python-djangorestframework-doc", "serializers serializer fields relations validators"),
    ("debian:python-djangorestframework-doc", "authentication permissions throttling"),
    ("debian:python-h5py-doc", "datasets attributes dimension scales"),
    ("debian:python-h5py-doc", "parallel hdf5 single writer multiple reader virtual datasets"),
    # session 15: holdout-11 was run once with session 11's robot (unchanged), paired over link orders
    ("debian:python-aiohttp-doc", "client quickstart advanced usage tracing request lifecycle"),
    ("debian:python-aiohttp-doc", "server deployment logging testing"),
    ("debian:python-tables-doc", "optimization tips condition syntax supported data types"),
    ("debian:python-tables-doc", "filenode simulating a filesystem parameter files file format"),
    # session 16: holdout-12 was run once with session 11's robot (unchanged), paired over link orders
    ("debian:python-authlib-doc", "oauth clients session requests httpx frameworks"),
    ("debian:python-authlib-doc", "jose json web signature encryption key token"),
    ("debian:python-ezdxf-doc", "basic concepts layers linetypes coordinate systems units"),
    ("debian:python-ezdxf-doc", "addons drawing export importer geo interface"),
    # session 17: holdout-13 was run once with session 11's robot (unchanged), paired over link orders
    ("debian:python-quart-doc", "websockets server sent events streaming responses http2"),
    ("debian:python-quart-doc", "background tasks startup shutdown event loop synchronous code"),
    ("debian:python-gitlab-doc", "merge requests approvals pipelines jobs runners"),
    ("debian:python-gitlab-doc", "users groups access tokens permissions keys"),
    # session 17: holdout-14 was run once with session 17's robot (d(D) after 50 fetches), paired over orders
    ("debian:python-sklearn-doc", "cross validation tuning hyper parameters metrics scoring"),
    ("debian:python-sklearn-doc", "clustering gaussian mixture manifold learning outlier detection"),
    ("debian:python-sympy-doc", "solve equations assumptions symbolic fuzzy booleans custom functions"),
    ("debian:python-sympy-doc", "matrices number theory logic code generation"),
    # session 18: holdout-15 was run once with session 17's robot (unchanged), paired over link orders
    ("debian:python-astropy-doc", "astronomical coordinate systems world coordinate system wcs"),
    ("debian:python-astropy-doc", "fits file handling ascii tables votable unified read write"),
    ("debian:python-skimage-doc", "segmentation of objects edges and lines"),
    ("debian:python-skimage-doc", "filtering and restoration exposure and color channels"),
    # session 19: holdout-16 was run once with session 17's robot (unchanged), paired over link orders
    ("debian:python-ase-doc", "structure optimization molecular dynamics constraints"),
    ("debian:python-ase-doc", "equation of state crystals band structure lattice constants"),
    ("debian:python-nibabel-doc", "nifti images image voxel orientation"),
    ("debian:python-nibabel-doc", "dicom information siemens mosaic format csa header"),
    # session 19: holdout-17 was run once with session 19's robot (no exploration), paired over link orders
    ("debian:python-statsmodels-doc", "time series analysis state space methods vector autoregressions"),
    ("debian:python-statsmodels-doc", "generalized linear models estimating equations mixed effects"),
    ("debian:python-mdtraj-doc", "hydrogen bonding secondary structure bond angles dihedrals"),
    ("debian:python-mdtraj-doc", "trajectory loading functions format specific hdf5"),
    # session 20: holdout-18 was run once with session 19's robot (unchanged), paired over link orders
    ("debian:python-mdanalysis-doc", "distances contacts hydrogen bonding dimensionality reduction"),
    ("debian:python-mdanalysis-doc", "coordinates modules trajectory formats topology readers"),
    ("debian:python-whoosh-doc", "parsing user queries default query language"),
    ("debian:python-whoosh-doc", "analyzers stemming variations accent folding"),
    # session 20: holdout-19 was run once with session 19's robot (unchanged), paired over link orders
    ("debian:python-pydicom-doc", "pixel data encoding compressing image processing"),
    ("debian:python-pydicom-doc", "dataset basics read access modify write element value types"),
    ("debian:python-rdflib-doc", "querying with sparql plugin query results"),
    ("debian:python-rdflib-doc", "loading saving rdf plugin parsers serializers persistence"),
    # session 21: holdout-20 was run once with session 19's robot (unchanged), paired over link orders
    ("debian:python-pymatgen-doc", "structures and molecules reading writing structures"),
    ("debian:python-pymatgen-doc", "phase diagram reaction energies entries basic analysis"),
    ("debian:python-asdf-doc", "schema validation anatomy of a schema testing validation"),
    ("debian:python-asdf-doc", "array data extensions converters serialize a new type"),
    # session 21: holdout-21 was run once with session 19's robot (unchanged), paired over link orders
    ("debian:python-skbio-doc", "sequences dna rna protein"),
    ("debian:python-skbio-doc", "distance matrices ordination statistics"),
    ("debian:python-pyqtgraph-doc", "plotting displaying images and video exporting"),
    ("debian:python-pyqtgraph-doc", "parameter trees visual programming with flowcharts"),
    # session 22: holdout-22 was run once with session 19's robot (unchanged), paired over link orders
    ("debian:python-openstacksdk-doc", "connect to an openstack cloud config file configuration"),
    ("debian:python-openstacksdk-doc", "network load balancer dns"),
    ("debian:python-cogent-doc", "building alignments genetic distance calculation building phylogenies"),
    ("debian:python-cogent-doc", "evolutionary analysis using likelihood nucleotide codon model"),
    # session 22: holdout-23 was run once with session 19's robot (unchanged), paired over link orders
    ("debian:python-silx-doc", "plot widgets image display colormap"),
    ("debian:python-silx-doc", "reading specfile and converting data files to hdf5"),
    ("debian:python-qutip-doc", "time evolution master equation solver monte carlo"),
    ("debian:python-qutip-doc", "manipulating states and operators density matrices"),
    # session 22: holdout-24 was run once with session 22's robot (the replayed in-link weight), paired
    ("debian:python-selenium-doc", "action chains keys mouse pointer input actions"),
    ("debian:python-selenium-doc", "support wait expected conditions select"),
    ("debian:python-mpmath-doc", "numerical calculus differentiation integration sums limits"),
    ("debian:python-mpmath-doc", "special functions gamma bessel hypergeometric zeta"),
    # session 23: holdout-25 was run once with session 22's robot (unchanged), paired over link orders
    ("debian:python-nipype-doc", "workflow engine nodes pipeline execution plugins"),
    ("debian:python-nipype-doc", "fsl interfaces registration brain extraction"),
    ("debian:python-requests-doc", "authentication basic digest oauth"),
    ("debian:python-requests-doc", "session objects ssl certificate verification proxies"),
    # session 23: holdout-26 was run once with session 23's robot (anchors scored by their words), paired
    ("debian:python-taskflow-doc", "engines flow patterns linear unordered graph flow"),
    ("debian:python-taskflow-doc", "persistence storage backends resumption"),
    ("debian:python-click-doc", "options boolean flags choice prompts environment variables"),
    ("debian:python-click-doc", "commands and groups nested contexts multi command chaining"),
    # session 23: holdout-27 was run once with session 23's robot (links scored by their words), paired
    ("debian:python-dipy-doc", "command line workflows denoising motion correction reconstruction tracking"),
    ("debian:python-dipy-doc", "spherical harmonic bases spherical coordinates theory"),
    ("debian:python-eventlet-doc", "green threads spawn greenpool patching monkeypatching standard library"),
    ("debian:python-eventlet-doc", "hubs how the hubs work use hub"),
    # session 24: holdout-28 was run once with session 23's robot unchanged, paired
    ("debian:python-can-doc", "bus message reading and writing messages listeners"),
    ("debian:python-can-doc", "socketcan virtual interfaces hardware interfaces"),
    ("debian:python-pygments-doc", "lexers writing your own lexer lexer development"),
    ("debian:python-pygments-doc", "formatters html terminal output styles"),
    # session 24: holdout-29 was run once with session 23's robot unchanged, paired
    ("debian:python-taurus-doc", "plots trend zooming panning plot configuration curves"),
    ("debian:python-taurus-doc", "taurusgui panels perspectives synoptic panels"),
    ("debian:python-hypothesis-doc", "stateful testing rule based state machines"),
    ("debian:python-hypothesis-doc", "settings health checks example database reproducing failures"),
    # session 25: holdout-30 was run once with session 23's robot unchanged, paired
    ("debian:python-sfepy-doc", "solvers linear nonlinear time stepping solving problems in parallel"),
    ("debian:python-sfepy-doc", "postprocessing probing visualization of results"),
    ("debian:python-ldap-doc", "search results asynchronous stream processing large searches"),
    ("debian:python-ldap-doc", "distinguished names filters modify lists"),
    # session 26: holdout-31 was run once with session 23's robot unchanged, paired
    ("debian:python-mpi4py-doc", "point to point communication send receive blocking nonblocking"),
    ("debian:python-mpi4py-doc", "futures mpipoolexecutor mpicommexecutor parallel tasks"),
    ("debian:python-nitime-doc", "multitaper spectral estimation coherence"),
    ("debian:python-nitime-doc", "autoregressive models granger causality"),
    # session 27: holdout-32 was run once with session 23's robot unchanged, paired
    ("debian:python-slixmpp-doc", "multi user chat muc bot presence subscriptions"),
    ("debian:python-slixmpp-doc", "stanza objects handlers matchers xml stream"),
    ("debian:python-pwntools-doc", "return oriented programming rop chains sigreturn"),
    ("debian:python-pwntools-doc", "shellcode generation assembler encoders"),
    # session 27: holdout-33 was run once with session 23's robot unchanged, paired
    ("debian:python-nipy-doc", "image registration affine transforms resampling"),
    ("debian:python-nipy-doc", "fmri design matrix hemodynamic response glm"),
    ("debian:python-pywt-doc", "stationary wavelet transform swt iswt"),
    ("debian:python-pywt-doc", "wavelet packets tree nodes decomposition"),
    # session 28: holdout-34 was run once with session 23's robot unchanged, paired
    ("debian:python-pyfai-doc", "calibration of a diffraction setup calibrant rings"),
    ("debian:python-pyfai-doc", "azimuthal integration pixel splitting"),
    ("debian:python-simpy3-doc", "shared resources container store preemptive resource"),
    ("debian:python-simpy3-doc", "process interaction interrupts waiting for other processes"),
    # session 29: holdout-35 was run once with session 23's robot unchanged, paired
    ("debian:python-imageio-doc", "reading and writing images volumes video usage examples"),
    ("debian:python-imageio-doc", "writing plugins format reader writer classes"),
    ("debian:python-lark-doc", "grammar reference rules terminals priorities"),
    ("debian:python-lark-doc", "transformers visitors tree construction"),
    # session 29: holdout-36 was run once with session 23's robot unchanged, paired
    ("debian:python-astroquery-doc", "vizier catalog queries tables"),
    ("debian:python-astroquery-doc", "esa archives hubble jwst xmm newton iso"),
    ("debian:python-pint-doc", "numpy support temperature conversion logarithmic units"),
    ("debian:python-pint-doc", "contexts defining units different unit systems"),
    # session 30: holdout-37 was run once with session 23's robot unchanged, paired
    ("debian:python-fluids-doc", "control valve sizing liquid gas flow"),
    ("debian:python-fluids-doc", "pressure drop through piping fittings packed beds"),
    ("debian:python-coverage-doc", "branch coverage measurement"),
    ("debian:python-coverage-doc", "configuration reference excluding code source files"),
)


# the evaluation splits, each fixed and committed before it was run (docs/replay.md): holdout-5 to
# holdout-37 have been run once and are seen (TRAINING runs 32-35, 36-39, ..., 160-163: four runs each, in
# order); holdout-38 is unseen
SPLITS: dict[str, tuple[tuple[str, str], ...]] = {
    **{f"holdout-{k}": TRAINING[32 + 4 * (k - 5) : 36 + 4 * (k - 5)] for k in range(5, 38)},
    # session 30, fixed after holdout-37's single run and before any further design work (docs/replay.md
    # "Session 30"): one mid-sized web and one small; topics from each table of contents only
    "holdout-38": (
        ("debian:python-astroplan-doc", "defining observing constraints"),
        ("debian:python-astroplan-doc", "scheduling an observing run"),
        ("debian:python-django-extensions-doc", "command extensions shell plus run script"),
        ("debian:python-django-extensions-doc", "graph models list model info"),
    ),
}
# the policies of an evaluation run (issue 10's table: the baselines, the robot as shipped, the memorising
# hybrid and the reference)
EVAL_POLICIES = (
    "upper,random,bfs,greedy-parent,greedy-anchor,greedy-anchor-dir,greedy-anchor-mean,greedy-oracle,"
    "whittle,whittle:hybrid"
)


def _prepare(corpus: str, topic: str) -> Prepared:
    from oasis.web.corpus import load_corpus

    return prepare(load_corpus(corpus), topic, seed_urls=None, anchors=True)


def whittle_p(prepared: Prepared, config: ControllerConfig, traversals: int, q: QTable | None) -> list[float]:
    """Raw P per traversal of ``whittle`` with ``config`` (learning in ``q`` when given)."""
    cfg = ExperimentConfig(policies=("whittle",), traversals=traversals, controller=config)
    tables = {"whittle": q} if q is not None else None
    return [float(p) for p in Experiment(prepared, cfg, q_tables=tables).run()["policies"]["whittle"]["P"]]


# the non-learning baselines of the evidence the shipped robot uses (best in-link, URL directory, in-link
# mean): the robot's first traversal over the strongest of them on a run is what its learning adds
SAME_EVIDENCE = ("greedy-anchor", "greedy-anchor-dir", "greedy-anchor-mean")


# the robot as shipped without its memory of the web: its one URL-keyed term, the URL directory's d(D)
# (session 14: on a later traversal of the same web a directory's row remembers the pages fetched there
# before -- one row per page on a site that gives every page its own folder), and the in-link weight replayed
# on the web fetched before (session 22, ``link_replay``); the later traversals' gain of this robot is what
# its generalising features (the calibration and the states' c(x)) learn, reported apart from that memory
FEATURES_ONLY = replace(SHIPPED, dir_weight=0.0, link_replay=None)


def baseline_ps(prepared: Prepared, policies: tuple[str, ...] = SAME_EVIDENCE) -> dict[str, float]:
    """Raw P of one traversal of each (deterministic) baseline, in one experiment (one upper bound)."""
    cfg = ExperimentConfig(policies=policies, traversals=1)
    result = Experiment(prepared, cfg).run()["policies"]
    return {policy: float(result[policy]["P"][0]) for policy in policies}


def pct(p: float, base: float) -> float:
    """``p`` over ``base`` in per cent (raw P)."""
    return 100.0 * (p / base - 1.0)


# leave one web out: synthetic webs, postgresql-doc-15, pytest, distributed (relevance scales and URL layouts)
CV_GROUPS = ((0, 1, 2), (3, 4), (5, 6), (7, 8))


def compare(
    configs: list[ControllerConfig],
    traversals: int,
    table: QTable | None,
    runs: list[int],
    *,
    cv: bool = False,
) -> list[dict[str, Any]]:
    """Per configuration and training run: first traversal vs greedy-anchor, vs greedy-anchor-dir, vs
    greedy-anchor-mean and vs the strongest of the three on that run (the non-learning baselines of the
    evidence the robot uses: its margin over that is what its learning adds), last vs first, and the best
    and the worst later traversal vs the first (raw P, %)."""
    prepared = {i: _prepare(*TRAINING[i]) for i in runs}
    base = {i: baseline_ps(p) for i, p in prepared.items()}
    out: list[dict[str, Any]] = []
    for config in configs:
        first, first_dir, first_mean, first_strongest, later, best, worst = [], [], [], [], [], [], []
        tables: dict[int, QTable] = {}
        if cv:
            for group in CV_GROUPS:
                other = [i for g in CV_GROUPS if g is not group for i in g]
                trained = train(config, 3, other)
                tables.update({i: trained for i in group})
        for i, p in prepared.items():
            start = tables.get(i, table)
            q = cap_visits(start, config.carry, config.carry_state) if start is not None else None
            ps = whittle_p(p, config, traversals, q)
            first.append(pct(ps[0], base[i]["greedy-anchor"]))
            first_dir.append(pct(ps[0], base[i]["greedy-anchor-dir"]))
            first_mean.append(pct(ps[0], base[i]["greedy-anchor-mean"]))
            first_strongest.append(pct(ps[0], max(base[i].values())))
            later.append(pct(ps[-1], ps[0]))
            best.append(pct(max(ps[1:]), ps[0]) if len(ps) > 1 else 0.0)
            worst.append(pct(min(ps[1:]), ps[0]) if len(ps) > 1 else 0.0)
        out.append(
            {
                "t1_vs_greedy_anchor": first,
                "t1_vs_greedy_anchor_dir": first_dir,
                "t1_vs_greedy_anchor_mean": first_mean,
                "t1_vs_strongest_same_evidence": first_strongest,
                "last_vs_t1": later,
                "best_later_vs_t1": best,
                "worst_later_vs_t1": worst,
            }
        )
    return out


def hindsight_ceiling(rows: list[dict[str, Any]], key: str = "t1_vs_greedy_anchor") -> dict[str, Any]:
    """Per run, the best of the configurations' ``key`` values (% vs greedy-anchor) and which one it was
    (the first in the given order among equals); the runs where even that best is not ahead (<= 0), and
    how many runs it is ahead on. A ceiling for any rule that picks one of these configurations per web,
    online or offline: a run behind greedy-anchor here is behind under every such rule."""
    if not rows:
        raise ValueError("no configurations to take a ceiling over")
    per_run = list(zip(*(row[key] for row in rows), strict=True))
    best = [max(values) for values in per_run]
    which = [values.index(b) for values, b in zip(per_run, best, strict=True)]
    behind = [i for i, b in enumerate(best) if b <= 0.0]
    return {"best": best, "config": which, "behind": behind, "ahead": len(best) - len(behind)}


def tie_noise(runs: list[int], shuffles: int = 20) -> list[dict[str, Any]]:
    """Per training run: the first traversal of the robot as shipped (``whittle``) and of
    ``greedy-anchor-shuffled`` over ``shuffles`` random tie orders, as raw P over greedy-anchor's (%): the
    shuffled mean, standard deviation, min and max, and the robot's margin in standard deviations."""
    out: list[dict[str, Any]] = []
    for i in runs:
        corpus, topic = TRAINING[i]
        policies = ("greedy-anchor", "greedy-anchor-shuffled", "whittle")
        cfg = ExperimentConfig(policies=policies, traversals=1, random_runs=shuffles)
        result = Experiment(_prepare(corpus, topic), cfg).run()
        pol, upper = result["policies"], result["upper_P"]
        ga = float(pol["greedy-anchor"]["P"][0])
        sh = pol["greedy-anchor-shuffled"]
        sd = 100.0 * float(sh["P_ratio_std"]) * upper / ga
        robot = pct(float(pol["whittle"]["P"][0]), ga)
        row = {
            "run": i,
            "corpus": corpus,
            "topic": topic,
            "robot": robot,
            "shuffled_mean": pct(float(sh["P"][0]), ga),
            "shuffled_sd": sd,
            "shuffled_min": pct(float(sh["P_ratio_min"]) * upper, ga),
            "shuffled_max": pct(float(sh["P_ratio_max"]) * upper, ga),
            "robot_in_sd": robot / sd if sd > 0 else None,
        }
        out.append(row)
        logger.info("%d %s %r: robot %+.2f%%, shuffled ties sd %.2f%%", i, corpus, topic, robot, sd)
    return out


def _ranks(values: Sequence[float]) -> list[float]:
    """Ranks from 0, tied values sharing their mean rank (for a rank correlation)."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in order[i : j + 1]:
            ranks[k] = (i + j) / 2.0
        i = j + 1
    return ranks


def _pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Pearson's correlation (``statistics.correlation``); None with fewer than two points or a constant
    side, where it is undefined."""
    try:
        return statistics.correlation(x, y)
    except statistics.StatisticsError:
        return None


# a margin within this of 0 (%) counts as neither helping nor hurting in :func:`inlink_summary`
INLINK_LEVEL = 0.05


def inlink_evidence(runs: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
    """Per (corpus, topic), the first traversal's raw P of greedy-anchor, greedy-anchor-mean (the robot's
    in-link mean at the shipped weight, no learning) and the robot as shipped (``whittle``), both margins
    over greedy-anchor (%): ``mean`` (what the in-link mean alone does) and ``robot``, and the robot's over
    greedy-anchor-mean's (``robot_over_mean``: what learning adds to the mean)."""
    policies = ("greedy-anchor", "greedy-anchor-mean", "whittle")
    cfg = ExperimentConfig(policies=policies, traversals=1)
    out: list[dict[str, Any]] = []
    for corpus, topic in runs:
        prepared = _prepare(corpus, topic)
        pol = Experiment(prepared, cfg).run()["policies"]
        ga, mean, robot = (float(pol[name]["P"][0]) for name in policies)
        out.append(
            {
                "corpus": corpus,
                "topic": topic,
                "pages": int(prepared.meta["reachable"]),
                "greedy_anchor": ga,
                "greedy_anchor_mean": mean,
                "robot_P": robot,
                "mean": pct(mean, ga),
                "robot": pct(robot, ga),
                "robot_over_mean": pct(robot, mean),
            }
        )
        logger.info(
            "%s %r: in-link mean %+.2f%%, robot %+.2f%%", corpus, topic, out[-1]["mean"], out[-1]["robot"]
        )
    return out


def inlink_summary(rows: Sequence[dict[str, Any]], level: float = INLINK_LEVEL) -> dict[str, Any]:
    """What :func:`inlink_evidence`'s rows say: the correlation of the robot's margin with the in-link
    mean's (Pearson and on ranks), the runs where both have the same sign, the robot's margin over the mean's
    (P over P, %: median, mean, within 0.5%), the runs each is ahead of greedy-anchor on (the robot's split by
    whether the mean helps, is level or hurts there), and the corpora with one topic where the mean helps
    (margin > ``level``) and one where it hurts (< -``level``)."""
    mean = [float(r["mean"]) for r in rows]
    robot = [float(r["robot"]) for r in rows]
    over = [float(r["robot_over_mean"]) for r in rows]
    by_corpus: dict[str, list[float]] = {}
    for r, m in zip(rows, mean, strict=True):
        by_corpus.setdefault(r["corpus"], []).append(m)
    split = sorted(c for c, ms in by_corpus.items() if max(ms) > level and min(ms) < -level)
    return {
        "runs": len(rows),
        "pearson": _pearson(mean, robot),
        "spearman": _pearson(_ranks(mean), _ranks(robot)),
        "same_sign": sum((m > 0) == (r > 0) for m, r in zip(mean, robot, strict=True)),
        "robot_over_mean_median": statistics.median(over) if over else None,
        "robot_over_mean_mean": statistics.fmean(over) if over else None,
        "robot_within_half_percent_of_mean": sum(abs(x) <= 0.5 for x in over),
        "robot_ahead": sum(r > 0 for r in robot),
        "mean_ahead": sum(m > 0 for m in mean),
        "mean_helps": sum(m > level for m in mean),
        "mean_hurts": sum(m < -level for m in mean),
        # the robot ahead of greedy-anchor on the runs where the mean helps, is level, hurts
        "robot_ahead_where_mean_helps": sum(r > 0 for m, r in zip(mean, robot, strict=True) if m > level),
        "robot_ahead_where_mean_is_level": sum(
            r > 0 for m, r in zip(mean, robot, strict=True) if -level <= m <= level
        ),
        "robot_ahead_where_mean_hurts": sum(r > 0 for m, r in zip(mean, robot, strict=True) if m < -level),
        "corpora": len(by_corpus),
        "corpora_with_both": split,
    }


def _paired(values: list[float]) -> tuple[float, float, float]:
    """Mean, sample standard deviation and standard error of paired margins (one per link order)."""
    mean = statistics.fmean(values)
    sd = statistics.stdev(values)
    return mean, sd, sd / math.sqrt(len(values))


def _verdict(mean: float, se: float, words: tuple[str, str, str]) -> str:
    """``words`` = (above, below, neither): above or below 0 by more than 2 standard errors, else neither."""
    above, below, neither = words
    return above if mean > 2 * se else below if mean < -2 * se else neither


def _tally(rows: Sequence[dict[str, Any]], key: str, words: tuple[str, str, str]) -> str:
    """How many rows have each verdict of ``words`` under ``key``: "w1 n1, w2 n2, w3 n3"."""
    verdicts = [r[key] for r in rows]
    return ", ".join(f"{w} {verdicts.count(w)}" for w in words)


def link_orders(
    runs: Sequence[tuple[str, str]],
    orders: int = 10,
    config: ControllerConfig = SHIPPED,
    traversals: int = 1,
    *,
    others: Sequence[tuple[ControllerConfig, int]] = (),
) -> list[dict[str, Any]]:
    """Per (corpus, topic): the first traversal of the robot (``whittle``: ``config``, as shipped unless
    given) over greedy-anchor's (raw P, %) on ``orders`` orders of the web's links (order 0 as served; order
    s > 0 every page's links shuffled by seed s, :meth:`Replay.with_link_order`), both policies on the same
    order: the margins, their mean, sample standard deviation and standard error, the orders the robot is
    ahead on, and the verdict ("ahead" / "behind": the mean is more than 2 standard errors from 0; else
    "level").

    With ``traversals`` > 1 the robot learns on over that many traversals of each order (one table per
    order, from the robot's default), and each row also pairs its later traversals with its own first on
    the same order (``later``: per order, traversals 2..N over traversal 1, %): the last traversal's mean,
    standard error and verdict ("improves" / "falls": more than 2 standard errors from 0; else "flat"), the
    orders it improves on, the mean of the best and of the worst later traversal, and the orders on which
    some later traversal falls below the first.

    ``others``: more robots (configuration, traversals) on the same runs and orders; each row then carries
    their rows, in that order, under ``"others"`` (the web is prepared, and greedy-anchor run, once for all:
    a robot's row is the same as its own call's)."""
    if orders < 2:
        raise ValueError(f"orders must be >= 2 (a standard error needs two), got {orders}")
    robots = [(config, traversals), *others]
    if any(t < 1 for _c, t in robots):
        raise ValueError(f"traversals must be >= 1, got {min(t for _c, t in robots)}")
    ga_cfg = ExperimentConfig(policies=("greedy-anchor",), traversals=1)
    out: list[dict[str, Any]] = []
    for corpus, topic in runs:
        prepared = _prepare(corpus, topic)
        firsts: list[list[float]] = [[] for _ in robots]
        later: list[list[list[float]]] = [[] for _ in robots]
        for seed in range(orders):
            p = replace(prepared, replay=prepared.replay.with_link_order(seed))
            ga = float(Experiment(p, ga_cfg).run()["policies"]["greedy-anchor"]["P"][0])
            for k, (cfg, n) in enumerate(robots):
                run_cfg = ExperimentConfig(policies=("whittle",), traversals=n, controller=cfg)
                own = [float(x) for x in Experiment(p, run_cfg).run()["policies"]["whittle"]["P"]]
                firsts[k].append(pct(own[0], ga))
                later[k].append([pct(x, own[0]) for x in own[1:]])
        pages = int(prepared.meta["reachable"])
        rows = [
            {"corpus": corpus, "topic": topic, "pages": pages, **_order_stats(m, lt, n)}
            for m, lt, (_c, n) in zip(firsts, later, robots, strict=True)
        ]
        row = rows[0]
        if others:
            row["others"] = rows[1:]
        out.append(row)
        logger.info(
            "%s %r: as served %+.2f%%, mean %+.2f%% (SE %.2f, %s)",
            corpus,
            topic,
            row["as_served"],
            row["mean"],
            row["se"],
            row["verdict"],
        )
    return out


def _order_stats(margins: list[float], later: list[list[float]], traversals: int) -> dict[str, Any]:
    """One robot's :func:`link_orders` figures from its margins over greedy-anchor per order and, with
    ``traversals`` > 1, its later traversals over its own first per order."""
    mean, sd, se = _paired(margins)
    row: dict[str, Any] = {
        "margins": margins,
        "as_served": margins[0],
        "mean": mean,
        "sd": sd,
        "se": se,
        "ahead_on": sum(m > 0 for m in margins),
        "verdict": _verdict(mean, se, ("ahead", "behind", "level")),
    }
    if traversals > 1:
        last_mean, _sd, last_se = _paired([o[-1] for o in later])
        row.update(
            traversals=traversals,
            later=later,
            last_mean=last_mean,
            last_se=last_se,
            last_verdict=_verdict(last_mean, last_se, ("improves", "falls", "flat")),
            improves_on=sum(o[-1] > 0 for o in later),
            best_mean=statistics.fmean(max(o) for o in later),
            worst_mean=statistics.fmean(min(o) for o in later),
            dips_on=sum(min(o) < 0 for o in later),
        )
    return row


# reachable pages: below it a first traversal is a few dozen fetches (docs/replay.md "Session 16")
SMALL_WEB = 100


def by_size(rows: Sequence[dict[str, Any]], threshold: int = SMALL_WEB) -> list[dict[str, Any]]:
    """:func:`link_orders` rows split by the web's size (reachable pages below ``threshold``, then the
    rest): per group its label, the runs, the mean over them of the paired first-traversal margin (%) and
    how many are ahead, level and behind (empty groups are left out)."""
    groups = (
        (f"under {threshold} pages", [r for r in rows if r["pages"] < threshold]),
        (f"{threshold} pages or more", [r for r in rows if r["pages"] >= threshold]),
    )
    return [
        {
            "label": label,
            "runs": len(group),
            "mean": statistics.fmean(r["mean"] for r in group),
            **{v: sum(r["verdict"] == v for r in group) for v in ("ahead", "level", "behind")},
        }
        for label, group in groups
        if group
    ]


def versus(rows: Sequence[dict[str, Any]], base: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Two robots' :func:`link_orders` rows on the same runs and orders, compared run by run: per run the
    paired difference of their first-traversal margins (``rows`` minus ``base``, points of %) over the
    orders -- mean, standard error, "better" / "worse" when the mean is more than 2 standard errors from 0,
    else "level" -- and over the runs the mean difference, its standard error and the two counts."""
    if len(rows) != len(base) or not rows:
        raise ValueError("versus needs the same runs on both sides")
    per: list[dict[str, Any]] = []
    for r, b in zip(rows, base, strict=True):
        if (r["corpus"], r["topic"], len(r["margins"])) != (b["corpus"], b["topic"], len(b["margins"])):
            raise ValueError("versus needs the same runs and orders on both sides")
        mean, _sd, se = _paired([x - y for x, y in zip(r["margins"], b["margins"], strict=True)])
        verdict = _verdict(mean, se, ("better", "worse", "level"))
        per.append({"mean": mean, "se": se, "verdict": verdict})
    means = [p["mean"] for p in per]
    spread = statistics.stdev(means) / math.sqrt(len(means)) if len(means) > 1 else 0.0
    return {
        "runs": per,
        "mean": statistics.fmean(means),
        "se": spread,
        "better": sum(p["verdict"] == "better" for p in per),
        "worse": sum(p["verdict"] == "worse" for p in per),
    }


def target_row(results: dict[str, Any]) -> dict[str, Any]:
    """Issue 10's learning targets on one evaluation run, from ``oasis replay``'s results (raw P, %): the
    shipped robot's first traversal vs greedy-anchor, vs greedy-anchor-mean and vs the strongest of
    greedy-anchor, -dir and -mean; its best later traversal vs its first; the memorising hybrid's best
    traversal vs greedy-oracle; its worst later traversal vs its first (a dip on the way); and P / P_upper of
    every policy's first traversal."""
    pol = results["policies"]

    def first(name: str) -> float:
        return float(pol[name]["P"][0])

    robot = [float(p) for p in pol["whittle"]["P"]]
    hybrid = [float(p) for p in pol["whittle:hybrid"]["P"]]
    strongest = max(first(b) for b in SAME_EVIDENCE)
    return {
        "corpus": results["meta"]["corpus"],
        "topic": results["meta"]["topic"],
        "ratio": {name: float(e["P_ratio"][0]) for name, e in pol.items()},
        "robot_last_ratio": float(pol["whittle"]["P_ratio"][-1]),
        "t1_vs_greedy_anchor": pct(robot[0], first("greedy-anchor")),
        "t1_vs_greedy_anchor_mean": pct(robot[0], first("greedy-anchor-mean")),
        "t1_vs_strongest_same_evidence": pct(robot[0], strongest),
        "best_later_vs_t1": pct(max(robot[1:]), robot[0]) if len(robot) > 1 else None,
        # "keeps improving": the worst later traversal vs the first (below 0: a dip on the way)
        "worst_later_vs_t1": pct(min(robot[1:]), robot[0]) if len(robot) > 1 else None,
        "hybrid_vs_oracle": pct(max(hybrid), first("greedy-oracle")),
    }


def evaluate(
    runs: Sequence[tuple[str, str]],
    out: Path,
    *,
    traversals: int = 10,
    random_runs: int = 5,
    split: str | None = None,
    orders: int = 0,
) -> list[dict[str, Any]]:
    """Each run is exactly ``oasis replay --corpus C --topic T --policies EVAL_POLICIES --traversals 10
    --random-runs 5 --out DIR/run-K`` (its results.json and plots in that folder); returns
    :func:`target_row` per run, with, when ``orders`` >= 2, the first traversal paired against greedy-anchor
    over that many link orders (:func:`link_orders`: ``orders_mean``, ``orders_se``, ``orders_ahead_on``,
    ``orders_verdict``) and the robot's last traversal paired with its own first on each order
    (``orders_last_mean``, ``orders_last_se``, ``orders_last_verdict``, ``orders_dips_on``), and the same
    for :data:`FEATURES_ONLY`, the robot without its memory of the web (``features_last_mean``,
    ``features_last_se``, ``features_last_verdict``: what generalises, apart from memorisation).
    ``DIR/evaluation.json`` is rewritten (atomically) after every run, so a run that fails keeps the rows of
    those before it; the failure is a RuntimeError naming the command."""
    import contextlib
    import io

    from oasis.replay.cli import register, run
    from oasis.runtime.files import write_json_atomic

    parser = argparse.ArgumentParser(prog="oasis")
    register(parser.add_subparsers(dest="command"))
    rows: list[dict[str, Any]] = []
    for k, (corpus, topic) in enumerate(runs):
        folder = out / f"run-{k}"
        argv = ["replay", "--corpus", corpus, "--topic", topic, "--policies", EVAL_POLICIES]
        argv += ["--traversals", str(traversals), "--random-runs", str(random_runs), "--out", str(folder)]
        with contextlib.redirect_stdout(io.StringIO()):  # its table; the rows below carry what matters
            code = run(parser.parse_args([*argv, "--no-progress"]))
        if code != 0:
            raise RuntimeError(f"oasis {' '.join(argv)} failed (exit {code})")
        results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
        rows.append({"run": k, "command": "oasis " + " ".join(argv), **target_row(results)})
        if orders >= 2:
            features = [(FEATURES_ONLY, traversals)]  # the same robot without its memory of the web
            (paired,) = link_orders([(corpus, topic)], orders, traversals=traversals, others=features)
            rows[-1].update(
                orders=orders,
                orders_mean=paired["mean"],
                orders_se=paired["se"],
                orders_ahead_on=paired["ahead_on"],
                orders_verdict=paired["verdict"],
                orders_last_mean=paired["last_mean"],
                orders_last_se=paired["last_se"],
                orders_last_verdict=paired["last_verdict"],
                orders_dips_on=paired["dips_on"],
            )
            (alone,) = paired["others"]  # its later traversals: memorisation apart
            rows[-1].update(
                features_last_mean=alone["last_mean"],
                features_last_se=alone["last_se"],
                features_last_verdict=alone["last_verdict"],
            )
        write_json_atomic(out / "evaluation.json", {"split": split, "runs": rows}, indent=1)
        logger.info(
            "%d %s %r: t1 vs greedy-anchor %+.2f%%", k, corpus, topic, rows[-1]["t1_vs_greedy_anchor"]
        )
    return rows


def evaluation_table(rows: list[dict[str, Any]]) -> str:
    """The evaluation table (markdown) and the three learning targets' counts."""
    cols = ("random", "bfs", "greedy-parent", "greedy-anchor", "greedy-anchor-dir", "greedy-anchor-mean")
    head = ["greedy-oracle", "whittle t1 / last", "**t1 vs GA**", "vs g-a-mean", "vs strongest"]
    head += ["best later", "worst later", "hybrid vs oracle"]
    paired = bool(rows) and all("orders_mean" in r for r in rows)
    if paired:
        n_orders = rows[0]["orders"]
        head += [f"t1 vs GA over {n_orders} link orders: mean (SE), verdict"]
        head += [f"last vs own t1 over {n_orders} link orders: mean (SE), verdict, orders with a dip"]
    features = paired and all("features_last_mean" in r for r in rows)
    if features:
        head += ["the same without d(D) and the replayed weight (features only): mean (SE), verdict"]
    lines = ["| run | " + " | ".join((*cols, *head)) + " |", "|---" * (1 + len(cols) + len(head)) + "|"]

    def cell(x: float | None) -> str:
        return "-" if x is None else f"{x:+.2f}%"

    for r in rows:
        ratio = r["ratio"]
        cells = [f"{ratio[c]:.3f}" for c in (*cols, "greedy-oracle")]
        cells.append(f"{ratio['whittle']:.3f} / {r['robot_last_ratio']:.3f}")
        cells.append(f"**{cell(r['t1_vs_greedy_anchor'])}**")
        keys = ("t1_vs_greedy_anchor_mean", "t1_vs_strongest_same_evidence", "best_later_vs_t1")
        cells += [cell(r[k]) for k in (*keys, "worst_later_vs_t1", "hybrid_vs_oracle")]
        if paired:
            cells.append(f"{r['orders_mean']:+.2f}% ({r['orders_se']:.2f}), {r['orders_verdict']}")
            cells.append(
                f"{r['orders_last_mean']:+.2f}% ({r['orders_last_se']:.2f}), {r['orders_last_verdict']}, "
                f"{r['orders_dips_on']}"
            )
        if features:
            cells.append(
                f"{r['features_last_mean']:+.2f}% ({r['features_last_se']:.2f}), {r['features_last_verdict']}"
            )
        lines.append(f"| {r['corpus']} {r['topic']!r} | " + " | ".join(cells) + " |")
    n = len(rows)
    ahead = sum(r["t1_vs_greedy_anchor"] > 0 for r in rows)
    improving = sum((r["best_later_vs_t1"] or 0.0) > 0 for r in rows)
    dips = sum((r["worst_later_vs_t1"] or 0.0) < 0 for r in rows)
    hybrid = sum(r["hybrid_vs_oracle"] >= 0 for r in rows)
    lines.append("")
    lines.append(f"first traversal ahead of greedy-anchor: {ahead} of {n}")
    lines.append(
        f"improving within the traversals: {improving} of {n} (a later traversal below the first: {dips})"
    )
    lines.append(f"memorising hybrid at or above greedy-oracle: {hybrid} of {n}")
    own_words = ("improves", "flat", "falls")
    if paired:
        lines.append(
            f"first traversal over {rows[0]['orders']} link orders (paired, by 2 standard errors): "
            f"{_tally(rows, 'orders_verdict', ('ahead', 'level', 'behind'))} of {n}"
        )
        lines.append(
            f"last traversal vs the robot's own first over {rows[0]['orders']} link orders (paired, by 2 "
            f"standard errors): {_tally(rows, 'orders_last_verdict', own_words)} of {n}"
        )
    if features:
        lines.append(
            "the same without the web's memory, d(D) and the replayed weight (what generalises): "
            f"{_tally(rows, 'features_last_verdict', own_words)} of {n}"
        )
    return "\n".join(lines)


def train(config: ControllerConfig, traversals: int, runs: list[int]) -> QTable:
    """One table learned over the training runs in order, ``traversals`` each, from an empty table; each
    web's directory and prequential rows (web-specific) are dropped before the next web."""
    q = QTable(config.q_init)
    for i in runs:
        ps = whittle_p(_prepare(*TRAINING[i]), config, traversals, q)
        kept = QTable(q.q_init)
        for name, row in q.rows().items():
            if not name.startswith(WEB_ROWS):
                kept.put(name, row)
        q = kept
        logger.info("%s %r: P %s, %d rows", *TRAINING[i], [round(p, 1) for p in ps], len(q))
    return q


def _config(
    parser: argparse.ArgumentParser, flag: str, text: str, *, start: str | None = None
) -> ControllerConfig:
    """The robot as shipped with the JSON object ``text``'s fields replaced (``start``: the table it starts
    from unless ``text`` names one); anything else is a usage error naming ``flag``."""
    base = SHIPPED if start is None else replace(SHIPPED, start=start)
    try:
        fields = json.loads(text)
        if not isinstance(fields, dict):
            raise TypeError(f"got {type(fields).__name__}")
        return replace(base, **fields)
    except (ValueError, TypeError) as exc:
        parser.error(f"{flag} must be a JSON object of ControllerConfig fields: {exc}")


_HELD: list[Any] = []  # the output folders' locks this command holds (released when ``main`` returns)


def _out_folder(parser: argparse.ArgumentParser, out: str) -> Path:
    """``--out``, created and written to once before any run (a read-only, full or unwritable folder is a
    usage error now, not after minutes of replays), and held for this command (another run given the same
    folder is a usage error: the two would leave a mix of both)."""
    from oasis.runtime.files import claim_output_folder

    try:
        lock = claim_output_folder(out)
    except OSError as exc:  # FileWriteError or FolderBusy, naming the folder
        parser.error(f"--out {out!r}: {exc}")
    _HELD.append(lock)
    return Path(out)


def _named_runs(split: str | None, runs: list[int]) -> tuple[tuple[tuple[str, str], ...], list[str]]:
    """The (corpus, topic) runs a command measures and their labels: a named split's (``holdout-N/K``), else
    the given runs of TRAINING (their numbers)."""
    if split:
        return SPLITS[split], [f"{split}/{k}" for k in range(len(SPLITS[split]))]
    return tuple(TRAINING[i] for i in runs), [str(i) for i in runs]


def _orders(parser: argparse.ArgumentParser, args: argparse.Namespace, runs: list[int]) -> int:
    from oasis.replay.plots import plot_later_traversals, plot_link_orders, plot_margin_by_size
    from oasis.runtime.files import write_json_atomic

    if args.orders < 2:
        parser.error("--orders must be >= 2 (a standard error needs two)")
    if args.traversals < 1:
        parser.error("--traversals must be >= 1")
    config = _config(parser, "--config", args.config)
    other = None if args.versus is None else _config(parser, "--versus", args.versus)
    folder = _out_folder(parser, args.out)
    named, labels = _named_runs(args.split, runs)
    later = args.traversals > 1
    # the other robot: the same runs, orders and traversals, compared
    extra = [] if other is None else [(other, args.traversals)]
    rows = link_orders(named, args.orders, config, args.traversals, others=extra)
    for label, row in zip(labels, rows, strict=True):
        row["run"] = label
    compared = None
    if other is not None:  # run by run
        theirs = [row.pop("others")[0] for row in rows]
        compared = versus(rows, theirs)
        for row, diff, their in zip(rows, compared["runs"], theirs, strict=True):
            row["versus"] = diff
            if later:  # the other robot's traversal N vs its own first, as the first robot's
                diff["later"] = {k: their[k] for k in ("last_mean", "last_se", "last_verdict", "worst_mean")}
    write_json_atomic(folder / "orders.json", rows, indent=1)  # a kill mid-write keeps the previous file
    plot_link_orders(rows, folder / "orders.png")
    plot_margin_by_size(rows, folder / "orders-size.png")
    head = f"run | as served % | mean over {args.orders} link orders % | SE | ahead on | verdict"
    if later:
        n = args.traversals
        head += (
            f" | t{n} vs own t1: mean % (SE), verdict, improves on | best later % | worst later %, dips on"
        )
        plot_later_traversals(rows, folder / "orders-later.png")
    print(head)
    for r in rows:
        line = (
            f"{r['run']} {r['corpus']} {r['topic']!r} | {r['as_served']:+.2f} | {r['mean']:+.2f} | "
            f"{r['se']:.2f} | {r['ahead_on']} of {args.orders} | {r['verdict']}"
        )
        if later:
            line += (
                f" | {r['last_mean']:+.2f} ({r['last_se']:.2f}), {r['last_verdict']}, {r['improves_on']} of "
                f"{args.orders} | {r['best_mean']:+.2f} | {r['worst_mean']:+.2f}, "
                f"{r['dips_on']} of {args.orders}"
            )
        print(line)
    print(
        f"as served: ahead on {sum(r['as_served'] > 0 for r in rows)} of {len(rows)}; over link orders: "
        + _tally(rows, "verdict", ("ahead", "level", "behind"))
        + f"; mean over runs {statistics.fmean(r['mean'] for r in rows):+.2f}%"
    )
    for g in by_size(rows):
        print(
            f"  {g['label']}: {g['runs']} runs, mean {g['mean']:+.2f}%, ahead {g['ahead']}, level "
            f"{g['level']}, behind {g['behind']}"
        )
    if compared is not None:
        print(f"against --versus {args.versus}, first traversal, paired run by run over the same orders:")
        for r in rows:
            d = r["versus"]
            print(
                f"{r['run']} {r['corpus']} {r['topic']!r} | {d['mean']:+.2f} ({d['se']:.2f}), {d['verdict']}"
            )
        print(
            f"difference over runs: mean {compared['mean']:+.2f} (SE {compared['se']:.2f}); better on "
            f"{compared['better']}, worse on {compared['worse']} of {len(rows)} (by 2 standard errors)"
        )
        if later:
            theirs_later = [r["versus"]["later"] for r in rows]
            print(
                f"the --versus robot's traversal {args.traversals} vs its own first, over link orders: "
                + _tally(theirs_later, "last_verdict", ("improves", "flat", "falls"))
                + f"; mean {statistics.fmean(t['last_mean'] for t in theirs_later):+.2f}%"
            )
    if later:
        print(
            f"traversal {args.traversals} vs the robot's own first, over link orders: "
            + _tally(rows, "last_verdict", ("improves", "flat", "falls"))
            + f"; some later traversal below the first on {sum(r['dips_on'] > 0 for r in rows)} runs"
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    finally:
        while _HELD:
            _HELD.pop().release()


def _main(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(prog="python -m oasis.replay.shipped", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("compare")
    c.add_argument("configs", nargs="*", default=["{}"])
    c.add_argument("--traversals", type=int, default=3)
    c.add_argument("--table", default=None)
    c.add_argument("--runs", default=",".join(str(i) for i in range(len(TRAINING))))
    c.add_argument("--cv", action="store_true")
    c.add_argument("--ceiling", action="store_true", help="also print the per-run best in hindsight")
    n = sub.add_parser("noise")
    n.add_argument("--out", required=True, help="folder for noise.json and noise.png")
    n.add_argument("--shuffles", type=int, default=20)
    n.add_argument("--runs", default=",".join(str(i) for i in range(len(TRAINING))))
    il = sub.add_parser("inlink")
    il.add_argument("--out", required=True, help="folder for inlink.json and inlink.png")
    il.add_argument("--runs", default=",".join(str(k) for k in range(len(TRAINING))))
    il.add_argument("--split", choices=sorted(SPLITS), default=None, help="a named split instead of --runs")
    o = sub.add_parser("orders")
    o.add_argument("--out", required=True, help="folder for orders.json and orders.png")
    o.add_argument("--orders", type=int, default=10)
    o.add_argument("--runs", default=",".join(str(i) for i in range(len(TRAINING))))
    o.add_argument("--split", choices=sorted(SPLITS), default=None, help="a named split instead of --runs")
    o.add_argument("--config", default="{}", help="JSON overrides of the robot as shipped (its table kept)")
    o.add_argument(
        "--traversals",
        type=int,
        default=1,
        help="learn on over this many traversals of each order and pair the later ones with the first",
    )
    o.add_argument(
        "--versus",
        default=None,
        help="JSON overrides of the robot as shipped for a second robot ('{}': as shipped) compared with "
        "--config's run by run on the same orders",
    )
    t = sub.add_parser("train")
    t.add_argument("config", nargs="?", default="{}")
    t.add_argument("--out", required=True)
    t.add_argument("--traversals", type=int, default=3)
    # the shipped table's runs: session 5's training split (session 6's design, trained on all nine runs, is
    # not shipped: docs/replay.md "Session 6")
    t.add_argument("--runs", default="0,1,2,3,4")
    e = sub.add_parser("evaluate")
    e.add_argument("--split", choices=sorted(SPLITS), default=None, help="a named evaluation split")
    e.add_argument("--corpus", action="append", default=[], help="a run's corpus (with --topic; repeatable)")
    e.add_argument("--topic", action="append", default=[], help="a run's topic (one per --corpus)")
    e.add_argument("--out", required=True, help="folder: run-K/ (results.json, plots) and evaluation.json")
    e.add_argument("--traversals", type=int, default=10)
    e.add_argument("--random-runs", type=int, default=5)
    e.add_argument(
        "--orders",
        type=int,
        default=10,
        help="also pair the first traversal with greedy-anchor's over this many link orders (0: not)",
    )
    cl = sub.add_parser("clean", help="every clean split's recorded run, the totals and their sign tests")
    cl.add_argument("--out", default=None, help="also write clean.json (rows and totals) and clean.png here")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    if args.command == "evaluate":
        return _evaluate(parser, args)
    if args.command == "clean":
        return _clean(parser, args)
    try:
        runs = [int(x) for x in args.runs.split(",")]
    except ValueError:
        parser.error(f"--runs must be comma-separated run numbers, got {args.runs!r}")
    if any(not 0 <= i < len(TRAINING) for i in runs):
        parser.error(f"--runs must be in 0..{len(TRAINING) - 1} (the runs of TRAINING), got {args.runs!r}")
    if args.command == "train":
        from oasis.runtime.files import FileWriteError, writable_folder

        config = _config(parser, "CONFIG", args.config, start="empty")
        try:  # the table is written after minutes of training: its folder is checked first
            writable_folder(Path(args.out).resolve().parent)
        except FileWriteError as exc:
            parser.error(f"--out {args.out!r}: {exc}")
        trained = train(config, args.traversals, runs)
        try:
            trained.save(args.out)
        except OSError as exc:  # the disk filled or went read-only during the training
            parser.exit(1, f"{parser.prog}: the trained table was not saved: {exc}\n")
        return 0
    if args.command == "orders":
        return _orders(parser, args, runs)
    if args.command == "inlink":
        return _inlink(parser, args, runs)
    if args.command == "noise":
        if args.shuffles < 2:
            parser.error("--shuffles must be >= 2 (a spread needs two draws)")
        from oasis.replay.plots import plot_tie_noise
        from oasis.runtime.files import write_json_atomic

        folder = _out_folder(parser, args.out)
        rows = tie_noise(runs, args.shuffles)
        write_json_atomic(folder / "noise.json", rows, indent=1)  # a kill mid-write keeps the previous file
        plot_tie_noise(rows, folder / "noise.png")
        print("run | robot % | shuffled ties: mean % | sd % | min % | max % | robot / sd")
        for r in rows:
            in_sd = "-" if r["robot_in_sd"] is None else f"{r['robot_in_sd']:+.1f}"
            print(
                f"{r['run']} {r['corpus']} {r['topic']!r} | {r['robot']:+.2f} | {r['shuffled_mean']:+.2f} | "
                f"{r['shuffled_sd']:.2f} | {r['shuffled_min']:+.2f} | {r['shuffled_max']:+.2f} | {in_sd}"
            )
        return 0
    table = QTable.load(args.table) if args.table else None
    configs = [_config(parser, "CONFIG", text, start="empty") for text in args.configs]
    rows = compare(configs, args.traversals, table, runs, cv=args.cv)
    for text, row in zip(args.configs, rows, strict=True):
        t1, t1d, last = row["t1_vs_greedy_anchor"], row["t1_vs_greedy_anchor_dir"], row["last_vs_t1"]
        strong = row["t1_vs_strongest_same_evidence"]
        print(
            text,
            "| t1 vs greedy-anchor %:",
            " ".join(f"{x:+.2f}" for x in t1),
            f"mean {sum(t1) / len(t1):+.2f} min {min(t1):+.2f}",
            "| vs greedy-anchor-dir %:",
            " ".join(f"{x:+.2f}" for x in t1d),
            "| vs greedy-anchor-mean %:",
            " ".join(f"{x:+.2f}" for x in row["t1_vs_greedy_anchor_mean"]),
            "| vs the strongest of the three %:",
            " ".join(f"{x:+.2f}" for x in strong),
            f"mean {sum(strong) / len(strong):+.2f} (ahead on {sum(x > 0 for x in strong)} of {len(strong)})",
            f"| t{args.traversals} vs t1 %:",
            " ".join(f"{x:+.2f}" for x in last),
            "| best later vs t1 %:",
            " ".join(f"{x:+.2f}" for x in row["best_later_vs_t1"]),
            f"(improving on {sum(x > 0 for x in row['best_later_vs_t1'])} of {len(last)})",
            "| worst later vs t1 %:",
            " ".join(f"{x:+.2f}" for x in row["worst_later_vs_t1"]),
            f"(a later traversal below the first on {sum(x < 0 for x in row['worst_later_vs_t1'])})",
            flush=True,
        )
    if args.ceiling:
        ceiling = hindsight_ceiling(rows)
        print(
            "hindsight ceiling | t1 vs greedy-anchor %:",
            " ".join(f"{x:+.2f}" for x in ceiling["best"]),
            f"| ahead on {ceiling['ahead']} of {len(ceiling['best'])}",
            "| behind on runs",
            ",".join(str(runs[i]) for i in ceiling["behind"]) or "none",
            "| best configuration per run:",
            " ".join(str(c) for c in ceiling["config"]),
            flush=True,
        )
    return 0


def _clean(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from oasis.replay.record import load_record, record_table, totals

    try:
        rows = load_record()
    except ValueError as exc:
        parser.exit(1, f"{parser.prog}: {exc}\n")
    folder = None if args.out is None else _out_folder(parser, args.out)
    print(record_table(rows))
    if folder is not None:
        from oasis.replay.plots import plot_clean_splits
        from oasis.runtime.files import write_json_atomic

        data = [asdict(r) for r in rows]
        write_json_atomic(folder / "clean.json", {"splits": data, "totals": totals(rows)}, indent=1)
        plot_clean_splits(data, folder / "clean.png")
    return 0


def _inlink(parser: argparse.ArgumentParser, args: argparse.Namespace, runs: list[int]) -> int:
    from oasis.replay.plots import plot_inlink
    from oasis.runtime.files import write_json_atomic

    folder = _out_folder(parser, args.out)
    named, labels = _named_runs(args.split, runs)
    rows = [{"run": label, **row} for label, row in zip(labels, inlink_evidence(named), strict=True)]
    summary = inlink_summary(rows)
    write_json_atomic(folder / "inlink.json", {"summary": summary, "runs": rows}, indent=1)
    plot_inlink(rows, folder / "inlink.png")
    print(
        "run | greedy-anchor-mean vs greedy-anchor % | robot vs greedy-anchor % "
        "| robot vs greedy-anchor-mean %"
    )
    for r in rows:
        over = r["robot_over_mean"]
        print(f"{r['run']} {r['corpus']} {r['topic']!r} | {r['mean']:+.2f} | {r['robot']:+.2f} | {over:+.2f}")

    def corr(x: float | None) -> str:
        return "-" if x is None else f"{x:.2f}"

    n = summary["runs"]
    print(
        f"correlation of the robot's margin with the in-link mean's: {corr(summary['pearson'])} "
        f"(ranks {corr(summary['spearman'])}); the same sign on {summary['same_sign']} of {n}"
    )
    if n:
        print(
            f"robot vs greedy-anchor-mean: median {summary['robot_over_mean_median']:+.2f}%, mean "
            f"{summary['robot_over_mean_mean']:+.2f}%, within 0.5% on "
            f"{summary['robot_within_half_percent_of_mean']} of {n}; ahead of greedy-anchor: "
            f"the robot {summary['robot_ahead']}, greedy-anchor-mean {summary['mean_ahead']} of {n}"
        )
    both = summary["corpora_with_both"]
    level = n - summary["mean_helps"] - summary["mean_hurts"]
    print(
        f"the in-link mean helps on {summary['mean_helps']}, is level on {level}, hurts on "
        f"{summary['mean_hurts']} of {n} (beyond {INLINK_LEVEL}%); the robot is ahead of greedy-anchor on "
        f"{summary['robot_ahead_where_mean_helps']}, {summary['robot_ahead_where_mean_is_level']} and "
        f"{summary['robot_ahead_where_mean_hurts']} of them"
    )
    print(
        f"corpora with a topic where the mean helps and one where it hurts: {len(both)} of "
        f"{summary['corpora']}" + (f" ({', '.join(both)})" if both else "")
    )
    return 0


def _evaluate(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if len(args.corpus) != len(args.topic):
        parser.error("give one --topic per --corpus")
    if (args.split is None) == (not args.corpus):
        parser.error("give either --split or --corpus/--topic pairs")
    if args.traversals < 2 or args.random_runs < 1:
        parser.error("--traversals must be >= 2 (improvement is measured on later ones), --random-runs >= 1")
    if args.orders == 1 or args.orders < 0:
        parser.error("--orders must be 0 (not paired) or >= 2 (a standard error needs two)")
    runs = SPLITS[args.split] if args.split is not None else tuple(zip(args.corpus, args.topic, strict=True))
    folder = _out_folder(parser, args.out)
    try:
        rows = evaluate(
            runs,
            folder,
            traversals=args.traversals,
            random_runs=args.random_runs,
            split=args.split,
            orders=args.orders,
        )
    except RuntimeError as exc:
        print(f"evaluate: {exc}; the runs before it are in {folder / 'evaluation.json'}", file=sys.stderr)
        return 1
    print(evaluation_table(rows))
    if args.split is not None:
        from oasis.replay.record import record_row

        row = json.dumps(record_row(args.split, rows))
        print(f"\nits row for replay/oasis/replay/clean_splits.json (fill in session and robot):\n{row}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
