"""`adri mirror ACTION`: each action over the mirror application (mirror/service.py), with what it
prints. `options` is cli.MirrorOptions; the shadow log is the setting `mirror_log` (--log)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from adri_pipeline import paths, strict_json
from adri_pipeline.config import Settings
from adri_pipeline.jev.metrics import interval_text
from adri_pipeline.mirror import service


def _given_log(settings: Settings, action: str) -> Path:
    if "mirror_log" not in settings.model_fields_set:  # neither --log nor ADRI_MIRROR_LOG
        raise SystemExit(f"error: {action} needs --log PATH")
    return settings.mirror_log


def replay(settings: Settings, options) -> int:
    from adri_pipeline.mirror.replay import SHARED_MIRROR, replay_html, replay_page_type

    if not SHARED_MIRROR.exists():
        print(
            f"error: replays read labelled data from {SHARED_MIRROR} (ADRI_SHARED_DATA), which is not here",
            file=sys.stderr,
        )
        return 2
    log = (
        settings.mirror_log
        if "mirror_log" in settings.model_fields_set
        else settings.warehouse.parent / "mirror" / f"{options.replay_point}_shadow_log.jsonl"
    )
    log.parent.mkdir(parents=True, exist_ok=True)
    chosen = {"page_type": replay_page_type, "html_is_enough": replay_html}[options.replay_point]
    started = time.perf_counter()
    try:
        with paths.replacing(log) as written:  # an earlier log stays whole until this one is
            summary = chosen(written, mirror_spec=options.replay_mirror or "")
    except ValueError as exc:  # a malformed jev:<url>
        print(f"error: --mirror {exc}", file=sys.stderr)
        return 2
    print(strict_json.dumps(summary), f"{time.perf_counter() - started:.1f} s")
    if summary["discarded_answers"]:
        print(
            f"{summary['discarded_answers']} of {summary['decisions']} mirror answers broke the System One "
            "spec and were discarded; the rule decided those",
            file=sys.stderr,
        )
    print(f"shadow log: {log}")
    return 0


def approve(settings: Settings, options) -> int:
    if not (options.point and options.evaluation and "mirror_config" in settings.model_fields_set):
        raise SystemExit("error: approve needs POINT, --evaluation mirror_evaluation.json and --config GATE.yaml")
    entry = service.approve(settings.mirror_config, options.point, options.evaluation, options.mode)
    print(
        f"{settings.mirror_config}: point {options.point} -> {entry['mode']}, "
        f"bound to {entry['approval']['evaluation']} "
        f"(sha256 {entry['approval']['sha256'][:12]}…, evaluated {entry['approval']['date']})"
    )
    return 0


def savings(settings: Settings, options) -> int:
    from adri_pipeline.mirror.savings import blind_sheet, key_of, read_quality
    from adri_pipeline.mirror.savings import savings as savings_of
    from adri_pipeline.mirror.shadow_log import read_log

    log = _given_log(settings, "savings")
    records, bad = read_log(log, service.redactor(settings))
    if bad:
        print(
            f"warning: {len(bad)} bad line(s) skipped, first: {log}:{bad[0]['line']}: {bad[0]['error']}",
            file=sys.stderr,
        )
    rows = [r.model_dump(mode="json") for r in records]
    if options.blind_sheet:
        paths.check_output("--blind-sheet's key", key_of(options.blind_sheet), settings, options.overwrite)
        key = blind_sheet(rows, options.blind_sheet)
        print(f"blinded sheet: {options.blind_sheet} (grade the quality column); key, not for the grader: {key}")
        return 0
    quality = read_quality(options.quality) if options.quality else None
    print(strict_json.dumps(savings_of(rows, service.points(settings), quality), indent=1))
    return 0


def evaluate(settings: Settings, options) -> int:
    from adri_pipeline.warehouse import Warehouse

    _given_log(settings, "evaluate")
    report = service.evaluate_log(settings, Warehouse(settings.warehouse))  # what the Dagster assets do
    evaluation = Path(report.recommended_configuration).parent / "mirror_evaluation.json"
    if report.quarantined:
        first = report.quarantined[0]
        print(
            f"warning: {len(report.quarantined)} line(s) quarantined, not evaluated, first: {settings.mirror_log}:"
            f"{first['line']}: {first['error']}",
            file=sys.stderr,
        )
    if options.as_json:
        print(strict_json.dumps(report, indent=1))
        return 0
    print(
        f"{settings.mirror_log}: {report.kept} record(s) read, {len(report.quarantined)} quarantined; "
        f"judges: {', '.join(j['name'] for j in report.judges) or '-'}"
    )
    for name, point in report.evaluations.items():
        print(f"\n{name}: {point.recommendation} (recommended mode: {point.recommended_mode})")
        print(
            f"  {point.counted} case(s) both judges labelled alike; accuracy rule {_share(point.rule_accuracy)}, "
            f"mirror {_share(point.mirror_accuracy)}, control {_share(point.control_accuracy)}"
        )
        print(f"  mirror's gain over the rule when confident, 95 % CI: {interval_text(point.gain_ci95)}")
        for reason in point.reasons:
            print(f"  - {reason}")
    print(
        f"\nthe whole evaluation: {evaluation} (or --json); recommended configuration: "
        f"{report.recommended_configuration}\napprove a point with `adri mirror approve POINT --evaluation "
        f"{evaluation} --config GATE.yaml`"
    )
    return 0


def _share(value: float) -> str:
    return "n/a" if value != value else f"{value:.1%}"
