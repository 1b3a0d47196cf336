"""Benchmarks for lore-mcp: a synthetic vault generator and an end-to-end runner.

Run `python bench/run.py` (see the README's Performance section); `bench/generate.py`
also works on its own.
"""
