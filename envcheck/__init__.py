"""envcheck: find the environment problems that kill GPU fine-tuning runs, before the run."""

from __future__ import annotations

__version__ = "0.1.0"
# The distribution's name on package indexes (pyproject's [project] name); `envcheck` there is another project.
DISTRIBUTION = "envcheck-llm"
