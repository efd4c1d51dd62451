"""Paperspace templates resolved at plan time: `machine.template` (a name, an id, or a name written
loosely) is looked up in the OS and custom templates the plan read, with the same rules the create
uses (gpujob.providers.paperspace.templates.pick). An unknown or ambiguous name, and a custom template
in another data center than the machine (PS5: templates are data-center locked), are findings before
anything is created, instead of failures at create. The resolved template is kept on the context, so
PS11 (gpujob.plan.image_findings) judges the template the id stands for."""

from __future__ import annotations

from gpujob.plan.context import JobContext
from gpujob.plan.model import ActionKind, Finding, Severity


def template_findings(ctx: JobContext) -> list[Finding]:
    from gpujob.providers.paperspace.templates import Template, TemplateProblem, pick

    spec = ctx.spec
    ref = spec.machine.template
    every = ctx.live.templates.get(spec.platform)
    if spec.platform != "paperspace" or not ref or spec.state == "absent" or every is None:
        return []
    creates = [
        a
        for a in ctx.actions
        if a.resource_kind == ctx.machine_kind and a.kind in (ActionKind.CREATE, ActionKind.REPLACE)
    ]
    # Only a create uses the template: for a machine that exists it is a warning, not a block.
    severity: Severity = "error" if creates else "warning"
    action_id = creates[0].id if creates else None
    try:
        found = pick(ref, [Template(t.id, t.name, t.kind, t.region) for t in every])
    except TemplateProblem as exc:
        return [
            ctx.finding(
                "template", severity, str(exc), fix=exc.hint, key="machine.template", action_id=action_id
            )
        ]
    ctx.template = found
    region = spec.machine.regions[0].lower() if spec.machine.regions else None
    if found.kind == "custom" and found.region and region and found.region != region:
        return [
            ctx.finding(
                "PS5",
                severity,
                f"custom template {found.name} ({found.id}) lives in {found.region}; the machine is to be made "
                f"in {region}",
                detail="Custom templates, like storage, are locked to the data center they were made in: the "
                "create would not find it there.",
                fix=f"set machine.regions: [{found.region}], or make the template again in {region}",
                key="machine.regions" if spec.machine.regions else "machine.template",
                action_id=action_id,
            )
        ]
    return []
