"""One module per report kind: its parameters, how it is computed and its tables (a `ReportKind`
named KIND). `annotation.services.reports.registry` lists them."""
