"""The calibrated ``venus`` run at a load scale with EASY backfill (``bench_easy.py``'s run):
its fingerprint, or where its CPU goes.

    python benchmarks/easy_run.py hash                   # LAS + preemption, load 2.0
    python benchmarks/easy_run.py hash --scheduler fifo  # FIFO, no preemption
    python benchmarks/easy_run.py sample                 # a 1 ms SIGPROF stack sampler

``hash`` prints a hash of the run's ``jobs``, ``events`` and ``timeline`` frames *and* its
decision records (``rounds``, ``tries``), how many tries were recorded and the CPU seconds:
a speed change must leave it as it was (stop 39: ``las 2.0 a54041872d07f375 tries 3998558``,
``fifo 2.0 70b9966ecaec5d94 tries 5551210``). ``sample`` prints each function's share of the
CPU samples, inclusive and self (``--top N`` of each).
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import signal
import time

import _common  # noqa: F401 - puts the checkout on sys.path when analysim is not installed
import pandas as pd

from analysim import Simulation, presets


def _simulation(scheduler: str, load: float) -> Simulation:
    jobs = presets.workload("venus", seed=0, load_scale=load)
    config = presets.config("venus").replace(
        scheduler=scheduler, preemption=scheduler == "las", backfill="easy"
    )
    return Simulation(jobs, presets.cluster("venus"), config)


def fingerprint(result) -> str:
    """A hash of a run's ``Result``: its frames and decision records."""
    digest = hashlib.sha256()
    decisions = result.decisions
    for frame in (result.jobs, result.events, result.timeline, decisions.rounds, decisions.tries):
        digest.update(pd.util.hash_pandas_object(frame, index=True).values.tobytes())
    return digest.hexdigest()[:16]


def _sampled(sim: Simulation, top: int) -> None:
    """Run ``sim`` under a 1 ms SIGPROF sampler and print the shares."""
    inclusive: collections.Counter = collections.Counter()
    own: collections.Counter = collections.Counter()
    samples = [0]

    def sample(_signal, frame) -> None:
        samples[0] += 1
        own[(frame.f_code.co_filename.rsplit("/", 1)[-1], frame.f_code.co_name)] += 1
        seen = set()
        while frame is not None:
            key = (frame.f_code.co_filename.rsplit("/", 1)[-1], frame.f_code.co_name)
            if key not in seen:
                inclusive[key] += 1
                seen.add(key)
            frame = frame.f_back

    signal.signal(signal.SIGPROF, sample)
    signal.setitimer(signal.ITIMER_PROF, 0.001, 0.001)
    try:
        sim.run()
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0, 0)
    for title, counts in (("inclusive", inclusive), ("self", own)):
        print(title)
        for (file, name), count in counts.most_common(top):
            print(f"{count / samples[0]:6.1%}  {file}:{name}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=["hash", "sample"])
    parser.add_argument("--scheduler", choices=["las", "fifo"], default="las")
    parser.add_argument("--load", type=float, default=2.0)
    parser.add_argument("--top", type=int, default=40, help="sample: functions shown")
    args = parser.parse_args(argv)
    sim = _simulation(args.scheduler, args.load)
    if args.what == "sample":
        _sampled(sim, args.top)
        return
    started = time.process_time()
    sim.run()
    cpu = time.process_time() - started
    result = sim.result()
    tries = len(result.decisions.tries)
    print(args.scheduler, args.load, fingerprint(result), "tries", tries, f"cpu {cpu:.2f}")


if __name__ == "__main__":
    main()
