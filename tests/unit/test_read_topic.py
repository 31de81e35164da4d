"""``sealcheck.infra.topic.read_topic`` against a scripted consumer (the real broker is in
``tests/integration/test_topic_dump.py``): the limit is on a stall, not on the whole dump;
partitions come out in order whatever order they are asked and delivered in; each partition
becomes several Arrow chunks; a partition is paused once read."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaError

from sealcheck.infra import topic as topic_mod
from sealcheck.rundir.files import TopicRecord, topic_records


class _Msg:
    def __init__(self, p: int, o: int, err: KafkaError | None = None) -> None:
        self.p, self.o, self.err = p, o, err

    def partition(self) -> int:
        return self.p

    def offset(self) -> int:
        return self.o

    def error(self) -> KafkaError | None:
        return self.err

    def key(self) -> bytes:
        return b"k%d" % self.o

    def value(self) -> bytes:
        return b"%d/%d" % (self.p, self.o)

    def headers(self) -> list[tuple[str, bytes]] | None:
        return [("at", b"%d" % self.o)] if self.o % 2 else None


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now


def _script(
    monkeypatch: pytest.MonkeyPatch, batches: list[list[_Msg]], seconds_per_consume: float
) -> tuple[_Clock, list[int]]:
    """Make ``read_topic``'s consumer deliver ``batches`` (then nothing), each ``consume``
    taking ``seconds_per_consume`` on a fake clock; the partitions it paused."""
    clock, paused = _Clock(), []
    feed: Iterator[list[_Msg]] = iter(batches)

    class Consumer:
        def __init__(self, conf: dict[str, Any]) -> None:
            assert conf["max.partition.fetch.bytes"] == 16 << 20

        def assign(self, parts: list[Any]) -> None:
            pass

        def consume(self, n: int, timeout: float) -> list[_Msg]:
            clock.now += seconds_per_consume
            return next(feed, [])

        def pause(self, parts: list[Any]) -> None:
            paused.extend(tp.partition for tp in parts)

        def close(self) -> None:
            pass

    monkeypatch.setattr(topic_mod, "Consumer", Consumer)
    monkeypatch.setattr(topic_mod, "time", clock)
    return clock, paused


def test_a_slow_topic_is_read_whole_however_long_it_takes(monkeypatch: pytest.MonkeyPatch) -> None:
    # a record, then nothing, 40 times, 5 s per consume: 400 s in all, eight times the stall
    # limit, never more than 5 s without a record
    batches = [b for i in range(40) for b in ([_Msg(i % 2, i // 2)], [])]
    clock, _ = _script(monkeypatch, batches, seconds_per_consume=5.0)
    table = topic_mod.read_topic("b", "t", {0: 20, 1: 20}, stall_s=50.0)
    assert table.num_rows == 40 and clock.now == pytest.approx(395.0)


def test_a_stall_fails_naming_the_partitions_still_short(monkeypatch: pytest.MonkeyPatch) -> None:
    clock, _ = _script(monkeypatch, [[_Msg(0, 0), _Msg(1, 0)]], seconds_per_consume=1.0)
    with pytest.raises(TimeoutError) as err:
        topic_mod.read_topic("b", "t", {0: 1, 1: 3}, stall_s=10.0)
    assert "nothing arrived for 10s" in str(err.value) and "1: 1 of 3" in str(err.value)
    assert "0: " not in str(err.value).split("end: ")[1]  # partition 0 was read
    assert clock.now > 10.0


def test_partitions_come_out_in_order_in_several_chunks_each_paused_once_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(topic_mod, "_CHUNK", 3)
    # delivered interleaved, partition 2 first; a record seen again; records past an end
    batches = [
        [_Msg(2, o) for o in range(4)] + [_Msg(0, 0), _Msg(0, 1)],
        [_Msg(1, 0), _Msg(0, 1), _Msg(0, 2), _Msg(2, 4), _Msg(0, 3)],
        [_Msg(0, 4), _Msg(0, 5), _Msg(0, 6), _Msg(1, 1)],
    ]
    _, paused = _script(monkeypatch, batches, seconds_per_consume=0.1)
    table = topic_mod.read_topic("b", "t", {2: 4, 1: 2, 0: 7})
    assert topic_records(table) == [
        TopicRecord(p, o, b"k%d" % o, b"%d/%d" % (p, o), (("at", b"%d" % o),) if o % 2 else ())
        for p, end in ((0, 7), (1, 2), (2, 4))
        for o in range(end)
    ]  # each record's headers kept, in order
    assert table.column("offset").num_chunks > 3  # partitions 0 and 2 split into chunks
    assert sorted(paused) == [0, 1, 2]


def test_a_partition_ending_where_no_record_is_ends_at_the_consumers_end_event(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    eof = KafkaError(KafkaError._PARTITION_EOF)
    # partition 0's offset 2 holds a transaction marker: the consumer's end event comes at 3;
    # partition 1's log ends below the end asked for (an end event at 0, not at 1): it stalls
    batches = [[_Msg(0, 0), _Msg(0, 1), _Msg(0, 3, eof)], [_Msg(1, 0, eof)]]
    _, paused = _script(monkeypatch, batches, seconds_per_consume=0.1)
    with pytest.raises(TimeoutError, match="1: 0 of 1"):
        topic_mod.read_topic("b", "t", {0: 3, 1: 1}, stall_s=1.0)
    assert paused == [0]


def test_an_offset_no_longer_in_the_log_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    gone = KafkaError(KafkaError._AUTO_OFFSET_RESET)
    _script(monkeypatch, [[_Msg(0, 0), _Msg(1, 0, gone)]], seconds_per_consume=0.1)
    with pytest.raises(RuntimeError, match="offset 0 of partition 1 is no longer in the log"):
        topic_mod.read_topic("b", "t", {0: 1, 1: 5})
