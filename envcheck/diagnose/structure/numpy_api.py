"""NumPy's API and ABI breaks in a traceback: names NumPy 1.24 and 2.0 removed, and a module compiled against
NumPy 1.x that NumPy 2 refuses to load (tracebacks.py's rules read them with these)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from envcheck.diagnose.structure.model import Event
from envcheck.diagnose.structure.model import event_at as _event

if TYPE_CHECKING:
    from envcheck.diagnose.structure.tracebacks import Traceback

# NumPy 1.24 removed its aliases of Python's builtins (doc/source/release/1.24.0-notes.rst); NumPy 2.0 has np.bool
# and np.long again.
_NP_124 = ("float", "int", "bool", "object", "str", "complex", "long", "unicode")
_NP_BACK_IN_2 = ("bool", "long")
# The names NumPy removed: 1.24's and 2.0's (numpy/_expired_attrs_2_0.py __expired_attributes__, and the namespace
# members doc/source/release/2.0.0-notes.rst lists as removed with the explicit imports of numpy/__init__.py).
# `module 'numpy' has no attribute` and `from numpy import X`'s "cannot import name 'X' from 'numpy'" name one of them.
NUMPY_REMOVED = (
    *_NP_124,
    "geterrobj", "seterrobj", "cast", "source", "lookfor", "who", "fastCopyAndTranspose", "set_numeric_ops", "NINF",
    "PINF", "NZERO", "PZERO", "add_newdoc", "add_docstring", "add_newdoc_ufunc", "safe_eval", "float_",
    "complex_", "longfloat", "singlecomplex", "cfloat", "longcomplex", "clongfloat", "string_", "unicode_", "Inf",
    "Infinity", "NaN", "infty", "issctype", "maximum_sctype", "obj2sctype", "sctype2char", "sctypes", "issubsctype",
    "set_string_function", "asfarray", "issubclass_", "tracemalloc_domain", "mat", "recfromcsv", "recfromtxt",
    "deprecate", "deprecate_with_doc", "disp", "find_common_type", "round_", "get_array_wrap", "DataSource",
    "nbytes", "byte_bounds", "compare_chararrays", "format_parser",
    "FLOATING_POINT_SUPPORT", "CLIP", "WRAP", "RAISE", "BUFSIZE", "UFUNC_BUFSIZE_DEFAULT", "UFUNC_PYVALS_NAME",
    "ALLOW_THREADS", "MAXDIMS", "MAY_SHARE_EXACT", "MAY_SHARE_BOUNDS", "kernel_version", "numarray", "oldnumeric",
    # the scalar aliases 1.24 deprecated (1.24.0-notes.rst, gh-22607; v1.26.0's numpy/__init__.py _type_info) and
    # v2.0.0's numpy/__init__.py no longer has
    "bool8", "int0", "uint0", "str0", "bytes0", "void0", "object0")
_REMOVED_NAMES = "|".join(sorted(NUMPY_REMOVED, key=len, reverse=True))
# (the backticks are NumPy's; a GitHub page renders them as code and a copy of it loses them)
REMOVED = re.compile(r"`?np\.\w+`? was removed in the NumPy 2\.0 release|module 'numpy' has no attribute "
                     r"'(?:" + _REMOVED_NAMES + r")'|cannot import name '(?:" + _REMOVED_NAMES
                     + r")' from 'numpy'")
# A module compiled against NumPy 1.x under NumPy 2: its own import_array (NumPy 1.x's generated __multiarray_api.h)
# raises "numpy.core.multiarray failed to import" or "_ARRAY_API not found", after NumPy 2's warning
# (numpy/core/_multiarray_umath.py): the module importing numpy is to blame.
ABI_IMPORT = re.compile(r"numpy\.core\.multiarray failed to import|_ARRAY_API not found")


_NP_NAME = re.compile(r"`np\.(?P<a>\w+)`|'(?P<b>\w+)'(?: from 'numpy')?$|attribute '(?P<c>\w+)'")


def removed(tb: Traceback, message: str) -> Event:
    """Code that uses a name NumPy removed: 1.24's builtin aliases (np.float: pin numpy<1.24 or use the builtin) or
    2.0's removals (np.float_, np.NaN: numpy<2 or an upgrade of the package that uses it)."""
    named = _NP_NAME.search(message.split(" (")[0])
    name = next((g for g in named.groups() if g), "") if named else ""
    blame = next((p for p in reversed(tb.packages) if p not in ("numpy",)), "")
    user = f"upgrade {blame} to a release that supports it" if blame else f"change the code that uses np.{name}"
    if name in _NP_124:
        again = " (NumPy 2 has it again)" if name in _NP_BACK_IN_2 else ""
        return _event(tb, "numpy_removed", "numpy_abi", 0.9,
                      f"Code uses np.{name}, an alias NumPy 1.24 removed{again}",
                      "NumPy 1.24 removed the aliases of Python's builtins (np.float, np.int, np.object, np.str, "
                      "np.bool, ...); NumPy 2.0 brought back np.bool and np.long only.",
                      f"Use the builtin ({name}) or numpy's own type (np.float64, np.int64, np.bool_), or {user}; "
                      + ("or install NumPy 2." if again else "or pin numpy<1.24."),
                      "NumPy 1.24.0 release notes (expired deprecations); numpy/__init__.py (NumPy 2.0)",
                      blame or "numpy")
    return _event(tb, "numpy_removed", "numpy_abi", 0.9,
                  "Code written for NumPy 1.x meets NumPy 2 (an API it uses was removed)",
                  "NumPy 2.0 removed names such as np.float_, np.NaN, np.Inf and np.BUFSIZE; the code in the traceback "
                  "still uses them.", f"Install numpy<2 (pip install 'numpy<2'), or {user}.",
                  "numpy/_expired_attrs_2_0.py __expired_attributes__ and the NumPy 2.0.0 release notes",
                  blame or "numpy")


def importer(tb: Traceback) -> str:
    """The compiled module a NumPy ABI import failure comes from: a Cython module's init frame ("in init fastremap"),
    else the innermost package of the stack that is not NumPy; "" when the stack names none."""
    inits = [c[5:] for c in tb.funcs if c.startswith("init ") and c[5:].replace(".", "").isidentifier()]
    if inits:
        return inits[-1].split(".")[0]  # "init pyarrow.lib": the distribution is pyarrow
    return next((p for p in reversed(tb.packages) if p not in ("numpy", "np")), "")
