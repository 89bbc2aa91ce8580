__version__ = "0.1.0"
"""rSIM version (single source: pyproject reads it from here)."""
