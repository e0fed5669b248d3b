"""`envcheck matrix harvest`: list what the configured index serves for the tracked packages, read each new
release's metadata, and write compat_matrix/releases.toml. A maintainer's command; the doctor never imports it.

Stages: an Index (interface.py; live.py over HTTP, recorded.py for tests) -> releases and the file whose metadata
stands for each (select.py) -> rows (derive.py, pure) -> the file (tomlfile.py, deterministic). A release whose
metadata cannot be read is carried as data (`Skipped`) and reported, not raised.
"""
