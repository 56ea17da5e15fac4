"""The Delaunay triangulation the Pollux artifact interpolates throughput over, exported.

The artifact's simulator (petuum/adaptdl, branch osdi21-artifact, ``simulator/``) reads the
step and sync time of a placement it did not measure from scipy's ``LinearNDInterpolator``
over (nodes, replicas, local batch size): the measured placements averaged per (nodes,
replicas, local batch size), then the rows of ``scalability.csv``. ``interpolated.csv``
(``tools/pollux_interpolated.py``) holds its values at the keys Tiresias and Optimus reach;
the Pollux policy picks its own batch sizes, so it can ask for any local batch size. This
tool exports, per application (ncf never runs on several GPUs under Pollux, so it is left
out), the interpolator's points with their values and the simplices (four point indices)
that reach more than 4 nodes (a placement on at most 4 nodes is always a measured one), so
that ``analysim/compat/pollux_model.py`` can interpolate barycentrically as scipy does,
without scipy.

Usage (with the artifact's requirements, here Python 3.11, numpy 1.23.5, pandas 1.5.3,
scipy 1.9.3; not AnalySIM's)::

    python tools/pollux_delaunay.py ARTIFACT/simulator > analysim/data/pollux/delaunay.csv
"""

from __future__ import annotations

import sys
import warnings

XS = ["num_nodes", "num_replicas", "local_bsz"]


def main(simulator: str) -> None:
    sys.path.insert(0, simulator)
    warnings.simplefilter("ignore", FutureWarning)  # the artifact's DataFrame.append
    from applications import APPLICATIONS  # the artifact's module, run as its oracle
    from scipy.spatial import Delaunay

    print("application,kind,a,b,c,d,step_time,sync_time")
    for name in sorted(APPLICATIONS):
        if name == "ncf":
            continue
        app = APPLICATIONS[name]
        frame = app.placements.groupby(XS)[[*XS, "step_time", "sync_time"]].mean()
        frame = frame.append(app.scalability, ignore_index=True)
        points = frame[XS].values
        for row in frame.itertuples(index=False):
            n, r, b = (f"{v:g}" for v in (row.num_nodes, row.num_replicas, row.local_bsz))
            print(f"{name},point,{n},{r},{b},,{float(row.step_time)!r},{float(row.sync_time)!r}")
        for simplex in Delaunay(points).simplices:
            if points[simplex, 0].max() > 4:
                print(f"{name},simplex,{','.join(str(int(i)) for i in simplex)},,")


if __name__ == "__main__":
    main(sys.argv[1])
