"""checkers package."""
