# Makes and changes a Marzban 0.8.4 database with Marzban's own code (its crud
# functions, models and token code), for the import tests. Run with Marzban's venv,
# its sources as the working directory, after `alembic upgrade head` (Marzban's own
# migrations). `make` creates the users; `change` changes them for a second import;
# `vision` gives alice XTLS Vision and says what Marzban gives REALITY's clients.
# Prints what Marzban says of every user (its UserResponse) and their subscription
# tokens, as JSON.
import json
import sys
import time
from datetime import datetime, timedelta

from app.db import GetDB, crud
from app.models.admin import AdminCreate
from app.models.user import (UserCreate, UserDataLimitResetStrategy, UserModify,
                             UserResponse, UserStatus, UserStatusCreate)
from app.utils.jwt import create_subscription_token

GIB = 2**30
DAY = 86400


def vless(uuid, flow=""):
    return {"vless": {"id": uuid, "flow": flow}}


def make(db):
    owner = crud.create_admin(db, AdminCreate(username="owner", password="owner-pw-1", is_sudo=True))
    seller = crud.create_admin(db, AdminCreate(username="seller", password="seller-pw-1", is_sudo=False))
    now = datetime.utcnow()
    users = [
        ("alice", owner, UserCreate(
            username="alice",
            proxies={**vless("9b2a0a3e-1f0c-4c8b-9a51-2c7d0f3e6a11"), "trojan": {"password": "alice-trojan"}},
            data_limit=50 * GIB, data_limit_reset_strategy=UserDataLimitResetStrategy.month,
            expire=int((now + timedelta(days=30)).timestamp()), note="paid until January")),
        ("bob", seller, UserCreate(
            username="bob", proxies=vless("0c1d2e3f-4a5b-4c6d-8e7f-901a2b3c4d5e"),
            data_limit=10 * GIB, expire=int((now + timedelta(days=10)).timestamp()))),
        ("carol", seller, UserCreate(
            username="carol", proxies=vless("1d2e3f40-5b6c-4d7e-8f90-a1b2c3d4e5f6"),
            status=UserStatusCreate.on_hold, on_hold_expire_duration=3 * DAY,
            data_limit=5 * GIB)),
        ("dave", owner, UserCreate(
            username="dave", proxies=vless("2e3f4051-6c7d-4e8f-90a1-b2c3d4e5f607"),
            data_limit=1 * GIB, data_limit_reset_strategy=UserDataLimitResetStrategy.week)),
        ("erin", owner, UserCreate(
            username="erin", proxies=vless("3f405162-7d8e-4f90-a1b2-c3d4e5f60718"),
            expire=int((now - timedelta(days=2)).timestamp()))),
        ("frank", owner, UserCreate(
            username="frank", proxies={"shadowsocks": {"password": "frank-ss", "method": "chacha20-ietf-poly1305"}})),
    ]
    tokens = {}
    for name, admin, create in users:
        dbuser = crud.create_user(db, create, admin=admin)
    # Usage as Marzban's jobs record it: a period's usage, reset (logged), and more.
    alice = crud.get_user(db, "alice")
    alice.used_traffic = 3 * GIB
    db.commit()
    crud.reset_user_data_usage(db, alice)
    alice.used_traffic = 7 * GIB + 12345
    dave = crud.get_user(db, "dave")
    dave.used_traffic = 2 * GIB
    db.commit()
    crud.update_user_status(db, crud.get_user(db, "bob"), UserStatus.disabled)
    crud.update_user_status(db, dave, UserStatus.limited)
    crud.update_user_status(db, crud.get_user(db, "erin"), UserStatus.expired)
    # alice's first link, then a revocation (new credentials too), then her new link.
    time.sleep(1.1)
    tokens["alice_revoked"] = create_subscription_token("alice")
    time.sleep(1.1)
    crud.revoke_user_sub(db, crud.get_user(db, "alice"))
    time.sleep(1.1)
    for name, _, _ in users:
        tokens[name] = create_subscription_token(name)
    return tokens


def change(db):
    alice = crud.get_user(db, "alice")
    crud.update_user(db, alice, UserModify(data_limit=80 * GIB, note="upgraded"))
    alice = crud.get_user(db, "alice")
    alice.used_traffic += 1000
    db.commit()
    crud.remove_user(db, crud.get_user(db, "frank"))
    owner = crud.get_admin(db, "owner")
    crud.create_user(db, UserCreate(username="grace", proxies=vless("40516273-8e9f-4a01-b2c3-d4e5f6071829")), admin=owner)
    time.sleep(1.1)
    return {"grace": create_subscription_token("grace")}


def vision(db):
    # alice's VLESS with XTLS Vision, as Marzban's own modify sets it; and what
    # Marzban gives clients of its REALITY inbounds (the public key it derives with
    # Xray, the short ids).
    from app.models.proxy import ProxyTypes
    from app.xray import config as xray_config
    alice = crud.get_user(db, "alice")
    proxies = {p.type: p.settings for p in alice.proxies}
    proxies[ProxyTypes.VLESS] = {**proxies[ProxyTypes.VLESS], "flow": "xtls-rprx-vision"}
    crud.update_user(db, alice, UserModify(proxies=proxies))
    reality = {tag: {"pbk": i["pbk"], "sids": i["sids"]}
               for tag, i in xray_config.inbounds_by_tag.items() if i.get("tls") == "reality"}
    return {"reality": reality}


PHASES = {"make": make, "change": change, "vision": vision}

with GetDB() as db:
    tokens = PHASES[sys.argv[1]](db)
    users = {}
    for dbuser in crud.get_users(db):
        u = UserResponse.model_validate(dbuser)
        users[u.username] = {
            "status": u.status.value,
            "used_traffic": u.used_traffic,
            "lifetime_used_traffic": u.lifetime_used_traffic,
            "data_limit": u.data_limit,
            "expire": u.expire,
            "on_hold_expire_duration": u.on_hold_expire_duration,
            "note": u.note,
            "proxies": {k.value if hasattr(k, "value") else str(k): v.model_dump(mode="json") for k, v in u.proxies.items()},
        }
    print(json.dumps({"secret": crud.get_jwt_secret_key(db), "tokens": tokens, "users": users}))
