"""The bake: the pins enforced through every frame of an action (``baker``, with its written
channels in ``channels``), foot contacts found in an animation (``contacts``), and the bake,
motion edit, contact and jump operators (``operators``; the motion edit is a drag).

May import: ``drag``, ``pins``, ``rig``, ``welman_ik.core``, bpy."""
