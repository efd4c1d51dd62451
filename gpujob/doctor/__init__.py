"""`gpujob doctor`: a read-only check of every API read gpujob makes, against the account in the
environment. See checks.py (the calls), drift.py (the strict shape comparison), report.py (output)."""
