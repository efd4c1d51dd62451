"""Run anywhere: when the job's platform cannot serve it, move it to the next `fallback:` entry,
carrying its newest locally verified checkpoint.

    entries   the spec side: an entry as a whole job (effective_spec) and its validation (entry_problems)
    where     the state side: which entry the job runs on now (failover/<job>.json in the project's store)
    choice    pure: can the current platform serve, and which entry is next (from live quotes)
    move      the move itself: stop through the quiesce, create there, push + verify, launch, resume
    watching  watch's side: auto / ask / never, and the events naming from/to/why/checkpoint/step
"""
