"""The shared vocabulary, lowest floor: what every other part of Sealcheck names.

* :mod:`~sealcheck.core.nodes`: :class:`Node` (one lifecycle for every server),
  :class:`Incarnation`, :class:`Launch`, :class:`Disk` and :class:`Partitions`;
* :mod:`~sealcheck.core.roles`: :class:`Role` (what a run's nodes of one kind are: how many, how
  an action names one, whether they heal themselves, what they require) and :data:`SUT`;
* :mod:`~sealcheck.core.capabilities`: :data:`CAPABILITIES`, the optional capabilities a run may
  offer and nemeses, roles and systems under test may require.

It imports nothing of Sealcheck; infra, nemeses and the systems' descriptors import it.
"""
