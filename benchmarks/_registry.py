"""The registry of benchmark methods: one entry per method of every study, with its name, how
it trains in each booster (the package objective, or the booster's native loss), its search
space and its flags. The studies read their methods from here; a new method is one entry.

Studies (``Method.study``):

* ``tuned`` -- :mod:`benchmarks.compare` (``compare=True``), :mod:`benchmarks.ablation`
  (``ablation=``), :mod:`benchmarks.defaults` and :mod:`benchmarks.sr_levers` (``defaults=``):
  a trial's settings ``p`` (random search over the flags' ranges, or fixed) and its target.
* ``global_optimum`` -- :mod:`benchmarks.global_optimum` (``extra=True``: on request only).
* ``synthetic`` -- :mod:`benchmarks.synthetic` (``sglb=True``: with the paper's SGLB).
* ``clicks`` -- :mod:`benchmarks.clicks` (``labels``: the training labels; ``role``).
* ``speed`` -- the ``--objective`` of :mod:`benchmarks.scale` and
  :mod:`benchmarks.training_speed` (``scripts``).

An entry's ``objective(target, p, seed)`` is the package objective a trial trains (``target``:
a :class:`~benchmarks._targets.Target`; ``p``: the trial's settings); a native's
``native[booster](target, p)`` is the booster's loss parameters (:mod:`benchmarks._boosters`).
The names are the keys of cached trials and committed rows: never renamed.

Example::

    m = study("tuned")["sr_r1"]
    obj = m.objective(parse_target("NDCG@5"), {"mu": 0.1}, seed=0)
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Callable

from stochrank_objectives import SGLB, StochasticRank, YetiRank
from stochrank_objectives.baselines import (
    ApproxNDCG, Gumbel, LambdaLoss, LambdaMART, ListNet, SmoothNDCG, SoftRank, e_lambda_mart)

from ._boosters import (BOOSTERS, SMALL_HESSIAN, catboost_loss, lightgbm_lambdarank,
                        xgboost_rank_ndcg)
from ._targets import TARGETS, parse_target


class Role(enum.Enum):
    """A click benchmark method's part in the report."""

    LOGGING = "the logging ranker"
    NAIVE = "trained on raw clicks"
    ORACLE = "debiased with the true propensities"
    OURS = "debiased with the estimated propensities"
    NATIVE = "the booster's own debiasing"
    SKYLINE = "trained on the true labels"


@dataclass(frozen=True)
class Default:
    """A tuned method at fixed settings (:mod:`benchmarks.defaults`): its name there, its
    settings over the shared ones, and its place in that table."""

    name: str
    order: int
    settings: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Method:
    name: str
    study: str
    label: str = ""
    #: ``(target, p, seed) -> objective``; ``None`` for a native
    objective: Callable | None = None
    #: booster -> ``(target, p) -> the native's loss parameters``
    native: dict | None = None
    #: speed: booster -> ``(target, p) -> the loss parameters of its own version of the
    #: objective`` (CatBoost's StochasticRank, YetiRank)
    counterpart: dict = field(default_factory=dict)
    boosters: tuple = BOOSTERS
    #: the targets it trains for (``None``: any target, its metric passed to the objective)
    targets: tuple | None = TARGETS
    #: booster -> the targets it is limited to in that booster
    booster_targets: dict = field(default_factory=dict)
    # the search space (tuned studies): which settings a trial draws
    sglb: bool = False        # SGLB shrink rate and temperature (synthetic: the paper's SGLB)
    mu: bool = False          # mu (R1)
    noise: bool = False       # the Gumbel noise strength beta
    stochastic_rank: bool = False   # l2 = 0 (supplement F)
    smoothing: bool = False   # the relative sigma and its annealing half-life
    compare: bool = False     # in benchmarks.compare's default --methods
    ablation: str | None = None     # its label in benchmarks.ablation's table
    defaults: Default | None = None  # in benchmarks.defaults
    extra: bool = False       # global_optimum: run on request only (--methods)
    lambdamart: bool = False  # a booster's native LambdaMART
    colour: str = "C7"        # global_optimum's plot
    labels: str | None = None  # clicks: the training labels of the click log (None: true labels)
    role: Role | None = None   # clicks
    per_booster: dict = field(default_factory=dict)   # booster -> its description
    scripts: tuple = ()       # speed: the scripts that offer it
    settings: dict = field(default_factory=dict)   # a study's fixed facts of the method
    note: str = ""

    @property
    def is_native(self) -> bool:
        return self.native is not None

    def applies(self, booster: str, target) -> bool:
        """Whether it trains in ``booster`` for ``target``."""
        if booster not in self.boosters:
            return False
        allowed = self.booster_targets.get(booster, self.targets)
        return allowed is None or target in allowed

    def make(self, target, p: dict, seed: int):
        """The package objective (a native has none)."""
        if self.objective is None:
            raise ValueError(f"{self.name} is a native ranker: it has no package objective")
        return self.objective(parse_target(target), p, seed)


# -- the tuned studies' objectives ------------------------------------------------------------
#: a trial's settings that the StochasticRank objectives take (benchmarks.sr_levers varies them)
SR_SETTINGS = ("sigma", "anneal_half_life", "sigma_min", "n_samples", "nu", "hessian",
               "hessian_floor", "spread_top", "reach", "min_top_share", "grade_max")


def _train_top(t, p):
    """The training cutoff: the target's, or ``p["train_top"]`` (benchmarks.sr_levers)."""
    return p["train_top"] if "train_top" in p else t.top


def _sr(mu: bool):
    def make(t, p, seed):
        smoothing = {k: p[k] for k in SR_SETTINGS if k in p}
        return StochasticRank(metric=t.metric, top=_train_top(t, p),
                              mu=p["mu"] if mu else 0.0, seed=seed, **smoothing)
    return make


def _paper(estimator=None, sfa=0.0):
    """The paper's parametrisation (the ablation's first rows)."""
    def make(t, p, seed):
        extra = {} if estimator is None else {"estimator": estimator}
        if "grade_max" in p:   # a target whose metric needs the labels' largest grade (ERR)
            extra["grade_max"] = p["grade_max"]
        return StochasticRank.paper(metric=t.metric, top=_train_top(t, p), mu=0.0, sfa=sfa,
                                    **extra, seed=seed)
    return make


def _yetiloss(t, p, seed):
    """The YetiLoss mode of the target with every later partner (``num_neighbors=-1``: the
    pairs of LambdaMART's top-k set; CatBoost's default of one neighbour trailed the native
    LambdaMART in LightGBM and XGBoost) and CatBoost's other defaults."""
    if t.binary:
        return YetiRank(mode=t.metric, num_neighbors=-1, seed=seed)
    return YetiRank(mode=t.metric, top=t.top, dcg_type="Exp", num_neighbors=-1, seed=seed)


def _softrank(t, p, seed):
    """SoftRank (SoftNDCG); for a binary target StochasticRank's SoftRank form."""
    if t.binary:
        return StochasticRank.paper(metric=t.metric, mu=0.0, sfa=0.0, seed=seed)
    return SoftRank(top=t.top, seed=seed)


def _native_lambdamart(booster):
    """The native LambdaMART of the tuned studies (cutoff 5; CatBoost: the target's metric)."""
    if booster == "lightgbm":
        return lambda t, p: lightgbm_lambdarank(5)
    if booster == "xgboost":
        return lambda t, p: xgboost_rank_ndcg(5, topk=True)
    return lambda t, p: {"loss_function": catboost_loss("LambdaMart", metric=t.metric,
                                                        top=t.top)}


def _native_sr(t, p):
    return {"loss_function": catboost_loss("StochasticRank", metric=t.metric, top=t.top,
                                           mu=p["mu"])}


NDCG5 = (TARGETS[0],)
TUNED = [
    Method("native_lambdamart", "tuned", "LambdaMART (native)",
           native={b: _native_lambdamart(b) for b in BOOSTERS}, lambdamart=True,
           booster_targets={"lightgbm": NDCG5, "xgboost": NDCG5}, compare=True,
           defaults=Default("native LambdaMART", 6),
           note="LightGBM lambdarank (truncation 5), XGBoost rank:ndcg (topk 5), CatBoost "
                "LambdaMart:metric=NDCG;top=5 / metric=MRR; MRR target only in CatBoost"),
    Method("native_yetirank", "tuned", "YetiRank (CatBoost)", boosters=("catboost",),
           native={"catboost": lambda t, p: {"loss_function": "YetiRank"}}, targets=NDCG5,
           compare=True, defaults=Default("native YetiRank", 7)),
    Method("native_sr", "tuned", "StochasticRank R1 (CatBoost native)", boosters=("catboost",),
           native={"catboost": _native_sr}, sglb=True, mu=True, stochastic_rank=True,
           compare=True),
    Method("lambdamart", "tuned", "LambdaMART (ours)", compare=True,
           objective=lambda t, p, seed: LambdaMART(metric=t.metric, top=t.top)),
    Method("lambdaloss", "tuned", "LambdaLoss NDCG-Loss2++", targets=NDCG5, compare=True,
           objective=lambda t, p, seed: LambdaLoss(mu=5.0), defaults=Default("LambdaLoss", 5)),
    # in benchmarks.defaults only (no tuned search space measured for it yet)
    Method("yetiloss", "tuned", "YetiLoss (ours)", objective=_yetiloss,
           defaults=Default("YetiLoss", 3, {"leaves": SMALL_HESSIAN}),
           note="YetiRank(mode='NDCG', top=5, dcg_type='Exp', num_neighbors=-1) / "
                "YetiRank(mode='MRR', num_neighbors=-1)"),
    Method("e_lambdamart", "tuned", "E-lambda-MART", noise=True, compare=True,
           objective=lambda t, p, seed: e_lambda_mart(beta=p["beta"], n_samples=8, seed=seed,
                                                       metric=t.metric, top=t.top),
           defaults=Default("E-lambda-MART", 4, {"beta": 0.25})),
    Method("e_lambdaloss", "tuned", "E-lambda-Loss", targets=NDCG5, noise=True, compare=True,
           objective=lambda t, p, seed: Gumbel(LambdaLoss(mu=5.0), beta=p["beta"], n_samples=8,
                                               seed=seed)),
    Method("softrank", "tuned", "SoftRank", objective=_softrank, compare=True),
    Method("approxndcg", "tuned", "ApproxNDCG", targets=NDCG5, compare=True,
           objective=lambda t, p, seed: ApproxNDCG(eta=10.0)),
    Method("e_approxndcg", "tuned", "E[ApproxNDCG]", targets=NDCG5, noise=True, compare=True,
           objective=lambda t, p, seed: Gumbel(ApproxNDCG(eta=10.0), beta=p["beta"],
                                               n_samples=8, seed=seed)),
    Method("smoothndcg", "tuned", "SmoothNDCG", targets=NDCG5, compare=True,
           objective=lambda t, p, seed: SmoothNDCG(smoothing=64.0, top=5, anneal_every=10,
                                                   start_iterations=2)),
    Method("listnet", "tuned", "ListNet", targets=NDCG5, compare=True,
           objective=lambda t, p, seed: ListNet()),
    # Table 3 ablation (StochasticRank without SGLB), in the paper's parametrisation
    Method("abl_reinforce", "tuned", "REINFORCE", objective=_paper("reinforce"),
           stochastic_rank=True, targets=None, ablation="REINFORCE"),
    Method("abl_ccs", "tuned", "CCS", objective=_paper(), stochastic_rank=True, targets=None,
           ablation="CCS"),
    Method("abl_ccs_sfa", "tuned", "CCS+SFA", objective=_paper(sfa=1.0), stochastic_rank=True,
           targets=None, ablation="CCS+SFA"),
    Method("sr_r1soft", "tuned", "SR-R1soft", objective=_sr(mu=False), sglb=True,
           stochastic_rank=True, smoothing=True, targets=None, compare=True,
           ablation="+relative smoothing, annealing, SGLB (SR-R1soft)",
           defaults=Default("SR-R1soft", 1)),
    Method("sr_r1", "tuned", "SR-R1", objective=_sr(mu=True), sglb=True, mu=True,
           stochastic_rank=True, smoothing=True, targets=None, compare=True,
           ablation="+relative smoothing, annealing, SGLB, mu (SR-R1)",
           defaults=Default("SR-R1", 2, {"mu": 0.1})),
]


def make_sglb(p: dict, seed: int):
    """The trial's SGLB (``None`` unless its settings have SGLB's)."""
    if "model_shrink_rate" not in p:
        return None
    return SGLB(learning_rate=p["learning_rate"], model_shrink_rate=p["model_shrink_rate"],
                diffusion_temperature=p["diffusion_temperature"], seed=seed)


# -- benchmarks.global_optimum ---------------------------------------------------------------
#: the largest grade of the global-optimum instances (ERR's grade mapping)
INSTANCE_GRADE_MAX = 3
#: the defaults before issue 22 (a unit hessian, sigma 0.3 annealed to 0.1, MRR without
#: reach), at which the LightGBM-only studies were run: pinned, so that their committed rows
#: stay reproducible
BEFORE_ISSUE_22 = {"hessian": "constant", "sigma": 0.3, "reach": 0.0}


def instance_defaults(t, seed):
    """What a user gets from ``StochasticRank(metric=..., top=...)`` (plus the instance's ERR
    grade mapping, which is a property of the labels, and the seed)."""
    return StochasticRank(metric=t.metric, top=t.top, seed=seed,
                          **t.graded_options(INSTANCE_GRADE_MAX))


def _variant(**params):
    """The defaults with ``params`` changed (e.g. SR-R1: ``mu``)."""
    return lambda t, p, seed: instance_defaults(t, seed).set_params(**params)


def _before_issue_22(**params):
    """The defaults before issue 22 with ``params`` changed."""
    return _variant(**{**BEFORE_ISSUE_22, **params})


def _instance_native_lambdarank(t, p):
    # ERR's instances: the grades' exp2 gains spelled out
    gain = {"label_gain": [2.0 ** g - 1.0 for g in range(32)]} if t.needs_grade_max else {}
    return {**lightgbm_lambdarank(t.top), **gain}


def _instance_native_rank_ndcg(t, p):
    return xgboost_rank_ndcg(t.top or 1, base_score=0.0)


def _global(name, objective, extra=True, **kw):
    return Method(name, "global_optimum", name, objective=objective, extra=extra, **kw)


GLOBAL_OPTIMUM = [
    _global("StochasticRank (defaults)", lambda t, p, seed: instance_defaults(t, seed),
            extra=False, colour="C0"),
    _global("LambdaMART (ours)",
            lambda t, p, seed: LambdaMART(metric=t.lambdamart_metric, top=t.top), extra=False,
            colour="C1"),
    # Run on request (--methods): SR-R1 at several mu, the paper's parametrisation, the
    # smoothing schedules, and the defaults of earlier versions.
    _global("SR-R1 (defaults, mu=0.1)", _before_issue_22(mu=0.1)),
    _global("SR-R1 (defaults, mu=0.3)", _before_issue_22(mu=0.3)),
    _global("SR-R1 (defaults, mu=1)", _before_issue_22(mu=1.0)),
    _global("StochasticRank.paper()", lambda t, p, seed: StochasticRank.paper(
        metric=t.metric, top=t.top, seed=seed, **t.graded_options(INSTANCE_GRADE_MAX)),
        colour="C0"),
    _global("constant sigma=0.3", _before_issue_22(anneal_half_life=None)),
    _global("constant sigma=0.1", _before_issue_22(sigma=0.1, anneal_half_life=None)),
    _global("n_samples=4", _before_issue_22(n_samples=4)),
    _global("sigma_min=0.05", _before_issue_22(sigma_min=0.05)),
    _global("sigma 0.2, sigma_min=0.05", _before_issue_22(sigma=0.2, sigma_min=0.05)),
    _global("unit hessian", _variant(**BEFORE_ISSUE_22)),
    # the default from issue 22's curvature hessian until the constant sigma = 0.1
    _global("sigma 0.3 annealed", _variant(sigma=0.3, reach=0.0)),
    # the default from the constant sigma = 0.1 until MRR's reach (MRR instances differ only)
    _global("MRR without reach", _variant(reach=0.0)),
    # the natives, for the instance's own metric
    Method("native lambdarank", "global_optimum", boosters=("lightgbm",), lambdamart=True,
           native={"lightgbm": _instance_native_lambdarank}),
    Method("native rank:ndcg", "global_optimum", boosters=("xgboost",), lambdamart=True,
           native={"xgboost": _instance_native_rank_ndcg}),
    Method("native YetiRank", "global_optimum", boosters=("catboost",),
           native={"catboost": lambda t, p: {"loss_function": "YetiRank"}}),
    Method("native LambdaMart", "global_optimum", boosters=("catboost",), lambdamart=True,
           native={"catboost": lambda t, p: {
               "loss_function": "LambdaMart:metric=" + t.catboost_metric.replace(":", ";")}}),
]


# -- benchmarks.synthetic -----------------------------------------------------------------------
#: parametrisation -> (constructor, SR-R1's mu)
PARAMETRISATIONS = {"defaults": (StochasticRank, 0.1), "paper": (StochasticRank.paper, 1.0)}


def _synthetic_sr(make, mu):
    def objective(t, p, seed):
        return make(metric=t.metric, top=t.top, seed=seed, **({"mu": mu} if mu else {}))
    return objective


def _catboost_native_sr(t, p):
    return {"loss_function": catboost_loss("StochasticRank", metric=t.metric, top=t.top,
                                           type="Exp")}


SYNTHETIC = [
    Method(f"SR-{variant}{' + SGLB' if sglb else ''} ({name})", "synthetic",
           objective=_synthetic_sr(make, mu), sglb=sglb, mu=bool(mu), stochastic_rank=True)
    for name, (make, r1_mu) in PARAMETRISATIONS.items() for sglb in (False, True)
    for variant, mu in (("R1soft", 0.0), ("R1", r1_mu))
] + [
    Method("native lambdarank", "synthetic", boosters=("lightgbm",), lambdamart=True,
           native={"lightgbm": _instance_native_lambdarank}),
    Method("native rank:ndcg", "synthetic", boosters=("xgboost",), lambdamart=True,
           native={"xgboost": _instance_native_rank_ndcg}),
    Method("native YetiRank", "synthetic", boosters=("catboost",),
           native={"catboost": lambda t, p: {"loss_function": "YetiRank"}}),
    Method("native LambdaMart", "synthetic", boosters=("catboost",), lambdamart=True,
           native={"catboost": lambda t, p: {"loss_function": catboost_loss(
               "LambdaMart", metric=t.metric, top=t.top)}}),
    Method("native StochasticRank", "synthetic", boosters=("catboost",),
           native={"catboost": _catboost_native_sr}, stochastic_rank=True),
    Method("native StochasticRank + SGLB", "synthetic", boosters=("catboost",),
           native={"catboost": _catboost_native_sr}, stochastic_rank=True, sglb=True),
]


# -- benchmarks.clicks ------------------------------------------------------------------------
# NDCG@10 in every query, as when the rows were measured (the default min_top_share since then
# grows the training cutoff of MQ2008's queries of more than 100 documents): pinned, so that
# the cached rows stay true
def _click_sr(t, p, seed):
    return StochasticRank(metric="NDCG", top=10, gain="linear", min_top_share=0.0)


def _click_native(booster):
    if booster == "lightgbm":   # Dataset(position=): LightGBM's unbiased lambdarank
        return lambda t, p: {**lightgbm_lambdarank(),
                             "label_gain": list(range(p["sessions"] + 1))}
    if booster == "xgboost":    # rows in displayed order
        return lambda t, p: xgboost_rank_ndcg(lambdarank_unbiased=True, ndcg_exp_gain=False)
    return lambda t, p: {"loss_function": "YetiRank"}


CLICKS = [
    Method("logging", "clicks", role=Role.LOGGING),
    Method("naive", "clicks", objective=_click_sr, labels="clicks", role=Role.NAIVE),
    Method("SR-IPS-true", "clicks", objective=_click_sr, labels="ips_true", role=Role.ORACLE),
    Method("SR-IPS", "clicks", objective=_click_sr, labels="ips_est", role=Role.OURS),
    Method("SR-IPS-DCG", "clicks", labels="ips_est", role=Role.OURS,
           objective=lambda t, p, seed: StochasticRank(metric="DCG", top=10, gain="linear")),
    Method("LambdaMART-IPS", "clicks", labels="ips_est", role=Role.OURS,
           objective=lambda t, p, seed: LambdaMART(metric="NDCG", top=10, gain="linear")),
    Method("LambdaLoss-IPS", "clicks", labels="ips_est", role=Role.OURS,
           objective=lambda t, p, seed: LambdaLoss(gain="linear")),
    Method("native", "clicks", role=Role.NATIVE, native={b: _click_native(b) for b in BOOSTERS},
           per_booster={"lightgbm": "LightGBM lambdarank + position",
                        "xgboost": "XGBoost rank:ndcg, lambdarank_unbiased",
                        "catboost": "CatBoost YetiRank on clicks"}),
    Method("skyline", "clicks", role=Role.SKYLINE,
           objective=lambda t, p, seed: StochasticRank(metric="NDCG", top=10,
                                                       min_top_share=0.0)),
]


# -- benchmarks.scale, benchmarks.training_speed ----------------------------------------------
# ``label``: the rows' name of the objective (``{at}``: ``@k`` of a cutoff); ``note``: what it is
# (``{metric}``, ``{top}``); ``counterpart["catboost"]``: CatBoost's own version, ``per_booster``
# its description.
_YETIRANK_NOTE = ("YetiRank() (Classic, its defaults: 10 noisy permutations per query and call, "
                  "adjacent pairs weighted 0.15 decay^(k-1) |r_a - r_b|, decay 0.85, logistic "
                  "noise, seed 0)")
SPEED = [
    Method("stochasticrank", "speed", "SR", stochastic_rank=True,
           scripts=("scale", "training_speed"),
           note="StochasticRank(metric={metric!r}, top={top})",
           # benchmarks.scale's target: seconds per tree / the native LambdaMART's (issue 16)
           settings={"tree_target": {"lightgbm": 1.2, "xgboost": 1.2, "catboost": 1.0}},
           objective=lambda t, p, seed: StochasticRank(metric=t.metric, top=t.top, **p,
                                                       seed=seed),
           counterpart={"catboost": lambda t, p: {"loss_function": catboost_loss(
               "StochasticRank", metric=t.metric, top=t.top)}},
           per_booster={"catboost": "StochasticRank"}),
    Method("yetirank", "speed", "YetiRank", scripts=("scale", "training_speed"),
           note=_YETIRANK_NOTE,
           settings={"tree_target": {"lightgbm": 1.2, "xgboost": 1.2, "catboost": 1.2}},
           objective=lambda t, p, seed: YetiRank(seed=seed),
           counterpart={"catboost": lambda t, p: {"loss_function": "YetiRank"}},
           per_booster={"catboost": "YetiRank"}),
    Method("yetiloss", "speed", "YetiLoss {metric}{at}", scripts=("scale", "training_speed"),
           note="YetiRank(mode={metric!r}, top={top}, num_neighbors=-1) (10 noisy permutations "
                "per query and call, every later partner, logistic noise, seed 0)",
           settings={"tree_target": {"lightgbm": 1.2, "xgboost": 1.2, "catboost": 1.2}},
           objective=lambda t, p, seed: YetiRank(mode=t.metric, top=t.top, num_neighbors=-1,
                                                 seed=seed),
           counterpart={"catboost": lambda t, p: {"loss_function": catboost_loss(
               "YetiRank", mode=t.metric, top=t.top, num_neighbors=-1)}},
           per_booster={"catboost": "YetiRank (YetiLoss)"}),
]


METHODS: list[Method] = [*TUNED, *GLOBAL_OPTIMUM, *SYNTHETIC, *CLICKS, *SPEED]


def study(name: str) -> dict[str, Method]:
    """The methods of one study, by name, in the registry's order."""
    found = {m.name: m for m in METHODS if m.study == name}
    if not found:
        raise ValueError(f"no study {name!r}: {sorted({m.study for m in METHODS})}")
    return found


def _check():
    for name in {m.study for m in METHODS}:
        names = [m.name for m in METHODS if m.study == name]
        assert len(names) == len(set(names)), f"{name}: a method name twice"


_check()

#: the tuned studies' methods (benchmarks.compare --methods)
TUNED_METHODS = study("tuned")
COMPARE_METHODS = [m.name for m in TUNED if m.compare]
ABLATION_METHODS = [m.name for m in TUNED if m.ablation]
ABLATION_LABELS = {m.name: m.ablation for m in TUNED if m.ablation}
#: benchmarks.defaults: name -> method, in its table's order
DEFAULTS = {m.defaults.name: m for m in sorted((m for m in TUNED if m.defaults),
                                                key=lambda m: m.defaults.order)}


def speed_methods(script: str) -> dict[str, Method]:
    """The ``--objective`` choices of ``script`` (``scale`` or ``training_speed``)."""
    return {m.name: m for m in SPEED if script in m.scripts}
