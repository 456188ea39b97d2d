"""What people read: the course report (the main job), the README's and docs/' generated blocks, the lessons' ranges.

- `report`: ``tfperf-lab run``: every lesson's reference solution executed here, its measurements in a table and a plot;
- `readme`: every generated block of the README and docs/ (``tfperf-lab readme``), from committed records only;
- `campaigns`: the flake campaigns' records under docs/flake/ (written, read back, printed, counted);
- `margins`: each speed check's reference margin on every machine that graded it (``tfperf-lab margins``);
- `ranges`: the speedup ranges the lessons quote, from docs/runs/ (``tfperf-lab ranges``).

Never grades and never imports nbgrader: it reads what grading and campaigns wrote, and runs notebooks the one way
the tool does (`tfperf_lab.isolation.runner.execute`).
"""
