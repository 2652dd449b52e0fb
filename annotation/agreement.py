"""Inter-annotator agreement: Fleiss' kappa and Krippendorff's alpha (nominal). Pure.

Contract: no DB, no HTTP. Inputs are plain Python sequences; the result is a float, or
None when the coefficient is undefined (no unit with two ratings, or no variation at all so
the expected disagreement is zero). Units with fewer than two ratings carry no information
about agreement and are ignored by both coefficients.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Sequence


def category_counts(units: Iterable[Sequence[Hashable]], categories: Sequence[Hashable]):
    """Turn per-unit ratings (``[["correct", "correct"], ...]``) into Fleiss count rows.

    Ratings outside ``categories`` are ignored.
    """
    index = {category: position for position, category in enumerate(categories)}
    rows = []
    for ratings in units:
        row = [0] * len(categories)
        for rating in ratings:
            position = index.get(rating)
            if position is not None:
                row[position] += 1
        rows.append(row)
    return rows


def fleiss_kappa(table: Sequence[Sequence[int]]) -> float | None:
    r"""Return Fleiss' kappa of a subjects x categories table of rating counts.

    ``table[i][j]`` is :math:`n_{ij}`, the number of raters who put subject *i* in category
    *j*; subject *i* has :math:`n_i = \sum_j n_{ij}` ratings. Fleiss (1971), "Measuring
    nominal scale agreement among many raters", Psychological Bulletin 76(5):

    .. math::

        P_i = \frac{\sum_j n_{ij}(n_{ij} - 1)}{n_i (n_i - 1)}, \qquad
        \bar P = \frac{1}{N} \sum_i P_i,

        p_j = \frac{\sum_i n_{ij}}{\sum_i n_i}, \qquad
        \bar P_e = \sum_j p_j^2, \qquad
        \kappa = \frac{\bar P - \bar P_e}{1 - \bar P_e}.

    With a constant number of raters *n* this is exactly Fleiss' formula
    (:math:`P_i = (\sum_j n_{ij}^2 - n) / (n(n-1))`). Crowd validations give a varying
    number of ratings per example, so :math:`P_i` uses each subject's own :math:`n_i` and
    :math:`p_j` pools all ratings (the usual generalisation). Subjects with fewer than two
    ratings are skipped. Returns None when no subject has two ratings or
    :math:`\bar P_e = 1` (every rating in one category).
    """
    rows = [list(row) for row in table if sum(row) >= 2]
    if not rows:
        return None
    total_ratings = sum(sum(row) for row in rows)
    category_totals = [sum(column) for column in zip(*rows, strict=True)]
    agreement_per_subject = []
    for row in rows:
        raters = sum(row)
        agreeing_pairs = sum(count * (count - 1) for count in row)
        agreement_per_subject.append(agreeing_pairs / (raters * (raters - 1)))
    observed = sum(agreement_per_subject) / len(rows)
    expected = sum((total / total_ratings) ** 2 for total in category_totals)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1.0 - expected)


def krippendorff_alpha(units: Iterable[Sequence[Hashable]]) -> float | None:
    r"""Return Krippendorff's alpha for nominal data.

    ``units`` holds, per unit (an example), the values its coders gave; missing ratings are
    simply absent. Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability":
    only units with :math:`m_u \ge 2` values are pairable. The coincidence matrix is

    .. math::

        o_{ck} = \sum_u \frac{\text{number of } (c, k) \text{ pairs of values in } u}{m_u - 1},
        \qquad n_c = \sum_k o_{ck}, \qquad n = \sum_c n_c,

    (ordered pairs of different coders). For nominal data the metric is
    :math:`\delta_{ck} = [c \ne k]`, and

    .. math::

        \alpha = 1 - \frac{D_o}{D_e}
               = 1 - (n - 1) \frac{\sum_{c \ne k} o_{ck}}{\sum_{c \ne k} n_c n_k}.

    Returns None when no unit is pairable or the expected disagreement is zero.
    """
    coincidences: Counter = Counter()  # (c, k) -> o_ck
    for values in units:
        counts = Counter(values)
        pairable = sum(counts.values())
        if pairable < 2:
            continue
        for c, count_c in counts.items():
            for k, count_k in counts.items():
                pairs = count_c * (count_k - 1) if c == k else count_c * count_k
                if pairs:
                    coincidences[(c, k)] += pairs / (pairable - 1)
    if not coincidences:
        return None
    marginals: Counter = Counter()
    for (c, _k), value in coincidences.items():
        marginals[c] += value
    total = sum(marginals.values())
    observed_disagreement = sum(value for (c, k), value in coincidences.items() if c != k)
    squared_total = sum(marginals.values()) ** 2
    expected_pairs = squared_total - sum(value**2 for value in marginals.values())
    if expected_pairs <= 0:
        return None
    return 1.0 - (total - 1) * observed_disagreement / expected_pairs
