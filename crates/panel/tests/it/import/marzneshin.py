# Makes and changes a Marzneshin 0.7.4 database with Marzneshin's own code (its
# crud functions and models, and its key code for the credentials), for the import
# tests. Run with Marzneshin's venv, its sources as the working directory, after
# `alembic upgrade head` (Marzneshin's own migrations). `make` creates the users;
# `change` changes them for a second import. Prints what Marzneshin says of every
# user (its UserResponse) with the VLESS UUID and Trojan password its nodes derive
# from the user's key, as JSON.
import json
import sys
from types import SimpleNamespace
from datetime import datetime, timedelta

from app.db import GetDB, crud
from app.db.models import User
from app.models.admin import AdminCreate
from app.models.node import NodeCreate
from app.models.user import UserCreate, UserModify, UserResponse
from app.utils.keygen import gen_password, gen_uuid

GIB = 2**30
DAY = 86400


def used(db, name, n):
    # As its usage job records traffic: the period's and the lifetime's counters.
    user = crud.get_user(db, name)
    user.used_traffic += n
    user.lifetime_used_traffic += n
    db.commit()


def make(db):
    owner = crud.create_admin(db, AdminCreate(username="owner", password="owner-pw-1", is_sudo=True))
    seller = crud.create_admin(db, AdminCreate(username="seller", password="seller-pw-1", is_sudo=False))
    now = datetime.utcnow()
    users = [
        (owner, UserCreate(username="alice", expire_strategy="fixed_date", expire_date=now + timedelta(days=30),
                           data_limit=50 * GIB, data_limit_reset_strategy="month", note="paid until January")),
        (seller, UserCreate(username="bob", expire_strategy="fixed_date", expire_date=now + timedelta(days=10),
                            data_limit=10 * GIB)),
        (seller, UserCreate(username="carol", expire_strategy="start_on_first_use", usage_duration=3 * DAY,
                            data_limit=5 * GIB)),
        (owner, UserCreate(username="dave", expire_strategy="never", data_limit=1 * GIB,
                           data_limit_reset_strategy="week")),
        (owner, UserCreate(username="erin", expire_strategy="fixed_date", expire_date=now - timedelta(days=2))),
        (owner, UserCreate(username="frank", expire_strategy="never")),
    ]
    for admin, create in users:
        crud.create_user(db, create, admin=admin)
    used(db, "alice", 3 * GIB)
    crud.reset_user_data_usage(db, crud.get_user(db, "alice"))
    used(db, "alice", 7 * GIB + 12345)
    used(db, "dave", 2 * GIB)
    # Disabled as its route disables a user.
    bob = crud.get_user(db, "bob")
    bob.enabled = False
    db.commit()
    links = {"alice_revoked": crud.get_user(db, "alice").key}
    crud.revoke_user_sub(db, crud.get_user(db, "alice"))
    # A node (besides the "local" one Marzneshin's first migration makes) and the
    # inbounds it reports, as Marzneshin records them.
    node = crud.create_node(db, NodeCreate(name="de-1", address="127.0.0.1", port=62051))
    crud.ensure_node_inbounds(db, [
        SimpleNamespace(tag=tag, config=json.dumps(config)) for tag, config in [
            ("VLESS TCP REALITY", {"tag": "VLESS TCP REALITY", "protocol": "vless", "port": 443,
                                   "network": "tcp", "tls": "reality", "sni": ["example.com"]}),
            ("VMess WS", {"tag": "VMess WS", "protocol": "vmess", "port": 8080, "network": "ws",
                          "tls": "none", "path": "/ws"}),
        ]
    ], node.id)
    # A user removed, as its route removes one: kept without a name.
    crud.create_user(db, UserCreate(username="gone", expire_strategy="never"), admin=owner)
    crud.remove_user(db, crud.get_user(db, "gone"))
    return links


def change(db):
    alice = crud.get_user(db, "alice")
    crud.update_user(db, alice, UserModify(username="alice", data_limit=80 * GIB, note="upgraded"))
    used(db, "alice", 1000)
    crud.remove_user(db, crud.get_user(db, "frank"))
    owner = crud.get_admin(db, "owner")
    crud.create_user(db, UserCreate(username="grace", expire_strategy="never"), admin=owner)
    return {}


with GetDB() as db:
    links = make(db) if sys.argv[1] == "make" else change(db)
    users = {}
    for dbuser in db.query(User).filter(User.removed == False).all():  # noqa: E712
        u = UserResponse.model_validate(dbuser)
        users[u.username] = {
            "key": u.key,
            "enabled": u.enabled,
            "is_active": u.is_active,
            "used_traffic": u.used_traffic,
            "lifetime_used_traffic": u.lifetime_used_traffic,
            "data_limit": u.data_limit,
            "expire_strategy": u.expire_strategy.value,
            "expire_date": int((u.expire_date - datetime(1970, 1, 1)).total_seconds()) if u.expire_date else None,
            "usage_duration": u.usage_duration,
            "note": u.note,
            "vless_uuid": gen_uuid(u.key),
            "trojan_password": gen_password(u.key),
        }
    print(json.dumps({"links": links, "users": users}))
