"""Bundled knowledge packs (data only). Importable so `importlib.resources` can find them."""
