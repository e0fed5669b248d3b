"""envcheck: find the environment problems that kill GPU fine-tuning runs, before the run."""

from __future__ import annotations

__version__ = "0.1.0"
