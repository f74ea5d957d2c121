"""`--mode paper` takes SYN's synset source from the paper: the EPIC-KITCHENS-100 classes for the
cooking datasets (recognised by their importer, youcook2-json or epic100-csv), WordNet for the
others; an explicit `--synsets` always wins, and the matrix and nDCG report params say which source
was used and why."""
from __future__ import annotations

import io
import shutil

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Artefact, Dataset, Job
from annotation.services.proxies import matrices as service
from annotation.services.datasets.imports import dataset_import
from annotation.services.proxies.matrices import ProxyError, proxy_matrices_compute, synset_source_choose
from annotation.services.proxies.operations import proxy_matrices_start
from tests.annotation.services.proxies.test_proxy_matrices import entry, require_nlp

pytestmark = pytest.mark.django_db


@pytest.fixture
def epic_classes(fixtures_dir, tmp_path, monkeypatch):
    classes = tmp_path / "epic100"
    classes.mkdir()
    shutil.copy(fixtures_dir / "epic100_verb_classes.csv", classes / "EPIC_100_verb_classes.csv")
    shutil.copy(fixtures_dir / "epic100_noun_classes.csv", classes / "EPIC_100_noun_classes.csv")
    monkeypatch.setenv("REJUDGE_EPIC100_DIR", str(classes))
    return classes


@pytest.fixture
def youcook2(fixtures_dir):
    return dataset_import(path=fixtures_dir / "youcook2_val_excerpt.json", name="yc2", fmt="youcook2-json")


@pytest.fixture
def msrvtt(fixtures_dir):
    return dataset_import(path=fixtures_dir / "msrvtt_1ka_excerpt.csv", name="msrvtt", fmt="msrvtt-csv")


@pytest.mark.parametrize("source_format, mode, synsets, expected", [
    ("youcook2-json", "paper", None, "epic100"),
    ("epic100-csv", "paper", None, "epic100"),
    ("msrvtt-csv", "paper", None, "wordnet"),
    ("msvd-tsv", "paper", None, "wordnet"),
    ("manifest-jsonl", "paper", None, "wordnet"),  # a manifest says nothing about the benchmark
    ("youcook2-json", "modern", None, "wordnet"),
    ("youcook2-json", "paper", "wordnet", "wordnet"),  # explicit wins
    ("msrvtt-csv", "paper", "epic100", "epic100"),
])
def test_the_source_follows_mode_and_importer_unless_chosen(source_format, mode, synsets, expected):
    dataset = Dataset.objects.create(name=f"d-{source_format}", source_format=source_format)
    chosen, reason = synset_source_choose(dataset=dataset, mode=mode, synsets=synsets)
    assert chosen == expected
    if synsets is not None:
        assert reason == "chosen explicitly"
    elif expected == "epic100":
        assert source_format in reason and "paper" in reason
    else:
        assert "WordNet" in reason


def test_paper_mode_computes_syn_of_youcook2_on_epic_classes(youcook2, epic_classes):
    require_nlp()
    (paper,) = proxy_matrices_compute(dataset=youcook2, proxies=["syn"], mode="paper")
    assert paper.params["synsets"] == "epic100" and "youcook2-json" in paper.params["synsets_reason"]
    assert paper.params["pipeline"] == proxy_matrices_compute(dataset=youcook2, proxies=["syn"], mode="paper",
                                                              synsets="epic100")[0].params["pipeline"]
    # "pour the dressing over the salad and mix" vs "add the fried pita to the salad and mix": on the
    # EPIC classes dressing falls in the class "sauce"; verbs {pour, mix} vs {add, mix} -> 1/3, nouns
    # {sauce, salad} vs {pita, salad} -> 1/3; 1/2 * 1/3 + 1/2 * 1/3 = 1/3.
    assert entry(paper, "xHr8X2Wpmno_4", "xHr8X2Wpmno_5") == pytest.approx(1 / 3)
    (chosen,) = proxy_matrices_compute(dataset=youcook2, proxies=["syn"], mode="paper", synsets="wordnet")
    assert (chosen.params["synsets"], chosen.params["synsets_reason"]) == ("wordnet", "chosen explicitly")


def test_paper_mode_keeps_wordnet_for_msrvtt(msrvtt, epic_classes):
    require_nlp()
    (syn,) = proxy_matrices_compute(dataset=msrvtt, proxies=["syn"], mode="paper")
    assert syn.params["synsets"] == "wordnet" and "msrvtt-csv" in syn.params["synsets_reason"]


def test_only_syn_records_a_synset_source(msrvtt):
    (bow,) = proxy_matrices_compute(dataset=msrvtt, proxies=["bow"], mode="paper")
    assert bow.params["synsets"] is None and "synsets_reason" not in bow.params


def test_the_command_reports_the_source_and_an_explicit_choice_overrides(youcook2, epic_classes):
    require_nlp()
    out = io.StringIO()
    call_command("compute_proxies", "--dataset", "yc2", "--proxy", "syn", "--mode", "paper", stdout=out)
    assert "synsets epic100: paper mode on a cooking dataset" in out.getvalue()
    out = io.StringIO()
    call_command("compute_proxies", "--dataset", "yc2", "--proxy", "syn", "--mode", "paper", "--synsets", "wordnet",
                 stdout=out)
    assert "synsets wordnet: chosen explicitly" in out.getvalue()
    assert sorted(Artefact.objects.values_list("params__synsets", flat=True)) == ["epic100", "wordnet"]


def test_missing_class_files_say_why_paper_mode_wants_them(youcook2, monkeypatch):
    monkeypatch.setenv("REJUDGE_EPIC100_DIR", "/nonexistent")
    monkeypatch.setattr(service, "wordnet_available", lambda: True)
    monkeypatch.setattr(service, "tagger_available", lambda: True)
    with pytest.raises(ProxyError, match="EPIC-KITCHENS-100 class lists not found.*paper mode on a cooking dataset"):
        proxy_matrices_start(dataset=youcook2, proxies=["syn"], mode="paper", synsets=None, min_fraction=0.25,
                             created_by=None)
    with pytest.raises(CommandError, match="Choose the WordNet synsets explicitly"):
        call_command("compute_proxies", "--dataset", "yc2", "--proxy", "all", "--mode", "paper")
    assert Job.objects.count() == 0 and Artefact.objects.count() == 0
    # The same request with WordNet chosen does not need the files.
    job = proxy_matrices_start(dataset=youcook2, proxies=["syn"], mode="paper", synsets="wordnet", min_fraction=0.25,
                               created_by=None)
    assert job.params["synsets"] == "wordnet"
