"""``dpdesk cube``: build a source's count cube and print its shape, total and out-of-domain count.

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
        ".sqlite/.db file (with --table), or a postgresql:// URL (with --table). The counts are private.",
    )
    p.add_argument("source", metavar="SOURCE", help="file, glob (quote it), or postgresql:// URL")
    p.add_argument("--schema", required=True, metavar="S", help="schema file (*.schema.json, DESIGN §6)")
    p.add_argument("--table", metavar="T", help="table or view in a database; worksheet of a workbook")
    p.add_argument("--json", action="store_true",
                   help="print shape, total, out_of_domain, counts (flattened, C order), source and fingerprint as JSON")
    p.add_argument("--show-sql", action="store_true",
                   help="print the generated GROUP BY and its parameters instead of running it")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json

    from dpdesk.sources import open_source
    from dpdesk.store.inputs import read_schema_file

    schema = read_schema_file(args.schema)
    source = open_source(args.source, table=args.table)
    if args.show_sql:
        sql = source.sql(schema)
        if args.json:
            print(json.dumps({"source": source.describe(), "sql": sql}, ensure_ascii=False))
        else:
            print(sql)
        return 0
    cube = source.build_cube(schema)
    if args.json:
        fingerprint = source.fingerprint()
        print(json.dumps({
            "shape": list(schema.shape),
            "total": cube.total,
            "out_of_domain": cube.out_of_domain,
            "counts": cube.flat.tolist(),
            "source": source.describe(),
            "fingerprint": fingerprint.to_dict(),
        }, ensure_ascii=False))
        return 0
    shape = " x ".join(str(s) for s in schema.shape)
    table = f", table {source.table}" if source.table else ""
    print(f"source: {source.location} ({source.kind}{table})")
    print(f"shape: {shape} ({schema.n_cells} cells: {', '.join(schema.names)})")
    print(f"total: {cube.total}")
    print(f"out of domain: {cube.out_of_domain}")
    print("(private: true counts, for the curator only)")
    return 0
