"""The ``sealcheck`` command line: argparse and one module per command family."""
