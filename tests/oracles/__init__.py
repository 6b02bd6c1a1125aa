"""Each homework's answers at the book's sample numbers, worked out by hand from the figures
the problems state (never by calling the solver), and the misconceptions whose hints the grader
must give: the independent oracle of tests/test_homework_contract.py.

One module per homework, each binding ``A`` (the assignment), ``POINTS`` (its total),
``BY_HAND`` (answer -> value), ``OTHER`` (answers that are no number: strings, specs, as the
sandbox reports them) and ``MISCONCEPTIONS`` ((answer, the value a slip gives, worked by hand,
text the hint must carry)). Adding a part to a homework adds its row here.
"""

from . import hw1, hw2, hw3, hw4, hw5, hw6, hw7, hw8

ALL = (hw1, hw2, hw3, hw4, hw5, hw6, hw7, hw8)
