# Makes and changes a PasarGuard 3.1 database with PasarGuard's own code (its crud
# functions, models and token code), for the import tests. Run with PasarGuard's
# venv, its sources as the working directory, after `alembic upgrade head`
# (PasarGuard's own migrations). `make` creates the users; `change` changes them for
# a second import. Prints what PasarGuard says of every user (its UserResponse) and
# their subscription tokens, as JSON.
import asyncio
import json
import sys
from datetime import UTC, datetime, timedelta

from sqlalchemy import update

from app.db import GetDB
from app.db.crud.admin import create_admin, get_admin
from app.db.crud.general import get_jwt_secret_key
from app.db.crud.user import (create_user, get_user, get_users, modify_user, remove_user,
                              reset_user_data_usage, revoke_user_sub, update_users_status)
from app.db.models import User
from app.models.admin import AdminCreate
from app.models.user import UserCreate, UserModify, UserResponse, UserStatus
from app.utils.jwt import create_subscription_token

GIB = 2**30
DAY = 86400


def proxies(uuid, trojan=None, ss=None):
    p = {"vless": {"id": uuid, "flow": "xtls-rprx-vision"}}
    if trojan:
        p["trojan"] = {"password": trojan}
    if ss:
        p["shadowsocks"] = {"password": ss, "method": "chacha20-ietf-poly1305"}
    return p


async def used(db, name, n):
    await db.execute(update(User).where(User.username == name).values(used_traffic=n))
    await db.commit()


async def make(db):
    owner = await create_admin(db, AdminCreate(username="owner", password="Owner-PW-1234!x", is_sudo=True))
    seller = await create_admin(db, AdminCreate(username="seller", password="Seller-PW-1234!x", is_sudo=False))
    now = datetime.now(UTC)
    users = [
        (owner, UserCreate(
            username="alice", proxy_settings=proxies("9b2a0a3e-1f0c-4c8b-9a51-2c7d0f3e6a11", trojan="alice-trojan"),
            data_limit=50 * GIB, data_limit_reset_strategy="month",
            expire=now + timedelta(days=30), note="paid until January")),
        (seller, UserCreate(
            username="bob", proxy_settings=proxies("0c1d2e3f-4a5b-4c6d-8e7f-901a2b3c4d5e"),
            data_limit=10 * GIB, expire=now + timedelta(days=10))),
        (seller, UserCreate(
            username="carol", proxy_settings=proxies("1d2e3f40-5b6c-4d7e-8f90-a1b2c3d4e5f6"),
            status="on_hold", on_hold_expire_duration=3 * DAY, data_limit=5 * GIB)),
        (owner, UserCreate(
            username="dave", proxy_settings=proxies("2e3f4051-6c7d-4e8f-90a1-b2c3d4e5f607"),
            data_limit=1 * GIB, data_limit_reset_strategy="week")),
        (owner, UserCreate(
            username="erin", proxy_settings=proxies("3f405162-7d8e-4f90-a1b2-c3d4e5f60718"),
            expire=now - timedelta(days=2))),
        (owner, UserCreate(
            username="frank", proxy_settings=proxies("40516273-8e9f-4a01-b2c3-d4e5f6071820",
                                                      ss="frank-shadowsocks-password"))),
    ]
    for admin, create in users:
        await create_user(db, create, [], admin)
    # Usage as PasarGuard's jobs record it: a period's usage, reset (logged), and more.
    await used(db, "alice", 3 * GIB)
    await reset_user_data_usage(db, await get_user(db, "alice"))
    await used(db, "alice", 7 * GIB + 12345)
    await used(db, "dave", 2 * GIB)
    await update_users_status(db, [await get_user(db, "bob")], UserStatus.disabled)
    await update_users_status(db, [await get_user(db, "dave")], UserStatus.limited)
    await update_users_status(db, [await get_user(db, "erin")], UserStatus.expired)
    tokens = {}
    # alice's first link, then a revocation, then her new link.
    await asyncio.sleep(1.1)
    tokens["alice_revoked"] = await create_subscription_token((await get_user(db, "alice")).id)
    await asyncio.sleep(1.1)
    await revoke_user_sub(db, await get_user(db, "alice"))
    await asyncio.sleep(1.1)
    for _, create in users:
        tokens[create.username] = await create_subscription_token((await get_user(db, create.username)).id)
    return tokens


async def change(db):
    alice = await get_user(db, "alice")
    await modify_user(db, alice, UserModify(data_limit=80 * GIB, note="upgraded"))
    await used(db, "alice", (await get_user(db, "alice")).used_traffic + 1000)
    await remove_user(db, await get_user(db, "frank"))
    owner = await get_admin(db, "owner")
    await create_user(db, UserCreate(
        username="grace", proxy_settings=proxies("40516273-8e9f-4a01-b2c3-d4e5f6071829")), [], owner)
    await asyncio.sleep(1.1)
    return {"grace": await create_subscription_token((await get_user(db, "grace")).id)}


async def main():
    async with GetDB() as db:
        tokens = await make(db) if sys.argv[1] == "make" else await change(db)
        users = {}
        for dbuser in (await get_users(db)):
            u = UserResponse.model_validate(dbuser)
            users[u.username] = {
                "id": u.id,
                "status": u.status.value,
                "used_traffic": u.used_traffic,
                "lifetime_used_traffic": u.lifetime_used_traffic,
                "data_limit": u.data_limit,
                "expire": int(u.expire.timestamp()) if u.expire else None,
                "on_hold_expire_duration": u.on_hold_expire_duration,
                "note": u.note,
                "proxy_settings": u.proxy_settings.dict(),
            }
        print(json.dumps({"secret": await get_jwt_secret_key(db), "tokens": tokens, "users": users}))


asyncio.run(main())
