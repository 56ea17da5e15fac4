"""One VC of the Helios-compatible replay: the Helios simulator's per-second loop, leaping.

The Helios simulator (SC'21 artifact, "QSSF Service") and the Lucid artifact's Tiresias visit
every second; in each second they (1) end the running jobs that are due, (2) queue the jobs
submitted in that second, and (3) decide who runs. The runners here do exactly that, but only
in the seconds where the decision can differ from the previous one (an arrival, an end, a
change of ranking that matters, or right after a second that changed something); every
other second is provably a repeat of the last. ``docs/compat.md`` has the rules, and
``tests/test_compat_helios.py`` checks every job against a literal per-second reference.

Times are whole seconds (Python ints). ``Record`` collects what every VC did.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass, field

from analysim.compat.helios_placer import NODE_GPUS, Allocation, place
from analysim.engine import FINISH, PREEMPT, RESUME, START, SUBMIT

TIRESIAS_THRESHOLD = 18_000  # attained GPU-seconds splitting Tiresias' two queues
TIRESIAS_INTERVAL = 60  # Tiresias decides only when the time is a multiple of this


def srtf_overhead(gpus: int) -> int:
    """Seconds a preempted job loses under the Helios simulator's ``srtf``."""
    return 7 if gpus == 1 else 30 if gpus <= NODE_GPUS else 60


def tiresias_overhead(gpus: int) -> int:
    """Seconds a preempted job loses under the Lucid artifact's Tiresias."""
    return 40 if gpus <= NODE_GPUS else 60


@dataclass
class Record:
    """What happened to every job of the workload (indexed like ``Workload.jobs``)."""

    n_jobs: int
    start: list[float] = field(init=False)
    end: list[float] = field(init=False)
    held: list[int] = field(init=False)  # seconds on GPUs, overheads included
    preemptions: list[int] = field(init=False)
    nodes: list[tuple[int, ...] | None] = field(init=False)  # global node indices, last run
    # (time, kind, job, nodes, GPUs): GPUs as (global node, GPU on it) on starts and resumes
    events: list[tuple[int, int, int, tuple | None, tuple | None]] = field(default_factory=list)
    # GPUs the job holds from each event on (parallel to ``events``), for replays whose jobs
    # change size; ``None``: every job holds its ``num_gpus`` whenever it runs
    sizes: list[int] | None = None

    def __post_init__(self) -> None:
        nan = float("nan")
        self.start = [nan] * self.n_jobs
        self.end = [nan] * self.n_jobs
        self.held = [0] * self.n_jobs
        self.preemptions = [0] * self.n_jobs
        self.nodes = [None] * self.n_jobs


class VCRun:
    """State shared by the runners: one VC's nodes, its jobs and the placer."""

    def __init__(
        self,
        node_ids: list[int],
        jobs: list[int],
        submit: list[int],
        duration: list[int],
        gpus: list[int],
        record: Record,
    ) -> None:
        self.node_ids = node_ids
        self.free = [NODE_GPUS] * len(node_ids)
        # which GPUs of each node are taken: for the record only (the placer counts GPUs);
        # a job takes the lowest-numbered free GPUs of a node, as Lucid's nodes do
        self.taken = [[False] * NODE_GPUS for _ in node_ids]
        self.gpus_of: dict[int, list[tuple[int, int]]] = {}
        self.total_free = NODE_GPUS * len(node_ids)
        self.capacity = self.total_free
        self.jobs = jobs  # in submit order (ties: workload order)
        self.submit, self.duration, self.gpus = submit, duration, gpus
        self.record = record
        self.alloc: dict[int, Allocation] = {}
        self.since: dict[int, int] = {}  # start of the current run
        self.next_arrival = 0  # position in ``jobs`` of the next job to arrive

    # -- arrivals ------------------------------------------------------------------------------
    def arrival_time(self) -> int | None:
        k = self.next_arrival
        return self.submit[self.jobs[k]] if k < len(self.jobs) else None

    def arrivals(self, t: int) -> list[int]:
        """The jobs submitted at or before ``t`` not yet seen, in submit order."""
        out = []
        while self.next_arrival < len(self.jobs):
            j = self.jobs[self.next_arrival]
            if self.submit[j] > t:
                break
            out.append(j)
            self.record.events.append((self.submit[j], SUBMIT, j, None, None))
            self.next_arrival += 1
        return out

    # -- GPUs ----------------------------------------------------------------------------------
    def try_start(self, j: int, t: int, resume: bool = False) -> bool:
        """Place ``j`` at ``t`` if the consolidate placer finds room; say whether it did."""
        where = place(self.free, self.gpus[j], self.total_free)
        if where is None:
            return False
        gpus = []
        for node, n in where:
            self.free[node] -= n
            slots = self.taken[node]
            free_slots = [g for g in range(NODE_GPUS) if not slots[g]][:n]
            for g in free_slots:
                slots[g] = True
            gpus += [(node, g) for g in free_slots]
        self.total_free -= self.gpus[j]
        self.alloc[j] = where
        self.gpus_of[j] = gpus
        self.since[j] = t
        nodes = tuple(self.node_ids[node] for node, _ in where)
        rec = self.record
        rec.nodes[j] = nodes
        if rec.start[j] != rec.start[j]:  # NaN: first start
            rec.start[j] = t
        held = tuple((self.node_ids[node], g) for node, g in gpus)
        rec.events.append((t, RESUME if resume else START, j, nodes, held))
        return True

    def stop(self, j: int, t: int, kind: int) -> None:
        """End the current run of ``j`` at ``t`` (``FINISH`` or ``PREEMPT``), freeing its GPUs."""
        for node, n in self.alloc.pop(j):
            self.free[node] += n
        for node, g in self.gpus_of.pop(j):
            self.taken[node][g] = False
        self.total_free += self.gpus[j]
        rec = self.record
        rec.held[j] += t - self.since.pop(j)
        if kind == FINISH:
            rec.end[j] = t
        else:
            rec.preemptions[j] += 1
        rec.events.append((t, kind, j, rec.nodes[j], None))


class NonPreemptiveRun(VCRun):
    """``fifo`` and ``sjf``: a job placed at ``t`` ends at ``t + duration``; the GPUs it frees
    are reused in that same second; strict head-of-line blocking."""

    def run(self, by_duration: bool) -> None:
        ends: list[tuple[int, int]] = []  # (end time, job)
        queue: deque[int] | list[tuple[int, int, int]] = [] if by_duration else deque()
        while True:
            arrival = self.arrival_time()
            candidates = [x for x in (arrival, ends[0][0] if ends else None) if x is not None]
            if not candidates:
                return
            t = min(candidates)
            while ends and ends[0][0] == t:
                self.stop(heapq.heappop(ends)[1], t, FINISH)
            for j in self.arrivals(t):
                if by_duration:
                    # ties go to the job that arrived first: its workload position
                    heapq.heappush(queue, (self.duration[j], j, j))
                else:
                    queue.append(j)
            while queue:
                j = queue[0][2] if by_duration else queue[0]
                if not self.try_start(j, t):
                    break
                if by_duration:
                    heapq.heappop(queue)
                else:
                    queue.popleft()
                heapq.heappush(ends, (t + self.duration[j], j))


class PreemptiveRun(VCRun):
    """``srtf`` (Helios) and ``tiresias`` (Lucid): every second (Tiresias: every multiple of
    60 s) rank pending and running jobs, keep them greedily while the VC's GPU count lasts,
    preempt the running jobs left out, then place the pending jobs kept in.

    A job started at ``t`` with ``r`` seconds left is counted down from ``t + 1`` and ends at
    ``t + r + 1`` (the artifacts end a job in the second after its count reaches 0).
    """

    def __init__(self, *args, tiresias: bool, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.tiresias = tiresias
        self.overhead = tiresias_overhead if tiresias else srtf_overhead
        self.que: list[int] = []  # pending jobs, in the artifacts' list order
        self.run_list: list[int] = []  # running jobs, in the order they (re)started
        self.remain = {j: self.duration[j] for j in self.jobs}  # at ``since`` when running
        self.attained = dict.fromkeys(self.jobs, 0)  # GPU-seconds, at ``since`` when running
        self.finished = 0

    def run(self) -> None:
        t = self.next_step(-1, changed=False)  # Tiresias: the first multiple of 60 s
        while t is not None:
            changed = self.step(t)
            if self.finished == len(self.jobs):
                return
            t = self.next_step(t, changed)
        if self.finished < len(self.jobs):  # pragma: no cover - the ranking always admits
            raise RuntimeError("Helios replay stalled with jobs left")

    # -- one second ------------------------------------------------------------------------
    def remain_at(self, j: int, t: int) -> int:
        return self.remain[j] - (t - self.since[j]) if j in self.since else self.remain[j]

    def attained_at(self, j: int, t: int) -> int:
        if j in self.since:
            return self.attained[j] + self.gpus[j] * (t - self.since[j])
        return self.attained[j]

    def step(self, t: int) -> bool:
        """Second ``t``: end, queue, decide. Return whether any job started or was preempted."""
        running = []
        for j in self.run_list:
            end = self.since[j] + self.remain[j] + 1
            if end <= t:
                self.stop(j, end, FINISH)
                self.finished += 1
            else:
                running.append(j)
        self.run_list = running
        self.que.extend(self.arrivals(t))
        if self.tiresias and t % TIRESIAS_INTERVAL:
            return False
        keep, evict = self.select(t)
        for j in evict:
            remain, attained = self.remain_at(j, t), self.attained_at(j, t)
            self.stop(j, t, PREEMPT)
            self.remain[j] = remain + self.overhead(self.gpus[j])
            self.attained[j] = attained
            self.que.append(j)
        if evict:
            gone = set(evict)
            self.run_list = [j for j in self.run_list if j not in gone]
        started = [j for j in keep if self.try_start(j, t, self.record.preemptions[j] > 0)]
        if started:
            begun = set(started)
            self.que = [j for j in self.que if j not in begun]
            self.run_list.extend(started)
        return bool(evict or started)

    def select(self, t: int) -> tuple[list[int], list[int]]:
        """The pending jobs to start and the running jobs to preempt at ``t``."""
        if self.tiresias:
            ranked = self.run_list + self.que
            attained = {j: self.attained_at(j, t) for j in ranked}
            high = [j for j in ranked if attained[j] <= TIRESIAS_THRESHOLD]
            low = [j for j in ranked if attained[j] > TIRESIAS_THRESHOLD]
            high.sort(key=self.submit.__getitem__)
            low.sort(key=self.submit.__getitem__)
            ranked = high + low
        else:
            ranked = self.que + self.run_list
            remain = {j: self.remain_at(j, t) for j in ranked}
            ranked.sort(key=remain.__getitem__)
        quota = self.capacity
        keep, evict = [], []
        for j in ranked:
            if self.gpus[j] <= quota:
                quota -= self.gpus[j]
                if j not in self.since:
                    keep.append(j)
            elif j in self.since:
                evict.append(j)
        return keep, evict

    # -- the next second that can differ ---------------------------------------------------
    def next_step(self, t: int, changed: bool) -> int | None:
        every = TIRESIAS_INTERVAL if self.tiresias else 1
        if changed:
            return t + every
        times = [self.since[j] + self.remain[j] + 1 for j in self.run_list]
        arrival = self.arrival_time()
        if arrival is not None:
            times.append(arrival)
        times.extend(self.ranking_changes(t))
        if not times:
            return None
        return -(-min(times) // every) * every

    def ranking_changes(self, t: int) -> list[int]:
        """Seconds after ``t`` at which a change of ranking alone could change the decision.

        Tiresias: a running job passing 18,000 GPU-seconds (its queue changes). SRTF: none.
        After a second in which nothing started or was preempted, the jobs kept in (every
        running job, and pending jobs that could not be placed) fit the VC's GPU count
        together, and as time passes only running jobs move up the ranking; so every job kept
        in stays in, every job left out stays out, and placement fails as before
        (``docs/compat.md`` spells this out).
        """
        out = []
        if not self.tiresias:
            return out
        for j in self.run_list:
            attained = self.attained_at(j, t)
            if attained <= TIRESIAS_THRESHOLD:
                cross = t + (TIRESIAS_THRESHOLD - attained) // self.gpus[j] + 1
                if cross <= self.since[j] + self.remain[j]:  # still counting then
                    out.append(cross)
        return out
