import pytest

from scalebook.units import (format_bandwidth, format_bytes, format_count, format_flops,
                             format_scientific, format_seconds)


@pytest.mark.parametrize("seconds, text", [(3.2e-5, "32 µs"), (0.0123, "12.3 ms"), (1.5, "1.5 s"),
                                           (90, "1.5 min"), (7200, "2 h"), (2e-9, "2 ns"),
                                           (0, "0 ns"), (5e-11, "0.05 ns")])
def test_format_seconds(seconds, text):
    assert format_seconds(seconds) == text


def test_format_bytes_binary_and_decimal():
    assert format_bytes(32 * 1024) == "32 KiB"
    assert format_bytes(2 * 2**20) == "2 MiB"
    assert format_bytes(80e9, binary=False) == "80 GB"
    assert format_bytes(512) == "512 B"


def test_format_rates_and_counts():
    assert format_flops(9.89e14) == "989 TFLOP/s"
    assert format_flops(1.979e15) == "1.98 PFLOP/s"
    assert format_bandwidth(3.35e12) == "3.35 TB/s"
    assert format_count(8.03e9) == "8.03 G"


@pytest.mark.parametrize("fn", [format_seconds, format_bytes, format_flops, format_bandwidth])
def test_negative_or_nan_raises(fn):
    with pytest.raises(ValueError, match="non-negative"):
        fn(-1)
    with pytest.raises(ValueError):
        fn(float("nan"))


@pytest.mark.parametrize("value, digits, text", [
    (2.55e10, 3, "2.55\u202f×\u202f10¹⁰"),   # Part 7's table printed "2.55 × 10^10"
    (3.8e25, 2, "3.8\u202f×\u202f10²⁵"),
    (1.5e-7, 3, "1.50\u202f×\u202f10⁻⁷"),    # trailing zeros state the precision
    (-4.2e3, 2, "-4.2\u202f×\u202f10³"),
    (0.0, 3, "0"),
    (float("inf"), 3, "∞"),
])
def test_format_scientific_typesets_a_power_of_ten(value, digits, text):
    assert format_scientific(value, digits) == text
    assert "^" not in text and "e+" not in text


def test_format_scientific_refuses_nan_and_no_digits():
    with pytest.raises(ValueError):
        format_scientific(float("nan"))
    with pytest.raises(ValueError):
        format_scientific(1.0, 0)
