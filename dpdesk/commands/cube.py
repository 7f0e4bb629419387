"""``dpdesk cube``: build a source's count cube and print its shape, total and out-of-domain count, the
measures' sums and what the privacy unit's bounds dropped; or the distribution of rows per person.

Private output: the cube holds true counts, for the curator's eyes only (DESIGN §4).
"""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "cube",
        help="build the count cube of a table (private: true counts)",
        description="Build the count cube of a table for a schema and print its shape, total and "
        "out-of-domain count. SOURCE is a CSV/TSV/Parquet file or glob, an .xlsx workbook, an "
        ".sqlite/.db file (with --table), a postgresql:// URL (with --table), or, with --spark sc://HOST:PORT "
        "(Spark Connect) or --spark MASTER, a table in Spark's catalog or a Parquet/CSV/Delta path that Spark "
        "reads. The counts are private.",
    )
    p.add_argument(
        "source", metavar="SOURCE", help="file, glob (quote it), postgresql:// URL, or a Spark table/path"
    )
    p.add_argument("--schema", required=True, metavar="S", help="schema file (*.schema.json, DESIGN §6)")
    add_source_arguments(p)
    p.add_argument(
        "--json",
        action="store_true",
        help="print shape, total, out_of_domain, counts (flattened, C order), source and fingerprint as JSON",
    )
    p.add_argument(
        "--show-sql",
        action="store_true",
        help="print the generated statement (binning, sums, truncation) and its parameters instead of "
        "running it; the constants of the keyed order are not shown",
    )
    p.add_argument(
        "--rows-per-person",
        metavar="COLUMN",
        help="instead of the cube, print how many people have 1, 2, ... rows inside the schema's domain "
        "(the rows sharing a value of COLUMN being one person), to choose --max-rows",
    )
    p.set_defaults(func=run)


def add_source_arguments(p: argparse.ArgumentParser) -> None:
    """``--table`` and ``--spark``, shared by every command that names a data source."""
    p.add_argument("--table", metavar="T", help="table or view in a database; worksheet of a workbook")
    p.add_argument(
        "--spark",
        metavar="MASTER",
        help="count with Spark (needs dpdesk[spark]): sc://HOST:15002 (a Spark Connect server: a cluster), "
        "or in this process local[*], local[N], spark://HOST:PORT, yarn or k8s://...; the source is then a "
        "table in Spark's catalog or a Parquet/CSV/Delta path",
    )
    p.add_argument(
        "--spark-conf",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="a Spark session setting (repeatable), kept with the project's source; a secret (a key naming "
        "a password, secret, token or key) is used now but never stored: later commands read it from "
        "DPDESK_SPARK_SECRET_<KEY> (the token of an sc:// address from SPARK_CONNECT_AUTHENTICATE_TOKEN)",
    )


def source_location(
    source: str, table: str | None, spark: str | None, spark_conf: list[str] | None = None
) -> tuple[str, str | None]:
    """``(location, table)`` for :func:`dpdesk.sources.open_source` from SOURCE, --table, --spark and
    --spark-conf (a Spark location as a project stores it: secrets out, see sources/spark_session.py)."""
    from dpdesk.sources import SourceError

    if spark is None:
        if spark_conf:
            raise SourceError(
                "--spark-conf applies to a Spark source: add --spark sc://HOST:PORT or a master"
            )
        return source, table
    from dpdesk.sources.spark import spark_location
    from dpdesk.sources.spark_session import public_location

    if table:
        raise SourceError("with --spark, SOURCE is the table or path Spark reads: drop --table")
    return public_location(spark_location(spark), spark_conf or ()), source


def run(args: argparse.Namespace) -> int:
    import json

    from dpdesk.sources import open_source
    from dpdesk.store.inputs import read_schema_file

    schema = read_schema_file(args.schema)
    location, table = source_location(args.source, args.table, args.spark, args.spark_conf)
    source = open_source(location, table=table)
    if args.show_sql:
        sql = source.sql(schema)
        if args.json:
            print(json.dumps({"source": source.describe(), "sql": sql}, ensure_ascii=False))
        else:
            print(sql)
        return 0
    from dpdesk.engine.cube import check_cells

    check_cells(schema)
    if args.rows_per_person is not None:
        return _rows_per_person(source, schema, args.rows_per_person, args.json)
    order_key = None
    if not schema.unit.rows_are_people:
        from dpdesk.store.binding import curator_order_key

        order_key = curator_order_key()
    cube = source.build_cube(schema, order_key=order_key)
    if args.json:
        fingerprint = source.fingerprint()
        print(
            json.dumps(
                {
                    "shape": list(schema.shape),
                    "total": cube.total,
                    "out_of_domain": cube.out_of_domain,
                    "counts": cube.flat.tolist(),
                    "measures": [
                        {
                            "name": m.name,
                            "sums": m.flat_sums.tolist(),
                            "counts": m.flat_counts.tolist(),
                            "missing": m.missing,
                        }
                        for m in cube.measures
                    ],
                    "truncation": None if cube.truncation is None else cube.truncation.to_dict(),
                    "source": source.describe(),
                    "fingerprint": fingerprint.to_dict(),
                },
                ensure_ascii=False,
            )
        )
        return 0
    shape = " x ".join(str(s) for s in schema.shape)
    table = f", table {source.table}" if source.table else ""
    print(f"source: {source.location} ({source.kind}{table})")
    print(f"shape: {shape} ({schema.n_cells} cells: {', '.join(schema.names)})")
    print(f"total: {cube.total}")
    print(f"out of domain: {cube.out_of_domain}")
    for m, sums in zip(schema.measures, cube.measures):
        print(
            f"measure {m.name}: sum {float(sums.sums.sum()):.10g} of {int(sums.counts.sum())} values "
            f"clamped to [{m.lower:g}, {m.upper:g}]; {sums.missing} missing"
        )
    if cube.truncation is not None:
        t = cube.truncation
        print(f"privacy unit: {schema.unit.describe()}")
        print(f"  {t.people} people; {t.rows_kept} rows kept")
        print(f"  {t.warning() or 'nothing dropped: nobody is over the bounds'}")
    print("(private: true counts, for the curator only)")
    return 0


def _rows_per_person(source, schema, column: str, as_json: bool) -> int:  # type: ignore[no-untyped-def]
    import json

    c = source.contributions(column, schema)
    if as_json:
        print(json.dumps({"column": column, **c.to_dict(), "people": c.people}, ensure_ascii=False))
        return 0
    print(
        f"rows per person (rows sharing {column}), over the {c.total_rows} rows inside the schema's domain:"
    )
    print(f"  {'rows':>6}  {'people':>8}  {'people with rows in that many cells':>36}")
    for rows, people, cells in c.table():
        print(f"  {rows:>6}  {people:>8}  {cells:>36}")
    print(
        f"  {c.people} people; at most {c.most_rows} rows each; {c.outside} rows outside (no {column} or domain)"
    )
    for share in (0.5, 0.9, 0.99):
        k = c.smallest_bound(share)
        print(
            f"  --max-rows {k}: {share:.0%} of people keep every row; "
            f"{c.rows_kept(k)} of {c.total_rows} rows kept"
        )
    print("(private: a distribution of the raw rows, for the curator only; never written to a project)")
    return 0
