"""What a run is made of: workloads, clusters (racks, nodes, GPUs, virtual clusters and the
domains jobs may use), seeded generators, scaling, teaching scenarios, the run's
configuration (:class:`~analysim.inputs.config.SimConfig`) and the checks every value
passes at the border (``validation``, ``arguments``)."""
