"""The learning-management systems (Canvas, Moodle) as the grader meets them.

- ``formats``: every file an LMS writes or reads -- rosters, grading worksheets, the names in a
  submission download, the gradebook imports -- said once, for ``collect``, ``export`` and ``cli``.
- ``roster``: who is who in the course -- the roster's students in the gradebook, and each
  Moodle assignment's participant ids.
"""
