"""Command-line options made from a config dataclass, and the config made back from them.

A command declares which config it fills and how its fields are laid out; the flags come
from the fields::

    COMMAND = ConfigCommand(SparseIndexConfig, settings=True)
    add_arguments = COMMAND.add_arguments          # xqa.cli calls it with the command's parser

    def run(args):
        cfg = COMMAND.config(args)                 # a SparseIndexConfig

Each field becomes one option (its argparse ``dest`` is the field's name):

- flag: ``--field-name``, or ``metadata["flag"]``;
- type: from the annotation (``int``, ``float``, ``str``, ``Path``; ``X | None`` is X; a list is
  ``nargs="*"``, or ``metadata["nargs"]``), and the default is the field's;
- a bool that defaults to False is a switch (``--x``); one that defaults to True is switched off
  by ``--no-x`` (or by ``metadata["flag"]``, e.g. ``--quiet`` for ``progress``), and its help
  says what that switch does;
- a field without a default, or with ``metadata["required"]``, is a required option;
- a number is at least ``metadata["min"]``; an integer without it is at least 0 (a count, a
  size, a seed); and at most ``metadata["max"]`` where given: a value outside is a usage error
  naming the option, on the command line and in a settings file (``None``, where the field
  allows it, stays allowed);
- ``metadata`` keys ``help`` (plain text: ``%`` needs no escaping), ``choices``, ``metavar``,
  ``aliases`` (other spellings, accepted but not shown in ``--help``), ``positional`` (the
  field is a positional argument, e.g. ``xqa ask``'s question) and ``append`` (a list given one
  value per repeated flag, as ``--set K=V --set K2=V2``).

Per command, :class:`ConfigCommand` takes the argument groups (titles and the fields in each,
in the order ``--help`` lists them), fields left out of the command line, and changes to a
field's flag, aliases, help or shown default. Every field must be placed or left out, so a
new field is a new option unless the command says otherwise. ``extra`` options (an
:class:`Option` each) are the command's own, not fields of the config (``xqa tune alpha
--write-config``, whose field of that name is left out): placed in the groups as fields are,
given to the command in ``args`` and in a settings file, never passed to the config. ``exclusive``: sets of options of which the
command line may give one (an argparse mutually exclusive group inside their group).

``settings=True`` adds ``--settings FILE.json``: a JSON object keyed by the config's field
names (the ``dest`` of each option); options given on the command line override it. An
unknown key, a value of the wrong type or outside the field's choices is a usage error
that names the file and the key. Paths in the file are taken as on the command line
(relative to the working directory).

Importing this module loads nothing but the standard library.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

SETTINGS_FLAG = "--settings"
_MISSING = dataclasses.MISSING


@dataclasses.dataclass(frozen=True)
class Option:
    """One config field as an option: what :meth:`ConfigCommand.add_arguments` adds."""

    name: str                        # the field's name and the option's dest
    flag: str
    kind: type                       # str, int, float or bool (a list's item type when many)
    many: bool = False               # a list: nargs
    nargs: str | None = None
    default: Any = None
    required: bool = False
    optional: bool = False           # None is a valid value
    help: str | None = None
    choices: tuple | None = None
    metavar: str | tuple | None = None
    aliases: tuple[str, ...] = ()
    positional: bool = False         # a positional argument (its name is the flag)
    append: bool = False             # a list given one value per repeated flag
    minimum: int | float | None = None   # the smallest value allowed (each item's, for a list)
    maximum: int | float | None = None   # the largest

    def check(self, value: Any) -> str | None:
        """What is wrong with ``value`` as this option's value from a settings file, or None."""
        if value is None:
            return None if self.optional else "may not be null"
        if self.many:
            if not isinstance(value, list):
                return f"must be a list (each {_type_word(self.kind)})"
            for v in value:
                why = _check_scalar(self.kind, v)
                if why:
                    return f"item {v!r} {why}"
            values = value
        else:
            why = _check_scalar(self.kind, value)
            if why:
                return why
            values = [value]
        if self.choices is not None:
            bad = [v for v in values if v not in self.choices]
            if bad:
                return f"must be one of {', '.join(map(str, self.choices))}, got {bad[0]!r}"
        if self.minimum is not None:
            low = [v for v in values if v < self.minimum]
            if low:
                return f"must be at least {self.minimum}, got {low[0]!r}"
        if self.maximum is not None:
            high = [v for v in values if v > self.maximum]
            if high:
                return f"must be at most {self.maximum}, got {high[0]!r}"
        return None


def _type_word(kind: type) -> str:
    return {bool: "true or false", int: "an integer", float: "a number", str: "a string"}[kind]


def _check_scalar(kind: type, value: Any) -> str | None:
    ok = (isinstance(value, bool) if kind is bool
          else isinstance(value, int) and not isinstance(value, bool) if kind is int
          else isinstance(value, (int, float)) and not isinstance(value, bool) if kind is float
          else isinstance(value, str))
    return None if ok else f"must be {_type_word(kind)}, got {json.dumps(value, ensure_ascii=False)}"


def at_least(minimum: int | float, kind: type = int, maximum: int | float | None = None) -> Any:
    """An argparse ``type`` that reads an ``int`` (or ``float``) and refuses one below ``minimum``
    (or above ``maximum``), so that ``--k 0`` is a usage error ("argument --k: must be at least 1,
    got 0") rather than a silent default or a traceback later."""

    def parse(text: str) -> Any:
        value = kind(text)   # a ValueError: argparse's "invalid int value: 'x'"
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {text}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum}, got {text}")
        return value

    parse.__name__ = kind.__name__   # argparse's messages name the type by it
    return parse


def _unwrap(hint: Any) -> tuple[type, bool, bool]:
    """``(kind, many, optional)`` of a field's type hint."""
    optional = False
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        optional = len(args) < len(typing.get_args(hint))
        # str | Path is a path given as text
        args = [str if a is Path else a for a in args]
        if len(set(args)) != 1:
            raise TypeError(f"unsupported option type {hint!r}")
        hint, origin = args[0], typing.get_origin(args[0])
    if origin in (list, tuple, Sequence):
        (item,) = typing.get_args(hint)[:1]
        kind, _, _ = _unwrap(item)
        return kind, True, optional
    if hint is Path:
        hint = str
    if hint not in (str, int, float, bool):
        raise TypeError(f"unsupported option type {hint!r}")
    return hint, False, optional


def options(cls: type, *, flags: Mapping[str, str] | None = None, aliases: Mapping[str, Sequence[str]] | None = None,
            help: Mapping[str, str] | None = None, defaults: Mapping[str, Any] | None = None,
            required: Iterable[str] = ()) -> dict[str, Option]:
    """Every init field of the dataclass ``cls`` as an :class:`Option`, in declaration order,
    with the given per-command changes (keyed by field name)."""
    flags, aliases, help, defaults = flags or {}, aliases or {}, help or {}, defaults or {}
    hints = typing.get_type_hints(cls)
    out: dict[str, Option] = {}
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        meta = f.metadata
        kind, many, optional = _unwrap(hints[f.name])
        if f.default is not _MISSING:
            default = f.default
        elif f.default_factory is not _MISSING:
            default = f.default_factory()
        else:
            default = None
        default = defaults.get(f.name, default)
        is_required = f.name in required or bool(meta.get("required")) or (
            f.default is _MISSING and f.default_factory is _MISSING)
        if meta.get("positional"):
            flag = f.name
        elif kind is bool and not many:
            flag = flags.get(f.name) or meta.get("flag") or (
                f"--no-{_dashed(f.name)}" if default else f"--{_dashed(f.name)}")
        else:
            flag = flags.get(f.name) or meta.get("flag") or f"--{_dashed(f.name)}"
        choices = meta.get("choices")
        append = bool(meta.get("append"))
        minimum = meta.get("min", 0 if kind is int else None)
        maximum = meta.get("max")
        out[f.name] = Option(
            name=f.name, flag=flag, kind=kind, many=many,
            nargs=meta.get("nargs", "*" if many and not append else None),
            default=None if is_required else default, required=is_required, optional=optional,
            help=help.get(f.name, meta.get("help")), choices=tuple(choices) if choices is not None else None,
            metavar=meta.get("metavar"), aliases=tuple(aliases.get(f.name, meta.get("aliases", ()))),
            positional=bool(meta.get("positional")), append=append, minimum=minimum, maximum=maximum)
    return out


def _dashed(name: str) -> str:
    return name.replace("_", "-")


def add_option(g: Any, o: Option) -> None:
    """``o`` on the parser or argument group ``g`` (its aliases hidden)."""
    help_ = None if o.help is None else o.help.replace("%", "%%")
    if o.kind is bool and not o.many and o.optional and o.default is None and not o.aliases:
        # three states: --x, --no-x, or neither (None: the field's own rule decides)
        g.add_argument(o.flag, dest=o.name, action="store_true", default=None, help=help_)
        g.add_argument(f"--no-{o.flag.removeprefix('--')}", dest=o.name, action="store_false", default=None,
                       help=argparse.SUPPRESS if help_ is None else f"the opposite of {o.flag}")
        return
    if o.kind is bool and not o.many:
        action = "store_false" if o.default else "store_true"
        for i, flag in enumerate((o.flag, *o.aliases)):
            g.add_argument(flag, dest=o.name, action=action, default=o.default if i == 0 else argparse.SUPPRESS,
                           help=help_ if i == 0 else argparse.SUPPRESS)
        return
    bounded = (o.minimum is not None or o.maximum is not None) and o.choices is None
    kind = at_least(o.minimum if o.minimum is not None else -math.inf, o.kind, o.maximum) if bounded else o.kind
    if o.positional:
        kw = {"type": kind, "help": help_}
        if o.nargs:
            kw["nargs"] = o.nargs
        if o.choices is not None:
            kw["choices"] = o.choices
        if o.metavar is not None:
            kw["metavar"] = o.metavar
        g.add_argument(o.name, **kw)
        return
    kw: dict[str, Any] = {"dest": o.name, "type": kind, "default": o.default}
    if o.append:
        kw["action"] = "append"
    if o.nargs:
        kw["nargs"] = o.nargs
    if o.choices is not None:
        kw["choices"] = o.choices
    if o.metavar is not None:
        kw["metavar"] = o.metavar
    g.add_argument(o.flag, required=o.required, help=help_, **kw)
    for alias in o.aliases:
        g.add_argument(alias, **{**kw, "default": argparse.SUPPRESS}, help=argparse.SUPPRESS)


class ConfigCommand:
    """The options of a command that fills the config dataclass ``cls``.

    ``groups``: argument-group title -> field names, in ``--help`` order (title ``None``: the
    command's own options, not in a group); without it, every field in declaration order.
    ``exclude``: fields the command line does not set (the command passes them to
    :meth:`config`). ``flags``, ``aliases``, ``help``, ``defaults``: per-field changes.
    ``extra``: the command's own options (not fields), placed in ``groups`` by name.
    ``exclusive``: sets of option names of which the command line may give only one.
    ``settings``: add ``--settings FILE.json``."""

    def __init__(self, cls: type, *, groups: Mapping[str | None, Sequence[str]] | None = None,
                 exclude: Iterable[str] = (), flags: Mapping[str, str] | None = None,
                 aliases: Mapping[str, Sequence[str]] | None = None, help: Mapping[str, str] | None = None,
                 defaults: Mapping[str, Any] | None = None, required: Iterable[str] = (),
                 extra: Sequence[Option] = (), exclusive: Iterable[Iterable[str]] = (),
                 settings: bool = False) -> None:
        self.cls = cls
        self.settings = settings
        exclude = set(exclude)
        field_options = options(cls, flags=flags, aliases=aliases, help=help, defaults=defaults, required=required)
        unknown = (exclude | set(flags or {}) | set(aliases or {}) | set(help or {}) | set(defaults or {})
                   | set(required)) - set(field_options)
        extras = {o.name: o for o in extra}
        clash = set(extras) & (set(field_options) - exclude)
        if clash:
            raise ValueError(f"{cls.__name__}: extra options named as its fields {sorted(clash)}")
        self.fields = [n for n in field_options if n not in exclude]
        all_options = {**{n: field_options[n] for n in self.fields}, **extras}
        if groups is None:
            groups = {None: list(all_options)}
        placed = [n for names in groups.values() for n in names]
        unknown |= set(placed) - set(all_options) - exclude
        if unknown:
            raise ValueError(f"{cls.__name__} has no field {', '.join(sorted(unknown))}")
        twice = {n for n in placed if placed.count(n) > 1} | (set(placed) - set(all_options))
        unplaced = set(all_options) - set(placed)
        if twice or unplaced:
            raise ValueError(f"{cls.__name__}: fields placed twice or left out and placed {sorted(twice)}, "
                             f"not placed {sorted(unplaced)}")
        self.groups = {title: [all_options[n] for n in names] for title, names in groups.items()}
        self.options = {o.name: o for names in self.groups.values() for o in names}
        self.exclusive = [set(names) for names in exclusive]
        loose = {n for names in self.exclusive for n in names} - set(self.options)
        if loose:
            raise ValueError(f"{cls.__name__}: exclusive options that are not options {sorted(loose)}")

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """The options, in their groups; with ``settings``, ``--settings`` first."""
        if self.settings:
            parser.add_argument(SETTINGS_FLAG, metavar="FILE.json", default=None,
                                help=self.settings_help().replace("%", "%%"))
            parser.set_defaults(**{_SPEC: self})
        for title, opts in self.groups.items():
            g = parser if title is None else parser.add_argument_group(title)
            mutex: dict[int, Any] = {}
            for o in opts:
                i = next((i for i, names in enumerate(self.exclusive) if o.name in names), None)
                if i is not None and i not in mutex:
                    mutex[i] = g.add_mutually_exclusive_group()
                add_option(g if i is None else mutex[i], o)

    def settings_help(self) -> str:
        """The help of ``--settings``: how its keys are spelled, naming every option whose key is
        not its flag's name with underscores."""
        other = []
        for o in self.options.values():
            if o.flag == f"--{_dashed(o.name)}":
                continue
            other.append(f'"{o.name}": {json.dumps(not o.default)} for {o.flag}' if o.kind is bool and not o.many
                         else f'"{o.name}" for {o.flag}')
        example = next((o for o in self.options.values() if o.kind in (int, float) and not o.many
                        and o.default is not None), None)
        keys = [f'"{example.name}": {example.default} for {example.flag} {example.default}'] if example else []
        return ("JSON object of settings keyed by option name with underscores (" + "; ".join(keys + other)
                + "); options given on the command line override it")

    def config(self, args: argparse.Namespace, **values: Any) -> Any:
        """The config of the parsed ``args``, with ``values`` (fields the command sets itself)."""
        given = {name: getattr(args, name) for name in self.fields if hasattr(args, name)}
        return self.cls(**{**given, **values})

    def read_settings(self, path: str | Path) -> dict[str, Any]:
        """The settings of the JSON file ``path``, checked; raises ``ValueError`` with a message
        that names the file and the key."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ValueError(f"{path}: no such settings file") from None
        except (OSError, UnicodeDecodeError) as e:
            raise ValueError(f"{path}: cannot read the settings file ({e})") from None
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not JSON ({e})") from None
        if not isinstance(data, dict):
            raise ValueError(f"{path}: the settings must be a JSON object of option names and values")
        for key, value in data.items():
            o = self.options.get(key)
            if o is None:
                raise ValueError(f"{path}: unknown setting {key!r}; the settings of this command are "
                                 f"{', '.join(self.options)}")
            why = o.check(value)
            if why:
                raise ValueError(f"{path}: setting {key!r} ({o.flag}) {why}")
        return data


_SPEC = "_config_command"


class CommandParser(argparse.ArgumentParser):
    """An argument parser that reads ``--settings FILE.json`` (:class:`ConfigCommand`) before
    the command line: the file's values become the options' defaults (so the command line
    overrides them), and an option the file gives is no longer required."""

    def parse_known_args(self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None):
        spec = self.get_default(_SPEC)
        if spec is None:
            return super().parse_known_args(args, namespace)
        args = list(sys.argv[1:] if args is None else args)
        # spelled out (no abbreviation): ``--set`` is another command's option
        pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
        pre.add_argument(SETTINGS_FLAG, default=None)
        path = pre.parse_known_args(args)[0].settings
        saved = [(a, a.default, a.required) for a in self._actions]
        try:
            if path:
                try:
                    values = spec.read_settings(path)
                except ValueError as e:
                    self.error(str(e))
                for a in self._actions:
                    if a.dest in values and a.default is not argparse.SUPPRESS:
                        a.default, a.required = values[a.dest], False
            ns, extra = super().parse_known_args(args, namespace)
        finally:
            for a, default, req in saved:
                a.default, a.required = default, req
        if getattr(ns, "settings", None) != path:
            self.error(f"{SETTINGS_FLAG}: write the option in full")
        if hasattr(ns, _SPEC):
            delattr(ns, _SPEC)
        return ns, extra
