"""Subcommands: ``oasis ephemeral``, ``oasis whittle-learn``, ``oasis recrawl-eval``.

``oasis ephemeral --json`` prints one JSON object::

    {"policies": {NAME: {"mean_reward": float, "std": float, ...}}, "M": .., "stochastic": .., ...}

(std over seeds; 0 when deterministic). ``oasis whittle-learn --json`` prints::

    {"exact_indices": [...], "learned_indices": [...], "reward_ratio": float, ...}

(reward_ratio = learned-policy reward / exact-index-policy reward, averaged over the last 20% of steps).
Progress bars and logs go to stderr; plots are PNG files in ``--plots DIR``. This module imports only the
standard library at its top (``oasis --help`` lists the commands without it; a command imports what it runs).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

EPHEMERAL_POLICIES = ("whittle", "greedy", "round-robin", "best-only", "optimal", "learned", "lspe")
DEFAULT_POLICIES = "whittle,greedy,round-robin,best-only,optimal,learned"


def _add_parser(sub: argparse._SubParsersAction[Any], name: str, help_text: str) -> argparse.ArgumentParser:
    """A subcommand whose ``--help`` shows this module's docstring (the JSON it prints) as written."""
    return sub.add_parser(
        name, help=help_text, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = _add_parser(
        sub,
        "ephemeral",
        "crawl sources of ephemeral content: Whittle index vs baselines (papers/002, 003, 000)",
    )
    src = p.add_mutually_exclusive_group()
    src.add_argument(
        "--sources", type=Path, help='JSON {"T": 1.0, "sources": [{"xi", "mu", "lam", "C"}, ...]}'
    )
    src.add_argument("--example", choices=["paper"], help="built-in model: paper = papers/002 Table 1")
    p.add_argument("--M", type=float, default=1.0, help="crawls per period (cost budget with --budget)")
    p.add_argument(
        "--policies", default=DEFAULT_POLICIES, help=f"comma-separated from {', '.join(EPHEMERAL_POLICIES)}"
    )
    p.add_argument("--stochastic", action="store_true", help="Poisson arrivals (papers/002 Eq. 19)")
    p.add_argument("--steps", type=int, default=None, help="periods (default 2000; 10000 stochastic)")
    p.add_argument(
        "--burn-in", type=int, default=None, help="periods left out of the mean (default steps/10)"
    )
    p.add_argument("--seed", type=int, default=0, help="first random seed")
    p.add_argument("--seeds", type=int, default=5, help="seeds for the spread of stochastic / learned runs")
    p.add_argument("--budget", action="store_true", help="fill the cost budget M with C_i (Theorem 1)")
    p.add_argument("--xi-dist", choices=["exponential", "const"], default="exponential")
    p.add_argument("--plots", type=Path, default=None, help="folder for PNG plots (Figures 1-4)")
    p.add_argument("--plot-steps", type=int, default=40, help="periods shown in the state plots")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_plotting(_ephemeral))

    q = _add_parser(sub, "whittle-learn", "Whittle-index Q-learning on N identical arms (papers/001)")
    msrc = q.add_mutually_exclusive_group()
    msrc.add_argument("--model", type=Path, help='JSON {"P0": [[..]], "P1": [[..]], "R0": [..], "R1": [..]}')
    msrc.add_argument("--example", choices=["circulant", "restart"], help="papers/001 Section IV examples")
    q.add_argument("--arms", type=int, default=100)
    q.add_argument("--active", type=int, default=20)
    q.add_argument("--steps", type=int, default=20_000)
    q.add_argument("--epsilon", type=float, default=0.1)
    q.add_argument("--C", type=float, default=0.2, help="alpha(n) = C / ceil(n / 500)")
    q.add_argument("--C-prime", type=float, default=0.5, help="gamma(n) = C' / (1 + ceil(n log n / 500))")
    q.add_argument(
        "--constant-alpha", type=float, default=None, help="constant fast step (with --constant-gamma)"
    )
    q.add_argument("--constant-gamma", type=float, default=None, help="constant slow step")
    q.add_argument(
        "--sequential",
        action="store_true",
        help="one update per arm sample, sample clocks (papers/001 literally)",
    )
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--plots", type=Path, default=None, help="folder for PNG plots (Figures 1-5)")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=_plotting(_whittle_learn))

    r = _add_parser(
        sub,
        "recrawl-eval",
        "re-crawl policies at equal budget on a changing collection / replayed web: F and M over time",
    )
    r.add_argument("--mode", choices=["collection", "replay"], default="collection")
    r.add_argument("--docs", type=int, default=1000, help="collection: documents")
    r.add_argument("--budget", type=int, default=20, help="collection: re-crawls per period")
    r.add_argument("--mean-rate", type=float, default=0.02, help="collection: mean change rate per period")
    r.add_argument("--corpus", default="synthetic:pages=2000,hosts=8,topics=3,seed=1", help="replay: corpus")
    r.add_argument("--m", type=int, default=4, help="replay: fetches per step")
    r.add_argument("--modify-rate", type=float, default=0.01, help="replay: mean modification rate per step")
    r.add_argument(
        "--interval", type=float, default=200.0, help="replay: uniform / initial adaptive interval"
    )
    r.add_argument("--steps", type=int, default=1500)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--plots", type=Path, default=None)
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=_plotting(_recrawl_eval))


def _fail(msg: str) -> int:
    print(f"error: {msg}", file=sys.stderr)
    return 2


def _plotting(command: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """``command`` with its ``--plots`` folder written to once before it runs (a folder that cannot be, or a
    read-only or full disk: one line and exit 2 now, not a traceback after the work), and a disk that fails
    while the plots are written: one line, exit 1 (the table was printed)."""

    def run(args: argparse.Namespace) -> int:
        from oasis.runtime.files import FileWriteError, writable_folder

        if args.plots is not None:
            try:
                writable_folder(args.plots)
            except FileWriteError as exc:
                return _fail(f"--plots: {exc}")
        try:
            return command(args)
        except FileWriteError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1

    return run


# -- oasis ephemeral ---------------------------------------------------------------------------------------


def _ephemeral(args: argparse.Namespace) -> int:
    from oasis.freshness.ephemeral import load_model, paper_model

    try:
        model = load_model(args.sources) if args.sources is not None else paper_model()
    except ValueError as exc:
        return _fail(str(exc))
    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    bad = [p for p in policies if p not in EPHEMERAL_POLICIES]
    if bad or not policies:
        return _fail(f"unknown policies {bad}; choose from {', '.join(EPHEMERAL_POLICIES)}")
    if not args.M > 0:
        return _fail("--M must be > 0")
    if not args.budget and (int(args.M) != args.M or int(args.M) >= model.N):
        return _fail(f"--M must be an integer below the number of sources ({model.N}) without --budget")
    steps = args.steps if args.steps is not None else (10_000 if args.stochastic else 2000)
    if steps < 2 or args.seeds < 1:
        return _fail("--steps must be >= 2 and --seeds >= 1")
    burn = args.burn_in if args.burn_in is not None else steps // 10
    if not 0 <= burn < steps:
        return _fail("--burn-in must be in [0, steps)")
    try:
        out = run_ephemeral(
            model,
            policies=policies,
            M=args.M,
            stochastic=args.stochastic,
            steps=steps,
            burn_in=burn,
            seed=args.seed,
            seeds=args.seeds,
            budget=args.budget,
            xi_dist=args.xi_dist,
            plots=args.plots,
            plot_steps=args.plot_steps,
        )
    except ValueError as exc:
        return _fail(str(exc))
    if args.json:
        print(json.dumps(out))
    else:
        kind = "stochastic" if args.stochastic else "deterministic"
        print(f"{kind} model, N = {model.N}, M = {args.M:g}, {steps} periods (mean after {burn})")
        print(f"{'policy':<12} {'mean reward':>12} {'std':>8}")
        for name, v in out["policies"].items():
            if "skipped" in v:
                print(f"{name:<12} {'-':>12} {'-':>8}  ({v['skipped']})")
            else:
                print(f"{name:<12} {v['mean_reward']:>12.2f} {v['std']:>8.2f}")
        if out.get("relaxation_bound") is not None:
            print(f"Whittle relaxation upper bound: {out['relaxation_bound']:.2f}")
        for f in out.get("plots", []):
            print(f"plot: {f}")
    return 0


def run_ephemeral(
    model: Any,
    *,
    policies: list[str],
    M: float,
    stochastic: bool,
    steps: int,
    burn_in: int,
    seed: int,
    seeds: int,
    budget: bool = False,
    xi_dist: str = "exponential",
    plots: Path | None = None,
    plot_steps: int = 40,
) -> dict[str, Any]:
    import numpy as np
    from tqdm import tqdm

    from oasis.freshness.lspe import LspeConfig, run_lspe
    from oasis.freshness.online import learned_policy_for
    from oasis.freshness.optimal import optimal_schedule, relaxation_bound
    from oasis.freshness.policies import (
        BestOnlyPolicy,
        CyclicPolicy,
        GreedyPolicy,
        RoundRobinPolicy,
        Simulator,
        WhittlePolicy,
    )

    res: dict[str, Any] = {
        "M": M,
        "stochastic": stochastic,
        "steps": steps,
        "burn_in": burn_in,
        "model": model.to_json(),
        "policies": {},
    }
    unit_costs = bool(np.all(model.C() == 1.0))
    try:
        res["relaxation_bound"] = relaxation_bound(model, M)[0]
    except ValueError:
        res["relaxation_bound"] = None
    opt = None
    trajectories: dict[str, Any] = {}
    n_runs = seeds if stochastic else 1
    bar = tqdm(total=len(policies), desc="policies", unit="policy", leave=False, file=sys.stderr)
    for name in policies:
        bar.set_postfix_str(name)
        rewards: list[float] = []
        entry: dict[str, Any] = {}
        if name == "optimal":
            if not unit_costs or budget or int(M) != M:
                res["policies"][name] = {"skipped": "exact search needs C_i = 1 and an integer M"}
                bar.update(1)
                continue
            try:
                opt = optimal_schedule(model, int(M))
            except ValueError as exc:
                res["policies"][name] = {"skipped": str(exc)}
                bar.update(1)
                continue
            entry["schedule"] = [[i + 1 for i in s] for s in opt.schedule]
            entry["upper_bound"] = opt.upper_bound
            if not stochastic:
                entry.update(mean_reward=opt.mean_reward, std=0.0, exact_cycle=True)
                res["policies"][name] = entry
                bar.update(1)
                continue
            entry["note"] = "the deterministic optimum's cycle played open-loop in the stochastic model"
        if name == "lspe":
            crawls: list[float] = []
            for k in range(seeds):
                lr = run_lspe(model, LspeConfig(steps=steps), np.random.default_rng([seed + k, 11]))
                rewards.append(lr.mean_reward(1 - burn_in / steps))
                crawls.append(lr.mean_crawls(1 - burn_in / steps))
            entry.update(
                mean_reward=float(np.mean(rewards)),
                std=float(np.std(rewards)),
                mean_crawls=float(np.mean(crawls)),
                note="randomised policy: std over --seeds even if deterministic; crawl count not fixed to M",
            )
            res["policies"][name] = entry
            bar.update(1)
            continue
        runs = n_runs  # one run in the deterministic model (std 0), --seeds runs in the stochastic one
        for k in range(runs):
            if name == "whittle":
                pol: Any = WhittlePolicy(model, budget=budget)
            elif name == "greedy":
                pol = GreedyPolicy(model)
            elif name == "round-robin":
                pol = RoundRobinPolicy(model.N)
            elif name == "best-only":
                pol = BestOnlyPolicy(model)
            elif name == "optimal":
                assert opt is not None
                pol = CyclicPolicy(opt.schedule, model.N)
            else:
                pol = learned_policy_for(model, budget=budget)
            sim = Simulator(
                model, stochastic=stochastic, xi_dist=xi_dist, rng=np.random.default_rng([seed + k, 5])
            )
            r = sim.run(pol, steps=steps, M=M, need_obs=name == "learned")
            rewards.append(r.mean_reward(burn_in))
            if k == 0:
                trajectories[name] = r
        entry.update(
            mean_reward=float(np.mean(rewards)), std=float(np.std(rewards)) if len(rewards) > 1 else 0.0
        )
        if name == "learned" and "whittle" in trajectories:
            w = trajectories["whittle"].rewards
            lr_ = trajectories[name].rewards
            # how fast the learner approaches the oracle: first window of 100 periods at >= 95% of it
            win = 100
            ratios = [
                float(lr_[i : i + win].mean() / w[i : i + win].mean()) for i in range(0, steps - win + 1, win)
            ]
            entry["first_100_ratio"] = ratios[0] if ratios else None
            entry["periods_to_95pct"] = next((i * win + win for i, q in enumerate(ratios) if q >= 0.95), None)
        res["policies"][name] = entry
        bar.update(1)
    bar.close()
    if plots is not None:
        res["plots"] = _ephemeral_plots(
            model, trajectories, plots, M=M, stochastic=stochastic, steps=plot_steps
        )
    return res


def _ephemeral_plots(
    model: Any, traj: dict[str, Any], folder: Path, *, M: float, stochastic: bool, steps: int
) -> list[str]:
    from oasis.freshness import plots

    folder.mkdir(parents=True, exist_ok=True)
    tag = f"M{M:g}_{'stoch' if stochastic else 'det'}"
    files = [str(plots.content_value(model, folder / "freshness_content_value.png"))]
    for name, r in traj.items():
        files.append(
            str(
                plots.state_trajectories(
                    r.X,
                    r.crawled,
                    folder / f"freshness_states_{name}_{tag}.png",
                    title=f"{name}: M = {M:g}, {'stochastic' if stochastic else 'deterministic'}",
                    steps=steps,
                )
            )
        )
    if "learned" in traj and "whittle" in traj:
        files.append(
            str(
                plots.running_rewards(
                    {
                        "oracle Whittle": traj["whittle"].rewards,
                        "learned parameters": traj["learned"].rewards,
                    },
                    folder / f"freshness_online_{tag}.png",
                    title="Unknown parameters: running average reward",
                    ylabel="running average reward",
                )
            )
        )
    return files


# -- oasis whittle-learn ------------------------------------------------------------------------------------


def _whittle_learn(args: argparse.Namespace) -> int:
    import numpy as np

    from oasis.freshness.qlearning import QLearningConfig, whittle_q_learning
    from oasis.freshness.rvi import circulant_arm, load_arm, restart_arm, whittle_indices_bisection

    try:
        if args.model is not None:
            arm = load_arm(args.model)
            name = args.model.stem
        else:
            name = args.example or "circulant"
            arm = circulant_arm() if name == "circulant" else restart_arm()
        cfg = QLearningConfig(
            arms=args.arms,
            active=args.active,
            steps=args.steps,
            epsilon=args.epsilon,
            C=args.C,
            C_prime=args.C_prime,
            constant_alpha=args.constant_alpha,
            constant_gamma=args.constant_gamma,
            sequential=args.sequential,
        )
    except ValueError as exc:
        return _fail(str(exc))
    exact = whittle_indices_bisection(arm)
    res = whittle_q_learning(arm, cfg, np.random.default_rng(args.seed), exact_indices=exact, progress=True)
    err = np.abs(res.learned_indices - exact)
    out: dict[str, Any] = {
        "model": name,
        "exact_indices": exact.tolist(),
        "learned_indices": res.learned_indices.tolist(),
        "abs_error": err.tolist(),
        "reward_ratio": res.reward_ratio(),
        "steps": cfg.steps,
        "epsilon": cfg.epsilon,
        "arms": cfg.arms,
        "active": cfg.active,
        "mean_reward_learned_tail": float(res.rewards[-max(1, cfg.steps // 5) :].mean()),
        "mean_reward_exact_tail": float(
            res.exact_rewards[-max(1, cfg.steps // 5) :].mean() if res.exact_rewards is not None else math.nan
        ),
        # per state [passive, active]: samples over all arms, and periods with an update (local clock)
        "pair_samples": res.pair_samples.tolist() if res.pair_samples is not None else None,
        "pair_updates": res.pair_updates.tolist() if res.pair_updates is not None else None,
    }
    if args.plots is not None:
        from oasis.freshness import plots

        tag = f"{name}_eps{cfg.epsilon:g}" + ("_const" if cfg.constant_alpha is not None else "")
        files = [
            plots.index_convergence(
                res.history_steps,
                res.index_history,
                exact,
                args.plots / f"freshness_qlearn_indices_{tag}.png",
                title=f"{name}: learned (solid) vs exact (dashed) indices, eps = {cfg.epsilon:g}",
            )
        ]
        if res.exact_rewards is not None:
            files.append(
                plots.running_rewards(
                    {"Q-learning": res.rewards, "exact indices": res.exact_rewards},
                    args.plots / f"freshness_qlearn_reward_{tag}.png",
                    title=f"{name}: running average reward, eps = {cfg.epsilon:g}",
                    ylabel="reward per step (sum over arms)",
                )
            )
        out["plots"] = [str(f) for f in files]
    if args.json:
        print(json.dumps(out))
    else:
        print(f"{name}: {cfg.arms} arms, {cfg.active} active, {cfg.steps} steps, epsilon {cfg.epsilon:g}")
        print(f"{'state':>5} {'exact':>9} {'learned':>9} {'|error|':>8}")
        for k, (e, lv) in enumerate(zip(exact, res.learned_indices, strict=True)):
            print(f"{k + 1:>5} {e:>9.4f} {lv:>9.4f} {abs(lv - e):>8.4f}")
        print(f"reward ratio (last 20% of steps): {out['reward_ratio']:.4f}")
    return 0


# -- oasis recrawl-eval -------------------------------------------------------------------------------------


def _recrawl_eval(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from oasis.freshness.recrawl_eval import (
        COLLECTION_POLICIES,
        REPLAY_POLICIES,
        CollectionConfig,
        ReplayCompareConfig,
        run_collection,
        run_replay,
        summarise,
    )

    curves_F: dict[str, Any] = {}
    curves_M: dict[str, Any] = {}
    table: dict[str, dict[str, Any]] = {}
    try:
        if args.mode == "collection":
            ccfg = CollectionConfig(
                docs=args.docs, budget=args.budget, steps=args.steps, mean_rate=args.mean_rate, seed=args.seed
            )
            with tqdm(total=ccfg.steps * len(COLLECTION_POLICIES), desc="recrawl", file=sys.stderr) as bar:
                cres = run_collection(ccfg, progress=bar.update)
            for p in ccfg.policies:
                table[p] = {
                    "F": cres.mean_F(p),
                    "M": cres.mean_F(p),
                    "F_unweighted": summarise(cres.F_unweighted[p]),
                    "recrawls": ccfg.budget * ccfg.steps,
                }
                curves_F[p] = cres.F[p]
            extra: dict[str, Any] = {"rate_relative_error": cres.rate_error, "config": vars(ccfg)}
        else:
            rcfg = ReplayCompareConfig(
                corpus=args.corpus,
                m=args.m,
                steps=args.steps,
                modify_rate=args.modify_rate,
                uniform_interval=args.interval,
                adaptive_initial=args.interval,
                seed=args.seed,
            )
            with tqdm(total=rcfg.steps * len(REPLAY_POLICIES), desc="replay", file=sys.stderr) as bar:
                rres = run_replay(rcfg, progress=bar.update)
            for p, v in rres["policies"].items():
                table[p] = {
                    "F": summarise(v["F"]),
                    "R": summarise(v["R"]),
                    "M": summarise(v["M"]),
                    "recrawls": v["recrawls"],
                    "first_fetches": v["first_fetches"],
                }
                curves_F[p], curves_M[p] = v["F"], v["M"]
            extra = {"pages": rres["pages"], "config": vars(rcfg)}
    except ValueError as exc:
        return _fail(str(exc))
    out: dict[str, Any] = {
        "mode": args.mode,
        "policies": table,
        "mean_over": "second half of the run",
        **extra,
    }
    if args.plots is not None:
        from oasis.freshness import plots

        files = [
            plots.curves_over_time(
                curves_F,
                args.plots / f"freshness_recrawl_F_{args.mode}.png",
                title=f"Freshness F over time ({args.mode}, equal fetch budget)",
                ylabel="F (relevance-weighted)",
            )
        ]
        if curves_M:
            files.append(
                plots.curves_over_time(
                    curves_M,
                    args.plots / f"freshness_recrawl_M_{args.mode}.png",
                    title=f"Quality M = min(R, F) over time ({args.mode})",
                    ylabel="M",
                )
            )
        out["plots"] = [str(f) for f in files]
    if args.json:
        print(json.dumps(out))
    else:
        cols = [
            c
            for c in ("F", "R", "M", "F_unweighted", "recrawls", "first_fetches")
            if c in next(iter(table.values()))
        ]
        print(f"{'policy':<16}" + "".join(f"{c:>14}" for c in cols))
        for p, v in table.items():
            print(
                f"{p:<16}"
                + "".join(f"{v[c]:>14.4f}" if isinstance(v[c], float) else f"{v[c]:>14}" for c in cols)
            )
    logging.getLogger(__name__).debug("recrawl-eval done")
    return 0
