"""Keep secrets, user names and home paths out of everything envcheck writes.

Reports get pasted into public GitHub issues. Redaction runs once, on the snapshot as it is captured, so every
formatter and every file downstream only ever sees redacted data.
"""

from __future__ import annotations

import getpass
import os
import re
from typing import Any

REDACTED = "<redacted>"

# Environment variables worth reporting: they change what CUDA, NCCL, torch and the training stack do.
_ENV_PREFIXES = (
    "CUDA_", "NCCL_", "TORCH_", "PYTORCH_", "DS_", "HF_", "TRANSFORMERS_", "ACCELERATE_", "NVIDIA_", "CUDNN_",
    "TRITON_", "XFORMERS_", "BNB_", "VLLM_", "WANDB_", "CONDA_", "LLAMAFACTORY_", "FORCE_TORCHRUN",
)
_ENV_NAMES = frozenset({
    "LD_LIBRARY_PATH", "LD_PRELOAD", "PATH", "PYTHONPATH", "VIRTUAL_ENV", "OMP_NUM_THREADS", "MAX_JOBS",
    "MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK", "NNODES", "NODE_RANK", "DISABLE_VERSION_CHECK",
    "TMPDIR", "USE_MODELSCOPE_HUB", "USE_OPENMIND_HUB",
})
_SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSW|CREDENTIAL|(^|_)(API_?)?KEY(S)?($|_)|(^|_)AUTH|(^|_)PAT($|_)|COOKIE|SESSION", re.I)
# Well-known credential shapes that can hide inside any value (a URL, a command line).
_SECRET_VALUE = re.compile(
    r"hf_[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|sk-[A-Za-z0-9_-]{20,}"
    r"|AKIA[0-9A-Z]{16}|xox[abpr]-[A-Za-z0-9-]{10,}|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"
)
_URL_CREDENTIALS = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)[^/\s:@]+(:[^/\s@]*)?@", re.I)
# Path segments too common to treat as a user name ("dev" would hit /dev/shm).
_COMMON_PATH_WORDS = frozenset({
    "root", "user", "users", "ubuntu", "dev", "proc", "sys", "usr", "lib", "lib64", "bin", "sbin", "opt", "etc",
    "var", "tmp", "home", "local", "share", "cuda", "nvidia", "conda", "python", "site-packages", "include", "run",
    "mnt", "srv", "data", "work", "app", "src", "test",
})
_HOME_PATH = re.compile(r"(?P<base>/home|/Users)/(?P<user>[^/\s:;,\"']+)")


def is_secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


def select_env(environ: dict[str, str]) -> dict[str, str]:
    """The environment variables that matter for a training run, secrets replaced."""
    chosen = {}
    for name, value in environ.items():
        if name in _ENV_NAMES or name.startswith(_ENV_PREFIXES):
            chosen[name] = REDACTED if is_secret_name(name) else value
    return dict(sorted(chosen.items()))


class Redactor:
    """Replaces home directories, user names and credential-shaped strings in text."""

    def __init__(
        self, home: str | None = None, user: str | None = None, environ: dict[str, str] | None = None
    ) -> None:
        self.home = (home if home is not None else os.path.expanduser("~")).rstrip("/")
        self.user = user if user is not None else _current_user()
        environ = dict(os.environ) if environ is None else environ
        # The values of secret-named variables, wherever they turn up (a child's error message, a URL).
        self.secret_values = sorted(
            {value for name, value in environ.items() if is_secret_name(name) and len(value) >= 6}, key=len, reverse=True
        )

    def text(self, value: str) -> str:
        for secret in self.secret_values:
            if secret in value:
                value = value.replace(secret, REDACTED)
        # Only a real per-user home (/home/x, /Users/x, /data/users/x), never a system directory such as /root.
        if self.home.count("/") >= 2 and self.home in value:
            value = re.sub(re.escape(self.home) + r"(?![^/\s:;,\"'])", "~", value)
        value = _SECRET_VALUE.sub(REDACTED, value)
        value = _URL_CREDENTIALS.sub(lambda m: m.group("scheme") + REDACTED + "@", value)
        value = _HOME_PATH.sub(lambda m: m.group("base") + "/<user>", value)
        if self.user and len(self.user) >= 3 and self.user not in _COMMON_PATH_WORDS:
            # As a path segment or before an @ (user@host); a bare word elsewhere is too often a real word.
            value = re.sub(rf"(?<=/){re.escape(self.user)}(?=/|$|\s)|(?<![\w.-]){re.escape(self.user)}(?=@)", "<user>", value)
        return value

    def tree(self, data: Any) -> Any:
        """Redact every string (and every key) of plain JSON data."""
        if isinstance(data, str):
            return self.text(data)
        if isinstance(data, list):
            return [self.tree(item) for item in data]
        if isinstance(data, dict):
            return {self.text(str(key)): self.tree(value) for key, value in data.items()}
        return data


def _current_user() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry for this uid (common in containers)
        return None
