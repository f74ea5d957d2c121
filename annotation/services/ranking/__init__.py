"""Five-caption ranking studies (methodology §7): build them, hand tasks to raters, take their
orderings, report how well each proxy agrees with people.

- study.py        building a study: sampled clips, each proxy's five captions per clip, the tasks;
                  who may rank in it
- leases.py       handing tasks to raters (the queue's invariants are stated there)
- submissions.py  taking a rater's ordering of a task's five captions
- report.py       the human-to-proxy report over the complete tasks
- operations.py   the study's build and its report as background operations (services/operations/)

The proxies themselves are annotation/analysis/proxies; their matrices, services/proxies.
"""
