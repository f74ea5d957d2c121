"""Importing a machine judge: CSV and JSON Lines, errors with file, line and field, all or nothing."""
from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from annotation.formats.errors import ImportRejected
from annotation.models import MachineJudge, MachineJudgment
from annotation.models.judgment_sets import ImportedJudgment, JudgmentSet
from annotation.services.machine_judges.errors import MachineJudgeError
from annotation.services.machine_judges.imports import machine_judge_import

from .world import MACHINE, machine_file, small_pool

pytestmark = pytest.mark.django_db


def test_csv_import_attaches_a_machine_judge_to_the_pool(tmp_path):
    pool, _ = small_pool()
    judge = machine_judge_import(dataset=pool.dataset, path=machine_file(tmp_path), name="gpt", pool=pool)
    assert judge.kind == "machine" and judge.pool == pool and judge.judgment_set is None
    assert (judge.model_name, judge.prompt_version) == ("gpt-judge", "umbrela-v1")
    assert judge.counts["relevant"] == 4 and judge.counts["not_relevant"] == 1 and judge.counts["with_score"] == 5
    stored = {(j.caption.external_id, j.clip.external_id): (j.label, j.score)
              for j in MachineJudgment.objects.filter(judge=judge).select_related("caption", "clip")}
    assert {k: v[0] for k, v in stored.items()} == MACHINE
    assert stored[("q1", "v5")] == ("not_relevant", 0.2)


def test_jsonl_import_with_numeric_labels_and_no_score(tmp_path):
    pool, _ = small_pool()
    path = tmp_path / "judge.jsonl"
    path.write_text("\n".join(json.dumps({"query": q, "item": i, "label": 1 if v == "relevant" else 0, "model": "m"})
                              for (q, i), v in MACHINE.items()) + "\n", encoding="utf-8")
    judge = machine_judge_import(dataset=pool.dataset, path=path, name="m", pool=pool)
    assert judge.counts["relevant"] == 4 and judge.counts["with_score"] == 0 and judge.model_name == "m"


def test_bad_file_names_file_line_and_field_and_writes_nothing(tmp_path):
    pool, _ = small_pool()
    path = machine_file(tmp_path, extra=("q9,v3,relevant,0.5,gpt-judge,umbrela-v1\n"      # line 7: unknown caption
                                         "q1,v6,relevant,0.5,gpt-judge,umbrela-v1\n"      # line 8: not a pool pair
                                         "q1,v3,maybe,0.5,gpt-judge,umbrela-v1\n"         # line 9: bad label
                                         "q1,v4,relevant,high,gpt-judge,umbrela-v1\n"     # line 10: bad score
                                         "q2,v6,relevant,0.1,other-model,umbrela-v1\n"    # line 11: second model
                                         "q2,v6,relevant,0.1,gpt-judge,umbrela-v1\n"))    # line 12: judged twice
    with pytest.raises(ImportRejected) as caught:
        machine_judge_import(dataset=pool.dataset, path=path, name="bad", pool=pool)
    found = {(i.line, i.field) for i in caught.value.issues}
    assert {(7, "query"), (8, "item"), (9, "label"), (10, "score"), (11, "model"), (12, "item")} <= found
    text = str(caught.value.issues[0])
    assert text.startswith("judge.csv, line 7, field 'query'")
    assert not MachineJudge.objects.exists() and not MachineJudgment.objects.exists()


def test_missing_columns_duplicate_name_and_target_rules(tmp_path):
    pool, _ = small_pool()
    path = tmp_path / "nolabel.csv"
    path.write_text("query,item\nq1,v3\n", encoding="utf-8")
    with pytest.raises(ImportRejected, match="line 1: the header lacks label"):
        machine_judge_import(dataset=pool.dataset, path=path, name="x", pool=pool)
    machine_judge_import(dataset=pool.dataset, path=machine_file(tmp_path), name="gpt", pool=pool)
    with pytest.raises(MachineJudgeError, match="already has a machine judge named 'gpt'"):
        machine_judge_import(dataset=pool.dataset, path=machine_file(tmp_path), name="gpt", pool=pool)
    with pytest.raises(MachineJudgeError, match="a pool or to a judgment set"):
        machine_judge_import(dataset=pool.dataset, path=machine_file(tmp_path), name="y")


def test_judge_on_a_judgment_set_judges_only_its_pairs(tmp_path):
    pool, _ = small_pool()
    dataset = pool.dataset
    js = JudgmentSet.objects.create(dataset=dataset, name="qrels", source_format="qrels", checksum="x" * 64)
    caption = dataset.captions.get(external_id="q1")
    for clip_ext, label in (("v3", "relevant"), ("v4", "not_relevant")):
        ImportedJudgment.objects.create(judgment_set=js, dataset=dataset, caption=caption,
                                        clip=dataset.clips.get(external_id=clip_ext), label=label)
    with pytest.raises(ImportRejected) as caught:
        machine_judge_import(dataset=dataset, path=machine_file(tmp_path), name="on set", judgment_set=js)
    assert {(i.line, i.field) for i in caught.value.issues} == {(4, "item"), (5, "item"), (6, "item")}
    ok = machine_judge_import(dataset=dataset, path=machine_file(tmp_path, {("q1", "v3"): "relevant",
                                                                             ("q1", "v4"): "relevant"}),
                              name="on set", judgment_set=js)
    assert ok.judgment_set == js and ok.pool is None and ok.judgments.count() == 2


def test_command_imports_and_refuses(tmp_path, capsys):
    pool, _ = small_pool()
    call_command("import_machine_judgments", str(machine_file(tmp_path)), "--pool", str(pool.pk), "--name", "cli")
    assert "imported machine judge 'cli'" in capsys.readouterr().out
    bad = machine_file(tmp_path, name="bad.csv", extra="q1,v9,relevant,,,\n")
    with pytest.raises(CommandError, match=r"bad.csv, line 7, field 'item'"):
        call_command("import_machine_judgments", str(bad), "--pool", str(pool.pk), "--name", "cli2")


def test_import_reports_its_progress(tmp_path):
    pool, _ = small_pool()
    stored_as = machine_file(tmp_path, name="upload-0001")  # how an upload is stored: no ending
    heard = []
    judge = machine_judge_import(dataset=pool.dataset, path=stored_as, name="gpt", pool=pool, source_name="judge.csv",
                                 progress=lambda done, total=None, message="": heard.append((done, total, message)))
    assert MachineJudge.objects.get(pk=judge.pk).judgments.count() == len(MACHINE)
    assert heard[-1] == (len(MACHINE), len(MACHINE), "storing the verdicts")
