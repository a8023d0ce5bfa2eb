"""Bake: pins enforced through every frame of an action (Welman 1993, Fig 6.5)."""

from __future__ import annotations

import itertools

import bpy
import numpy as np
import pytest
from conftest import drag, local_rotation, pin_errors, rotation_angle, world_point

from welman_ik.blender.rig import keyframes

FEET = ("toe.L", "toe.R", "heel.02.L", "heel.02.R")


def _keys(obj) -> dict:
    return {(fc.data_path, fc.array_index): [tuple(k.co) for k in fc.keyframe_points]
            for fc in keyframes.action_fcurves(obj)}


def _curve_values(obj, frames) -> dict:
    """(data path, index) -> the action's F-curve evaluated on ``frames``."""
    return {(fc.data_path, fc.array_index): np.array([fc.evaluate(f) for f in frames])
            for fc in keyframes.action_fcurves(obj)}


@pytest.fixture
def fig_6_5(human):
    """Two keys 20 frames apart, the pelvis 0.25 m lower in the second, the feet planted in
    both; the pins (feet only) hold where the feet are."""
    for pin in human.welman_ik.pins:
        pin.enabled = pin.bone in FEET
    scene = bpy.context.scene
    scene.frame_current = 1
    for pb in human.pose.bones:  # key the whole rest pose at frame 1
        pb.keyframe_insert(keyframes.rotation_path(pb), group=pb.name)
        pb.keyframe_insert("location", group=pb.name)
    scene.frame_current = 21
    # The second key as the plain solver makes it (no preferred pose): the source motion of
    # these tests stays the same whatever the drag's defaults.
    human.welman_ik.reference = "NONE"
    drag("spine", world_point(human, "spine", 0.0) - np.array([0.0, 0.0, 0.25]), anchor=0.0)
    human.welman_ik.reference = "START"
    for pb in human.pose.bones:
        pb.keyframe_insert(keyframes.rotation_path(pb), group=pb.name)
        pb.keyframe_insert("location", group=pb.name)
    return human


def _feet_and_root(obj, frames):
    scene = bpy.context.scene
    out = {}
    for f in frames:
        scene.frame_set(f)
        out[f] = {name: world_point(obj, name) for name in FEET} | {"root": world_point(obj, "spine", 0.0)}
    return out


def _largest_joint_steps(obj, frames) -> dict:
    """Per bone, the largest rotation [rad] of its own channels between neighbouring frames."""
    scene = bpy.context.scene
    rotations = []
    for f in frames:
        scene.frame_set(f)
        rotations.append({pb.name: pb.matrix_basis.to_quaternion() for pb in obj.pose.bones})
    return {name: max(rotation_angle(now[name], later[name]) for now, later in itertools.pairwise(rotations))
            for name in rotations[0]}


def test_feet_slide_before_and_hold_after_the_bake(fig_6_5):
    obj = fig_6_5
    frames = range(1, 22)
    before = _feet_and_root(obj, frames)
    source_steps = _largest_joint_steps(obj, frames)
    slide = max(np.linalg.norm(before[f][n] - before[1][n]) for f in frames for n in FEET)
    assert slide > 0.01  # interpolating joint angles moves the planted feet (Fig 6.5)
    original = obj.animation_data.action
    original_keys = _keys(obj)

    assert bpy.ops.welman_ik.bake(frame_start=1, frame_end=21) == {"FINISHED"}

    baked = obj.animation_data.action
    assert baked != original and baked.name.startswith(original.name)
    after = _feet_and_root(obj, frames)
    for f in frames:
        for pin in obj.welman_ik.pins:
            if pin.enabled:
                assert np.linalg.norm(after[f][pin.bone] - np.array(pin.location)) <= 1e-4, (f, pin.bone)
        assert np.linalg.norm(after[f]["root"] - before[f]["root"]) <= 1e-3
    # Continuity: no pops; each bone turns between frames about as much as in the source.
    for name, step in _largest_joint_steps(obj, frames).items():
        assert step <= 1.5 * source_steps[name] + 0.01, (name, source_steps[name], step)
    obj.animation_data.action = original
    assert _keys(obj) == original_keys  # the original action is unchanged, key for key


@pytest.mark.parametrize(
    ("start", "end", "phrase"), [(10, 5, "ends"), (1, 21, "no action")], ids=["reversed", "no-animation"]
)
def test_bake_refuses_bad_input(human, start, end, phrase):
    before = {pb.name: tuple(pb.rotation_quaternion) for pb in human.pose.bones}
    if phrase == "ends":
        human.pose.bones["spine"].keyframe_insert("location")
    with pytest.raises(RuntimeError, match=phrase):
        bpy.ops.welman_ik.bake(frame_start=start, frame_end=end)
    assert {pb.name: tuple(pb.rotation_quaternion) for pb in human.pose.bones} == before


def test_follow_pin_tracks_its_own_animated_path(fig_6_5):
    """A moving pin on a hand animated across the range: the hand keeps its original path
    while the feet hold."""
    obj = fig_6_5
    scene = bpy.context.scene
    hand = obj.pose.bones["hand.R"]
    for frame, angle in ((1, 0.0), (21, 0.6)):
        scene.frame_set(frame)
        obj.pose.bones["upper_arm.R"].rotation_quaternion = (np.cos(angle / 2), np.sin(angle / 2), 0.0, 0.0)
        obj.pose.bones["upper_arm.R"].keyframe_insert("rotation_quaternion", group="upper_arm.R")
    path = {}
    for f in range(1, 22):
        scene.frame_set(f)
        path[f] = world_point(obj, "hand.R")
    pin = obj.welman_ik.pins.add()
    pin.bone, pin.follow = hand.name, True
    assert bpy.ops.welman_ik.bake(frame_start=1, frame_end=21) == {"FINISHED"}
    for f in range(1, 22):
        scene.frame_set(f)
        assert np.linalg.norm(world_point(obj, "hand.R") - path[f]) <= 1e-4, f
        for foot in FEET:
            goal = next(p.location for p in obj.welman_ik.pins if p.bone == foot)
            assert np.linalg.norm(world_point(obj, foot) - np.array(goal)) <= 1e-4, (f, foot)


def test_cancelled_bake_leaves_nothing(fig_6_5):
    from welman_ik.blender.bake.baker import Baker

    obj = fig_6_5
    original = obj.animation_data.action
    actions = set(bpy.data.actions)
    bpy.context.scene.frame_set(5)
    obj.pose.bones["upper_arm.R"].rotation_quaternion = (0.9, 0.3, 0.0, 0.0)  # an edit not keyed yet
    pose = {pb.name: tuple(pb.rotation_quaternion) for pb in obj.pose.bones}
    baker = Baker(bpy.context, obj, 1, 21)
    for _ in range(7):
        baker.next()
    baker.show_start()  # between the slices of a modal bake the viewport shows the pose as it was
    assert {pb.name: tuple(pb.rotation_quaternion) for pb in obj.pose.bones} == pose
    baker.next()
    baker.abort()
    assert set(bpy.data.actions) == actions
    assert obj.animation_data.action == original
    assert {pb.name: tuple(pb.rotation_quaternion) for pb in obj.pose.bones} == pose


def test_baked_action_survives_save_and_reload(fig_6_5, tmp_path):
    """The bake makes a new action (named for the original) whose curves differ from the
    original's (the feet held where the source's keys slid them: up to 0.15 in a channel);
    both are in the file after saving and reopening, the baked one assigned, its keys the
    same."""
    obj = fig_6_5
    original = obj.animation_data.action.name
    source, curves = _keys(obj), _curve_values(obj, range(1, 22))
    assert bpy.ops.welman_ik.bake(frame_start=1, frame_end=21) == {"FINISHED"}
    name, keys, object_name = obj.animation_data.action.name, _keys(obj), obj.name
    assert name == original + ".welman_bake"
    baked = _curve_values(obj, range(1, 22))
    assert set(baked) == set(curves)
    changed = max(float(np.abs(baked[c] - curves[c]).max()) for c in curves)
    assert changed > 0.1, changed
    path = str(tmp_path / "baked.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    obj = bpy.data.objects[object_name]
    assert obj.animation_data.action.name == name
    assert _keys(obj) == keys
    assert original == "metarigAction" and original in bpy.data.actions  # the original is kept in the file too
    keyframes.assign_action(obj, bpy.data.actions[original])
    assert _keys(obj) == source


def test_bake_refuses_a_pin_on_a_missing_bone(fig_6_5):
    obj = fig_6_5
    next(p for p in obj.welman_ik.pins if p.enabled).bone = "renamed.bone"
    actions = set(bpy.data.actions)
    with pytest.raises(RuntimeError, match="no longer exists"):
        bpy.ops.welman_ik.bake(frame_start=1, frame_end=21)
    assert set(bpy.data.actions) == actions


def test_bake_refuses_a_linked_action(fig_6_5, tmp_path):
    obj = fig_6_5
    library = str(tmp_path / "library.blend")
    bpy.data.libraries.write(library, {obj.animation_data.action})
    with bpy.data.libraries.load(library, link=True) as (source, target):
        target.actions = list(source.actions)
    linked = target.actions[0]
    assert linked.library is not None
    obj.animation_data.action = linked
    with pytest.raises(RuntimeError, match="linked"):
        bpy.ops.welman_ik.bake(frame_start=1, frame_end=21)
    assert obj.animation_data.action == linked


def test_edit_in_motion_blends_into_the_neighbours(fig_6_5):
    """Yamane & Nakamura's motion editing: hand.R moved 0.1 m at frame 11; the edit falls off
    over 5 frames on either side, the feet stay pinned, frames outside the window keep
    their motion."""
    obj = fig_6_5
    scene = bpy.context.scene
    frames = range(1, 22)
    before = {}
    for f in frames:
        scene.frame_set(f)
        before[f] = world_point(obj, "hand.R")
    displacement = np.array([0.1, -0.05, 0.0])
    assert bpy.ops.welman_ik.edit_motion(bone="hand.R", target=tuple(before[11] + displacement), frame=11,
                                         falloff=5) == {"FINISHED"}
    # The edit fades as a raised cosine, whole on its frame and gone one frame past the falloff:
    # 0.5 (1 + cos(pi d / 6)) at d frames away, written out here rather than asked of the code.
    fade = {0: 1.0, 1: 0.9330127, 2: 0.75, 3: 0.5, 4: 0.25, 5: 0.0669873}
    for f in frames:
        scene.frame_set(f)
        moved = world_point(obj, "hand.R") - before[f]
        if 6 <= f <= 16:
            np.testing.assert_allclose(moved, fade[abs(f - 11)] * displacement, atol=1e-4)
            for pin in obj.welman_ik.pins:
                if pin.enabled:
                    assert np.linalg.norm(world_point(obj, pin.bone) - np.array(pin.location)) <= 1e-4
        else:  # outside the window the motion is exactly as it was
            assert np.linalg.norm(moved) <= 1e-6, f
    # The edit's own figure is its error on the edited frame, where it holds in full.
    scene.frame_set(11)
    held = float(np.linalg.norm(world_point(obj, "hand.R") - (before[11] + displacement)))
    assert abs(obj.welman_ik.last_solve.drag_error - held) <= 1e-6, (obj.welman_ik.last_solve.drag_error, held)


def test_an_edit_reports_its_error_where_it_holds_in_full(fig_6_5):
    """An edit out of reach: ``drag_error`` is the edited point's evaluated distance from the
    edit's target on the edited frame (on the others the target is the blend, not the edit)."""
    obj = fig_6_5
    scene = bpy.context.scene
    scene.frame_set(11)
    target = world_point(obj, "hand.R") + np.array([3.0, 0.0, 0.0])
    assert bpy.ops.welman_ik.edit_motion(bone="hand.R", target=tuple(target), frame=11, falloff=5) == {"FINISHED"}
    scene.frame_set(11)
    missed = float(np.linalg.norm(world_point(obj, "hand.R") - target))
    assert missed > 0.5
    assert abs(obj.welman_ik.last_solve.drag_error - missed) <= 1e-4, (obj.welman_ik.last_solve.drag_error, missed)
    last = obj.welman_ik.last_solve
    assert not last.converged and "'hand.R'" in last.message and "frame 11" in last.message, last.message


def _baked_channels(obj, direct: bool) -> dict:
    from welman_ik.blender.bake.baker import Baker

    baker = Baker(bpy.context, obj, 1, 21, direct=direct)
    assert baker.sampler.direct == direct
    while not baker.done:
        baker.next()
    baker.abort()
    return baker.results


def test_sampling_the_fcurves_matches_the_scene_evaluation(fig_6_5):
    """The bake's own F-curve evaluation gives the same baked channels as a scene frame
    change on every frame."""
    from welman_ik.blender.bake.baker import direct_sampling

    assert direct_sampling(fig_6_5)
    direct, scene = _baked_channels(fig_6_5, True), _baked_channels(fig_6_5, False)
    assert direct.keys() == scene.keys()
    for frame, bones in direct.items():
        assert bones.keys() == scene[frame].keys()
        for name, (path, rotation, location) in bones.items():
            other = scene[frame][name]
            assert path == other[0]
            np.testing.assert_allclose(rotation, other[1], atol=1e-6, err_msg=f"{name} @ {frame}")
            if location is not None:
                np.testing.assert_allclose(location, other[2], atol=1e-6)


def test_bake_evaluates_nla_strips(fig_6_5):
    """The body's motion comes from an NLA strip under an active action that keys only the
    head: the bake evaluates both, as Blender does, and the feet hold."""
    from welman_ik.blender.bake.baker import direct_sampling

    obj = fig_6_5
    scene = bpy.context.scene
    ad = obj.animation_data
    motion = ad.action
    before = _feet_and_root(obj, range(1, 22))
    track = ad.nla_tracks.new()
    track.strips.new("motion", 1, motion)
    ad.action = None
    head = obj.pose.bones["spine.006"]
    for frame, angle in ((1, 0.0), (21, 0.4)):
        head.rotation_quaternion = (np.cos(angle / 2), 0.0, np.sin(angle / 2), 0.0)
        head.keyframe_insert("rotation_quaternion", frame=frame, group=head.name)
    assert ad.action is not None and ad.action != motion
    assert not direct_sampling(obj)
    scene.frame_set(11)
    assert np.linalg.norm(world_point(obj, "spine", 0.0) - before[11]["root"]) <= 1e-6  # the strip drives it

    assert bpy.ops.welman_ik.bake(frame_start=1, frame_end=21) == {"FINISHED"}
    after = _feet_and_root(obj, range(1, 22))
    for f in range(1, 22):
        for pin in obj.welman_ik.pins:
            if pin.enabled:
                assert np.linalg.norm(after[f][pin.bone] - np.array(pin.location)) <= 1e-4, (f, pin.bone)
        assert np.linalg.norm(after[f]["root"] - before[f]["root"]) <= 1e-3
    # The active action's head turn is in the baked pose too: 0.2 rad about the bone's Y halfway, 0.4 at the end.
    for frame, angle in ((1, 0.0), (11, 0.2), (21, 0.4)):
        scene.frame_set(frame)
        turn = local_rotation(obj, "spine.006")
        turned = 2.0 * np.arctan2(np.linalg.norm((turn.x, turn.y, turn.z)), abs(turn.w))
        assert turned == pytest.approx(angle, abs=1e-4), frame
        if angle:
            np.testing.assert_allclose(np.array(turn.axis), (0.0, 1.0, 0.0), atol=1e-4)


@pytest.mark.parametrize("change", ["nla", "constraint", "driver", "object", "time remapping"])
def test_anything_beyond_plain_fcurves_is_sampled_by_the_scene(fig_6_5, change):
    from welman_ik.blender.bake.baker import direct_sampling

    obj = fig_6_5
    assert direct_sampling(obj)
    if change == "nla":
        obj.animation_data.nla_tracks.new().strips.new("copy", 1, obj.animation_data.action.copy())
    elif change == "constraint":
        obj.pose.bones["hand.R"].constraints.new("COPY_ROTATION")
    elif change == "driver":
        obj.pose.bones["hand.R"].driver_add("location", 0)
    elif change == "time remapping":
        bpy.context.scene.render.frame_map_new = 50
    else:
        obj.keyframe_insert("location", frame=1)
    assert not direct_sampling(obj)


def test_interactive_edit_previews_what_the_edit_does(fig_6_5):
    """The panel's Edit Motion: a drag at the current frame with the pins as the edit holds
    them (here a follow pin on hand.L on its animated path, and the feet), the root kept;
    confirming blends the edit into the neighbours and lands where the preview was."""
    from welman_ik.blender.bake.baker import pins_for_edit
    from welman_ik.blender.drag.session import DragSession, PoseSnapshot

    obj = fig_6_5
    scene = bpy.context.scene
    follow = obj.welman_ik.pins.add()
    follow.bone, follow.follow = "hand.L", True
    scene.frame_set(11)
    animated = PoseSnapshot(obj)
    hand_l, root = world_point(obj, "hand.L"), world_point(obj, "spine", 0.0)
    pins = pins_for_edit(bpy.context, obj, "hand.R", 11)
    assert PoseSnapshot(obj).values == animated.values  # looking them up left the pose alone
    targets = {pin.bone: np.array(target) for pin, target in pins}
    assert set(targets) == set(FEET) | {"hand.L"}
    np.testing.assert_allclose(targets["hand.L"], hand_l, atol=1e-6)

    drag = DragSession(obj, "hand.R", 0.5, pins=pins, keep_root=True)
    start = drag.effector()
    goal = start + np.array([0.15, 0.0, 0.1])
    for t in np.linspace(0.1, 1.0, 10):
        point = start + t * (goal - start)
        drag.move(point - np.array([0.0, 5.0, 0.0]), np.array([0.0, 1.0, 0.0]))
        for bone, target in targets.items():
            assert np.linalg.norm(world_point(obj, bone) - target) <= 1e-4, bone
        assert np.linalg.norm(world_point(obj, "spine", 0.0) - root) <= 1e-9
    preview = world_point(obj, "hand.R", 0.5)
    np.testing.assert_allclose(preview, goal, atol=1e-4)

    drag.snapshot.restore(obj)  # what confirming does, then the edit itself
    assert bpy.ops.welman_ik.edit_motion(bone="hand.R", target=tuple(drag.goal), anchor=0.5, frame=11,
                                         falloff=5) == {"FINISHED"}
    scene.frame_set(11)
    np.testing.assert_allclose(world_point(obj, "hand.R", 0.5), preview, atol=1e-4)
    np.testing.assert_allclose(world_point(obj, "hand.L"), hand_l, atol=1e-4)


def test_bake_of_nla_strips_alone_goes_into_a_new_action(fig_6_5):
    """No assigned action, the motion in an NLA strip: the bake evaluates the strip and puts
    the baked frames into a new action on top; the strip's action is left as it was."""
    obj = fig_6_5
    ad = obj.animation_data
    motion = ad.action
    keys = _keys(obj)
    before = _feet_and_root(obj, range(1, 22))
    ad.nla_tracks.new().strips.new("motion", 1, motion)
    ad.action = None
    assert bpy.ops.welman_ik.bake(frame_start=5, frame_end=15) == {"FINISHED"}
    assert ad.action is not None and ad.action != motion and ad.action.name == obj.name + ".welman_bake"
    after = _feet_and_root(obj, range(1, 22))
    for f in (*range(1, 5), *range(16, 22)):  # outside the baked range the strip shows as it was
        for name, point in before[f].items():
            assert np.linalg.norm(after[f][name] - point) <= 1e-6, (f, name)
    for f in range(5, 16):
        for pin in obj.welman_ik.pins:
            if pin.enabled:
                assert np.linalg.norm(after[f][pin.bone] - np.array(pin.location)) <= 1e-4, (f, pin.bone)
        assert np.linalg.norm(after[f]["root"] - before[f]["root"]) <= 1e-3
    ad.action = motion
    assert _keys(obj) == keys


@pytest.mark.parametrize("operation", ["bake", "edit"])
def test_motion_outside_the_range_keeps_its_shape(fig_6_5, operation):
    """Bezier keys beyond the range (here at 41 and 61) keep their interpolation: the motion
    after the baked or edited frames is the same as before, and no key lands elsewhere."""
    obj = fig_6_5
    scene = bpy.context.scene
    for frame, lowered in ((41, False), (61, True)):  # two more keys: rest, lowered
        source = 1 if not lowered else 21
        scene.frame_set(source)
        for pb in obj.pose.bones:
            pb.keyframe_insert(keyframes.rotation_path(pb), frame=frame, group=pb.name)
            pb.keyframe_insert("location", frame=frame, group=pb.name)
    outside = range(22, 62)
    bones = ("shin.L", "hand.R", "spine")
    before = {}
    for f in outside:
        scene.frame_set(f)
        before[f] = {b: world_point(obj, b) for b in bones}
    key_frames = {round(k.co[0]) for fc in keyframes.action_fcurves(obj) for k in fc.keyframe_points}
    scene.frame_set(30)  # a current frame outside the range: no key may land on it
    if operation == "bake":
        assert bpy.ops.welman_ik.bake(frame_start=5, frame_end=15) == {"FINISHED"}
        allowed = key_frames | set(range(5, 16))
    else:
        target = tuple(before[22]["hand.R"])  # any move will do
        assert bpy.ops.welman_ik.edit_motion(bone="hand.R", target=target, frame=11, falloff=4) == {"FINISHED"}
        allowed = key_frames | set(range(1, 22))
    for f in outside:
        scene.frame_set(f)
        for b in bones:
            assert np.linalg.norm(world_point(obj, b) - before[f][b]) <= 1e-6, (f, b)
    now = {round(k.co[0]) for fc in keyframes.action_fcurves(obj) for k in fc.keyframe_points}
    assert now <= allowed and 30 not in now


def test_a_pin_out_of_force_eases_its_bone_back_to_the_animation(fig_6_5):
    """The left foot's pins end at frame 10: over the next ``motion_falloff`` (5) frames the
    left leg eases back onto its own animation, without a jump, and follows it exactly
    after that; the right foot holds throughout."""
    obj = fig_6_5
    obj.welman_ik.motion_falloff = 5
    obj.welman_ik.root_motion = "KEEP"  # the root exactly on its path: the leg's own easing is what shows
    scene = bpy.context.scene
    animated = {}
    for f in range(1, 22):
        scene.frame_set(f)
        animated[f] = world_point(obj, "toe.L")
    for pin in obj.welman_ik.pins:
        if pin.bone.endswith(".L"):
            pin.frame_start, pin.frame_end = 1, 10
    assert bpy.ops.welman_ik.bake(frame_start=1, frame_end=21) == {"FINISHED"}
    offset = {}
    for f in range(10, 22):
        scene.frame_set(f)
        offset[f] = world_point(obj, "toe.L") - animated[f]
        assert pin_errors(obj)["toe.R"] <= 1e-4
    assert np.linalg.norm(offset[10]) > 0.01  # the pin held the foot away from its path
    for f in range(16, 22):
        assert np.linalg.norm(offset[f]) <= 1e-6, f
    steps = [np.linalg.norm(offset[f + 1] - offset[f]) for f in range(10, 16)]
    # eased over the 5 frames, not dropped at once: the largest step is 0.252 of the way (over
    # 3 frames it would be 0.357)
    assert max(steps) <= 0.3 * np.linalg.norm(offset[10])


def test_bake_refuses_nla_tweak_mode(fig_6_5):
    obj = fig_6_5
    ad = obj.animation_data
    strip = ad.nla_tracks.new().strips.new("motion", 1, ad.action)
    ad.action = None
    strip.select = True
    ad.nla_tracks[0].select = True
    ad.use_tweak_mode = True
    assert ad.use_tweak_mode
    actions = set(bpy.data.actions)
    with pytest.raises(RuntimeError, match="tweak mode"):
        bpy.ops.welman_ik.bake(frame_start=1, frame_end=21)
    assert set(bpy.data.actions) == actions


def test_bake_holds_pins_through_a_bone_the_rig_drives(fig_6_5):
    """The left shin copies the right shin's rotation (a Copy Rotation constraint): the bake
    holds it where Blender puts it on each frame and holds the left foot through the other
    joints, measured on the evaluated pose of every frame."""
    obj = fig_6_5
    constraint = obj.pose.bones["shin.L"].constraints.new("COPY_ROTATION")
    constraint.target, constraint.subtarget = obj, "shin.R"
    constraint.mix_mode = "REPLACE"
    assert bpy.ops.welman_ik.bake(frame_start=1, frame_end=21) == {"FINISHED"}
    scene = bpy.context.scene
    for frame in range(1, 22):
        scene.frame_set(frame)
        for pin in obj.welman_ik.pins:
            if pin.enabled:
                assert np.linalg.norm(world_point(obj, pin.bone) - np.array(pin.location)) <= 1e-4, (frame, pin.bone)
    last = obj.welman_ik.last_solve
    assert last.converged and last.max_pin_error <= 1e-4, last.message


def test_missed_frames_are_reported_listed_and_reachable(fig_6_5):
    """A hand pin 2 m above the rig cannot be held: the bake names the bone and the frames,
    records the worst frame in ``last_solve``, and lists every missed frame for the panel,
    whose arrow goes to the frame. A bake that holds everything clears the list."""
    obj = fig_6_5
    obj.welman_ik.root_motion = "KEEP"  # the feet's legs hold them whatever the hand's pin asks
    hand = next(p for p in obj.welman_ik.pins if p.bone == "hand.L")
    hand.enabled = True
    hand.location = world_point(obj, "hand.L") + np.array([0.0, 0.0, 2.0])
    assert bpy.ops.welman_ik.bake(frame_start=1, frame_end=21) == {"FINISHED"}
    settings = obj.welman_ik
    misses = [(m.frame, m.bone) for m in settings.bake_misses]
    assert misses == [(f, "hand.L") for f in range(1, 22)], misses
    assert all(m.error > 0.1 for m in settings.bake_misses)
    last = settings.last_solve
    assert not last.converged and last.max_pin_error > 0.1
    assert "'hand.L'" in last.message and "21 frame(s): 1-21" in last.message, last.message
    # the feet still hold on every frame
    scene = bpy.context.scene
    for f in range(1, 22):
        scene.frame_set(f)
        errors = pin_errors(obj)
        assert max(errors[b] for b in FEET) <= 1e-4, (f, errors)
    assert bpy.ops.welman_ik.jump_to_frame(frame=10) == {"FINISHED"}
    assert scene.frame_current == 10
    hand.enabled = False
    obj.animation_data.action = bpy.data.actions[obj.animation_data.action.name.removesuffix(".welman_bake")]
    assert bpy.ops.welman_ik.bake(frame_start=1, frame_end=21) == {"FINISHED"}
    assert len(settings.bake_misses) == 0 and settings.last_solve.converged


def _solved(obj) -> tuple:
    """A bake of frames 1-21 solved but not written (the pose put back): the baker, and the
    channels of each frame it would write."""
    from welman_ik.blender.bake.baker import Baker

    baker = Baker(bpy.context, obj, 1, 21)
    while not baker.done:
        baker.next()
    channels = baker.results
    baker.abort()
    return baker, channels


def _animated(obj, frame: int, name: str, path: str, width: int) -> list[float]:
    curves = {(fc.data_path, fc.array_index): fc for fc in keyframes.action_fcurves(obj)}
    return [curves[f'pose.bones["{name}"].{path}', i].evaluate(frame) for i in range(width)]


def test_the_bake_steps_hold_no_reference_back_to_the_baker(fig_6_5):
    """The pipeline's data flows one way: no step holds the Baker that runs it, so a bake
    dropped half way (a cancelled modal bake) is freed at once, with the garbage collector
    off, and the pose is as it was."""
    import gc
    import weakref

    from welman_ik.blender.bake.baker import Baker

    before = {pb.name: tuple(pb.rotation_quaternion) for pb in fig_6_5.pose.bones}
    gc.collect()
    gc.disable()
    try:
        baker = Baker(bpy.context, fig_6_5, 1, 21)
        for _ in range(5):
            baker.next()
        baker.abort()
        gone = weakref.ref(baker)
        del baker
        assert gone() is None, gc.get_referrers(gone())
    finally:
        gc.enable()
    assert {pb.name: tuple(pb.rotation_quaternion) for pb in fig_6_5.pose.bones} == before


def test_each_frame_starts_where_the_last_frames_lead(fig_6_5, monkeypatch):
    """A frame's solve starts from the corrections of the frames before it carried on (a
    held foot needs a correction that changes smoothly): fewer iterations than from the
    last frame's correction alone, and the same result, as the pose the solve keeps to is
    the same. (Frame by frame: the frames solved together each start from their own.)"""
    from welman_ik.blender.bake import batch, carry

    monkeypatch.setattr(batch, "serves", lambda plan: False)
    warm, warm_channels = _solved(fig_6_5)
    monkeypatch.setattr(carry, "EXTRAPOLATED", set())
    cold, cold_channels = _solved(fig_6_5)
    iterations = {name: sum(b.goal_log[f][4] for f in b.frames) for name, b in (("warm", warm), ("cold", cold))}
    assert iterations["warm"] < iterations["cold"], iterations
    for frame, bones in warm_channels.items():
        for name, (path, rotation, _location) in bones.items():
            np.testing.assert_allclose(rotation, cold_channels[frame][name][1], atol=1e-3, err_msg=f"{name} @ {frame}")


def test_the_frames_solved_together_hold_and_move_as_smoothly_as_frame_by_frame(fig_6_5, monkeypatch):
    """The bake's first pass solves the frames together (``bake.batch``): on the walk with both
    feet held it settles most frames, every goal held, and the baked motion is as smooth as the
    frame-by-frame solve's (its largest change of a channel from one frame to the next no
    larger). The free turns differ (each foot about the line through its two pins): the pass
    keeps them near the animation, the frame-by-frame solve near the last frame's correction."""
    from welman_ik.blender.bake import batch

    settled = []
    take = batch.FrameBatch.take

    def spy(self, frame):
        taken = take(self, frame)
        settled.append(taken is not None and taken[2] is not None)
        return taken

    monkeypatch.setattr(batch.FrameBatch, "take", spy)
    together, together_channels = _solved(fig_6_5)
    assert sum(settled) >= 0.8 * len(settled), settled
    monkeypatch.setattr(batch, "serves", lambda plan: False)
    alone, alone_channels = _solved(fig_6_5)
    for baker in (together, alone):
        assert all(solved.result.converged for solved in baker.solved.values())

    def largest_step(channels) -> float:
        frames = sorted(channels)
        return max(float(np.abs(np.subtract(channels[b][name][1], channels[a][name][1])).max())
                   for a, b in itertools.pairwise(frames) for name in channels[a])

    assert largest_step(together_channels) <= largest_step(alone_channels) + 1e-4


def test_a_frame_the_animation_already_holds_is_left_as_animated(fig_6_5):
    """On frame 1 the feet stand where they are pinned: it is not solved, and its channels
    are the animation's."""
    baker, _ = _solved(fig_6_5)
    assert baker.goal_log[1][4] == 0
    for name, (path, rotation, _location) in baker.results[1].items():
        np.testing.assert_allclose(rotation, _animated(fig_6_5, 1, name, path, len(rotation)), atol=1e-7)


def test_the_root_keeps_its_animated_path_exactly(fig_6_5):
    """Root motion 'FOLLOW' with every pin in reach of the legs: the root stays on its path,
    its baked channels are the animation's on every frame, and the pins hold (0.1 mm on the
    evaluated pose of every frame)."""
    assert fig_6_5.welman_ik.root_motion == "FOLLOW"
    assert bpy.ops.welman_ik.bake(frame_start=1, frame_end=21) == {"FINISHED"}
    for f in range(1, 22):
        bpy.context.scene.frame_set(f)
        errors = pin_errors(fig_6_5)
        assert set(errors) == set(FEET) and max(errors.values()) <= 1e-4, (f, errors)
    baked = {(fc.data_path, fc.array_index): fc for fc in keyframes.action_fcurves(fig_6_5)}
    original = fig_6_5.animation_data.action.name.removesuffix(".welman_bake")
    keyframes.assign_action(fig_6_5, bpy.data.actions[original])
    for f in range(1, 22):
        for path, width in (("rotation_quaternion", 4), ("location", 3)):
            animated = _animated(fig_6_5, f, "spine", path, width)
            kept = [baked[f'pose.bones["spine"].{path}', i].evaluate(f) for i in range(width)]
            np.testing.assert_allclose(kept, animated, atol=1e-7, err_msg=f"{path} @ {f}")
    assert fig_6_5.welman_ik.last_solve.converged


@pytest.mark.parametrize("mode", ["QUATERNION", "XYZ", "ZXY", "AXIS_ANGLE"])
def test_every_frame_becomes_the_channels_the_model_gives(fig_6_5, mode):
    """The solutions turned into channels all at once are what the model gives frame by
    frame, in each rotation mode: a quaternion on its animated hemisphere, the angles of an
    Euler bone of the hinges' order, any other mode converted continuous with its value."""
    for pb in fig_6_5.pose.bones:
        if pb.name.startswith(("thigh", "shin", "foot", "toe")):
            pb.rotation_mode = mode
    baker, channels = _solved(fig_6_5)
    results = baker.results
    assert results.keys() == channels.keys()
    for frame, bones in channels.items():
        assert results[frame].keys() == bones.keys()
        for name, (path, rotation, location) in bones.items():
            got = results[frame][name]
            assert got[0] == path
            np.testing.assert_allclose(got[1], rotation, atol=1e-6, err_msg=f"{name} @ {frame}")
            assert (got[2] is None) == (location is None)
            if location is not None:
                np.testing.assert_allclose(got[2], location, atol=1e-9)
