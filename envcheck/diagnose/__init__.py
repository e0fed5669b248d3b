"""`envcheck diagnose`: explain why a training run died, from its logs, the kernel log and core dumps.

Stages: `source` opens the inputs, `scan` matches the matrix's signatures in one streaming pass, `kernel` and
`core` read the system's records of the crash, `combine` turns all of it into ranked causes.
"""

from __future__ import annotations
