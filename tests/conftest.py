"""Root conftest: shared by every area. Area fixtures live in tests/<area>/conftest.py."""
