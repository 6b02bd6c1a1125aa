"""Hostile submissions for the grading engine's tests, and the tiny course they attack."""
