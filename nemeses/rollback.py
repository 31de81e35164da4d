"""``rollback``: upgrade the system under test and roll it back, in turn (issue 53).

Teams roll back a release that misbehaves: version N runs again on the checkpoint and tables
version N+1 wrote, with whatever N+1 added to them (a column, rows of its making). This nemesis
alternates, one change per window it is given: the first two versions' upgrade (N to N+1),
then the rollback (N+1 to N), then the upgrade again, and so on — each stopped and started as
:class:`~sealcheck.nemeses.upgrade.Upgrade` does (SIGTERM, SIGKILL or a kill inside a crash
window, seeded), with the same evidence. A run with an odd number of its windows ends on N+1,
an even one on N; the last state is judged from the descriptor's one ``effect`` either way.
"""

from __future__ import annotations

from collections.abc import Mapping

from sealcheck.nemeses.api import Mark
from sealcheck.nemeses.upgrade import Upgrade


class Rollback(Upgrade):
    """Upgrade to the second version, roll back to the first, in turn."""

    name = "rollback"

    @property
    def marks(self) -> Mapping[str, Mark]:
        """Instants on the upgrade lane, labelled with the version each starts."""
        return {
            **super().marks,
            "rollback": Mark("instant", "rollback", group="upgrade", which=("to",)),
        }

    def next_pair(self) -> tuple[str, str] | None:
        """The first two versions, forward on even actions and back on odd ones."""
        if len(self.versions) < 2:
            return None
        old, new = self.versions[0], self.versions[1]
        return (old, new) if self.planned % 2 == 0 else (new, old)

    def verb(self, old: str, new: str) -> str:
        """``upgrade`` forward, ``rollback`` back."""
        return "rollback" if self.versions.index(new) < self.versions.index(old) else "upgrade"
