"""delta-layout from Python: optimize, report and verify Delta Lake tables, and run work orders.

Every function runs the ``delta-layout`` command line inside this process (compiled into the
extension ``delta_layout._native``, the GIL released while it works), so it takes the CLI's
options and returns its ``--json`` documents, and its errors carry the CLI's one-line
messages. Keyword arguments name the CLI's options: ``target_size="128MiB"`` is
``--target-size 128MiB``, ``full=True`` is ``--full``, a list repeats the option; any option
of the command may be given this way (see ``python -m delta_layout COMMAND --help``).

``storage_options`` are delta-rs' ``storage_options`` (``AWS_ENDPOINT_URL``, ...), passed as
``--storage-option KEY=VALUE``; they are never written into a work order. Credentials may
also come from the environment (``AWS_*``, ``AZURE_*``, ``GOOGLE_*``), as for the CLI.

Workloads: ``workload=`` (:func:`optimize`, :func:`plan`, :func:`report`) lays the rows out by
a cut tree fitted to the queries a table serves (``--workload``), given as a workload file or
as its lines; with ``zorder=`` or ``hilbert=`` it measures the run instead (the savings a
budget ranks bins by, the figures recorded in the commit, the regression guard); :func:`recommend` says which layout and file size suit a workload, and
:func:`extract_workload` turns a SQL query history into a workload.

Scheduled runs (see docs/scheduling.md): ``max_rewrite_bytes=``,
``max_duration=`` and ``min_gain=`` bound a run; a run with nothing worth doing returns its
document with ``nothing_worth_doing`` true (the CLI's exit code 4), and one whose layout would
make the workload's scans dearer raises :class:`LayoutRegressionError` (exit code 5) unless
``allow_regression=True``.

Work orders (see docs/work-orders.md): :func:`plan` makes a :class:`Plan`,
:func:`execute` runs some of its bins anywhere and returns :class:`BinResult` objects,
:func:`commit` commits them. Plans and results are plain, picklable objects that convert to
and from their JSON documents, so an engine can ship them; :mod:`delta_layout.spark` runs
the bins of a plan as Spark tasks.
"""
from __future__ import annotations

import contextlib
import difflib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping, Sequence, Union

from . import _native

__all__ = [
    "BinResult",
    "CancelledError",
    "ConflictError",
    "DeltaLayoutError",
    "LayoutRegressionError",
    "Plan",
    "TableLike",
    "WorkloadLike",
    "commit",
    "execute",
    "extract_workload",
    "history",
    "inspect",
    "optimize",
    "plan",
    "recommend",
    "report",
    "sweep",
    "vacuum",
    "verify",
]

__version__: str = _native.__version__


class DeltaLayoutError(Exception):
    """A failed command: bad input, a refused or damaged table, a storage error (exit code 2).

    ``str(error)`` is the CLI's one-line message; ``exit_code`` its exit code.
    """

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class ConflictError(DeltaLayoutError):
    """A concurrent writer conflicted (exit code 3): nothing of this run was committed by the
    step that failed; it can be retried as is."""


class LayoutRegressionError(DeltaLayoutError):
    """The run's layout would make a run of the workload dearer than the table as it is (bytes
    scanned plus 4 MiB per file; exit code 5): nothing was committed and the written files were
    deleted; ``allow_regression=True`` commits it anyway."""


class CancelledError(DeltaLayoutError):
    """The run was cancelled (exit code 130); nothing was committed, written files deleted."""


_OPTIONS: dict[str, list[str]] | None = None


def _check_options(command: str, options: Mapping[str, Any]) -> None:
    """Raises ``TypeError`` for a keyword argument that names no option of ``delta-layout
    command`` (the CLI's own definitions), with the closest option when one is close."""
    global _OPTIONS
    if _OPTIONS is None:
        _OPTIONS = _native.command_options()
    known = _OPTIONS[command]
    function = "extract_workload" if command == "workload extract" else command
    for name in options:
        flag = name.replace("_", "-")
        if flag in known:
            continue
        close = difflib.get_close_matches(flag, known, n=1)
        hint = f"; did you mean {close[0].replace('-', '_')}=?" if close else ""
        raise TypeError(f"{function}() got an unexpected keyword argument {name!r} "
                        f"(`delta-layout {command}` has no --{flag}{hint})")


def _uri(table: Any) -> str:
    """A table's location: a path or URI (``str`` or ``os.PathLike``), or a
    ``deltalake.DeltaTable`` (its ``table_uri``; the latest version is what a command reads)."""
    uri = getattr(table, "table_uri", None)
    if isinstance(uri, str):
        return uri
    return os.fspath(table)


def _flags(options: Mapping[str, Any], command: str) -> list[str]:
    """``--name value`` for each option of ``delta-layout command`` (underscores become
    dashes); ``True`` is a bare flag, ``None`` and ``False`` are left out, a list or tuple
    repeats the option. Raises ``TypeError`` for a name that is no option of the command,
    given or not (a misspelt ``dryrun=False`` is an error too)."""
    _check_options(command, options)
    out: list[str] = []
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            out.append(flag)
        elif isinstance(value, (list, tuple)):
            for item in value:
                out += [flag, str(item)]
        else:
            out += [flag, str(value)]
    return out


def _storage(storage_options: Mapping[str, str] | None) -> list[str]:
    return [a for k, v in (storage_options or {}).items() for a in ("--storage-option", f"{k}={v}")]


def _run(argv: list[str], storage_options: Mapping[str, str] | None, ok: Sequence[int] = (0,)) -> tuple[int, str]:
    """Runs the command line; returns (exit code, standard output) or raises."""
    code, out, err = _native.run(_storage(storage_options) + [str(a) for a in argv])
    if code in ok:
        return code, out
    message = err.strip().splitlines()[-1] if err.strip() else f"exit code {code}"
    message = message.removeprefix("delta-layout: ")
    if code == 3:
        raise ConflictError(message, code)
    if code == 130:
        raise CancelledError(message, code)
    if code == 5:
        raise LayoutRegressionError(message, code)
    raise DeltaLayoutError(message, code)


def _document(text: str) -> dict:
    """The ``--json`` document the command printed (``help=True`` prints help instead)."""
    try:
        return json.loads(text)
    except ValueError:
        raise DeltaLayoutError(f"the command printed no JSON document: {text[:200]!r}") from None


def _columns(value: str | Sequence[str] | None) -> list[str] | None:
    if value is None:
        return None
    return [value] if isinstance(value, str) else list(value)


TableLike = Union[str, "os.PathLike[str]", Any]
"""A table: its location (a local path, ``str`` or ``os.PathLike``, or a URI such as
``s3://bucket/events``), or a ``deltalake.DeltaTable``, whose ``table_uri`` is used (a command
reads the table's latest version; ``storage_options`` are still given to the call)."""

WorkloadLike = Union[str, "os.PathLike[str]", Sequence[str], Mapping[str, int]]
"""A workload (``--workload``): the path of a workload file (``str`` or ``os.PathLike``), a
sequence of its lines (each a predicate in the ``--where`` language, optionally
``"WEIGHT\\tPREDICATE"``: the query ran WEIGHT times; ``#`` comments and blank lines are
skipped), or a mapping ``{predicate: weight}``. Lines and mappings are written to a temporary
file for the call, deleted when it returns; an error naming its line N means the N-th item."""


def _workload_lines(workload: Sequence[str] | Mapping[str, int]) -> list[str]:
    """The lines of the workload file for ``workload`` given as lines or a mapping; raises
    TypeError or ValueError for items that cannot be lines of a workload file."""
    lines: list[str] = []
    if isinstance(workload, Mapping):
        for predicate, weight in workload.items():
            if not isinstance(predicate, str):
                raise TypeError(
                    f"workload: a mapping's keys must be predicates (str), not {type(predicate).__name__}")
            text = predicate.strip()
            if not text or text.startswith("#") or "\n" in text or "\r" in text:
                raise ValueError(f"workload: {predicate!r} is not one predicate on one line")
            if isinstance(weight, bool) or not isinstance(weight, int):
                raise TypeError(
                    f"workload: the weight of {predicate!r} must be an int (the number of times the "
                    f"query ran), not {type(weight).__name__}")
            if weight <= 0:
                raise ValueError(
                    f"workload: the weight of {predicate!r} must be a positive integer, not {weight}")
            lines.append(f"{weight}\t{text}")
    else:
        for item in workload:
            if not isinstance(item, str):
                raise TypeError(
                    f"workload: a sequence's items must be lines (str), not {type(item).__name__}")
            line = item.rstrip("\r\n")
            if "\n" in line or "\r" in line:
                raise ValueError(f"workload: {item!r} holds more than one line: give one predicate per item")
            lines.append(line)
    if not any(line.strip() and not line.strip().startswith("#") for line in lines):
        raise ValueError("workload: no predicate given (only blank lines and # comments, or nothing)")
    return lines


@contextlib.contextmanager
def _workload_file(workload: WorkloadLike | None) -> Iterator[str | None]:
    """The path to give ``--workload`` for ``workload`` (``None`` for none): a path as it is,
    lines or a mapping written to a temporary file, deleted on exit (also on error)."""
    if workload is None:
        yield None
        return
    if isinstance(workload, (bytes, bytearray)):
        raise TypeError("workload: give a path as str or os.PathLike, not bytes")
    if isinstance(workload, str):
        if "\n" in workload or "\r" in workload:
            raise ValueError("workload: a str is the path of a workload file; give the predicates as "
                             "a list of lines (or a mapping {predicate: weight})")
        if not workload.strip():
            raise ValueError("workload: the path is empty")
        yield workload
        return
    if isinstance(workload, os.PathLike):
        path = os.fspath(workload)
        if not isinstance(path, str):
            raise TypeError("workload: give a path as str or os.PathLike, not bytes")
        yield path
        return
    if not isinstance(workload, (Mapping, Sequence)):
        raise TypeError(
            "workload must be the path of a workload file (str or os.PathLike), a sequence of its "
            f"lines, or a mapping {{predicate: weight}}, not {type(workload).__name__}")
    lines = _workload_lines(workload)
    directory = tempfile.mkdtemp(prefix="delta-layout-")
    try:
        path = os.path.join(directory, "workload.txt")
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write("\n".join(lines) + "\n")
        yield path
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def optimize(
    table_uri: TableLike,
    *,
    zorder: str | Sequence[str] | None = None,
    hilbert: str | Sequence[str] | None = None,
    workload: WorkloadLike | None = None,
    target_size: int | str | None = None,
    where: str | None = None,
    memory_limit: int | str | None = None,
    dry_run: bool = False,
    storage_options: Mapping[str, str] | None = None,
    **options: Any,
) -> dict:
    """Optimizes the table at ``table_uri`` (``delta-layout optimize --json``).

    ``zorder`` / ``hilbert``: columns to cluster by ("a,b" or ["a", "b"]); ``workload``
    alone: lay the rows out by a cut tree fitted to a workload (:data:`WorkloadLike`: a
    workload file's path, its lines, or ``{predicate: weight}``), with a curve: measure the
    run on it; ``max_rewrite_bytes`` (bytes or a size), ``max_duration`` ("45m", "1h30m")
    and ``min_gain`` (a share, e.g. 0.05) bound the run; ``target_size``
    and ``memory_limit``: bytes (int) or a size ("128MiB"); ``where``: a predicate
    (``--where``: over partition columns it selects partitions, over other columns the files
    whose stats may match; ``where_include_unknown=True`` adds files without stats).
    Returns the ``--json`` document: ``version`` (committed, ``None`` for a dry run or nothing
    to do), ``files_removed``, ``files_added``, ``rows``, ``metrics``, ``plan`` (the run's work
    order), ``report`` (skipping before and after), ``figures`` (files and bytes scanned per
    run before and after, as recorded in the commit), ``selection`` (what a budget took and
    left), ``nothing_worth_doing`` (``min_gain`` found nothing: the CLI's exit code 4), ...

    Raises :class:`DeltaLayoutError` (bad option, table or storage), :class:`ConflictError`
    (another writer conflicted; nothing committed), :class:`LayoutRegressionError` (the layout
    would scan more; nothing committed); ``TypeError`` / ``ValueError`` for a workload of
    another type or without a predicate.
    """
    with _workload_file(workload) as workload_path:
        argv = ["optimize", _uri(table_uri), "--json", "--quiet"] + _flags(
            {"zorder": _columns(zorder), "hilbert": _columns(hilbert), "workload": workload_path,
             "target_size": target_size, "where": where, "memory_limit": memory_limit,
             "dry_run": dry_run, **options}, "optimize")
        return _document(_run(argv, storage_options, ok=(0, 4))[1])


def report(
    table_uri: TableLike,
    *,
    columns: str | Sequence[str] | None = None,
    version: int | None = None,
    compare: int | None = None,
    workload: WorkloadLike | None = None,
    storage_options: Mapping[str, str] | None = None,
    **options: Any,
) -> dict:
    """The data-skipping report of the table (``delta-layout report --json``): per column,
    how its file ranges overlap and how many files min/max pruning skips; with ``compare``,
    the report of two versions (``before``, ``after``). With ``workload``
    (:data:`WorkloadLike`), also ``workload``: the files, bytes and rows its queries scan per
    run, per query, and the files laid out by cut trees.

    Raises :class:`DeltaLayoutError`; ``TypeError`` / ``ValueError`` for a workload of another
    type or without a predicate.
    """
    with _workload_file(workload) as workload_path:
        argv = ["report", _uri(table_uri), "--json"] + _flags(
            {"columns": _columns(columns), "version": version, "compare": compare,
             "workload": workload_path, **options}, "report")
        return _document(_run(argv, storage_options)[1])


def recommend(
    table_uri: TableLike,
    workload: WorkloadLike,
    *,
    target_sizes: int | str | Sequence[int | str] | None = None,
    holdout: float | None = None,
    seed: int | None = None,
    sample: float | None = None,
    max_columns: int | None = None,
    file_cost: int | str | None = None,
    min_gain: float | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> dict:
    """Recommends a layout for ``workload`` (:data:`WorkloadLike`) (``delta-layout recommend
    --json``); the table is not written. The queries are split into training and test queries
    (``holdout``: the share held out, ``seed``); compaction, a linear sort, Z-order and
    Hilbert curves on the most useful columns (at most ``max_columns``) and a cut tree are
    estimated at each of ``target_sizes`` (sizes: "64MiB,128MiB" or a list, bytes or sizes)
    from a row sample (``sample``: its share of the rows), and ranked by bytes scanned plus
    ``file_cost`` per file opened. The best candidate is the pick when it rewrites files and
    saves at least ``min_gain`` (default 0.05) of the table's cost per run as it is.

    Returns the ``--json`` document: ``table``, ``version``, ``files``, ``bytes``, ``rows``,
    ``sample_fraction``, ``train_queries``, ``train_runs``, ``test_queries``, ``test_runs``,
    ``holdout``, ``seed``, ``min_gain``, ``file_cost_bytes``, ``columns``,
    ``declared_clustering_columns`` (liquid clustering: then the one layout tried),
    ``current`` (the table as it is), ``candidates`` (best first), ``pick`` (an index into
    ``candidates``), ``command`` (the ``delta-layout optimize`` command line of the pick; both
    ``None`` when the table is best kept as it is) and ``duration_ms``. A workload given as lines or a mapping is a temporary file,
    deleted on return, so a ``--workload`` in ``command`` names a file that is gone: give a
    path to run the command later.

    Raises :class:`DeltaLayoutError`; ``TypeError`` / ``ValueError`` for a workload of another
    type or without a predicate.
    """
    if workload is None:
        raise TypeError("recommend needs a workload: a workload file's path, its lines, or {predicate: weight}")
    if target_sizes is not None and not isinstance(target_sizes, (str, int)):
        target_sizes = ",".join(str(size) for size in target_sizes)
    with _workload_file(workload) as workload_path:
        argv = ["recommend", _uri(table_uri), "--json", "--quiet"] + _flags(
            {"workload": workload_path, "target_sizes": target_sizes, "holdout": holdout,
             "seed": seed, "sample": sample, "max_columns": max_columns, "file_cost": file_cost,
             "min_gain": min_gain}, "recommend")
        return _document(_run(argv, storage_options)[1])


def extract_workload(
    sql_path: str | os.PathLike[str],
    table: str,
    *,
    schema: str | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> str:
    """The workload file's text for the queries of the SQL file ``sql_path`` (statements
    separated by ``;``: a query history of Spark SQL, Databricks SQL or Trino) on the table
    named ``table`` as they write it (``delta-layout workload extract``): a ``#`` header, then
    one ``WEIGHT\\tPREDICATE`` line per distinct filter of the table. ``schema``: the Delta
    table (a path or URI) whose columns unqualified column names are matched against; without
    it only columns qualified by the table's name or alias count. The text can be given as
    ``workload=`` as it is (``text.splitlines()``) or written to a file. Statements skipped
    (unparsed, not reading the table, filtering nothing of it) are not reported here: the
    CLI lists them on standard error.

    Raises :class:`DeltaLayoutError` (an unreadable file, or no statement filtering the table
    by a predicate that can skip files).
    """
    argv = ["workload", "extract", os.fspath(sql_path), "--table", table] + _flags({"schema": schema}, "workload extract")
    return _run(argv, storage_options)[1]


def verify(
    table_uri: TableLike,
    *,
    compare: int,
    version: int | None = None,
    unique: str | Sequence[str] | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> dict:
    """Proves that two versions of the table hold the same rows (``delta-layout verify
    --json``): ``equal`` is ``False`` when they differ (the CLI's exit code 1), with the
    differences; ``unique`` checks columns for duplicated keys.

    Raises :class:`DeltaLayoutError` when the versions cannot be read.
    """
    argv = ["verify", _uri(table_uri), "--json", "--quiet"] + _flags(
        {"compare": compare, "version": version, "unique": _columns(unique)}, "verify")
    return _document(_run(argv, storage_options, ok=(0, 1))[1])


def inspect(
    table_uri: TableLike,
    *,
    version: int | None = None,
    target_size: int | str | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> dict:
    """The table's files, bytes, rows, file sizes, stats coverage and features (``delta-layout
    inspect --json``) at its latest version or ``version``; ``target_size`` (bytes or a size)
    is the size small files are counted against. Reads the log only.

    Raises :class:`DeltaLayoutError` (not a Delta table, a damaged log, a bad option).
    """
    argv = ["inspect", _uri(table_uri), "--json"] + _flags(
        {"version": version, "target_size": target_size}, "inspect")
    return _document(_run(argv, storage_options)[1])


def vacuum(
    table_uri: TableLike,
    *,
    retain: float | str | None = None,
    dry_run: bool = False,
    risk_breaking_readers: bool = False,
    storage_options: Mapping[str, str] | None = None,
) -> dict:
    """Deletes the data files the table no longer references and that were removed longer
    ago than ``retain`` (``delta-layout vacuum --json``): hours as a number (168) or a
    duration ("7d", "168h"); by default the table's ``delta.deletedFileRetentionDuration``,
    else 7 days. A retention below the table's needs ``risk_breaking_readers=True`` (readers
    of older versions may find their files gone). ``dry_run=True`` lists what would be
    deleted and deletes nothing. Returns the document: ``retention_hours``, ``files``,
    ``bytes``, ``dry_run``, ...

    Raises :class:`DeltaLayoutError` (a retention below the table's, a bad duration).
    """
    argv = ["vacuum", _uri(table_uri), "--json"] + _flags(
        {"retain": retain, "dry_run": dry_run, "risk_breaking_readers": risk_breaking_readers},
        "vacuum")
    return _document(_run(argv, storage_options)[1])


def history(
    table_uri: TableLike,
    *,
    limit: int | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> dict:
    """The OPTIMIZE runs in the table's log, newest first, from any writer (``delta-layout
    history --json``); ``limit``: at most that many runs. Reads the log only.

    Raises :class:`DeltaLayoutError`.
    """
    argv = ["history", _uri(table_uri), "--json"] + _flags({"limit": limit}, "history")
    return _document(_run(argv, storage_options)[1])


def sweep(
    table_uri: TableLike,
    *,
    target_sizes: int | str | Sequence[int | str],
    layouts: str | Sequence[str] | None = None,
    columns: str | Sequence[str] | None = None,
    workload: WorkloadLike | None = None,
    storage_options: Mapping[str, str] | None = None,
    **options: Any,
) -> dict:
    """Tries each layout (``layouts``: ``--layout`` specs such as "compact",
    "zorder:a,b", "hilbert:a,b") at each of ``target_sizes`` (bytes or sizes, a list or
    "64MiB,128MiB") on scratch copies of the table (``delta-layout sweep --json``) and returns
    what each would cost and save; the table is not written. ``columns``: the columns whose
    skipping is measured; ``workload`` (:data:`WorkloadLike`): measure on its queries;
    ``estimate=True`` estimates from a sample instead of rewriting; other options as the CLI's.

    Raises :class:`DeltaLayoutError`; ``TypeError`` for an option ``sweep`` does not take.
    """
    if not isinstance(target_sizes, (str, int)):
        target_sizes = ",".join(str(size) for size in target_sizes)
    if isinstance(layouts, str):
        layouts = [layouts]
    with _workload_file(workload) as workload_path:
        argv = ["sweep", _uri(table_uri), "--json", "--quiet"] + _flags(
            {"target_sizes": target_sizes, "layout": layouts, "columns": _columns(columns),
             "workload": workload_path, **options}, "sweep")
        return _document(_run(argv, storage_options)[1])


@dataclass
class Plan:
    """A work order (``delta-layout plan``): the document, and where it is stored.

    ``document`` is the order's JSON text (the head of a sharded order); ``location`` the
    local path or object URI it was written to (``None`` for an order held in memory only).
    Picklable; holds no secret. ``Plan.from_json(plan.to_json())`` gives the same plan.
    """

    document: str
    location: str | None = None
    _parsed: dict | None = field(default=None, repr=False, compare=False)

    @property
    def order(self) -> dict:
        """The document, parsed."""
        if self._parsed is None:
            self._parsed = json.loads(self.document)
        return self._parsed

    def __getstate__(self) -> dict:
        return {"document": self.document, "location": self.location}

    def __setstate__(self, state: dict) -> None:
        self.document = state["document"]
        self.location = state["location"]
        self._parsed = None

    @property
    def run_id(self) -> str:
        """The run id: output files are named after it."""
        return self.order["plan"]["run_id"]

    @property
    def fingerprint(self) -> str:
        """The order's fingerprint, which every result of it carries."""
        return self.order["fingerprint"]

    @property
    def table_uri(self) -> str:
        """The table's root URL."""
        return self.order["table"]["uri"]

    @property
    def bin_ids(self) -> list[int]:
        """Every bin id, in plan order."""
        return [b["id"] for p in self.order["plan"]["partitions"] for b in p["bins"]]

    def units(self) -> list[list[int]]:
        """The commit units, in plan order: each bin alone, except the bins of a clustering
        scope split over several bins (``key_range``), which commit together."""
        units: list[list[int]] = []
        by_space: dict[int, int] = {}
        for p in self.order["plan"]["partitions"]:
            for b in p["bins"]:
                space = (b.get("key_range") or {}).get("space")
                if space is None:
                    units.append([b["id"]])
                elif space in by_space:
                    units[by_space[space]].append(b["id"])
                else:
                    by_space[space] = len(units)
                    units.append([b["id"]])
        return units

    def to_json(self) -> str:
        """The order's JSON document."""
        return self.document

    @classmethod
    def from_json(cls, text: str, location: str | None = None) -> "Plan":
        """A plan from its JSON document (checked when executed or committed)."""
        plan = cls(text, location)
        if plan.order.get("kind") != "delta-layout.plan":
            raise DeltaLayoutError("the text is not a delta-layout work order (kind delta-layout.plan)")
        return plan

    @classmethod
    def load(cls, location: str, storage_options: Mapping[str, str] | None = None) -> "Plan":
        """The plan stored at ``location`` (a local path or object URI)."""
        try:
            text = _native.read_document(location, dict(storage_options or {}))
        except OSError as e:
            raise DeltaLayoutError(str(e)) from None
        return cls.from_json(text, location)


@dataclass
class BinResult:
    """What a worker returns for one bin (``delta-layout execute``): the files it wrote with
    their stats, and its rows. Picklable; ``result`` is the result object of the JSON result
    document, checksummed (an altered result is refused at commit)."""

    result: dict

    @property
    def bin_id(self) -> int:
        """The bin's id."""
        return self.result["bin_id"]

    @property
    def run_id(self) -> str:
        """The plan's run id."""
        return self.result["run_id"]

    @property
    def rows(self) -> int:
        """Rows read from the bin's input files, equal to the rows written."""
        return self.result["rows"]

    @property
    def files(self) -> list[dict]:
        """The written files: path (relative to the table root), size (bytes), rows, stats."""
        return self.result["files"]

    @property
    def left_alone(self) -> bool:
        """The bin wrote no fewer files than it read (a compaction bin must write fewer): its
        files were deleted and commit leaves its input files as they are."""
        return bool(self.result.get("left_alone", False))

    def to_json(self) -> str:
        """The result as JSON (one entry of a result document's ``results``)."""
        return json.dumps(self.result)

    @classmethod
    def from_json(cls, text: str) -> "BinResult":
        """A result from :meth:`to_json`'s text."""
        return cls(json.loads(text))

    @staticmethod
    def document(results: Iterable["BinResult"]) -> str:
        """The result document (``execute --out``'s format) holding ``results``."""
        return json.dumps({"format_version": 1, "kind": "delta-layout.results",
                           "results": [r.result for r in results]})

    @staticmethod
    def parse_document(text: str) -> list["BinResult"]:
        """The results of a result document."""
        return [BinResult(r) for r in json.loads(text)["results"]]


def plan(
    table_uri: TableLike,
    *,
    out: str | None = None,
    zorder: str | Sequence[str] | None = None,
    hilbert: str | Sequence[str] | None = None,
    workload: WorkloadLike | None = None,
    target_size: int | str | None = None,
    where: str | None = None,
    memory_limit: int | str | None = None,
    task_size: int | str | None = None,
    storage_options: Mapping[str, str] | None = None,
    **options: Any,
) -> Plan:
    """Plans the optimize of the table as a work order (``delta-layout plan``): reads the
    log, writes nothing to the table. With ``out`` (a local path or object URI ending in
    ``.json``) the order is stored there (sharded beside it when large, ``shard_files``) and
    workers read it from there; without, it is held in memory. Options as :func:`optimize`
    (a ``workload``'s cut trees are built here and carried in the order: executing and
    committing need no workload file); ``task_size`` splits large clustering scopes.

    ``max_rewrite_bytes`` and ``min_gain`` choose the bins as :func:`optimize` does (a plan
    with nothing worth doing has no bin).

    Raises :class:`DeltaLayoutError`; ``TypeError`` / ``ValueError`` for a workload of another
    type or without a predicate.
    """
    with _workload_file(workload) as workload_path:
        argv = ["plan", _uri(table_uri)] + _flags(
            {"zorder": _columns(zorder), "hilbert": _columns(hilbert), "workload": workload_path,
             "target_size": target_size, "where": where, "memory_limit": memory_limit,
             "task_size": task_size, "out": out, **options}, "plan")
        text = _run(argv, storage_options, ok=(0, 4))[1]
    if out is None:
        return Plan.from_json(text)
    return Plan.load(out, storage_options)


class _Located:
    """A local location for a plan held in memory (a temporary file), removed on exit."""

    def __init__(self, plan: Plan, storage_options: Mapping[str, str] | None = None) -> None:
        self.plan = plan
        self.storage_options = storage_options
        self.directory: str | None = None

    def __enter__(self) -> str:
        if self.plan.location is not None:
            # The document stored there must still be this plan (a later plan to the same
            # place replaces it).
            try:
                stored = json.loads(_native.read_document(self.plan.location, dict(self.storage_options or {})))
            except (OSError, ValueError) as e:
                raise DeltaLayoutError(str(e)) from None
            if stored.get("fingerprint") != self.plan.fingerprint:
                raise DeltaLayoutError(
                    f"work order '{self.plan.location}' is no longer this plan (run {self.plan.run_id}): "
                    f"it holds run {stored.get('plan', {}).get('run_id')}; plan again")
            return self.plan.location
        if self.plan.order.get("shards"):
            raise DeltaLayoutError(
                "this plan is the head of a sharded work order and has no location: load it "
                "with Plan.load(location), where its shards are")
        self.directory = tempfile.mkdtemp(prefix="delta-layout-")
        path = os.path.join(self.directory, "plan.json")
        with open(path, "w") as f:
            f.write(self.plan.document)
        return path

    def __exit__(self, *exc: object) -> None:
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)


def execute(
    plan: Plan,
    bin_ids: Iterable[int],
    *,
    out: str | None = None,
    threads: int | None = None,
    storage_options: Mapping[str, str] | None = None,
    **options: Any,
) -> list[BinResult]:
    """Executes the bins ``bin_ids`` of ``plan`` (``delta-layout execute``): reads their
    input files, writes their output files, commits nothing; reads no log. With ``out``, the
    result document is also stored there (a local path or object URI). Safe to retry: a
    retried bin writes fresh files; ``commit`` deletes the ones it does not use.

    Raises :class:`DeltaLayoutError` (an unknown bin, a changed input file, ...).
    """
    if isinstance(bin_ids, (str, bytes, int)):
        raise TypeError("bin_ids must be a list of bin ids, such as [3] or plan.bin_ids")
    ids = [str(int(b)) for b in bin_ids]
    with _Located(plan, storage_options) as location:
        argv = ["execute", location, "--quiet"] + _flags({"bin": ids, "threads": threads, **options}, "execute")
        text = _run(argv, storage_options)[1]
    if out is not None:
        try:
            _native.write_document(out, text, dict(storage_options or {}))
        except ValueError as e:
            raise DeltaLayoutError(str(e)) from None
    return BinResult.parse_document(text)


def commit(
    plan: Plan,
    results: Iterable[BinResult],
    *,
    batch_size: int | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> dict:
    """Commits ``results`` of ``plan`` (``delta-layout commit --json``): checks each against
    the order and storage, skips bins this run already committed, drops bins whose input
    files another writer removed, and commits the rest in batches of ``batch_size`` bins
    (all in one by default), each with a ``txn`` of the run. Running it again commits nothing
    twice. Returns the ``--json`` document (``versions``, ``bins_committed``,
    ``bins_already_committed``, ``bins_dropped``, ...).

    Raises :class:`DeltaLayoutError` (a result that does not belong to the order), or
    :class:`ConflictError` (another writer changed the metadata; run again after checking).
    """
    directory = tempfile.mkdtemp(prefix="delta-layout-")
    try:
        path = os.path.join(directory, "results.json")
        with open(path, "w") as f:
            f.write(BinResult.document(results))
        with _Located(plan, storage_options) as location:
            argv = ["commit", location, path, "--json"] + _flags({"batch_size": batch_size}, "commit")
            return _document(_run(argv, storage_options)[1])
    finally:
        shutil.rmtree(directory, ignore_errors=True)
