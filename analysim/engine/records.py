"""The engine's records: the event log and the timeline samples, from which
:class:`~analysim.results.result.Result` builds its ``events`` and ``timeline`` frames.

The engine appends to them as it goes and never reads them back to decide anything. Beside
the events it keeps its *decisions*: for every scheduling round (time, group, whether it was a
full round, when the group's next full round is due) the waiting jobs it tried and could not
start, each with the reason the round found (:data:`REASON_NAMES`); a waiting job it did not
try was behind the first failed job of its queue (head-of-line blocking). ``explain`` reads
them instead of deciding again.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

# event kinds
SUBMIT, START, RESUME, PREEMPT, FINISH, REJECT, MIGRATE, RECLAIM = range(8)
EVENT_NAMES = np.array(
    ["submit", "start", "resume", "preempt", "finish", "unschedulable", "migrate", "reclaim"],
    dtype=object,
)
# with failures configured (``engine/failures.py``): a job killed by a failure that waits to
# restart, a job that failed for good, and a node going down and coming back up (job -1)
FAIL, FAILED, NODE_DOWN, NODE_UP = range(8, 12)
FAILURE_EVENT_NAMES = np.array(
    [*EVENT_NAMES, "fail", "failed", "node_down", "node_up"], dtype=object
)
# with elastic jobs (``engine/elastic.py``): a running job given another GPU count
RESIZE = 12
ELASTIC_EVENT_NAMES = np.array([*FAILURE_EVENT_NAMES, "resize"], dtype=object)
#: the events after which a job runs, at a rate elastic runs record with them
RUN_EVENTS = (START, RESUME, MIGRATE, RESIZE)


# why a tried job did not start (the low bits of a try's code)
FULL, QUOTA, FRAGMENTED = 1, 2, 3
REASON_NAMES = {0: "", FULL: "full", QUOTA: "quota", FRAGMENTED: "fragmented"}
# what preemption found for it (the code's bits 2-3): no lower-ranked evictable jobs that
# free room for it, and none protected / the same, but lower-ranked jobs were protected
PREEMPT_NO_ROOM, PREEMPT_PROTECTED = 4, 8
PREEMPTION_NAMES = {0: "", PREEMPT_NO_ROOM: "no_room", PREEMPT_PROTECTED: "protected"}
BORROW_FAILED = 16  # it tried idle GPUs of other VCs in vain (the borrowing round)
# it tried to make room within its VC's own GPUs in vain: by reclaiming lent GPUs (borrowers
# of other VCs held some on its nodes) / by migrating (enough GPUs free to it, fragmented)
RECLAIM_FAILED, MIGRATION_FAILED = 32, 64
# EASY backfill: it fits on the free GPUs, but starting it would delay the reservation of a
# job ranked above it (the whole code; ``Records.try_reserved`` names the reservation)
RESERVED = 128
# a round's flags
ROUND_FULL, ROUND_NOTHING_FREE = 1, 2  # a full round; ended at once: no GPU free to its group


class Capture(NamedTuple):
    """The state fragmentation is measured from, at one timeline sample."""

    free: np.ndarray  # free GPUs per node
    waiting: np.ndarray  # waiting jobs per (domain, size bucket), flattened domain-major
    vc_used: tuple[int, ...]  # GPUs each VC holds against its own share


class Records:
    """The event log, as parallel lists (time, kind, job, nodes, GPUs) with sparse extras,
    and the timeline samples."""

    EVENT_NAMES = EVENT_NAMES  # the name of each event kind (for readers of the records)
    # the codes of the decisions (for readers of the records)
    REASON_NAMES = REASON_NAMES
    PREEMPTION_NAMES = PREEMPTION_NAMES
    BORROW_FAILED = BORROW_FAILED
    RECLAIM_FAILED, MIGRATION_FAILED = RECLAIM_FAILED, MIGRATION_FAILED
    RESERVED = RESERVED
    ROUND_FULL, ROUND_NOTHING_FREE = ROUND_FULL, ROUND_NOTHING_FREE

    def __init__(
        self,
        memo: bool = True,
        failures: bool = False,
        rates: np.ndarray | None = None,
        batches: np.ndarray | None = None,
    ) -> None:
        if failures:  # the event names of a run with failures (the others keep theirs)
            self.EVENT_NAMES = FAILURE_EVENT_NAMES
        #: with elastic jobs: each job's rate now (read when it starts to run), and the rate
        #: of each run event (event index -> rate)
        self._rates = rates
        self.event_rate: dict[int, float] = {}
        #: with batch sizes too: each job's batch size now, and that of each run event
        self._batches = batches
        self.event_batch: dict[int, float] = {}
        if rates is not None:
            self.EVENT_NAMES = ELASTIC_EVENT_NAMES
        self.event_time: list[float] = []
        self.event_kind: list[int] = []
        self.event_job: list[int] = []
        self.event_nodes: list[Any] = []  # an array of node indices, or None
        self.event_gpus: list[Any] = []  # per start, resume or migration: the GPUs taken
        self.event_cause: dict[int, int] = {}  # event index -> the job that caused it
        self.event_from: dict[int, np.ndarray] = {}  # migration event index -> nodes it left
        self.event_borrowed: set[int] = set()  # start/resume/migrate events on borrowed GPUs
        # run-length samples: (first time, how many sample times, per-VC counters, capture)
        self.samples: list[tuple[float, int, tuple, Capture]] = []
        # decisions: per round, one tuple (time, group, flags, its first try, the time the
        # group's next lower-ranked running job stops being protected), appended as it ends
        self.rounds: list[tuple[float, int, int, int, float]] = []
        # per try that did not start a job: the job and its code (a reason | preemption bits)
        self.try_job: list[int] = []
        self.try_code: list[int] = []
        self.try_free: list[int] = []  # GPUs free to it then (on its nodes, or in its quota)
        # EASY backfill: try index -> (the job a reservation is for, its time), for a try
        # that a reservation stopped (RESERVED) and for the try that made the reservation
        self.try_reserved: dict[int, tuple[int, float]] = {}
        self._memo = memo
        self._captured_at = -1  # the change count when the last capture was made
        self._captured: Capture | None = None

    def __len__(self) -> int:
        return len(self.event_time)

    def record(
        self,
        time: float,
        kind: int,
        j: int,
        nodes: Any,
        gpus: Any = None,
        borrowed: bool = False,
        cause: int | None = None,
        left: np.ndarray | None = None,
    ) -> None:
        """Append one event: ``cause`` is the job it was done for, ``left`` the nodes a
        migration left."""
        index = len(self.event_time)
        if borrowed:
            self.event_borrowed.add(index)
        self.event_time.append(time)
        self.event_kind.append(kind)
        self.event_job.append(j)
        self.event_nodes.append(nodes)
        self.event_gpus.append(gpus)
        if cause is not None:
            self.event_cause[index] = cause
        if left is not None:
            self.event_from[index] = left
        if self._rates is not None and kind in RUN_EVENTS:
            self.event_rate[index] = float(self._rates[j])
            if self._batches is not None:
                self.event_batch[index] = float(self._batches[j])

    def capture(
        self, changes: int, free: np.ndarray, waiting_counts: Any, vc_used: list[int]
    ) -> Capture:
        """The state now; the last capture again if nothing changed since (``changes`` is
        the engine's change count)."""
        if not self._memo or self._captured_at != changes:
            counts = np.frombuffer(waiting_counts, dtype=np.int64).copy()
            self._captured = Capture(free.copy(), counts, tuple(vc_used))
            self._captured_at = changes
        return self._captured
