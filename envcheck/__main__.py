from __future__ import annotations

import sys

from envcheck.cli import main

sys.exit(main())
