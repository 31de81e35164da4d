import json
from pathlib import Path

from sealcheck.rundir.history import History


def test_history_load_keeps_acks_and_other_ops_and_skips_a_torn_line(tmp_path: Path) -> None:
    ops = [
        {
            "index": 0,
            "time": 1,
            "process": "w0",
            "type": "invoke",
            "f": "write",
            "value": {"key": "a", "value": "{}", "partition": None, "offset": None},
        },
        {
            "index": 1,
            "time": 2,
            "process": "w0",
            "type": "ok",
            "f": "write",
            "value": {"key": "a", "value": "{}", "partition": 0, "offset": 0},
        },
        {
            "index": 2,
            "time": 3,
            "process": "nemesis",
            "type": "info",
            "f": "kill",
            "value": {"target": "pipeline", "note": "write"},
        },
        {
            "index": 3,
            "time": 4,
            "process": "w0",
            "type": "ok",
            "f": "write",
            "value": {"key": None, "value_hex": "ff", "partition": 1, "offset": 0},
        },
        {
            "index": 4,
            "time": 5,
            "process": "observer",
            "type": "info",
            "f": "uppers",
            "value": {"data": 1},
        },
    ]
    path = tmp_path / "history.jsonl"
    path.write_bytes(b"".join(json.dumps(o).encode() + b"\n" for o in ops) + b'{"index": 5, "ti')
    h = History.load(path)
    assert h.acked.lazy().collect().rows() == [(2, 0, 0, b"a", b"{}"), (4, 1, 0, None, b"\xff")]
    assert h.torn_tail == len(b'{"index": 5, "ti') and h.lines == 5
    assert [op["f"] for op in h.ops] == ["kill", "uppers"]
    assert h.ops[0]["value"]["note"] == "write"
    assert h.seal_times() == ([5], [1])


def test_empty_history(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    path.write_bytes(b"")
    assert History.load(path).acked.lazy().collect().height == 0
