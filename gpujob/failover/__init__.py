"""Run anywhere: when the job's platform cannot serve it, move it to the next `fallback:` entry,
carrying its newest locally verified checkpoint.

    entries   the platforms a job's entries make the read cover, and fixes named inside an entry
              (an entry as a whole job is gpujob.jobfile.fallback, its validation gpujob.spec.fallback,
              and which entry the job runs on now gpujob.project.placement: failover/<job>.json)
    choice    pure: can the current platform serve, and which entry is next (from live quotes)
    move      the move itself: stop through the quiesce, create there, push + verify, launch, resume
    watching  watch's side: auto / ask / never, and the events naming from/to/why/checkpoint/step
"""
