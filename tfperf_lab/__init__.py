"""Grading tooling of TF Performance Lab around nbgrader (see ``tfperf-lab --help``)."""
