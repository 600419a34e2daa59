"""At start-up with a data directory: the backups on disk back in the catalogue, PITR histories resumed,
tables whose restore or import a stop cut off removed (engine.loads)."""
from __future__ import annotations

from dynalocal.engine import loads
from dynalocal.engine.backups import catalog, continuous
from dynalocal.engine.context import Context


def resume_backups(ctx: Context) -> None:
    """Load the backup catalogue and each PITR-enabled table's history from the data directory; have
    half-loaded tables removed before the first request."""
    catalog.load(ctx)
    continuous.resume(ctx)
    ctx.startup.append(lambda: loads.abandon_interrupted(ctx))
