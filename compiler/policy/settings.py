"""Policy settings are closed: what a values file, an exemption or `--skip` names must exist.

A pack declares its settings with defaults (`settings: resources: {maxNumNodes: *null | ...}`);
CUE structs are open, so a misspelt key (`maxNumNode: 16`) unified with them would pass and
leave the limit off. `unknown_settings` compares the user's settings with what the packs
declare (their settings resolved without user values); `unknown_ids` compares rule ids and
pack names given by the user with the loaded packs'. Each problem is a path into the user's
values and a message, with the declared name it most likely means. Pure; called by
`compiler.cli.policy_opts.build`, which locates the problems in the user's file.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from compiler.policy.packs import Pack

Problem = tuple[tuple[str | int, ...], str]


def declared(packs: Sequence[Pack]) -> dict[str, Any]:
    """The settings every pack declares, merged (each pack's settings resolved without user
    values: the declared keys with their defaults)."""
    out: dict[str, Any] = {}
    for pack in packs:
        _merge(out, pack.settings)
    return out


def _merge(into: dict[str, Any], more: Mapping[str, Any]) -> None:
    for key, value in more.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into.setdefault(key, value)


def unknown_settings(values: Mapping[str, Any], known: Mapping[str, Any],
                     path: tuple[str | int, ...] = ()) -> list[Problem]:
    """Every key of `values` the packs do not declare (below a declared struct; a setting
    whose default is not a struct is not looked into)."""
    out: list[Problem] = []
    for key, value in values.items():
        if key not in known:
            out.append(((*path, key), f"unknown setting{_hint(str(key), known)}; the packs "
                        f"declare {_listed(known) if known else 'no settings here'}"))
        elif isinstance(known[key], dict) and isinstance(value, dict):
            out += unknown_settings(value, known[key], (*path, key))
    return out


def known_ids(packs: Sequence[Pack]) -> set[str]:
    """The rule ids and pack names of the loaded packs."""
    return {rid for pack in packs for rid in pack.rules} | {pack.name for pack in packs}


def unknown_ids(given: Iterable[tuple[tuple[str | int, ...], str]], known: set[str]
                ) -> list[Problem]:
    """The (path, id) pairs whose id is neither a rule id nor a pack name."""
    return [(path, f"{name!r} is not a rule id or pack name{_hint(name, known)}")
            for path, name in given if name not in known]


def _hint(name: str, known: Iterable[str]) -> str:
    import difflib  # only for a mistake: start-up imports stay few

    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _listed(known: Iterable[str]) -> str:
    names = sorted(str(k) for k in known)
    return ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
