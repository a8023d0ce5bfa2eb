"""The drag: pins and settings to a solved pose (``solver``, also the script form of the
drag), the interactive drag without a window (``session``), mouse rays (``viewport``), the
drag operator (``operator``) and what it shares with the layers above (``state``).

May import: ``pins``, ``rig``, ``welman_ik.core``, bpy."""
