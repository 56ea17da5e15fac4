"""Reference: the Helios simulator's per-second loop, restated for tests (slow, literal).

Attribution: the semantics below follow, step by step and in the same order, the public
Helios artifact (https://github.com/S-Lab-System-Group/HeliosArtifact, "framework/QSSF
Service": ``policies/fifo.py``, ``sjf.py``, ``srtf.py``, ``policy.py``,
``placer/consolidate.py``, ``cluster.py``) and the Tiresias policy of the Lucid artifact
(https://github.com/S-Lab-System-Group/Lucid, ``simulation/policy/tiresias.py``,
``policy.py``). Both are MIT-licensed, Copyright (c) 2021-present NTU S-Lab. This file is an
independent restatement of that behaviour (their logic, our code); it shares nothing with
``analysim/compat`` and visits every second, as the artifacts do.

Kept from the artifacts on purpose, because the replay must reproduce them: jobs are plain
dicts in Python lists; ties in every sort follow the lists' current order (Python's sort is
stable); SRTF concatenates pending + running before sorting, Tiresias running + pending; a
preemptive policy ends a job in the second *after* its remaining time reaches 0.

Not kept: logging, CSV output, CPU accounting, and the artifacts' loops that would never end
(a job larger than its VC): the caller must not pass such jobs.
"""

from __future__ import annotations

GPUS_PER_NODE = 8


class VirtualCluster:
    """Nodes of 8 GPUs, numbered 0.. in the VC; only their free GPU counts matter."""

    def __init__(self, node_count: int) -> None:
        self.free = [GPUS_PER_NODE] * node_count
        self.total_gpus = GPUS_PER_NODE * node_count

    def free_gpus(self) -> int:
        return sum(self.free)

    def release(self, job: dict) -> None:
        for node, count in job["nodes"]:
            self.free[node] += count
        job["nodes"] = []

    def place(self, job: dict) -> bool:
        """The artifact's consolidate placer (``ConsolidatePlacement.place``)."""
        wanted = job["gpu_num"]
        if self.free_gpus() < wanted:
            return False
        chosen = self._select(wanted)
        if chosen is None:
            return False
        for node, count in chosen:
            self.free[node] -= count
        job["nodes"] = chosen
        return True

    def _select(self, wanted: int) -> list[tuple[int, int]] | None:
        available = [i for i in range(len(self.free)) if self.free[i] > 0]
        if wanted <= GPUS_PER_NODE:
            for node in sorted(available, key=lambda i: self.free[i]):
                if self.free[node] >= wanted:
                    return [(node, wanted)]
            return None
        by_most_free = sorted(available, key=lambda i: self.free[i], reverse=True)
        chosen = []
        if wanted % GPUS_PER_NODE == 0:
            needed = wanted // GPUS_PER_NODE
            for node in by_most_free:
                if self.free[node] < GPUS_PER_NODE:
                    return None
                if needed > 0:
                    chosen.append((node, GPUS_PER_NODE))
                    needed -= 1
                if needed == 0:
                    return chosen
            raise AssertionError("unreachable: the free-GPU check comes first")
        needed = wanted // GPUS_PER_NODE + 1
        for node in by_most_free:
            if self.free[node] == GPUS_PER_NODE and needed > 1:
                chosen.append((node, GPUS_PER_NODE))
                needed -= 1
                continue
            if self.free[node] >= wanted % GPUS_PER_NODE and needed == 1:
                chosen.append((node, wanted % GPUS_PER_NODE))
                return chosen
            return None
        raise AssertionError("unreachable: the free-GPU check comes first")


def make_jobs(rows: list[tuple[str, int, int, int]]) -> list[dict]:
    """Jobs from ``(job_id, submit_time, duration, gpu_num)`` rows, sorted by submit time."""
    jobs = [
        {
            "job_id": job_id,
            "submit_time": submit,
            "duration": duration,
            "gpu_num": gpus,
            "remain": duration,
            "start_time": None,
            "end_time": None,
            "queue": 0,
            "ckpt_times": 0,
            "status": None,
            "nodes": [],
            "last_nodes": [],
            "priority": -1,
        }
        for job_id, submit, duration, gpus in rows
    ]
    return sorted(jobs, key=lambda job: job["submit_time"])


def _arrivals(jobs: list[dict], time: int) -> list[dict]:
    return [job for job in jobs if job["submit_time"] == time]


def _start(job: dict, time: int) -> None:
    job["status"] = "run"
    job["last_nodes"] = [node for node, _ in job["nodes"]]
    if job["ckpt_times"] == 0:
        job["start_time"] = time
        job["queue"] = time - job["submit_time"]
    else:
        job["queue"] += time - job["last_ckpt_time"]


def run_non_preemptive(rows, node_count: int, policy: str) -> dict[str, dict]:
    """``fifo`` or ``sjf`` on one VC; returns the jobs by id."""
    jobs = make_jobs(rows)
    vc = VirtualCluster(node_count)
    queue: list[dict] = []
    running: list[dict] = []
    ended, time = 0, 0
    sort_key = "submit_time" if policy == "fifo" else "duration"
    while ended != len(jobs):
        for job in list(running):  # 1. release the jobs that end now
            if job["end_time"] == time:
                job["status"] = "end"
                vc.release(job)
                running.remove(job)
                ended += 1
        for job in _arrivals(jobs, time):  # 2. queue the new jobs
            job["status"] = "pend"
            queue.append(job)
        queue.sort(key=lambda job: job[sort_key])  # ...and start in order until one fails
        for job in list(queue):
            if not vc.place(job):
                break
            _start(job, time)
            job["end_time"] = time + job["duration"]
            queue.remove(job)
            running.append(job)
        time += 1
    return {job["job_id"]: job for job in jobs}


def _srtf_overhead(gpus: int) -> int:
    return 7 if gpus == 1 else 30 if gpus <= 8 else 60


def _tiresias_overhead(gpus: int) -> int:
    return 40 if gpus <= 8 else 60


def run_preemptive(rows, node_count: int, policy: str) -> dict[str, dict]:
    """``srtf`` (Helios) or ``tiresias`` (Lucid) on one VC; returns the jobs by id."""
    jobs = make_jobs(rows)
    vc = VirtualCluster(node_count)
    queue: list[dict] = []
    running: list[dict] = []
    ended, time = 0, 0
    tiresias = policy == "tiresias"
    overhead = _tiresias_overhead if tiresias else _srtf_overhead
    while ended != len(jobs):
        for job in list(running):  # 1. end the jobs whose count reached 0; count the rest
            if job["remain"] == 0:
                job["status"] = "end"
                job["end_time"] = time
                vc.release(job)
                running.remove(job)
                ended += 1
            else:
                job["remain"] -= 1
                if tiresias:
                    job["priority"] += job["gpu_num"]
        for job in _arrivals(jobs, time):  # 2. queue the new jobs
            job["status"] = "pend"
            if tiresias:
                job["priority"] = 0
            queue.append(job)
        to_preempt: list[dict] = []  # 3. rank, keep greedily within the VC's GPUs
        to_run: list[dict] = []
        if not tiresias or time % 60 == 0:
            if tiresias:
                candidates = running + queue
                high = [job for job in candidates if job["priority"] <= 18000]
                low = [job for job in candidates if job["priority"] > 18000]
                high.sort(key=lambda job: job["submit_time"])
                low.sort(key=lambda job: job["submit_time"])
                candidates = high + low
            else:
                candidates = queue + running
                candidates.sort(key=lambda job: job["remain"])
            quota = vc.total_gpus
            for job in candidates:
                if job["gpu_num"] <= quota:
                    quota -= job["gpu_num"]
                    if job["status"] == "pend":
                        to_run.append(job)
                elif job["status"] == "run":
                    to_preempt.append(job)
        for job in to_preempt:  # 4. preempt, charging the overhead as extra run time
            job["ckpt_times"] += 1
            job["last_ckpt_time"] = time
            job["status"] = "pend"
            job["remain"] += overhead(job["gpu_num"])
            vc.release(job)
            if job not in queue:
                queue.append(job)
            if job in running:
                running.remove(job)
        for job in to_run:  # 5. place; a job that does not fit stays pending
            if vc.place(job):
                _start(job, time)
                if job in queue:
                    queue.remove(job)
                if job not in running:
                    running.append(job)
            elif job not in queue:
                queue.append(job)
        time += 1
    return {job["job_id"]: job for job in jobs}


def run(rows, node_count: int, policy: str) -> dict[str, dict]:
    """Any of ``fifo``, ``sjf``, ``srtf``, ``tiresias`` on one VC of ``node_count`` nodes."""
    if policy in ("fifo", "sjf"):
        return run_non_preemptive(rows, node_count, policy)
    return run_preemptive(rows, node_count, policy)
