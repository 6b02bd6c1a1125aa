"""The `scalebook` package docstring names every module and subpackage, and nothing else."""

import pkgutil
import re

import scalebook


def _listed() -> list[str]:
    return re.findall(r"^- :mod:`scalebook\.([A-Za-z_][A-Za-z0-9_]*)` — \S", scalebook.__doc__ or "",
                      flags=re.MULTILINE)


def test_the_package_docstring_names_every_module_once():
    on_disk = {info.name for info in pkgutil.iter_modules(scalebook.__path__)}
    listed = _listed()
    assert len(on_disk) > 20  # the scan found the package's modules
    assert sorted(set(on_disk) - set(listed)) == [], "modules the docstring leaves out"
    assert sorted(set(listed) - set(on_disk)) == [], "names in the docstring with no module"
    assert len(listed) == len(set(listed)), "a module listed twice"


def test_a_missing_line_is_noticed(monkeypatch):
    """The check above can fail: drop one line and the module is reported missing."""
    doc = scalebook.__doc__ or ""
    monkeypatch.setattr(scalebook, "__doc__", doc.replace("- :mod:`scalebook.hlo` —", "- hlo —"))
    assert "hlo" not in _listed()
    assert "hlo" in {info.name for info in pkgutil.iter_modules(scalebook.__path__)}
