"""Studies that run many simulations: the seed study, the load study, the saturation
experiment of the FGD study (:mod:`analysim.experiments.saturation`) and the figures the
notebooks regenerate."""
