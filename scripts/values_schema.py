"""Write the Helm chart's values schema for what becomes config from the config's own schema.

``pools`` items and ``budgets`` in ``deploy/helm/forecaster/values.schema.json`` are generated
from ``forecaster.settings.PoolSettings`` and ``BudgetSettings`` (pydantic), a pool's
``backend`` limited to the built-in backends the chart's image serves: a typo inside
``pools[0]`` is then refused by ``helm template``/``lint`` with its path, before the daemon would
refuse it at start-up and crash-loop. The rest of the values schema is written by hand.
``--check`` (what the tests run) exits 1 when the file differs from what would be written.

    python scripts/values_schema.py [--check]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's forecaster, whatever is installed
from forecaster.actuators.prewarm.registry import backend_names  # noqa: E402
from forecaster.settings import BudgetSettings, PoolSettings  # noqa: E402

SCHEMA = ROOT / "deploy" / "helm" / "forecaster" / "values.schema.json"


def _draft7(schema: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any]:
    """A pydantic (2020-12) schema as draft-07: ``$defs`` moved into ``definitions``."""
    for name, body in schema.pop("$defs", {}).items():
        definitions[name] = body
    text = json.dumps(schema).replace('"#/$defs/', '"#/definitions/')
    return dict(json.loads(text))


def generated() -> str:
    """The values schema with the config-derived parts written in."""
    values = json.loads(SCHEMA.read_text())
    definitions = values.setdefault("definitions", {})
    pool = _draft7(PoolSettings.model_json_schema(), definitions)
    pool.pop("title", None)
    # the settings accept any registered backend; the chart ships the built-in ones
    pool["properties"]["backend"]["anyOf"][0] = {"enum": list(backend_names())}
    values["properties"]["pools"] = {"type": "array", "minItems": 1, "items": pool}
    budgets = _draft7(BudgetSettings.model_json_schema(), definitions)
    budgets.pop("title", None)
    values["properties"]["budgets"] = budgets
    definitions_text = json.dumps(definitions).replace('"#/$defs/', '"#/definitions/')
    values["definitions"] = json.loads(definitions_text)
    return json.dumps(values, indent=2, sort_keys=False) + "\n"


def main(argv: list[str]) -> int:
    text = generated()
    if "--check" in argv:
        if SCHEMA.read_text() != text:
            print(f"{SCHEMA} is not what scripts/values_schema.py writes: run it", file=sys.stderr)
            return 1
        return 0
    SCHEMA.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
