"""`tjc completion bash|zsh|fish`: the shell completion script, as kubectl and helm print theirs.

The script is generated from the parser itself (`compiler.cli.main.build_parser`): the verbs,
each verb's options and their choices, and the actions of the verbs that have them, so it
never falls behind a new flag. Hidden options (deprecated spellings) are left out. Prints
text only.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from dataclasses import field
from typing import Any

from compiler.common.records import dataclass

HELP = "print the shell completion script for bash, zsh or fish"
EPILOG = """\
examples:
  source <(tjc completion bash)                          this bash session
  tjc completion bash > ~/.local/share/bash-completion/completions/tjc   every session
  source <(tjc completion zsh)                           zsh (add it to ~/.zshrc)
  tjc completion fish > ~/.config/fish/completions/tjc.fish
"""


def register(verbs: Any) -> None:
    """Add the `completion` verb."""
    parser = verbs.add_parser("completion", help=HELP, description=HELP[0].upper() + HELP[1:]
                              + ".", epilog=EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("shell", choices=("bash", "zsh", "fish"), help="the shell")
    parser.set_defaults(func=run)


@dataclass
class Verb:
    """What completion knows of one verb."""

    name: str
    help: str
    options: list[str] = field(default_factory=list)
    choices: dict[str, list[str]] = field(default_factory=dict)  # option -> its values
    valued: set[str] = field(default_factory=set)  # options that take a value
    actions: list[str] = field(default_factory=list)  # first positional's choices


def verbs() -> list[Verb]:
    """Every verb of `tjc`, as its parser declares it."""
    from compiler.cli.main import build_parser

    sub = next(a for a in build_parser()._actions
               if isinstance(a, argparse._SubParsersAction))
    helps = {c.dest: c.help or "" for c in sub._choices_actions}
    return [_verb(name, helps.get(name, ""), parser) for name, parser in sub.choices.items()]


def _verb(name: str, help_text: str, parser: argparse.ArgumentParser) -> Verb:
    verb = Verb(name, help_text)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            verb.actions = list(action.choices)
        elif not action.option_strings:
            if action.choices and not verb.actions:
                verb.actions = [str(c) for c in action.choices]
        elif action.help != argparse.SUPPRESS:
            verb.options += action.option_strings
            if action.nargs != 0:
                verb.valued.update(action.option_strings)
            if action.choices:
                for opt in action.option_strings:
                    verb.choices[opt] = [str(c) for c in action.choices]
    return verb


def run(args: argparse.Namespace) -> int:
    """Print the script."""
    script = {"bash": bash, "zsh": zsh, "fish": fish}[args.shell](verbs())
    sys.stdout.write(script)
    return 0


def bash(all_verbs: list[Verb]) -> str:
    """A bash completion function for `tjc` (files are completed where a path is due)."""
    names = " ".join(v.name for v in all_verbs)
    lines = ["# tjc completion for bash: source <(tjc completion bash)", "_tjc() {",
             '    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"',
             '    local verb="${COMP_WORDS[1]}" opts="" actions="" values=""',
             '    if [ "$COMP_CWORD" -eq 1 ]; then',
             f'        COMPREPLY=($(compgen -W "{names} --help --version" -- "$cur"))',
             "        return", "    fi", '    case "$verb" in']
    for v in all_verbs:
        lines.append(f"    {v.name})")
        lines.append(f"        opts={shlex.quote(' '.join([*v.options]))}")
        lines.append(f"        actions={shlex.quote(' '.join(v.actions))}")
        cases = [f"            {'|'.join(opts)}) values={shlex.quote(' '.join(vals))} ;;"
                 for vals, opts in _by_values(v).items()]
        if cases:
            lines += ['        case "$prev" in', *cases, "        esac"]
        lines.append("        ;;")
    lines += ["    esac",
              '    if [ -n "$values" ]; then',
              '        COMPREPLY=($(compgen -W "$values" -- "$cur")); return',
              '    elif [[ "$cur" == -* ]]; then',
              '        COMPREPLY=($(compgen -W "$opts" -- "$cur")); return',
              '    elif [ -n "$actions" ] && [ "$COMP_CWORD" -eq 2 ]; then',
              '        COMPREPLY=($(compgen -W "$actions" -- "$cur")); return',
              "    fi",
              '    COMPREPLY=($(compgen -f -- "$cur"))',
              "}",
              "complete -o default -o filenames -F _tjc tjc", ""]
    return "\n".join(lines)


def _by_values(v: Verb) -> dict[tuple[str, ...], list[str]]:
    grouped: dict[tuple[str, ...], list[str]] = {}
    for opt, values in v.choices.items():
        grouped.setdefault(tuple(values), []).append(opt)
    return grouped


def zsh(all_verbs: list[Verb]) -> str:
    """zsh runs the bash function through its bashcompinit layer."""
    return ("# tjc completion for zsh: source <(tjc completion zsh)\n"
            "autoload -U +X compinit && compinit\n"
            "autoload -U +X bashcompinit && bashcompinit\n" + bash(all_verbs))


def fish(all_verbs: list[Verb]) -> str:
    """`complete` commands for fish."""
    lines = ["# tjc completion for fish: tjc completion fish > "
             "~/.config/fish/completions/tjc.fish", "complete -c tjc -f"]
    for v in all_verbs:
        lines.append(f"complete -c tjc -n __fish_use_subcommand -a {v.name} "
                     f"-d {shlex.quote(v.help)}")
        when = f"-n '__fish_seen_subcommand_from {v.name}'"
        if v.actions:
            lines.append(f"complete -c tjc {when} -a {shlex.quote(' '.join(v.actions))}")
        for opt in v.options:
            flag = f"-l {opt[2:]}" if opt.startswith("--") else f"-s {opt[1:]}"
            values = v.choices.get(opt)
            extra = (f" -x -a {shlex.quote(' '.join(values))}" if values
                     else " -r -F" if opt in v.valued else "")
            lines.append(f"complete -c tjc {when} {flag}{extra}")
        lines.append(f"complete -c tjc {when} -F")
    return "\n".join(lines) + "\n"
