"""machine.template -> the template id POST /machines takes.

MachineCreate.templateId is an id such as `t0nspur5` (Paperspace/cli api/openapi.ts "machines-create";
Metaphysic's acceptance tests), while users write a template's name. A name is looked up in the OS
templates (`GET /os-templates?name=`) and the account's custom templates (`GET /custom-templates?name=`).
Accepted, in this order: the exact name, an id, then the name compared without case and with spaces
as hyphens (`ml-in-a-box` for "ML-in-a-Box"), when that matches exactly one template. Anything else is
refused before a single resource is created, with the closest names as suggestions.
"""

from __future__ import annotations

import asyncio
import difflib
import re
from dataclasses import dataclass
from typing import Literal

from gpujob.errors import ProviderError
from gpujob.providers.paperspace import wire
from gpujob.providers.paperspace.client import PLATFORM, PaperspaceClient


@dataclass(frozen=True)
class Template:
    id: str
    name: str
    kind: Literal["os", "custom"]
    region: str | None = None  # custom templates live in one data center (PS5)

    def describe(self) -> str:
        return f"{self.name} ({self.id}, {self.kind} template)"


def slug(text: str) -> str:
    return re.sub(r"\s+", "-", text.strip().lower())


def _all(os_items: list[wire.OsTemplate], custom: list[wire.CustomTemplate]) -> list[Template]:
    return [Template(t.id, t.name, "os") for t in os_items] + [
        Template(t.id, t.name, "custom", wire.normalise_region(t.region)) for t in custom
    ]


async def every_template(client: PaperspaceClient) -> list[Template]:
    """Every OS template and every custom template of the account (what a plan resolves names in)."""
    return _all(*await asyncio.gather(client.list_os_templates(), client.list_custom_templates()))


class TemplateProblem(Exception):
    """machine.template names no template, or more than one: the message and what to write instead."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.hint = hint


def pick(ref: str, every: list[Template]) -> Template:
    """The one template `ref` means among `every`: the exact name, an id, then the name compared without
    case and with spaces as hyphens. Raises TemplateProblem (with the closest names) otherwise."""
    ref = ref.strip()
    for rule in (
        lambda t: t.name == ref,
        lambda t: t.id == ref,
        lambda t: slug(t.name) == slug(ref),
    ):
        found = list(dict.fromkeys(t for t in every if rule(t)))
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            raise TemplateProblem(
                f"machine.template '{ref}' matches {len(found)} templates: "
                + ", ".join(t.describe() for t in found),
                "write the template's id instead (template: " + found[0].id + ")",
            )
    raise TemplateProblem(
        f"machine.template '{ref}' is not an OS or custom template id or name in this account",
        _suggest(ref, every),
    )


async def resolve_template(client: PaperspaceClient, ref: str) -> Template:
    ref = ref.strip()
    named = _all(
        *await asyncio.gather(client.list_os_templates(name=ref), client.list_custom_templates(name=ref))
    )
    exact = [t for t in named if t.name == ref]
    if len(exact) == 1:
        return exact[0]
    # The name filter's matching rules are not documented: read everything before concluding anything.
    try:
        return pick(ref, await every_template(client))
    except TemplateProblem as exc:
        raise ProviderError(str(exc), platform=PLATFORM, call="GET /v1/os-templates", hint=exc.hint) from None


def _suggest(ref: str, every: list[Template]) -> str:
    by_key = {slug(t.name): t for t in every} | {t.id: t for t in every}
    close = difflib.get_close_matches(slug(ref), list(by_key), n=3, cutoff=0.5)
    picks = list(dict.fromkeys(by_key[c] for c in close))
    if picks:
        return "did you mean " + " or ".join(f"'{t.name}' ({t.id})" for t in picks) + "?"
    some = ", ".join(f"'{t.name}' ({t.id})" for t in every[:6])
    return f"templates here include {some}" if some else "this account lists no templates at all"
