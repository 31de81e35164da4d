"""The run directory: what a run leaves behind and the formats of its files.

Written by the harness, read by the checkers, the report and the tests; it imports nothing
else of Sealcheck. ``history`` (the one writer and reader of ``history.jsonl``), ``files``
(the topic dump, the store export, the manifest of inputs), ``archive`` (the archive of runs:
``runs/<test>/<time>/`` and ``runs/latest``), ``names`` (one name per thing of a run
directory, and the older names still read).
"""
