"""Datasets and runs: importing clips, captions and models' ranked predictions, and the counts kept on each dataset.

- imports.py     a dataset file (clips and captions); runs.py a run file
- operations.py  both imports as background operations (an upload, as a job)
- counts.py      the counts kept on each dataset
"""
