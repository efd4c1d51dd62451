"""Whether the teardown gate has to reach a stopped machine at all (evidence.py), and what it says and
allows when it cannot reach one (unreachable.py)."""
