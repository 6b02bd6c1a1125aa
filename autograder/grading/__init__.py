"""The grading stages, one module each, in the order a submission meets them: ``plan``
(which submissions this run grades), ``run`` (their code in sandboxes, many at once), the check
before and after the run -- ``spec`` (the instructor's notebook, read once; ``names``: a test
cell's answer names), ``submission`` (the notebook admitted as data, its run planned),
``check`` (the instructor's tests on the values that came back, into a ``result``),
``autograded`` (the autograded copy) -- then ``record`` (files, then the gradebook), with
``claims`` (a submission graded once, by one grader) around them. ``grade`` composes them:
:func:`autograder.grading.grade.grade_assignment`.
(No imports here: a caller of one stage loads that stage alone.)
"""
