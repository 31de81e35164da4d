"""The ``prefix`` checker, in four parts: :mod:`~sealcheck.checkers.prefix.index` (one table's
input records indexed), :mod:`~sealcheck.checkers.prefix.sweep` (the smallest per-partition
cut that explains each observed state), :mod:`~sealcheck.checkers.prefix.explain` (why no cut
does, told in offsets) and :mod:`~sealcheck.checkers.prefix.check` (the checker over a run)."""
