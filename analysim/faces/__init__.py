"""How people drive AnalySIM besides Python calls: the command line,
notebook parameter checks, the documentation site's build and the message for a missing
optional package. (The plots and the explorer app are the packages
:mod:`analysim.plotting` and :mod:`analysim.explorer`.)"""
