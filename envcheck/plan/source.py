"""MODEL as users name it: a parameter count, a config.json (or a folder with one), or a hub id such as
`Qwen/Qwen2.5-7B`, resolved from the local Hugging Face cache first, then from the bundled table (envcheck.plan.zoo).

Nothing is downloaded. The cache layout is huggingface_hub's: `<cache>/models--ORG--NAME/refs/main` names a
commit, whose files are under `<cache>/models--ORG--NAME/snapshots/<commit>/`. The cache is `$HF_HUB_CACHE`, else
`$HF_HOME/hub`, else `$XDG_CACHE_HOME/huggingface/hub`, else `~/.cache/huggingface/hub` (huggingface_hub's
constants.py).
"""

from __future__ import annotations

import os
import re

from envcheck.errors import UsageError
from envcheck.plan import zoo
from envcheck.plan.params import ModelSpec, from_config, load_config, load_model, parse_count

HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")


def hub_cache() -> str:
    if os.environ.get("HF_HUB_CACHE"):
        return os.environ["HF_HUB_CACHE"]
    if os.environ.get("HF_HOME"):
        return os.path.join(os.environ["HF_HOME"], "hub")
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "huggingface", "hub")


def cached_config(hub_id: str, cache: str | None = None) -> str | None:
    """The config.json of `hub_id` in the local cache: the snapshot refs/main names, else the newest with one."""
    repo = os.path.join(cache or hub_cache(), "models--" + hub_id.replace("/", "--"))
    snapshots = os.path.join(repo, "snapshots")
    try:
        with open(os.path.join(repo, "refs", "main"), encoding="utf-8") as handle:
            main = handle.read().strip()
    except OSError:
        main = ""
    if main and os.path.isfile(os.path.join(snapshots, main, "config.json")):
        return os.path.join(snapshots, main, "config.json")
    try:
        found = [os.path.join(snapshots, rev, "config.json") for rev in os.listdir(snapshots)]
    except OSError:
        return None
    found = [path for path in found if os.path.isfile(path)]
    return max(found, key=os.path.getmtime) if found else None


def from_hub_id(hub_id: str) -> ModelSpec:
    path = cached_config(hub_id)
    if path is not None:
        spec = load_config(path)
        return _with_source(spec, f"{hub_id} from the Hugging Face cache ({path})")
    bundled = zoo.lookup(hub_id)
    if bundled is not None:
        name, config, source = bundled
        label = hub_id if name.lower() == hub_id.lower() else f"{hub_id} as {name}"
        return _with_source(from_config(config, source=name), f"{label}: {source}")
    raise UsageError(f"MODEL {hub_id!r}: not in the Hugging Face cache ({hub_cache()}) nor in the bundled table; "
                     "download its config.json and give the file (envcheck plan path/to/config.json), or give a "
                     "parameter count such as 7B")


def _with_source(spec: ModelSpec, source: str) -> ModelSpec:
    from dataclasses import replace

    return replace(spec, source=source)


def resolve_model(text: str) -> ModelSpec:
    """A count, an existing config.json or folder, or a hub id (cache, then the bundled table)."""
    if parse_count(text) is not None or os.path.exists(text):
        return load_model(text)  # a count or a config path: params.py reads those
    if HUB_ID.match(text.strip()):
        return from_hub_id(text.strip())
    raise UsageError(f"MODEL {text!r}: neither a parameter count (7B, 8.03e9), an existing config.json or "
                     "LLaMA-Factory YAML, nor a hub id (ORG/NAME)")
