# PasarGuard 5.2.1's own Alembic migrations and models, for the import tests:
# `migrate` upgrades a database PasarGuard 3.1.0 made to 5.2.1's schema; `devices`
# gives users a device limit and known devices (HWIDs) through 5.2.1's own models.
# Run with PasarGuard's venv, 5.2.1's sources as the working directory.
#
# 5.2.1 needs Python 3.14, which none of this machine's sources of Python has. Its
# code is loaded into 3.13 by an import hook that compiles 5.2.1's files (and only
# them) as 3.14 would run them: annotations evaluated lazily (here: the
# `annotations` future flag) and `except A, B:` read as `except (A, B):` (PEP 758).
# `app` and `app.db` are bare packages, so their `__init__` (the web app, which
# migrations do not need) does not run.
import __future__
import importlib.machinery
import os
import re
import sys
import types

SRC = os.getcwd()
# 3.14's `except A, B:` is 3.13's `except (A, B):` (PEP 758).
EXCEPT = re.compile(r"^(\s*)except ([\w.]+(?:\s*,\s*[\w.]+)+)\s*:", re.M)


class Loader(importlib.machinery.SourceFileLoader):
    def source_to_code(self, data, path, *, _optimize=-1):
        if not str(path).startswith(SRC):
            return super().source_to_code(data, path, _optimize=_optimize)
        text = EXCEPT.sub(r"\1except (\2):", data.decode("utf-8"))
        flags = __future__.annotations.compiler_flag
        return compile(text, path, "exec", flags=flags, dont_inherit=True, optimize=_optimize)


sys.dont_write_bytecode = True
M = importlib.machinery
sys.path_hooks.insert(0, M.FileFinder.path_hook(
    (M.ExtensionFileLoader, M.EXTENSION_SUFFIXES), (Loader, M.SOURCE_SUFFIXES),
    (M.SourcelessFileLoader, M.BYTECODE_SUFFIXES)))
sys.path_importer_cache.clear()
for name in ("app", "app.db"):
    m = types.ModuleType(name)
    m.__path__ = [os.path.join(SRC, *name.split("."))]
    sys.modules[name] = m
sys.modules["app"].db = sys.modules["app.db"]


def devices():
    """alice: a limit of two devices, and two known; bob: one, no limit."""
    from datetime import UTC, datetime, timedelta

    from sqlalchemy import create_engine, select
    from sqlalchemy.orm import Session

    from app.db.models import User, UserHWID

    engine = create_engine(os.environ["SQLALCHEMY_DATABASE_URL"].replace("+aiosqlite", ""))
    now = datetime.now(UTC)
    with Session(engine) as db:
        users = {u.username: u for u in db.scalars(select(User))}
        users["alice"].hwid_limit = 2
        for user, hwid, os_, version, model, ago in [
            ("alice", "a1-phone", "Android", "15", "Pixel 8", 3),
            ("alice", "a2-laptop", "Windows", "11", None, 1),
            ("bob", "b1-phone", "iOS", "18.1", "iPhone 15", 2),
        ]:
            d = UserHWID(user_id=users[user].id, hwid=hwid, device_os=os_, os_version=version, device_model=model)
            db.add(d)
            db.flush()
            d.created_at = now - timedelta(days=ago)
            d.last_used_at = now - timedelta(hours=ago)
        db.commit()


if sys.argv[1] == "migrate":
    from alembic.config import main

    main(argv=["upgrade", "head"])
else:
    devices()
