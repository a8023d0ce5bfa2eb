"""The bake: the pins enforced through every frame of an action, as a pipeline of whole steps
(``plan`` -> ``sampling`` -> ``goals`` -> ``solve`` -> ``log`` -> ``keys`` -> ``measure`` and
``correct`` -> ``report``, run by ``baker``; the tree's per-tree answers in ``tree``, the
continuity between frames in ``carry``, the solutions as channels in ``channels``), foot
contacts found in an animation (``contacts``), and the bake, motion edit, contact and jump
operators (``operators``; the motion edit is a drag).

May import: ``drag`` (the operators only), ``pins``, ``rig``, ``welman_ik.core``, bpy."""
