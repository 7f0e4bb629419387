"""``dpdesk project new|info|rebind|settle|policy|prior|look-ahead``: create a project file, describe it, accept
changed source data, copy its write-ahead log into it, show or set the spend policy, the known-bounds prior
and the batch plans' look-ahead."""

from __future__ import annotations

import argparse

from dpdesk.engine.budget.mode import MODES, mode_words, spent_words


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "project",
        help="create, describe or re-bind a project file (*.dpdesk)",
        description="Create, describe or re-bind a dpdesk project file.",
    )
    sub = p.add_subparsers(dest="project_command", metavar="ACTION", parser_class=type(p))
    _register_new(sub)
    info = sub.add_parser("info", help="describe a project (read-only)")
    info.add_argument("path", metavar="PATH")
    info.add_argument("--json", action="store_true", help="print one JSON object")
    rebind = sub.add_parser("rebind", help="accept the source's current data (recorded in the ledger)")
    rebind.add_argument("path", metavar="PATH")
    settle = sub.add_parser(
        "settle",
        help="copy what the write-ahead log (PATH-wal) holds into the project file (after a full disk)",
    )
    settle.add_argument("path", metavar="PATH")
    _register_settings(sub)
    p.set_defaults(func=run, _parser=p)


def _register_new(sub: argparse._SubParsersAction) -> None:
    from dpdesk.commands.assess import add_pace_argument
    from dpdesk.commands.cube import add_source_arguments

    new = sub.add_parser(
        "new",
        help="create a project bound to a data source",
        description="Create a project file bound to a data source. Nothing is written on error.",
    )
    new.add_argument("path", metavar="PATH", help="the project file to create (never overwritten)")
    new.add_argument("--schema", required=True, metavar="S", help="schema JSON file (DESIGN §6)")
    new.add_argument(
        "--source",
        required=True,
        metavar="TABLE",
        help="the data: a CSV/Parquet/Excel/SQLite file, a postgresql:// URL, or with --spark a "
        "Spark table or path",
    )
    add_source_arguments(new)
    new.add_argument(
        "--budget",
        required=True,
        type=float,
        metavar="B",
        help="total privacy loss ε (> 0); under zCDP with --delta, the total (ε, δ)",
    )
    new.add_argument(
        "--accounting",
        choices=("pure", "zcdp"),
        default="pure",
        help=f"how privacy loss adds up, fixed for the project's life — {MODES['pure']} "
        f"{MODES['zcdp']} (default: pure)",
    )
    new.add_argument(
        "--delta",
        type=float,
        metavar="D",
        help="with --accounting zcdp: the δ of the total (ε, δ), e.g. 1e-6 (the largest cell's ρ is "
        "converted to ε at this δ)",
    )
    new.add_argument(
        "--delta-cap",
        type=float,
        default=0.0,
        metavar="D",
        help="the largest δ any cell may accumulate over (ε, δ) releases, fixed for the project's life "
        "(default 0: pure ε-DP releases only)",
    )
    new.add_argument(
        "--privacy-unit",
        metavar="COLUMN",
        help="protect people, not rows: the rows sharing a value of COLUMN are one person (needs "
        "--max-rows; default: one row is one person). The schema file's privacy_unit says the same",
    )
    new.add_argument(
        "--max-rows",
        type=int,
        metavar="K",
        help="with --privacy-unit: the cube keeps at most K rows of each person (chosen in a keyed, "
        "reproducible order; see `dpdesk cube --rows-per-person COLUMN` to choose K)",
    )
    new.add_argument(
        "--one-row-per-cell",
        action="store_true",
        help="with --privacy-unit: also at most one row of each person in each cell",
    )
    new.add_argument("--name", metavar="N", help="project name (default: the file's stem)")
    new.add_argument(
        "--test-project",
        action="store_true",
        help="mark as a test project (allows the seeded, non-secure sampler; never for real data)",
    )
    add_pace_argument(new)


def _register_settings(sub: argparse._SubParsersAction) -> None:
    """``policy``, ``prior`` and ``look-ahead``: show or set the curator's answering settings."""
    from dpdesk.commands.assess import add_pace_argument, add_table_size_argument
    from dpdesk.commands.batch import share_argument

    policy = sub.add_parser(
        "policy",
        help="show or set the spend policy (budget pacing)",
        description="Show the project's spend policy, or set it: with --pace FLOOR CAP every fresh answer "
        "spends at least FLOOR of what its cells can still pay, and a request needing more than "
        "CAP of it is declined; --greedy spends exactly what each request needs (the default).",
    )
    policy.add_argument("path", metavar="PATH")
    add_pace_argument(policy)
    policy.add_argument(
        "--greedy", action="store_true", help="clear the policy: spend exactly what a request needs"
    )
    prior = sub.add_parser(
        "prior",
        help="show or set the known-bounds prior (a declared table size)",
        description="Show the project's prior, or declare a public upper bound N on the number of records: "
        "every count then lies in [0, N·max Q] and inferences use that bounded prior with "
        "highest-density intervals. --flat goes back to the flat prior (the default). N is "
        "declared by the curator (e.g. the population size), never read off the data.",
    )
    prior.add_argument("path", metavar="PATH")
    add_table_size_argument(prior)
    prior.add_argument("--flat", action="store_true", help="withdraw the declared table size: the flat prior")
    ahead = sub.add_parser(
        "look-ahead",
        help="show or set the batch plans' look-ahead",
        description="Show the project's look-ahead, or set it: with --share S every batch plan (dpdesk batch, "
        "Plan batch… in the app) first measures, on cells nobody has paid for yet, a strategy for the "
        "queue's requests (their queries and accuracies: public inputs only), spending the share S of "
        "those cells' room at once, so that later requests on them are answered from history; --off "
        "plans each batch alone (the default).",
    )
    ahead.add_argument("path", metavar="PATH")
    ahead.add_argument(
        "--share", type=share_argument, metavar="S", help="fraction in (0, 1] of the unspent cells' room"
    )
    ahead.add_argument("--off", action="store_true", help="plan each batch alone")


def run(args: argparse.Namespace) -> int:
    action = getattr(args, "project_command", None)
    if action == "new":
        return _new(args)
    if action == "info":
        return _info(args)
    if action == "rebind":
        return _rebind(args)
    if action == "settle":
        return _settle(args)
    if action == "policy":
        return _policy(args)
    if action == "prior":
        return _prior(args)
    if action == "look-ahead":
        return _answering_setting(
            args,
            "look_ahead",
            reset=args.off,
            given=args.share is not None,
            value=lambda: args.share,
            options="--share S or --off",
            describe=describe_look_ahead,
        )
    args._parser.print_help()
    return 2


def _new(args: argparse.Namespace) -> int:
    from pathlib import Path

    from dpdesk.engine.budget.person import person_rule
    from dpdesk.store.inputs import read_schema_file
    from dpdesk.store.project import Project

    schema = with_unit_arguments(read_schema_file(args.schema), args)
    name = args.name or Path(args.path).stem
    from dpdesk.commands.assess import policy_from_args

    pace = policy_from_args(args)  # checked before anything is created
    if pace is not None and args.accounting == "zcdp":
        from dpdesk.engine.errors import DpdeskError

        raise DpdeskError("--pace paces ε, the pure-ε price of a cell: a zCDP project takes no spend policy")
    from dpdesk.commands.cube import source_location

    location, table = source_location(args.source, args.table, args.spark, args.spark_conf)
    with Project.create(
        args.path,
        name=name,
        schema=schema,
        source_location=location,
        source_table=table,
        total_budget=args.budget,
        test_project=args.test_project,
        delta_cap=args.delta_cap,
        accounting=args.accounting,
        delta=args.delta,
    ) as p:
        if pace is not None:
            p.set_spend_policy(pace)
        src = p.source
        print(
            f"created {p.path} ({p.name}): {p.schema.n_cells} cells, total budget {p.total_budget:g}"
            f"{f', δ cap {p.delta_cap:g}' if p.delta_cap else ''}{', TEST PROJECT' if p.test_project else ''}"
        )
        print(f"accounting: {mode_words(p.accounting, p.total_budget)}")
        print(f"bound to {src.location}{f' table {src.table}' if src.table else ''}: {describe_binding(src)}")
        print(f"spend policy: {describe_policy(p.spend_policy)}")
        if not p.schema.unit.rows_are_people:
            print(
                f"privacy unit: {p.schema.unit.describe()}; {person_rule(p.schema).words()} "
                "(what truncation drops: `dpdesk cube`, private)"
            )
    return 0


def describe_binding(src) -> str:
    """How the project recognises its source (never a count: docs/project-file.md)."""
    if src.keyed:
        return (
            f"its cube's fingerprint is keyed with source key {src.key_id} "
            "(kept on this machine, not in the project file)"
        )
    return (
        f"unkeyed {src.fingerprint_method} fingerprint and row count of format 7 (visible to anyone with the "
        "file; `dpdesk project rebind` replaces them with a keyed fingerprint)"
    )


def with_unit_arguments(schema, args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """``schema`` with the privacy unit of ``--privacy-unit/--max-rows/--one-row-per-cell`` (checked, one
    line naming the option; the schema file's own ``privacy_unit`` and the options are exclusive)."""
    from dataclasses import replace

    from dpdesk.engine.errors import SchemaError
    from dpdesk.engine.unit import parse_unit

    if args.privacy_unit is None:
        if args.max_rows is not None or args.one_row_per_cell:
            raise SchemaError("--max-rows and --one-row-per-cell need --privacy-unit COLUMN")
        return schema
    if not schema.unit.rows_are_people:
        raise SchemaError(
            f"the schema file already declares a privacy unit ({schema.unit.describe()}): "
            "give it there or with --privacy-unit, not both"
        )
    if args.max_rows is None:
        raise SchemaError("--privacy-unit needs --max-rows K: how many rows of one person the cube may keep")
    spec: dict[str, object] = {"column": args.privacy_unit, "max_rows": args.max_rows}
    if args.one_row_per_cell:
        spec["one_row_per"] = "cell"
    try:
        unit = parse_unit(spec, schema.names)
    except SchemaError as exc:
        raise SchemaError(
            str(exc)
            .replace("privacy_unit.max_rows", "--max-rows")
            .replace("privacy_unit.column", "--privacy-unit")
        ) from None
    return replace(schema, unit=unit)


def describe_policy(policy) -> str:
    if policy is None:
        return "greedy (each fresh answer spends exactly what its request needs)"
    return (
        f"{policy.describe()}: a fresh answer spends at least {policy.floor:.0%} of what its cells can still "
        f"pay; a request needing more than {policy.cap:.0%} of it is declined"
    )


def describe_look_ahead(share) -> str:
    if share is None:
        return "off (each batch plan is made for the batch alone)"
    return (
        f"on at share {share:g}: a batch plan first spends up to {share:.0%} of the room left on cells nobody has paid "
        "for, measuring a strategy for the queue's requests"
    )


def describe_prior(prior) -> str:
    if prior is None:
        return "flat (no declared table size)"
    return f"known bounds: counts ≥ 0 and a declared table size of at most {prior.table_size:g} records"


def _prior(args: argparse.Namespace) -> int:
    from dpdesk.commands.assess import prior_from_args

    return _answering_setting(
        args,
        "prior",
        reset=args.flat,
        given=args.table_size is not None,
        value=lambda: prior_from_args(args),
        options="--table-size N or --flat",
        describe=describe_prior,
    )


def _policy(args: argparse.Namespace) -> int:
    from dpdesk.commands.assess import policy_from_args

    return _answering_setting(
        args,
        "spend_policy",
        reset=args.greedy,
        given=args.pace is not None,
        value=lambda: policy_from_args(args),
        options="--pace FLOOR CAP or --greedy",
        describe=describe_policy,
    )


def _answering_setting(args, name: str, *, reset: bool, given: bool, value, options: str, describe) -> int:
    """Show the project's ``name`` setting, or set it (to ``value()``, or None with the reset flag)."""
    from dpdesk.engine.errors import DpdeskError
    from dpdesk.store.project import Project

    label = name.replace("_", " ")
    if reset and given:
        raise DpdeskError(f"give either {options}, not both")
    if not reset and not given:
        with Project.open(args.path, "r") as p:
            print(f"{p.path.name}: {label} {describe(getattr(p, name))}")
        return 0
    new = None if reset else value()
    with Project.open(args.path, "w") as p:
        old = getattr(p, name)
        getattr(p, f"set_{name}")(new)
        now = getattr(p, name)
        print(f"{p.path.name}: {label} {describe(now)}{' (unchanged)' if old == now else ''}")
    return 0


def _info_of(p) -> dict:  # type: ignore[no-untyped-def]
    """``dpdesk project info``'s figures of an open project ``p``, as JSON."""
    from dpdesk.store import STATUSES

    view = p.view()
    src = p.source
    entries = p.ledger()
    counts = {s: len(p.requests(s)) for s in STATUSES}
    binding = p.binding_problem()
    info = {
        "path": str(p.path),
        "name": p.name,
        "created": p.created,
        "neighbour_model": p.neighbour_model,
        "total_budget": float(p.total_budget),
        "system_cost": view.system_cost,
        "remaining": float(p.total_budget) - view.system_cost,
        "accounting": "pure" if p.accounting is None else p.accounting.to_json(),
        "test_project": p.test_project,
        "delta_cap": p.delta_cap,
        "delta_spent": view.delta_spent,
        "cells": p.schema.n_cells,
        "attributes": list(p.schema.names),
        "privacy_unit": p.schema.unit.to_dict(),
        "measures": [m.to_dict() for m in p.schema.measures],
        "source": {**src.identity(), "bound_at": src.bound_at, "status": binding or "unchanged"},
        "requests": counts,
        "ledger_entries": len(entries),
        "fresh_answers": sum(e.kind == "fresh" for e in entries),
        "ledger_head": entries[-1].hash if entries else None,
        "spend_policy": None
        if p.spend_policy is None
        else {"floor": p.spend_policy.floor, "cap": p.spend_policy.cap},
        "declared_table_size": None if p.prior is None else p.prior.table_size,
        "look_ahead": p.look_ahead,
    }
    if p.accounting is not None:  # the figures above are the largest cell's ρ and the ρ budget; as ε:
        spent = p.accounting.epsilon_of(view.system_cost)
        info |= {
            "epsilon_spent": spent,
            "epsilon_remaining": float(p.total_budget) - spent,
            "rho_budget": p.accounting.budget,
            "remaining": p.accounting.budget - view.system_cost,
        }
    return info


def _info(args: argparse.Namespace) -> int:
    import json

    from dpdesk.store.project import Project

    with Project.open(args.path, "r") as p:
        info = _info_of(p)
        entries, src, counts = p.ledger(), p.source, info["requests"]
        if entries:  # a head shown is a head handed out: kept in this machine's receipt log
            p.receipt([(entries[-1].seq, entries[-1].hash)], "shown")
        policy_text, prior_text = describe_policy(p.spend_policy), describe_prior(p.prior)
        binding_text = describe_binding(src)
        from dpdesk.engine.budget.person import person_rule

        unit_text = p.schema.unit.describe()
        if not p.schema.unit.rows_are_people:
            unit_text += f"; {person_rule(p.schema).words()}"
        measure_lines = [m.describe() for m in p.schema.measures]
        ahead_text = describe_look_ahead(p.look_ahead)
        accounting = p.accounting
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    print(f"{info['name']} — {info['path']}{'  [TEST PROJECT]' if info['test_project'] else ''}")
    print(f"  created {info['created']}; neighbours: {info['neighbour_model']}")
    print(f"  cube: {info['cells']} cells over {', '.join(info['attributes'])}")
    print(f"  privacy unit: {unit_text}")
    for line in measure_lines:
        print(f"  measure {line}")
    print(f"  accounting: {mode_words(accounting, info['total_budget'])}")
    print(f"  budget: {spent_words(accounting, info['total_budget'], info['system_cost'])}")
    print(
        f"  δ: cap {info['delta_cap']:g}"
        + (
            f", largest per-cell δ spent {info['delta_spent']:.3g}"
            if info["delta_cap"]
            else " (pure ε-DP releases only)"
            if accounting is None
            else " (no release with a δ of its own; the total's δ is the accounting's)"
        )
    )
    s = info["source"]
    print(
        f"  source: {s['location']}{' table ' + s['table'] if s['table'] else ''} — {binding_text}; {s['status']}"
    )
    print(
        f"  requests: {counts['pending']} pending, {counts['answered']} answered, {counts['rejected']} rejected"
    )
    print(
        f"  ledger: {info['ledger_entries']} entries ({info['fresh_answers']} fresh), head {info['ledger_head'] or '-'}"
    )
    print(f"  spend policy: {policy_text}")
    print(f"  prior: {prior_text}")
    print(f"  batch look-ahead: {ahead_text}")
    return 0


def _settle(args: argparse.Namespace) -> int:
    """Open the project for writing and close it: closing copies the log into the file (one line if it
    still cannot)."""
    from dpdesk.store.db import log_holds_frames
    from dpdesk.store.errors import StoreError
    from dpdesk.store.project import Project

    with Project.open(args.path, "w") as p:
        path, name = p.path, p.path.name
    if log_holds_frames(path):
        raise StoreError(f"{name}: another program is reading it; close it there and run this again")
    print(f"{name}: settled (every recorded change is in {name} itself)")
    return 0


def _rebind(args: argparse.Namespace) -> int:
    from dpdesk.store.project import Project

    with Project.open(args.path, "w") as p:
        if p.source.keyed and p.binding_problem() is None:
            print(f"{p.path.name}: the source is unchanged; nothing to rebind")
            return 0
        entry = p.rebind()
        print(
            f"rebound {p.path.name} to {p.source.location}: {describe_binding(p.source)}; ledger entry {entry.seq}"
        )
    return 0
