"""Resolve a target machine (driver, GPUs, Python, glibc) and requested packages into a pinned, explained stack.

Facts flow one way: target.py builds a Target, solver.py turns it into a Resolution (or an Impossible with the
reason), render.py formats it. Only cli.py and env_cli.py print.
"""
