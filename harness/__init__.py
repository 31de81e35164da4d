"""Sealcheck's harness: the engine of one run (:mod:`.run`), runs of runs (:mod:`.campaigns`)
and the command line (:mod:`.cli`)."""
