"""Reading the config: one YAML file, ``FORECASTER_*`` environment overrides, paths resolved
relative to the file, validated against ``forecaster.settings.schema`` - every problem said in
one line naming the field by its path, in our words.

Environment overrides use ``__`` between path parts and list indexes as numbers; the value is
parsed as YAML: ``FORECASTER_SOURCE__PROMETHEUS__URL=http://prom:9090``,
``FORECASTER_POOLS__0__GPUS_PER_NODE=4``.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, get_args

import yaml
from pydantic import BaseModel, ValidationError

from forecaster.errors import ConfigError
from forecaster.settings.schema import Settings

ENV_PREFIX = "FORECASTER_"


def load_settings(path: Path, *, env: Mapping[str, str] | None = None) -> Settings:
    """Read, override from the environment, resolve relative paths and validate."""
    env = os.environ if env is None else env
    try:
        raw = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        problem = _printable(str(getattr(exc, "problem", exc)))
        raise ConfigError(f"{path}{where}: not valid YAML: {problem}") from exc
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(
            f"{path}: the config must be a mapping of sections, not {type(raw).__name__}"
        )
    for key, value in sorted(env.items()):
        if key.startswith(ENV_PREFIX) and key != ENV_PREFIX + "CONFIG":
            _override(raw, key.removeprefix(ENV_PREFIX).lower().split("__"), value, key=key)
    try:
        settings = Settings.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"{path}: invalid config: {describe_errors(exc)}") from None
    return _resolved(settings, base=path.parent)


def describe_errors(exc: ValidationError) -> str:
    """Validation errors as ``field.path: message`` joined with '; ', in our words.

    An unknown key names the nearest valid one ("did you mean `max_prewarm_gpus`?").
    """
    parts = []
    errors = exc.errors()
    for error in errors:
        loc = error["loc"]
        if error["type"] == "too_short" and any(
            other["loc"][: len(loc)] == loc and len(other["loc"]) > len(loc) for other in errors
        ):
            continue  # "no items left" only because an item was invalid: that item says why
        where = ".".join(_printable(str(p)) for p in loc) or "(top level)"
        parts.append(f"{where}: {_printable(_our_words(error))}")
    return "; ".join(parts)


_WORDS = {
    "missing": "is required",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_parsing": "must be a number",
    "bool_parsing": "must be true or false",
    "string_type": "must be text",
    "finite_number": "must be a finite number",
    "dict_type": "must be a mapping of keys",
    "model_type": "must be a mapping of keys",
}
_BOUNDS = {
    "greater_than": ">",
    "greater_than_equal": ">=",
    "less_than": "<",
    "less_than_equal": "<=",
}


def _our_words(error: Any) -> str:
    kind, ctx, given = error["type"], error.get("ctx") or {}, error.get("input")
    if kind in ("extra_forbidden", "unexpected_keyword_argument"):  # a model / a core dataclass
        valid = _fields_at(error["loc"][:-1])
        near = difflib.get_close_matches(str(error["loc"][-1]), valid, n=1, cutoff=0.6)
        return (
            f"unknown key; did you mean `{near[0]}`?"
            if near
            else (f"unknown key (valid here: {', '.join(valid)})")
        )
    templates = {
        **{k: f"must be {op} {{bound}}, got {{given!r}}" for k, op in _BOUNDS.items()},
        "string_pattern_mismatch": "must match the pattern {pattern}, got {given!r}",
        "too_short": "needs at least {min_length} item(s)",
        "literal_error": "must be one of {expected}, got {given!r}",
        **_WORDS,
    }
    if kind not in templates:
        return str(error["msg"]).removeprefix("Value error, ")
    bound = next(iter(ctx.values()), "?")
    return templates[kind].format(given=given, bound=bound, **{k: v for k, v in ctx.items()})


def _fields_at(loc: tuple[Any, ...]) -> list[str]:
    """The keys valid at ``loc`` (list indexes skipped), for "did you mean"."""
    model: type[Any] = Settings
    for part in loc:
        if isinstance(part, int):
            continue
        field = _keys(model).get(str(part))
        found = _model_in(field) if field is not None else None
        if found is None:
            return []
        model = found
    return sorted(_keys(model))


def _keys(model: type[Any]) -> dict[str, Any]:
    """Key -> annotation of a settings model, or of a core dataclass used as a section."""
    if dataclasses.is_dataclass(model):
        return {f.name: f.type for f in dataclasses.fields(model)}
    return {name: field.annotation for name, field in model.model_fields.items()}


def _model_in(annotation: Any) -> type[Any] | None:
    if isinstance(annotation, type) and (
        issubclass(annotation, BaseModel) or dataclasses.is_dataclass(annotation)
    ):
        return annotation
    for arg in get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _printable(text: str) -> str:
    """Field names come from the user's file: show control characters escaped, on one line."""
    return text if text.isprintable() else repr(text)


def _override(node: Any, path: list[str], value: str, *, key: str) -> None:
    for i, part in enumerate(path):
        last = i == len(path) - 1
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise ConfigError(f"{key}: {'.'.join(path[:i])} has no item {part}")
            if last:
                node[int(part)] = yaml.safe_load(value)
            else:
                node = node[int(part)]
        elif isinstance(node, dict):
            if last:
                node[part] = yaml.safe_load(value)
            else:
                node = node.setdefault(part, {})
        else:
            raise ConfigError(f"{key}: {'.'.join(path[:i])} is not a section")


def _resolved(settings: Settings, *, base: Path) -> Settings:
    def absolute(p: Path) -> Path:
        return p if p.is_absolute() else (base / p).resolve()

    pools = tuple(
        pool.model_copy(update={"csv": absolute(pool.csv)}) if pool.csv else pool
        for pool in settings.pools
    )
    twin = settings.twin.model_copy(update={"jobs": absolute(settings.twin.jobs)})
    return settings.model_copy(
        update={"pools": pools, "models_dir": absolute(settings.models_dir), "twin": twin}
    )
