"""The command line generated from the fields that declare their flags (adri_pipeline/flags.py)."""

import argparse
import inspect

import pytest

from adri_pipeline.cli import COMMANDS, build_parser, parsed
from adri_pipeline.config import Settings
from adri_pipeline.flags import flag_of


def _subparsers(parser: argparse.ArgumentParser | None = None) -> dict[str, argparse.ArgumentParser]:
    groups = [a for a in (parser or build_parser())._actions if isinstance(a, argparse._SubParsersAction)]
    return groups[0].choices if groups else {}


def _flag_parsers(command: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """The parsers that hold a command's flags: its own, or each of its actions' (`adri mirror replay`)."""
    return list(_subparsers(command).values()) or [command]


def test_every_setting_is_a_flag_of_the_commands_it_names_or_says_why_not():
    parsers = _subparsers()
    for name, field in Settings.model_fields.items():
        flag = flag_of(field)
        assert flag is not None, f"Settings.{name} declares no Flag"
        assert flag.commands or flag.env_only, f"Settings.{name}: no command and no reason"
        for command in flag.commands:
            for parser in _flag_parsers(parsers[command]):
                actions = {a.dest: a for a in parser._actions}
                assert name in actions, f"{parser.prog} has no flag for Settings.{name}"
                spelled = flag.name or "--" + name.replace("_", "-")
                assert set(actions[name].option_strings) == {spelled, *flag.aliases}


def test_no_command_declares_one_destination_twice_and_the_aliases_resolve():
    parsers = _subparsers()
    for command in COMMANDS:
        for parser in _flag_parsers(parsers[command.name]):
            dests = [a.dest for a in parser._actions if a.dest != "help"]
            assert len(dests) == len(set(dests)), parser.prog
    for alias, command in (("classificar", "classify"), ("concordancia", "agree"), ("achados", "findings")):
        assert parsers[alias] is parsers[command]
    assert len(inspect.getsource(build_parser).splitlines()) < 40


def test_each_action_lists_its_own_flags_only(capsys):
    """Failed before: `adri mirror replay --help` listed approve's --evaluation and savings' --quality."""
    mirror = _subparsers(_subparsers()["mirror"])
    replay = {o for a in mirror["replay"]._actions for o in a.option_strings}
    assert {"--point", "--mirror", "--espelho", "--log"} <= replay
    assert not replay & {"--evaluation", "--mode", "--quality", "--blind-sheet", "--json"}
    routing = _subparsers(_subparsers()["routing"])
    assert "--port" in {o for a in routing["serve"]._actions for o in a.option_strings}
    assert "--port" not in {o for a in routing["run"]._actions for o in a.option_strings}
    for command in COMMANDS:  # every action has its line in `adri <command> --help`
        for name in _subparsers(_subparsers()[command.name]):
            assert command.action_help.get(name), f"adri {command.name} {name} has no help line"
    _, _, options, _ = parsed(["mirror", "approve", "confirmar_transferencia", "--evaluation", "e.json"])
    assert (options.action, options.point, str(options.evaluation)) == ("approve", "confirmar_transferencia", "e.json")
    with pytest.raises(SystemExit):
        parsed(["mirror", "replay", "--evaluation", "e.json"])
    assert "--evaluation" in capsys.readouterr().err


def test_a_commands_own_seed_is_not_the_models_seed(monkeypatch):
    """Failed before: `adri suggest --seed 5` and `adri routing --seed 5` also set the model's sampling
    seed (the setting of the same name), which is part of every cache key."""
    _, settings, options, _ = parsed(["suggest", "--seed", "5"])
    assert options.draw_seed == 5 and settings.seed == 42
    _, settings, options, _ = parsed(["routing", "run", "--seed", "7"])
    assert options.benchmark_seed == 7 and settings.seed == 42


def test_flags_override_the_environment_and_absent_ones_leave_it(monkeypatch, tmp_path):
    monkeypatch.setenv("ADRI_CONCURRENCY", "3")
    monkeypatch.setenv("ADRI_ROUTING_PERFORMANCE_RUNS", "1")
    _, settings, _, _ = parsed(["classificar", "--corpus", str(tmp_path)])
    assert settings.concurrency == 3 and settings.corpus == tmp_path
    _, settings, _, _ = parsed(
        ["classify", "--corpus", str(tmp_path), "--concorrencia", "2", "--ollama-hosts", "http://a:1*2,http://b:2"]
    )
    assert settings.concurrency == 2 and settings.ollama_hosts == ["http://a:1*2", "http://b:2"]
    _, settings, _, _ = parsed(["routing", "run", "--execucoes", "0", "--precos", str(tmp_path / "p.toml")])
    assert settings.routing_performance_runs == 0 and settings.routing_prices == tmp_path / "p.toml"


@pytest.mark.parametrize(
    "argv, says",
    [
        (
            ["classify", "--corpus", "x", "--concurrency", "0"],
            "argument --concurrency/--concorrencia: must be at least 1 (got 0)",
        ),
        (["routing", "run", "--runs", "21"], "argument --runs/--execucoes: must be at most 20 (got 21)"),
        (["classify", "--corpus", "x", "--backend", "gpu"], "invalid choice: 'gpu'"),
        (["export", "--format", "csv"], "the following arguments are required: --output"),
    ],
)
def test_a_bad_flag_is_named_with_what_it_must_be(argv, says, capsys):
    with pytest.raises(SystemExit) as exit_info:
        parsed(argv)
    assert exit_info.value.code == 2 and says in capsys.readouterr().err
