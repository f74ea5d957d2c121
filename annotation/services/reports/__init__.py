"""Reports as a registry: each kind declared once in kinds/ (parameters, compute, tables; kind.py says
how), listed in registry.py; create.py creates a pool report or starts its job, store.py writes every
kind's Report row with its parameters and library versions, tables.py lays stored results out."""
