"""Read the metadata of a torch.save zip (data.pkl) without torch and without running anything it names.

A pickle can name any callable; loading one with `pickle.load` runs it. This unpickler answers every global it is
asked for with an inert stand-in class that only records its arguments and state, so a checkpoint's pickle is
parsed as data: DeepSpeed's `dp_world_size`, `ds_config` and `global_steps`, a ZeRO shard's `partition_count`, the
TrainingArguments stored in `training_args.bin`, and the storage keys every tensor points at.
"""

from __future__ import annotations

import io
import pickle
import zipfile
from dataclasses import dataclass, field
from typing import Any



class StateDict(dict):  # type: ignore[type-arg]
    """OrderedDict's stand-in: a dict that also takes the attributes (`_metadata`) a state dict carries."""


# Globals answered with a real, harmless builtin type so the result is plain data.
_SAFE = {("collections", "OrderedDict"): StateDict, ("builtins", "set"): set, ("builtins", "frozenset"): frozenset,
         ("builtins", "dict"): dict, ("builtins", "list"): list, ("builtins", "tuple"): tuple}
_SAFE.update({("__builtin__", name): kind for (module, name), kind in list(_SAFE.items()) if module == "builtins"})
MAX_PICKLE_BYTES = 64 << 20


class Inert:
    """A stand-in for any global a pickle names: it records how it was built and does nothing else."""

    qualname = "?"

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    state: Any
    items: dict[Any, Any]
    listed: list[Any]

    def __new__(cls, *args: Any, **kwargs: Any) -> "Inert":  # NEWOBJ builds without __init__
        self = object.__new__(cls)
        self.args, self.kwargs, self.state, self.items, self.listed = args, kwargs, None, {}, []
        return self

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __setstate__(self, state: Any) -> None:
        self.state = state

    def __setitem__(self, key: Any, value: Any) -> None:
        self.items[key] = value

    def append(self, value: Any) -> None:
        self.listed.append(value)

    def extend(self, values: Any) -> None:
        self.listed.extend(values)

    def fields(self) -> dict[str, Any]:
        """The object's attributes, wherever the pickle put them (BUILD state, a dict subclass's items)."""
        found: dict[str, Any] = {}
        state = self.state
        if isinstance(state, tuple) and len(state) == 2:  # (dict, slots)
            state = {**(state[0] or {}), **(state[1] or {})}
        if isinstance(state, dict):
            found.update(state)
        found.update({k: v for k, v in self.items.items() if isinstance(k, str)})
        return found

    def __repr__(self) -> str:
        return f"<inert {self.qualname}>"


@dataclass(frozen=True)
class StorageRef:
    """What a tensor's persistent id names: the record `data/<key>` that must be in the archive."""

    key: str
    dtype: str
    numel: int


@dataclass
class Pickled:
    """The parsed data.pkl: its object tree (stand-ins for globals) and the storages it references."""

    root: Any
    storages: list[StorageRef] = field(default_factory=list)
    globals_named: set[str] = field(default_factory=set)


class _Restricted(pickle.Unpickler):
    def __init__(self, data: bytes, result: Pickled) -> None:
        super().__init__(io.BytesIO(data))
        self._result = result
        self._classes: dict[str, type] = {}

    def find_class(self, module: str, name: str) -> Any:
        qualname = f"{module}.{name}"
        self._result.globals_named.add(qualname)
        if (module, name) in _SAFE:
            return _SAFE[(module, name)]
        if qualname not in self._classes:
            self._classes[qualname] = type(name, (Inert,), {"qualname": qualname})
        return self._classes[qualname]

    def persistent_load(self, pid: Any) -> Any:
        # torch: ('storage', storage_type, key, location, numel)
        if isinstance(pid, tuple) and len(pid) >= 5 and pid[0] == "storage":
            dtype = getattr(pid[1], "qualname", str(pid[1]))
            ref = StorageRef(key=str(pid[2]), dtype=dtype, numel=int(pid[4]) if isinstance(pid[4], int) else -1)
            self._result.storages.append(ref)
            return ref
        return Inert(pid)


def loads(data: bytes) -> Pickled:
    """Parse a pickle into inert data; raises pickle.UnpicklingError (or ValueError/EOFError) when it is not one."""
    result = Pickled(root=None)
    result.root = _Restricted(data, result).load()
    return result


def pickle_member(archive: zipfile.ZipFile) -> str | None:
    """The name of the archive's data.pkl (`<top>/data.pkl`), or None when it has none."""
    names = [n for n in archive.namelist() if n.endswith("/data.pkl") and n.count("/") == 1]
    return names[0] if names else (("data.pkl" if "data.pkl" in archive.namelist() else None))


def read_archive_pickle(path: str) -> tuple[Pickled, str, set[str]]:
    """(parsed data.pkl, the archive's top folder, every record name) of a torch.save zip at path."""
    with zipfile.ZipFile(path) as archive:
        member = pickle_member(archive)
        if member is None:
            raise ValueError("no data.pkl record")
        info = archive.getinfo(member)
        if info.file_size > MAX_PICKLE_BYTES:
            raise ValueError(f"data.pkl is {info.file_size} bytes, more than a checkpoint's metadata")
        data = archive.read(member)
        names = set(archive.namelist())
    top = member.rsplit("/", 1)[0] if "/" in member else ""
    return loads(data), top, names


def scalar(value: Any) -> Any:
    """An enum's stand-in (`ZeroStageEnum(2)`) as its value; anything else unchanged."""
    if isinstance(value, Inert) and len(value.args) == 1 and not value.fields():
        return value.args[0]
    return value


def plain(value: Any) -> Any:
    """An inert object's fields as a dict, recursively; plain values unchanged."""
    if isinstance(value, Inert):
        if not value.fields():
            return scalar(value) if len(value.args) == 1 else repr(value)
        return {k: plain(v) for k, v in value.fields().items()}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value
