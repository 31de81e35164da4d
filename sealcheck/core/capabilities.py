"""The optional capabilities a run may offer, by name (:data:`CAPABILITIES`)."""

from __future__ import annotations

#: Optional capabilities a run may offer, and what each is (nemeses, roles and systems under
#: test may require them). The backend offers ``partition``, ``host-directory``,
#: ``host-processes`` and ``broker-lazy-disk``; the system under test offers ``failpoints``,
#: ``spark-cluster``, and where it keeps its store on one, ``lazy-disk`` (and ``power-cut``)
#: or ``database``.
CAPABILITIES = {
    "database": "a database server the system under test keeps its store in (the containers "
    "backend's PostgreSQL)",
    "partition": "network partitions between nodes (each node in its own network namespace)",
    "failpoints": "named failpoints in the system under test",
    "crash-windows": "crash windows of the system under test told from outside (files it "
    "writes, lines it logs): sealcheck.core.windows",
    "commit-boundaries": "commit boundaries of the system under test held from below on its "
    "lazy disk: the files that open and close its crash windows, its store's commits after a "
    "restart (sealcheck.core.windows.boundaries)",
    "lazy-disk": "a store on a filesystem that can lose un-fsynced writes and crash its writer "
    "inside a call (FUSE; the local backend's SQLite store, a job's directory)",
    "power-cut": "the store's lazy disk may drop its un-fsynced writes (a power cut): judged "
    "is durability under power loss, not only the logic",
    "host-processes": "incarnations started as processes of the host from a command (a system "
    "without a container image: the local backend)",
    "host-directory": "a directory of the host that incarnations read and write (local "
    "processes; bind-mounted at the same path into containers)",
    "broker-lazy-disk": "brokers' log directories on filesystems that can lose un-fsynced "
    "writes (FUSE; the local backend)",
    "versions": "two or more versions of the system under test that resume each other's "
    "state and output (declare them in Job.versions)",
    "spark-cluster": "a Spark standalone cluster (master and workers) the system under test's "
    "Spark submits to (--spark cluster)",
}
