"""The bake: the pins enforced through every frame of an action, as a pipeline of whole steps
(``plan`` -> ``sampling`` -> ``goals`` -> ``solve`` -> ``log`` -> ``keys`` -> ``measure`` and
``correct`` -> ``report``, run by ``baker``; the pins in force on a frame in ``frames``, the
tree's per-tree answers in ``tree``, the continuity between frames in ``carry``, the plants'
ease-in in ``plants``, the solutions as channels in ``channels``, a motion edit's window and
blend in ``edit``), foot contacts found in an animation (``contacts``), and the bake, motion
edit, contact and jump operators (``operators``; the motion edit is a drag).

May import: ``drag`` (the operators only), ``pins``, ``rig``, ``welman_ik.core``, bpy."""
