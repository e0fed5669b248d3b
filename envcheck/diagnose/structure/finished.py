"""The training loop's own words that it finished: a crash after them is in the run's teardown, not in its training.
A hint (no cause): the crash's report says that the run had finished and what to check of its outputs."""

from __future__ import annotations

import re

from envcheck.diagnose.structure.model import Event, Line

# transformers trainer.py (_inner_training_loop): "\n\nTraining completed. Do not forget to share your model on
# huggingface.co/models =)\n\n"; trainer_pt_utils.py (log_metrics): "***** train metrics *****"; the Trainer's last
# log line, {'train_runtime': ..., 'train_loss': ...}.
ANCHORS = (b"Training completed. Do not forget", b"***** train metrics *****", b"{'train_runtime': ")
FINISHED = "training_finished"
_FINISHED = re.compile(r"Training completed\. Do not forget to share your model|\*\*\*\*\* train metrics \*\*\*\*\*"
                       r"|\{'train_runtime': ")


def events(lines: list[Line]) -> list[Event]:
    """One hint per line that says the training loop finished (combine keeps the one just before a crash)."""
    return [Event(FINISHED, "", 0.0, "the training loop finished", "", "", hit.file, hit.number, hit.text,
                  "transformers trainer.py (_inner_training_loop), trainer_pt_utils.py (log_metrics)")
            for hit in lines if _FINISHED.search(hit.text)]
