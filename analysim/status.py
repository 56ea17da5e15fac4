"""Job status codes shared by the engine and the views policies see."""

PENDING, WAITING, RUNNING, DONE, UNSCHEDULABLE = 0, 1, 2, 3, 4
STATUS_NAMES = ("pending", "waiting", "running", "done", "unschedulable")
