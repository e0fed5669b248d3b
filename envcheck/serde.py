"""Typed conversion between frozen dataclasses and plain JSON data.

One generic reader instead of a hand-written `from_dict` per record: it checks every value against the
dataclass's type hints and names the dotted path of the first bad key (`gpus[1].memory_total_bytes`), the way
packaging's pylock reader does.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Any, TypeVar, Union

T = TypeVar("T")


class DataError(ValueError):
    """A value that does not match the expected shape; `path` is the dotted key path."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.message = message
        super().__init__(f"{path or '<root>'}: {message}")


def to_dict(obj: Any) -> Any:
    """Plain JSON data for a dataclass tree; tuples become lists, dict keys are sorted."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [to_dict(item) for item in obj]
    if isinstance(obj, dict):
        return {str(key): to_dict(obj[key]) for key in sorted(obj)}
    return obj


def from_dict(cls: type[T], data: Any, path: str = "", strict: bool = False) -> T:
    """Build `cls` from plain data, raising DataError naming the bad key's path.

    `strict` also rejects keys the dataclass does not know (a typo in hand-written data).
    """
    return _convert(cls, data, path, strict)


@functools.lru_cache(maxsize=None)
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def _convert(tp: Any, value: Any, path: str, strict: bool = False) -> Any:
    if tp is Any:
        return value
    origin = typing.get_origin(tp)
    if origin is Union or origin is types.UnionType:
        return _convert_union(tp, value, path, strict)
    if dataclasses.is_dataclass(tp):
        return _convert_dataclass(tp, value, path, strict)
    if origin is tuple:
        return _convert_tuple(tp, value, path, strict)
    if origin is dict:
        return _convert_dict(tp, value, path, strict)
    if tp is type(None):
        if value is not None:
            raise DataError(path, f"expected null, got {type(value).__name__}")
        return None
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise DataError(path, f"expected a number, got {type(value).__name__}")
        return float(value)
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise DataError(path, f"expected an integer, got {type(value).__name__}")
        return value
    if tp in (str, bool):
        if not isinstance(value, tp):
            raise DataError(path, f"expected {_type_name(tp)}, got {type(value).__name__}")
        return value
    raise TypeError(f"serde cannot read type {tp!r} at {path}")  # a bug in a record definition


def _accepts_none(tp: Any) -> bool:
    origin = typing.get_origin(tp)
    return tp is Any or ((origin is Union or origin is types.UnionType) and type(None) in typing.get_args(tp))


def _convert_union(tp: Any, value: Any, path: str, strict: bool) -> Any:
    options = typing.get_args(tp)
    if value is None and type(None) in options:
        return None
    errors = []
    for option in options:
        if option is type(None):
            continue
        try:
            return _convert(option, value, path, strict)
        except DataError as error:
            errors.append(error)
    if len(errors) == 1:
        raise errors[0]
    names = " or ".join(_type_name(o) for o in options)
    raise DataError(path, f"expected {names}, got {type(value).__name__}")


def _convert_dataclass(cls: type, value: Any, path: str, strict: bool) -> Any:
    if not isinstance(value, dict):
        raise DataError(path, f"expected an object, got {type(value).__name__}")
    hints = _hints(cls)
    if strict:
        unknown = sorted(set(value) - set(hints))
        if unknown:
            raise DataError(_join(path, unknown[0]), f"unknown key (known: {', '.join(sorted(hints))})")
    kwargs = {}
    for field in dataclasses.fields(cls):
        key_path = _join(path, field.name)
        has_default = field.default is not dataclasses.MISSING or field.default_factory is not dataclasses.MISSING
        if value.get(field.name, 0) is None and has_default and not _accepts_none(hints[field.name]):
            continue  # "absent or null" mean the same for a section with a default (an empty list, no env)
        if field.name in value:
            kwargs[field.name] = _convert(hints[field.name], value[field.name], key_path, strict)
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            raise DataError(key_path, "required key is missing")
    return cls(**kwargs)


def _convert_tuple(tp: Any, value: Any, path: str, strict: bool) -> tuple[Any, ...]:
    if not isinstance(value, list):
        raise DataError(path, f"expected a list, got {type(value).__name__}")
    (item_type, _ellipsis) = typing.get_args(tp)
    return tuple(_convert(item_type, item, f"{path}[{i}]", strict) for i, item in enumerate(value))


def _convert_dict(tp: Any, value: Any, path: str, strict: bool) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise DataError(path, f"expected an object, got {type(value).__name__}")
    (_key_type, value_type) = typing.get_args(tp)
    return {str(k): _convert(value_type, v, _join(path, str(k)), strict) for k, v in value.items()}
