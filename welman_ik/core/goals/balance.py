"""Balance goal: the body's centre of mass should be over a point, or over its support.

The centre of mass of segments i with masses m_i at world points p_i (each a point fixed in
a joint's frame, the segment's own centre of mass; ``welman_ik.core.masses``) is

    c = sum m_i p_i / M,   dc/dq = sum m_i dp_i/dq / M,   M = sum m_i.

Only its place across the vertical d counts (a body balances whatever its height), through
P = I - d d^T, the projection onto the ground plane:

    over a point t:  e = P (t - c),  J = P dc/dq                       (3 rows)

    over a support:  the support polygon S is the convex hull of the planted points (the
                     pins) projected along d onto the plane, shrunk by ``margin``; with x
                     the projection of c and s(x) its nearest point of S,
                     inside:   e = 0, J = 0                              (3 rows, zero)
                     outside:  e = s(x) - x,  J = -de/dq = N P dc/dq
                     with N = n n^T when s(x) lies inside an edge of outward normal n (the
                     polygon's nearest point slides along with x) and N = I at a corner.

The support polygon of one point is that point, of two points (or of points on one line)
the segment between the outermost two, shrunk by ``margin`` along it; a polygon shrunk
away entirely by a large margin becomes its centroid.

CCD (Welman 1993, section 5.4) moves points, not a sum of them: each segment's point p_i is
aimed at p_i + (mu_i / s) e, with mu_i = m_i / M and s = sum mu_i^2. The pairs' squared
distances, sum |p_i + (mu_i / s) e - p_i(q)|^2 >= |c + e - c(q)|^2 / s by Cauchy-Schwarz, bound
the goal's own |e|^2 / s from above and equal it where the sweep starts, so no sweep raises
it (majorisation), and at a sweep's fixed point the goal's gradient, e . dc/dq, vanishes
(with the other goals') just as for the other solvers. The balance then weighs as
``weight`` / s against the other goals in CCD (s is about 0.08 for a human body of 20-odd
bones with de Leva's masses): only goals that conflict settle differently; goals that can
all be met end up met either way.
"""

from __future__ import annotations

import numpy as np

from ..skeleton import Kinematics
from .base import Goal

HULL_TOLERANCE = 1e-9  # of the support's size: points closer to a line than this are on it


def plane_basis(direction: np.ndarray) -> np.ndarray:
    """(3, 2): two unit vectors spanning the plane perpendicular to unit ``direction``,
    right-handed with it (b1 x b2 = direction)."""
    helper = np.eye(3)[int(np.argmin(np.abs(direction)))]
    b1 = np.cross(helper, direction)
    b1 /= np.linalg.norm(b1)
    return np.stack([b1, np.cross(direction, b1)], axis=1)


def convex_hull_2d(points, tolerance: float = HULL_TOLERANCE) -> np.ndarray:
    """Indices of the convex hull's corners of 2D ``points`` (k, 2), counter-clockwise
    (Andrew's monotone chain), without points on its edges or repeated points. One index for
    a single (or repeated) point; the two outermost for points on one line."""
    points = np.asarray(points, dtype=float).reshape(-1, 2)
    if not len(points):
        return np.zeros(0, dtype=np.intp)
    span = float(np.ptp(points, axis=0).max())
    if span <= 0.0:
        return np.array([0])
    eps = tolerance * span * span
    order = np.lexsort((points[:, 1], points[:, 0]))

    def half(indices) -> list[int]:
        chain: list[int] = []
        for i in indices:
            while len(chain) >= 2:
                o, a = points[chain[-2]], points[chain[-1]]
                b = points[i]
                if (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]) > eps:
                    break
                chain.pop()
            chain.append(int(i))
        return chain

    lower, upper = half(order), half(order[::-1])
    hull = lower[:-1] + upper[:-1]
    # Where the two chains join, a corner may be on a line after all (coordinates equal but
    # for round-off sort either way): drop such corners.
    i = 0
    while len(hull) >= 3 and i < len(hull):
        o, a, b = points[hull[i - 1]], points[hull[i]], points[hull[(i + 1) % len(hull)]]
        if (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]) <= eps:
            del hull[i]
            i = max(i - 1, 0)
        else:
            i += 1
    if len(hull) < 3:  # all on one line: the two outermost points
        return np.array([order[0], order[-1]])
    return np.array(hull)


def shrink(polygon: np.ndarray, margin: float) -> np.ndarray:
    """The convex 2D ``polygon`` (k, 2, counter-clockwise; k = 1 a point, k = 2 a segment)
    eroded by ``margin``: a polygon's edges moved inward (clipped against each other), a
    segment shortened at both ends; what would vanish becomes its centroid."""
    if margin <= 0.0 or len(polygon) == 1:
        return polygon
    if len(polygon) == 2:
        a, b = polygon
        length = float(np.linalg.norm(b - a))
        if length <= 2.0 * margin:
            return ((a + b) / 2.0)[None]
        step = (b - a) * (margin / length)
        return np.stack([a + step, b - step])
    shape = polygon
    edges = np.roll(polygon, -1, axis=0) - polygon
    normals = np.stack([edges[:, 1], -edges[:, 0]], axis=1) / np.linalg.norm(edges, axis=1)[:, None]  # outward
    for point, normal in zip(polygon, normals):  # keep n . (x - point) <= -margin (Sutherland-Hodgman)
        if len(shape) == 0:
            break
        depth = (shape - point) @ normal + margin  # <= 0: kept
        inside = depth <= 0.0
        kept = []
        for i in range(len(shape)):
            j = (i + 1) % len(shape)
            if inside[i]:
                kept.append(shape[i])
            if inside[i] != inside[j]:  # the edge crosses the line: where
                kept.append(shape[i] + (shape[j] - shape[i]) * (depth[i] / (depth[i] - depth[j])))
        shape = np.array(kept).reshape(-1, 2)
    if len(shape) < 3 or _area(shape) <= 1e-12 * _area(polygon):
        return polygon.mean(axis=0)[None]
    return shape


def _area(polygon: np.ndarray) -> float:
    x, y = polygon[:, 0], polygon[:, 1]
    return 0.5 * float(x @ np.roll(y, -1) - y @ np.roll(x, -1))


def nearest_in_polygon(polygon: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """The nearest point of the convex 2D ``polygon`` (k, 2, counter-clockwise; k = 1, 2
    allowed) to ``x`` (2,), and the outward unit normal of the edge it lies inside (None when
    ``x`` is inside, or the nearest point is a corner)."""
    k = len(polygon)
    if k >= 3:
        edges = np.roll(polygon, -1, axis=0) - polygon
        rel = x - polygon
        if np.all(edges[:, 0] * rel[:, 1] - edges[:, 1] * rel[:, 0] >= 0.0):
            return x.copy(), None
    elif k == 2:
        edges = (polygon[1] - polygon[0])[None]
    else:
        return polygon[0].copy(), None
    starts = polygon[: len(edges)]
    along = np.einsum("ij,ij->i", x - starts, edges) / np.einsum("ij,ij->i", edges, edges)
    t = np.clip(along, 0.0, 1.0)
    candidates = starts + t[:, None] * edges
    best = int(np.argmin(np.sum((candidates - x) ** 2, axis=1)))
    if 0.0 < along[best] < 1.0:
        gap = x - candidates[best]
        size = float(np.linalg.norm(gap))
        if size > 0.0:
            return candidates[best], gap / size
    return candidates[best], None


KEPT_SHAPES = 32  # support polygons kept: a run of scripted drags stands on the same feet call after call
_SHAPES: dict = {}
_PLANES: dict = {}


def _plane(direction: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the projection onto the plane perpendicular to unit ``direction`` (3, 3), its basis
    (3, 2), ``plane_basis``), read-only and kept per direction."""
    key = direction.tobytes()
    found = _PLANES.get(key)
    if found is None:
        project, basis = np.eye(3) - np.outer(direction, direction), plane_basis(direction)
        project.flags.writeable = basis.flags.writeable = False
        if len(_PLANES) >= KEPT_SHAPES:
            _PLANES.clear()
        found = _PLANES[key] = (project, basis)
    return found


def _support_shape(support: np.ndarray, direction: np.ndarray, basis: np.ndarray, margin: float) -> tuple:
    """(the hull's corners, the polygon shrunk by ``margin`` in ``basis``, its edges as plain
    floats or None, its height along ``direction``) of the world points ``support``: worked
    out once for the same points (a drag's feet), the arrays read-only."""
    key = (support.tobytes(), direction.tobytes(), margin)
    found = _SHAPES.get(key)
    if found is None:
        flat = support @ basis
        hull = convex_hull_2d(flat)
        polygon = shrink(flat[hull], margin)
        edges = np.roll(polygon, -1, axis=0) - polygon
        hull.flags.writeable = polygon.flags.writeable = False
        found = (hull, polygon, np.hstack([polygon, edges]).tolist() if len(polygon) >= 3 else None,
                 float(np.mean(support @ direction)))
        while len(_SHAPES) >= KEPT_SHAPES:
            del _SHAPES[next(iter(_SHAPES))]
        _SHAPES[key] = found
    return found


class BalanceGoal(Goal):
    """The centre of mass of segments (points ``locals`` (m, 3) [m] in the frames of ``joints``
    (m,), with ``masses`` (m,), any unit) should be over world ``target`` [m] along the
    vertical ``direction`` (up; its sign does not matter), or, with ``support`` (k, 3) the
    world points the body stands on, over the support polygon shrunk by ``margin`` [m]
    (``target`` is then unused and may be None)."""

    refused_by: dict[str, str] = {}

    def __init__(self, joints, locals, masses, target=None, direction=(0.0, 0.0, 1.0), support=None,
                 margin: float = 0.0, weight: float = 1.0, priority: int = 0):
        super().__init__(weight, priority)
        self.joints = np.asarray(joints, dtype=np.intp).reshape(-1)
        m = len(self.joints)
        self.locals = np.asarray(locals, dtype=float).reshape(m, 3)
        masses = np.asarray(masses, dtype=float).reshape(m)
        if not m or not np.all(np.isfinite(masses)) or np.any(masses < 0.0) or masses.sum() <= 0.0:
            raise ValueError("balance goal needs finite masses >= 0 with a positive sum")
        if not np.all(np.isfinite(self.locals)):
            raise ValueError("balance goal needs finite segment points")
        self.masses = masses
        self.shares = masses / masses.sum()  # mu_i
        direction = np.asarray(direction, dtype=float).reshape(3)
        size = float(np.linalg.norm(direction))
        if not np.isfinite(size) or size < 1e-12:
            raise ValueError("balance goal needs a finite, non-zero vertical direction")
        self.direction = direction / size
        self.project, self.basis = _plane(self.direction)  # (3, 3) onto the plane, (3, 2) its basis
        if not (np.isfinite(margin) and margin >= 0.0):
            raise ValueError(f"balance goal needs a finite margin >= 0, got {margin}")
        self.margin = float(margin)
        if support is None:
            if target is None:
                raise ValueError("balance goal needs a target point or support points")
            self.target = np.asarray(target, dtype=float).reshape(3)
            if not np.all(np.isfinite(self.target)):
                raise ValueError("balance goal needs a finite target")
            self.support = None
            self.polygon = self._edges = None
        else:
            self.target = None if target is None else np.asarray(target, dtype=float).reshape(3)
            self.support = np.asarray(support, dtype=float).reshape(-1, 3)
            if not len(self.support) or not np.all(np.isfinite(self.support)):
                raise ValueError("balance goal needs finite support points")
            # the hull's corners (indices into support, counter-clockwise), the polygon (k, 2)
            # in the plane's basis, its edges in plain floats (``_over``), its height
            self.hull, self.polygon, self._edges, self.height = _support_shape(self.support, self.direction,
                                                                               self.basis, self.margin)
        massive = np.flatnonzero(self.shares > 0.0)
        self._massive = massive
        self._spread = float(np.sum(self.shares**2))  # s = sum mu_i^2

    def centre_of_mass(self, kin: Kinematics) -> np.ndarray:
        """The world centre of mass c (3,) [m]."""
        return self.shares @ kin.points(self.joints, self.locals)

    def support_polygon(self, shrunk: bool = False) -> np.ndarray:
        """World corners (k, 3) of the support polygon in order (counter-clockwise seen from
        above, along -direction): the support points that are its corners, or, with
        ``shrunk``, the polygon the centre of mass is held over (``margin`` applied), in the
        plane through the support points' mean height. k = 1: a point, 2: a segment;
        (0, 3) without support."""
        if self.support is None:
            return np.zeros((0, 3))
        if not shrunk:
            return self.support[self.hull].copy()
        return self.polygon @ self.basis.T + self.height * self.direction

    def _geometry(self, kin: Kinematics):
        """Points (m, 3), c (3,), residual e (3,) and the row projection N (3, 3; None: zero rows)."""
        points = kin.points(self.joints, self.locals)
        c = self.shares @ points
        if self.support is None:
            return points, c, self.project @ (self.target - c), self.project
        x = c @ self.basis
        if self._over(x):
            return points, c, np.zeros(3), None
        nearest, normal = nearest_in_polygon(self.polygon, x)
        gap = nearest - x
        if not np.any(gap):
            return points, c, np.zeros(3), None
        if normal is None:
            return points, c, self.basis @ gap, self.project
        n3 = self.basis @ normal
        return points, c, self.basis @ gap, np.outer(n3, n3)

    def _over(self, x: np.ndarray) -> bool:
        """Whether ``x`` (2,), in the plane's basis, is inside the polygon (k >= 3): on the
        inner side of every edge, as ``nearest_in_polygon`` tests it, in floats."""
        if self._edges is None:
            return False
        px, py = float(x[0]), float(x[1])
        return all(ex * (py - sy) - ey * (px - sx) >= 0.0 for sx, sy, ex, ey in self._edges)

    def residual(self, kin: Kinematics) -> np.ndarray:
        return self._geometry(kin)[2]

    def jacobian(self, kin: Kinematics) -> np.ndarray:
        points, _, _, rows = self._geometry(kin)
        if rows is None:
            return np.zeros((3, kin.skeleton.size))
        massive = self._massive
        columns = kin.point_jacobian(self.joints[massive], points[massive])  # (m, 3, n)
        return rows @ np.einsum("m,min->in", self.shares[massive], columns)

    @property
    def one_sided(self) -> bool:
        return self.support is not None

    def boundary(self, kin: Kinematics, after: Kinematics):
        if self.support is None:
            return None
        points = kin.points(self.joints, self.locals)
        x_now = (self.shares @ points) @ self.basis
        x_after = self.centre_of_mass(after) @ self.basis
        if np.any(nearest_in_polygon(self.polygon, x_now)[0] != x_now):
            return None  # outside now: the goal's own rows hold it
        nearest, normal = nearest_in_polygon(self.polygon, x_after)
        gap = x_after - nearest
        size = float(np.linalg.norm(gap))
        if size == 0.0:
            return None  # still inside after the step
        n2 = gap / size if normal is None else normal
        n3 = self.basis @ n2
        massive = self._massive
        columns = kin.point_jacobian(self.joints[massive], points[massive])
        row = n3 @ np.einsum("m,min->in", self.shares[massive], columns)
        return row, float(n2 @ (nearest - x_now))

    def active(self, kin: Kinematics) -> bool:
        """False when the goal is met as an inequality (centre of mass over the support)."""
        return self._geometry(kin)[3] is not None

    def point_pairs(self, kin: Kinematics):
        """Each segment's point aimed at p_i + (mu_i / s) e (see the module docstring); when
        the goal holds nothing, each where it is (as many pairs either way: a CCD sweep
        gathers them again mid-sweep, where a one-sided goal may have come to ask nothing)."""
        points, _, e, rows = self._geometry(kin)
        massive = self._massive
        if rows is None or not np.any(e):
            return self.joints[massive], points[massive], points[massive].copy()
        shift = (self.shares[massive] / self._spread)[:, None] * e[None, :]
        return self.joints[massive], points[massive], points[massive] + shift
