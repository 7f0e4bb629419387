"""Small tables in memory: a pandas DataFrame, or an Excel workbook read whole with pandas.

These count with the engine's own :func:`dpdesk.engine.cube.build_cube`, the reference every pushdown
source is tested against. Excel files are read once and kept; they are small by nature (a worksheet
holds at most about a million rows).
"""

from __future__ import annotations

import hashlib
import os
from typing import TYPE_CHECKING, Any

from dpdesk.engine.contributions import Contributions
from dpdesk.engine.cube import Cube
from dpdesk.engine.errors import Cancelled, SchemaError
from dpdesk.engine.schema import Schema
from dpdesk.engine.truncation import OrderKey
from dpdesk.sources.base import (
    CancelCheck,
    Fingerprint,
    Progress,
    Source,
    SourceError,
    check_cancelled,
    column_kinds_checked,
    contributions_schema,
    needs_order_key,
    one_line,
    report,
    require_extra,
)
from dpdesk.sources.fingerprint import hash_files

if TYPE_CHECKING:
    import pandas as pd


def series_kind(series: pd.Series) -> str:
    """``"numeric"``, ``"text"`` or ``"other"``, in the sense of :func:`column_kinds_checked`.

    A column of mixed numbers and text (common in spreadsheets: a stray ``"n/a"``) counts as numeric;
    the engine's binning puts its text cells out of domain.
    """
    import pandas as pd
    from pandas.api import types as ptypes

    dtype = series.dtype
    if ptypes.is_bool_dtype(dtype):
        return "other"
    if ptypes.is_numeric_dtype(dtype):
        return "numeric"
    if isinstance(dtype, pd.CategoricalDtype):
        return series_kind(pd.Series(dtype.categories))
    if ptypes.is_string_dtype(dtype) or dtype == object:
        values = series.dropna()
        if len(values) == 0:
            return "numeric"  # an all-missing column is out of domain everywhere, not a type error
        is_num = values.map(lambda v: isinstance(v, (int, float)) and not isinstance(v, bool))
        return "numeric" if bool(is_num.any()) else "text"
    return "other"


def _dataframe_cube(
    df: pd.DataFrame,
    schema: Schema,
    where: str,
    progress: Progress,
    cancelled: CancelCheck,
    order_key: OrderKey | None,
) -> Cube:
    from dpdesk.engine.cube import build_cube

    kinds: dict[str, str] = {}
    used = set(schema.columns())
    for c in df.columns:
        name = str(c)
        if name in kinds:  # duplicate names: let build_cube name the problem if the schema uses it
            continue
        kinds[name] = series_kind(df[c]) if name in used else "other"
    column_kinds_checked(schema, kinds, where, {c: str(df[c].dtype) for c in kinds if kinds[c] != "numeric"})
    order_key = needs_order_key(schema, order_key)
    try:
        return build_cube(df, schema, progress=progress, cancelled=cancelled, order_key=order_key)
    except SchemaError as exc:
        if schema.unit.column is not None and str(exc).startswith("the privacy unit"):
            raise SourceError(f"{exc} ({where})") from None
        raise


def _dataframe_contributions(
    df: pd.DataFrame,
    column: str,
    schema: Schema | None,
    where: str,
    progress: Progress,
    cancelled: CancelCheck,
) -> Contributions:
    from dpdesk.engine.contributions import contributions

    check_cancelled(cancelled, "count of rows per person")
    checked = contributions_schema(schema, column)
    kinds = {str(c): series_kind(df[c]) for c in df.columns if str(c) in set(checked.columns())}
    column_kinds_checked(checked, kinds, where)
    try:
        out = contributions(df, column, schema)
    except SchemaError as exc:
        raise SourceError(f"{exc} ({where})") from None
    report(progress, 1.0)
    return out


def _whole_numbers_as_integers(df: pd.DataFrame) -> pd.DataFrame:
    """Excel stores every number as a float, so a whole-number column with blanks comes back as float64
    (``1.0``). Give such columns a nullable integer dtype so their text form is ``"1"``, as in a CSV."""
    import numpy as np

    out = df.copy()
    for i in range(df.shape[1]):  # by position: a sheet may repeat a header
        col = df.iloc[:, i]
        if col.dtype.kind == "f":
            v = col.to_numpy()
            finite = v[~np.isnan(v)]
            if finite.size and np.all(finite == np.round(finite)) and np.all(np.abs(finite) < 2**53):
                out.isetitem(i, col.astype("Int64"))
    return out


class DataFrameSource(Source):
    """An in-memory pandas DataFrame (``name`` is how it is shown and recorded)."""

    kind = "pandas"

    def __init__(self, df: pd.DataFrame, name: str = "<DataFrame>"):
        self.df = df
        self.location = name
        self.table = None

    def columns(self) -> list[str]:
        return [str(c) for c in self.df.columns]

    def build_cube(
        self,
        schema: Schema,
        *,
        progress: Progress = None,
        cancelled: CancelCheck = None,
        order_key: OrderKey | None = None,
    ) -> Cube:
        return _dataframe_cube(self.df, schema, self.location, progress, cancelled, order_key)

    def contributions(
        self,
        column: str,
        schema: Schema | None = None,
        *,
        progress: Progress = None,
        cancelled: CancelCheck = None,
    ) -> Contributions:
        return _dataframe_contributions(self.df, column, schema, self.location, progress, cancelled)

    def fingerprint(self, *, progress: Progress = None, cancelled: CancelCheck = None) -> Fingerprint:
        import pandas as pd

        check_cancelled(cancelled, "fingerprint")
        h = hashlib.sha256()
        h.update("\x1f".join(map(str, self.df.columns)).encode("utf-8", "surrogateescape"))
        h.update(pd.util.hash_pandas_object(self.df, index=False).to_numpy().tobytes())
        report(progress, 1.0)
        return Fingerprint(
            method="pandas-hash",
            digest=h.hexdigest(),
            row_count=len(self.df),
            caveat="hash of the in-memory table's values as pandas holds them, not of a file",
        )

    def preview(self, limit: int = 1000) -> pd.DataFrame:
        return self.df.head(limit)


class ExcelSource(Source):
    """One worksheet of an Excel workbook (``table`` names the sheet; the first sheet by default)."""

    kind = "pandas"

    def __init__(self, location: str, table: str | None = None):
        if not os.path.exists(location):
            raise SourceError(f"no such file: {location}")
        if not os.path.isfile(location):
            raise SourceError(f"not a file: {location}")
        require_extra("openpyxl", "excel", "an Excel workbook")
        self.location = location
        self.table = table
        self._df: Any = None

    def frame(self) -> pd.DataFrame:
        if self._df is None:
            import pandas as pd

            try:
                df = pd.read_excel(self.location, sheet_name=self.table if self.table is not None else 0)
            except (ValueError, KeyError, OSError, ImportError) as exc:
                raise SourceError(f"cannot read Excel file {self.location}: {one_line(exc)}") from None
            except Exception as exc:  # openpyxl/zipfile raise their own types on damaged files
                raise SourceError(
                    f"cannot read Excel file {self.location}: {type(exc).__name__}: {one_line(exc)}"
                ) from None
            self._df = _whole_numbers_as_integers(df)
        return self._df

    def columns(self) -> list[str]:
        return [str(c) for c in self.frame().columns]

    def build_cube(
        self,
        schema: Schema,
        *,
        progress: Progress = None,
        cancelled: CancelCheck = None,
        order_key: OrderKey | None = None,
    ) -> Cube:
        check_cancelled(cancelled)
        df = self.frame()
        if cancelled is not None and cancelled():
            raise Cancelled("cube build cancelled")
        where = self.location + (f" (sheet {self.table!r})" if self.table else "")
        return _dataframe_cube(df, schema, where, progress, cancelled, order_key)

    def contributions(
        self,
        column: str,
        schema: Schema | None = None,
        *,
        progress: Progress = None,
        cancelled: CancelCheck = None,
    ) -> Contributions:
        return _dataframe_contributions(self.frame(), column, schema, self.location, progress, cancelled)

    def fingerprint(self, *, progress: Progress = None, cancelled: CancelCheck = None) -> Fingerprint:
        method, digest = hash_files(
            [self.location], progress=lambda f: report(progress, 0.9 * f), cancelled=cancelled
        )
        rows = len(self.frame())
        report(progress, 1.0)
        return Fingerprint(method=method, digest=digest, row_count=rows)

    def preview(self, limit: int = 1000) -> pd.DataFrame:
        return self.frame().head(limit)
