"""`gpujob rehearse`: a preemption drill that proves a job resumes, before a real preemption does.

drill.py interrupts the live job the way its platform would (the simulator's own preemption there; a stop
through the API on a real platform, after asking), lets watch's recovery run, and proves the new run's
first step is at or past the newest checkpoint pulled and verified just before. record.py keeps the
result (rehearsals/<job>.json in the project's store) and gives the plan its line about it.
"""
