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

Work orders (see the README's "Work orders"): :func:`plan` makes a :class:`Plan`,
:func:`execute` runs some of its bins anywhere and returns :class:`BinResult` objects,
:func:`commit` commits them. Plans and results are plain, picklable objects that convert to
and from their JSON documents, so an engine can ship them; :mod:`delta_layout.spark` runs
the bins of a plan as Spark tasks.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from . import _native

__all__ = [
    "BinResult",
    "CancelledError",
    "ConflictError",
    "DeltaLayoutError",
    "Plan",
    "commit",
    "execute",
    "optimize",
    "plan",
    "report",
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


class CancelledError(DeltaLayoutError):
    """The run was cancelled (exit code 130); nothing was committed, written files deleted."""


def _flags(options: Mapping[str, Any]) -> list[str]:
    """``--name value`` for each option (underscores become dashes); ``True`` is a bare
    flag, ``None`` and ``False`` are left out, a list or tuple repeats the option."""
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


def optimize(
    table_uri: str,
    *,
    zorder: str | Sequence[str] | None = None,
    hilbert: str | Sequence[str] | None = None,
    target_size: int | str | None = None,
    where: str | None = None,
    memory_limit: int | str | None = None,
    dry_run: bool = False,
    storage_options: Mapping[str, str] | None = None,
    **options: Any,
) -> dict:
    """Optimizes the table at ``table_uri`` (``delta-layout optimize --json``).

    ``zorder`` / ``hilbert``: columns to cluster by ("a,b" or ["a", "b"]); ``target_size``
    and ``memory_limit``: bytes (int) or a size ("128MiB"); ``where``: a predicate
    (``--where``: over partition columns it selects partitions, over other columns the files
    whose stats may match; ``where_include_unknown=True`` adds files without stats).
    Returns the ``--json`` document: ``version`` (committed, ``None`` for a dry run or nothing
    to do), ``files_removed``, ``files_added``, ``rows``, ``metrics``, ``plan`` (the run's work
    order), ``report`` (skipping before and after), ...

    Raises :class:`DeltaLayoutError` (bad option, table or storage), :class:`ConflictError`
    (another writer conflicted; nothing committed).
    """
    argv = ["optimize", table_uri, "--json", "--quiet"] + _flags(
        {"zorder": _columns(zorder), "hilbert": _columns(hilbert), "target_size": target_size,
         "where": where, "memory_limit": memory_limit, "dry_run": dry_run, **options})
    argv[1] = os.fspath(table_uri)
    return _document(_run(argv, storage_options)[1])


def report(
    table_uri: str,
    *,
    columns: str | Sequence[str] | None = None,
    version: int | None = None,
    compare: int | None = None,
    storage_options: Mapping[str, str] | None = None,
    **options: Any,
) -> dict:
    """The data-skipping report of the table (``delta-layout report --json``): per column,
    how its file ranges overlap and how many files min/max pruning skips; with ``compare``,
    the report of two versions (``before``, ``after``).

    Raises :class:`DeltaLayoutError`.
    """
    argv = ["report", table_uri, "--json"] + _flags(
        {"columns": _columns(columns), "version": version, "compare": compare, **options})
    argv[1] = os.fspath(table_uri)
    return _document(_run(argv, storage_options)[1])


def verify(
    table_uri: str,
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
    argv = ["verify", table_uri, "--json", "--quiet"] + _flags(
        {"compare": compare, "version": version, "unique": _columns(unique)})
    argv[1] = os.fspath(table_uri)
    return _document(_run(argv, storage_options, ok=(0, 1))[1])


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
    table_uri: str,
    *,
    out: str | None = None,
    zorder: str | Sequence[str] | None = None,
    hilbert: str | Sequence[str] | None = None,
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
    workers read it from there; without, it is held in memory. Options as :func:`optimize`;
    ``task_size`` splits large clustering scopes.

    Raises :class:`DeltaLayoutError`.
    """
    argv = ["plan", table_uri] + _flags(
        {"zorder": _columns(zorder), "hilbert": _columns(hilbert), "target_size": target_size,
         "where": where, "memory_limit": memory_limit, "task_size": task_size, "out": out,
         **options})
    argv[1] = os.fspath(table_uri)
    text = _run(argv, storage_options)[1]
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
        argv = ["execute", location, "--quiet"] + _flags({"bin": ids, "threads": threads, **options})
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
            argv = ["commit", location, path, "--json"] + _flags({"batch_size": batch_size})
            return _document(_run(argv, storage_options)[1])
    finally:
        shutil.rmtree(directory, ignore_errors=True)
