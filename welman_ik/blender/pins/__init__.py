"""Pins: a pin of any kind recorded from the pose (``records``), pins turned into the core's
goals and measured on the evaluated pose (``goals``), the checks a solve's inputs pass
(``checks``), what a solve of the pins is set up from (``setup``), a solve's figures
(``figures``), and the pin operators (pin, unpin, clear_pins, remove_pin, lock, unlock).

May import: ``rig``, ``welman_ik.core``, bpy."""
