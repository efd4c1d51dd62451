"""The machine format: exactly Plan.model_dump(mode="json"), pretty-printed, keys in model order.

`format_version` is part of the plan; schemas/plan.schema.json (python -m gpujob.schemas) documents
every field. `gpujob apply plan.json` reads this back with Plan.model_validate_json.
"""

from __future__ import annotations

import json

from gpujob.plan.model import Plan


def render_json(plan: Plan) -> str:
    return json.dumps(plan.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"
