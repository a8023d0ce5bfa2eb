"""Pins: a pin of any kind recorded from the pose (``records``), pins turned into the core's
goals and measured on the evaluated pose (``goals``), and the pin operators (pin, unpin,
clear_pins, remove_pin, lock, unlock).

May import: ``rig``, ``welman_ik.core``, bpy."""
