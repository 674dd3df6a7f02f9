"""Group fairness: one disaggregated table per sensitive feature, thin gap metrics on top."""

from .disaggregate import (
    MISSING_LABEL,
    DisaggregatedTable,
    GroupStats,
    disaggregate,
    encode_groups,
    group_counts,
)
from .metrics import (
    FAIRNESS_METRIC_NAMES,
    FairnessEstimate,
    FairnessReport,
    demographic_parity_difference,
    equalized_odds_difference,
    fairness_report,
)

__all__ = [
    "FAIRNESS_METRIC_NAMES",
    "MISSING_LABEL",
    "DisaggregatedTable",
    "FairnessEstimate",
    "FairnessReport",
    "GroupStats",
    "demographic_parity_difference",
    "disaggregate",
    "encode_groups",
    "equalized_odds_difference",
    "fairness_report",
    "group_counts",
]
