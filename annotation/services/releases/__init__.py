"""Releases: versioned, immutable archives of a corrected benchmark (create.py makes one, diff.py
compares two, archive.py writes the zip)."""
