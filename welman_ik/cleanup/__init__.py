"""Batch clean-up of mocap clips: feet found, contacts detected, baked, exported.

From a shell (a Python that has ``bpy``, the package on its path)::

    python -m welman_ik.cleanup CLIPS/ more.bvh --out CLEANED/ [--workers N]
    python -m welman_ik.cleanup CLIPS/ --out CLEANED/ --scheduler tcp://farm-head:8786

From a script: ``welman_ik.cleanup.run(inputs, out, workers=..., scheduler=...)`` returns
the report's entries. Each clip runs in its own process (``worker.py``, started by
``launch.py``): cleaned by ``job.py`` (it writes a BVH with ``bvh.py`` and measures the clip
and the written file with ``measure.py``) or retargeted by ``onto.py``, both reading the
clips with ``clips.py``; the coordinating process never imports ``bpy``, so it can as well
be a plain Python that only submits to a Dask cluster.
"""

from .runner import gather, run

__all__ = ["gather", "run"]
