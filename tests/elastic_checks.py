"""The invariants every run with elastic jobs keeps, shared by the elastic and batch-size
property tests: run it, check them, hand back what the caller checks further."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysim import SimConfig, Simulation, Workload
from analysim.inputs.cluster import Cluster
from analysim.results.goodput import goodput_spells


def run_checking_elastic_invariants(
    wl: Workload, cluster: Cluster, config: SimConfig, total_gpus: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run ``wl`` and assert: every job finishes; a job holds between its min and max GPUs;
    rates > 0 (progress never decreases); never more than ``total_gpus`` held at once; work
    done = its work plus the rescale costs it paid; the plain rules (no shortcut, no leap)
    give the same jobs. Returns the jobs (indexed by id) and the goodput spells."""
    result = Simulation(wl, cluster, config).run().result()
    jobs = result.jobs.set_index("job_id")
    assert (jobs["status"] == "done").all()  # every job finishes
    spells = goodput_spells(result)
    limits = jobs.loc[spells["job_id"], ["min_gpus", "max_gpus"]].to_numpy()
    held = spells["num_gpus"].to_numpy()
    assert (limits[:, 0] <= held).all() and (held <= limits[:, 1]).all()
    assert (spells["goodput"] > 0).all()  # progress never decreases: rates > 0
    assert (spells["end"] >= spells["start"]).all()
    # never more GPUs than the cluster: at every event time, the spells running then
    for t in np.unique(spells["start"]):
        running = spells[(spells["start"] <= t) & (spells["end"] > t)]
        assert running["num_gpus"].sum() <= total_gpus
    # work done = its work (+ the rescale costs it paid)
    done = (spells["end"] - spells["start"]) * spells["goodput"]
    work = done.groupby(spells["job_id"]).sum()
    expected = jobs["duration"] + jobs["resizes"] * config.rescale_cost
    np.testing.assert_allclose(work.to_numpy(), expected.loc[work.index].to_numpy(), rtol=1e-9)
    # the plain rules (no shortcut, no leap) give the same run
    plain = Simulation(wl, cluster, config.replace(leap=False), reference=True).run().result()
    pd.testing.assert_frame_equal(result.jobs, plain.jobs)
    return jobs, spells
