"""``sealcheck serve``: browse stored runs — an index coloured by verdict, linking to each
run's report and files. Listens on loopback only."""

from __future__ import annotations

import html
import http.server
import urllib.parse
from functools import partial
from pathlib import Path

from report.report import COLORS, WORDS
from rundir.archive import list_runs


def index_html(store: Path) -> str:
    """The listing page of every run under ``store``, newest first."""
    rows = []
    for r in list_runs(store):
        rel = urllib.parse.quote(str(r.path.relative_to(store)))
        color = COLORS.get(r.valid, COLORS[None])
        word = WORDS.get(r.valid, "DIED") if r.valid is not None else "NO RESULT"
        rows.append(
            f"<tr><td style='background:{color};color:#fff;font-weight:700'>{word}</td>"
            f"<td><a href='/{rel}/report.html'>{html.escape(r.name)} / "
            f"{html.escape(r.started)}</a></td><td>{r.seed}</td><td>{r.duration_s or ''}</td>"
            f"<td><a href='/{rel}/'>files</a></td></tr>"
        )
    body = (
        "".join(rows) or "<tr><td colspan=5>no runs yet: try <code>sealcheck run</code></td></tr>"
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>sealcheck runs</title>"
        "<style>body{font:14px system-ui;margin:24px}td,th{border:1px solid #d0d7de;"
        "padding:4px 8px}table{border-collapse:collapse}</style></head><body>"
        f"<h1>sealcheck runs in {html.escape(str(store))}</h1><table><tr><th>verdict</th>"
        f"<th>run</th><th>seed</th><th>took (s)</th><th></th></tr>{body}</table></body></html>"
    )


class _Handler(http.server.SimpleHTTPRequestHandler):
    store: Path

    def do_GET(self) -> None:
        if self.path in ("/", "/index.html"):
            page = index_html(self.store).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)
            return
        super().do_GET()


def make_server(store: Path, port: int) -> http.server.ThreadingHTTPServer:
    """A server for ``store`` on 127.0.0.1:``port`` (0 picks a free port)."""
    handler = type("Handler", (_Handler,), {"store": store})
    return http.server.ThreadingHTTPServer(
        ("127.0.0.1", port), partial(handler, directory=str(store))
    )
