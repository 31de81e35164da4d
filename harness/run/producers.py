"""The workload's producers: seeded upserts written with acks=all and idempotence, every
send recorded in the history (invoke, then fail / info there, or ok as a row of
``acks.arrows`` beside it: :meth:`sealcheck.rundir.history_writer.HistoryWriter.ack`).

Each producer process ``w<i>`` is a thread with its own confluent-kafka producer and its own
seeded record stream, paced to its share of the target rate. A send whose outcome is unknown
(timed out, broker gone, still queued at shutdown) is ``info``, never ``fail``: only errors
librdkafka raises before anything reaches a broker are definite failures.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from sealcheck.core.records import NewRecord
from sealcheck.harness.run.config import WorkloadConfig
from sealcheck.harness.run.workload import MakeRecord, writer_records
from sealcheck.rundir.history import encode_bytes
from sealcheck.rundir.history_writer import HistoryWriter

#: Errors raised before a record can have reached a broker: the write definitely failed.
DEFINITE = frozenset(
    {
        KafkaError.MSG_SIZE_TOO_LARGE,
        KafkaError._INVALID_ARG,
        KafkaError._UNKNOWN_TOPIC,
        KafkaError._UNKNOWN_PARTITION,
    }
)


def producer_config(bootstrap: str, logger: logging.Logger | None = None) -> dict[str, Any]:
    """acks=all with idempotence: an acknowledged write is on every in-sync replica.
    librdkafka's own log lines go to ``logger`` (the run's ``logs/producers.log``)."""
    extra: dict[str, Any] = {} if logger is None else {"logger": logger}
    return {
        **extra,
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "enable.idempotence": True,
        "linger.ms": 5,
        "message.timeout.ms": 60_000,
        "socket.connection.setup.timeout.ms": 5_000,
        "reconnect.backoff.max.ms": 1_000,
    }


@dataclass
class _Writer:
    process: str
    seed: int
    rate: float
    thread: threading.Thread | None = None
    pending: dict[int, dict[str, Any]] = field(default_factory=dict)


class Producers:
    """``concurrency`` producer threads writing one seeded stream each to ``topic``."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        workload: WorkloadConfig,
        seeds: list[int],
        history: HistoryWriter,
        log_path: Path | None = None,
        make: MakeRecord | None = None,
    ) -> None:
        self.bootstrap, self.topic, self.workload, self.history = (
            bootstrap,
            topic,
            workload,
            history,
        )
        #: the descriptor's ``record(draw)`` (None: Sealcheck's own records)
        self.make = make
        #: the recorded sample every writer replays, read once (None: records drawn)
        self.sample = workload.recorded()
        share = workload.rate / len(seeds)
        self._writers = [_Writer(f"w{i}", s, share) for i, s in enumerate(seeds)]
        self._stop = threading.Event()
        self.errors: list[str] = []
        self.logger: logging.Logger | None = None
        if log_path is not None:  # one logger per run, writing to the run's log file
            self.logger = logging.getLogger(f"sealcheck.producers.{log_path}")
            self.logger.propagate = False
            self.logger.setLevel(logging.INFO)
            if not self.logger.handlers:
                handler = logging.FileHandler(log_path)
                handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
                self.logger.addHandler(handler)

    def start(self) -> None:
        """Start every producer thread."""
        for w in self._writers:
            w.thread = threading.Thread(target=self._run, args=(w,), name=w.process, daemon=True)
            w.thread.start()

    def stop(self, flush_timeout_s: float = 30.0) -> None:
        """Stop sending, wait for outstanding acknowledgements, record the rest as ``info``."""
        self._stop.set()
        for w in self._writers:
            if w.thread is not None:
                w.thread.join(flush_timeout_s + 10)
        if self.logger is not None:
            for handler in list(self.logger.handlers):
                handler.close()
                self.logger.removeHandler(handler)

    def _run(self, w: _Writer) -> None:
        try:
            self._produce(w)
        except Exception as exc:  # recorded; the run goes on and the checkers judge what got in
            self.errors.append(f"{w.process}: {type(exc).__name__}: {exc}")

    def _produce(self, w: _Writer) -> None:
        producer = Producer(producer_config(self.bootstrap, self.logger))
        stream = writer_records(w.seed, self.workload.mix(), w.process, self.make, self.sample)
        start = time.monotonic()
        sent = 0
        while not self._stop.is_set():
            due = start + sent / w.rate
            now = time.monotonic()
            if due > now:
                producer.poll(min(due - now, 0.05))
                continue
            _, record = next(stream)
            self._send(w, producer, sent, record)
            sent += 1
            producer.poll(0)
        left = producer.flush(30.0)
        for op in list(w.pending.values()):
            self.history.append(w.process, "info", "write", {**op, "error": "unknown at shutdown"})
        w.pending.clear()
        if left:
            self.errors.append(f"{w.process}: {left} records still queued at shutdown")

    def _send(self, w: _Writer, producer: Producer, n: int, record: NewRecord) -> None:
        key, value = record.key, record.value
        op = {**encode_bytes("key", key), **encode_bytes("value", value)}
        self.history.append(w.process, "invoke", "write", op)
        w.pending[n] = op

        def delivered(err: KafkaError | None, msg: Any) -> None:
            done = w.pending.pop(n, op)
            if err is None:  # a row of acks.arrows, beside the history
                self.history.ack(w.process, key, value, msg.partition(), msg.offset())
            else:
                kind = "fail" if err.code() in DEFINITE else "info"
                self.history.append(w.process, kind, "write", {**done, "error": err.name()})

        try:
            headers: list[tuple[str, str | bytes | None]] | None = list(record.headers) or None
            if record.partition is None:  # the producer's: by the key's hash
                producer.produce(
                    self.topic, value=value, key=key, headers=headers, on_delivery=delivered
                )
            else:
                producer.produce(
                    self.topic, value=value, key=key, headers=headers, on_delivery=delivered,
                    partition=record.partition,
                )  # fmt: skip
        except BufferError:
            w.pending.pop(n, None)
            self.history.append(w.process, "fail", "write", {**op, "error": "local queue full"})
            producer.poll(0.1)
        except KafkaException as exc:
            w.pending.pop(n, None)
            err = exc.args[0]
            kind = "fail" if err.code() in DEFINITE else "info"
            self.history.append(w.process, kind, "write", {**op, "error": err.name()})
