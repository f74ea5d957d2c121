"""Datasets and runs: importing clips, captions and models' ranked predictions, and the counts kept on each dataset."""
