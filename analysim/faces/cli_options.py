"""The options of the ``analysim`` command that come from ``SimConfig`` and the config file.

Every ``SimConfig`` field is an option of its own, generated from the dataclass (its type, its
docstring line, the registry of a policy field), so the command line says the same thing in
the same words as notebooks, widgets and sweeps.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import re
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

from analysim.compat import SCHEDULERS as COMPAT_SCHEDULERS
from analysim.inputs.config import SimConfig
from analysim.policies import COSTS, PLACERS, SCHEDULERS
from analysim.policies.registry import Registry
from analysim.sharing.placers import SHARE_PLACERS

PROG = "analysim"


# The registry that names the choices of each policy field of SimConfig.
POLICY_REGISTRIES: dict[str, Registry[Any]] = {
    "scheduler": SCHEDULERS,
    "placement": PLACERS,
    "checkpoint_cost": COSTS,
    "migration_cost": COSTS,
}
EXTRA_HELP = {
    "seed": "It also seeds the synthetic workload.",
    "node_mtbf": "On the command line: seconds (per GPU type: a JSON dict, or --config).",
    "failures": "On the command line: a CSV file with columns node, down, up.",
}
# the placers of the FGD study, which run the engine in resource mode (docs/semantics.md)
# and the schedulers only a compat replay knows (--compat; analysim/compat)
EXTRA_CHOICES = {
    "placement": tuple(n for n in SHARE_PLACERS.names if n not in PLACERS.names),
    "scheduler": tuple(
        sorted({n for names in COMPAT_SCHEDULERS.values() for n in names} - set(SCHEDULERS.names))
    ),
}


class UsageError(Exception):
    """A bad command line or option value: reported on one line, exit code 2."""


class RaisingParser(argparse.ArgumentParser):
    """An ArgumentParser that raises instead of printing usage and exiting."""

    def error(self, message: str) -> typing.NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


# -- options generated from SimConfig ---------------------------------------------------------
def field_help(cls: type = SimConfig) -> dict[str, str]:
    """Each field's sentence from the ``name: text`` lines of the class docstring."""
    names = {f.name for f in dataclasses.fields(cls)}
    docs: dict[str, str] = {}
    current = None
    for line in inspect.cleandoc(cls.__doc__ or "").splitlines():
        match = re.match(r"(\w+):\s*(.*)", line)
        if match and match.group(1) in names:
            current = match.group(1)
            docs[current] = match.group(2)
        elif current and line.startswith(" ") and line.strip():
            docs[current] += " " + line.strip()
        else:
            current = None
    return {name: text.replace("``", "") for name, text in docs.items()}


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None


def _shown(value: Any) -> str:
    return json.dumps(value) if isinstance(value, dict) else str(value)


def policy_spec(
    registry: Registry[Any], numbers_are_seconds: bool = False, also: tuple[str, ...] = ()
) -> Callable[[str], Any]:
    """An argparse ``type``: a registered name (or one of ``also``), a JSON object
    ``{"name": ..., ...}``, or (for cost models) a number of seconds."""

    def parse(text: str) -> Any:
        if numbers_are_seconds:
            try:
                return float(text)
            except ValueError:
                pass
        if text.lstrip().startswith("{"):
            try:
                spec = json.loads(text)
            except json.JSONDecodeError as exc:
                raise argparse.ArgumentTypeError(f"not valid JSON ({exc.msg}): {text}") from None
            if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
                raise argparse.ArgumentTypeError(f'a JSON spec needs a "name": {text}')
            name = spec["name"]
        else:
            spec = name = text
        if name not in registry.names and name not in also:
            choices = ", ".join([*registry.names, *also])
            raise argparse.ArgumentTypeError(
                f"unknown {registry.kind} {name!r}; choose one of {choices}"
            )
        return spec

    return parse


def _mtbf(text: str) -> Any:
    """``--node-mtbf``: seconds, or a JSON dict of seconds per GPU type."""
    if text.lstrip().startswith("{"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise argparse.ArgumentTypeError(f"not valid JSON ({exc.msg}): {text}") from None
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text}") from None


def _failure_table(text: str) -> list[dict[str, Any]]:
    """``--failures FILE``: the node downtimes of a CSV file (columns node, down, up)."""
    import pandas as pd

    path = Path(text).expanduser()
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"no such file: {path}")
    try:
        table = pd.read_csv(path, dtype={"node": str})
    except (OSError, ValueError) as exc:
        raise argparse.ArgumentTypeError(f"{path}: not a readable CSV file ({exc})") from None
    return table.to_dict("records")


def _spares(text: str) -> int | list[str]:
    """``--spare-nodes``: a number of nodes, or node names separated by commas."""
    if text.strip().isdigit():
        return int(text)
    return [name.strip() for name in text.split(",")]


#: fields whose command-line form is not their Python type: (argparse type, metavar)
FIELD_TYPES: dict[str, tuple[Callable[[str], Any], str]] = {
    "node_mtbf": (_mtbf, "SECONDS|JSON"),
    "failures": (_failure_table, "CSV"),
    "spare_nodes": (_spares, "N|NODE,..."),
}


def add_config_options(parser: argparse.ArgumentParser) -> list[str]:
    """Add one option per ``SimConfig`` field; return the field names.

    Every option defaults to ``None`` (not given), so values from ``--config`` and the
    dataclass defaults stay in force unless the option is written.
    """
    group = parser.add_argument_group(
        "simulation options (the fields of SimConfig; JSON names use underscores)"
    )
    hints = typing.get_type_hints(SimConfig)
    docs = field_help()
    names = []
    for f in dataclasses.fields(SimConfig):
        flag = "--" + f.name.replace("_", "-")
        text = " ".join(filter(None, [docs.get(f.name, ""), EXTRA_HELP.get(f.name)]))
        kwargs: dict[str, Any] = {"dest": f.name, "default": None}
        kind = hints.get(f.name)
        registry = POLICY_REGISTRIES.get(f.name)
        if registry is not None:
            seconds = registry is COSTS
            also = EXTRA_CHOICES.get(f.name, ())
            kwargs["type"] = policy_spec(registry, numbers_are_seconds=seconds, also=also)
            kwargs["metavar"] = "SECONDS|NAME" if seconds else "NAME"
            listed = all(name in text for name in [*registry.names, *also])
            text += "" if listed else f" Choices: {', '.join([*registry.names, *also])}."
            text += " Or a number of seconds (constant)," if seconds else " Or"
            text += ' a JSON object {"name": ..., <parameters>}.'
        elif f.name in FIELD_TYPES:
            kwargs["type"], kwargs["metavar"] = FIELD_TYPES[f.name]
        elif kind is bool:
            kwargs["action"] = argparse.BooleanOptionalAction
        elif kind in (int, float, float | None):
            kwargs["type"] = int if kind is int else float
            kwargs["metavar"] = {int: "N", float | None: "SECONDS"}.get(kind, "SECONDS")
            if f.name in ("borrow_limit", "job_failure_prob", "failure_shape"):
                kwargs["metavar"] = "NUMBER"
        text += f" (default: {_shown(_default(f))})"
        group.add_argument(flag, help=text.replace("%", "%%"), **kwargs)
        names.append(f.name)
    return names


def add_trace_options(command: argparse.ArgumentParser) -> None:
    """``--trace FOLDER`` and ``--trace-format NAME``: a downloaded trace instead of a preset."""
    from analysim.traces import TRACE_FORMATS

    command.add_argument(
        "--trace",
        type=Path,
        default=None,
        metavar="FOLDER",
        help="simulate a downloaded trace (its jobs and its cluster) instead of a preset; "
        "what the reader keeps and drops is logged (docs/traces.md); with --trace-format "
        "pollux, a Pollux artifact workload CSV file",
    )
    command.add_argument(
        "--trace-format",
        default=None,
        choices=TRACE_FORMATS,
        help="the trace's format (default: told from the files in FOLDER)",
    )


def load_config_file(path: Path) -> dict[str, Any]:
    """The SimConfig values in a JSON (or YAML) file, as a dict."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise UsageError(f"--config: cannot read {path}: {exc.strerror or exc}") from None
    try:
        if path.suffix.lower() in (".yml", ".yaml"):
            import yaml

            values = yaml.safe_load(text)
        else:
            values = json.loads(text)
    except Exception as exc:  # a parse error of either format
        raise UsageError(f"--config: {path} is not valid: {exc}") from None
    if not isinstance(values, dict):
        raise UsageError(f"--config: {path} must hold an object of SimConfig fields")
    return values


def config_values(args: argparse.Namespace) -> dict[str, Any]:
    """The config file's values overridden by the options written; validated."""
    values = load_config_file(args.config) if args.config is not None else {}
    for name in SimConfig.fields():
        given = getattr(args, name, None)
        if given is not None:
            values[name] = given
    if getattr(args, "compat", None) is None:
        SimConfig.from_dict(values)  # fail here, before building the workload
    return values
