"""The grading stages, one module each, in the order a submission meets them: ``plan``
(which submissions this run grades), ``run`` (their code in sandboxes, many at once),
``check`` (the notebook as data before the run; the instructor's tests on the values after),
``record`` (files, then the gradebook), with ``claims`` (a submission graded once, by one
grader) around them. ``grade`` composes them: :func:`autograder.grading.grade.grade_assignment`.
(No imports here: a caller of one stage loads that stage alone.)
"""
