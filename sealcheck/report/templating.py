"""The one Jinja environment of ``report/``: templates from ``report/templates/``, rendered
with autoescaping, so every value taken from a run (a name, a checker's message, a path) is
text, never markup."""

from __future__ import annotations

from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

ENV = Environment(
    loader=PackageLoader("sealcheck.report", "templates"),
    autoescape=select_autoescape(["html", "j2"]),
    keep_trailing_newline=True,
)


def render(template: str, **context: Any) -> str:
    """The page ``report/templates/<template>`` rendered with ``context`` (autoescaped)."""
    return ENV.get_template(template).render(**context)
