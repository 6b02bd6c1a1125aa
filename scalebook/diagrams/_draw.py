"""Shared drawing helpers of :mod:`scalebook.diagrams`: a figure on its own canvas (no pyplot
state), the book's colours, and number words for alt texts."""

from __future__ import annotations

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

#: The book's colours: TPUs blue, GPUs green/orange as in the chapters' older figures.
BLUE, ORANGE, GREEN, GREY, RED = "#1f5fa8", "#d9731a", "#5a9e2f", "#6b6b6b", "#b0302a"

#: Distinct colours for shards/blocks (tab10 without its greys), cycled.
SHARD_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                 "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5",
                 "#c49c94", "#f7b6d2")


def new_figure(width_in: float, height_in: float) -> Figure:
    """An empty figure ``width_in`` x ``height_in`` inches on its own Agg canvas."""
    figure = Figure(figsize=(width_in, height_in))
    FigureCanvasAgg(figure)
    return figure


def shard_colour(index: int) -> str:
    return SHARD_COLOURS[index % len(SHARD_COLOURS)]


def words_list(items: list[str]) -> str:
    """"a, b and c"."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]
