"""The homework checks: form checks accept exactly the plain numbers an answer may be, value
checks pass within the tolerance, fail outside it, add a hint for a known wrong value, and never
print the expected value."""

import doctest
import math
import re

import numpy as np
import pytest

import scalebook.checks as checks_module
from scalebook.checks import check_allclose, check_array, check_close, check_number


def test_doctests():
    result = doctest.testmod(checks_module)
    assert result.attempted > 0 and result.failed == 0


# --------------------------------------------------------------------------- check_number

@pytest.mark.parametrize("value", [1, 2.5, 1e-12, 8.6e14, np.float64(3.0), np.float32(2.0),
                                   np.int64(7), np.int32(3), np.array(4.0), np.array(5)])
def test_check_number_accepts_plain_and_numpy_scalars(value):
    assert check_number(value, "x") is None


@pytest.mark.parametrize("value, fragment", [
    (True, "boolean"), (False, "boolean"), (np.bool_(True), "boolean"), (np.array(True), "boolean"),
    ("240", "string"), (b"240", "string"), (None, "None"),
    (float("nan"), "NaN"), (np.nan, "NaN"), (float("inf"), "infinite"), (-np.inf, "infinite"),
    (1 + 2j, "complex"), ([1.0], "single number"), ((1.0, 2.0), "single number"),
    (np.array([1.0, 2.0]), "single number"), ({"a": 1}, "number"), (object(), "number"),
])
def test_check_number_rejects_non_numbers_naming_the_variable(value, fragment):
    with pytest.raises(AssertionError) as info:
        check_number(value, "critical_batch")
    assert "critical_batch" in str(info.value)
    assert fragment in str(info.value)


def test_check_number_positive_by_default():
    for value in (0, 0.0, -3.0):
        with pytest.raises(AssertionError, match="t_math should be greater than zero"):
            check_number(value, "t_math")
    check_number(0.0, "offset", positive=False)
    check_number(-2, "offset", positive=False)


def test_name_must_be_a_string():
    with pytest.raises(ValueError):
        check_number(1.0, "")
    with pytest.raises(ValueError):
        check_close(1.0, 1.0, name=None)


# --------------------------------------------------------------------------- check_array

def test_check_array_accepts_lists_and_arrays():
    assert check_array([1, 2, 3], "flops", shape=(3,)) is None
    check_array(np.ones((2, 3), dtype=np.float32), "grid", shape=(2, 3))
    check_array([[1.0, 2.0], [3.0, 4.0]], "grid", shape=(2, 2))
    check_array((0.0, -1.0), "signed")
    check_array(np.arange(4, dtype=np.int64), "ints", positive=False)


@pytest.mark.parametrize("values, fragment", [
    (None, "None"), ("1,2,3", "string"), (3.0, "single number"), (np.float64(3.0), "single number"),
    (np.array(3.0), "single number"), ([True, False], "booleans"), (["a", "b"], "numbers"),
    ([1.0, None], "numbers"), ([[1.0, 2.0], [3.0]], "rectangular"), ([1.0, float("nan")], "NaN"),
    (np.array([1.0, np.inf]), "infinite"), ([1 + 1j], "complex"), ({1: 2}, "array"),
])
def test_check_array_rejects_non_arrays(values, fragment):
    with pytest.raises(AssertionError) as info:
        check_array(values, "flops_small")
    assert "flops_small" in str(info.value)
    assert fragment in str(info.value)


def test_check_array_shape_and_positive():
    with pytest.raises(AssertionError, match=r"flops_small should have shape \(14,\), got shape \(13,\)"):
        check_array(np.ones(13), "flops_small", shape=(14,))
    with pytest.raises(AssertionError, match="greater than zero"):
        check_array([1.0, 0.0], "flops_small", positive=True)
    check_array([1.0, 0.0], "flops_small")


# --------------------------------------------------------------------------- check_close

def test_check_close_passes_within_tolerance_both_sides():
    assert check_close(295.2 * 1.049, 295.2, name="b") is None
    check_close(295.2 * 0.951, 295.2, name="b")
    check_close(295, 295.2, name="b")
    check_close(np.float32(295.0), 295.2, name="b")
    check_close(-1.0, -1.02, name="b")
    check_close(0.0, 0.0, name="b")


def test_check_close_fails_outside_tolerance_naming_variable_and_tolerance():
    with pytest.raises(AssertionError) as info:
        check_close(295.2 * 1.06, 295.2, name="critical_batch")
    message = str(info.value)
    assert "critical_batch" in message and "5%" in message
    assert "Hint" not in message


def test_check_close_custom_tolerance():
    check_close(1.09, 1.0, name="x", rel=0.1)
    with pytest.raises(AssertionError, match="within 1%"):
        check_close(1.02, 1.0, name="x", rel=0.01)
    with pytest.raises(AssertionError, match="within 0.5%"):
        check_close(1.02, 1.0, name="x", rel=0.005)
    for bad in (0, 1, -0.1, 2.0, float("nan"), True):
        with pytest.raises(ValueError):
            check_close(1.0, 1.0, name="x", rel=bad)


def test_check_close_checks_form_first():
    with pytest.raises(AssertionError, match="x should be a number, got the string"):
        check_close("295", 295.2, name="x")
    with pytest.raises(AssertionError, match="x is NaN"):
        check_close(float("nan"), 295.2, name="x")


def test_check_close_adds_only_matching_hints():
    hints = [(590.4, "use the dense FLOPs/s"), (147.6, "bf16 is 2 bytes")]
    with pytest.raises(AssertionError) as info:
        check_close(600.0, 295.2, name="critical_batch", hints=hints)
    message = str(info.value)
    assert "Hint: use the dense FLOPs/s" in message
    assert "bf16 is 2 bytes" not in message
    with pytest.raises(AssertionError) as info:
        check_close(150, 295.2, name="critical_batch", hints=hints)
    assert "Hint: bf16 is 2 bytes" in str(info.value)
    with pytest.raises(AssertionError) as info:
        check_close(1000, 295.2, name="critical_batch", hints=hints)
    assert "Hint" not in str(info.value)


def test_check_close_correct_answer_passes_even_with_hints():
    check_close(295.2, 295.2, name="b", hints=[(295.0, "never shown")])


def test_check_close_rejects_malformed_hints():
    with pytest.raises(ValueError):
        check_close(2.0, 1.0, name="x", hints=[2.0])
    with pytest.raises(ValueError):
        check_close(2.0, 1.0, name="x", hints=[(2.0, 3.0)])


def _numbers_in(message):
    return [float(m) for m in re.findall(r"[-+]?\d*\.?\d+(?:[eE][-+]?\d+)?", message)]


@pytest.mark.parametrize("expected", [295.2, 8755.6, 1.7e-4, 4.11e18, 3.0e7, 0.499, 16896.0])
@pytest.mark.parametrize("factor", [0.3, 0.5, 0.9, 1.07, 2.0, 64.0])
def test_messages_never_contain_the_expected_value(expected, factor):
    hints = [(expected * 2.0, "sparse"), (expected * 0.5, "bytes")]
    with pytest.raises(AssertionError) as info:
        check_close(expected * factor, expected, name="answer", hints=hints)
    message = str(info.value)
    for shown in _numbers_in(message):
        assert not math.isclose(shown, expected, rel_tol=0.05), message
    for text in (repr(expected), f"{expected:g}", f"{expected:.3g}", f"{expected:.4g}"):
        assert text not in message


# --------------------------------------------------------------------------- check_allclose

def test_checks_return_none_so_nbgrader_sees_no_partial_credit():
    # nbgrader reads a number left as a grade cell's output as partial credit.
    assert check_number(3.0, "x") is None
    assert check_array([1.0], "x") is None
    assert check_close(3.0, 3.0, name="x") is None
    assert check_allclose([1.0], [1.0], name="x") is None


def test_check_allclose_passes():
    expected = np.array([1.0, 10.0, 100.0])
    check_allclose([1.02, 9.7, 104.0], expected, name="flops")
    check_allclose(np.array([[1.0, 2.0]]), [[1.0, 2.0]], name="grid")


def test_check_allclose_fails_with_count_and_index_not_values():
    expected = np.array([1.5e14, 2.5e14, 3.5e14])
    with pytest.raises(AssertionError) as info:
        check_allclose([1.5e14, 3.0e14, 3.5e14], expected, name="flops_small")
    message = str(info.value)
    assert "flops_small" in message and "5%" in message
    assert "1 of 3" in message and "index 1" in message
    for value in expected:
        for text in (repr(value), f"{value:g}", f"{value:.3g}"):
            assert text not in message


def test_check_allclose_shape_is_form():
    with pytest.raises(AssertionError, match=r"shape \(3,\)"):
        check_allclose([1.0, 2.0], [1.0, 2.0, 3.0], name="flops")
    with pytest.raises(AssertionError, match="single number"):
        check_allclose(1.0, [1.0], name="flops")


def test_check_allclose_hint_needs_every_element_close():
    expected = np.array([1.0, 2.0, 4.0])
    approx = np.array([1.0, 2.5, 4.0])
    hints = [(approx, "exact bytes"), (np.array([1.0, 2.0]), "wrong shape never matches")]
    with pytest.raises(AssertionError) as info:
        check_allclose([1.0, 2.5, 4.1], expected, name="f", hints=hints)
    assert "Hint: exact bytes" in str(info.value)
    assert "wrong shape" not in str(info.value)
    with pytest.raises(AssertionError) as info:
        check_allclose([1.0, 2.5, 9.0], expected, name="f", hints=hints)
    assert "Hint" not in str(info.value)
