"""Grading JAX answers: PartitionSpecs captured as plain data (autograder/sandbox/inside/plain.py ``to_plain``),
checked by ``scalebook.checks.check_partition_spec``, and JAX itself running in the sandbox."""

from __future__ import annotations

import json
import os
import sys

import pytest
from jax.sharding import PartitionSpec as P

from autograder.sandbox import inside as runner
from autograder.sandbox.inside import NotPlain, to_plain
from scalebook.checks import check_partition_spec

AXES = ("X", "Y")


# --- to_plain ----------------------------------------------------------------------------------

@pytest.mark.parametrize("spec, plain", [
    (P("X", None), ["X", None]),
    (P(("X", "Y"),), [["X", "Y"]]),
    (P(), []),
    (P(None, "Y", ("X",)), [None, "Y", "X"]),      # JAX itself turns ("X",) into "X"
])
def test_partition_spec_becomes_a_plain_list(spec, plain):
    assert to_plain(spec) == plain
    assert json.loads(json.dumps(to_plain(spec))) == plain
    assert to_plain([spec, 2]) == [plain, 2]


def test_unplain_partition_specs_are_refused():
    with pytest.raises(NotPlain, match="entry"):
        to_plain(P(P.UNCONSTRAINED, "X"))
    with pytest.raises(NotPlain, match="unreduced"):
        to_plain(P("X", unreduced={"Y"}))


def _look_alike(name="PartitionSpec", module="jax.sharding", items=()):
    cls = type(name, (), {"__iter__": lambda self: iter(items)})
    cls.__module__ = module
    return cls()


class Sneaky(str):
    """A str subclass that would smuggle itself out if kept."""


def test_look_alikes_cannot_inject_non_plain_data():
    # only exact None / str / tuple / list entries pass, rebuilt here as new plain objects
    assert to_plain(_look_alike(items=["X", None])) == ["X", None]
    out = to_plain(_look_alike(items=[("X", "Y")]))
    assert out == [["X", "Y"]] and type(out[0]) is list
    for bad in ([Sneaky("X")], [object()], [("X", 3)], [("X", Sneaky("Y"))], [{"X": 1}],
                [b"X"], ["X" * 101]):
        with pytest.raises(NotPlain):
            to_plain(_look_alike(items=bad))
    endless = _look_alike(items=iter(lambda: "X", None))  # an iterator that never stops
    with pytest.raises(NotPlain, match="more than"):
        to_plain(endless)
    # a class merely named PartitionSpec outside jax is not a PartitionSpec
    with pytest.raises(NotPlain):
        to_plain(_look_alike(module="student", items=["X"]))


def test_look_alike_that_raises_is_reported_by_the_capture_step():
    class Boom:
        def __iter__(self):
            raise RuntimeError("no")

    Boom.__name__ = "PartitionSpec"
    Boom.__module__ = "jax"
    with pytest.raises(RuntimeError):
        to_plain(Boom())  # run_job turns any exception into {"error": ...}


# --- check_partition_spec ----------------------------------------------------------------------

def test_check_partition_spec_accepts_each_form():
    assert check_partition_spec(["X", None], "spec", rank=2, axis_names=AXES) == ("X", None)
    assert check_partition_spec(P("X", None), "spec", rank=2, axis_names=AXES) == ("X", None)
    assert check_partition_spec(("X",), "spec", rank=2, axis_names=AXES) == ("X", None)
    assert check_partition_spec([["X", "Y"]], "s", rank=1, axis_names=AXES) == (("X", "Y"),)
    assert check_partition_spec(P(("Y",), "X"), "s", rank=2, axis_names=AXES) == ("Y", "X")
    assert check_partition_spec([], "s", rank=3, axis_names=AXES) == (None, None, None)
    assert check_partition_spec(P(), "s", rank=0, axis_names=AXES) == ()
    # usable to rebuild the spec
    t = check_partition_spec([None, ["Y", "X"]], "s", rank=2, axis_names=AXES)
    assert P(*t) == P(None, ("Y", "X"))


@pytest.mark.parametrize("value, message", [
    (None, "spec is None"),
    ("X", "should be a jax.sharding.PartitionSpec, got a str"),
    (3, "got a int"),
    (["X", None, None], "3 entries but the array has only 2 dims"),
    (["Z"], "'Z', which is not a mesh axis; the mesh axes are X, Y"),
    (["X", "X"], "uses mesh axis 'X' twice"),
    ([("X", "Y"), "Y"], "uses mesh axis 'Y' twice"),
    ([3], "entry 0 should be None, a mesh axis name"),
    ([[]], "that is empty"),
    ([None, ["X", 1]], "entry 1 should name mesh axes with strings, got a int"),
    (P("X", unreduced={"Y"}), "drop its unreduced/reduced axes"),
])
def test_check_partition_spec_rejects(value, message):
    with pytest.raises(AssertionError) as info:
        check_partition_spec(value, "spec", rank=2, axis_names=AXES)
    assert message in str(info.value)
    assert str(info.value).startswith("spec")


def test_check_partition_spec_bad_arguments():
    with pytest.raises(ValueError, match="rank"):
        check_partition_spec([], "spec", rank=-1, axis_names=AXES)
    with pytest.raises(ValueError, match="axis_names"):
        check_partition_spec([], "spec", rank=2, axis_names="XY")
    with pytest.raises(ValueError, match="name"):
        check_partition_spec([], "", rank=2, axis_names=AXES)


def test_check_partition_spec_never_shows_the_answer():
    # whatever the wrong answer, the message only describes the student's own value
    with pytest.raises(AssertionError) as info:
        check_partition_spec(["X", "X"], "w_spec", rank=2, axis_names=AXES)
    assert "expected" not in str(info.value).lower()


# --- the grader's environment ------------------------------------------------------------------

@pytest.mark.slow  # starts the autograder CLI with JAX
def test_autograder_cli_sets_jax_defaults(monkeypatch):
    import subprocess

    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_PLATFORMS")}
    code = ("import os, autograder.__main__, autograder.cli as c; c.main; "
            "print(os.environ['XLA_FLAGS']); print(os.environ['JAX_PLATFORMS'])")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         cwd=runner.__file__.rsplit("/autograder/", 1)[0], check=True).stdout
    assert out.split() == ["--xla_force_host_platform_device_count=8", "cpu"]
    env["XLA_FLAGS"], env["JAX_PLATFORMS"] = "--xla_dump_to=/nowhere", "cpu,tpu"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         cwd=runner.__file__.rsplit("/autograder/", 1)[0], check=True).stdout
    assert out.split() == ["--xla_dump_to=/nowhere", "cpu,tpu"]


def _records(outcome) -> list[dict]:
    return [json.loads(line) for line in outcome.lines]


@pytest.mark.sandbox
@pytest.mark.parametrize("kind", ["fresh", "template"])
def test_jax_answer_is_captured_in_the_sandbox(kind):
    from autograder.sandbox import Limits, make_sandbox

    job = {"steps": [
        {"kind": "code", "index": 0,
         "source": "import jax\nn_devices = len(jax.devices())\n"
                   "mesh = jax.make_mesh((2, 4), ('X', 'Y'))\n"
                   "spec = jax.sharding.PartitionSpec('X', None)\n"
                   "x = jax.device_put(jax.numpy.ones((4, 8)), "
                   "jax.sharding.NamedSharding(mesh, spec))\n"
                   "total = float(x.sum())\n"},
        {"kind": "capture", "grade_id": "q1", "names": ["spec", "n_devices", "total"]},
    ], "limits": {"cell_output": 20000, "total_output": 200000}}
    sandbox = make_sandbox(kind)
    try:
        outcome = sandbox.run(job, Limits(timeout=120))
    finally:
        sandbox.close()
    assert outcome.error is None, (outcome.error, outcome.raw_output[-2000:])
    records = _records(outcome)
    cells = [r for r in records if r.get("t") == "cell"]
    assert cells and cells[0]["error"] is None, (cells, outcome.raw_output[-2000:])
    capture = next(r for r in records if r.get("t") == "capture")
    assert capture["values"] == {"spec": {"value": ["X", None]}, "n_devices": {"value": 8},
                                 "total": {"value": 32.0}}
