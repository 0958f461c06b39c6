"""Long-list LETOR data: hundreds of documents per query, few relevant, graded labels.

Web-search ranking sets (MSLR-WEB10K/30K, Yahoo, Istella) have 100-1,000 candidates per query
of which a few are relevant; MQ2008 (about 20 per query) and the LightGBM sample do not show
how a method behaves there. :func:`make_long_lists` draws such data from a stated model, seeded,
so the benchmarks can measure long-list behaviour every time a default moves.

>>> data = make_long_lists(n_queries=3, seed=0)
>>> bool(data.group_sizes.min() >= 150 and data.group_sizes.max() <= 700)
True
>>> data.X.shape[1], data.X.dtype.name, sorted(set(data.y.tolist())) == [0.0, 1.0, 2.0, 3.0, 4.0]
(40, 'float32', True)
>>> train = load_long_lists("train", fold=2)   # 5 folds, each its own draw
>>> train.n_queries
200

The model, per query ``q`` and document ``i`` (every draw from one seeded generator):

* **list length** ``n_q = round(exp(U(log 150, log 700)))`` (log-uniform: many lists near 150-300,
  some near 700);
* **relevance**: a latent ``u_i ~ N(0, 1)`` plus a query shift ``d_q ~ N(0, 0.5^2)`` (some
  queries have many relevant documents, some none), and in a regime with ``hidden`` ``tau > 0``
  a part ``tau w_i``, ``w_i ~ N(0, 1)``, that no feature sees (the judges' view beyond the
  features); the grade is the number of thresholds ``(1.9, 2.4, 2.9, 3.3)`` below
  ``u_i + d_q (+ tau w_i)``, 0-4. Over the query shifts that is about 95.5%
  grade 0, 2.9% grade 1, 1.1% grade 2 and 0.5% grades 3-4 (about 15 relevant documents in a
  list of 330, a few queries with none): few relevant, as in web search;
* **features**, ``n_features`` columns (default 40) of six kinds, each a noisy view of ``u_i``
  (the grade is never a feature):

  - *direct* (40%): ``h(u_i + s e)``, ``e ~ N(0, 1)``, noise ``s`` spread over 1.5-4.5 and a
    monotone ``h`` (identity, ``tanh``, ``softplus`` or ``exp``), like text-match scores;
  - *query-offset* (15%): ``u_i + s e + c_q``, ``c_q ~ N(0, 2^2)`` per query and feature:
    informative only within a query (like BM25, whose scale depends on the query);
  - *within-query rank* (10%): the rank of ``u_i + s e`` in its query divided by ``n_q``;
  - *gated* (10%, in pairs): a gate ``g_i = v_i + 0.3 e`` with ``v_i ~ N(0, 1)``, and a view
    ``(u_i + s e) 1{v_i > 0} + 0.3 e'``: relevance shows only where the gate is open
    (an interaction that deeper trees can use);
  - *query-level* (10%): one value per query, ``d_q + N(0, 1)`` or pure noise (query length,
    click rate);
  - *noise* (the rest): ``N(0, 1)``, uninformative.

  Which column is which kind, its noise and its transform are fixed by ``feature_seed``, so the
  train, validation and test splits of a fold share the feature semantics.

Source: written for this package; the grade mix and list lengths follow the published
statistics of MSLR-WEB30K (Qin & Liu, "Introducing LETOR 4.0 Datasets", arXiv:1306.2597) and
Yahoo! LTR (Chapelle & Chang, JMLR W&CP 14, 2011): 100-1,000 documents per query, most of
grade 0 or 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from .data import RankingData
from .groups import query_offsets_from_sizes

__all__ = ["make_long_lists", "load_long_lists", "LONG_LIST_SPLITS", "GRADE_THRESHOLDS",
           "Regime", "REGIMES", "DENSE_HIDDEN", "grade_thresholds"]

#: grade g is reached when u + d_q exceeds GRADE_THRESHOLDS[g - 1] (the sparse regime)
GRADE_THRESHOLDS = (1.9, 2.4, 2.9, 3.3)
#: queries of each split in :func:`load_long_lists` (the sparse regime)
LONG_LIST_SPLITS = {"train": 200, "vali": 60, "test": 100}


@dataclass(frozen=True)
class Regime:
    """One kind of long-list data: the generator's settings and the statistics they match.

    Fields: ``min_docs``/``max_docs`` (bounds of the log-uniform list length), ``n_features``,
    ``grade_thresholds`` (grade g when ``u + d_q`` exceeds the g-th; ``len`` = the top grade),
    ``shares`` (``(kind, share)`` of the feature columns; the rest is noise), ``splits``
    (queries of train/vali/test per fold in :func:`load_long_lists`), and the statistics the
    settings were chosen to match: ``grade_shares`` (the share of each grade over all
    documents), ``mean_docs`` (documents per query) and ``matches`` (in words); ``hidden``
    (``tau``: the relevance is ``u_i + d_q + tau w_i``, ``w_i ~ N(0, 1)`` seen by no feature,
    so that the best ranking the features allow is as far from the labels as in the data
    matched; 0 = none, and no draw).
    """

    min_docs: int
    max_docs: int
    n_features: int
    grade_thresholds: tuple[float, ...]
    shares: tuple[tuple[str, float], ...]
    splits: tuple[int, int, int]
    grade_shares: tuple[float, ...]
    mean_docs: float
    matches: str
    hidden: float = 0.0


def grade_thresholds(grade_shares, hidden=0.0) -> tuple[float, ...]:
    """The grade thresholds that put the grades at ``grade_shares``.

    Example: ``grade_thresholds((0.70, 0.16, 0.14))`` is about ``(0.586, 1.208)``.

    The relevance ``u + d_q + tau w`` is ``N(0, 1.25 + tau^2)`` over queries, so threshold
    ``g`` is ``sqrt(1.25 + tau^2) Phi^-1(share of the grades below g)``.

    Args:
      grade_shares: the share of each grade, 0 first (summing to 1); hidden: ``tau``.

    Returns:
      one threshold per grade above 0, rounded to 3 decimals.
    """
    scale = (1.25 + hidden ** 2) ** 0.5
    below = np.cumsum(grade_shares)[:-1]
    return tuple(round(scale * NormalDist().inv_cdf(float(p)), 3) for p in below)


#: the dense regime's relevance seen by no feature (``Regime.hidden``): with it LightGBM's
#: lambdarank (depth 6, benchmarks.defaults' settings) reaches test NDCG@10 0.448 on folds 1-3
#: (0.85 without, 0.51 at 1.5, 0.42 at 2), as learners do on the real set it matches
DENSE_HIDDEN = 1.8

#: the generator's regimes by name, each a :class:`Regime` with the statistics it matches;
#: the thresholds put the grade shares at the stated ones (:func:`grade_thresholds`)
REGIMES: dict[str, Regime] = {
    "sparse": Regime(
        150, 700, 40, GRADE_THRESHOLDS,
        (("direct", 0.4), ("offset", 0.15), ("rank", 0.1), ("gated", 0.1), ("query", 0.1)),
        (200, 60, 100), (0.955, 0.029, 0.011, 0.003, 0.002), 357.0,
        "web search at scale (MSLR-WEB30K, Yahoo! LTR): 150-700 documents per query, about "
        "4.5% relevant in grades 1-4, 360 queries a fold"),
    "dense": Regime(
        55, 320, 45, grade_thresholds((0.70, 0.16, 0.14), DENSE_HIDDEN),
        (("direct", 0.45), ("offset", 0.3), ("rank", 0.1), ("query", 0.05)),
        (64, 21, 21), (0.70, 0.16, 0.14), 152.0,
        "a small dense set of real long lists: 106 queries of 35-320 documents (mean 152; the "
        "log-uniform 55-320 has mean 150), 30% relevant in grades 0-2 (70% / 16% / 14%), 45 "
        "features, mostly text-match scores -- the statistics of OHSUMED in LETOR 3.0 -- and "
        "its difficulty: LightGBM's lambdarank reaches test NDCG@10 0.45 (folds 1-3), where "
        "nine learners reach 0.441-0.450 on OHSUMED (Chapelle & Wu, Information Retrieval "
        "2010, Table 2)", hidden=DENSE_HIDDEN),
    "web": Regime(
        230, 728, 42, grade_thresholds((0.818, 0.123, 0.047, 0.006, 0.006)),
        (("direct", 0.35), ("offset", 0.3), ("link", 0.2), ("rank", 0.05), ("query", 0.05)),
        (37, 12, 12), (0.818, 0.123, 0.047, 0.006, 0.006), 437.0,
        "a small web set of real long lists: 61 queries of 230-728 documents (mean 437; the "
        "log-uniform has mean 432), 18% relevant in grades 0-4 (81.8 / 12.3 / 4.7 / 0.6 / "
        "0.6%), 42 features: text-match scores (BM25, TF-IDF, language models over body, title "
        "and anchor: direct and query-offset columns) and link features"),
}


def _regime(regime: str) -> Regime:
    if regime not in REGIMES:
        raise ValueError(f"regime must be one of {sorted(REGIMES)}, got {regime!r}")
    return REGIMES[regime]


def _feature_plan(n_features: int, feature_seed: int, shares=REGIMES["sparse"].shares):
    """Each column's kind, noise scale and transform (the same for every split)."""
    rng = np.random.default_rng(np.random.SeedSequence([feature_seed, 7]))
    counts = {kind: int(round(share * n_features)) for kind, share in shares}
    if "gated" in counts:
        counts["gated"] -= counts["gated"] % 2  # gated features come in (gate, view) pairs
    counts["noise"] = max(0, n_features - sum(counts.values()))
    order = [kind for kind, _ in shares] + ["noise"]
    kinds = [kind for kind in order for _ in range(counts[kind])][:n_features]
    noise = rng.uniform(1.5, 4.5, n_features)
    transform = rng.integers(0, 4, n_features)
    return kinds, noise, transform


def _monotone(x: np.ndarray, which: int) -> np.ndarray:
    if which == 1:
        return np.tanh(x / 2.0)
    if which == 2:
        return np.logaddexp(0.0, x)  # softplus
    if which == 3:
        return np.exp(np.clip(x, -10.0, 10.0) / 2.0)
    return x


def _within_query_rank(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    ranks = np.empty_like(values)
    for q in range(offsets.size - 1):
        a, b = offsets[q], offsets[q + 1]
        ranks[a:b] = np.argsort(np.argsort(values[a:b], kind="stable"), kind="stable") / (b - a)
    return ranks


def make_long_lists(n_queries: int = 200, n_features: int | None = None,
                    min_docs: int | None = None, max_docs: int | None = None, seed: int = 0,
                    feature_seed: int = 0, regime: str = "sparse") -> RankingData:
    """Draw ``n_queries`` long lists from the module's model.

    Example: ``make_long_lists(500, seed=3)`` -- about 150k documents;
    ``make_long_lists(100, regime="dense")`` -- 100 lists like a dense real set.

    Args:
      n_queries: number of queries (>= 1).
      n_features: feature columns (>= 10, so that every kind of feature is present; default:
        the regime's).
      min_docs, max_docs: bounds of the log-uniform list length (1 <= min_docs <= max_docs;
        default: the regime's).
      seed: the draw of queries, documents and noise.
      feature_seed: the columns' kinds, noise scales and transforms (keep it fixed across the
        splits of one data set).
      regime: a key of :data:`REGIMES` -- ``"sparse"`` (web search at scale), ``"dense"`` or
        ``"web"`` (small real long-list sets); it sets the grades, the list lengths and the
        kinds of features.

    Returns:
      a :class:`~stochrank_objectives.data.RankingData` (float32 features, grades 0 to
      ``len(REGIMES[regime].grade_thresholds)``, qid 0..n_queries-1, queries contiguous).
    """
    settings = _regime(regime)
    n_features = settings.n_features if n_features is None else n_features
    min_docs = settings.min_docs if min_docs is None else min_docs
    max_docs = settings.max_docs if max_docs is None else max_docs
    for name, value, low in (("n_queries", n_queries, 1), ("n_features", n_features, 10),
                             ("min_docs", min_docs, 1), ("max_docs", max_docs, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    if min_docs > max_docs:
        raise ValueError(f"min_docs ({min_docs}) must not exceed max_docs ({max_docs})")
    rng = np.random.default_rng(np.random.SeedSequence([seed, 11]))
    sizes = np.rint(np.exp(rng.uniform(np.log(min_docs), np.log(max_docs), n_queries)))
    sizes = np.clip(sizes.astype(np.int64), min_docs, max_docs)
    offsets = query_offsets_from_sizes(sizes)
    n = int(offsets[-1])
    query_of_doc = np.repeat(np.arange(n_queries), sizes)
    shift = rng.normal(0.0, 0.5, n_queries)
    latent = rng.standard_normal(n)
    relevance = latent + shift[query_of_doc]
    if settings.hidden > 0.0:  # drawn last: the views below see the same latent either way
        relevance = relevance + settings.hidden * np.random.default_rng(
            np.random.SeedSequence([seed, 13])).standard_normal(n)
    labels = np.searchsorted(np.asarray(settings.grade_thresholds), relevance).astype(np.float64)

    kinds, noise, transform = _feature_plan(n_features, feature_seed, settings.shares)
    X = np.empty((n, n_features), dtype=np.float32)
    gate: np.ndarray | None = None
    for j, kind in enumerate(kinds):
        view = latent + noise[j] * rng.standard_normal(n)
        if kind == "direct":
            column = _monotone(view, int(transform[j]))
        elif kind == "offset":
            column = view + rng.normal(0.0, 2.0, n_queries)[query_of_doc]
        elif kind == "rank":
            column = _within_query_rank(view, offsets)
        elif kind == "gated" and gate is not None:  # the view of a pair: open where gate > 0
            column = view * (gate > 0) + 0.3 * rng.standard_normal(n)
            gate = None
        elif kind == "gated":  # the gate of a pair
            gate = rng.standard_normal(n)
            column = gate + 0.3 * rng.standard_normal(n)
        elif kind == "query":
            per_query = (shift if j % 2 == 0 else np.zeros(n_queries)) + rng.standard_normal(
                n_queries)
            column = per_query[query_of_doc]
        elif kind == "link":  # query-independent, heavy-tailed, weakly relevant: link counts
            column = np.exp(0.3 * latent + rng.standard_normal(n))
        else:
            column = rng.standard_normal(n)
        X[:, j] = column
    return RankingData(X, labels, query_of_doc.astype(np.int64), offsets)


def load_long_lists(split: str = "train", fold: int = 1, regime: str = "sparse") -> RankingData:
    """One split of fold ``fold`` (1-5) of the long-list benchmark set of ``regime``.

    Every fold is its own draw (``seed = 100 fold + split index``, plus ``10000 r`` for the
    regime's index ``r`` in :data:`REGIMES`) with the same feature semantics
    (``feature_seed = 0``); the regime's ``splits`` give the queries per split (sparse:
    :data:`LONG_LIST_SPLITS`, Fold 1 74k / 21k / 34k documents).

    Args:
      split: ``"train"``, ``"vali"`` or ``"test"``.
      fold: 1-5.
      regime: a key of :data:`REGIMES`.

    Returns:
      a :class:`~stochrank_objectives.data.RankingData`.
    """
    if split not in LONG_LIST_SPLITS:
        raise ValueError(f"split must be one of {sorted(LONG_LIST_SPLITS)}, got {split!r}")
    if fold not in (1, 2, 3, 4, 5):
        raise ValueError(f"fold must be 1-5, got {fold!r}")
    settings = _regime(regime)
    index = list(LONG_LIST_SPLITS).index(split)
    return make_long_lists(settings.splits[index],
                           seed=100 * fold + index + 10000 * list(REGIMES).index(regime),
                           regime=regime)
