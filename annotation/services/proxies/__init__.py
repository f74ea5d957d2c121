"""Caption-similarity proxies of a dataset: computing and storing the proxy matrices, their nDCG
reports, the random baseline and the proxy analysis (matrices.py), and the three background
operations that start them as jobs (operations.py). The proxies themselves are
annotation/analysis/proxies; the five-caption ranking studies, services/ranking."""
