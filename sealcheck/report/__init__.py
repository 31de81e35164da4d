"""Presentation: the per-run report (``report.html``), its timeline, and ``sealcheck serve``.

It reads what a run left (``rundir``) and what the checkers concluded; it changes nothing.
"""
