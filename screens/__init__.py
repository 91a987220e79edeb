"""The Textual screens (reached as `pypto_tui.screens` through the packaging link)."""
