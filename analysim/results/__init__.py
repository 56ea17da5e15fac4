"""What a run gives: the :class:`~analysim.results.result.Result` (jobs, events, timeline),
its metrics and fragmentation, the decisions the engine recorded and the explanations read
from them, the saved format, readable summaries, and the state of a running simulation
(``sim.state``)."""
