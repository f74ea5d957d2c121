"""Caption-similarity proxies of a dataset (matrices.py): computing and storing the proxy matrices,
their nDCG reports, the random baseline and the proxy analysis. The proxies themselves are
annotation/analysis/proxies."""
