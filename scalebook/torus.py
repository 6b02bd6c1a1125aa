"""TPU slices as Google ships them: which shapes exist, which axes wrap, and where mesh axes land.

Three facts decide what a collective on a TPU slice costs, and each is a rule of the
generation, read from :attr:`scalebook.hardware.Chip.wraparound_rule` and
:attr:`~scalebook.hardware.Chip.slice_shapes`:

- **Shapes that exist.** A v5p job gets 2x2x1, 2x2x2, 2x4x4 or a shape of whole 4x4x4 cubes up to
  16x16x24; there is no v5p "16x4" (64 chips are a 4x4x4 cube). :func:`check_slice_shape`
  refuses the rest and lists what the generation ships.
- **Wraparound** (:func:`axis_wraps`). On v4p, v5p and TPU7x a slice of whole cubes is a full 3D
  torus and anything smaller has no wraparound at all; on v3, v5e and v6e an axis is a ring only
  when it is as long as the pod's (16 or 32 chips).
- **Mesh axes on physical axes** (:func:`place_mesh`). A JAX mesh axis may cover one physical
  axis, several (its collective then uses the links of all of them), or part of one: a
  contiguous segment of a longer ring is a *line* (TP = 4 inside a 16-chip ring has no
  wraparound of its own), and the axis that takes every ``s``-th chip of a physical axis
  shares each link with ``s − 1`` other groups. The assignment follows JAX's
  ``jax.experimental.mesh_utils.create_device_mesh``: the last (innermost) mesh axis is placed
  first, on as many whole physical axes as multiply to its size, and a physical axis is split
  only when no whole ones fit.

Sources: Google Cloud TPU v4, v5e, v5p, v6e and TPU7x pages (slice shapes; "All 4x4x4 and larger
slices (one cube) have full 3D torus connectivity"); the JAX source of ``mesh_utils``.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Sequence

from scalebook.hardware import WRAP_WHOLE_CUBES, Chip, get_chip
from scalebook.validation import positive_int

__all__ = ["axis_wraps", "has_wraparound", "shipped_shapes", "check_slice_shape",
           "shipped_description", "slices_of", "slice_for", "AxisPlacement", "place_mesh",
           "link_share"]

CUBE_EDGE = 4
"""Chips along each edge of the 4x4x4 cube a v4p / v5p / TPU7x pod is built from."""


def _torus_chip(chip: Chip | str) -> Chip:
    chip = get_chip(chip)
    if not chip.has_ici_torus:
        raise ValueError(f"{chip.name} has no ICI torus; slices and wraparound are TPU notions")
    return chip


def _shape(chip: Chip, shape: Sequence[int]) -> tuple[int, ...]:
    sizes = tuple(positive_int(n, "each slice axis") for n in shape)
    if len(sizes) > len(chip.max_slice):
        raise ValueError(f"{chip.name} slices have {len(chip.max_slice)} axes; "
                         f"{'x'.join(map(str, sizes))} has {len(sizes)}")
    return sizes + (1,) * (len(chip.max_slice) - len(sizes))


def _whole_cubes(shape: Sequence[int]) -> bool:
    return all(n % CUBE_EDGE == 0 for n in shape)


def axis_wraps(chip: Chip | str, slice_shape: Sequence[int]) -> tuple[bool, ...]:
    """Per axis of a slice of ``slice_shape``, whether it is a ring (has wraparound links).

    ``"whole-cubes"`` generations (v4p, v5p, TPU7x): every axis wraps when the slice is made of
    whole 4x4x4 cubes (each axis a multiple of 4), none otherwise: v5p 2x4x4 -> (False, False,
    False), 4x4x8 -> (True, True, True). ``"full-axis"`` generations (v3, v5e, v6e): an axis
    wraps when it is as long as the largest slice's longest axis: v5e 16x8 -> (True, False).
    A shape with fewer axes than the torus is padded with 1s (a v5p group of (4, 4) is the
    slice 4x4x1). Raises ``ValueError`` for a GPU or an axis longer than the chip's pod.
    """
    chip = _torus_chip(chip)
    shape = _shape(chip, slice_shape)
    longest = max(chip.max_slice)
    if max(shape) > longest:
        raise ValueError(f"an axis of {max(shape)} chips is longer than {chip.name}'s largest "
                         f"slice axis ({longest})")
    if chip.wraparound_rule == WRAP_WHOLE_CUBES:
        wraps = _whole_cubes(shape)
        return tuple(wraps and n > 1 for n in shape)
    return tuple(n == longest for n in shape)


def has_wraparound(chip: Chip | str, axis_size: int,
                   slice_shape: Sequence[int] | None = None) -> bool:
    """Whether an axis of ``axis_size`` chips is a ring, on a slice of ``slice_shape``.

    Without ``slice_shape`` the axis is the whole slice (the other axes have one chip): a
    16-chip v5p line has no wraparound (16x1x1 is not whole cubes), a 16-chip v5e axis does.
    With it, the axis must be one of the slice's axes: ``has_wraparound("v5p", 4, (4, 4, 8))``
    is True, ``has_wraparound("v5p", 4, (2, 4, 4))`` False. See :func:`axis_wraps`.
    """
    size = positive_int(axis_size, "axis_size")
    chip = _torus_chip(chip)
    shape = _shape(chip, slice_shape if slice_shape is not None else (size,))
    if size not in shape:
        raise ValueError(f"the slice {'x'.join(map(str, shape))} has no axis of {size} chips")
    return axis_wraps(chip, shape)[shape.index(size)]


def shipped_shapes(chip: Chip | str) -> tuple[tuple[int, ...], ...]:
    """The slice shapes the generation's documentation lists (``chip.slice_shapes``)."""
    return _torus_chip(chip).slice_shapes


def check_slice_shape(chip: Chip | str, shape: Sequence[int]) -> tuple[int, ...]:
    """``shape`` if the generation ships a slice of that shape (axes in any order), else
    ``ValueError`` listing the shapes it does ship.

    Shipped: a shape in ``chip.slice_shapes``, or on a whole-cube generation any shape of whole
    4x4x4 cubes that fits in the pod (``chip.max_slice``, axes in any order). A chip with no listed
    shapes is not checked. ``check_slice_shape("v5p", (16, 4))`` raises (a v5p slice has three
    axes; 64 chips are the cube 4x4x4).
    """
    chip = _torus_chip(chip)
    sizes = tuple(positive_int(n, "each slice axis") for n in shape)
    listed = chip.slice_shapes
    if not listed:
        return sizes
    shipped = {tuple(sorted(s)) for s in listed}
    ok = len(sizes) == len(chip.max_slice) and (
        tuple(sorted(sizes)) in shipped
        or (chip.wraparound_rule == WRAP_WHOLE_CUBES and _whole_cubes(sizes)
            and all(n <= m for n, m in zip(sorted(sizes), sorted(chip.max_slice)))))
    if not ok:
        raise ValueError(f"{chip.name} is not shipped as a {'x'.join(map(str, sizes))} slice; "
                         f"its slices are {shipped_description(chip)}")
    return sizes


def shipped_description(chip: Chip | str) -> str:
    """The shapes a generation ships, in words: "2x2x1, 2x2x2, …, and other shapes of whole
    4x4x4 cubes inside the 16x20x28 pod" (v5p)."""
    chip = _torus_chip(chip)
    names = ", ".join("x".join(map(str, s)) for s in chip.slice_shapes) or "not listed"
    pod = "x".join(map(str, chip.max_slice))
    return names + (f" and other shapes of whole 4x4x4 cubes inside the {pod} pod"
                    if chip.wraparound_rule == WRAP_WHOLE_CUBES else "")


def _factorisations(n: int, dims: int) -> list[tuple[int, ...]]:
    """Every way to write ``n`` as a product of ``dims`` factors, smallest first."""
    if dims == 1:
        return [(n,)]
    return [(a, *rest) for a in range(1, n + 1) if n % a == 0
            for rest in _factorisations(n // a, dims - 1) if rest[0] >= a]


def slices_of(chip: Chip | str, n_chips: int) -> tuple[tuple[int, ...], ...]:
    """Every shipped slice shape of ``n_chips`` chips (:func:`check_slice_shape`), each axis
    order once: v5p 64 -> ((4, 4, 4),); v5e 32 -> ((4, 8), (8, 4))."""
    chip = _torus_chip(chip)
    n = positive_int(n_chips, "n_chips")
    shapes: set[tuple[int, ...]] = set()
    for shape in _factorisations(n, len(chip.max_slice)):
        try:
            check_slice_shape(chip, shape)
        except ValueError:
            continue
        shapes.update(itertools.permutations(shape))
    return tuple(sorted(shapes))


def link_share(placement: AxisPlacement) -> float:
    """Links a mesh axis's collective gets per chip, in units of one link one way: 2 per
    physical ring, 1 per line, divided by the stride (links shared with other groups). The
    AllGather over the axis takes ``V·(N−1)/N / (share · W)``."""
    return sum((2.0 if ring else 1.0) / stride
               for span, ring, stride in zip(placement.spans, placement.rings, placement.strides)
               if span > 1)


def slice_for(chip: Chip | str, n_chips: int) -> tuple[int, ...]:
    """The slice ``n_chips`` chips of ``chip`` come as: the most nearly cubic shipped shape of
    that many chips (:func:`check_slice_shape`), largest axis first, padded with 1s.

    Where the generation ships no slice of that size (16 v5p chips), the most nearly cubic block
    of powers of two, made by doubling the shortest axis (4x2x2): part of a larger slice, priced
    without wraparound since its axes are not whole cubes. v5e: 8 -> (4, 2), 16 -> (4, 4),
    256 -> (16, 16); v5p: 8 -> (2, 2, 2), 32 -> (4, 4, 2), 64 -> (4, 4, 4) (the cube, a full
    torus), 128 -> (8, 4, 4). Raises ``ValueError`` beyond the pod or for a count that is not a
    power of two and not a shipped size.
    """
    chip = _torus_chip(chip)
    n = positive_int(n_chips, "n_chips")
    dims = len(chip.max_slice)
    if n > math.prod(chip.max_slice):
        raise ValueError(f"{n} chips are more than a {chip.name} pod "
                         f"({'x'.join(map(str, chip.max_slice))})")
    candidates = []
    for shape in _factorisations(n, dims):
        try:
            check_slice_shape(chip, shape)
        except ValueError:
            continue
        candidates.append(shape)
    if candidates:
        best = min(candidates, key=lambda shape: (max(shape), -min(shape)))
        return tuple(sorted(best, reverse=True))
    if n & (n - 1):
        raise ValueError(f"{chip.name} ships no slice of {n} chips, and {n} is not a power of "
                         "two to build a block from")
    axes = [1] * dims
    while math.prod(axes) < n:
        axes[axes.index(min(axes))] *= 2
    return tuple(sorted(axes, reverse=True))


@dataclass(frozen=True)
class AxisPlacement:
    """Where one mesh axis of ``size`` devices lies on a slice.

    Attributes:
        size: devices along the mesh axis.
        physical: the physical axes (indices into the slice shape) it runs along.
        spans: devices it takes along each of those physical axes (their product is ``size``).
        rings: per physical axis, whether the mesh axis closes into a ring there: when it runs
            from end to end of a physical axis that wraps (all of it, or every ``s``-th chip of
            it). A contiguous segment of a longer axis is a line.
        strides: per physical axis, links between neighbours of the mesh axis: 1 when its
            devices sit side by side; ``s`` when it takes every ``s``-th chip, so each link is
            shared by ``s`` groups that run at once and carries ``1/s`` of its bandwidth for
            each.
    """

    size: int
    physical: tuple[int, ...]
    spans: tuple[int, ...]
    rings: tuple[bool, ...]
    strides: tuple[int, ...]


def place_mesh(chip: Chip | str, slice_shape: Sequence[int],
               mesh_shape: Sequence[int]) -> tuple[AxisPlacement, ...]:
    """Place the axes of a device mesh of ``mesh_shape`` on a slice of ``slice_shape``.

    The rule of JAX's ``create_device_mesh`` (``allow_split_physical_axes=True``): mesh axes are
    placed last first; each takes the largest set of whole, still-free physical axes (three,
    then two, then one) whose sizes multiply to its size; failing that, the largest set of
    whole axes times a contiguous segment of ``r`` chips of one more free axis (128 on 16x16:
    one whole 16-ring and an 8-chip segment of the other), leaving the rest of that axis (every
    ``r``-th chip, stride ``r``) to later mesh axes. A whole physical axis
    keeps its wraparound (:func:`axis_wraps`); a segment is a line.

    v5p 4x4x4 as mesh (4, 16): the 16-axis, placed first, takes physical axes 0 and 1 (two
    rings of 4), the 4-axis physical axis 2 (a ring). v5e 16x16 as mesh (64, 4): the 4-axis is a 4-chip segment
    of the first 16-chip ring (a line), the 64-axis every 4th chip of it (stride 4, a ring of
    4 whose links it shares with the 3 other groups) and the whole second axis. Raises
    ``ValueError`` when the mesh has a different number of devices, or when a mesh axis fits no
    such set (8 on a 4x4x4 cube would need two segments).
    """
    chip = _torus_chip(chip)
    shape = _shape(chip, slice_shape)
    mesh = tuple(positive_int(n, "each mesh axis") for n in mesh_shape)
    if math.prod(mesh) != math.prod(shape):
        raise ValueError(f"a mesh of {'x'.join(map(str, mesh))} = {math.prod(mesh)} devices "
                         f"does not fill the slice {'x'.join(map(str, shape))} "
                         f"({math.prod(shape)} chips)")
    wraps = axis_wraps(chip, shape)
    # What is left of each physical axis: (chips, links between neighbouring chips).
    left = [(n, 1) for n in shape]
    placed: list[AxisPlacement] = []
    for size in reversed(mesh):
        if size == 1:
            placed.append(AxisPlacement(1, (), (), (), ()))
            continue
        free = [i for i, (n, _) in enumerate(left) if n > 1]
        choice = next((combo for k in range(len(free), 0, -1)
                       for combo in itertools.combinations(free, k)
                       if math.prod(left[i][0] for i in combo) == size), None)
        if choice is not None:
            # all that is left of these axes: it spans each axis end to end, so it is a ring
            # where the physical axis wraps
            placed.append(AxisPlacement(size, tuple(choice), tuple(left[i][0] for i in choice),
                                        tuple(wraps[i] for i in choice),
                                        tuple(left[i][1] for i in choice)))
            for i in choice:
                left[i] = (1, left[i][1] * left[i][0])
            continue
        # whole axes times one contiguous segment of another (the segment is a line); the
        # rest of that axis, every r-th chip, is left for the mesh axes placed after
        mixed = next(((combo, j) for k in range(len(free) - 1, -1, -1)
                      for combo in itertools.combinations(free, k)
                      if size % math.prod(left[i][0] for i in combo) == 0
                      for j in free if j not in combo
                      and left[j][0] > size // math.prod(left[i][0] for i in combo)
                      and left[j][0] % (size // math.prod(left[i][0] for i in combo)) == 0),
                     None)
        if mixed is None:
            raise ValueError(f"a mesh axis of {size} devices cannot be placed on what is left "
                             f"of the slice {'x'.join(map(str, shape))}")
        combo, j = mixed
        r = size // math.prod(left[i][0] for i in combo)
        placed.append(AxisPlacement(size, (*combo, j), (*(left[i][0] for i in combo), r),
                                    (*(wraps[i] for i in combo), False),
                                    (*(left[i][1] for i in combo), left[j][1])))
        for i in combo:
            left[i] = (1, left[i][1] * left[i][0])
        left[j] = (left[j][0] // r, left[j][1] * r)
    return tuple(reversed(placed))
