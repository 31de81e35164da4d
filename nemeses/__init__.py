"""nemeses package."""
