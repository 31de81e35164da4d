"""Nemeses: the fault injectors of a Sealcheck test (kill, failpoint, pause, broker loss, ...).

Not built yet: the interface, registry and first nemeses arrive with issue 5. Failpoints the
nemeses will arm are defined in :mod:`pipeline.failpoints`.
"""
