"""The engine of one run: spec, build, run, supervise, observe, produce
(:mod:`sealcheck.harness.run.runner`)."""
