"""The rig: an armature as the solver sees it and as Blender evaluates it (the model of bones
and hinges, driven bones, evaluated points, rotation channels, keyframes, selection, the body's
parts), the add-on's saved properties, the operators' polls and the joint-range presets.

May import: ``welman_ik.core``, bpy. Nothing else of the Blender layer."""
