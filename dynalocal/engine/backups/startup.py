"""At start-up with a data directory: the backups on disk back in the catalogue, PITR histories resumed."""
from __future__ import annotations

from dynalocal.engine.backups import catalog, continuous
from dynalocal.engine.context import Context


def resume_backups(ctx: Context) -> None:
    """Load the backup catalogue and each PITR-enabled table's history from the data directory."""
    catalog.load(ctx)
    continuous.resume(ctx)
