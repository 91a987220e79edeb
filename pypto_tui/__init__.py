"""pypto-tui: a terminal kernel-design assistant for PyPTO.

The package root stays import-free on purpose: every one-shot command pays for what this file
imports, and the CLI must start about as fast as numpy does.
"""

__version__ = "0.1.0"
