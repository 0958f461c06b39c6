"""The method registry (which objective, in which boosters, for which targets) and the
package objective each method trains with its sampled hyper-parameters."""

from __future__ import annotations

from dataclasses import dataclass

from stochrank_objectives import SGLB, StochasticRank, YetiRank
from stochrank_objectives.baselines import (
    ApproxNDCG, Gumbel, LambdaLoss, LambdaMART, ListNet, SmoothNDCG, SoftRank, e_lambda_mart)

from ._data import BOOSTERS, TARGETS, target_metric


@dataclass
class Method:
    key: str
    label: str
    boosters: tuple
    targets: tuple
    sglb: bool = False        # tune SGLB shrink rate and temperature
    mu: bool = False          # tune mu (R1)
    noise: bool = False       # tune the Gumbel noise strength beta
    stochastic_rank: bool = False   # l2 = 0 (supplement F)
    smoothing: bool = False   # tune the relative sigma and its annealing half-life
    native: bool = False
    note: str = ""


METHODS = {m.key: m for m in [
    Method("native_lambdamart", "LambdaMART (native)", BOOSTERS, TARGETS, native=True,
           note="LightGBM lambdarank (truncation 5), XGBoost rank:ndcg (topk 5), CatBoost "
                "LambdaMart:metric=NDCG;top=5 / metric=MRR; MRR target only in CatBoost"),
    Method("native_yetirank", "YetiRank (CatBoost)", ("catboost",), ("NDCG@5",), native=True),
    Method("native_sr", "StochasticRank R1 (CatBoost native)", ("catboost",), TARGETS,
           native=True, sglb=True, mu=True, stochastic_rank=True),
    Method("lambdamart", "LambdaMART (ours)", BOOSTERS, TARGETS),
    Method("lambdaloss", "LambdaLoss NDCG-Loss2++", BOOSTERS, ("NDCG@5",)),
    Method("yetiloss", "YetiLoss (ours)", BOOSTERS, TARGETS,
           note="YetiRank(mode='NDCG', top=5, dcg_type='Exp') / YetiRank(mode='MRR')"),
    Method("e_lambdamart", "E-lambda-MART", BOOSTERS, TARGETS, noise=True),
    Method("e_lambdaloss", "E-lambda-Loss", BOOSTERS, ("NDCG@5",), noise=True),
    Method("softrank", "SoftRank", BOOSTERS, TARGETS),
    Method("approxndcg", "ApproxNDCG", BOOSTERS, ("NDCG@5",)),
    Method("e_approxndcg", "E[ApproxNDCG]", BOOSTERS, ("NDCG@5",), noise=True),
    Method("smoothndcg", "SmoothNDCG", BOOSTERS, ("NDCG@5",)),
    Method("listnet", "ListNet", BOOSTERS, ("NDCG@5",)),
    Method("sr_r1soft", "SR-R1soft", BOOSTERS, TARGETS, sglb=True, stochastic_rank=True,
           smoothing=True),
    Method("sr_r1", "SR-R1", BOOSTERS, TARGETS, sglb=True, mu=True, stochastic_rank=True,
           smoothing=True),
    # Table 3 ablation (StochasticRank without SGLB)
    Method("abl_reinforce", "REINFORCE", BOOSTERS, TARGETS, stochastic_rank=True),
    Method("abl_ccs", "CCS", BOOSTERS, TARGETS, stochastic_rank=True),
    Method("abl_ccs_sfa", "CCS+SFA", BOOSTERS, TARGETS, stochastic_rank=True),
]}
# yetiloss: in benchmarks.defaults only (no tuned search space measured for it yet)
COMPARE_METHODS = [k for k in METHODS if not k.startswith("abl_") and k != "yetiloss"]
ABLATION_METHODS = ["abl_reinforce", "abl_ccs", "abl_ccs_sfa", "sr_r1soft", "sr_r1"]
ABLATION_LABELS = {"abl_reinforce": "REINFORCE", "abl_ccs": "CCS", "abl_ccs_sfa": "CCS+SFA",
                   "sr_r1soft": "+relative smoothing, annealing, SGLB (SR-R1soft)",
                   "sr_r1": "+relative smoothing, annealing, SGLB, mu (SR-R1)"}


def applicable(booster: str, method: str, target: str) -> bool:
    m = METHODS[method]
    if booster not in m.boosters or target not in m.targets:
        return False
    if method == "native_lambdamart" and target == "MRR" and booster != "catboost":
        return False
    return True


def make_objective(method: str, target: str, p: dict, seed: int):
    """The package objective of a non-native method."""
    metric, top = target_metric(target)
    if method == "lambdamart":
        return LambdaMART(metric=metric, top=top)
    if method == "lambdaloss":
        return LambdaLoss(mu=5.0)
    if method == "yetiloss":   # the YetiLoss mode of the target (CatBoost's other defaults)
        if target == "NDCG@5":
            return YetiRank(mode="NDCG", top=top, dcg_type="Exp", seed=seed)
        return YetiRank(mode="MRR", seed=seed)
    if method == "e_lambdamart":
        return e_lambda_mart(beta=p["beta"], n_samples=8, seed=seed, metric=metric, top=top)
    if method == "e_lambdaloss":
        return Gumbel(LambdaLoss(mu=5.0), beta=p["beta"], n_samples=8, seed=seed)
    if method == "softrank":
        if target == "NDCG@5":
            return SoftRank(top=5, seed=seed)
        return StochasticRank.paper(metric="MRR", mu=0.0, sfa=0.0, seed=seed)  # SoftRank, MRR
    if method == "approxndcg":
        return ApproxNDCG(eta=10.0)
    if method == "e_approxndcg":
        return Gumbel(ApproxNDCG(eta=10.0), beta=p["beta"], n_samples=8, seed=seed)
    if method == "smoothndcg":
        return SmoothNDCG(smoothing=64.0, top=5, anneal_every=10, start_iterations=2)
    if method == "listnet":
        return ListNet()
    if "train_top" in p:  # a training cutoff other than the target's (benchmarks.sr_levers)
        top = p["train_top"]
    smoothing = {k: p[k] for k in ("sigma", "anneal_half_life", "sigma_min", "n_samples", "nu",
                                   "hessian", "hessian_floor", "spread_top", "reach",
                                   "min_top_share") if k in p}
    if method == "sr_r1soft":
        return StochasticRank(metric=metric, top=top, mu=0.0, seed=seed, **smoothing)
    if method == "sr_r1":
        return StochasticRank(metric=metric, top=top, mu=p["mu"], seed=seed, **smoothing)
    # The ablation's first rows are the paper's estimator steps, in its parametrisation.
    if method == "abl_reinforce":
        return StochasticRank.paper(metric=metric, top=top, mu=0.0, sfa=0.0,
                                    estimator="reinforce", seed=seed)
    if method == "abl_ccs":
        return StochasticRank.paper(metric=metric, top=top, mu=0.0, sfa=0.0, seed=seed)
    if method == "abl_ccs_sfa":
        return StochasticRank.paper(metric=metric, top=top, mu=0.0, sfa=1.0, seed=seed)
    raise ValueError(f"no package objective for method {method!r}")


def make_sglb(p, seed):
    if "model_shrink_rate" not in p:
        return None
    return SGLB(learning_rate=p["learning_rate"], model_shrink_rate=p["model_shrink_rate"],
                diffusion_temperature=p["diffusion_temperature"], seed=seed)
