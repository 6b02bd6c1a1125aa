"""A filled polygon of a widget's figure read as a rectangle (a stacked bar's segment, a
shaded band): the tests' bridge from scalebook.widgets.figure's areas to bar heights."""

from __future__ import annotations


class Box:
    """``get_x``, ``get_width``, ``get_y``, ``get_height`` and ``get_facecolor`` of the
    rectangle that a filled polygon spans."""

    def __init__(self, polygon):
        xy = polygon.get_xy()
        self.polygon = polygon
        self._x = (min(p[0] for p in xy), max(p[0] for p in xy))
        self._y = (min(p[1] for p in xy), max(p[1] for p in xy))

    def get_x(self):
        return self._x[0]

    def get_width(self):
        return self._x[1] - self._x[0]

    def get_y(self):
        return self._y[0]

    def get_height(self):
        return self._y[1] - self._y[0]

    def get_facecolor(self):
        return self.polygon.get_facecolor()
