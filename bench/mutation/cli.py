"""``cosmic-ray`` with this project's operators registered (``forecaster/DropCall``).

Run as ``python -m bench.mutation.cli <cosmic-ray arguments>``; ``run`` calls it for ``init``
and ``exec``.
"""

from __future__ import annotations

import sys

import cosmic_ray.plugins
from cosmic_ray.cli import main

from bench.mutation.operators import Provider

if __name__ == "__main__":
    cosmic_ray.plugins.OPERATOR_PROVIDERS["forecaster"] = Provider()
    sys.exit(main())
