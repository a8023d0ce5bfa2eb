"""What the user sees: the sidebar panel, the viewport overlay (pin shapes, range shapes),
and the add-on preferences with the drag's shortcut.

May import: ``bake``, ``drag``, ``pins``, ``rig``, ``welman_ik.core``, bpy. Nothing imports it
but ``welman_ik.blender``, which registers it."""
