"""The models, one tree (#39 step 3, in progress; ARCHITECTURE.md has the plan):
``runtime/``, the in-process model a running program's samples go through.

Importing this package imports nothing: the embedded model loads ``model.runtime`` inside
profiled programs.
"""
