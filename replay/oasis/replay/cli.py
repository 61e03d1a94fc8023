"""``oasis replay``: replay crawl policies over an offline web graph (papers/004's experiment).

With ``--json`` stdout carries exactly one JSON object::

    {"pages": int, "reachable": int, "upper_P": float,
     "strongest_baseline": {"policy": NAME, "P": float},
     "policies": {NAME: {"P": [raw P per traversal], "P_ratio": [float per traversal], ...}}, ...}

(P_ratio = P / P_upper; non-learning policies have one entry; learning policies add "P_vs_strongest", their
raw P over the strongest practical baseline's -- the best of random, bfs, greedy-parent, greedy-anchor run --
and "memorising", true for states keyed on a URL: parent, url, hybrid). The progress bar and logs go to
stderr.
``--out DIR`` writes results.json (with the fetch orders and R/F/M curves) and PNG plots. The module's top
imports only the standard library; the harness is imported when the command runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from oasis.replay.experiment import ExperimentConfig
    from oasis.robot.scheduling import QTable

logger = logging.getLogger(__name__)

_BULKY = ("order", "first_order", "R", "F", "M")


def register(sub: argparse._SubParsersAction[Any]) -> None:
    from oasis.robot.scheduling import SHIPPED, STATE_NAMES

    p = sub.add_parser(
        "replay",
        help="compare crawl policies on an offline web graph (P / P_upper, papers/004 Figures 3-5)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--corpus",
        required=True,
        help="folder of HTML files, WARC, GraphML/edge list, debian:NAME or synthetic:KEY=VALUE,...",
    )
    p.add_argument(
        "--seed-url",
        action="append",
        default=None,
        help="seed page: a URL or a page path relative to the corpus root, e.g. index.html (repeatable; "
        "default: the corpus's)",
    )
    p.add_argument(
        "--topic",
        default=None,
        help="topic words for r(i) (TF-IDF cosine); for synthetic webs a topic name uses ground truth",
    )
    p.add_argument(
        "--policies",
        default="upper,random,bfs,greedy-oracle,greedy-parent,greedy-anchor,whittle:parent,whittle:hybrid",
        help="comma-separated: upper, random, bfs, greedy-oracle, greedy-parent, greedy-anchor, "
        "greedy-anchor-dir, greedy-anchor-mean, greedy-anchor-shuffled, greedy-lookahead, whittle, "
        "whittle:STATE; on a changing web "
        "each optionally +RECRAWL (none, whittle, uniform, adaptive, or whittle-true: the Whittle hook with "
        "the true rates, a reference)",
    )
    p.add_argument("--traversals", type=int, default=10, help="traversals of the graph for learning policies")
    p.add_argument("--budget", type=int, default=None, help="fetches per run (default: all reachable pages)")
    p.add_argument("--m", type=int, default=1, help="documents fetched per time step")
    p.add_argument(
        "--random-runs", type=int, default=10, help="runs averaged for random and greedy-anchor-shuffled"
    )
    p.add_argument("--seed", type=int, default=0, help="random seed")
    p.add_argument(
        "--state", default=SHIPPED.state, choices=STATE_NAMES, help="local state for 'whittle' (as shipped)"
    )
    p.add_argument("--alpha", type=float, default=SHIPPED.alpha, help="Eq. 10 step size (as shipped)")
    p.add_argument("--gamma", type=float, default=SHIPPED.gamma, help="Eq. 10 discount")
    p.add_argument("--epsilon", type=float, default=0.0, help="exploration on the first traversal")
    p.add_argument("--epsilon-decay", type=float, default=0.5, help="epsilon factor per traversal")
    p.add_argument(
        "--prior",
        default=SHIPPED.prior,
        choices=("zero", "parent", "anchor"),
        help="initial Q of unseen states: zero (the paper), the discovering parent's relevance, or parent + "
        "anchor-text relevance",
    )
    p.add_argument(
        "--rediscovery",
        default="restate",
        choices=("restate", "keep"),
        help="a fringe page linked again by a more relevant page: re-derive its feature state, or keep it",
    )
    p.add_argument(
        "--index",
        default=SHIPPED.index,
        choices=("state", "residual"),
        help="fringe index: one v(x) per state, or the residual b_i + c(x) per page (as shipped)",
    )
    p.add_argument("--shrink", type=float, default=SHIPPED.shrink, help="residual: pseudo-samples at c = 0")
    p.add_argument(
        "--child-weight",
        type=float,
        default=SHIPPED.child_weight,
        help="residual: weight of the children in Eq. 10",
    )
    p.add_argument(
        "--state-child-weight",
        type=float,
        default=SHIPPED.state_child_weight,
        help="state index (whittle:parent, url, hybrid): weight of the children in Eq. 10 (1: as written)",
    )
    p.add_argument("--w-min", type=float, default=SHIPPED.w_min, help="residual: floor of the slope on b")
    p.add_argument(
        "--carry", type=float, default=SHIPPED.carry, help="residual: visits a shipped table counts"
    )
    p.add_argument(
        "--carry-state",
        type=float,
        default=SHIPPED.carry_state,
        help="residual: visits a shipped table's per-state rows count (default: as shipped)",
    )
    p.add_argument(
        "--fit-prior",
        type=float,
        default=SHIPPED.fit_prior,
        help="residual: pseudo-samples shrinking the calibration's slopes towards one",
    )
    p.add_argument(
        "--dir-weight", type=float, default=SHIPPED.dir_weight, help="residual: weight of the directory term"
    )
    p.add_argument(
        "--select-tau",
        type=_optional_float,
        default=SHIPPED.select_tau,
        help="residual: head start (nats) of the training choice in prequential selection; 'off': none",
    )
    p.add_argument(
        "--duel-z",
        type=_optional_float,
        default=SHIPPED.duel_z,
        help="residual: z of the prequential duel against greedy-anchor; 'off': no duel",
    )
    p.add_argument(
        "--start",
        default=SHIPPED.start,
        choices=("empty", "shipped"),
        help="the table 'whittle' starts from without --load-q: empty, or the shipped one (as shipped)",
    )
    p.add_argument("--no-learn", action="store_true", help="evaluate loaded Q-tables without updating them")
    p.add_argument("--no-anchors", action="store_true", help="skip anchor-text relevance")
    p.add_argument(
        "--raw-anchors",
        action="store_true",
        help="score a link by its anchor as written (before session 23: no URL words, identifiers uncut)",
    )
    p.add_argument("--load-q", type=Path, default=None, help="Q-table to start the learning policy from")
    p.add_argument("--save-q", type=Path, default=None, help="write the learned Q-table here")
    p.add_argument(
        "--modify-rate", type=float, default=0.0, help="mean Poisson modification rate per page/step"
    )
    p.add_argument("--delete-rate", type=float, default=0.0, help="mean Poisson deletion rate per page/step")
    p.add_argument("--create-fraction", type=float, default=0.0, help="share of pages created during the run")
    p.add_argument("--create-rate", type=float, default=0.0, help="rate at which absent pages appear")
    p.add_argument(
        "--last-modified",
        action="store_true",
        help="the changing web answers Last-Modified: a first retrieval tells the Whittle re-crawl hook "
        "whether the page changed since the crawl started, as the live robot learns it",
    )
    p.add_argument(
        "--recrawl",
        default="auto",
        choices=("auto", "none", "whittle", "uniform", "adaptive"),
        help="re-crawl of plain policy names (a name FRINGE+RECRAWL picks its own): never, the "
        "ephemeral-content Whittle index with online change-rate estimates (papers/002), a uniform "
        "interval, or Nutch's "
        "AdaptiveFetchSchedule; auto (default): whittle on a changing web, none on a static one",
    )
    p.add_argument(
        "--uniform-interval",
        type=float,
        default=None,
        help="uniform re-crawl interval and adaptive's initial interval, in steps (default: reachable pages "
        "/ m)",
    )
    p.add_argument(
        "--recrawl-initial-rate",
        default=None,
        help="change rate per step assumed before any re-crawl observation, or 'elapsed' (scale-free: a "
        "fraction of a change over the crawl's elapsed time); the pooled prior learned from all pages' "
        "re-crawls replaces it (default: WhittleRecrawl's)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout (and nothing else)")
    p.add_argument("--out", type=Path, default=None, help="write results.json and PNG plots here")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def _optional_float(text: str) -> float | None:
    return None if text == "off" else float(text)


def _fail(msg: str) -> int:
    print(f"oasis replay: error: {msg}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    from oasis.replay.experiment import ExperimentConfig, is_learning
    from oasis.replay.simulator import ChangeModel
    from oasis.robot.scheduling import SHIPPED, QTable
    from oasis.runtime.files import FolderLock, claim_output_folder, writable_folder

    policies = tuple(p.strip() for p in args.policies.split(",") if p.strip())
    learners = [p for p in policies if is_learning(p)]
    if (args.load_q or args.save_q) and len(learners) != 1:
        return _fail("--load-q/--save-q need exactly one learning policy (whittle or whittle:STATE)")
    try:
        controller = dataclasses.replace(
            SHIPPED,
            state=args.state,
            alpha=args.alpha,
            gamma=args.gamma,
            epsilon=args.epsilon,
            learn=not args.no_learn,
            prior=args.prior,
            rediscovery=args.rediscovery,
            index=args.index,
            shrink=args.shrink,
            child_weight=args.child_weight,
            state_child_weight=args.state_child_weight,
            carry=args.carry,
            carry_state=args.carry_state,
            fit_prior=args.fit_prior,
            dir_weight=args.dir_weight,
            select_tau=args.select_tau,
            duel_z=args.duel_z,
            w_min=args.w_min,
            start=args.start,
        )
        changes = ChangeModel(
            modify_rate=args.modify_rate,
            delete_rate=args.delete_rate,
            create_fraction=args.create_fraction,
            create_rate=args.create_rate,
            last_modified=args.last_modified,
        )
        cfg = ExperimentConfig(
            policies=policies,
            traversals=args.traversals,
            m=args.m,
            budget=args.budget,
            random_runs=args.random_runs,
            seed=args.seed,
            controller=controller,
            epsilon_decay=args.epsilon_decay,
            changes=None if changes.static else changes,
            recrawl=args.recrawl,
            uniform_interval=args.uniform_interval,
        )
        q_tables = {learners[0]: QTable.load(args.load_q)} if args.load_q else None
    except (ValueError, OSError) as exc:
        return _fail(str(exc))
    lock: FolderLock | None = None
    try:  # the outputs are written at the end: an unwritable place is an error now, not after the replay
        if args.out is not None:
            lock = claim_output_folder(args.out)
        if args.save_q is not None:
            writable_folder(args.save_q.parent)
    except OSError as exc:  # FileWriteError or FolderBusy, naming the folder
        if lock is not None:
            lock.release()
        return _fail(str(exc))
    try:
        return _replay(args, learners, cfg, q_tables)
    finally:
        if lock is not None:
            lock.release()


def _replay(
    args: argparse.Namespace,
    learners: list[str],
    cfg: ExperimentConfig,
    q_tables: dict[str, QTable] | None,
) -> int:
    """The replay itself, its outputs written and its table printed (``run`` has checked the arguments and
    holds ``--out``)."""
    from tqdm import tqdm

    from oasis.replay.experiment import Experiment, prepare
    from oasis.web.corpus import load_corpus

    try:
        corpus = load_corpus(args.corpus)
        prepared = prepare(
            corpus,
            args.topic,
            seed_urls=args.seed_url,
            anchors=not args.no_anchors,
            raw_anchors=args.raw_anchors,
        )
    except (ValueError, OSError) as exc:
        return _fail(f"cannot load corpus {args.corpus!r}: {exc}")
    from oasis.robot.scheduling.recrawl import WhittleRecrawl

    recrawl = functools.partial(WhittleRecrawl)
    if args.recrawl_initial_rate is not None:
        if args.recrawl_initial_rate == "elapsed":
            recrawl = functools.partial(WhittleRecrawl, prior_rate=None)
        elif args.recrawl_initial_rate is not None:
            try:
                rate0 = float(args.recrawl_initial_rate)
            except ValueError:
                rate0 = 0.0
            if not rate0 > 0:
                return _fail("--recrawl-initial-rate must be > 0 or 'elapsed'")
            recrawl = functools.partial(WhittleRecrawl, prior_rate=rate0)
    experiment = Experiment(prepared, cfg, q_tables=q_tables, recrawl=recrawl)
    bar = tqdm(
        total=experiment.total_steps(),
        desc="replay",
        unit="step",
        file=sys.stderr,
        disable=args.no_progress,
        mininterval=0.5,
    )
    experiment.progress = bar.update
    try:
        results = experiment.run()
    finally:
        bar.close()
    results["command"] = "oasis replay " + " ".join(sys.argv[2:]) if len(sys.argv) > 2 else "oasis replay"
    failed = _save_outputs(args, results, experiment.q_tables.get(learners[0]) if learners else None)
    if args.json:
        slim = dict(results)
        slim["policies"] = {
            k: {f: v for f, v in e.items() if f not in _BULKY} for k, e in results["policies"].items()
        }
        print(json.dumps(slim))
    else:
        print(format_table(results))
    for message in failed:
        print(f"oasis replay: error: {message}", file=sys.stderr)
    return 1 if failed else 0


def _save_outputs(args: argparse.Namespace, results: dict[str, Any], q: Any) -> list[str]:
    """Write ``--save-q`` and ``--out`` (results.json, then the plots), each on its own: the disk may fill
    or turn read-only during a replay, and one output that cannot be written does not stop the others. The
    errors, each naming its file (the old file, if any, left as it was)."""
    from oasis.replay.plots import write_plots
    from oasis.runtime.files import write_json_atomic

    failed: list[str] = []
    if args.save_q and q is not None:
        try:
            q.save(args.save_q)
        except OSError as exc:
            failed.append(f"the Q-table was not saved: {exc}")
    if args.out is not None:
        try:
            write_json_atomic(args.out / "results.json", results, indent=1)  # a kill mid-write keeps the old
        except OSError as exc:
            failed.append(f"results.json was not saved: {exc}")
        try:
            for path in write_plots(results, args.out):
                logger.info("wrote %s", path)
        except OSError as exc:
            failed.append(f"the plots were not all saved: {exc}")
    return failed


def format_table(results: dict[str, Any]) -> str:
    meta = results.get("meta", {})
    lines = [
        f"corpus {meta.get('corpus')}  topic {meta.get('topic')!r}  pages {results['pages']}  "
        f"reachable {results['reachable']}  budget {results['budget']}  m {results['m']}  "
        f"upper P {results['upper_P']:.2f}",
        f"{'policy':<22} {'P/P_upper':>10}  per traversal",
    ]
    for name, e in results["policies"].items():
        ratios = e["P_ratio"]
        extra = ""
        if len(ratios) > 1:
            extra = " ".join(f"{r:.3f}" for r in ratios)
        elif "P_ratio_std" in e:
            extra = f"± {e['P_ratio_std']:.3f} over {e['runs']} runs (min {e['P_ratio_min']:.3f})"
        if "P_vs_strongest" in e:
            extra += "  vs strongest: " + " ".join(f"{r:.3f}" for r in e["P_vs_strongest"])
            extra += " (memorising)" if e.get("memorising") else " (generalising)"
        lines.append(f"{name:<22} {ratios[-1]:>10.4f}  {extra}")
    best = results.get("strongest_baseline")
    if best:
        lines.append(f"strongest practical baseline: {best['policy']} (P {best['P']:.2f})")
    return "\n".join(lines)
