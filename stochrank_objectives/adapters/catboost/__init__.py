"""Train CatBoost rankers with this package's objectives (StochasticRank and any other object
that follows the ``grad_hess(scores, labels, query_offsets, iteration)`` protocol).

Usage::

    from stochrank_objectives import StochasticRank
    from stochrank_objectives.adapters.catboost import StochasticCatBoostRanker

    ranker = StochasticCatBoostRanker(StochasticRank(metric="NDCG", top=5), n_estimators=300)
    ranker.fit(X, y, qid=qid, eval_set=[(X_val, y_val, qid_val)])
    scores = ranker.predict(X_test)          # ranker.booster_ is a plain catboost.CatBoost

The modules: :mod:`._layout` (the row-index label channel and the per-chunk layout guard),
:mod:`._objective` (:class:`CatBoostObjective`, CatBoost's user-defined objective),
:mod:`._params` (CatBoost parameters and eval metrics derived from the objective),
:mod:`._sglb` (SGLB in CatBoost's parameter names, defaults and float32 units),
:mod:`._fit` (the two training routes) and :mod:`._ranker` (:class:`StochasticCatBoostRanker`).

This module contains no gradient mathematics: it translates between the objective's protocol
(``grad`` is the gradient of the loss, one float64 per document) and CatBoost's user-defined
objective API (``calc_ders_range`` returns ``der1 = -grad`` and ``der2 = -hess``).

How it works (facts verified on catboost 1.2.10, see ``shared/notes/gbdt_api.md``)
-----------------------------------------------------------------------------------
CatBoost calls a Python objective on chunks of at most 1000 rows, from several threads, and
never tells it where the queries are; a ranking objective needs whole queries. Two routes:

``"pointer"`` (default, fast)
    The learn label of row ``i`` is the row index, encoded as ``i * 2**-24`` (exact in float32
    for up to ``2**24`` rows, and inside ``[0, 1)`` so that metrics such as ERR accept the learn
    pool). The true labels and the query offsets live on the :class:`CatBoostObjective`. The
    first chunk of every pass over the data rebuilds a view of CatBoost's whole approx buffer
    from the chunk's data pointer (``approxes.ctypes.data - 8 * start_row``), computes the
    derivatives of all queries once, and every chunk is then served from that array. A layout
    guard checks, under a lock, that each chunk is a contiguous slice of the original rows, that
    the whole target buffer is exactly the encoded row indices, that every row is served exactly
    once per pass and that the approx does not change within a pass; a violation stops training
    with :class:`LayoutError`. The per-chunk part of the guard is one numba pass over the chunk
    (~1 us per 1000 rows); what remains per call is CatBoost's own wrapper and, with several
    threads, handing the GIL between CatBoost's threads (~377 calls per iteration at 120k rows:
    1000-row chunks for the tree search, 500-row blocks for leaf estimation). Between two trees
    (``after_iteration``) the next tree's derivatives are computed early from the buffer the
    tree-search passes read, which then already holds the next approx (catboost 1.2.10, Plain
    boosting): CatBoost's threads are idle, so the kernels get every core instead of one
    CatBoost thread computing while the others wait. It is only a guess: the next pass's first
    chunk compares it with the approx CatBoost passes and recomputes on any difference.

``"per_tree"`` (fallback, about 3x slower, relies on no internals)
    One ``CatBoost(iterations=1).fit`` per tree, with the current scores as the pool's
    baseline; the objective serves derivatives computed at the exact float64 scores (CatBoost
    stores baselines in float32, so these are not read back from CatBoost), rows located by the
    label channel. Scores are advanced with the tree's own predictions, shrinkage is applied by
    us, and the trees are combined with ``catboost.sum_models``. Both routes give the same
    model (verified to ~1e-12 in the tests, on variable-size queries with two threads).

``route="auto"`` picks ``"pointer"`` unless a setting is known to break its assumption:
categorical features without ``has_time=True`` (CatBoost permutes the rows and makes ~5
passes) fall back to ``"per_tree"`` with a warning; so does a :class:`LayoutError` raised
during a pointer fit (the fit is restarted on the per-tree route). ``boosting_type="Ordered"``
is refused on every route: ordered boosting needs per-document derivatives from prefix models,
which a query-level objective cannot give (one tree per fit would silently be Plain boosting).

Other decisions
---------------
* **Iteration counter.** The objective's ``iteration`` argument (which keys its noise) is the
  0-based index of the tree being built, counted by an ``after_iteration`` callback (pointer
  route) or by the loop (per-tree route). Leaf-estimation passes of the same tree reuse the
  derivatives when the approx is unchanged and otherwise recompute them with the same
  ``iteration``. The counter restarts at every ``fit``: same seeds -> bit-identical models.
* **Deep copy and threads.** ``CatBoost.fit`` deep-copies its parameters; the objective's
  ``__deepcopy__`` returns itself so that state survives. All state changes happen under a
  ``threading.Lock`` (CatBoost calls from several OS threads). ``no_jit = True`` stops
  CatBoost from trying to numba-compile ``calc_ders_range``.
* **Bootstrap.** CatBoost's default MVS bootstrap aborts ("Too few sampling units") when an
  iteration's derivatives are all zero, which a ranking objective produces legitimately (no
  query with two distinct labels, or every query already separated beyond the smoothing
  window). Default here: ``bootstrap_type="Bernoulli"``, ``subsample=0.8`` (CatBoost's default
  rate); any explicit ``bootstrap_type`` is honoured.
* **Eval metric.** CatBoost requires an explicit ``eval_metric`` with a Python loss. The default
  is CatBoost's own metric matching the objective's ``metric_spec`` (``NDCG:top=k;type=Exp`` for
  exp2 gain, ``type=Base`` for linear; ``DCG`` likewise; ``ERR:top=k`` with labels used as
  probabilities, the eval labels mapped through ``grade_max`` when the objective has one;
  ``MRR:top=k;border=threshold``). CatBoost's ranking metrics order tied scores pessimistically
  (less relevant first) and score a query without relevant documents as NDCG 1, exactly like
  :mod:`stochrank_objectives.metrics` with ``ties="worst"`` (checked in the tests to 1e-15 on
  heavily tied data), so no Python metric is needed. Every string metric gets
  ``hints=skip_train~true``: the learn labels are row indices, so learn values would be noise.
* **Categorical features.** CatBoost's default target statistics (``Borders`` CTRs) would be
  computed from the learn labels, which are row indices here. Default: target-free
  ``simple_ctr=combinations_ctr=["Counter"]``; target-based CTR types are refused.
* **SGLB** (``sglb=SGLB(...)``, or CatBoost's own ``langevin=True``, ``diffusion_temperature=T``, ``model_shrink_rate=gamma``, with
  CatBoost's names, defaults -- ``T=10000``, ``gamma=0.001`` once ``langevin`` is on -- and
  ``posterior_sampling``). Shrinkage ``F <- (1 - gamma lr) F`` before each tree's derivatives
  is CatBoost's native ``model_shrink_rate`` on the pointer route (exact; ``Constant`` and
  ``Decreasing`` modes) and reproduced by us on the per-tree route (rate and learning rate
  rounded to float32 as CatBoost does). The noise is ours:
  :meth:`stochrank_objectives.sglb.SGLB.noise` (variance ``2 / (lr T)`` per document, seeded by
  ``(random_seed, iteration)``) is added to every document's gradient before CatBoost sees it. CatBoost 1.2.10's own per-row Langevin
  noise has no effect on the tree structure (only its leaf noise acts), while the SGLB weak
  learner must be fitted to the noisy gradients; as leaf values are averages of the ``der1``
  we return, our noise reaches the leaves too, so native ``langevin`` is **not** passed to
  CatBoost (it would add leaf noise a second time). CatBoost's ``model_shrink_rate`` also works
  alone (shrinkage without noise).
* **Weights, text/embedding features, user baselines** are not supported (the objectives are
  unweighted; text estimators would read the row-index labels).
"""

from ._layout import MAX_ROWS, LayoutError, decode_row_index, encode_row_index
from ._objective import CatBoostObjective
from ._params import default_eval_metric
from ._ranker import StochasticCatBoostRanker

__all__ = [
    "StochasticCatBoostRanker",
    "CatBoostObjective",
    "LayoutError",
    "default_eval_metric",
    "encode_row_index",
    "decode_row_index",
    "MAX_ROWS",
]
