"""The Jupyter front end every widget shares: controls, the figure of the live view, numbers.

A widget is its :mod:`scalebook.live` module (``view(controls, changed) -> {summary_html,
chart, controls?, disabled?}``, plain Python that also runs in the reader's browser) plus a
thin front end here: its ipywidgets controls, wired to an :class:`Explorer`. On every move
the explorer asks :func:`scalebook.live.render` (the one door the book's page goes through
too) for the view of the controls' values, sets the controls the view filled (a preset's
fields), and draws the view's chart with :mod:`scalebook.widgets.figure`. So the Jupyter
figure and the page's chart are drawn from the same ``view()`` output, by construction.
"""

from __future__ import annotations

import base64
import html
import io
from typing import Callable, Iterable, Mapping, Sequence

import ipywidgets as widgets
import PIL.Image
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ..live import render
from . import figure as fig
from . import live_html

__all__ = ["Explorer"]


class Explorer(widgets.VBox):
    """An ipywidgets box: controls on top, then a message line, a PNG of the figure and the
    summary below.

    ``live`` names the widget's :mod:`scalebook.live` module; ``controls`` are its input
    widgets by the view's control names, laid out in ``layout_rows``; ``buttons`` its action
    buttons by name (a click redraws with ``changed`` set to that name: the view runs the
    action). ``state``, when given, is the live module's state function: ``w.state`` is then
    the state of the last accepted values (for tests and readers who want the numbers).

    Attributes: ``controls``, ``buttons``, ``view`` (the last accepted view: ``summary_html``,
    ``chart``, ...), ``figure`` (matplotlib), ``drawing`` (:class:`~scalebook.widgets.figure.
    Drawing`: the artists of each series), ``png`` (the figure as shown), ``error`` (the
    message of the last rejected input, or ""). Moving a control calls :meth:`update`; the
    redraw moves the artists in place and repaints only them over a saved background when the
    chart's frame is unchanged (:func:`scalebook.widgets.figure.update`), a few milliseconds
    where a full drawing costs ~50 ms.
    """

    def __init__(self, live: str, controls: Mapping[str, widgets.Widget], *,
                 layout_rows: Iterable[Sequence[str]],
                 buttons: Mapping[str, widgets.Button] | None = None,
                 state: Callable[..., object] | None = None, dpi: float = fig.DPI):
        self.live = live
        self.controls = dict(controls)
        self.buttons = dict(buttons or {})
        self._layout_rows = [tuple(row) for row in layout_rows]
        self._state = state
        self._dpi = dpi
        self._syncing = False  # True while set_quietly moves several controls at once
        self._accepted: dict[str, object] = {}
        self._state_cache: object = None
        self.view: dict = {}
        self.figure: Figure | None = None
        self.drawing: fig.Drawing | None = None
        self._background = None
        self.error = ""
        self.png = b""
        self.image = widgets.Image(format="png", layout=widgets.Layout(width="100%"))
        self.summary = widgets.HTML()
        self.message = widgets.HTML()
        rows = [widgets.HBox([self.controls[name] for name in row]) for row in self._layout_rows]
        if self.buttons:
            rows.append(widgets.HBox(list(self.buttons.values())))
        super().__init__(children=[*rows, self.message, self.image, self.summary])
        for name, control in self.controls.items():
            control.observe(lambda change, name=name: self._on_change(name), names="value")
        for name, button in self.buttons.items():
            button.on_click(lambda _button, name=name: self.update(name))
        self.update()
        if self.error:  # the initial values themselves were rejected
            raise ValueError(self.error)

    def values(self) -> dict[str, object]:
        """The controls' current values, by name."""
        return {name: control.value for name, control in self.controls.items()}

    @property
    def state(self) -> object:
        """The live module's state of the last accepted values (None without ``state``),
        computed when first asked for."""
        if self._state is not None and self._state_cache is None:
            self._state_cache = self._state(**self._accepted)
        return self._state_cache

    @property
    def chart(self) -> dict:
        """The chart description the figure shows (the view's, as the page draws it)."""
        return self.view.get("chart", {})

    def _on_change(self, name: str) -> None:
        if not self._syncing:
            self.update(name)

    def set_quietly(self, values: Mapping[str, object]) -> None:
        """Set several controls without an update per control; the caller updates once."""
        self._syncing = True
        try:
            for name, value in values.items():
                self.controls[name].value = value
        finally:
            self._syncing = False

    def update(self, changed: str | None = None) -> None:
        """Ask the live view for the controls' values after ``changed`` moved, set the
        controls it filled, and redraw. A rejected input keeps the last good picture and
        shows the message in ``self.message`` (and ``self.error``)."""
        result = render(self.live, self.values(), changed)
        self.set_quietly(result.get("controls", {}))  # a preset's fields, even with an error
        if "error" in result:
            self.error = result["error"]
            self.message.value = (f"<span style='color:#b00020'>⚠ {html.escape(self.error)}"
                                  "</span>")
            return
        self.error = ""
        self.message.value = ""
        self.view = result
        self._accepted = self.values()
        self._state_cache = None
        self._draw(result["chart"])
        self.image.value = self.png
        self.summary.value = result["summary_html"]

    def _draw(self, chart: dict) -> None:
        """Draw ``chart``: the fast path (artists moved, repainted over the saved background)
        when its frame is unchanged, else a full drawing that saves a new background."""
        size = (chart["width"] / fig.DPI, chart["height"] / fig.DPI)
        figure = self.figure
        if figure is None or tuple(figure.get_size_inches()) != size:
            figure = self.figure = fig.new_figure(chart, self._dpi)
            self.drawing, self._background = None, None
        canvas = figure.canvas
        if not isinstance(canvas, FigureCanvasAgg):  # fig.new_figure gives every figure one
            raise TypeError(f"the explorer draws on an Agg canvas, not {type(canvas).__name__}")
        dynamic = fig.update(self.drawing, chart) if self.drawing is not None else None
        if dynamic is None:
            self.drawing = fig.draw(figure, chart)
            dynamic = self.drawing.dynamic()
            for artist in dynamic:
                artist.set_animated(True)  # painted over the saved background, never into it
            canvas.draw()
            self._background = canvas.copy_from_bbox(figure.bbox)
        else:
            canvas.restore_region(self._background)
        for artist in dynamic:
            figure.draw_artist(artist)
        self.png = _canvas_png(canvas)

    def _repr_mimebundle_(self, **kwargs: object) -> dict:
        """The live widget view plus, for static pages, the current figure as ``image/png``
        and ``text/html``: the figure, the summary and the controls as HTML inputs that the
        book's JavaScript wires to the live view (:mod:`scalebook.widgets.live_html`).
        Jupyter shows the widget view; the book's HTML builder prefers ``text/html`` to
        ``image/png`` (MyST-NB's priorities)."""
        bundle = super()._repr_mimebundle_(**kwargs) or {}
        bundle["image/png"] = base64.b64encode(self.png).decode("ascii")
        rows = [*self._layout_rows, *([tuple(self.buttons)] if self.buttons else [])]
        bundle["text/html"] = live_html.placeholder(
            self.live, {**self.controls, **self.buttons}, rows, self.png, self.summary.value,
            self.error, chart=self.chart)
        return bundle


def _canvas_png(canvas: FigureCanvasAgg) -> bytes:
    """What an Agg canvas holds now, as PNG (light compression: it is redone per slider move,
    and zlib's default level costs more time than the extra kilobytes cost)."""
    width, height = canvas.get_width_height(physical=True)
    image = PIL.Image.frombuffer("RGBA", (width, height), canvas.buffer_rgba(), "raw", "RGBA",
                                 0, 1)
    buffer = io.BytesIO()
    image.save(buffer, format="png", compress_level=1)
    return buffer.getvalue()
