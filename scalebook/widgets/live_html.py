"""An explorer as static HTML: the figure, the summary, and its controls as HTML inputs.

The book's HTML pages cannot run an ipywidget, so an :class:`~scalebook.widgets.Explorer`
that has a live view (a :mod:`scalebook.live` module) also offers this ``text/html``::

    <div class="sb-live" data-widget="scalebook.live.roofline" data-controls='[spec, ...]'
         data-frame='{"texts": [text, ...], "titles": [...], "widths": [...]}'>
      <form class="sb-live-controls" hidden> the controls as <select>/<input> </form>
      <div class="sb-live-message"> the last error, if any </div>
      <div class="sb-live-figure"> <img> the PNG of the current state </div>
      <div class="sb-live-summary"> the summary HTML of the current state </div>
    </div>

``data-frame`` holds the live chart's own lines of text, its panel titles and their width
shares at these settings: before the first touch the page lays them out unseen to reserve the
room the live picture takes, so going live does not move what follows the figure.

Without JavaScript a reader sees the figure and the numbers (the controls stay hidden). With
it, ``web/src/widgets.js`` shows the controls, and on the first touch loads Python and calls
the widget's ``view`` for every change. Each control spec names the control (its Jupyter
name), its ``kind`` and what the browser needs to read its value back:

- ``select``: ``options`` [[label, value], ...], ``value``; ``multiselect``: the same with a
  list ``value``; the HTML option values are indices into ``options``;
- ``checkbox``: ``value`` true/false;
- ``logslider``: ``base``, ``min``, ``max``, ``step`` (exponents), ``value`` = base^exponent,
  ``format`` (the readout, a Python/d3 format such as ",.0f"), ``readouts`` (the readout's
  text at each position, see :func:`readouts`, or null);
- ``slider``: ``min``, ``max``, ``step``, ``value``, ``format``, ``readouts``;
- ``selectslider``: ``options`` [[label, value], ...], ``value``: a slider over the options'
  indices, the chosen option's label as its readout;
- ``int``, ``float``, ``text``: free input; ``value``;
- ``button``: no value; a click redraws with ``changed`` set to the button's name (the view
  runs the button's action, a search say, and returns the controls it sets).
"""

from __future__ import annotations

import base64
import html
import json
import math
from typing import Iterable, Mapping, Sequence

import ipywidgets as widgets

from ..live import NUMBER_LIMIT
from ..live.chart import describe
from ..units import format_scientific

__all__ = ["control_spec", "controls_html", "placeholder", "chart_frame"]


def _options(control: widgets.Widget) -> list[list]:
    return [[str(label), value] for label, value in zip(control._options_labels,
                                                         control._options_values)]


def control_spec(name: str, control: widgets.Widget) -> dict:
    """The JSON description of one ipywidgets control (see the module docstring).

    Raises ``TypeError`` for a control type the static page cannot offer, so a widget never
    goes live with a control missing.
    """
    spec: dict = {"name": name, "label": control.description or name}
    if isinstance(control, widgets.SelectMultiple):
        spec.update(kind="multiselect", options=_options(control), value=list(control.value),
                    rows=control.rows or len(control.options))
    elif isinstance(control, (widgets.Dropdown, widgets.RadioButtons, widgets.ToggleButtons,
                              widgets.Select)):
        spec.update(kind="select", options=_options(control), value=control.value)
    elif isinstance(control, (widgets.Checkbox, widgets.ToggleButton)):
        spec.update(kind="checkbox", value=bool(control.value))
    elif isinstance(control, widgets.FloatLogSlider):
        spec.update(kind="logslider", base=control.base, min=control.min, max=control.max,
                    step=control.step, value=control.value, format=control.readout_format)
        spec.update(readouts=readouts(spec))
    elif isinstance(control, widgets.SelectionSlider):
        spec.update(kind="selectslider", options=_options(control), value=control.value)
    elif isinstance(control, (widgets.IntSlider, widgets.FloatSlider)):
        spec.update(kind="slider", min=control.min, max=control.max, step=control.step,
                    value=control.value, format=control.readout_format)
        spec.update(readouts=readouts(spec))
    elif isinstance(control, (widgets.IntText, widgets.BoundedIntText)):
        spec.update(kind="int", value=control.value)
    elif isinstance(control, (widgets.FloatText, widgets.BoundedFloatText)):
        spec.update(kind="float", value=control.value)
    elif isinstance(control, widgets.Text):
        spec.update(kind="text", value=control.value)
    elif isinstance(control, widgets.Button):
        spec.update(kind="button", value=None, tooltip=control.tooltip or "")
    else:
        raise TypeError(f"control {name!r} is a {type(control).__name__}, which the static "
                        "page cannot offer yet (scalebook/widgets/live_html.py)")
    return spec


#: The readouts a slider lists for the browser, at most: one per position (above it, none).
MAX_READOUTS = 1001


def _readout(value: float, fmt: str) -> str:
    """The slider readout, as ipywidgets prints it (",.0f" -> "1,024"), a power of ten as the
    book writes one (".3g": 4096 -> "4.1 × 10³", never "4.1e+03"; the mantissa's digits kept,
    through :func:`scalebook.units.format_scientific`)."""
    text = format(value, fmt)
    if "e" not in text:
        return text
    mantissa = text.split("e")[0]
    digits = len(mantissa.lstrip("-").replace(".", "").lstrip("0")) or 1
    return format_scientific(float(text), digits)


def readouts(spec: Mapping) -> list[str] | None:
    """A slider's readout at each of its positions, min, min + step, ..., max (for a log slider
    the positions are exponents): the browser shows these texts, so a readout is formatted
    once, here. None for a slider of more than :data:`MAX_READOUTS` positions or another kind
    (the browser then prints the format itself)."""
    if spec["kind"] not in ("logslider", "slider") or not spec["step"] or spec["step"] <= 0:
        return None
    count = round((spec["max"] - spec["min"]) / spec["step"]) + 1
    if not 1 <= count <= MAX_READOUTS:
        return None
    positions = [min(spec["min"] + i * spec["step"], spec["max"]) for i in range(count)]
    values = [spec["base"] ** p if spec["kind"] == "logslider" else p for p in positions]
    return [_readout(v, spec["format"]) for v in values]


def _control_html(spec: Mapping) -> str:
    """One control as an HTML input, named by its Jupyter name, at its current value."""
    name, kind, value = html.escape(spec["name"]), spec["kind"], spec["value"]
    label = f"<span class='sb-live-label'>{html.escape(spec['label'])}</span>"
    if kind in ("select", "multiselect"):
        chosen = value if kind == "multiselect" else [value]
        options = "".join(
            f"<option value='{i}'{' selected' if v in chosen else ''}>{html.escape(lab)}</option>"
            for i, (lab, v) in enumerate(spec["options"]))
        multiple = f" multiple size='{spec['rows']}'" if kind == "multiselect" else ""
        field = f"<select name='{name}'{multiple}>{options}</select>"
    elif kind == "checkbox":
        checked = " checked" if value else ""
        return (f"<label class='sb-live-control sb-live-checkbox'><input type='checkbox' "
                f"name='{name}'{checked}> {html.escape(spec['label'])}</label>")
    elif kind == "selectslider":
        index = [v for _, v in spec["options"]].index(value)
        field = (f"<input type='range' name='{name}' min='0' max='{len(spec['options']) - 1}' "
                 f"step='1' value='{index}'>"
                 f"<output>{html.escape(spec['options'][index][0])}</output>")
    elif kind in ("logslider", "slider"):
        position = (math.log(value) / math.log(spec["base"])) if kind == "logslider" else value
        field = (f"<input type='range' name='{name}' min='{spec['min']}' max='{spec['max']}' "
                 f"step='{spec['step']}' value='{round(position, 12)}'>"
                 f"<output>{html.escape(_readout(value, spec['format']))}</output>")
    elif kind == "button":
        return (f"<button type='button' class='sb-live-control' name='{name}' "
                f"title='{html.escape(spec['tooltip'])}'>{html.escape(spec['label'])}</button>")
    elif kind in ("int", "float"):
        # the bounds every typed number must keep (scalebook.live.check_controls refuses the
        # rest with a message); the browser's spinner and validity follow them
        step, mode = ("1", "numeric") if kind == "int" else ("any", "decimal")
        field = (f"<input type='number' name='{name}' step='{step}' min='0' "
                 f"max='{NUMBER_LIMIT:.0f}' inputmode='{mode}' value='{value}'>")
    else:
        field = f"<input type='text' name='{name}' value='{html.escape(str(value))}'>"
    return f"<label class='sb-live-control'>{label} {field}</label>"


def controls_html(specs: Mapping[str, Mapping], layout_rows: Iterable[Sequence[str]]) -> str:
    """The controls as a (hidden until JavaScript shows it) form, in the widget's rows."""
    rows = "".join("<div class='sb-live-row'>" + "".join(_control_html(specs[n]) for n in row)
                   + "</div>" for row in layout_rows)
    # autocomplete off: a browser must not restore old inputs under the book's picture (Back);
    # the page's URL holds the reader's settings instead (web/src/widgets.js)
    return f"<form class='sb-live-controls' autocomplete='off' hidden>{rows}</form>"


def chart_frame(chart: Mapping) -> dict:
    """What the page needs to reserve a chart's room before it is live: its own lines of
    text, its panels' titles and their width shares (``data-frame``, module docstring)."""
    return {"texts": [{"text": t["text"], "colour": t["colour"], "bold": t["bold"]}
                      for t in chart.get("texts", [])],
            "titles": [p["title"] for p in chart.get("panels", [])],
            "widths": [p["width"] for p in chart.get("panels", [])]}


def placeholder(widget: str, controls: Mapping[str, widgets.Widget],
                layout_rows: Iterable[Sequence[str]], png: bytes, summary_html: str,
                error: str = "", chart: Mapping | None = None) -> str:
    """The explorer as static HTML (module docstring): ``widget`` is its :mod:`scalebook.live`
    module, ``png`` and ``summary_html`` its current figure and numbers, ``chart`` the live
    view's chart description they were drawn from."""
    specs = {name: control_spec(name, control) for name, control in controls.items()}
    data = html.escape(json.dumps(list(specs.values()), allow_nan=False), quote=True)
    frame = html.escape(json.dumps(chart_frame(chart or {}), allow_nan=False), quote=True)
    image = base64.b64encode(png).decode("ascii")
    message = (f"<span style='color:#b00020'>⚠ {html.escape(error)}</span>" if error else "")
    # the alt text says what the picture shows, from the chart it was drawn from; a printed
    # page (make pdf) shows it as the caption of the static picture (book.css hides it on screen)
    alt = (describe(dict(chart)) if chart else
           "the figure at the book's settings of the controls above; its numbers are in the "
           "summary below")
    caption = (f"<p class='sb-live-caption'>The widget at the book's settings. "
               f"{html.escape(alt)}</p>")
    return (f"<div class='sb-live' data-widget='{html.escape(widget, quote=True)}' "
            f"data-controls=\"{data}\" data-frame=\"{frame}\">"
            f"{controls_html(specs, layout_rows)}"
            f"<div class='sb-live-message' role='status'>{message}</div>"
            f"<div class='sb-live-figure'><img alt='{html.escape(alt, quote=True)}' "
            f"src='data:image/png;base64,{image}'>{caption}</div>"
            f"<div class='sb-live-summary'>{summary_html}</div></div>")
