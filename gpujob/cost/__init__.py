"""The cost engine: the one place that says what gpujob's resources bill and have billed.

Every command that shows money reads it from here, over the same live facts (the GPU actually running,
the state each resource is in, the platform's billing granularity), with the price source and date:

    rates   the money maths: Footprint -> MeterLines (profile tiers, add-ons, GPU quotes)
    live    live resources -> footprints and meters (plan "billing now", status, audit, cost burn)

`gpujob plan`, `status`, `cost`, `audit` and the plan's markdown/JSON all go through these, so the figures
cannot disagree. Imports stay light: nothing here touches the network.
"""
