"""Executable specifications of the verified systems, one entry per system: `model.journal` (command journal)."""
