"""`gpujob watch`: the reconcile loop that keeps jobs true to their files unattended (loop.py), what it
may do on its own (policy.py), its limits (limits.py), its per-job ledger of money, GPU time and
goodput (ledger.py), background pulls (pulls.py) and events (events.py, notify.py)."""
