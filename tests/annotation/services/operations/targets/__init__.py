"""What the meta-test (../test_every_operation.py) needs to start each operation: one module per
area, each with

- TARGETS: operation name -> f(pool, runs, judgment_set) giving (a valid target, its valid
  required parameters) in the test's world (a pool built from runs, a published judgment set);
  a row may create what else it needs (a judge endpoint, a study);
- ENDPOINTS (optional): operation name -> (f(...) giving its start endpoint's URL, request field
  names that differ from the parameter's, f(...) giving other fields the request needs);
- NOT_A_FIELD (optional): (operation, parameter) pairs the endpoint does not take as one field.

An area adds its module here; the meta-test reads every module of this package.
"""
