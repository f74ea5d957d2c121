"""Judgment sets: a dataset's named sets of existing judgments, imported from the benchmarks' own
files or taken from a pool, kept as imported, and scored or analysed like the files themselves.

- imports: reading a file into a set, all or nothing (and the verdict rows pools take);
- from_pool: a set made of a pool's resolved labels;
- storage: where a set's file lives;
- scoring: `evaluate` and `agreement` over a stored set, and the report that keeps the result;
- operations: the four as background jobs (scoring, agreement, a set from a pool, an import).
"""
