"""Infrastructure: the parts a test runs on, apart from the run itself.

Local processes and containers, Kafka brokers (local KRaft nodes or containers), the
backends that assemble them (``local``, ``containers``), the node protocol every server
implements, the jar cache, and the cleanup of what dead runs left behind.
"""
