"""The book's widgets in Jupyter: each is its :mod:`scalebook.live` module plus a thin front end.

A widget's numbers, chart and summary come from its live module's ``view(controls, changed)``
(plain Python on the solver, which also runs in the reader's browser on the book's static
site). The front end of the same name here builds its ipywidgets controls and hands them to
an :class:`~scalebook.widgets.explorer.Explorer`, which asks the view for every move and
draws the view's chart with matplotlib (:mod:`scalebook.widgets.figure`): one renderer for
every widget, so the Jupyter figure and the page's chart come from one ``view()`` output.

=========================  ===============================  =============================
live module                front end                        function
=========================  ===============================  =============================
``live.roofline``          :mod:`.roofline`                 ``roofline_explorer``
``live.comparison``        :mod:`.comparison`               ``chip_comparison``
``live.sharded_matmul``    :mod:`.sharded_matmul`           ``sharded_matmul_explorer``
``live.serving``           :mod:`.serving`                  ``serving_explorer``
``live.calculator``        :mod:`.calculator`               ``transformer_calculator``
``live.layout_planner``    :mod:`.layout_planner`           ``layout_planner``
``live.moe``               :mod:`.moe`                      ``moe_explorer``
=========================  ===============================  =============================

Also here: :mod:`.explorer` (the shared front end), :mod:`.figure` (the matplotlib renderer
of a chart description), :mod:`.controls` (the controls and the initial checks widgets
share) and :mod:`.live_html` (a widget as static HTML that the book's page makes live).

Only this package of ``scalebook`` imports ipywidgets and matplotlib (Agg, no pyplot).
"""

from __future__ import annotations

from ..live.comparison import METRICS, comparison_table, table_markdown
from .comparison import chip_comparison
from .explorer import Explorer
from .roofline import roofline_explorer

__all__ = ["Explorer", "roofline_explorer", "chip_comparison", "METRICS", "comparison_table",
           "table_markdown"]
