"""curves.csv of a judging simulation (formats.md): one row per (strategy, checkpoint, run)."""
from __future__ import annotations

import io

from annotation.analysis.judging.simulation import CURVES_HEADER, CURVES_NUMERIC_COLUMNS, SimulationResult, curves_rows

from .csv_safe import safe_csv_writer


def curves_csv(result: SimulationResult) -> str:
    buf = io.StringIO()
    # Run names come from uploads: escaped like every CSV the platform writes (formula injection).
    writer = safe_csv_writer(buf, numeric_columns=CURVES_NUMERIC_COLUMNS)
    writer.writeheader(list(CURVES_HEADER))
    for row in curves_rows(result):
        writer.writerow(row)
    return buf.getvalue()
