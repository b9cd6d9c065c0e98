"""``groupbroker users``: the SCRAM users of a data dir, whether its broker runs or not (the
broker reads the credentials again whenever they change). Kafka's admin clients manage the
same users with AlterUserScramCredentials and DescribeUserScramCredentials."""

from __future__ import annotations

import getpass
import sys

MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def add_parser(commands) -> None:
    users = commands.add_parser("users", help="add, remove and list SCRAM users (stored salted, never the password)")
    users.add_argument("--data-dir", default="./groupbroker-data", help="the broker's data dir (default ./groupbroker-data)")
    actions = users.add_subparsers(dest="action", required=True)
    add = actions.add_parser("add", help="add a user, or change its password")
    add.add_argument("name")
    add.add_argument("--mechanism", choices=MECHANISMS, action="append",
                     help="repeatable (default both)")
    add.add_argument("--password", help="(asked for if not given)")
    add.add_argument("--iterations", type=int, default=4096, help="4096 to 16384 (default 4096)")
    remove = actions.add_parser("remove", help="remove a user's credentials")
    remove.add_argument("name")
    remove.add_argument("--mechanism", choices=MECHANISMS, action="append", help="repeatable (default all)")
    actions.add_parser("list", help="list the users and their mechanisms")


def run(args) -> int:
    from security.credentials import CredentialError, CredentialStore, new_credential
    store = CredentialStore(args.data_dir)
    out, err = sys.stdout, sys.stderr
    try:
        if args.action == "add":
            password = args.password if args.password is not None else getpass.getpass(f"password for {args.name}: ")
            if not args.name or not password:
                err.write("a user needs a name and a password\n")
                return 2
            mechanisms = args.mechanism or list(MECHANISMS)
            store.change(upserts=[(args.name, m, new_credential(m, password, args.iterations)) for m in mechanisms])
            out.write(f"user {args.name}: {', '.join(mechanisms)} ({args.iterations} iterations)\n")
        elif args.action == "remove":
            known = store.users().get(args.name, {})
            mechanisms = [m for m in (args.mechanism or MECHANISMS) if m in known]
            if not mechanisms:
                err.write(f"no such user: {args.name}{' with ' + ', '.join(args.mechanism) if args.mechanism else ''}\n")
                return 1
            store.change(deletions=[(args.name, m) for m in mechanisms])
            out.write(f"user {args.name}: removed {', '.join(mechanisms)}\n")
        else:
            for name, credentials in sorted(store.users().items()):
                out.write(f"{name}\t" + ", ".join(f"{m} ({c.iterations} iterations)"
                                                  for m, c in sorted(credentials.items())) + "\n")
    except (CredentialError, OSError, ValueError) as e:
        err.write(f"groupbroker users: {e}\n")
        return 1
    return 0
