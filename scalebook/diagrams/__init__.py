"""Figures of the course's mechanisms, drawn from the solver's own objects.

One module per idea (sharding, collectives, pipeline schedules, memory, caches, experts, ...).
Every function returns a :class:`scalebook.picture.Picture`: the matplotlib figure and alt text
written from the same numbers, so a number in a figure and in the text cannot disagree.
"""
