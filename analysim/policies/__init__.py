"""Scheduling, placement and cost policies, chosen by name or by passing an instance."""

from analysim.policies.allocation import (
    AllocationScheduler,
    FIFOPerf,
    FinishTimeFairness,
    FinishTimeFairnessPerf,
    MaxMinFairness,
    MaxMinFairnessPerf,
)
from analysim.policies.costs import (
    COSTS,
    Constant,
    CostModel,
    PerJob,
    SizeScaled,
    young_daly_interval,
)
from analysim.policies.elastic import ElasticGain, ElasticGoodput, ElasticJob, ElasticScheduler
from analysim.policies.placement import PLACERS, Placer, Topology
from analysim.policies.registry import Policy, Registry
from analysim.policies.scheduling import (
    FIFO,
    LAS,
    SCHEDULERS,
    SJF,
    SRTF,
    FairShare,
    JobView,
    Scheduler,
)

__all__ = [
    "AllocationScheduler",
    "FIFOPerf",
    "FinishTimeFairness",
    "FinishTimeFairnessPerf",
    "MaxMinFairness",
    "MaxMinFairnessPerf",
    "COSTS",
    "PLACERS",
    "SCHEDULERS",
    "Constant",
    "CostModel",
    "ElasticGain",
    "ElasticGoodput",
    "ElasticJob",
    "ElasticScheduler",
    "FIFO",
    "FairShare",
    "JobView",
    "LAS",
    "PerJob",
    "Placer",
    "Policy",
    "Registry",
    "SJF",
    "SRTF",
    "Scheduler",
    "SizeScaled",
    "Topology",
    "young_daly_interval",
]
