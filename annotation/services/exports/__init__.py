"""Exports of a pool's labels as files researchers download (labels.py: TREC qrels, FIRE dataset
JSON, CSV / JSON Lines with full provenance)."""
