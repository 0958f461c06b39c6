"""YetiRank (Gulin, Kuralenok, Pavlov 2011) and YetiLoss (Lyzhin et al., ICML 2023) as
objectives, with CatBoost 1.2.10's ``YetiRank`` / ``YetiRank:mode=...`` semantics.

Example:

>>> import numpy as np
>>> scores, labels, offs = np.zeros(3), np.array([2.0, 0.0, 1.0]), np.array([0, 3])
>>> grad, hess = YetiRank(noise="No").grad_hess(scores, labels, offs)
>>> bool(grad[0] < 0 < grad[1]) and bool(np.all(hess > 0))
True
"""

from __future__ import annotations

import numpy as np

from ..kernels import threads_for
from ..kernels import yetirank as _k
from ..kernels.common import dcg_discounts, inverse_ideal_dcg, reciprocal_weights
from ..metric_spec import ndcg_gains
from ..metric_table import DCG_GAIN, ERR_GAIN, METRIC_TABLE, YETILOSS_CODES, YETILOSS_MODES
from ..validation import choice, integer, real, seed
from ._estimator import unit_mean_hessian
from ._protocol import validated, ObjectiveParams, check_iteration

__all__ = ["YetiRank", "YETI_MODES", "YETI_NOISES", "YETI_HESSIAN_SCALES"]

# YetiLoss's metric modes are the metric table's (CatBoost spells them as our canonical names)
YETI_MODES = ("Classic",) + YETILOSS_MODES
YETI_NOISES = ("Gumbel", "Gauss", "No")
YETI_HESSIAN_SCALES = ("unit_mean", "raw")
# mode -> its metric's row (None: Classic YetiRank, no metric)
_MODE_ROWS = {"Classic": None, **{mode: METRIC_TABLE[mode] for mode in YETILOSS_MODES}}
_MODE_CODES = {"Classic": _k.MODE_CLASSIC, **YETILOSS_CODES}
_DCG_MODES = tuple(mode for mode, row in _MODE_ROWS.items()
                   if row is not None and row.gain_kind == DCG_GAIN)
_NOISE_CODES = {"Gumbel": _k.NOISE_LOGISTIC, "Gauss": _k.NOISE_GAUSS, "No": _k.NOISE_NONE}
_UNLIMITED = 2 ** 62
# parameter -> (its default, the modes or noises it applies to)
_APPLIES = {"top": (None, YETI_MODES[1:]), "num_neighbors": (1, YETI_MODES[1:]),
            "decay": (0.85, YETI_MODES[:1]), "dcg_type": ("Base", _DCG_MODES),
            "dcg_denominator": ("LogPosition", _DCG_MODES)}


def _num_neighbors(value, name):
    if value == -1 and not isinstance(value, bool):
        return -1
    return integer(1)(value, name)


class YetiRank(ObjectiveParams):
    """YetiRank and YetiLoss: pairwise logistic loss on pairs drawn from noisy permutations.

    Example:

    >>> import numpy as np
    >>> obj = YetiRank(mode="NDCG", top=2, permutations=10, seed=1)
    >>> s, y, offs = np.array([0.5, 1.0, -0.2, 0.3]), np.array([2.0, 0.0, 1.0, 3.0]), [0, 4]
    >>> g1, h1 = obj.grad_hess(s, y, offs, iteration=3)
    >>> g2, h2 = obj.grad_hess(s, y, offs, iteration=3)
    >>> bool(np.array_equal(g1, g2)) and abs(float(g1.sum())) < 1e-12  # seeded, balanced
    True

    Each call draws, per query, ``permutations`` noisy orders of the scores ``f`` (``z = f +
    e``, stable sort descending, ties in input order), builds weighted pairs in each order and
    averages their weights into ``W(a, b)`` (``a`` the document with the larger label; equal
    labels make no pair). The gradient and hessian are those of the pairwise logistic loss at the
    **noise-free** scores with ``W`` held fixed::

        loss = sum_pairs W(a, b) log(1 + exp(-(f_a - f_b)))
        rho = sigmoid(f_b - f_a);   grad_a -= W rho,   grad_b += W rho,
        hess_a, hess_b += W rho (1 - rho).

    Pairs and weights of one order ``pi`` (1-based positions ``K``; ``r`` the labels):

    * ``mode="Classic"`` (YetiRank): the neighbours ``pi(K), pi(K+1)``, ``W = 0.15 decay^(K-1)
      |r_a - r_b|``.
    * YetiLoss modes: first position ``K <= top``, partners at ``K < M <= K + num_neighbors``
      (``-1``: all), ``W`` = the change of the metric when the two swap:
      ``DCG``: ``|(G(r_a) - G(r_b)) (D(K) - D(M))|``, ``G = r`` (``dcg_type="Base"``) or
      ``2^r - 1`` (``"Exp"``), ``D = 1/log2(1 + K)`` (``dcg_denominator="LogPosition"``) or
      ``1/K`` (``"Position"``), ``D = 0`` below ``top``; ``NDCG``: that over IDCG@top;
      ``MRR`` (relevant: ``r > 0``; ``K`` up to the first relevant position): ``1/K - 1/M``
      for pairs with one relevant member; ``MAP``: ``1/K + sum 1/J`` over the relevant ``J``
      strictly between (a heuristic, not the exact change of AP); ``ERR`` (labels are
      probabilities in [0, 1]): the exact change of the untruncated ERR,
      ``A |(r_a - r_b)/K + (r_b - r_a) S + Q (r_b - r_a)/M|`` (``A``, ``Q``: products of
      ``1 - r`` above ``K`` and strictly between; ``S = sum_{K<J<M} r_J / J prod_{K<P<J}
      (1 - r_P)``).

    Noise ``e`` per document and order: ``"Gumbel"`` is, as in CatBoost, a **standard
    logistic** variable ``log(U / (1 - U))`` (the difference of two Gumbels), ``"Gauss"`` is
    ``N(0, noise_power^2)``, ``"No"`` none (the loss is then deterministic and one order stands
    for all permutations). The noise of query ``q``, order ``k`` comes from the counter-based
    stream keyed by ``(seed, iteration, q, k)``: the same seed and iteration give bit-identical
    results on any number of threads (with every partner, the pass below the top sums each
    document's pairs one partial sum per vector lane, so a CPU whose compiler picks another
    vector width may differ in the last bits). :meth:`loss` is the sum above over queries, with
    the pairs of ``iteration``.

    The hessian is the exact diagonal above (weights fixed): a Newton leaf ``-sum grad / sum
    hess`` is then CatBoost's YetiRank leaf value. It is small (about 0.01 to 0.1 per document),
    which would make the boosters' leaf regularisers -- XGBoost ``min_child_weight = 1`` and
    ``reg_lambda = 1``, CatBoost ``l2_leaf_reg = 3`` -- forbid or shrink most leaves, so by
    default (``hessian_scale="unit_mean"``) gradient and hessian are both divided by the mean
    hessian of the call: the same Newton leaves without L2, and those defaults keep the meaning
    they have for a unit hessian. ``hessian_scale="raw"`` returns the derivatives of
    :meth:`loss` themselves; either way L2 = 0 gives CatBoost's leaves.

    Deliberate differences from CatBoost 1.2.10 (whose derivatives this reproduces exactly
    for ``noise="No"``, and in expectation otherwise):

    * the random numbers: our seeded streams (float64 noise, ``U`` on the open (0, 1)) instead
      of CatBoost's generator (float32, ``log(U / (1.000001 - U))``); the weights are
      accumulated in float64, not float32;
    * a parameter that does not apply (``top``, ``num_neighbors`` with ``Classic``; ``decay``
      with a YetiLoss mode; ``dcg_type``, ``dcg_denominator`` outside DCG/NDCG;
      ``noise_power`` without ``Gauss``) raises a ValueError instead of being ignored;
    * ERR labels outside [0, 1] and labels above 31 with ``dcg_type="Exp"`` raise a ValueError;
    * no group weights (CatBoost multiplies ``W`` by them);
    * the booster around it: LightGBM and XGBoost build each tree and its leaves from one pair
      sample; CatBoost draws one sample for the tree structure (split scores from the pairs'
      weights per document, MVS bootstrap, ``random_strength``) and a second one for the Newton
      leaves, then centres the leaf values. With CatBoost through this package's adapter the
      leaves follow the given ``(grad, hess)``. ``YetiRankPairwise`` (pairwise split scores and
      a joint leaf solve) cannot be written as per-document derivatives and is not provided.

    CatBoost's defaults for a fair comparison: learning rate 0.03, depth 6, L2 0.

    Every later partner (``num_neighbors=-1``) is how the package trains YetiLoss: each first
    position up to ``top`` is paired with every document below it (LambdaMART's top-k pairs).
    With CatBoost's default of one neighbour, a relevant document below the top is paired only
    in the orders whose noise puts it right after a top position, and in LightGBM and XGBoost
    YetiLoss trailed the native LambdaMART (NDCG@5 -4.38 in XGBoost on the long-list generator's
    dense regime). With every partner (``python -m benchmarks.defaults``, MQ2008 at depth 4 and
    6 and the three long-list regimes, 5 folds x 3 seeds) it is above the native LambdaMART for
    MRR in every cell of LightGBM and XGBoost (+0.22 to +5.39 points) and for NDCG@5 in all but
    two of XGBoost's, within noise (-0.17, -0.51), and in CatBoost at least CatBoost's own
    ``YetiRank`` for NDCG@5 on every data set (+0.16 to +10.54). The default stays CatBoost's
    one neighbour so that ``YetiRank(mode=...)`` is CatBoost's ``YetiRank:mode=...``. For DCG
    and NDCG, the pairs with the documents below ``top`` (discount 0) differ only in the
    partner's gain: the kernel sums each document's discounts over the permutations and visits
    each such pair once per call instead of once per permutation.

    Speed (``python -m benchmarks.training_speed --objective yetirank|yetiloss --docs 20000
    --iterations 30 --rounds 5 --threads 1 2``, ``benchmarks/results/training_speed_yeti*.txt``,
    a shared 2-core machine): per tree, Classic is 1.19x / 1.13x (1 / 2 threads) LightGBM's
    ``lambdarank``, 1.00x / 0.99x XGBoost's ``rank:ndcg``, 0.75x / 0.71x CatBoost's
    ``LambdaMart`` (and 0.22x CatBoost's native ``YetiRank``); ``mode="NDCG", top=10``: 1.08x /
    1.06x, 0.44x / 0.43x, 0.74x / 0.62x: within the 1.2x target everywhere, narrowly for
    Classic with LightGBM (1.11x in a run the same hour). The objective takes about 3.2 ms per
    20k documents (38% of a LightGBM Classic iteration, whose native LambdaMART adds ~2.5 ms to
    the regression floor): every one of the 10 permutations draws noise for and orders every
    document (in the kernel: noise ~1.0 ms, nearly all of it the calls to ``log``; bucket sort
    ~0.95 ms; pairs and derivatives ~0.6 ms). The previous kernel, measured the same way under
    the same load (``training_speed_yetirank_before_5d7306b.txt``), took 4.5 ms: Classic was
    1.31x / 1.29x LightGBM's ``lambdarank``. With every partner (``num_neighbors=-1``),
    ``mode="NDCG", top=10`` costs 2.25x / 2.26x ``lambdarank``, 1.58x / 2.72x ``rank:ndcg``
    and 1.08x / 1.52x CatBoost's ``LambdaMart`` (``training_speed_yetiloss.txt``; the figures
    above for one neighbour are in ``training_speed_yetiloss_one_neighbour.txt``): while the
    scores are close, the noise puts nearly every document into some permutation's top, so the
    one visit per pair is still every pair of the query.

    Source: Gulin, Kuralenok, Pavlov, "Winning the transfer learning track of Yahoo!'s learning
    to rank challenge with YetiRank", JMLR W&CP 14 (2011); Lyzhin, Ustimenko, Gulin,
    Prokhorenkova, "Which Tricks Are Important for Learning to Rank?", ICML 2023
    (arXiv:2204.01500), YetiLoss; the pair weights, the constant 0.15, the noise and the defaults
    are CatBoost 1.2.10's implementation of the two.

    Args:
      mode: ``"Classic"`` (YetiRank, default) or the YetiLoss metric ``"DCG"``, ``"NDCG"``,
        ``"MRR"``, ``"ERR"``, ``"MAP"``.
      top: YetiLoss: the last first position of a pair, and the DCG/NDCG cutoff (None: the
        whole list).
      num_neighbors: YetiLoss: partners after each first position (default 1, CatBoost's;
        -1: every later position, the package's YetiLoss setting, see above).
      permutations: noisy orders per query and call (default 10).
      decay: Classic: the weight's decay per position (default 0.85).
      noise: ``"Gumbel"`` (standard logistic, default), ``"Gauss"`` or ``"No"``.
      noise_power: the standard deviation of ``"Gauss"`` noise (default 1).
      dcg_type: DCG/NDCG gain, ``"Base"`` (``r``, default) or ``"Exp"`` (``2^r - 1``).
      dcg_denominator: DCG/NDCG discount, ``"LogPosition"`` (default) or ``"Position"``.
      seed: noise seed (>= 0).
      hessian_scale: ``"unit_mean"`` (default: ``(grad, hess) / mean(hess)``) or ``"raw"``.

    Returns:
      :meth:`grad_hess` ``(grad, hess)`` float64 arrays; :meth:`loss` a float.
    """


    _parameter_constraints = {
        "mode": choice(*YETI_MODES), "top": integer(1, optional=True),
        "num_neighbors": _num_neighbors, "permutations": integer(1),
        "decay": real(gt=0.0, le=1.0), "noise": choice(*YETI_NOISES),
        "noise_power": real(gt=0.0), "dcg_type": choice("Base", "Exp"),
        "dcg_denominator": choice("LogPosition", "Position"), "seed": seed,
        "hessian_scale": choice(*YETI_HESSIAN_SCALES),
    }

    def __init__(self, mode: str = "Classic", top: int | None = None, num_neighbors: int = 1,
                 permutations: int = 10, decay: float = 0.85, noise: str = "Gumbel",
                 noise_power: float = 1.0, dcg_type: str = "Base",
                 dcg_denominator: str = "LogPosition", seed: int = 0,
                 hessian_scale: str = "unit_mean"):
        self.mode = mode
        self.top = top
        self.num_neighbors = num_neighbors
        self.permutations = permutations
        self.decay = decay
        self.noise = noise
        self.noise_power = noise_power
        self.dcg_type = dcg_type
        self.dcg_denominator = dcg_denominator
        self.seed = seed
        self.hessian_scale = hessian_scale

    def _check_together(self, values: dict) -> dict:
        for name, (default, applies) in _APPLIES.items():
            if values[name] != default and values["mode"] not in applies:
                raise ValueError(f"{name}={values[name]!r} has no effect with "
                                 f"mode={values['mode']!r} (it applies to mode in {applies}): "
                                 f"leave it at its default {default!r}")
        if values["noise_power"] != 1.0 and values["noise"] != "Gauss":
            raise ValueError(f"noise_power applies to noise='Gauss' only (the 'Gumbel' noise is "
                             f"standard logistic), got noise={values['noise']!r}: leave "
                             f"noise_power at 1.0 or set noise='Gauss'")
        values["settings"] = _k.YetiSettings(
            mode=_MODE_CODES[values["mode"]],
            top=_UNLIMITED if values["top"] is None else values["top"],
            neighbors=values["num_neighbors"], permutations=values["permutations"],
            decay=values["decay"], noise=_NOISE_CODES[values["noise"]],
            noise_power=values["noise_power"], seed=values["seed"])
        return values

    def _prepared(self, data, p):
        """``(gains, keep, discounts)``: the per-document gains, the per-query keep flags (the
        inverse IDCG for NDCG) and the per-position discounts of the DCG/NDCG modes; ERR's
        labels checked (probabilities). Once per training data
        (:meth:`~._protocol.ObjectiveParams._per_data`): for NDCG the IDCG sort costs as much
        as the pairs of one or two permutations."""
        key = (p["mode"], p["top"], p["dcg_type"], p["dcg_denominator"])
        return self._per_data(data, key, lambda labels, offs: self._derived(labels, offs, p))

    @staticmethod
    def _derived(labels, offs, p):
        n_max = int(np.diff(offs).max()) if offs.size > 1 else 0
        row = _MODE_ROWS[p["mode"]]
        if row is not None and row.gain_kind == ERR_GAIN and labels.size and labels.max() > 1.0:
            raise ValueError(f"labels must lie in [0, 1] for mode='ERR' (they are the "
                             f"probabilities of relevance), got a maximum of {labels.max()}: "
                             f"rescale them, e.g. (2**labels - 1) / 2**max_grade")
        if p["mode"] not in _DCG_MODES:
            return labels, np.ones(offs.size - 1), np.zeros(n_max + 1)
        gains = ndcg_gains(labels, "exp2" if p["dcg_type"] == "Exp" else "linear")
        top = n_max if p["top"] is None else p["top"]
        discount = dcg_discounts if p["dcg_denominator"] == "LogPosition" else reciprocal_weights
        discounts = discount(n_max, top)
        keep = (inverse_ideal_dcg(gains, gains, offs, discounts, top) if row.scale_by_ideal
                else np.ones(offs.size - 1))  # NDCG: 1 / IDCG@top
        return gains, keep, discounts

    @classmethod
    def examples(cls) -> list[ObjectiveParams]:
        """The default YetiRank, its noise-free variant and YetiLoss for MRR (tests)."""
        return [cls(), cls(noise="No"), cls(mode="MRR")]

    @property
    def draws_noise(self) -> bool:
        """Whether the pairs' scores are perturbed (``noise`` other than ``"No"``)."""
        return self.noise != "No"

    def _compute(self, scores, data, iteration, with_loss):
        p = self._checked()
        labels, offs = data.labels, data.query_offsets
        with threads_for(scores.shape[0], offs.shape[0] - 1):
            gains, keep, discounts = self._prepared(data, p)
            return _k.yetirank_grad_hess(scores, labels, gains, offs, keep, discounts,
                                         p["settings"], iteration, with_loss)

    def _grad_hess(self, scores, data, iteration):
        """``(grad, hess)`` of the pairwise logistic loss on the pairs of ``iteration``, divided
        by the mean hessian unless ``hessian_scale="raw"``."""
        _, grad, hess = self._compute(scores, data, iteration, False)
        if self._checked()["hessian_scale"] == "unit_mean":
            return unit_mean_hessian(grad, hess, data.document_weights())
        return grad, hess

    def loss(self, scores, labels, query_offsets, iteration: int = 0) -> float:
        """``sum_q sum_pairs W log(1 + exp(-(f_a - f_b)))`` with the pairs of ``iteration``."""
        iteration = check_iteration(iteration)
        scores, data = validated(scores, labels, query_offsets)
        return float(self._compute(scores, data, iteration, True)[0].sum())
