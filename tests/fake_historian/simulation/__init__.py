"""A stand-in for Historian's simulation package (tests only; see main.py)."""
