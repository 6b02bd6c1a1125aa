"""The stages of ``collect`` (``autograder/collect.py`` says the rules and runs them in order):

- ``source``: a SOURCE (folder, zip, notebook) read into items, one per file;
- ``identify``: whose file each item is, and under which name it is kept;
- ``people``: the LMS's ids (Moodle participants, Canvas users) matched to the course's students;
- ``report``: what was collected, refused, kept or left, for the instructor's terminal.
"""
