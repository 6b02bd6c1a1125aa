"""The instructor's grading tools: generate, validate, collect, grade, export, feedback.

Run ``python -m autograder --help``. The design (what runs trusted, what runs sandboxed) is in
``autograder/DESIGN.md``.
"""
