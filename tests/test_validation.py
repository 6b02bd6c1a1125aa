import numpy as np
import pytest

from scalebook.validation import positive, positive_int


def test_positive_returns_floats_and_float_arrays():
    assert positive(3, "B") == 3.0 and isinstance(positive(3, "B"), float)
    out = positive([1, 2, 4], "B")
    assert isinstance(out, np.ndarray) and out.dtype == float and list(out) == [1.0, 2.0, 4.0]


@pytest.mark.parametrize("bad, message", [
    (0, "B must be positive and finite"), (-1.5, "B must be positive and finite"),
    (float("nan"), "B must be positive and finite"), (float("inf"), "B must be positive and finite"),
    ([1, 0], "B must be positive and finite"), ([], "B must be positive and finite"),
    (True, "B must be a number"), ("12", "B must be a number"), ("many", "B must be a number"),
    (None, "B must be a number"),
])
def test_positive_rejects(bad, message):
    with pytest.raises(ValueError, match=message):
        positive(bad, "B")


def test_positive_allow_zero():
    assert positive(0, "nbytes", allow_zero=True) == 0.0
    with pytest.raises(ValueError, match="nbytes must be non-negative and finite"):
        positive(-1, "nbytes", allow_zero=True)


@pytest.mark.parametrize("good, expected", [(1, 1), (8, 8), (np.int64(4), 4), (4.0, 4)])
def test_positive_int_accepts(good, expected):
    assert positive_int(good, "stages") == expected
    assert type(positive_int(good, "stages")) is int


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "4", None, float("nan")])
def test_positive_int_rejects(bad):
    with pytest.raises(ValueError, match="stages must be a positive integer"):
        positive_int(bad, "stages")
