"""Which choices of a widget's drop-downs cannot combine with its other controls, and why.

A view that refuses some combination of inputs (``ValueError``, its own message) tells the
page which options of its drop-downs would be refused *now*, so the page disables them with
the message as the reason (``web/src/widgets.js``) instead of offering a choice that can only
error. The rule is the view's own: an option is disabled exactly when the state function
raises for it with every other control unchanged (and the controls a choice fills, a preset's
model fields, filled), so the reason a reader sees is the message they would have got.

A view that raises for the current values returns an error and no ``disabled`` at all: every
option is enabled again, so an error never locks the other controls.
"""

from __future__ import annotations

from typing import Callable, Iterable, Mapping

__all__ = ["refused_options"]


def refused_options(state: Callable[..., object], values: Mapping[str, object],
                    choices: Mapping[str, Iterable[object]],
                    linked: Callable[[Mapping[str, object], str], Mapping[str, object]]
                    | None = None) -> dict[str, list[list]]:
    """``{control: [[option, reason], ...]}`` for each control in ``choices``: the options
    other than the current one for which ``state(**values)`` with that one option changed
    (and ``linked(values, control)`` applied, the controls that choice fills) raises
    ``ValueError``; ``reason`` is its first line. ``values`` must be accepted as they are."""
    out: dict[str, list[list]] = {}
    for name, options in choices.items():
        refused = []
        for option in options:
            if option == values.get(name):
                continue
            trial = {**values, name: option}
            if linked is not None:
                trial.update(linked(trial, name))
            try:
                state(**trial)
            except ValueError as exc:
                refused.append([option, (str(exc).splitlines() or [""])[0]])
        out[name] = refused
    return out
